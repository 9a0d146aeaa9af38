package org.sparkk8snative.node;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkContext;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.sparkk8snative.TestPlane;
import org.sparkk8snative.spark.NativeExecutorPodsAllocator;

/**
 * The sealed cluster's node, whose pods are processes (tests/localnode/agent), for the tests tagged
 * {@code node}: they run inside the node's network namespace (scripts/test.sh), next to the
 * apiserver, the pods and CoreDNS, as a driver in client mode would.
 */
public final class ProcessNode {
  /** The image the node agent's table maps to tests/localnode/images/spark-entrypoint.sh. */
  public static final String SPARK_IMAGE =
      "spark-k8s-native/spark:" + org.apache.spark.package$.MODULE$.SPARK_VERSION();

  /**
   * Spark's image with this project's jar baked into its jars/ folder (the image table of
   * scripts/lib.sh, node_images: Spark's classpath and the jar Maven built, {@link #IMAGE_JAR}).
   */
  public static final String SPARK_IMAGE_WITH_THE_JAR =
      "spark-k8s-native/spark-with-the-jar:" + org.apache.spark.package$.MODULE$.SPARK_VERSION();

  /** The jar {@link #SPARK_IMAGE_WITH_THE_JAR} carries: the one Maven built in java/target. */
  public static final Path IMAGE_JAR =
      Path.of(System.getProperty("user.dir"))
          .resolve(
              "target/spark-k8s-native_2.13-"
                  + System.getProperty("spark.k8s.native.test.projectVersion")
                  + ".jar");

  /**
   * The executors' preStop hook when decommissioning is on ({@code
   * spark.kubernetes.decommission.script}, /opt/decom.sh in Spark's image): pods are processes
   * here, so the path is the project's own script (tests run from java/).
   */
  public static final String DECOMMISSION_SCRIPT =
      Path.of(System.getProperty("user.dir"))
          .resolveSibling("tests/localnode/images/decom.sh")
          .toString();

  /** The image that runs a container's command on the node as it is. */
  public static final String HOST_IMAGE = "local/host";

  private final TestPlane plane;

  private ProcessNode(TestPlane plane) {
    this.plane = plane;
  }

  /** The node of the shared plane; fails, saying how to get one, on the loopback plane. */
  public static ProcessNode get() {
    TestPlane plane = TestPlane.get();
    if (plane.var("LOCALPLANE_NODE_NETNS") == null) {
      throw new IllegalStateException(
          "tests tagged 'node' need the sealed cluster (localplane start --node), and must run"
              + " inside its network namespace: scripts/test.sh does both");
    }
    return new ProcessNode(plane);
  }

  public TestPlane plane() {
    return plane;
  }

  public String nodeIp() {
    return plane.var("LOCALPLANE_NODE_IP");
  }

  /** The port executors' block managers listen on, which their Services expose. */
  public static final int BLOCK_MANAGER_PORT = 7079;

  /**
   * Executors shaped for the node, whatever the deploy mode: pods of Spark's image (which the node
   * runs as processes), small enough for two cores.
   */
  public static SparkConf withNodeExecutors(SparkConf conf) {
    return conf.set("spark.kubernetes.container.image", SPARK_IMAGE)
        .set("spark.kubernetes.container.image.pullPolicy", "Never")
        .set("spark.executor.memory", "512m")
        .set("spark.executor.cores", "1")
        // Two cores run the whole cluster: ask the scheduler for a fraction of one.
        .set("spark.kubernetes.executor.request.cores", "250m");
  }

  /**
   * A job on {@code executors} executor pods, with the native allocator and informer or with
   * Spark's own sources (its default allocator); a small shuffle, AQE off, so that the stages are
   * the same in both.
   */
  public static SparkConf withJob(SparkConf conf, int executors, boolean nativeSources) {
    conf.set("spark.executor.instances", String.valueOf(executors))
        .set("spark.sql.shuffle.partitions", "8")
        .set("spark.sql.adaptive.enabled", "false");
    if (nativeSources) {
      conf.set(
              "spark.kubernetes.allocation.pods.allocator",
              NativeExecutorPodsAllocator.class.getName())
          .set("spark.kubernetes.executor.enableInformer", "true");
    }
    return conf;
  }

  /**
   * Executor Services on (the native allocator's): each executor's block manager on {@link
   * #BLOCK_MANAGER_PORT}, which its Service exposes. Their owner, the driver pod, is set apart.
   */
  public static SparkConf withExecutorServices(SparkConf conf) {
    return conf.set("spark.kubernetes.executor.enableService", "true")
        .set("spark.blockManager.port", String.valueOf(BLOCK_MANAGER_PORT));
  }

  /**
   * A driver in client mode on the node: executors are real pods of Spark's image, and connect back
   * to the driver at the node IP.
   */
  public SparkConf sparkDriverConf(String appName) {
    return withNodeExecutors(
        plane
            .sparkDriverConf(appName)
            .set("spark.driver.host", nodeIp())
            .set("spark.driver.bindAddress", nodeIp()));
  }

  /** A client-mode driver for a job ({@link #withJob}). */
  public SparkConf sparkJobConf(String appName, int executors, boolean nativeSources) {
    return withJob(sparkDriverConf(appName), executors, nativeSources);
  }

  /**
   * Waits until {@code executors} executors have registered with the driver (which counts itself
   * among Spark's executor infos), as long as starting their JVMs on 2 cores may take.
   */
  public static void awaitExecutors(SparkContext sc, int executors) {
    TestPlane.eventually(
        executors + " executors to register with the driver",
        Duration.ofSeconds(180),
        () -> sc.statusTracker().getExecutorInfos().length == executors + 1);
  }

  /**
   * A job of a test that runs with both sources ({@link BothSources}), named {@code
   * scenario}-native or -legacy, with {@code driverPod} as its driver pod. The native run has
   * executor Services, deleted 2 s after their executor's pod, so that the test sees them go.
   */
  public SparkConf bothSourcesJobConf(
      String scenario, int executors, boolean nativeSources, String driverPod) {
    SparkConf conf =
        sparkJobConf(
                scenario + "-" + (nativeSources ? "native" : "legacy"), executors, nativeSources)
            .set("spark.kubernetes.driver.pod.name", driverPod);
    if (nativeSources) {
      withExecutorServices(conf).set("spark.kubernetes.native.service.deleteAfter", "2s");
    }
    return conf;
  }

  /**
   * A client-mode job with the native sources and executor Services, owned by {@code driverPod}
   * ({@link #createDriverPod}).
   */
  public SparkConf servicesJobConf(String appName, int executors, String driverPod) {
    return withExecutorServices(sparkJobConf(appName, executors, true))
        .set("spark.kubernetes.driver.pod.name", driverPod);
  }

  /** Counts the shuffle bytes reducers fetch from other executors, from Spark's task metrics. */
  public static AtomicLong remoteShuffleBytes(SparkContext sc) {
    AtomicLong bytes = new AtomicLong();
    sc.addSparkListener(
        new SparkListener() {
          @Override
          public void onTaskEnd(SparkListenerTaskEnd task) {
            if (task.taskMetrics() != null) {
              bytes.addAndGet(task.taskMetrics().shuffleReadMetrics().remoteBytesRead());
            }
          }
        });
    return bytes;
  }

  /**
   * A groupBy with a shuffle (2,000,000 rows, 8 map tasks, 100 keys), its answer asserted: with 2
   * executors, each reducer fetches blocks from the other.
   */
  public static void groupByWithAShuffle(SparkSession spark) {
    List<Row> counts = ShuffleJob.countByKey(spark, 2_000_000, 8, 100);
    assertEquals(100, counts.size());
    assertEquals(0, ShuffleJob.wrongKeys(counts, 2_000_000, 100), "keys not counted 20,000");
  }

  /**
   * A pod standing for the driver of a client-mode app (what spark-submit makes in cluster mode),
   * to own what Spark creates for the app, such as executor Services; returns its name.
   */
  public String createDriverPod() {
    String name = TestPlane.uniqueAppId("driver");
    plane
        .admin()
        .pods()
        .inNamespace(plane.namespace())
        .resource(
            new PodBuilder()
                .withNewMetadata()
                .withName(name)
                .addToLabels("spark-role", "driver")
                .endMetadata()
                .withNewSpec()
                .addNewContainer()
                .withName("spark-kubernetes-driver")
                .withImage(ProcessNode.HOST_IMAGE)
                .withCommand("sleep", "3600")
                .endContainer()
                .endSpec()
                .build())
        .create();
    return name;
  }

  /** OOM-kills the pod's container now (its cgroup's limit set just above its usage). */
  public void oomKill(String podName) {
    control("POST", "/pods/" + plane.namespace() + "/" + podName + "/oom");
  }

  /** Sends a signal (KILL, TERM, STOP, CONT, INT) to every process of the pod. */
  public void signal(String podName, String signal) {
    control("POST", "/pods/" + plane.namespace() + "/" + podName + "/signal?sig=" + signal);
  }

  /**
   * Drops traffic to pod IPs that no live pod holds, as a routed multi-node network does, instead
   * of the bridge's fast "no route to host".
   */
  public void dropTrafficToGonePods(boolean on) {
    control("POST", "/network/drop-gone-pod-ips?on=" + on);
  }

  public String control(String method, String path) {
    return plane.call("LOCALPLANE_NODE_CONTROL", method, path);
  }

  /** The pod once it has ended (Succeeded or Failed), or an AssertionError after the timeout. */
  public Pod awaitEnded(String podName, Duration timeout) {
    Pod[] last = new Pod[1];
    TestPlane.eventually(
        "pod " + podName + " to end",
        timeout,
        () -> {
          last[0] = plane.admin().pods().inNamespace(plane.namespace()).withName(podName).get();
          String phase = last[0] == null ? "" : last[0].getStatus().getPhase();
          return "Succeeded".equals(phase) || "Failed".equals(phase);
        });
    return last[0];
  }
}

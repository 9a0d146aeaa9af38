package org.sparkk8snative.demo;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.fabric8.kubernetes.api.model.Pod;
import java.io.IOException;
import java.lang.reflect.Field;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkContext;
import org.apache.spark.scheduler.cluster.k8s.AbstractPodsAllocator;
import org.apache.spark.scheduler.cluster.k8s.ExecutorPodState;
import org.apache.spark.scheduler.cluster.k8s.ExecutorPodsAllocator;
import org.apache.spark.scheduler.cluster.k8s.KubernetesClusterSchedulerBackend;
import org.sparkk8snative.TestPlane;
import org.sparkk8snative.spark.NativeExecutorPodsAllocator;
import scala.jdk.javaapi.CollectionConverters;

/**
 * The demo: a real Spark driver (client mode, k8s:// master = the local control plane) runs with
 * the native informer, then with Spark's legacy sources, for the same script of executor events
 * played as the kubelet; each second it prints what Spark's allocator sees and the apiserver's LIST
 * and WATCH requests for the app's executor pods (from the audit log).
 */
public final class NativeInformerDemo {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final int SECONDS = Integer.getInteger("demo.seconds", 40);
  private static final String POLLING = System.getProperty("demo.polling", "10s");

  private record Counts(long lists, long watches) {}

  public static void main(String[] args) throws Exception {
    TestPlane plane = TestPlane.get();
    System.out.printf(
        "%nLocal control plane: %s (namespace %s)%n", plane.apiserverUrl(), plane.namespace());
    System.out.printf(
        "Polling interval scaled down from 30s to %s for a %ds run, for both modes.%n",
        POLLING, SECONDS);
    Counts nativeCounts = run(plane, true);
    Counts legacyCounts = run(plane, false);
    System.out.printf(
        "%n%-34s %6s %6s %15s %16s%n",
        "executor pod requests", "LIST", "WATCH", "LIST per hour*", "WATCH per hour");
    print("native informer + lister", nativeCounts);
    print("Spark's watch + polling (legacy)", legacyCounts);
    System.out.printf(
        "* at Spark's default 30s interval, per driver. The native watch ends and resumes from its%n"
            + "  resourceVersion every 10s (two thirds of the stale bound), served from the watch cache.%n");
    System.exit(0); // Spark leaves non-daemon threads behind in client mode
  }

  private static void print(String name, Counts c) {
    double pollsPerRun = c.lists;
    double perHour = pollsPerRun * (3600.0 / SECONDS) * (parseSeconds(POLLING) / 30.0);
    System.out.printf(
        "%-34s %6d %6d %15.0f %16.0f%n",
        name, c.lists, c.watches, perHour, c.watches * 3600.0 / SECONDS);
  }

  private static double parseSeconds(String d) {
    return Double.parseDouble(d.replace("s", ""));
  }

  private static Counts run(TestPlane plane, boolean nativeInformer) throws Exception {
    String mode = nativeInformer ? "native informer + lister" : "Spark's legacy watch + polling";
    System.out.printf("%n=== %s ===%n", mode);
    SparkConf conf =
        plane
            .sparkDriverConf("spark-k8s-native-demo")
            .set("spark.executor.instances", "3")
            .set(
                "spark.kubernetes.allocation.pods.allocator",
                NativeExecutorPodsAllocator.class.getName())
            .set("spark.kubernetes.executor.apiPollingInterval", POLLING)
            .set("spark.kubernetes.executor.listerPollingInterval", POLLING)
            .set("spark.kubernetes.executor.enableInformer", Boolean.toString(nativeInformer));
    SparkContext sc = new SparkContext(conf);
    String appId = sc.applicationId();
    ExecutorPodsAllocator allocator = allocatorOf(sc);
    try {
      for (int t = 1; t <= SECONDS; t++) {
        Thread.sleep(1000);
        playKubelet(plane, appId, t);
        Counts c = count(plane, appId);
        System.out.printf(
            "t=%2ds  Spark sees: %-60s  LIST %2d  WATCH %2d%n",
            t, sparkView(allocator), c.lists, c.watches);
      }
    } finally {
      sc.stop();
    }
    Thread.sleep(1000);
    return count(plane, appId);
  }

  /**
   * The script: new pods run after a second; at 12s executor 1 is OOM-killed; at 22s executor 2 is
   * deleted.
   */
  private static void playKubelet(TestPlane plane, String appId, int t) {
    for (Pod pod :
        plane
            .admin()
            .pods()
            .inNamespace(plane.namespace())
            .withLabel("spark-app-selector", appId)
            .list()
            .getItems()) {
      String name = pod.getMetadata().getName();
      String id = pod.getMetadata().getLabels().get("spark-exec-id");
      String phase = pod.getStatus() == null ? null : pod.getStatus().getPhase();
      if ("Pending".equals(phase) && pod.getMetadata().getDeletionTimestamp() == null) {
        plane.setPhase(name, "Running", 0);
      } else if (t == 12 && "1".equals(id)) {
        plane.setPhase(name, "Failed", 137);
      } else if (t == 22 && "2".equals(id)) {
        plane.deletePod(name);
      }
    }
  }

  private static String sparkView(ExecutorPodsAllocator allocator) {
    Map<Long, String> view = new TreeMap<>();
    Map<Object, ExecutorPodState> pods =
        CollectionConverters.asJava(allocator.lastSnapshot().executorPods());
    pods.forEach(
        (id, state) -> view.put((Long) id, state.getClass().getSimpleName().replace("Pod", "")));
    List<String> parts = new ArrayList<>();
    view.forEach((id, state) -> parts.add(id + ":" + state));
    return String.join(" ", parts);
  }

  /** LIST and WATCH requests of the snapshot sources' selector (the same for both modes). */
  private static Counts count(TestPlane plane, String appId) throws IOException {
    long lists = 0;
    long watches = 0;
    try (Stream<String> lines = Files.lines(Paths.get(plane.var("LOCALPLANE_AUDIT_LOG")))) {
      for (String line : (Iterable<String>) lines::iterator) {
        if (!line.contains(appId) || !line.contains("spark-exec-inactive")) {
          continue;
        }
        JsonNode e = JSON.readTree(line);
        if (!"ResponseStarted".equals(e.path("stage").asText())
            && !"ResponseComplete".equals(e.path("stage").asText())) {
          continue;
        }
        String verb = e.path("verb").asText();
        // A watch logs ResponseStarted when it opens; a list logs ResponseComplete.
        if ("list".equals(verb) && "ResponseComplete".equals(e.path("stage").asText())) {
          lists++;
        } else if ("watch".equals(verb) && "ResponseStarted".equals(e.path("stage").asText())) {
          watches++;
        }
      }
    }
    return new Counts(lists, watches);
  }

  private static ExecutorPodsAllocator allocatorOf(SparkContext sc)
      throws ReflectiveOperationException {
    KubernetesClusterSchedulerBackend backend =
        (KubernetesClusterSchedulerBackend) sc.schedulerBackend();
    for (Field f : KubernetesClusterSchedulerBackend.class.getDeclaredFields()) {
      if (AbstractPodsAllocator.class.isAssignableFrom(f.getType())) {
        f.setAccessible(true);
        return (ExecutorPodsAllocator) f.get(backend);
      }
    }
    throw new IllegalStateException("no pods allocator in the scheduler backend");
  }
}

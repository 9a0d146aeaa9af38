package org.sparkk8snative.demo;

import io.fabric8.kubernetes.api.model.Pod;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkContext;
import org.apache.spark.scheduler.cluster.k8s.ExecutorPodState;
import org.apache.spark.scheduler.cluster.k8s.ExecutorPodsAllocator;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.sparkk8snative.AuditLog;
import org.sparkk8snative.TestPlane;
import org.sparkk8snative.node.ProcessNode;
import org.sparkk8snative.node.SparkBackendParts;
import scala.jdk.javaapi.CollectionConverters;

/**
 * The demo: a real Spark job on the sealed cluster's node, whose executor pods are processes. A
 * driver in client mode runs a groupBy with a shuffle on two executors, first with the native
 * informer and lister, then with Spark's own watch and polling sources. Mid-job, executor 1 is
 * OOM-killed (its cgroup's limit) and then executor 2's pod is deleted; Spark replaces both and the
 * job still finishes. Each second it prints the executor states as Spark's allocator sees them; at
 * the end, the apiserver's LIST and WATCH requests of both modes, from the audit log.
 */
public final class NativeInformerDemo {
  private static final String POLLING = System.getProperty("demo.polling", "10s");
  private static final long ROWS = Long.getLong("demo.rows", 40_000_000L);

  private record Outcome(long jobMillis, long lists, long watches, String answer) {}

  public static void main(String[] args) throws Exception {
    ProcessNode node = ProcessNode.get();
    TestPlane plane = node.plane();
    System.out.printf(
        "%nSealed cluster: apiserver %s, node %s (%s), pods are processes%n",
        plane.apiserverUrl(), plane.var("LOCALPLANE_NODE_NAME"), node.nodeIp());
    System.out.printf(
        "Polling interval scaled down from 30s to %s for both modes (a short run).%n", POLLING);
    Outcome nativeRun = run(node, true);
    Outcome legacyRun = run(node, false);
    System.out.printf(
        "%n%-34s %9s %6s %6s  %s%n", "executor pod requests", "job ms", "LIST", "WATCH", "answer");
    print("native informer + lister", nativeRun);
    print("Spark's watch + polling (legacy)", legacyRun);
    System.out.printf(
        "LIST and WATCH: requests of the app's executor pods by the snapshot sources, from the"
            + " audit log.%nThe native watch ends and resumes from its resourceVersion once per"
            + " lister round (%s here; at least two thirds of the stale bound, 10s), served from the"
            + " watch cache; each clean end proves the cache current for the round's snapshot.%n",
        POLLING);
    System.exit(0); // Spark leaves non-daemon threads behind in client mode
  }

  private static void print(String name, Outcome o) {
    System.out.printf("%-34s %9d %6d %6d  %s%n", name, o.jobMillis, o.lists, o.watches, o.answer);
  }

  private static Outcome run(ProcessNode node, boolean nativeSources) throws Exception {
    TestPlane plane = node.plane();
    System.out.printf(
        "%n=== %s ===%n",
        nativeSources ? "native informer + lister" : "Spark's own watch + polling sources");
    SparkConf conf =
        node.sparkJobConf("spark-k8s-native-demo", 2, nativeSources)
            .set("spark.kubernetes.executor.apiPollingInterval", POLLING)
            .set("spark.kubernetes.executor.listerPollingInterval", POLLING);
    SparkSession spark = SparkSession.builder().config(conf).getOrCreate();
    SparkContext sc = spark.sparkContext();
    String appId = sc.applicationId();
    ExecutorPodsAllocator allocator = SparkBackendParts.of(sc, ExecutorPodsAllocator.class);
    try {
      long began = System.nanoTime();
      while (sc.statusTracker().getExecutorInfos().length < 3) {
        tick(began, allocator, "waiting for 2 executors to register");
      }
      long jobBegan = System.nanoTime();
      CompletableFuture<List<Row>> job =
          CompletableFuture.supplyAsync(
              () ->
                  spark
                      .range(0, ROWS, 1, 32)
                      .selectExpr("id % 1000 AS k", "sha2(CAST(id AS STRING), 256) AS h")
                      .groupBy("k")
                      .agg(org.apache.spark.sql.functions.max("h"))
                      .collectAsList());
      String step = "job running";
      boolean oomDone = false;
      boolean deleteDone = false;
      while (!job.isDone()) {
        double seconds = (System.nanoTime() - jobBegan) / 1e9;
        if (!oomDone && seconds > 3) {
          node.oomKill(podOf(plane, appId, "1"));
          oomDone = true;
          step = "executor 1 OOM-killed";
        } else if (oomDone && !deleteDone && seconds > 9) {
          plane
              .admin()
              .pods()
              .inNamespace(plane.namespace())
              .withName(podOf(plane, appId, "2"))
              .delete();
          deleteDone = true;
          step = "executor 2 deleted";
        }
        tick(began, allocator, step);
      }
      List<Row> rows = job.get(10, TimeUnit.MINUTES);
      long jobMillis = (System.nanoTime() - jobBegan) / 1_000_000;
      tick(began, allocator, "job finished");
      String answer = rows.size() + " groups" + (rows.size() == 1000 ? " (right)" : " (WRONG)");
      Thread.sleep(1000);
      return new Outcome(
          jobMillis,
          AuditLog.snapshotSourceLists(plane, appId),
          AuditLog.snapshotSourceWatches(plane, appId),
          answer);
    } finally {
      spark.stop();
    }
  }

  private static void tick(long began, ExecutorPodsAllocator allocator, String step)
      throws InterruptedException {
    Thread.sleep(1000);
    System.out.printf(
        "t=%3ds  %-24s Spark sees: %s%n",
        (System.nanoTime() - began) / 1_000_000_000, step, sparkView(allocator));
  }

  private static String podOf(TestPlane plane, String appId, String execId) {
    for (Pod pod :
        plane
            .admin()
            .pods()
            .inNamespace(plane.namespace())
            .withLabel("spark-app-selector", appId)
            .withLabel("spark-exec-id", execId)
            .list()
            .getItems()) {
      return pod.getMetadata().getName();
    }
    throw new IllegalStateException("no pod of executor " + execId);
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
}

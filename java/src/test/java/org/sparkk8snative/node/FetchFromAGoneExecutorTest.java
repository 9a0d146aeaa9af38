package org.sparkk8snative.node;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.fabric8.kubernetes.api.model.Pod;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.spark.FetchFailed;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkContext;
import org.apache.spark.TaskFailedReason;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import org.apache.spark.scheduler.SparkListenerTaskStart;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.Test;
import org.sparkk8snative.ExecutorServiceNames;
import org.sparkk8snative.TestPlane;

/**
 * SPARK-52505's headline number: a stage whose reducers fetch from an executor that is gone, once
 * with executor Services (native sources) and once as Spark is today (its own sources, executors
 * known by pod IP), on a network that drops traffic to a gone pod's IP as a routed multi-node
 * network does. The victim is frozen (SIGSTOP) before the reduce stage, so that the reducers on its
 * peer are surely fetching from it, then killed: the peer's fetch fails, and its retries go to the
 * gone executor's address. Through its Service each retry is refused at once; to its old pod IP
 * each waits out {@code spark.shuffle.io.connectionTimeout}. Reported: the job's time and the time
 * from the kill to the fetch failure that makes Spark recompute the lost map output.
 *
 * <p>Quick by default (1 retry, a 20 s connect timeout); {@code -Dfetch.sparkDefaults=true} runs
 * Spark's defaults (3 retries, 120 s), about 6 minutes for the legacy case.
 */
class FetchFromAGoneExecutorTest extends NodeTest {
  private static final boolean SPARK_DEFAULTS = Boolean.getBoolean("fetch.sparkDefaults");
  private static final int RETRIES = SPARK_DEFAULTS ? 3 : 1;
  private static final int CONNECT_TIMEOUT_SECONDS = SPARK_DEFAULTS ? 120 : 20;
  private static final int RETRY_WAIT_SECONDS = 5; // Spark's default
  private static final int MAP_TASKS = 4;
  private static final long ROWS = 400_000;

  /** How long the peer's last map task sleeps: the victim is frozen meanwhile. */
  private static final long LAST_MAP_TASK_MILLIS = 6_000;

  /** How long the reducers fetch from the frozen victim before it is killed. */
  private static final long FROZEN_MILLIS = 2_000;

  /**
   * The job's time; from the kill, the first fetch failure of any task (what makes Spark resubmit
   * the map stage) and the end of the peer's reduce task that was fetching from the victim when it
   * died (how long that task, and its core, waited), with how it ended; times in ms. And, once the
   * victim's pod is gone, how a connection to the address the peers know it by ends (its Service,
   * or its old pod IP): what every fetch retry meets.
   */
  private record Outcome(
      long jobMillis,
      long killToFirstFetchFailedMillis,
      long killToPeersTaskEndMillis,
      String peersTaskEnd,
      ConnectionProbes.Attempt toTheGoneExecutor) {}

  private SparkConf conf(String driverPod, boolean services) {
    SparkConf conf =
        node.sparkJobConf(
                "gone-fetch-" + (services ? "services" : "pod-ips"),
                2,
                /* nativeSources= */ services)
            .set("spark.shuffle.io.maxRetries", String.valueOf(RETRIES))
            .set("spark.shuffle.io.retryWait", RETRY_WAIT_SECONDS + "s")
            .set("spark.shuffle.io.connectionTimeout", CONNECT_TIMEOUT_SECONDS + "s")
            .set("spark.kubernetes.driver.pod.name", driverPod);
    if (services) {
      ProcessNode.withExecutorServices(conf);
    }
    return conf;
  }

  private Outcome run(boolean services) throws Exception {
    try (NodeJob job = NodeJob.start(node, driverPod -> conf(driverPod, services))) {
      SparkSession spark = job.spark;
      SparkContext sc = job.sc;
      String appId = job.appId;
      // The map stage is stage 0 of the app's first job: the peer is whoever runs its last
      // partition (which sleeps); the victim, the other executor, is frozen once it has run its
      // share, so that the reducers begin while it is frozen.
      AtomicReference<String> peer = new AtomicReference<>();
      AtomicInteger mapTasksEnded = new AtomicInteger();
      AtomicLong killedAt = new AtomicLong();
      AtomicLong firstFetchFailedAt = new AtomicLong();
      AtomicLong peersTask = new AtomicLong(-1);
      AtomicLong peersTaskEndedAt = new AtomicLong();
      AtomicReference<String> peersTaskEnd = new AtomicReference<>();
      Map<String, String> victimPod = new ConcurrentHashMap<>();
      CompletableFuture<Void> freezeThenKill = new CompletableFuture<>();
      sc.addSparkListener(
          new SparkListener() {
            @Override
            public void onTaskStart(SparkListenerTaskStart e) {
              if (e.stageId() == 0 && e.taskInfo().index() == MAP_TASKS - 1) {
                peer.compareAndSet(null, e.taskInfo().executorId());
              }
              if (e.stageId() == 1
                  && e.stageAttemptId() == 0
                  && e.taskInfo().executorId().equals(peer.get())) {
                peersTask.compareAndSet(-1, e.taskInfo().taskId());
              }
            }

            @Override
            public void onTaskEnd(SparkListenerTaskEnd e) {
              if (e.stageId() == 0 && mapTasksEnded.incrementAndGet() == MAP_TASKS - 1) {
                CompletableFuture.runAsync(
                    () -> {
                      try {
                        String victim = peer.get().equals("1") ? "2" : "1";
                        Pod victimsPod = plane.executorPod(appId, victim);
                        String pod = victimsPod.getMetadata().getName();
                        victimPod.put("name", pod);
                        victimPod.put("ip", victimsPod.getStatus().getPodIP());
                        victimPod.put("service", ExecutorServiceNames.serviceName(appId, victim));
                        node.signal(pod, "STOP");
                        Thread.sleep(LAST_MAP_TASK_MILLIS + FROZEN_MILLIS);
                        killedAt.set(System.nanoTime());
                        node.signal(pod, "KILL");
                        freezeThenKill.complete(null);
                      } catch (Throwable t) {
                        freezeThenKill.completeExceptionally(t);
                      }
                    });
              }
              if (e.reason() instanceof FetchFailed) {
                firstFetchFailedAt.compareAndSet(0, System.nanoTime());
              }
              if (e.taskInfo().taskId() == peersTask.get()) {
                peersTaskEnd.set(
                    e.reason() instanceof FetchFailed
                        ? "FetchFailed"
                        : e.reason() instanceof TaskFailedReason failed
                            ? failed.toErrorString().lines().findFirst().orElse("")
                            : e.reason().toString());
                peersTaskEndedAt.set(System.nanoTime());
              }
            }
          });
      node.dropTrafficToGonePods(true);
      try {
        TestPlane.eventually(
            "2 executors to register",
            Duration.ofSeconds(180),
            () -> sc.getExecutorIds().size() == 2);
        long began = System.nanoTime();
        List<Row> counts =
            spark
                .range(0, ROWS, 1, MAP_TASKS)
                .selectExpr(
                    "id % " + ShuffleJob.KEYS + " AS k",
                    // The last partition's first row sleeps: its task ends last, on the peer.
                    "IF(id = "
                        + (ROWS / MAP_TASKS) * (MAP_TASKS - 1)
                        + ", java_method('java.lang.Thread', 'sleep', CAST("
                        + LAST_MAP_TASK_MILLIS
                        + " AS BIGINT)), NULL) AS slept")
                .groupBy("k")
                .agg(
                    org.apache.spark.sql.functions.expr("count(*)"),
                    org.apache.spark.sql.functions.expr("max(slept)"))
                .collectAsList();
        long jobMillis = (System.nanoTime() - began) / 1_000_000;
        freezeThenKill.get(1, TimeUnit.MINUTES);
        assertEveryKeyCounted(counts, ROWS, ShuffleJob.KEYS, "the job");
        // Spark does not wait for the peer's task: the loss unregisters the victim's map output,
        // the first task to miss it fails at once and the stage is resubmitted, so the job may end
        // while the peer's task still waits on its fetch (holding its core), which the stage's end
        // then kills.
        TestPlane.eventually(
            "the peer's reduce task to end",
            Duration.ofSeconds(30),
            () -> peersTaskEndedAt.get() != 0);
        TestPlane.eventually(
            "the victim's pod to be gone",
            Duration.ofSeconds(60),
            () ->
                plane.executorPods(appId).stream()
                    .noneMatch(p -> p.getMetadata().getName().equals(victimPod.get("name"))));
        return new Outcome(
            jobMillis,
            (firstFetchFailedAt.get() - killedAt.get()) / 1_000_000,
            (peersTaskEndedAt.get() - killedAt.get()) / 1_000_000,
            peersTaskEnd.get(),
            ConnectionProbes.connect(
                victimPod.get(services ? "service" : "ip"), ProcessNode.BLOCK_MANAGER_PORT));
      } finally {
        node.dropTrafficToGonePods(false);
      }
    }
  }

  @Test
  void aFetchFromAGoneExecutorFailsAtOnceThroughItsServiceAndAfterTheConnectTimeoutWithout()
      throws Exception {
    Outcome withServices = run(true);
    Outcome withPodIps = run(false);
    System.out.printf(
        "a reducer fetching from a gone executor (%d retr%s %d s apart, connect timeout %d s):"
            + " with executor Services the peer's task ended %d ms after the kill (%s; first"
            + " fetch failure %d ms), job %d ms; by pod IP (dropped, as on a routed network) %d ms"
            + " (%s; first %d ms), job %d ms; a connection to the gone executor's Service %s after %d"
            + " ms, to its pod IP %s after %d ms%n",
        RETRIES,
        RETRIES == 1 ? "y" : "ies",
        RETRY_WAIT_SECONDS,
        CONNECT_TIMEOUT_SECONDS,
        withServices.killToPeersTaskEndMillis(),
        withServices.peersTaskEnd(),
        withServices.killToFirstFetchFailedMillis(),
        withServices.jobMillis(),
        withPodIps.killToPeersTaskEndMillis(),
        withPodIps.peersTaskEnd(),
        withPodIps.killToFirstFetchFailedMillis(),
        withPodIps.jobMillis(),
        withServices.toTheGoneExecutor().outcome(),
        withServices.toTheGoneExecutor().millis(),
        withPodIps.toTheGoneExecutor().outcome(),
        withPodIps.toTheGoneExecutor().millis());
    long retriesWait = RETRIES * RETRY_WAIT_SECONDS * 1000L;
    long connectTimeouts = RETRIES * CONNECT_TIMEOUT_SECONDS * 1000L;
    // Through the Service: the peer's fetch fails after the retries' waits and little else (each
    // attempt is refused at once), unless the stage's end kills its task first (with Spark's
    // 3 retries, 15 s of waits outlast the resubmitted stage).
    assertTrue(
        withServices.killToPeersTaskEndMillis() < retriesWait + 5_000,
        "with Services, the peer's task ends within the retries' waits: " + withServices);
    // What each retry meets through the Service: refused at once (the Service outlives its pod by
    // spark.kubernetes.native.service.deleteAfter, 300 s by default, with no endpoint), never a
    // wait. Whether the peer's fetch then fails before the stage's end kills its task is a race
    // the resubmitted stage often wins.
    assertTrue(
        ConnectionProbes.refusedFast(withServices.toTheGoneExecutor()),
        "a connection through the gone executor's Service is refused at once: " + withServices);
    // By pod IP the gone executor's address answers nothing: a connection waits out its whole
    // timeout, as every fetch retry does (whether or not the stage's end kills the peer's task
    // before its fetch fails, as it always does on Spark 4.2). A refusal would mean the pod-IP
    // case measured nothing.
    assertEquals(
        "timed out",
        withPodIps.toTheGoneExecutor().outcome(),
        "a connection to the gone executor's pod IP: " + withPodIps);
    // By pod IP: every retry waits out the connect timeout too, so the peer's task fails no
    // sooner than that, unless the stage's end kills it first.
    assertTrue(
        !withPodIps.peersTaskEnd().equals("FetchFailed")
            || withPodIps.killToPeersTaskEndMillis() >= retriesWait + connectTimeouts - 1_000,
        "by pod IP, no fetch fails before its retries waited out the connect timeout: "
            + withPodIps);
  }
}

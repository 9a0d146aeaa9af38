package org.sparkk8snative.node;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.fabric8.kubernetes.api.model.Pod;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.spark.FetchFailed;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkContext;
import org.apache.spark.SparkExecutorInfo;
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
 * gone executor's address. Asserted, in each case: the job's answer, that the peers know the victim
 * by the address the test then dials, and what a connection to it meets once the victim's pod is
 * gone: through its Service refused at once, to its old pod IP no answer until the connect timeout.
 * Reported, not asserted: the job's time, and the times from the kill to the first fetch failure
 * and to the end of the peer's task that was fetching from the victim, which the resubmitted stage
 * decides (see the test).
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
   * died (how long that task, and its core, waited), with how it ended; times in ms. The hosts
   * Spark knew its executors' block managers by before the kill, the victim's address the test
   * dials (its Service's name, or its pod IP), and, once the victim's pod is gone, how a connection
   * to that address ends: what every fetch retry meets.
   */
  private record Outcome(
      long jobMillis,
      long killToFirstFetchFailedMillis,
      long killToPeersTaskEndMillis,
      String peersTaskEnd,
      List<String> executorHosts,
      String victimsAddress,
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
      List<String> executorHosts = new CopyOnWriteArrayList<>();
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
                        victimPod.put(
                            "address",
                            services
                                ? ExecutorServiceNames.serviceName(appId, victim)
                                : victimsPod.getStatus().getPodIP());
                        Arrays.stream(sc.statusTracker().getExecutorInfos())
                            .map(SparkExecutorInfo::host)
                            .forEach(executorHosts::add);
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
            List.copyOf(executorHosts),
            victimPod.get("address"),
            ConnectionProbes.connect(victimPod.get("address"), ProcessNode.BLOCK_MANAGER_PORT));
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
    // Services decide what each fetch retry meets, and that is what is asserted; not when the
    // peer's task ends. Spark does not wait for that task (the loss unregisters the victim's map
    // output, the first task to miss it fails at once, the stage is resubmitted), and the
    // resubmitted stage's end kills it whether or not its fetch has failed, so its end times the
    // stage, with or without Services (on a new machine: killed at the stage's end 10.2 s after
    // the kill with Services, the first fetch failure at 6.9 s; 9.3 s by pod IP). Printed above.
    for (Outcome run : List.of(withServices, withPodIps)) {
      // The address every retry goes to, which the test dials: the victim's block manager is
      // known by its Service's name (it advertises the Service, which exists), or by its pod IP
      // without Services.
      assertTrue(
          run.executorHosts().contains(run.victimsAddress()),
          "the peers know the victim by the address dialed: " + run);
    }
    // Through its Service, refused at once: the Service outlives its pod by
    // spark.kubernetes.native.service.deleteAfter (300 s by default) with no endpoint, which
    // kube-proxy rejects. "At once" is ConnectionProbes.refusedFast, within 200 ms: such a
    // refusal took 1 to 20 ms on the node and a wait takes the probe's whole 10 s connect
    // timeout, so the bound is 10 times the slowest refusal seen and 1/50 of a wait.
    assertTrue(
        ConnectionProbes.refusedFast(withServices.toTheGoneExecutor()),
        "a connection through the gone executor's Service is refused at once: " + withServices);
    // By pod IP the gone executor's address answers nothing: a connection waits out its whole
    // timeout, as every fetch retry does. A refusal would mean the pod-IP case measured nothing.
    assertEquals(
        "timed out",
        withPodIps.toTheGoneExecutor().outcome(),
        "a connection to the gone executor's pod IP: " + withPodIps);
  }
}

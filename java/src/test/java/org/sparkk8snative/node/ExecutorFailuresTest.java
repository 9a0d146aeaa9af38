package org.sparkk8snative.node;

import static org.junit.jupiter.api.Assertions.assertAll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.Watch;
import io.fabric8.kubernetes.client.Watcher;
import io.fabric8.kubernetes.client.WatcherException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.BiConsumer;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.logging.log4j.Level;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkContext;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerExecutorAdded;
import org.apache.spark.scheduler.SparkListenerTaskStart;
import org.apache.spark.scheduler.TaskSchedulerImpl;
import org.apache.spark.scheduler.cluster.k8s.ExecutorPodsAllocator;
import org.apache.spark.scheduler.cluster.k8s.ExecutorPodsLifecycleManager;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.sparkk8snative.TestPlane;
import org.sparkk8snative.spark.LogCapture;
import org.sparkk8snative.spark.NativeExecutorPodsAllocator;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Executors that fail while a stage runs, on the real node, once with the native sources and once
 * with Spark's own (in an order drawn per run: {@link BothSources}): OOM-killed (its cgroup), its
 * pod deleted, its process SIGKILLed, and hung (SIGSTOP) until the driver's heartbeat timeout
 * removes it. Each time the job must give the right answer and Spark must replace the executor;
 * both sources must give Spark the same outcome, loss by loss: the same reason, the failures
 * counted toward {@code spark.executor.maxNumFailures} during that loss (the number the victim's
 * failure must count, plus one for each other executor lost with a failed pod), one executor added
 * for each executor lost, the same other executors removed on the word of the source (by role and
 * Spark's reason: {@link #removedOnTheSourcesWord}), no other executor removed as missing, the
 * victim removed no later than with Spark's own sources plus {@link #REMOVAL_SLACK_MS}, and the
 * victim's own replacement registered no later than with Spark's own plus {@link
 * #REPLACEMENT_SLACK_MS}. Every comparison of every loss is checked and reported together, so that
 * one run of several minutes names all that differ.
 */
class ExecutorFailuresTest extends NodeTest {
  private static final long ROWS = Long.getLong("failures.rows", 8_000_000L);
  private static final int KEYS = 1000;
  private static final int EXECUTORS = 2;

  /**
   * How much later than with Spark's own sources the native ones may make Spark remove a victim.
   * The removals took 0.2-1.2 s (15 s for a hung one, the heartbeat timeout) with either source; a
   * source that delivered a failure only on a lister round would take up to 30 s.
   */
  private static final long REMOVAL_SLACK_MS = 5_000;

  /**
   * How much later than with Spark's own sources the native ones may have the victim's replacement
   * registered: the removal's slack, plus the start of one executor JVM on 2 cores shared with the
   * driver and the stage (replacements registered 2.7-5.0 s after the failure with either source, a
   * hung executor's 25.5-28.8 s, after its heartbeat timeout and its pod's deletion). A source
   * whose news of a gone pod reached Spark's allocator only on a lister round would take up to 30 s
   * longer.
   */
  private static final long REPLACEMENT_SLACK_MS = 10_000;

  /** The failures each kind of victim must count toward {@code spark.executor.maxNumFailures}. */
  private static final Map<String, Integer> FAILURES_PER_LOSS =
      Map.of("OOM-killed", 1, "pod deleted", 0, "SIGKILL", 1, "hung (SIGSTOP)", 0);

  /**
   * What one failure did, counted from its start to its replacement's registration: how Spark
   * explained the loss, the failures it counted and the executors it added meanwhile, the times
   * from the failure to Spark's removal of the executor and to the registration of the victim's own
   * replacement ({@link #replacementOf}), the victim's peers (the executors alive with it at the
   * failure), and Spark's reasons for removing any other executor meanwhile, by id, every one it
   * posted, its own first (a healthy executor sometimes misses its heartbeats while the stage
   * reruns, and Spark replaces it too).
   */
  private record Loss(
      String failure,
      String sparkReason,
      int failuresCounted,
      int executorsAdded,
      long millis,
      String replacement,
      long replacedMillis,
      Set<String> peers,
      Map<String, List<String>> othersRemoved,
      Map<String, Integer> exitedWith,
      List<String> allocatorRequests) {}

  /**
   * What one run did, and whether Spark removed any executor by missing-pod detection (a full
   * snapshot lacked its live pod): read from Spark's scheduler log, since the removal event a
   * listener sees may carry the pod's later exit instead.
   */
  private record Outcome(
      List<Loss> losses, int executorsAdded, boolean podsLeftOver, boolean removedAsMissing) {}

  private SparkConf conf(boolean nativeSources) {
    return node.sparkJobConf(
            "executor-failures-" + (nativeSources ? "native" : "legacy"), EXECUTORS, nativeSources)
        .set("spark.executor.maxNumFailures", "10")
        // A hung executor is found by the heartbeat timeout; shortened from 120 s.
        .set("spark.network.timeout", "15s")
        .set("spark.network.timeoutInterval", "2s")
        .set("spark.executor.heartbeatInterval", "2s")
        // The pod of a removed executor is deleted with this grace (a stopped one ignores
        // SIGTERM until the node's SIGKILL).
        .set("spark.kubernetes.executor.terminationGracePeriodSeconds", "5");
  }

  private Outcome run(boolean nativeSources) throws Exception {
    SparkSession spark = SparkSession.builder().config(conf(nativeSources)).getOrCreate();
    SparkContext sc = spark.sparkContext();
    LogCapture schedulerLog = LogCapture.of(TaskSchedulerImpl.class);
    LogCapture allocatorLog =
        LogCapture.of(
            nativeSources ? NativeExecutorPodsAllocator.class : ExecutorPodsAllocator.class,
            Level.INFO);
    String appId = sc.applicationId();
    Set<String> added = ConcurrentHashMap.newKeySet();
    Map<String, Long> addedAt = new ConcurrentHashMap<>();
    ExecutorRemovals removals = ExecutorRemovals.of(sc);
    java.util.concurrent.atomic.AtomicReference<String> taskStartedOn =
        new java.util.concurrent.atomic.AtomicReference<>();
    Map<String, Long> podEndedAt = new ConcurrentHashMap<>();
    Map<String, Integer> podExitedWith = new ConcurrentHashMap<>();
    Watch podEndings = watchPodEndings(appId, podEndedAt, podExitedWith);
    sc.addSparkListener(
        new SparkListener() {
          @Override
          public void onExecutorAdded(SparkListenerExecutorAdded e) {
            addedAt.put(e.executorId(), System.nanoTime());
            added.add(e.executorId());
          }

          @Override
          public void onTaskStart(SparkListenerTaskStart e) {
            taskStartedOn.compareAndSet(null, e.taskInfo().executorId());
          }
        });
    // Executors that registered before the listener was added are only in this list.
    java.util.function.Supplier<Set<String>> alive =
        () -> {
          Set<String> ids =
              new java.util.TreeSet<>(CollectionConverters.asJava(sc.getExecutorIds()));
          added.addAll(ids);
          return ids;
        };
    ExecutorPodsLifecycleManager lifecycle =
        SparkBackendParts.of(sc, ExecutorPodsLifecycleManager.class);
    Map<String, BiConsumer<String, String>> failures = new java.util.LinkedHashMap<>();
    failures.put("OOM-killed", (exec, pod) -> node.oomKill(pod));
    failures.put(
        "pod deleted",
        (exec, pod) -> plane.admin().pods().inNamespace(plane.namespace()).withName(pod).delete());
    failures.put("SIGKILL", (exec, pod) -> node.signal(pod, "KILL"));
    failures.put("hung (SIGSTOP)", (exec, pod) -> node.signal(pod, "STOP"));
    List<Loss> losses = new ArrayList<>();
    try {
      for (var failure : failures.entrySet()) {
        TestPlane.eventually(
            EXECUTORS + " executors registered",
            Duration.ofSeconds(180),
            () -> alive.get().size() == EXECUTORS);
        taskStartedOn.set(null);
        CompletableFuture<List<Row>> job =
            CompletableFuture.supplyAsync(
                () ->
                    spark
                        .range(0, ROWS, 1, 16)
                        .selectExpr("id % " + KEYS + " AS k", "sha2(CAST(id AS STRING), 256) AS h")
                        .groupBy("k")
                        .agg(org.apache.spark.sql.functions.count("h"))
                        .collectAsList());
        // The victim is an executor running a task of the stage (mid-stage, by definition).
        TestPlane.eventually(
            "a task of the job to start",
            Duration.ofSeconds(60),
            () -> taskStartedOn.get() != null);
        String victim = taskStartedOn.get();
        String victimPod = plane.executorPod(appId, victim).getMetadata().getName();
        Set<String> peers = alive.get();
        peers.remove(victim);
        Set<String> removedBefore = removals.ids();
        int failedBefore = lifecycle.getNumExecutorsFailed();
        int addedBefore = added.size();
        int requestsBefore = allocatorRequests(allocatorLog).size();
        long began = System.nanoTime();
        failure.getValue().accept(victim, victimPod);
        List<Row> rows = job.get(5, TimeUnit.MINUTES);
        assertEveryKeyCounted(rows, ROWS, KEYS, failure.getKey());
        TestPlane.eventually(
            "Spark to remove executor " + victim + " (" + failure.getKey() + ")",
            Duration.ofSeconds(60),
            () -> removals.removed(victim));
        long millis = (removals.removedAt(victim) - began) / 1_000_000;
        TestPlane.eventually(
            "the pod of executor " + victim + " to be gone",
            Duration.ofSeconds(60),
            () ->
                plane.executorPods(appId).stream()
                    .noneMatch(p -> p.getMetadata().getName().equals(victimPod)));
        // The loss is over once the allocator has settled: the replacement registered and no
        // other executor pod is live (one still starting, or one being deleted), so that none of
        // this loss's executors is counted toward the next.
        TestPlane.eventually(
            "a replacement for executor " + victim + " and no other executor pod live",
            Duration.ofSeconds(180),
            () -> alive.get().size() == EXECUTORS && livePods(appId) == EXECUTORS);
        Map<String, List<String>> othersRemoved = new TreeMap<>(removals.reasons());
        othersRemoved.keySet().removeAll(removedBefore);
        othersRemoved.remove(victim);
        String replacement = replacementOf(victim, began, podEndedAt, addedAt);
        losses.add(
            new Loss(
                failure.getKey(),
                removals.reason(victim),
                lifecycle.getNumExecutorsFailed() - failedBefore,
                added.size() - addedBefore,
                millis,
                replacement,
                replacement == null ? -1 : (addedAt.get(replacement) - began) / 1_000_000,
                peers,
                othersRemoved,
                Map.copyOf(podExitedWith),
                allocatorRequests(allocatorLog).stream().skip(requestsBefore).toList()));
      }
      TestPlane.eventually(
          "replacements for every lost executor",
          Duration.ofSeconds(180),
          () -> alive.get().size() == EXECUTORS);
      boolean leftOver = livePods(appId) != EXECUTORS;
      return new Outcome(
          losses,
          added.size(),
          leftOver,
          schedulerLog.logged(Level.ERROR, "was not found in the cluster"));
    } finally {
      podEndings.close();
      schedulerLog.close();
      allocatorLog.close();
      spark.stop();
    }
  }

  /**
   * Records when each of the app's executor pods stopped counting as live for Spark's allocator:
   * failed, succeeded or removed, whichever it was first; by executor id.
   */
  private Watch watchPodEndings(
      String appId, Map<String, Long> endedAt, Map<String, Integer> exitedWith) {
    return plane
        .executorPodsOf(appId)
        .watch(
            new Watcher<Pod>() {
              @Override
              public void eventReceived(Action action, Pod pod) {
                String phase = pod.getStatus() == null ? null : pod.getStatus().getPhase();
                if (action == Action.DELETED
                    || "Failed".equals(phase)
                    || "Succeeded".equals(phase)) {
                  endedAt.putIfAbsent(TestPlane.executorId(pod), System.nanoTime());
                }
                if ("Failed".equals(phase) || "Succeeded".equals(phase)) {
                  pod.getStatus().getContainerStatuses().stream()
                      .filter(c -> c.getState() != null && c.getState().getTerminated() != null)
                      .findFirst()
                      .ifPresent(
                          c ->
                              exitedWith.putIfAbsent(
                                  TestPlane.executorId(pod),
                                  c.getState().getTerminated().getExitCode()));
                }
              }

              @Override
              public void onClose(WatcherException cause) {}
            });
  }

  /**
   * The victim's own replacement, or null if it has none: Spark's allocator asks for a new pod when
   * one stops counting and numbers executors in the order it asks, so the k-th executor pod that
   * ended since the failure is replaced by the k-th executor added since (by id). Not simply the
   * first executor added: on 2026-12-06 another executor of Spark's own run exited during a hung
   * victim's loss and its replacement registered 9.5 s after the failure, against 25.5-28.8 s for a
   * hung victim's own; nor the last one added, which charges one run for the other losses it had.
   */
  private static String replacementOf(
      String victim, long began, Map<String, Long> podEndedAt, Map<String, Long> addedAt) {
    List<String> ended =
        podEndedAt.entrySet().stream()
            .filter(e -> e.getValue() > began)
            .sorted(Map.Entry.comparingByValue())
            .map(Map.Entry::getKey)
            .toList();
    List<String> addedSince =
        addedAt.entrySet().stream()
            .filter(e -> e.getValue() > began)
            .map(Map.Entry::getKey)
            .sorted(Comparator.comparingInt(Integer::parseInt))
            .toList();
    int rank = ended.indexOf(victim);
    return rank >= 0 && rank < addedSince.size() ? addedSince.get(rank) : null;
  }

  /** Spark's allocator's requests for executor pods, as it explains them (target, known). */
  private static List<String> allocatorRequests(LogCapture allocatorLog) {
    return allocatorLog.messages(Level.INFO, "Going to request");
  }

  /** The app's executor pods that are not being deleted. */
  private long livePods(String appId) {
    return plane.executorPods(appId).stream()
        .filter(p -> p.getMetadata().getDeletionTimestamp() == null)
        .count();
  }

  /** The part of Spark's reason that does not name the executor or the time. */
  private static String kind(String reason) {
    if (reason.contains("137") && reason.contains("OOMKilled")) {
      return "exit 137, OOMKilled";
    } else if (reason.contains("137")) {
      return "exit 137";
    } else if (reason.contains("deleted by a user")) {
      return "deleted";
    } else if (reason.contains("heartbeat") || reason.contains("Heartbeat")) {
      return "heartbeat timeout";
    } else if (reason.contains("killed by driver")) {
      return "killed by driver";
    } else if (reason.contains("was not found in the cluster")) {
      return "not found";
    }
    Matcher exit = EXIT_CODE.matcher(reason);
    return exit.find() ? "exit " + exit.group(1) : reason;
  }

  /**
   * A hung executor's removal is explained by whichever comes first, in either mode: the heartbeat
   * timeout (the kill it asks for), or its pod's deletion, which the timeout itself asks for.
   */
  private static String outcome(Loss loss) {
    String kind = kind(loss.sparkReason());
    if (loss.failure().startsWith("hung")
        && (kind.equals("deleted") || kind.startsWith("heart") || kind.startsWith("killed"))) {
      return "heartbeat timeout, pod deleted";
    }
    return kind;
  }

  /**
   * Whether Spark removed an executor by missing-pod detection: a full snapshot lacked its live
   * pod, exactly what a stale or incomplete snapshot causes.
   */
  private static boolean wrongRemoval(String reason) {
    return reason.contains("was not found in the cluster");
  }

  private static final Pattern EXIT_CODE = Pattern.compile("exited with exit code (-?\\d+)");

  /**
   * How many of the other executors Spark lost during a loss it counts as failed: those whose pod
   * failed, by the exit code in Spark's reason (a pod that exited 0 succeeded).
   */
  private static int othersFailed(Loss loss) {
    int failed = 0;
    for (List<String> reasons : loss.othersRemoved().values()) {
      Matcher exit = EXIT_CODE.matcher(String.join(" | ", reasons));
      if (exit.find() && !exit.group(1).equals("0")) {
        failed++;
      }
    }
    return failed;
  }

  /**
   * What the driver removes a healthy executor for by itself: it missed its heartbeats (the 2 cores
   * busy rerunning the stage), so the driver kills it, and only then does its pod exit.
   */
  private static final Set<String> DRIVERS_OWN_REMOVALS =
      Set.of("killed by driver", "heartbeat timeout");

  /**
   * The other executors Spark removed during a loss on the word of its source: those whose first
   * removal was not the driver's own (their pod delivered as failed, succeeded, deleted or
   * missing), each as its role, a peer of the victim or an executor added since the failure, and
   * the kind of Spark's reason. By role, not id: the victim is whichever executor started a task
   * first, and every earlier replacement shifts the ids, so a run's ids are not the other's.
   */
  private static List<String> removedOnTheSourcesWord(Loss loss) {
    return loss.othersRemoved().entrySet().stream()
        .filter(other -> !DRIVERS_OWN_REMOVALS.contains(kind(other.getValue().get(0))))
        .filter(other -> !exitedOnItsOwn(loss, other.getKey(), other.getValue().get(0)))
        .map(
            other ->
                (loss.peers().contains(other.getKey()) ? "a peer" : "an executor added since")
                    + ": "
                    + kind(other.getValue().get(0)))
        .sorted()
        .toList();
  }

  /**
   * Whether Spark's first reason for removing an executor is an exit that the test's own watch saw
   * its pod's container terminate with: the cluster's doing, told truly by the source, not its
   * decision. Seen once with the native sources (CI, 2026-12-07): a healthy peer of a hung victim
   * exited 1 on its own, no kill before it, in a run where no peer of Spark's own did; on 2 cores
   * that is how an executor ends when its connection to the driver is closed as quiet. A live pod
   * delivered as failed or deleted has no such exit: its reason is not an exit, or its container
   * never terminated with that code, so it stays compared.
   */
  private static boolean exitedOnItsOwn(Loss loss, String executor, String sparkReason) {
    Matcher exit = EXIT_CODE.matcher(sparkReason);
    Integer seen = loss.exitedWith().get(executor);
    return exit.find() && seen != null && seen == Integer.parseInt(exit.group(1));
  }

  /** Every other executor removed during a loss, with every reason Spark posted, in order. */
  private static List<String> others(Loss loss) {
    return loss.othersRemoved().entrySet().stream()
        .map(other -> other.getKey() + ": " + String.join(" | ", other.getValue()))
        .toList();
  }

  @Test
  void failuresMidStageGiveSparkTheSameOutcomeWithTheNativeSourcesAsWithItsOwn() throws Exception {
    BothSources<Outcome> both = BothSources.run("executor failures", this::run);
    Outcome nativeRun = both.nativeRun;
    Outcome legacyRun = both.legacyRun;
    List<Executable> checks = new ArrayList<>();
    for (int i = 0; i < nativeRun.losses().size(); i++) {
      Loss n = nativeRun.losses().get(i);
      Loss l = legacyRun.losses().get(i);
      System.out.printf(
          "%-15s native: %-20s failures +%d, executors +%d, removed after %5d ms, replaced by %s"
              + " after %5d ms, others removed %s | legacy: %-20s failures +%d, executors +%d,"
              + " removed after %5d ms, replaced by %s after %5d ms, others removed %s%n",
          n.failure(),
          kind(n.sparkReason()),
          n.failuresCounted(),
          n.executorsAdded(),
          n.millis(),
          n.replacement(),
          n.replacedMillis(),
          others(n),
          kind(l.sparkReason()),
          l.failuresCounted(),
          l.executorsAdded(),
          l.millis(),
          l.replacement(),
          l.replacedMillis(),
          others(l));
      checks.add(() -> assertEquals(outcome(l), outcome(n), n.failure() + ": Spark's reason"));
      // The other executors Spark removed meanwhile on its source's word, the same with both
      // sources (none in the runs reliability.md records: every other executor lost there was
      // the driver's kill first). A healthy executor that the native sources delivered as deleted
      // or failed (Spark removes it, "deleted by a user or the framework", and replaces it) is
      // one more here, where counting the executors added against those lost would pass it.
      // Those the driver removed itself are not compared: whether a healthy executor misses its
      // heartbeats is the 2 cores' timing, seen with either source in one run and not the other
      // (0-2 per loss); they are counted below. Nor one whose first reason is an exit its pod's
      // container really ended with, by the test's own watch ({@link #exitedOnItsOwn}): the
      // cluster's doing, told truly.
      checks.add(
          () ->
              assertEquals(
                  removedOnTheSourcesWord(l),
                  removedOnTheSourcesWord(n),
                  n.failure()
                      + ": other executors removed on the source's word (role: Spark's reason);"
                      + " every other removal, native: "
                      + others(n)
                      + ", Spark's own: "
                      + others(l)));
      for (var run : Map.of("native", n, "Spark's own", l).entrySet()) {
        Loss loss = run.getValue();
        String which = loss.failure() + ", " + run.getKey() + " sources";
        // The victim's failures by the table, and one for each other executor Spark lost whose
        // pod failed: a healthy executor that missed its heartbeats exits 0 or 1 once the driver
        // stops it (both seen with either source; 1 counts, as with any executor).
        checks.add(
            () ->
                assertEquals(
                    FAILURES_PER_LOSS.get(loss.failure()) + othersFailed(loss),
                    loss.failuresCounted(),
                    which
                        + ": failures counted, with executors lost "
                        + others(loss)
                        + " besides the victim"));
        // One executor for each that Spark lost: the victim, and any healthy one that missed its
        // heartbeats meanwhile (seen with either source, on 2 cores, 0-2 per loss; any other
        // removal is compared above). An executor added for no loss is the allocator acting on a
        // snapshot that lacked a pending pod.
        checks.add(
            () ->
                assertEquals(
                    1 + loss.othersRemoved().size(),
                    loss.executorsAdded(),
                    which
                        + ": executors added, against executors lost "
                        + others(loss)
                        + " besides the victim; the allocator: "
                        + loss.allocatorRequests()));
        checks.add(
            () ->
                assertTrue(
                    loss.replacement() != null,
                    which
                        + ": no replacement of the victim registered; the allocator: "
                        + loss.allocatorRequests()));
        for (String other : others(loss)) {
          checks.add(
              () ->
                  assertTrue(
                      !wrongRemoval(other),
                      which + ": another executor removed as missing: " + other));
        }
      }
      checks.add(
          () ->
              BothSources.noLaterThanLegacy(
                  n.failure() + ": Spark removed the victim",
                  n.millis(),
                  l.millis(),
                  REMOVAL_SLACK_MS));
      checks.add(
          () ->
              BothSources.noLaterThanLegacy(
                  n.failure() + ": the victim's replacement registered, from the failure,",
                  n.replacedMillis(),
                  l.replacedMillis(),
                  REPLACEMENT_SLACK_MS));
    }
    checks.add(
        () -> assertEquals("exit 137, OOMKilled", kind(nativeRun.losses().get(0).sparkReason())));
    checks.add(
        () ->
            assertTrue(
                !nativeRun.podsLeftOver() && !legacyRun.podsLeftOver(), "one pod per executor"));
    checks.add(
        () ->
            assertTrue(
                !legacyRun.removedAsMissing(),
                "Spark's own sources: an executor removed as missing"));
    checks.add(
        () ->
            assertTrue(
                !nativeRun.removedAsMissing(), "native sources: an executor removed as missing"));
    assertAll("the same outcome, loss by loss", checks);
  }
}

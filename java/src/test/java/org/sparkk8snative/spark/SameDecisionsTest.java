package org.sparkk8snative.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.fabric8.kubernetes.client.KubernetesClient;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.function.Supplier;
import org.apache.logging.log4j.Level;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.core.config.Configurator;
import org.apache.spark.SparkConf;
import org.apache.spark.scheduler.cluster.k8s.ExecutorPodsPollingSnapshotSource;
import org.apache.spark.scheduler.cluster.k8s.ExecutorPodsWatchSnapshotSource;
import org.apache.spark.util.Utils;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.sparkk8snative.InformerHealth;
import org.sparkk8snative.TestPlane;

/**
 * The differential harness: Spark decides exactly as with its own sources. One seeded history of
 * executor pods ({@link ExecutorHistories}) is applied to the real apiserver (watch cache on), and
 * two copies of Spark's real store and lifecycle manager ({@link SparkDecisions}) watch it at once:
 * one fed by Spark's own watch and polling sources on a direct connection, one by the native
 * sources through the plane's fault proxy, which cuts and black-holes the native informer's
 * connections while its consumer (Spark's store) stalls now and then. A second configuration runs
 * on a highly available plane (two apiservers on one etcd, watch caches on): the native informer
 * reaches it through a load balancer that moves it between the apiservers, closing its connection
 * or holding it silent past the silence bound, and first lags apiserver b (cut off etcd) under it,
 * while Spark's own sources stay on apiserver a. Each run starts free of faults until Spark has
 * decided on {@link #QUIET_DECISIONS} executors; after that one executor exit in {@link
 * #EXIT_STALL_EVERY} gets a consumer stall timed to it.
 *
 * <p>Not among the faults, because no comparison with Spark's own watch could be sound: a 410 (an
 * apiserver restarted with its watch cache on, or a watch cache reinitialized after it lost etcd)
 * loses every state between the watcher's resourceVersion and the new list for any watcher, Spark's
 * own included, so the reference would have to be fed through the same fault. The chaos run covers
 * them ({@code ChaosRunTest}: the final snapshot equals a LIST, no stale full snapshot).
 *
 * <p>What is compared, per executor, and why it is sound: Spark's watch hands every event to the
 * store, so its {@code updatePod} calls are the event history itself; the native informer may skip
 * states Spark does not act on (a later state of the same pod replaces an earlier one a slow
 * consumer has not taken), never one it acts on. So: (1) the states Spark acts on (PodFailed,
 * PodSucceeded, PodDeleted) in the order handed to the store, repeats removed, are equal; (2) every
 * state the native sources handed over appears, in the same order, in what Spark's watch handed
 * over (nothing made up, nothing out of order); (3) every removal Spark made, with its exit code,
 * cause and message, is equal (the clock readings in a missing-pod message aside); (4) each
 * executor's first removal comes no later with the native sources than with Spark's own plus a
 * bound computed from the faults injected ({@link Faults#delayBound}); (5) on Spark 4.x the
 * executors its lifecycle manager counted as failed are equal. Every run must also have created the
 * situations it exists for ({@link Coverage}, the lag, an executor decided outside the faults), or
 * it fails. Spark's polling LIST makes its own snapshots non-deterministic (a list taken before a
 * watch event is applied after it), so no comparison reads full snapshots; they drive only
 * missing-pod detection, whose removals are compared once both sides have removed every executor.
 *
 * <p>Two differences it found are mended (docs/reliability.md): a black hole past the informer's
 * silence bound made it relist rather than resume its watch, so every state in the gap was lost
 * (seed 8 with black holes of up to 3 s: 42 differences); and a full snapshot from the lister
 * overtook changes still queued for a stalled store, so Spark removed a failed executor as missing
 * with exit code -1 (seed 1796306325364 on 4.2). Both faults are in every run.
 *
 * <p>On every Spark line in CI. Replay a run with {@code -Ddecisions.seed=N}; {@code
 * -Ddecisions.executors=N} for a longer run by hand.
 */
@Tag("every-line")
class SameDecisionsTest {
  private static final long SEED = Long.getLong("decisions.seed", System.currentTimeMillis());

  /** 80: a history of 8-12 s, of which the seconds after the quiet start hold the faults. */
  private static final int EXECUTORS = Integer.getInteger("decisions.executors", 80);

  /**
   * The longest black hole: with these settings (stale bound 1.5 s, watches of 3 s) the informer's
   * silence bound is 3.5 s, which a black hole in a quiet moment of the watch passes from about 1.5
   * s on, and every longer one passes: then the informer resumes its watch after a consistent read
   * (docs/design.md), the case that once lost states.
   */
  private static final int BLACKHOLE_MAX_MS = Integer.getInteger("decisions.blackholeMaxMs", 5000);

  /** The first fault of every run: a black hole past the silence bound, whatever the watch does. */
  private static final int STALE_SPELL_MS = 4500;

  /**
   * On the highly available plane, how long apiserver b lags (its link to etcd cut) once the
   * balancer has moved the informer onto it: past the stale bound (1.5 s), so the informer must
   * neither resume its watch nor take a list from b's stale cache as current.
   */
  private static final int LAG_MS = 3000;

  /**
   * The consumer stall that the harness times to an executor's exit, so that a pod's terminal state
   * and its next one both reach the native informer while Spark's store takes nothing: the pod's
   * next step comes after the other 11 executors in flight wrote about 12 steps (about 0.3 s at
   * 20-30 ms a write), usually within it.
   */
  private static final int EXIT_STALL_MS = 1000;

  /**
   * One exit in this many (that finds the consumer not stalled already) gets a stall timed to it:
   * the history after the quiet start lasts only seconds, so that at least two come in every run.
   */
  private static final int EXIT_STALL_EVERY = 2;

  /**
   * How much later than with Spark's own sources Spark may remove an executor with the native ones
   * when no fault delays the native side: a round of each lifecycle manager's 500 ms processing,
   * and the native lister's 1 s round for missing-pod detection. A source that delivered changes
   * seconds late exceeds it on every executor decided outside the faults.
   */
  private static final long DECISION_SLACK_MS = 2_000;

  /**
   * How long after a connection fault ends (a cut, a black hole, a lag) the native side may still
   * be catching up: the reconnection's backoff, a consistent read, the resumed watch's replay.
   * Measured here: up to 5.5 s after a lag on the HA plane; the chaos run's slowest recovery, a
   * restart's relist, 4.4 s.
   */
  private static final long RECOVERY_MS = 6_000;

  /**
   * Faults (stalls timed to exits too) start once Spark's own sources have had Spark remove this
   * many executors, and {@link #DECISION_SLACK_MS} later: those executors bound the native sources'
   * decision times by the slack alone. By count, not by time: a fixed 5 s left the highly available
   * plane, slower to start its history, with a single such executor once.
   */
  private static final int QUIET_DECISIONS = 5;

  /**
   * The longest quiet start: after it the faults begin whatever Spark has decided, and a run with
   * no executor decided outside every fault fails.
   */
  private static final long QUIET_START_MAX_MS = 20_000;

  private final List<Runnable> teardown = new ArrayList<>();

  @AfterEach
  void tearDown() {
    for (int i = teardown.size() - 1; i >= 0; i--) {
      teardown.get(i).run();
    }
  }

  @Test
  void sparkDecidesTheSameOnEveryExecutorWithTheNativeSourcesAsWithItsOwn() throws Exception {
    compare(false);
  }

  /**
   * The same on a highly available plane: two apiservers on one etcd behind a load balancer, which
   * moves the native informer between them, closing its connection or holding it silent (as a dead
   * backend does) past the silence bound; Spark's own sources stay on apiserver a.
   */
  @Test
  void sparkDecidesTheSameWhenTheBalancerMovesTheInformerBetweenApiservers() throws Exception {
    compare(true);
  }

  private void compare(boolean highlyAvailable) throws Exception {
    System.out.println(
        "differential seed="
            + SEED
            + " executors="
            + EXECUTORS
            + (highlyAvailable ? " plane=two apiservers behind a balancer" : "")
            + " (replay: -Ddecisions.seed="
            + SEED
            + ")");
    TestPlane plane =
        highlyAvailable
            ? TestPlane.start("decisions-ha", "--watch-cache=true", "--ha")
            : TestPlane.start("decisions", "--watch-cache=true");
    teardown.add(plane::stop);
    String app = TestPlane.uniqueAppId("decisions");

    Map<String, String> direct = plane.sparkConf(false);
    SparkConf legacyConf = sparkConf(direct);
    SparkDecisions legacy = new SparkDecisions("Spark's own sources", legacyConf);
    teardown.add(legacy::stop);
    KubernetesClient client = plane.admin();
    ScheduledExecutorService polling = Executors.newSingleThreadScheduledExecutor();
    teardown.add(polling::shutdownNow);
    ExecutorPodsWatchSnapshotSource watch =
        new ExecutorPodsWatchSnapshotSource(legacy.store, client, legacyConf);
    ExecutorPodsPollingSnapshotSource poll =
        new ExecutorPodsPollingSnapshotSource(legacyConf, client, legacy.store, polling);

    SparkConf nativeConf =
        sparkConf(highlyAvailable ? plane.sparkConfThroughLoadBalancer() : plane.sparkConf(true));
    SparkDecisions nativeSide = new SparkDecisions("the native sources", nativeConf);
    teardown.add(nativeSide::stop);
    NativeSnapshotSources sources = NativeSnapshotSources.create(nativeConf, nativeSide.store);
    teardown.add(sources::stop);

    watch.start(app);
    teardown.add(watch::stop);
    poll.start(app);
    teardown.add(poll::stop);
    sources.start(app);
    TestPlane.eventually(
        "the native informer's first sync",
        java.time.Duration.ofSeconds(30),
        () -> sources.informer().health().hasSynced());
    // Spark's lifecycle managers try to delete each failed pod through a client that refuses (the
    // history is the test's); Spark logs each refusal with its stack, which says nothing here.
    // (Set once Spark's logging is initialized, which would reset it.)
    Level utilsLevel = LogManager.getLogger(Utils.class).getLevel();
    Configurator.setLevel(Utils.class.getName(), Level.OFF);
    teardown.add(() -> Configurator.setLevel(Utils.class.getName(), utilsLevel));

    ExecutorHistories histories = new ExecutorHistories(SEED, EXECUTORS, plane, app);
    teardown.add(histories::cleanUp);
    Faults faults =
        new Faults(
            plane,
            highlyAvailable,
            legacy,
            nativeSide,
            () -> sources.informer().health(),
            new Random(SEED ^ 0x9E3779B97F4A7C15L));
    faults.start();
    long began = System.currentTimeMillis();
    histories.apply(
        12,
        faults::beforeWrite,
        execId -> {
          long now = System.currentTimeMillis();
          legacy.registered(execId, now);
          nativeSide.registered(execId, now);
        });
    long applied = System.currentTimeMillis() - began;
    faults.stop();

    // Every executor that registered is removed on both sides in the end: by its final state, or
    // by missing-pod detection on a full snapshot after missingPodDetectDelta.
    TestPlane.eventually(
        "both sides removing every executor",
        java.time.Duration.ofSeconds(60),
        () ->
            histories.executors.stream()
                .noneMatch(
                    e -> legacy.isRegistered(e.execId) || nativeSide.isRegistered(e.execId)));
    Thread.sleep(3_000); // removals of pods never registered come by their final state alone

    List<String> differences = new ArrayList<>();
    int actedOn = 0;
    int removals = 0;
    long latestDecision = Long.MIN_VALUE;
    int decidedOutsideFaults = 0;
    List<String> lateDecisions = new ArrayList<>();
    for (ExecutorHistories.Executor e : histories.executors) {
      List<String> theirs = legacy.classesOf(e.execId);
      List<String> ours = nativeSide.classesOf(e.execId);
      List<String> theirActed = actedOn(theirs);
      actedOn += theirActed.size();
      if (!theirActed.equals(actedOn(ours))) {
        differences.add(
            e + "\n    acted-on states: Spark's " + theirActed + ", native " + actedOn(ours));
      }
      if (!isSubsequence(ours, theirs)) {
        differences.add(
            e + "\n    states: Spark's " + theirs + ", native " + ours + " (not in order)");
      }
      List<String> theirRemovals = comparable(legacy.removalsOf(e.execId));
      List<String> ourRemovals = comparable(nativeSide.removalsOf(e.execId));
      removals += theirRemovals.size();
      if (!theirRemovals.equals(ourRemovals)) {
        differences.add(
            e + "\n    removals: Spark's " + theirRemovals + "\n      native " + ourRemovals);
      }
      // When Spark decided: the first removal, with its failure count (taken in the same step).
      List<SparkDecisions.Removal> theirsAt = legacy.removalsOf(e.execId);
      List<SparkDecisions.Removal> oursAt = nativeSide.removalsOf(e.execId);
      if (!theirsAt.isEmpty() && !oursAt.isEmpty()) {
        long theirAt = theirsAt.get(0).atMillis();
        long later = oursAt.get(0).atMillis() - theirAt;
        long bound = faults.delayBound(theirAt) - theirAt;
        latestDecision = Math.max(latestDecision, later);
        if (bound == DECISION_SLACK_MS) {
          decidedOutsideFaults++;
        }
        if (later > bound) {
          lateDecisions.add(
              e
                  + ": removed "
                  + later
                  + " ms later with the native sources (bound "
                  + bound
                  + " ms)");
        }
      }
    }
    Coverage coverage = Coverage.of(histories, legacy, nativeSide);
    Set<Long> theirFailed = legacy.countedFailed();
    Set<Long> ourFailed = nativeSide.countedFailed();
    if (!theirFailed.equals(ourFailed)) {
      differences.add(
          "executors counted as failed: Spark's " + theirFailed + ", native " + ourFailed);
    }
    InformerHealth health = sources.informer().health();
    System.out.printf(
        "differential: %d executors, %d writes in %d ms; %d acted-on states, %d removals, %d"
            + " counted failed%s; faults on the native side: %s (%d resumes after a stale spell, %d relists);"
            + " coverage: %s, %d executors decided outside every fault; removals with the native"
            + " sources at most %d ms later than with Spark's own; differences: %d%n",
        histories.executors.size(),
        histories.steps(),
        applied,
        actedOn,
        removals,
        theirFailed.size(),
        SparkDecisions.lifecycleCountsFailures()
            ? ""
            : " (this line's lifecycle manager counts none)",
        faults,
        health.resumes(),
        health.relists(),
        coverage,
        decidedOutsideFaults,
        latestDecision,
        differences.size());
    assertTrue(
        health.resumes() + health.relists() >= 1,
        "seed " + SEED + ": the run's stale spell did not happen: " + health.description());
    assertTrue(
        differences.isEmpty(),
        "seed "
            + SEED
            + ": Spark decided differently on "
            + differences.size()
            + ":\n"
            + String.join("\n", differences));
    // The run must have exercised what it exists for.
    // (About one executor in five has none: force-deleted while Running, or out of the
    // selector, is PodRunning to Spark; the rest have one or two.)
    assertTrue(actedOn >= EXECUTORS / 2, "acted-on states: " + actedOn);
    assertTrue(removals >= EXECUTORS * 9 / 10, "removals: " + removals);
    assertTrue(
        coverage.exitsDuringStalls() > 0,
        "seed " + SEED + ": no exit reached the native informer while its consumer stalled");
    assertTrue(
        coverage.exitsQueuedBehindNewer() > 0,
        "seed "
            + SEED
            + ": no executor's exit and its next state both reached the native informer in one"
            + " stall of its consumer (a terminal state queued behind a newer one)");
    if (highlyAvailable) {
      assertTrue(
          faults.reconnectsOntoTheLaggingApiserver > 0,
          "seed "
              + SEED
              + ": the native informer never came back onto the lagging apiserver: "
              + faults);
    }
    assertTrue(
        decidedOutsideFaults > 0,
        "seed " + SEED + ": no executor was decided outside the faults, so no decision time bound");
    assertTrue(
        lateDecisions.isEmpty(),
        "seed "
            + SEED
            + ": Spark decided later with the native sources than with its own plus "
            + DECISION_SLACK_MS
            + " ms (after a fault, plus its length and "
            + RECOVERY_MS
            + " ms) on "
            + lateDecisions.size()
            + ":\n"
            + String.join("\n", lateDecisions));
    if (SparkDecisions.lifecycleCountsFailures()) {
      assertTrue(!theirFailed.isEmpty(), "no executor counted as failed");
    }
    assertEquals(0, differences.size());
  }

  /**
   * How often a run created the situations the harness exists for, counted from what each side's
   * store was handed and when: an executor's exit (PodFailed or PodSucceeded, as Spark's own watch
   * handed it over) arriving while the native consumer stalled; and an exit with the pod's next
   * state arriving in the same stall, so that the native queue held a terminal state with a newer
   * one behind it (what a coalescing queue loses).
   */
  private record Coverage(int exitsDuringStalls, int exitsQueuedBehindNewer) {
    static Coverage of(
        ExecutorHistories histories, SparkDecisions legacy, SparkDecisions nativeSide) {
      List<SparkDecisions.Stall> stalls = nativeSide.stalls();
      int during = 0;
      int behind = 0;
      for (ExecutorHistories.Executor e : histories.executors) {
        List<SparkDecisions.Handed> handed = legacy.handedOf(e.execId);
        for (int i = 0; i < handed.size(); i++) {
          SparkDecisions.Handed exit = handed.get(i);
          if (!isExit(exit.sparkClass())) {
            continue;
          }
          for (SparkDecisions.Stall stall : stalls) {
            if (stall.covers(exit.atMillis())) {
              during++;
              if (i + 1 < handed.size() && stall.covers(handed.get(i + 1).atMillis())) {
                behind++;
              }
              break;
            }
          }
        }
      }
      return new Coverage(during, behind);
    }

    private static boolean isExit(String sparkClass) {
      return sparkClass.equals("PodFailed") || sparkClass.equals("PodSucceeded");
    }

    @Override
    public String toString() {
      return exitsDuringStalls
          + " exits during a consumer stall, "
          + exitsQueuedBehindNewer
          + " of them with the pod's next state in the same stall";
    }
  }

  private static SparkConf sparkConf(Map<String, String> entries) {
    return CountingStore.conf(entries)
        .set("spark.kubernetes.executor.apiPollingInterval", "2s")
        .set("spark.kubernetes.executor.listerPollingInterval", "1s")
        .set("spark.kubernetes.executor.missingPodDetectDelta", "3s")
        .set("spark.kubernetes.executor.eventProcessingInterval", "500ms")
        // Spark stops the application past this many failures (System.exit): far above any run.
        .set("spark.executor.maxNumFailures", "1000000");
  }

  private static List<String> actedOn(List<String> classes) {
    List<String> acted = new ArrayList<>();
    for (String c : classes) {
      if ((c.equals("PodFailed") || c.equals("PodSucceeded") || c.equals("PodDeleted"))
          && (acted.isEmpty() || !acted.get(acted.size() - 1).equals(c))) {
        acted.add(c);
      }
    }
    return acted;
  }

  private static boolean isSubsequence(List<String> part, List<String> whole) {
    int i = 0;
    for (String c : whole) {
      if (i < part.size() && part.get(i).equals(c)) {
        i++;
      }
    }
    return i == part.size();
  }

  private static List<String> comparable(List<SparkDecisions.Removal> removals) {
    return removals.stream().map(SparkDecisions.Removal::comparable).toList();
  }

  /**
   * Faults on the native side only: its connections cut or black-holed (on the HA plane: the
   * balancer moving it to the other apiserver, closing or holding its connection), its consumer
   * stalled.
   */
  private static final class Faults {
    private final TestPlane plane;
    private final boolean highlyAvailable;
    private final SparkDecisions legacy;
    private final SparkDecisions nativeSide;
    private final Supplier<InformerHealth> health;
    private final Random random;
    private volatile boolean running = true;
    private Thread thread;
    private int cuts;
    private int blackholes;
    private int stalls;
    private volatile int exitStalls;
    private volatile boolean quiet = true;
    private int exitsWritten;
    private int lags;

    /** Lags during which the native informer connected or listed anew (onto the lagging b). */
    private volatile int reconnectsOntoTheLaggingApiserver;

    /**
     * When a fault held the native side back, in epoch milliseconds, and how long it may take to
     * catch up after: a consumer stall needs no recovery, a connection fault {@link #RECOVERY_MS}.
     */
    private record Window(long from, long until, long recovery) {
      long caughtUp() {
        return until + recovery;
      }
    }

    private final List<Window> windows = Collections.synchronizedList(new ArrayList<>());

    /** The apiserver the HA plane's balancer sends the informer to. */
    private String balancerAt = "a";

    Faults(
        TestPlane plane,
        boolean highlyAvailable,
        SparkDecisions legacy,
        SparkDecisions nativeSide,
        Supplier<InformerHealth> health,
        Random random) {
      this.plane = plane;
      this.highlyAvailable = highlyAvailable;
      this.legacy = legacy;
      this.nativeSide = nativeSide;
      this.health = health;
      this.random = random;
    }

    /**
     * Before a history writes an executor's exit (its Spark container terminated, or the pod
     * ended), one time in {@link #EXIT_STALL_EVERY}: stalls the native consumer, unless it is
     * stalled already, so the exit and the pod's next state queue behind it. By count, not chance,
     * so every run has them.
     */
    void beforeWrite(ExecutorHistories.Executor e, ExecutorHistories.Step step) {
      boolean exit =
          step.kind() == ExecutorHistories.Kind.SPARK_EXIT
              || step.kind() == ExecutorHistories.Kind.END;
      if (exit && !quiet && exitsWritten++ % EXIT_STALL_EVERY == 0 && !nativeSide.stalled()) {
        stall(EXIT_STALL_MS);
        exitStalls++;
      }
    }

    private void stall(long millis) {
      long from = System.currentTimeMillis();
      nativeSide.stall(millis);
      windows.add(new Window(from, from + millis, 0));
    }

    private void connectionFault(long from) {
      windows.add(new Window(from, System.currentTimeMillis(), RECOVERY_MS));
    }

    /**
     * The latest the native sources may have Spark decide what Spark's own sources had it decide at
     * {@code theirs}: {@link #DECISION_SLACK_MS} after it, or, where a fault began before the
     * decision was due and had not ended (with its recovery) by {@code theirs}, that long after the
     * fault's end and recovery; and so on, since a fault that begins while the native side is still
     * held back by another (a lag, then a balancer holding the connection) holds it back further.
     * Computed from the faults injected, never from the difference observed.
     */
    long delayBound(long theirs) {
      long from = theirs;
      synchronized (windows) {
        boolean moved = true;
        while (moved) {
          moved = false;
          for (Window w : windows) {
            if (w.from() <= from + DECISION_SLACK_MS
                && theirs <= w.caughtUp()
                && w.caughtUp() > from) {
              from = w.caughtUp();
              moved = true;
            }
          }
        }
      }
      return from + DECISION_SLACK_MS;
    }

    /**
     * The quiet start: until Spark's own sources have had Spark remove {@link #QUIET_DECISIONS}
     * executors (at most {@link #QUIET_START_MAX_MS}), then the slack, so that no fault reaches
     * back to their decisions.
     */
    private void quietStart() throws InterruptedException {
      long deadline = System.currentTimeMillis() + QUIET_START_MAX_MS;
      while (legacy.executorsRemoved() < QUIET_DECISIONS && System.currentTimeMillis() < deadline) {
        Thread.sleep(50);
      }
      Thread.sleep(DECISION_SLACK_MS + 100); // strictly past the slack of the last of them
      quiet = false;
    }

    void start() {
      thread =
          new Thread(
              () -> {
                try {
                  boolean first = true;
                  quietStart();
                  if (highlyAvailable) {
                    lag();
                  }
                  while (first || running) { // the stale spell, however short the history
                    Thread.sleep(300 + random.nextInt(1000));
                    // The first fault is always a stale spell; then stalls most often: a slow
                    // consumer is what makes the queue coalesce.
                    switch (first ? 1 : random.nextInt(5)) {
                      case 0 -> {
                        long from = System.currentTimeMillis();
                        cut();
                        connectionFault(from);
                        cuts++;
                      }
                      case 1 -> {
                        long millis =
                            first ? STALE_SPELL_MS : 200 + random.nextInt(BLACKHOLE_MAX_MS - 199);
                        first = false;
                        long from = System.currentTimeMillis();
                        blackhole(millis);
                        connectionFault(from);
                        blackholes++;
                      }
                      default -> {
                        stall(200 + random.nextInt(1300));
                        stalls++;
                      }
                    }
                  }
                } catch (InterruptedException e) {
                  Thread.currentThread().interrupt();
                }
              },
              "differential-faults");
      thread.setDaemon(true);
      thread.start();
    }

    /**
     * On the HA plane: cuts apiserver b off etcd while the informer is on a, lets the history move
     * on for a second, then moves the informer onto b (closing its connections) and keeps b behind
     * for {@link #LAG_MS}; b then catches up and the balancer resets its connections. Counted when
     * the informer connected or listed during the lag: it came back onto the lagging apiserver.
     */
    private void lag() throws InterruptedException {
      if (balancerAt.equals("b")) {
        moveBalancer("close");
      }
      long from = System.currentTimeMillis();
      plane.control("POST", "/ha/etcd?apiserver=b&link=cut");
      Thread.sleep(1_000);
      InformerHealth before = health.get();
      moveBalancer("close");
      Thread.sleep(LAG_MS);
      InformerHealth after = health.get();
      if (after.watchConnects() + after.lists() > before.watchConnects() + before.lists()) {
        reconnectsOntoTheLaggingApiserver++;
      }
      plane.control("POST", "/ha/etcd?apiserver=b&link=open");
      plane.control("POST", "/ha/release");
      connectionFault(from);
      lags++;
    }

    /** Closes the informer's connections; on the HA plane it comes back to the other apiserver. */
    private void cut() {
      if (highlyAvailable) {
        moveBalancer("close");
      } else {
        plane.control("POST", "/proxy/cut");
      }
    }

    /**
     * Holds the informer's connections silent for {@code millis}; on the HA plane new ones go to
     * the other apiserver meanwhile, and the held ones are closed after, as a balancer resets a
     * dead backend's connections.
     */
    private void blackhole(long millis) throws InterruptedException {
      if (highlyAvailable) {
        moveBalancer("hold");
        Thread.sleep(millis);
        plane.control("POST", "/ha/release");
      } else {
        plane.control("POST", "/proxy/blackhole?seconds=" + millis / 1000.0);
        Thread.sleep(millis);
      }
    }

    private void moveBalancer(String existing) {
      balancerAt = balancerAt.equals("a") ? "b" : "a";
      plane.control("POST", "/ha/route?to=" + balancerAt + "&existing=" + existing);
    }

    void stop() throws InterruptedException {
      running = false;
      thread.join(10_000);
      if (highlyAvailable) {
        plane.control("POST", "/ha/release");
      } else {
        plane.control("POST", "/proxy/normal");
      }
    }

    @Override
    public String toString() {
      String stalled = stalls + " consumer stalls, " + exitStalls + " timed to an exit";
      return highlyAvailable
          ? lags
              + " lags of apiserver b ("
              + reconnectsOntoTheLaggingApiserver
              + " with the informer coming back onto it), "
              + cuts
              + " moves closing the connection, "
              + blackholes
              + " moves holding it silent, "
              + stalled
          : cuts + " cuts, " + blackholes + " black holes, " + stalled;
    }
  }
}

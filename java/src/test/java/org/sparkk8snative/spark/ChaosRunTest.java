package org.sparkk8snative.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.fabric8.kubernetes.api.model.Pod;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.sparkk8snative.InformerHealth;
import org.sparkk8snative.NativeInformer;
import org.sparkk8snative.TestPlane;
import org.sparkk8snative.spark.ChaosFaults.Fault;
import org.sparkk8snative.spark.ChaosFaults.Kind;

/**
 * The chaos run. On a real control plane of its own, executor pods churn at random ({@link
 * PodChurn}) while the apiserver is restarted, the watch is forced to relist through 410 Gone, the
 * connection is black-holed for longer than the stale bound, and the apiserver answers 429 in
 * bursts. The native sources feed Spark's real store ({@link RecordingStore}). Checked throughout
 * and at the end: the final snapshot equals a LIST; every pod's last state reached the store, in
 * order; no full snapshot came from an unsynced or stale cache, so Spark's missing-pod rule removed
 * no healthy executor; health went Degraded during each fault and Synced after; every live executor
 * has exactly one Service.
 *
 * <p>It runs in both configurations of the apiserver: with its watch cache off, a restart resumes
 * the watch and a compaction behind a held watch forces a 410; with the watch cache on (every real
 * cluster), each restart costs a 410 and a relist, and compaction forces none. In both, a silence
 * longer than the silence bound (a black hole, a 429 burst) ends the watch, which resumes from the
 * cache's resourceVersion (a relist only if that answers 410), so every state the silence hid
 * reaches Spark as an event. Each fault costs at most one relist, and none happens outside a fault.
 *
 * <p>With the watch cache on it runs twice more: with watches of a lister round (4 s here, twice
 * the stale bound: the default's shape), where a black hole shorter than the silence bound costs no
 * relist, but what it held back may not prove the cache until the watch ends cleanly, and the same
 * invariants on every full snapshot hold; and on a highly available plane (two apiservers behind a
 * load balancer): one cut from etcd while the churn goes on, the balancer moving the informer to it
 * and away, the same invariants (docs/reliability.md, "A highly available control plane").
 *
 * <p>The run is put together from its fault schedule and the checks of what each fault must do
 * ({@link ChaosFaults}) and the invariants that hold whatever the faults ({@link ChaosInvariants});
 * this class sets up a configuration, runs it and asserts.
 *
 * <p>Seeded: {@code -Dchaos.seed=N} replays the same churn and the same faults in the same order
 * (their timing follows the machine); {@code -Dchaos.seconds=N} runs longer (the minimum set of
 * faults always runs, then random ones until the time is up); {@code -Dchaos.each=N} sets that
 * minimum set (2 of each kind by default, as in {@code make test}; 0 for the full set, as {@code
 * make chaos} runs).
 */
@Timeout(value = 30, unit = TimeUnit.MINUTES)
class ChaosRunTest {
  private static final long SEED = Long.getLong("chaos.seed", System.currentTimeMillis());
  private static final int SECONDS = Integer.getInteger("chaos.seconds", 30);

  /**
   * The lister's interval with watches of two thirds of the stale bound (3 s, the shortest watch
   * the apiserver sends a bookmark to, with {@link #SHORT_WATCH_STALE_BOUND_MS}).
   */
  private static final long SHORT_WATCH_LISTER_INTERVAL_MS = 500;

  /** The stale bound of the short-watch configurations: watches of 3 s are two thirds of it. */
  private static final long SHORT_WATCH_STALE_BOUND_MS = 4_500;

  /**
   * Watches of a lister round (the default shape, scaled down): longer than the stale bound, so a
   * quiet watch proves the cache only at its renewals; silence bound 4 s + a third of 2 s.
   */
  private static final long LONG_WATCH_LISTER_INTERVAL_MS = 4_000;

  /** The stale bound of the long-watch configuration. */
  private static final long LONG_WATCH_STALE_BOUND_MS = 2_000;

  private static final int MIN_PODS = 200;

  private TestPlane plane;
  private RecordingStore store;
  private NativeSnapshotSources sources;
  private PodChurn churn;
  private ChaosInvariants invariants;
  private ChaosFaults faults;
  private boolean passed;

  @AfterEach
  void tearDown() throws Exception {
    if (faults != null) {
      faults.stop();
    }
    if (sources != null) {
      sources.stop();
    }
    if (store != null) {
      store.stop();
    }
    if (plane != null) {
      if (!passed) { // what the apiserver saw, for the post-mortem (the plane's directory goes with
        // it)
        Path kept = Paths.get("target", "chaos-audit-" + SEED + ".log").toAbsolutePath();
        Files.copy(
            Paths.get(plane.var("LOCALPLANE_AUDIT_LOG")),
            kept,
            StandardCopyOption.REPLACE_EXISTING);
        System.out.println("chaos: the apiserver's audit log is kept in " + kept);
      }
      plane.stop();
    }
  }

  @Test
  void withoutTheWatchCacheTheNativeSourcesKeepSparksStoreRightThroughChurnAndFaults()
      throws Exception {
    run(new ChaosConfig(false, SHORT_WATCH_LISTER_INTERVAL_MS, SHORT_WATCH_STALE_BOUND_MS, false));
  }

  @Test
  void withTheWatchCacheTheNativeSourcesKeepSparksStoreRightThroughChurnAndFaults()
      throws Exception {
    run(new ChaosConfig(true, SHORT_WATCH_LISTER_INTERVAL_MS, SHORT_WATCH_STALE_BOUND_MS, false));
  }

  @Test
  void withTheWatchCacheAndWatchesOfAListerRoundTheNativeSourcesKeepSparksStoreRight()
      throws Exception {
    run(new ChaosConfig(true, LONG_WATCH_LISTER_INTERVAL_MS, LONG_WATCH_STALE_BOUND_MS, false));
  }

  @Test
  void onAHighlyAvailablePlaneWithALaggingApiserverTheNativeSourcesKeepSparksStoreRight()
      throws Exception {
    run(new ChaosConfig(true, SHORT_WATCH_LISTER_INTERVAL_MS, SHORT_WATCH_STALE_BOUND_MS, true));
  }

  private void run(ChaosConfig config) throws Exception {
    System.out.println(
        "chaos "
            + config
            + " seed="
            + SEED
            + " seconds="
            + SECONDS
            + " (replay: -Dchaos.seed="
            + SEED
            + ")");
    long began = System.currentTimeMillis();
    NativeInformer informer = startSources(config);
    faults.waitSynced("the first sync");

    churn.start();
    Thread.sleep(3_000); // some pods before the first fault
    long faultsBegan = System.currentTimeMillis();
    List<Fault> done = faults.run(new Random(SEED ^ 0x5DEECE66DL), faultsBegan, SECONDS);
    long faultsMillis = System.currentTimeMillis() - faultsBegan;
    churn.stop();
    faults.clear();
    faults.waitSynced("sync after the last fault");

    Findings found = findings(done);
    InformerHealth health = informer.health();
    done.forEach(f -> System.out.println("chaos fault " + f));
    System.out.println(
        summary(
            config,
            (System.currentTimeMillis() - began) / 1000,
            faultsMillis / 1000,
            found,
            health));
    printNotes(found);
    assertInvariantsHeld(config, found, health);
    passed = true;
  }

  /**
   * Starts a plane of the configuration's own, the app's driver pod, the churn, and the native
   * sources (with Services) feeding the recording store, through the fault proxy or the HA plane's
   * balancer so that the faults hit the informer; returns the sources' informer.
   */
  private NativeInformer startSources(ChaosConfig config) {
    plane =
        config.ha()
            ? TestPlane.start("chaos", "--watch-cache=" + config.watchCache(), "--ha")
            : TestPlane.start("chaos", "--watch-cache=" + config.watchCache());
    String app = TestPlane.uniqueAppId("chaos");
    Pod driver = plane.createDriver(app);
    churn = new PodChurn(plane, app, SEED);
    invariants = new ChaosInvariants(config, plane, app, churn);
    store = new RecordingStore(this::healthNow, invariants::check);
    Map<String, String> conf =
        config.ha() ? plane.sparkConfThroughLoadBalancer() : plane.sparkConf(true);
    conf.put("spark.kubernetes.executor.listerPollingInterval", config.listerIntervalMs() + "ms");
    conf.put(
        "spark.kubernetes.executor.missingPodDetectDelta",
        ChaosInvariants.MISSING_POD_DETECT_DELTA_MS + "ms");
    conf.put("spark.kubernetes.native.lister.staleBound", config.staleBoundMs() + "ms");
    conf.put("spark.kubernetes.executor.enableService", "true");
    conf.put("spark.blockManager.port", "7079");
    conf.put("spark.kubernetes.driver.pod.name", driver.getMetadata().getName());
    conf.put("spark.kubernetes.native.service.deleteAfter", "1s");
    sources = NativeSnapshotSources.create(CountingStore.conf(conf), store);
    sources.start(app);
    faults = new ChaosFaults(plane, config, sources.informer());
    return sources.informer();
  }

  /**
   * What the invariants found once nothing changes any more, against the apiserver's truth (read
   * directly, not through the proxy): each list names the problems of one invariant, empty when it
   * held. Those that converge (delivery, Services) are polled for a while first.
   */
  private record Findings(
      List<Fault> faults,
      Map<String, Pod> truth,
      List<String> notYetDelivered,
      List<String> sparkDisagrees,
      List<String> serviceProblems,
      List<String> leftoverServices,
      List<String> outOfOrder,
      List<String> snapshotsDuringSilence,
      List<String> liveDeliveredAsDeleted,
      List<String> resurrected,
      List<String> backInTime,
      List<String> terminalStatesLost) {
    Map<Kind, Long> byKind() {
      return new TreeMap<>(
          faults.stream().collect(Collectors.groupingBy(f -> f.kind, Collectors.counting())));
    }
  }

  private Findings findings(List<Fault> done) throws InterruptedException {
    Map<String, Pod> truth =
        plane
            .executorPodsOf(churn.app())
            .withoutLabel("spark-exec-inactive", "true")
            .list()
            .getItems()
            .stream()
            .collect(Collectors.toMap(p -> p.getMetadata().getName(), p -> p));
    long listedAt = System.currentTimeMillis();
    Map<String, Long> truthVersions = new HashMap<>();
    truth.forEach(
        (name, pod) ->
            truthVersions.put(name, Long.parseLong(pod.getMetadata().getResourceVersion())));
    return new Findings(
        done,
        truth,
        within(
            Duration.ofSeconds(60), () -> invariants.undelivered(store, truthVersions, listedAt)),
        within(Duration.ofSeconds(10), () -> ChaosInvariants.sparkDisagreement(store, truth)),
        within(Duration.ofSeconds(60), () -> invariants.serviceProblems(truth)),
        // Gone executors' Services go deleteAfter (1s) after their pod, retried for a few seconds.
        within(Duration.ofSeconds(10), () -> invariants.leftoverServices(truth)),
        ChaosInvariants.outOfOrder(store),
        invariants.snapshotsDuringSilence(store, done),
        invariants.liveDeliveredAsDeleted(store),
        resurrected(),
        backInTime(),
        invariants.terminalStatesLost(store));
  }

  /** Pods delivered live again after their deletion: by an update, or by a full snapshot. */
  private List<String> resurrected() {
    List<String> found = new ArrayList<>(ChaosInvariants.resurrected(store));
    store.resurrectedBySnapshot().forEach(p -> found.add(p + " in a full snapshot"));
    return found;
  }

  /**
   * Deliveries older than what Spark's store already had of their pod: an update older than an
   * earlier update or snapshot, or a full snapshot carrying a pod older than an update delivered.
   */
  private List<String> backInTime() {
    List<String> found = new ArrayList<>(store.updatesBackInTime());
    store.olderThanDelivered().forEach(p -> found.add(p + " in a full snapshot"));
    return found;
  }

  /** The run's one summary line: what churned, what the faults did, what reached Spark. */
  private String summary(
      ChaosConfig config, long seconds, long faultSeconds, Findings found, InformerHealth health) {
    List<Fault> done = found.faults();
    int changes = churn.changes();
    int delivered = invariants.deliveredChanges(store);
    return String.format(
        "chaos "
            + config
            + " seed=%d duration=%ds (faults %ds) faults=%d (%s) pods=%d changes=%d delivered=%d coalesced=%d lost=%d "
            + "outOfOrder=%d liveDeliveredAsDeleted=%d resurrected=%d resurrectedBySnapshot=%d backInTime=%d terminalLost=%d spuriousRemovals=%d staleSnapshots=%d resumeRaces=%d longestMissing=%dms relists=%d "
            + "reconnects=%d degradedObserved=%d/%d updates=%d fullSnapshots=%d services=%d/%d leftoverServices=%d "
            + "retriedWrites=%d served429=%d overtakenSnapshots=%d",
        SEED,
        seconds,
        faultSeconds,
        done.size(),
        found.byKind().entrySet().stream()
            .map(e -> e.getKey().label + "=" + e.getValue())
            .collect(Collectors.joining(" ")),
        churn.creates.get(),
        changes,
        delivered,
        changes - delivered,
        found.notYetDelivered().size(),
        found.outOfOrder().size(),
        found.liveDeliveredAsDeleted().size(),
        found.resurrected().size(),
        store.resurrectedBySnapshot().size(),
        found.backInTime().size(),
        found.terminalStatesLost().size(),
        invariants.spuriousRemovals().size(),
        invariants.unsyncedOrStale().size()
            + found.snapshotsDuringSilence().size()
            + invariants.laggingSnapshots().size(),
        invariants.resumeRaces().size(),
        invariants.longestMissing(),
        health.relists(),
        health.watchConnects(),
        done.stream().filter(f -> f.degraded).count(),
        done.size(),
        store.updateCount(),
        store.replacements().size(),
        found.truth().size() - found.serviceProblems().size(),
        found.truth().size(),
        found.leftoverServices().size(),
        churn.retried.get(),
        done.stream().mapToLong(f -> f.throttledServed).sum(),
        sources.listerSource().overtakenSnapshots());
  }

  /** What the run shows that is no failure but worth a look: kept Services. */
  private void printNotes(Findings found) {
    if (!found.leftoverServices().isEmpty()) {
      System.out.println(
          "chaos note: "
              + found.leftoverServices().size()
              + " gone executors kept their Service, e.g. "
              + found.leftoverServices().stream()
                  .limit(3)
                  .map(
                      p ->
                          p
                              + " ("
                              + whenGone(Long.parseLong(p.split(" ")[2]), found.faults())
                              + ")")
                  .collect(Collectors.joining("; ")));
    }
  }

  private void assertInvariantsHeld(ChaosConfig config, Findings found, InformerHealth health) {
    List<Fault> done = found.faults();
    String seed = " (" + config + ", seed " + SEED + ")";
    assertTrue(
        churn.creates.get() >= MIN_PODS, "at least " + MIN_PODS + " executor pods churned" + seed);
    for (Kind kind : config.kinds()) {
      assertTrue(
          found.byKind().getOrDefault(kind, 0L) >= kind.atLeast(),
          kind.label + " at least " + kind.atLeast() + seed);
    }
    assertEquals(
        List.of(),
        found.notYetDelivered(),
        "every pod's last state reached the store; the last full snapshot equals the LIST" + seed);
    assertEquals(List.of(), found.outOfOrder(), "each pod's updates in order" + seed);
    assertEquals(
        List.of(),
        found.liveDeliveredAsDeleted(),
        "no pod delivered as deleted before its delete was sent" + seed);
    assertEquals(List.of(), found.resurrected(), "no pod delivered live after its deletion" + seed);
    assertEquals(
        List.of(),
        found.backInTime(),
        "never back in time: nothing delivered older than what the store already had" + seed);
    assertEquals(
        List.of(),
        found.terminalStatesLost(),
        "every Failed or Succeeded the watch saw reached the store before the pod's deletion"
            + seed);
    assertEquals(List.of(), found.sparkDisagrees(), "Spark's own snapshot equals the LIST" + seed);
    assertEquals(
        List.of(),
        invariants.unsyncedOrStale(),
        "no full snapshot from an unsynced or stale cache" + seed);
    assertEquals(
        List.of(),
        found.snapshotsDuringSilence(),
        "no full snapshot while the apiserver was silent past the stale bound" + seed);
    assertEquals(
        List.of(),
        invariants.laggingSnapshots(),
        "no full snapshot lacking a pod older than the stale bound" + seed);
    assertEquals(
        List.of(),
        invariants.resumeRaces(),
        "no full snapshot after an outage lacking a pod older than the stale bound (the first one included)"
            + seed);
    assertEquals(
        List.of(),
        invariants.spuriousRemovals(),
        "no healthy executor missing from a full snapshot past Spark's detect delta" + seed);
    assertEquals(
        List.of(), faults.relistProblems(done), "each fault costs the relists it must" + seed);
    long relistsInFaults = done.stream().mapToLong(Fault::relists).sum();
    assertEquals(relistsInFaults, health.relists(), "no relist outside a fault" + seed);
    assertEquals(
        List.of(),
        ChaosFaults.unthrottled(done),
        "every 429 burst was served to the informer" + seed);
    assertEquals(List.of(), faults.unseen(done), "health went Degraded during every fault" + seed);
    assertEquals(
        List.of(),
        faults.syncedWhileLagging(done),
        "health never Synced while only a lagging apiserver answered, past the stale bound" + seed);
    assertEquals(
        List.of(), found.serviceProblems(), "every live executor has exactly one Service" + seed);
    assertEquals(
        List.of(),
        found.leftoverServices(),
        "no gone executor keeps its Service past deleteAfter" + seed);
  }

  /**
   * When an executor's pod went, next to the faults: to tell a fault's leftovers from a steady
   * leak.
   */
  private String whenGone(long execId, List<Fault> faults) {
    PodChurn.PodHistory pod =
        churn.pods().stream().filter(p -> p.execId == execId).findFirst().orElse(null);
    if (pod == null || pod.goneAt < 0) {
      return "not a pod the churn removed";
    }
    String near =
        faults.stream()
            .filter(f -> pod.goneAt >= f.start - 5_000 && pod.goneAt <= f.recovered + 5_000)
            .map(f -> f.kind.label + " " + (pod.goneAt - f.start) + " ms after it began")
            .collect(Collectors.joining(", "));
    return (pod.inactivated ? "inactive" : "deleted")
        + " "
        + (pod.goneAt - pod.createdAt)
        + " ms after its creation; "
        + (near.isEmpty() ? "no fault near" : near);
  }

  private InformerHealth healthNow() {
    NativeInformer informer = sources == null ? null : sources.informer();
    return informer == null ? null : informer.health();
  }

  /** Polls {@code problems} until it finds none or time is up; returns the last problems found. */
  private static List<String> within(Duration timeout, Supplier<List<String>> problems)
      throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    List<String> found = problems.get();
    while (!found.isEmpty() && System.nanoTime() < deadline) {
      Thread.sleep(200);
      found = problems.get();
    }
    return found;
  }
}

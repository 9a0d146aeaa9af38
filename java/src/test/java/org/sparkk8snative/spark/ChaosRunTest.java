package org.sparkk8snative.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.Service;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import java.util.stream.Collectors;
import org.apache.spark.scheduler.cluster.k8s.ExecutorPodState;
import org.apache.spark.scheduler.cluster.k8s.ExecutorPodsSnapshot;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.sparkk8snative.ExecutorServiceNames;
import org.sparkk8snative.InformerHealth;
import org.sparkk8snative.ListerAnswer;
import org.sparkk8snative.NativeInformer;
import org.sparkk8snative.TestPlane;
import scala.jdk.javaapi.CollectionConverters;

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
 * <p>Seeded: {@code -Dchaos.seed=N} replays the same churn and the same faults in the same order
 * (their timing follows the machine); {@code -Dchaos.seconds=N} runs longer (the minimum set of
 * faults always runs, then random ones until the time is up).
 */
class ChaosRunTest {
  private static final long SEED = Long.getLong("chaos.seed", System.currentTimeMillis());
  private static final int SECONDS = Integer.getInteger("chaos.seconds", 60);

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

  private long listerIntervalMs;

  /**
   * Spark removes an executor missing from a full snapshot once registered longer than this:
   * Spark's default. Longer than the informer is ever blind here (a fault plus its backoff), so a
   * removal can only come from a cache that lost a pod, not from a fault outlasting the delta (see
   * resumeRaces).
   */
  private static final long MISSING_POD_DETECT_DELTA_MS = 30_000;

  /** The stale bound of the long-watch configuration. */
  private static final long LONG_WATCH_STALE_BOUND_MS = 2_000;

  /** The lister refuses a cache silent for longer; faults of a few seconds outlast it. */
  private long staleBoundMs;

  /**
   * The highly available plane: two apiservers behind a load balancer, one of them cut from etcd at
   * times (its watch cache lags), the balancer moving the informer between them.
   */
  private boolean ha;

  /** Time between the lister's readiness check and the store receiving the snapshot (decoding). */
  private static final long HANDOVER_SLACK_MS = 500;

  /**
   * From a write's answer to the pod in the informer's cache, on a loaded 2-core machine, at most.
   */
  private static final long PROPAGATION_SLACK_MS = 1_000;

  private static final int MIN_PODS = 200;

  private enum Kind {
    RESTART("restarts", 5),
    RELIST_410("relists410", 3),
    BLACKHOLE("blackholes", 3),
    THROTTLE("throttles", 3),
    /**
     * HA: the apiserver the informer is not on is cut from etcd (its watch cache freezes) while
     * pods change, the balancer moves the informer to it (holding or closing its connection), then
     * it is reconnected. (An apiserver frozen under the informer is not among the faults: nothing
     * on its watch shows it, see docs/reliability.md.)
     */
    LAG("lags", 4),
    /** HA: the balancer moves the informer to the other apiserver, holding or closing. */
    MOVE("moves", 3);

    final String label;
    final int atLeast;

    Kind(String label, int atLeast) {
      this.label = label;
      this.atLeast = atLeast;
    }
  }

  /**
   * The faults a configuration can inject: compaction forces a 410 only without the watch cache;
   * the HA plane's informer goes through its balancer, not the fault proxy.
   */
  private List<Kind> kinds(boolean watchCache) {
    if (ha) {
      return List.of(Kind.RESTART, Kind.LAG, Kind.MOVE);
    }
    return watchCache
        ? List.of(Kind.RESTART, Kind.BLACKHOLE, Kind.THROTTLE)
        : List.of(Kind.RELIST_410, Kind.RESTART, Kind.BLACKHOLE, Kind.THROTTLE);
  }

  /** One injected fault and what the informer did about it. */
  private static final class Fault {
    final Kind kind;

    /** Black hole, 429 burst: its length; 410: how long the watch is held while etcd moves on. */
    final long millis;

    long start;
    long end;
    long recovered;
    long relistsBefore;
    long relistsAfter;
    long resumesBefore;
    long resumesAfter;

    /** 429 answers the proxy served during the fault. */
    long throttledServed;

    boolean degraded;

    /** HA faults: where the balancer went (e.g. "to=b&existing=hold"). */
    String detail = "";

    Fault(Kind kind, long millis) {
      this.kind = kind;
      this.millis = millis;
    }

    @Override
    public String toString() {
      return String.format(
          "%-10s %5d ms%s: %s, synced %5d ms after it ended, relists +%d, resumes +%d, 429s served"
              + " %d",
          kind.label,
          end - start,
          detail.isEmpty() ? "" : " " + detail,
          degraded ? "Degraded seen" : "Degraded NOT seen",
          recovered - end,
          relistsAfter - relistsBefore,
          resumesAfter - resumesBefore,
          throttledServed);
    }
  }

  private record Sample(long at, InformerHealth.State state) {}

  private TestPlane plane;
  private RecordingStore store;
  private NativeSnapshotSources sources;
  private PodChurn churn;
  private Thread sampler;
  private boolean passed;
  private volatile boolean sampling = true;
  private final List<Sample> samples = Collections.synchronizedList(new ArrayList<>());

  /** Full snapshots Spark must never have received, found as they came. */
  private final List<String> unsyncedOrStale = Collections.synchronizedList(new ArrayList<>());

  private final List<String> spuriousRemovals = Collections.synchronizedList(new ArrayList<>());

  /** Full snapshots lacking a pod created longer ago than the stale bound allows. */
  private final List<String> laggingSnapshots = Collections.synchronizedList(new ArrayList<>());

  /** The same, in the first snapshot after the lister was not ready (after an outage). */
  private final List<String> resumeRaces = Collections.synchronizedList(new ArrayList<>());

  private long previousSnapshotAt;
  private volatile long longestMissing;

  @AfterEach
  void tearDown() throws Exception {
    sampling = false;
    if (sources != null) {
      sources.stop();
    }
    if (store != null) {
      store.stop();
    }
    if (sampler != null) {
      sampler.join(5_000);
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
  @Timeout(value = 30, unit = TimeUnit.MINUTES)
  void withoutTheWatchCacheTheNativeSourcesKeepSparksStoreRightThroughChurnAndFaults()
      throws Exception {
    run(false, SHORT_WATCH_LISTER_INTERVAL_MS, SHORT_WATCH_STALE_BOUND_MS, false);
  }

  @Test
  @Timeout(value = 30, unit = TimeUnit.MINUTES)
  void withTheWatchCacheTheNativeSourcesKeepSparksStoreRightThroughChurnAndFaults()
      throws Exception {
    run(true, SHORT_WATCH_LISTER_INTERVAL_MS, SHORT_WATCH_STALE_BOUND_MS, false);
  }

  @Test
  @Timeout(value = 30, unit = TimeUnit.MINUTES)
  void withTheWatchCacheAndWatchesOfAListerRoundTheNativeSourcesKeepSparksStoreRight()
      throws Exception {
    run(true, LONG_WATCH_LISTER_INTERVAL_MS, LONG_WATCH_STALE_BOUND_MS, false);
  }

  @Test
  @Timeout(value = 30, unit = TimeUnit.MINUTES)
  void onAHighlyAvailablePlaneWithALaggingApiserverTheNativeSourcesKeepSparksStoreRight()
      throws Exception {
    run(true, SHORT_WATCH_LISTER_INTERVAL_MS, SHORT_WATCH_STALE_BOUND_MS, true);
  }

  private boolean longWatches() {
    return listerIntervalMs > staleBoundMs;
  }

  private void run(boolean watchCache, long listerIntervalMs, long staleBoundMs, boolean ha)
      throws Exception {
    this.listerIntervalMs = listerIntervalMs;
    this.staleBoundMs = staleBoundMs;
    this.ha = ha;
    String config =
        "watchCache="
            + watchCache
            + " listerInterval="
            + listerIntervalMs
            + "ms staleBound="
            + staleBoundMs
            + "ms"
            + (ha ? " ha" : "");
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
    plane =
        ha
            ? TestPlane.start("chaos", "--watch-cache=" + watchCache, "--ha")
            : TestPlane.start("chaos", "--watch-cache=" + watchCache);
    String app = TestPlane.uniqueAppId("chaos");
    Pod driver = plane.createDriver(app);

    churn = new PodChurn(plane, app, SEED);
    store = new RecordingStore(this::healthNow, this::check);
    // Through the fault proxy (black holes and 429s hit the informer), or the HA plane's balancer.
    Map<String, String> conf = ha ? plane.sparkConfThroughLoadBalancer() : plane.sparkConf(true);
    conf.put("spark.kubernetes.executor.listerPollingInterval", listerIntervalMs + "ms");
    conf.put("spark.kubernetes.executor.missingPodDetectDelta", MISSING_POD_DETECT_DELTA_MS + "ms");
    conf.put("spark.kubernetes.native.lister.staleBound", staleBoundMs + "ms");
    conf.put("spark.kubernetes.executor.enableService", "true");
    conf.put("spark.blockManager.port", "7079");
    conf.put("spark.kubernetes.driver.pod.name", driver.getMetadata().getName());
    conf.put("spark.kubernetes.native.service.deleteAfter", "1s");
    sources = NativeSnapshotSources.create(CountingStore.conf(conf), store);
    sources.start(app);
    NativeInformer informer = sources.informer();
    sampler = new Thread(() -> sample(informer), "chaos-health-sampler");
    sampler.setDaemon(true);
    sampler.start();
    waitSynced(informer, "the first sync");

    churn.start();
    Thread.sleep(3_000); // some pods before the first fault
    long faultsBegan = System.currentTimeMillis();
    List<Fault> faults =
        injectFaults(informer, kinds(watchCache), new Random(SEED ^ 0x5DEECE66DL), faultsBegan);
    long faultsMillis = System.currentTimeMillis() - faultsBegan;
    churn.stop();
    plane.control("POST", "/proxy/normal");
    if (ha) {
      plane.control("POST", "/ha/release");
    }
    waitSynced(informer, "sync after the last fault");

    // The apiserver's truth, read directly (not through the proxy), once nothing changes any more.
    Map<String, Pod> truth =
        plane
            .admin()
            .pods()
            .withLabel("spark-app-selector", app)
            .withLabel("spark-role", "executor")
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
    List<String> notYetDelivered =
        within(Duration.ofSeconds(60), () -> undelivered(truthVersions, listedAt));
    List<String> sparkDisagrees = within(Duration.ofSeconds(10), () -> sparkDisagreement(truth));
    List<String> serviceProblems =
        within(Duration.ofSeconds(60), () -> serviceProblems(app, truth));
    // Gone executors' Services go deleteAfter (1s) after their pod, retried for a few seconds.
    List<String> leftoverServices =
        within(Duration.ofSeconds(10), () -> leftoverServices(app, truth));
    List<String> outOfOrder = outOfOrder();
    List<String> snapshotsDuringSilence = snapshotsDuringSilence(faults);

    // The summary.
    InformerHealth health = informer.health();
    Map<Kind, Long> byKind =
        new TreeMap<>(
            faults.stream().collect(Collectors.groupingBy(f -> f.kind, Collectors.counting())));
    long degradedSeen = faults.stream().filter(f -> f.degraded).count();
    long relistsInFaults = faults.stream().mapToLong(f -> f.relistsAfter - f.relistsBefore).sum();
    int changes = churn.changes();
    int delivered = deliveredChanges();
    faults.forEach(f -> System.out.println("chaos fault " + f));
    String summary =
        String.format(
            "chaos "
                + config
                + " seed=%d duration=%ds (faults %ds) faults=%d (%s) pods=%d changes=%d delivered=%d coalesced=%d lost=%d "
                + "outOfOrder=%d spuriousRemovals=%d staleSnapshots=%d resumeRaces=%d longestMissing=%dms relists=%d "
                + "reconnects=%d degradedObserved=%d/%d updates=%d fullSnapshots=%d services=%d/%d leftoverServices=%d "
                + "retriedWrites=%d served429=%d",
            SEED,
            (System.currentTimeMillis() - began) / 1000,
            faultsMillis / 1000,
            faults.size(),
            byKind.entrySet().stream()
                .map(e -> e.getKey().label + "=" + e.getValue())
                .collect(Collectors.joining(" ")),
            churn.creates.get(),
            changes,
            delivered,
            changes - delivered,
            notYetDelivered.size(),
            outOfOrder.size(),
            spuriousRemovals.size(),
            unsyncedOrStale.size() + snapshotsDuringSilence.size() + laggingSnapshots.size(),
            resumeRaces.size(),
            longestMissing,
            health.relists(),
            health.watchConnects(),
            degradedSeen,
            faults.size(),
            store.updateCount(),
            store.replacements().size(),
            truth.size() - serviceProblems.size(),
            truth.size(),
            leftoverServices.size(),
            churn.retried.get(),
            faults.stream().mapToLong(f -> f.throttledServed).sum());
    System.out.println(summary);
    if (!leftoverServices.isEmpty()) {
      System.out.println(
          "chaos note: "
              + leftoverServices.size()
              + " gone executors kept their Service, e.g. "
              + leftoverServices.stream()
                  .limit(3)
                  .map(p -> p + " (" + whenGone(Long.parseLong(p.split(" ")[2]), faults) + ")")
                  .collect(Collectors.joining("; ")));
    }
    if (!store.olderThanDelivered().isEmpty()) {
      System.out.println(
          "chaos note: full snapshots that carried a pod older than an update already delivered "
              + "(Spark's own watch + polling sources race the same way): "
              + store.olderThanDelivered());
    }

    String seed = " (" + config + ", seed " + SEED + ")";
    assertTrue(
        churn.creates.get() >= MIN_PODS, "at least " + MIN_PODS + " executor pods churned" + seed);
    for (Kind kind : kinds(watchCache)) {
      assertTrue(
          byKind.getOrDefault(kind, 0L) >= kind.atLeast,
          kind.label + " at least " + kind.atLeast + seed);
    }
    assertEquals(
        List.of(),
        notYetDelivered,
        "every pod's last state reached the store; the last full snapshot equals the LIST" + seed);
    assertEquals(List.of(), outOfOrder, "each pod's updates in order" + seed);
    assertEquals(List.of(), sparkDisagrees, "Spark's own snapshot equals the LIST" + seed);
    assertEquals(
        List.of(), unsyncedOrStale, "no full snapshot from an unsynced or stale cache" + seed);
    assertEquals(
        List.of(),
        snapshotsDuringSilence,
        "no full snapshot while the apiserver was silent past the stale bound" + seed);
    assertEquals(
        List.of(),
        laggingSnapshots,
        "no full snapshot lacking a pod older than the stale bound" + seed);
    assertEquals(
        List.of(),
        resumeRaces,
        "no full snapshot after an outage lacking a pod older than the stale bound (the first one included)"
            + seed);
    assertEquals(
        List.of(),
        spuriousRemovals,
        "no healthy executor missing from a full snapshot past Spark's detect delta" + seed);
    assertEquals(
        List.of(),
        relistProblems(faults, watchCache, longWatches()),
        "each fault costs the relists it must" + seed);
    assertEquals(relistsInFaults, health.relists(), "no relist outside a fault" + seed);
    assertEquals(
        List.of(),
        faults.stream()
            .filter(f -> f.kind == Kind.THROTTLE && f.throttledServed == 0)
            .map(Fault::toString)
            .toList(),
        "every 429 burst was served to the informer" + seed);
    assertEquals(
        List.of(),
        faults.stream().filter(f -> mustDegrade(f) && !f.degraded).map(Fault::toString).toList(),
        "health went Degraded during every fault" + seed);
    assertEquals(List.of(), serviceProblems, "every live executor has exactly one Service" + seed);
    assertEquals(
        List.of(), leftoverServices, "no gone executor keeps its Service past deleteAfter" + seed);
    passed = true;
  }

  /**
   * Whether health must show a fault: always with short watches; with long ones a black hole may
   * end before the silence bound, and a quiet watch cannot tell it from quiet.
   */
  private boolean mustDegrade(Fault fault) {
    // On the HA plane a restart of apiserver a goes unseen while the balancer is at b, and a move
    // that closes the connection onto a current apiserver may heal between two samples.
    return !(longWatches() && fault.kind == Kind.BLACKHOLE)
        && !(ha && (fault.kind == Kind.RESTART || fault.kind == Kind.MOVE));
  }

  /**
   * What each fault must cost: never more than one relist (no relist storm); a forced 410 exactly
   * one; with the watch cache, a restart exactly one (the new cache answers 410). A silence (black
   * hole, 429 burst, a restart without the watch cache) resumes the watch from the cache's
   * resourceVersion, and relists only if that answers 410, so at most one. With short watches every
   * black hole and 429 burst outlasts the silence bound: exactly one resume each.
   */
  private List<String> relistProblems(List<Fault> faults, boolean watchCache, boolean longWatches) {
    List<String> problems = new ArrayList<>();
    for (Fault f : faults) {
      long relists = f.relistsAfter - f.relistsBefore;
      boolean exactlyOne =
          switch (f.kind) {
            case RELIST_410 -> true;
            case BLACKHOLE, THROTTLE -> false;
            case RESTART -> watchCache && !ha;
            // A held connection costs the relist after its silence; a closed one resumes.
            case LAG, MOVE -> false;
          };
      boolean oneResume =
          !longWatches && (f.kind == Kind.BLACKHOLE || f.kind == Kind.THROTTLE) && !ha;
      long resumes = f.resumesAfter - f.resumesBefore;
      if (relists > 1 || (exactlyOne && relists != 1) || (oneResume && resumes != 1)) {
        problems.add(f.toString());
      }
    }
    return problems;
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

  // ---- faults ----

  /** The minimum set of faults in a seeded order, then random ones until the run's time is up. */
  private List<Fault> injectFaults(
      NativeInformer informer, List<Kind> kinds, Random random, long faultsBegan)
      throws InterruptedException {
    List<Kind> planned = new ArrayList<>();
    for (Kind kind : kinds) {
      planned.addAll(Collections.nCopies(kind.atLeast, kind));
    }
    Collections.shuffle(planned, random);
    List<Fault> done = new ArrayList<>();
    while (!planned.isEmpty() || System.currentTimeMillis() - faultsBegan < SECONDS * 1000L) {
      Kind kind = planned.isEmpty() ? kinds.get(random.nextInt(kinds.size())) : planned.remove(0);
      long millis =
          switch (kind) {
            case RESTART -> 0;
            case RELIST_410 ->
                500 + random.nextInt(500); // held shorter than the stale bound: a pure 410
            case BLACKHOLE -> staleBoundMs + 1_000 + random.nextInt(2_000);
            // Past the stale bound, as a black hole: the informer is silent from the cut on.
            case THROTTLE -> staleBoundMs + 500 + random.nextInt(2_000);
            // How long only the lagging apiserver answers: past the silence bound (the stale bound
            // here), so that even a held connection is given up within the fault.
            case LAG -> staleBoundMs + 1_000 + random.nextInt(3_000);
            // Past the silence bound, so that a held connection is given up within the fault.
            case MOVE -> staleBoundMs + 1_000;
          };
      Fault fault = new Fault(kind, millis);
      if (kind == Kind.LAG || kind == Kind.MOVE) {
        fault.detail = haTarget(kind, random);
      }
      fault.relistsBefore = informer.health().relists();
      fault.resumesBefore = informer.health().resumes();
      long throttledBefore = proxyThrottled();
      fault.start = System.currentTimeMillis();
      inject(fault, informer);
      fault.end = System.currentTimeMillis();
      fault.throttledServed = proxyThrottled() - throttledBefore;
      if (kind == Kind.RELIST_410) {
        TestPlane.eventually(
            "the relist after 410 Gone",
            Duration.ofSeconds(60),
            () -> informer.health().relists() > fault.relistsBefore);
      }
      waitSynced(informer, kind.label + " to heal");
      fault.recovered = System.currentTimeMillis();
      fault.relistsAfter = informer.health().relists();
      fault.resumesAfter = informer.health().resumes();
      fault.degraded =
          sampledBetween(fault.start, fault.recovered).contains(InformerHealth.State.DEGRADED);
      done.add(fault);
      Thread.sleep(1_000 + random.nextInt(2_000)); // normal operation between faults
    }
    return done;
  }

  /**
   * Where the balancer sends the informer, and what it does with the open connection: a move to the
   * apiserver it is not on; a lag to b, the one cut (the churn writes through a).
   */
  private String haTarget(Kind kind, Random random) {
    String existing = random.nextBoolean() ? "hold" : "close";
    String to = kind == Kind.LAG || balancerAt.equals("a") ? "b" : "a";
    return "to=" + to + "&existing=" + existing;
  }

  /** The apiserver the HA plane's balancer sends new connections to. */
  private String balancerAt = "a";

  private void inject(Fault fault, NativeInformer informer) throws InterruptedException {
    switch (fault.kind) {
      case RESTART ->
          plane.control("POST", "/apiserver/restart"); // returns once the apiserver is ready again
      case RELIST_410 -> {
        // Hold the watch while pods change and etcd compacts past its resourceVersion; when it
        // resumes: 410 Gone.
        plane.control("POST", "/proxy/blackhole?seconds=0");
        Thread.sleep(fault.millis);
        plane.control("POST", "/etcd/compact");
        plane.control("POST", "/proxy/cut");
        plane.control("POST", "/proxy/normal");
      }
      case BLACKHOLE -> {
        plane.control("POST", "/proxy/blackhole?seconds=" + fault.millis / 1000.0);
        Thread.sleep(fault.millis);
      }
      case THROTTLE -> {
        // 429 answers only new requests: cut the connections so the informer must come back into
        // them.
        plane.control("POST", "/proxy/throttle?seconds=" + fault.millis / 1000.0);
        plane.control("POST", "/proxy/cut");
        Thread.sleep(fault.millis);
      }
      case LAG -> {
        if (balancerAt.equals("b")) { // the informer follows a first, so that b lags behind it
          moveBalancer("to=a&existing=close");
          waitSynced(informer, "the informer on apiserver a before b lags");
        }
        plane.control("POST", "/ha/etcd?apiserver=b&link=cut");
        Thread.sleep(1_000); // the churn moves on without it
        moveBalancer(fault.detail);
        Thread.sleep(fault.millis);
        plane.control("POST", "/ha/etcd?apiserver=b&link=open");
        plane.control("POST", "/ha/release"); // as a balancer resets a dead backend's connections
      }
      case MOVE -> {
        moveBalancer(fault.detail);
        Thread.sleep(fault.millis);
        plane.control("POST", "/ha/release");
      }
    }
  }

  private void moveBalancer(String target) {
    plane.control("POST", "/ha/route?" + target);
    balancerAt = target.substring(3, 4);
  }

  /** 429 answers the fault proxy has served so far. */
  private long proxyThrottled() {
    String stats = plane.control("GET", "/proxy/stats");
    java.util.regex.Matcher m =
        java.util.regex.Pattern.compile("\"throttled\":(\\d+)").matcher(stats);
    if (!m.find()) {
      throw new IllegalStateException("no throttled count in the proxy's stats: " + stats);
    }
    return Long.parseLong(m.group(1));
  }

  /**
   * Waits until the informer is Synced, has heard from the apiserver within the stale bound, and
   * the lister may snapshot: after a black hole shorter than the silence bound, bytes flow at once
   * but prove the cache only at the watch's clean end (or a relist follows), which belongs to the
   * fault.
   */
  private void waitSynced(NativeInformer informer, String what) {
    TestPlane.eventually(
        what,
        Duration.ofSeconds(120),
        () -> {
          InformerHealth h = informer.health();
          return h.state() == InformerHealth.State.SYNCED
              && h.millisSinceLastActivity() >= 0
              && h.millisSinceLastActivity() < staleBoundMs
              && informer.listerSnapshot(0) instanceof ListerAnswer.Ready;
        });
  }

  // ---- health, sampled throughout ----

  private void sample(NativeInformer informer) {
    while (sampling) {
      try {
        samples.add(new Sample(System.currentTimeMillis(), informer.health().state()));
        Thread.sleep(20);
      } catch (IllegalStateException closed) {
        return;
      } catch (InterruptedException e) {
        return;
      }
    }
  }

  private Set<InformerHealth.State> sampledBetween(long from, long to) {
    synchronized (samples) {
      return samples.stream()
          .filter(s -> s.at() >= from && s.at() <= to)
          .map(Sample::state)
          .collect(Collectors.toSet());
    }
  }

  private InformerHealth healthNow() {
    NativeInformer informer = sources == null ? null : sources.informer();
    return informer == null ? null : informer.health();
  }

  // ---- invariants ----

  /**
   * Each full snapshot, as it comes: from a synced, fresh cache (by the informer's health, and by
   * what it lacks: no pod created longer ago than the stale bound, plus propagation); and missing
   * no pod that Spark's rule would remove (ExecutorPodsLifecycleManager: registered more than
   * missingPodDetectDelta before the snapshot and absent from it). An executor registers after its
   * pod is created, so the creation time stands for the earliest registration.
   */
  private void check(RecordingStore.Replacement replacement) {
    InformerHealth health = replacement.health();
    if (health == null || !health.hasSynced()) {
      unsyncedOrStale.add(
          "a full snapshot of " + replacement.versions().size() + " pods before the first sync");
    } else if (health.millisSinceLastActivity() < 0
        || health.millisSinceLastActivity() > staleBoundMs + HANDOVER_SLACK_MS) {
      unsyncedOrStale.add(
          "a full snapshot with the apiserver silent for "
              + health.millisSinceLastActivity()
              + " ms: "
              + health);
    }
    boolean firstAfterAGap = replacement.at() - previousSnapshotAt > 2 * listerIntervalMs;
    previousSnapshotAt = replacement.at();
    for (PodChurn.PodHistory pod : churn.pods()) {
      long created = pod.createdAt;
      long gone = pod.goneAt;
      boolean existed = created >= 0 && (gone < 0 || gone > replacement.at());
      if (!existed || replacement.versions().containsKey(pod.name)) {
        continue;
      }
      long missingFor = replacement.at() - created;
      longestMissing = Math.max(longestMissing, missingFor);
      String what =
          pod.name
              + " (created "
              + missingFor
              + " ms before) missing from a full snapshot; health then: "
              + health;
      if (missingFor > MISSING_POD_DETECT_DELTA_MS) {
        spuriousRemovals.add(what);
      } else if (missingFor > staleBoundMs + PROPAGATION_SLACK_MS) {
        (firstAfterAGap ? resumeRaces : laggingSnapshots).add(what);
      }
    }
  }

  /**
   * Full snapshots while a black hole or a 429 burst kept the apiserver silent past the stale
   * bound.
   */
  private List<String> snapshotsDuringSilence(List<Fault> faults) {
    List<String> found = new ArrayList<>();
    for (Fault fault : faults) {
      if (fault.kind != Kind.BLACKHOLE && fault.kind != Kind.THROTTLE) {
        continue;
      }
      long from = fault.start + staleBoundMs + HANDOVER_SLACK_MS;
      long to = fault.start + fault.millis - 100;
      for (RecordingStore.Replacement r : store.replacements()) {
        if (r.at() > from && r.at() < to) {
          found.add(
              fault.kind.label
                  + ": a full snapshot "
                  + (r.at() - fault.start)
                  + " ms into a "
                  + fault.millis
                  + " ms fault");
        }
      }
    }
    return found;
  }

  /**
   * Pods whose last state did not reach the store: a live pod's last update must carry the LIST's
   * resourceVersion, a gone pod's last update (if it had any) must be a deletion; and the store's
   * content and its last full snapshot, taken after the LIST, must equal the LIST.
   */
  private List<String> undelivered(Map<String, Long> truth, long listedAt) {
    List<String> problems = new ArrayList<>();
    Map<String, List<RecordingStore.Update>> updates = store.updatesByPod();
    for (PodChurn.PodHistory pod : churn.pods()) {
      List<RecordingStore.Update> own = updates.getOrDefault(pod.name, List.of());
      RecordingStore.Update last = own.isEmpty() ? null : own.get(own.size() - 1);
      Long want = truth.get(pod.name);
      List<Long> written = pod.versions();
      // A pod that left the selector (inactive label) reaches Spark as the apiserver sent it, as
      // Spark's own watch source delivers it; the next full snapshot drops it.
      boolean leftAsSent =
          pod.inactivated
              && last != null
              && !written.isEmpty()
              && last.version() == written.get(written.size() - 1);
      if (want != null && (last == null || last.deleted() || last.version() != want)) {
        problems.add(pod.name + ": last update " + last + ", apiserver at " + want);
      } else if (want == null && last != null && !last.deleted() && !leftAsSent) {
        problems.add(pod.name + ": gone, but its last update is " + last);
      }
    }
    Map<String, Long> held = store.held();
    if (!held.equals(truth)) {
      problems.add(
          "the store holds "
              + held.size()
              + " pods, the LIST "
              + truth.size()
              + "; differing: "
              + difference(held, truth));
    }
    RecordingStore.Replacement last = store.lastReplacement();
    if (last == null || last.at() < listedAt || !last.versions().equals(truth)) {
      problems.add("no full snapshot equal to the LIST since it was taken");
    }
    return problems;
  }

  /**
   * Spark's own view, from its subscribers: the same executors as the LIST, each at its version.
   */
  private List<String> sparkDisagreement(Map<String, Pod> truth) {
    ExecutorPodsSnapshot snapshot = store.lastSparkSnapshot();
    if (snapshot == null) {
      return List.of("no snapshot reached Spark's subscribers");
    }
    Map<Long, String> sparkSees = new HashMap<>();
    for (Map.Entry<Object, ExecutorPodState> e :
        CollectionConverters.asJava(snapshot.executorPods()).entrySet()) {
      sparkSees.put((Long) e.getKey(), e.getValue().pod().getMetadata().getResourceVersion());
    }
    Map<Long, String> listed = new HashMap<>();
    truth.values().forEach(p -> listed.put(execId(p), p.getMetadata().getResourceVersion()));
    return sparkSees.equals(listed)
        ? List.of()
        : List.of(
            "Spark sees "
                + sparkSees.size()
                + " executors, the LIST "
                + listed.size()
                + "; differing: "
                + difference(sparkSees, listed));
  }

  /** Exactly one Service, with the expected name, per executor in the LIST. */
  private List<String> serviceProblems(String app, Map<String, Pod> truth) {
    Map<Long, List<String>> byExecutor = servicesByExecutor(app);
    List<String> problems = new ArrayList<>();
    for (Pod pod : truth.values()) {
      long id = execId(pod);
      List<String> names = byExecutor.getOrDefault(id, List.of());
      String expected = ExecutorServiceNames.serviceName(app, Long.toString(id));
      if (!names.equals(List.of(expected))) {
        problems.add("executor " + id + " has Services " + names + ", expected [" + expected + "]");
      }
    }
    return problems;
  }

  /** Services of executors whose pods are gone. */
  private List<String> leftoverServices(String app, Map<String, Pod> truth) {
    Set<Long> live = truth.values().stream().map(ChaosRunTest::execId).collect(Collectors.toSet());
    Map<Long, List<String>> byExecutor = servicesByExecutor(app);
    return byExecutor.keySet().stream()
        .filter(id -> !live.contains(id))
        .sorted()
        .map(id -> "gone executor " + id + " still has " + byExecutor.get(id))
        .toList();
  }

  private Map<Long, List<String>> servicesByExecutor(String app) {
    Map<Long, List<String>> byExecutor = new HashMap<>();
    for (Service s :
        plane
            .admin()
            .services()
            .withLabel("spark-app-selector", app)
            .withLabel("spark-role", "executor-service")
            .list()
            .getItems()) {
      long id = Long.parseLong(s.getMetadata().getLabels().get("spark-exec-id"));
      byExecutor.computeIfAbsent(id, k -> new ArrayList<>()).add(s.getMetadata().getName());
    }
    return byExecutor;
  }

  /** Per pod, the resourceVersions delivered through updatePod never go backwards. */
  private List<String> outOfOrder() {
    List<String> found = new ArrayList<>();
    store
        .updatesByPod()
        .forEach(
            (pod, updates) -> {
              for (int i = 1; i < updates.size(); i++) {
                if (updates.get(i).version() < updates.get(i - 1).version()) {
                  found.add(
                      pod
                          + ": "
                          + updates.get(i - 1).version()
                          + " then "
                          + updates.get(i).version());
                }
              }
            });
    return found;
  }

  /**
   * Changes whose exact result reached updatePod: a written resourceVersion delivered (the inactive
   * label included: it arrives as the apiserver sent it), or a deletion delivered as one. The rest
   * were coalesced: states a pod went through while the informer was away, which the design allows
   * (latest state wins, terminal states excepted).
   */
  private int deliveredChanges() {
    Map<String, List<RecordingStore.Update>> updates = store.updatesByPod();
    int delivered = 0;
    for (PodChurn.PodHistory pod : churn.pods()) {
      List<RecordingStore.Update> own = updates.getOrDefault(pod.name, List.of());
      Set<Long> seen =
          own.stream()
              .filter(u -> !u.deleted())
              .map(RecordingStore.Update::version)
              .collect(Collectors.toSet());
      List<Long> written = pod.versions();
      boolean deleted = pod.goneAt >= 0 && !pod.inactivated;
      for (Long version : written) {
        if (seen.contains(version)) {
          delivered++;
        }
      }
      if (deleted && own.stream().anyMatch(RecordingStore.Update::deleted)) {
        delivered++;
      }
    }
    return delivered;
  }

  // ---- helpers ----

  private static long execId(Pod pod) {
    return Long.parseLong(pod.getMetadata().getLabels().get("spark-exec-id"));
  }

  private static <K, V> String difference(Map<K, V> a, Map<K, V> b) {
    Set<K> keys = new HashSet<>(a.keySet());
    keys.addAll(b.keySet());
    return keys.stream()
        .filter(k -> !java.util.Objects.equals(a.get(k), b.get(k)))
        .limit(10)
        .map(k -> k + " " + a.get(k) + " vs " + b.get(k))
        .collect(Collectors.joining(", "));
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

package org.sparkk8snative.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.sparkk8snative.TestPlane.eventually;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.sparkk8snative.TestPlane;

/**
 * A replaceSnapshot from an unsynced or from a stale cache would make Spark remove healthy
 * executors, so none may happen; and with watches longer than the stale bound (one per lister
 * round, the default), every round still replaces the snapshot, right after a renewal.
 */
class ListerNeverSnapshotsAnUnsyncedOrStaleCacheTest {
  private final TestPlane plane = TestPlane.get();
  private final CountingStore store = new CountingStore();
  private NativeSnapshotSources sources;

  @AfterEach
  void stop() {
    plane.control("POST", "/proxy/normal");
    if (sources != null) {
      sources.stop();
    }
    store.stop();
  }

  @Test
  void anUnsyncedCacheNeverReplacesTheSnapshot() throws Exception {
    Map<String, String> conf = plane.sparkConf(false);
    conf.put("spark.master", "k8s://https://127.0.0.1:1"); // nothing listens: never syncs
    conf.put("spark.kubernetes.executor.listerPollingInterval", "100ms");
    sources = NativeSnapshotSources.create(CountingStore.conf(conf), store.spark);
    sources.start(TestPlane.uniqueAppId("unsynced"));
    Thread.sleep(2_500);
    assertEquals(0, store.replacements.get(), "no replaceSnapshot while unsynced");
    assertTrue(
        sources.informer().health().description().startsWith("Degraded"),
        sources.informer().health().description());
  }

  @Test
  void aStaleCacheNeverReplacesTheSnapshotUntilItRecovers() throws Exception {
    String app = TestPlane.uniqueAppId("stale");
    plane.createExecutor(app, 1);
    Map<String, String> conf = plane.sparkConf(true);
    conf.put("spark.kubernetes.executor.listerPollingInterval", "100ms");
    conf.put("spark.kubernetes.executor.missingPodDetectDelta", "4s"); // stale bound 2s
    sources = NativeSnapshotSources.create(CountingStore.conf(conf), store.spark);
    sources.start(app);
    eventually(
        "snapshots while healthy", Duration.ofSeconds(30), () -> store.replacements.get() > 3);

    plane.control("POST", "/proxy/blackhole?seconds=8");
    long holeStart = System.nanoTime();
    Thread.sleep(2_600); // past the stale bound (plus one lister round)
    int atStale = store.replacements.get();
    while (System.nanoTime() - holeStart < Duration.ofMillis(7_500).toNanos()) {
      Thread.sleep(100);
    }
    assertEquals(atStale, store.replacements.get(), "no replaceSnapshot from a stale cache");
    eventually(
        "snapshots after recovery",
        Duration.ofSeconds(40),
        () -> store.replacements.get() > atStale);
    assertEquals(1, store.replacementSizes.get(store.replacementSizes.size() - 1));
  }

  @Test
  void withWatchesLongerThanTheStaleBoundEveryRoundFollowsARenewal() throws Exception {
    String app = TestPlane.uniqueAppId("renewal");
    plane.createExecutor(app, 1);
    Map<String, String> conf = plane.sparkConf(false);
    conf.put("spark.kubernetes.executor.listerPollingInterval", "3s"); // watches of 3 s
    conf.put("spark.kubernetes.executor.missingPodDetectDelta", "2s"); // stale bound 1 s
    sources = NativeSnapshotSources.create(CountingStore.conf(conf), store.spark);
    sources.start(app);
    eventually("a first snapshot", Duration.ofSeconds(30), () -> store.replacements.get() > 0);
    long watchesBefore = sources.informer().health().watchConnects();
    int first = store.replacements.get();
    Thread.sleep(13_000);
    List<Long> times =
        new ArrayList<>(store.replacementNanos.subList(first - 1, store.replacementNanos.size()));
    List<Long> gaps = new ArrayList<>();
    for (int i = 1; i < times.size(); i++) {
      gaps.add((times.get(i) - times.get(i - 1)) / 1_000_000);
    }
    // A quiet cache is proven for 1 s after each 3 s renewal: each round waits for one (never
    // skipped, never from an unproven cache), so rounds come every 3 s plus at most the wait.
    assertTrue(gaps.size() >= 3 && gaps.size() <= 5, "rounds in 13 s: " + gaps);
    for (long gap : gaps) {
      assertTrue(gap >= 2_900 && gap <= 4_200, "a round every 3 s: " + gaps);
    }
    long watches = sources.informer().health().watchConnects() - watchesBefore;
    assertTrue(watches >= 3 && watches <= 6, "one WATCH per 3 s: " + watches);
    assertEquals(0, sources.informer().health().relists());
    assertTrue(
        sources.informer().health().description().startsWith("Synced"),
        sources.informer().health().description());
  }
}

package org.sparkk8snative.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.sparkk8snative.TestPlane.eventually;

import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.sparkk8snative.TestPlane;

/**
 * A replaceSnapshot from an unsynced or from a stale cache would make Spark remove healthy
 * executors, so none may happen.
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
}

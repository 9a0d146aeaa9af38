package org.sparkk8snative.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.sparkk8snative.TestPlane.eventually;

import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.sparkk8snative.TestPlane;

/** Start never blocks on, nor dies of, an apiserver that is down: snapshots flow once it is up. */
class ApiserverDownAtStartTest {
  private final TestPlane plane = TestPlane.get();

  @Test
  void startReturnsAtOnceAndSnapshotsFlowOnceTheApiserverIsUp() throws Exception {
    String app = TestPlane.uniqueAppId("down");
    plane.createExecutor(app, 1);
    CountingStore store = new CountingStore();
    Map<String, String> conf = plane.sparkConf(false);
    conf.put("spark.kubernetes.executor.listerPollingInterval", "200ms");
    NativeSnapshotSources sources =
        NativeSnapshotSources.create(CountingStore.conf(conf), store.spark);
    plane.control("POST", "/apiserver/stop");
    try {
      long began = System.nanoTime();
      sources.start(app);
      long tookMillis = (System.nanoTime() - began) / 1_000_000;
      assertTrue(tookMillis < 1_000, "start took " + tookMillis + " ms");
      Thread.sleep(1_500);
      assertEquals(0, store.replacements.get());
      assertTrue(
          sources.informer().health().description().startsWith("Degraded"),
          sources.informer().health().description());
    } finally {
      plane.control("POST", "/apiserver/start");
    }
    eventually(
        "a full snapshot once the apiserver is up",
        Duration.ofSeconds(60),
        () -> store.replacements.get() > 0);
    eventually(
        "executor 1 in Spark's snapshot", Duration.ofSeconds(10), () -> store.latestOf(1) != null);
    assertTrue(sources.informer().health().errors() > 0);
    sources.stop();
    store.stop();
  }
}

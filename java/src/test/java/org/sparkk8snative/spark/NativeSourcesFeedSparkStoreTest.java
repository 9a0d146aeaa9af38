package org.sparkk8snative.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.sparkk8snative.TestPlane.eventually;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.apache.spark.scheduler.cluster.k8s.PodFailed;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.sparkk8snative.TestPlane;

/**
 * Both native sources feed Spark's real store; Spark derives the states as the test plays the
 * kubelet.
 */
@Tag("every-line")
class NativeSourcesFeedSparkStoreTest {
  private final TestPlane plane = TestPlane.get();
  private final CountingStore store = new CountingStore();
  private NativeSnapshotSources sources;

  @AfterEach
  void stop() {
    if (sources != null) {
      sources.stop();
    }
    store.stop();
  }

  @Test
  void sparkSeesPendingRunningFailedSucceededAndDeleted() {
    String app = TestPlane.uniqueAppId("states");
    plane.createExecutor(app, 0); // exists before start: reaches Spark through the first snapshot
    Map<String, String> conf = plane.sparkConf(false);
    conf.put("spark.kubernetes.executor.listerPollingInterval", "500ms");
    sources = NativeSnapshotSources.create(CountingStore.conf(conf), store.spark);
    sources.start(app);
    eventually(
        "the first full snapshot", Duration.ofSeconds(30), () -> store.replacements.get() > 0);
    eventually(
        "executor 0 in Spark's snapshot", Duration.ofSeconds(10), () -> store.latestOf(0) != null);
    Map<String, com.codahale.metrics.Gauge> gauges =
        new NativeInformerMetricsSource(sources).metricRegistry().getGauges();
    assertEquals(1L, gauges.get("informer.synced").getValue());
    assertEquals(1L, gauges.get("informer.cacheSize").getValue());
    assertEquals(
        0L,
        new NativeInformerMetricsSource(sources)
            .metricRegistry()
            .getCounters()
            .get("informer.listRequests")
            .getCount(),
        "a streaming list sends no LIST");

    for (long id = 1; id <= 3; id++) {
      plane.createExecutor(app, id);
    }
    plane.setPhase(TestPlane.podName(app, 1), "Running", 0);
    plane.setPhase(TestPlane.podName(app, 2), "Running", 0);
    plane.setPhase(TestPlane.podName(app, 1), "Failed", 137);
    plane.setPhase(TestPlane.podName(app, 2), "Succeeded", 0);
    // Spark calls a deleted pod PodDeleted unless it is still running (a kubelet would stop it
    // first).
    plane.deletePod(TestPlane.podName(app, 3));

    eventually(
        "Spark's states for every executor",
        Duration.ofSeconds(20),
        () ->
            last(store.statesOf(1)).equals("PodFailed")
                && last(store.statesOf(2)).equals("PodSucceeded")
                && store.statesOf(3).contains("PodDeleted"));
    assertTrue(
        store.statesOf(1).containsAll(List.of("PodPending", "PodRunning", "PodFailed")),
        store.statesOf(1).toString());
    assertTrue(
        store.statesOf(2).containsAll(List.of("PodRunning", "PodSucceeded")),
        store.statesOf(2).toString());
    PodFailed failed = (PodFailed) store.latestOf(1);
    int exitCode =
        failed
            .pod()
            .getStatus()
            .getContainerStatuses()
            .get(0)
            .getState()
            .getTerminated()
            .getExitCode();
    assertEquals(137, exitCode);
    assertTrue(store.updates.get() >= 8, "changes reach updatePod: " + store.updates.get());
    // The lister's later full snapshots agree: the deleted pod is gone, the others are there.
    int before = store.replacements.get();
    eventually(
        "a later full snapshot", Duration.ofSeconds(5), () -> store.replacements.get() > before);
    eventually(
        "three pods in the full snapshot",
        Duration.ofSeconds(5),
        () -> store.replacementSizes.get(store.replacementSizes.size() - 1) == 3);
    // Nothing changed since: the next round decodes no pod again, and its figures are published.
    int settled = store.replacements.get();
    eventually(
        "a round with nothing to decode",
        Duration.ofSeconds(5),
        () -> store.replacements.get() > settled + 1);
    assertEquals(3L, gauges.get("lister.lastSnapshotPods").getValue());
    assertEquals(0L, gauges.get("lister.lastSnapshotChangedPods").getValue());
    assertTrue((Long) gauges.get("lister.lastSnapshotMicros").getValue() > 0);
    // The native heap holds at least the cached pods' JSON, which the health reports.
    long cacheJson = sources.informer().health().cacheJsonBytes();
    assertTrue(cacheJson > 0, "cache JSON bytes " + cacheJson);
    assertTrue(
        (Long) gauges.get("library.allocatedBytes").getValue() > cacheJson,
        "native heap " + gauges.get("library.allocatedBytes").getValue() + " > cache " + cacheJson);
  }

  @Test
  void eachSourceRefusesASecondStart() {
    String app = TestPlane.uniqueAppId("twice");
    sources = NativeSnapshotSources.create(CountingStore.conf(plane.sparkConf(false)), store.spark);
    sources.start(app);
    IllegalStateException informer =
        assertThrows(IllegalStateException.class, () -> sources.informerSource().start(app));
    assertTrue(informer.getMessage().contains("twice"), informer.getMessage());
    IllegalStateException lister =
        assertThrows(IllegalStateException.class, () -> sources.listerSource().start(app));
    assertTrue(lister.getMessage().contains("twice"), lister.getMessage());
    sources.stop();
    sources.stop();
    sources.informerSource().stop();
    sources.listerSource().stop();
  }

  private static String last(List<String> states) {
    return states.isEmpty() ? "" : states.get(states.size() - 1);
  }
}

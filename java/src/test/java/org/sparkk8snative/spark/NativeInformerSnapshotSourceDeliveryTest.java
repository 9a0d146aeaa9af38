package org.sparkk8snative.spark;

import static org.sparkk8snative.TestPlane.eventually;

import io.fabric8.kubernetes.api.model.Pod;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;
import org.apache.logging.log4j.Level;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.sparkk8snative.TestPlane;

/**
 * The informer source's delivery thread outlives a change Spark's store refuses, and what ends it
 * otherwise is logged at ERROR with the application id: it never dies silently.
 */
class NativeInformerSnapshotSourceDeliveryTest {
  private final TestPlane plane = TestPlane.get();
  private NativeSnapshotSources sources;
  private FailingStore store;

  /** Spark's store, refusing the pods a test chooses with what the test chooses to throw. */
  private static final class FailingStore extends ForwardingSnapshotsStore {
    final Set<String> delivered = ConcurrentHashMap.newKeySet();
    volatile Consumer<Pod> before = pod -> {};

    @Override
    public void updatePod(Pod pod) {
      before.accept(pod);
      delivered.add(pod.getMetadata().getName());
      super.updatePod(pod);
    }
  }

  @AfterEach
  void stop() {
    if (sources != null) {
      sources.stop();
    }
    if (store != null) {
      store.stop();
    }
  }

  private String start(String tag) {
    String app = TestPlane.uniqueAppId(tag);
    store = new FailingStore();
    sources = NativeSnapshotSources.create(CountingStore.conf(plane.sparkConf(false)), store);
    sources.start(app);
    return app;
  }

  @Test
  void aChangeSparkRefusesDoesNotStopTheOthers() {
    try (LogCapture log = LogCapture.of(NativeInformerSnapshotSource.class)) {
      String app = start("refused");
      String refused = TestPlane.podName(app, 1);
      store.before =
          pod -> {
            if (pod.getMetadata().getName().equals(refused)) {
              throw new IllegalStateException("refused by the test");
            }
          };
      plane.createExecutor(app, 1);
      eventually(
          "the refusal logged", Duration.ofSeconds(30), () -> log.logged(Level.WARN, refused));
      plane.createExecutor(app, 2);
      eventually(
          "the next change delivered",
          Duration.ofSeconds(30),
          () -> store.delivered.contains(TestPlane.podName(app, 2)));
    }
  }

  @Test
  void whatEndsDeliveryIsLoggedWithTheApplicationId() {
    try (LogCapture log = LogCapture.of(NativeInformerSnapshotSource.class)) {
      String app = start("dies");
      store.before =
          pod -> {
            throw new AssertionError("an Error no batch should survive");
          };
      plane.createExecutor(app, 1);
      eventually(
          "the thread's end at ERROR, naming the app",
          Duration.ofSeconds(30),
          () -> log.logged(Level.ERROR, "The native informer source of " + app + " died"));
    }
  }
}

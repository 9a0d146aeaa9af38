package org.sparkk8snative.spark;

import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import org.apache.spark.SparkConf;
import org.apache.spark.scheduler.cluster.k8s.ExecutorPodsSnapshotsStoreImpl;
import org.apache.spark.util.SystemClock;

/**
 * Spark's real {@code ExecutorPodsSnapshotsStoreImpl}, with the subscriber thread it needs, for the
 * test stores that watch what a source hands to Spark ({@link CountingStore} on every line, {@link
 * ForwardingSnapshotsStore} on Scala 2.13).
 */
final class SparksOwnStore {
  private final ScheduledExecutorService subscribers =
      Executors.newSingleThreadScheduledExecutor(
          r -> {
            Thread t = new Thread(r, "test-store-subscribers");
            t.setDaemon(true);
            return t;
          });

  final ExecutorPodsSnapshotsStoreImpl impl =
      new ExecutorPodsSnapshotsStoreImpl(subscribers, new SystemClock(), new SparkConf(false));

  void stop() {
    impl.stop();
    subscribers.shutdownNow();
  }
}

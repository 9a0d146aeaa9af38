package org.sparkk8snative.spark;

import org.apache.spark.SparkConf;
import org.apache.spark.scheduler.cluster.k8s.ExecutorPodsSnapshotsStore;
import org.sparkk8snative.ConfigKeys;
import org.sparkk8snative.NativeInformer;

/**
 * The native informer source and lister source of one application, sharing one native informer:
 * started together, stopped together (idempotently).
 */
public final class NativeSnapshotSources {
  private final SharedNativeInformer shared;
  private final NativeInformerSnapshotSource informerSource;
  private final NativeListerSnapshotSource listerSource;
  private boolean stopped;

  private NativeSnapshotSources(
      SharedNativeInformer shared, ExecutorPodsSnapshotsStore store, long listerIntervalMillis) {
    this.shared = shared;
    this.informerSource = new NativeInformerSnapshotSource(store, shared);
    this.listerSource = new NativeListerSnapshotSource(store, shared, listerIntervalMillis);
  }

  /** Builds the sources from the driver's configuration; nothing is started yet. */
  public static NativeSnapshotSources create(SparkConf conf, ExecutorPodsSnapshotsStore store) {
    SharedNativeInformer shared = new SharedNativeInformer(SparkConfValues.entries(conf));
    return new NativeSnapshotSources(shared, store, listerIntervalMillis(conf));
  }

  /** The lister interval; its validity (positive, Spark syntax) is checked by the native side. */
  static long listerIntervalMillis(SparkConf conf) {
    long millis =
        conf.getTimeAsMs(
            ConfigKeys.LISTER_POLLING_INTERVAL, ConfigKeys.LISTER_POLLING_INTERVAL_DEFAULT);
    return Math.max(millis, 1);
  }

  /** Starts both sources: the informer source first, so its informer is the shared one. */
  public synchronized void start(String applicationId) {
    informerSource.start(applicationId);
    try {
      listerSource.start(applicationId);
    } catch (RuntimeException e) {
      // The caller gets the lister's failure; one of stopping the informer source rides along with
      // it.
      try {
        informerSource.stop();
      } catch (RuntimeException stopFailure) {
        e.addSuppressed(stopFailure);
      }
      throw e;
    }
  }

  public ExecutorPodsSnapshotSource informerSource() {
    return informerSource;
  }

  public NativeListerSnapshotSource listerSource() {
    return listerSource;
  }

  /** The running native informer (for health and metrics), or null. */
  public NativeInformer informer() {
    return shared.current();
  }

  public synchronized void stop() {
    if (stopped) {
      return;
    }
    stopped = true;
    try {
      listerSource.stop();
    } finally {
      informerSource.stop();
    }
  }
}

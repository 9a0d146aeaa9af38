package org.sparkk8snative.spark;

import java.util.HashMap;
import java.util.Map;
import org.apache.spark.SparkConf;
import org.apache.spark.scheduler.cluster.k8s.ExecutorPodsSnapshotsStore;
import scala.Tuple2;

/**
 * The native informer source and lister source of one application, sharing one native informer:
 * started together, stopped together (idempotently).
 */
public final class NativeSnapshotSources {
  /** Spark's interval key of the lister (SPARK-33737). */
  public static final String LISTER_POLLING_INTERVAL = "spark.kubernetes.executor.listerPollingInterval";

  private final SharedNativeInformer shared;
  private final NativeInformerSnapshotSource informerSource;
  private final NativeListerSnapshotSource listerSource;
  private boolean stopped;

  private NativeSnapshotSources(SharedNativeInformer shared, ExecutorPodsSnapshotsStore store, long listerIntervalMillis) {
    this.shared = shared;
    this.informerSource = new NativeInformerSnapshotSource(store, shared);
    this.listerSource = new NativeListerSnapshotSource(store, shared, listerIntervalMillis);
  }

  /** Builds the sources from the driver's configuration; nothing is started yet. */
  public static NativeSnapshotSources create(SparkConf conf, ExecutorPodsSnapshotsStore store) {
    return new NativeSnapshotSources(new SharedNativeInformer(toMap(conf)), store, listerIntervalMillis(conf));
  }

  /** The lister interval; its validity (positive, Spark syntax) is checked by the native side. */
  static long listerIntervalMillis(SparkConf conf) {
    long millis = conf.getTimeAsMs(LISTER_POLLING_INTERVAL, "30s");
    return Math.max(millis, 1);
  }

  static Map<String, String> toMap(SparkConf conf) {
    Map<String, String> map = new HashMap<>();
    for (Tuple2<String, String> entry : conf.getAll()) {
      map.put(entry._1(), entry._2());
    }
    return map;
  }

  /** Starts both sources: the informer source first, so its informer is the shared one. */
  public synchronized void start(String applicationId) {
    informerSource.start(applicationId);
    try {
      listerSource.start(applicationId);
    } catch (RuntimeException e) {
      informerSource.stop();
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
  public org.sparkk8snative.NativeInformer informer() {
    return shared.current();
  }

  public synchronized void stop() {
    if (stopped) {
      return;
    }
    stopped = true;
    listerSource.stop();
    informerSource.stop();
  }
}

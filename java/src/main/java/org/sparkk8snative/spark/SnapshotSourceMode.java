package org.sparkk8snative.spark;

import org.apache.spark.SparkConf;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Which pair of snapshot sources feeds Spark's store: Spark's own watch plus polling LIST
 * ({@link #LEGACY}), or the native informer plus lister ({@link #NATIVE}). The one place that
 * decides; the two pairs never run together.
 */
public enum SnapshotSourceMode {
  LEGACY,
  NATIVE;

  /** SPARK-33737's switch. */
  public static final String ENABLE_INFORMER = "spark.kubernetes.executor.enableInformer";
  /** Spark's internal switch of its watch source (read in that source's constructor). */
  public static final String ENABLE_API_WATCHER = "spark.kubernetes.executor.enableApiWatcher";
  /** Spark's internal switch of its polling source (read in that source's constructor). */
  public static final String ENABLE_API_POLLING = "spark.kubernetes.executor.enableApiPolling";

  private static final Logger LOG = LoggerFactory.getLogger(SnapshotSourceMode.class);

  /** The mode the configuration asks for. */
  public static SnapshotSourceMode select(SparkConf conf) {
    return conf.getBoolean(ENABLE_INFORMER, false) ? NATIVE : LEGACY;
  }

  /**
   * Selects the mode and, for {@link #NATIVE}, turns Spark's legacy sources off in {@code conf}.
   * Must run before Spark constructs those sources (it does so right after the pods allocator).
   * In {@link #LEGACY} mode the conf is left exactly as it is.
   */
  public static SnapshotSourceMode apply(SparkConf conf) {
    SnapshotSourceMode mode = select(conf);
    if (mode == NATIVE) {
      for (String legacy : new String[] {ENABLE_API_WATCHER, ENABLE_API_POLLING}) {
        if (conf.getBoolean(legacy, false)) {
          LOG.warn("{}=true is overridden: {}=true replaces Spark's watch and polling sources", legacy, ENABLE_INFORMER);
        }
        conf.set(legacy, "false");
      }
    }
    return mode;
  }
}

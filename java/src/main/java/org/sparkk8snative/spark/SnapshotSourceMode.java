package org.sparkk8snative.spark;

import static org.sparkk8snative.ConfigKeys.ENABLE_API_POLLING;
import static org.sparkk8snative.ConfigKeys.ENABLE_API_POLLING_DEFAULT;
import static org.sparkk8snative.ConfigKeys.ENABLE_API_WATCHER;
import static org.sparkk8snative.ConfigKeys.ENABLE_API_WATCHER_DEFAULT;
import static org.sparkk8snative.ConfigKeys.ENABLE_INFORMER;
import static org.sparkk8snative.ConfigKeys.ENABLE_INFORMER_DEFAULT;

import org.apache.spark.SparkConf;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Which pair of snapshot sources feeds Spark's store: Spark's own watch plus polling LIST ({@link
 * #LEGACY}), or the native informer plus lister ({@link #NATIVE}). The one place that decides; the
 * two pairs never run together.
 */
public enum SnapshotSourceMode {
  LEGACY,
  NATIVE;

  private static final Logger LOG = LoggerFactory.getLogger(SnapshotSourceMode.class);

  /**
   * Spark's internal switches of its watch and polling sources, each read in its source's
   * constructor.
   */
  private static final String[][] LEGACY_SWITCHES = {
    {ENABLE_API_WATCHER, ENABLE_API_WATCHER_DEFAULT},
    {ENABLE_API_POLLING, ENABLE_API_POLLING_DEFAULT},
  };

  /** The mode the configuration asks for. */
  public static SnapshotSourceMode select(SparkConf conf) {
    return SparkConfValues.flag(conf, ENABLE_INFORMER, ENABLE_INFORMER_DEFAULT) ? NATIVE : LEGACY;
  }

  /**
   * Selects the mode and, for {@link #NATIVE}, turns Spark's legacy sources off in {@code conf}.
   * Must run before Spark constructs those sources (it does so right after the pods allocator). In
   * {@link #LEGACY} mode the conf is left exactly as it is.
   */
  public static SnapshotSourceMode apply(SparkConf conf) {
    SnapshotSourceMode mode = select(conf);
    if (mode == NATIVE) {
      for (String[] legacySwitch : LEGACY_SWITCHES) {
        String key = legacySwitch[0];
        // Both switches default to true: only a user who asked for the legacy source is told it is
        // overridden.
        if (conf.contains(key) && SparkConfValues.flag(conf, key, legacySwitch[1])) {
          LOG.warn(
              "{}=true is overridden: {}=true replaces Spark's watch and polling sources",
              key,
              ENABLE_INFORMER);
        }
        conf.set(key, Boolean.toString(false));
      }
    }
    return mode;
  }
}

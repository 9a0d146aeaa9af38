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
 * Which pair of snapshot sources feeds Spark's store: Spark's own ({@link #LEGACY}: its watch plus
 * polling LIST, or, on a Spark that ships SPARK-33737, its own informer and lister), or the native
 * informer plus lister ({@link #NATIVE}). The one place that decides; the two pairs never run
 * together.
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

  /**
   * A class that SPARK-33737 adds to Spark (apache/spark PR 58489, with
   * ExecutorPodsListerSnapshotSource and InformerManager): a Spark that has it runs fabric8
   * informer sources of its own when {@code enableInformer} is true, and the native sources would
   * feed its store a second time.
   */
  static final String SPARKS_OWN_INFORMER_SOURCE =
      "org.apache.spark.scheduler.cluster.k8s.ExecutorPodsInformerSnapshotSource";

  /**
   * The mode the configuration asks for, on the Spark whose classes {@code sparkClasses} loads:
   * {@link #LEGACY} where that Spark answers {@code enableInformer} itself.
   */
  static SnapshotSourceMode select(SparkConf conf, ClassLoader sparkClasses) {
    if (!SparkConfValues.flag(conf, ENABLE_INFORMER, ENABLE_INFORMER_DEFAULT)) {
      return LEGACY;
    }
    if (hasClass(sparkClasses, SPARKS_OWN_INFORMER_SOURCE)) {
      LOG.info(
          "This Spark has informer sources of its own ({}): {}=true is left to them, and "
              + "spark-k8s-native's informer and lister do not run",
          SPARKS_OWN_INFORMER_SOURCE,
          ENABLE_INFORMER);
      return LEGACY;
    }
    return NATIVE;
  }

  /**
   * Selects the mode and, for {@link #NATIVE}, turns Spark's legacy sources off in {@code conf}.
   * Must run before Spark constructs those sources (it does so right after the pods allocator). In
   * {@link #LEGACY} mode the conf is left exactly as it is.
   */
  public static SnapshotSourceMode apply(SparkConf conf) {
    return apply(conf, SnapshotSourceMode.class.getClassLoader());
  }

  static SnapshotSourceMode apply(SparkConf conf, ClassLoader sparkClasses) {
    SnapshotSourceMode mode = select(conf, sparkClasses);
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

  private static boolean hasClass(ClassLoader loader, String name) {
    try {
      Class.forName(name, false, loader);
      return true;
    } catch (ClassNotFoundException | LinkageError e) {
      return false;
    }
  }
}

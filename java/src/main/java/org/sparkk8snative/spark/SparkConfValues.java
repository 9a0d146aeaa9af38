package org.sparkk8snative.spark;

import java.util.HashMap;
import java.util.Map;
import org.apache.spark.SparkConf;
import org.sparkk8snative.ConfigKeys;
import scala.Tuple2;

/**
 * Reads the driver's SparkConf the way the rest of this package needs it: switches with the
 * defaults of {@link org.sparkk8snative.ConfigKeys} (the one table of keys and defaults, generated
 * from the native side), and every entry as a map for the native parser.
 */
final class SparkConfValues {
  private SparkConfValues() {}

  /**
   * The switch's value, or {@code defaultValue} (a {@code ConfigKeys.*_DEFAULT}) when it is unset.
   *
   * @throws IllegalArgumentException when the value is neither true nor false, as Spark's own
   *     {@code getBoolean}
   */
  static boolean flag(SparkConf conf, String key, String defaultValue) {
    return conf.getBoolean(key, Boolean.parseBoolean(defaultValue));
  }

  /**
   * Every entry of the conf, for the native side (which reads the keys it knows and ignores the
   * rest), and the value of {@code spark.kubernetes.executor.checkAllContainers} that this Spark
   * uses when it is unset: its default differs by line, and the informer classifies pods as the
   * driver's Spark does.
   */
  static Map<String, String> entries(SparkConf conf) {
    Map<String, String> map = new HashMap<>();
    for (Tuple2<String, String> entry : conf.getAll()) {
      map.put(entry._1(), entry._2());
    }
    if (!map.containsKey(ConfigKeys.CHECK_ALL_CONTAINERS)) {
      String sparksDefault = SparkInternals.checkAllContainersDefault();
      if (sparksDefault != null) {
        map.put(ConfigKeys.CHECK_ALL_CONTAINERS, sparksDefault);
      }
    }
    return map;
  }
}

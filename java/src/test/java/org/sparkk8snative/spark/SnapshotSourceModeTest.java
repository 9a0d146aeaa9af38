package org.sparkk8snative.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.SparkConf;
import org.junit.jupiter.api.Test;
import org.sparkk8snative.ConfigKeys;

/**
 * Which pair of sources each combination of flags selects, and what that does to Spark's own
 * switches.
 */
class SnapshotSourceModeTest {
  private static final String[] TRI = {null, "true", "false"};

  @Test
  void everyCombinationOfFlags() {
    List<String> checked = new ArrayList<>();
    for (String informer : TRI) {
      for (String watcher : TRI) {
        for (String polling : TRI) {
          SparkConf conf = new SparkConf(false);
          set(conf, ConfigKeys.ENABLE_INFORMER, informer);
          set(conf, ConfigKeys.ENABLE_API_WATCHER, watcher);
          set(conf, ConfigKeys.ENABLE_API_POLLING, polling);
          SnapshotSourceMode mode = SnapshotSourceMode.apply(conf);
          String label = informer + "/" + watcher + "/" + polling;
          if ("true".equals(informer)) {
            assertEquals(SnapshotSourceMode.NATIVE, mode, label);
            // The legacy pair is off, whatever was asked: the two pairs never run together.
            assertFalse(conf.getBoolean(ConfigKeys.ENABLE_API_WATCHER, true), label);
            assertFalse(conf.getBoolean(ConfigKeys.ENABLE_API_POLLING, true), label);
          } else {
            assertEquals(SnapshotSourceMode.LEGACY, mode, label);
            // Legacy mode leaves Spark's own switches exactly as they were.
            assertEquals(
                watcher,
                conf.getOption(ConfigKeys.ENABLE_API_WATCHER).getOrElse(() -> null),
                label);
            assertEquals(
                polling,
                conf.getOption(ConfigKeys.ENABLE_API_POLLING).getOrElse(() -> null),
                label);
          }
          checked.add(label);
        }
      }
    }
    assertEquals(27, checked.size());
  }

  @Test
  void aMalformedSwitchIsAnError() {
    SparkConf conf = new SparkConf(false).set(ConfigKeys.ENABLE_INFORMER, "yes please");
    assertThrows(IllegalArgumentException.class, () -> SnapshotSourceMode.apply(conf));
  }

  private static void set(SparkConf conf, String key, String value) {
    if (value != null) {
      conf.set(key, value);
    }
  }
}

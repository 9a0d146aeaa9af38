package org.sparkk8snative.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;
import org.apache.logging.log4j.Level;
import org.apache.spark.SparkConf;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
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

  /**
   * On a Spark that ships SPARK-33737 (a stand-in of its informer source class, compiled here and
   * loaded by a class loader above this test's, as Spark's jars are above a --jars jar), the
   * drop-in steps back with one INFO line and leaves Spark's switches alone; without that class,
   * the same conf selects the native sources.
   */
  @Test
  void onASparkWithInformerSourcesOfItsOwnTheDropInStepsBack(@TempDir Path dir) throws Exception {
    String name = SnapshotSourceMode.SPARKS_OWN_INFORMER_SOURCE;
    Path source = dir.resolve(name.substring(name.lastIndexOf('.') + 1) + ".java");
    Files.write(
        source,
        ("package org.apache.spark.scheduler.cluster.k8s;\n"
                + "public class ExecutorPodsInformerSnapshotSource {}\n")
            .getBytes(StandardCharsets.UTF_8));
    JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
    assertEquals(0, javac.run(null, null, null, "-d", dir.toString(), source.toString()));
    try (URLClassLoader sparkWithInformer =
        new URLClassLoader(new URL[] {dir.toUri().toURL()}, getClass().getClassLoader())) {
      assertEquals(name, sparkWithInformer.loadClass(name).getName(), "the stand-in loads");
      SparkConf conf = new SparkConf(false).set(ConfigKeys.ENABLE_INFORMER, "true");
      try (LogCapture log = LogCapture.of(SnapshotSourceMode.class)) {
        assertEquals(SnapshotSourceMode.LEGACY, SnapshotSourceMode.apply(conf, sparkWithInformer));
        assertTrue(log.logged(Level.INFO, "This Spark has informer sources of its own (" + name));
      }
      assertFalse(conf.contains(ConfigKeys.ENABLE_API_WATCHER), "Spark's switches untouched");
      assertFalse(conf.contains(ConfigKeys.ENABLE_API_POLLING), "Spark's switches untouched");
      assertEquals(SnapshotSourceMode.NATIVE, SnapshotSourceMode.apply(conf), "without it");
    }
  }

  private static void set(SparkConf conf, String key, String value) {
    if (value != null) {
      conf.set(key, value);
    }
  }
}

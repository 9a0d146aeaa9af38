package org.sparkk8snative.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.reflect.Field;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.apache.spark.SparkContext;
import org.apache.spark.SparkEnv;
import org.apache.spark.metrics.MetricsSystem;
import org.apache.spark.metrics.source.Source;
import org.apache.spark.scheduler.cluster.k8s.KubernetesClusterSchedulerBackend;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Every member of Spark that {@link SparkInternals} reaches is there, in the Spark classes on the
 * test classpath (the line the jar is built for): a Spark line that renames one fails here, not in
 * a user's driver.
 */
@Tag("every-line")
class SparkInternalsTest {
  @Test
  void theSchedulerBackendKeepsExactlyOneSparkContextField() throws Exception {
    Field field = SparkInternals.backendSparkContextField();
    assertEquals(KubernetesClusterSchedulerBackend.class, field.getDeclaringClass());
    assertEquals(SparkContext.class, field.getType());
    field.setAccessible(true); // the driver's JVM must allow it, as it does here
    // The field holds the constructor's SparkContext: the only constructor takes one.
    assertTrue(
        Arrays.stream(KubernetesClusterSchedulerBackend.class.getConstructors())
            .allMatch(c -> Arrays.asList(c.getParameterTypes()).contains(SparkContext.class)));
  }

  @Test
  void sparksShutdownHooksTakeAndDropAHook() throws Exception {
    Class<?> hooks = Class.forName("org.apache.spark.util.ShutdownHookManager");
    assertNotNull(hooks.getMethod("addShutdownHook", int.class, scala.Function0.class));
    assertNotNull(hooks.getMethod("removeShutdownHook", Object.class));
    AtomicInteger ran = new AtomicInteger();
    Object hook = SparkInternals.addShutdownHook(ran::incrementAndGet);
    assertFalse(hook instanceof Thread, "Spark's hook manager, not a plain JVM hook: " + hook);
    SparkInternals.removeShutdownHook(hook);
    assertEquals(0, ran.get());
  }

  @Test
  void theMetricsSystemTakesAndDropsSources() throws Exception {
    assertEquals(MetricsSystem.class, SparkEnv.class.getMethod("metricsSystem").getReturnType());
    assertNotNull(MetricsSystem.class.getMethod("registerSource", Source.class));
    assertNotNull(MetricsSystem.class.getMethod("removeSource", Source.class));
  }

  @Test
  void withoutASparkEnvNoMetricsSourceIsRegistered() {
    assertFalse(SparkInternals.registerMetricsSource(new NativeInformerMetricsSource(null)));
  }

  /** Reflection on Spark anywhere else in this package would escape the checks above. */
  @Test
  void noOtherClassOfThePackageUsesReflection() throws IOException {
    Path sources = Paths.get("src/main/java/org/sparkk8snative/spark");
    assertTrue(Files.isDirectory(sources), sources.toAbsolutePath().toString());
    List<String> offenders;
    try (Stream<Path> files = Files.list(sources)) {
      offenders =
          files
              .filter(f -> f.toString().endsWith(".java") && !f.endsWith("SparkInternals.java"))
              .filter(SparkInternalsTest::usesReflection)
              .map(f -> f.getFileName().toString())
              .collect(Collectors.toList());
    }
    assertEquals(List.of(), offenders, "reflection on Spark belongs in SparkInternals");
  }

  private static boolean usesReflection(Path file) {
    try {
      String text = Files.readString(file);
      return Stream.of(
              "java.lang.reflect", "getDeclaredField", "getDeclaredMethod", "setAccessible")
          .anyMatch(text::contains);
    } catch (IOException e) {
      throw new AssertionError(e);
    }
  }
}

package org.sparkk8snative.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.apache.spark.scheduler.cluster.k8s.ExecutorPodsAllocator;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.sparkk8snative.NativeLibrary;

/**
 * What makes one jar right for a Spark line, checked on the line itself (this test runs on every
 * line: line-tests/ in the Maven build): the Spark on the classpath is the one under test, the
 * classes were compiled for the Java that line runs on, the jar carries the native library, and the
 * allocator overrides only methods whose signatures this line's allocator has.
 */
@Tag("every-line")
class SparkLineTest {
  private static final String SPARK_UNDER_TEST =
      System.getProperty("spark.k8s.native.test.sparkVersion", "");

  @Test
  void theSparkOnTheClasspathIsTheLineUnderTest() {
    System.out.printf(
        "Spark %s, Scala %s, Java %s%n",
        org.apache.spark.package$.MODULE$.SPARK_VERSION(),
        scala.util.Properties.versionNumberString(),
        System.getProperty("java.version"));
    assertEquals(SPARK_UNDER_TEST, org.apache.spark.package$.MODULE$.SPARK_VERSION());
  }

  /** Spark 3.5 runs on Java 8, 11 and 17: its artifact is compiled for 8 (class file major 52). */
  @Test
  void theClassesAreCompiledForTheLinesJava() throws IOException {
    int expected = SPARK_UNDER_TEST.startsWith("3.") ? 52 : 61;
    assertEquals(expected, classFileMajorVersion(NativeExecutorPodsAllocator.class));
    assertEquals(expected, classFileMajorVersion(NativeLibrary.class));
  }

  @Test
  void theJarCarriesTheNativeLibrary() {
    String resource =
        "/org/sparkk8snative/native/" + NativeLibrary.platform() + "/libspark_k8s_native.so";
    assertNotNull(NativeLibrary.class.getResource(resource), resource);
  }

  /**
   * An override whose parameter types differ from this line's (as {@code requestNewExecutors}' do:
   * an {@code immutable.Seq} in 4.0 and 4.1, a {@code Set} in 4.2) compiles, and is silently never
   * called: every method the allocator declares must be one of Spark's, with the same types.
   */
  @Test
  void theAllocatorOverridesOnlyMethodsThisLinesAllocatorHas() {
    List<String> notSparks = new ArrayList<>();
    for (Method ours : NativeExecutorPodsAllocator.class.getDeclaredMethods()) {
      if (ours.isSynthetic() || Modifier.isPrivate(ours.getModifiers())) {
        continue;
      }
      if (!isSparksMethod(ours)) {
        notSparks.add(ours.toString());
      }
    }
    assertEquals(new ArrayList<String>(), notSparks, "methods Spark's allocator does not have");
    assertTrue(
        Arrays.stream(NativeExecutorPodsAllocator.class.getDeclaredMethods())
            .anyMatch(m -> m.getName().equals("start")),
        "start is overridden");
  }

  private static boolean isSparksMethod(Method ours) {
    for (Class<?> c = ExecutorPodsAllocator.class; c != null; c = c.getSuperclass()) {
      try {
        Method sparks = c.getDeclaredMethod(ours.getName(), ours.getParameterTypes());
        return !Modifier.isPrivate(sparks.getModifiers());
      } catch (NoSuchMethodException e) {
        // look further up
      }
    }
    return false;
  }

  private static int classFileMajorVersion(Class<?> c) throws IOException {
    try (InputStream in = c.getResourceAsStream(c.getSimpleName() + ".class");
        DataInputStream data = new DataInputStream(in)) {
      data.readInt(); // 0xCAFEBABE
      data.readUnsignedShort(); // minor
      return data.readUnsignedShort();
    }
  }
}

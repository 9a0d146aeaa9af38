package org.sparkk8snative;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** Runs in its own JVM with java.library.path pointing at cargo's output (see the pom). */
class NativeLibraryTest {

  @Test
  void loadsFromJavaLibraryPathAndCallsIntoRust() {
    String version = NativeLibrary.nativeVersion();
    assertTrue(version.startsWith("spark-k8s-native 0.1.0 ("), version);
    assertEquals("java.library.path", NativeLibrary.loadedFrom());
  }

  @Test
  void loadingTwiceIsHarmless() {
    NativeLibrary.load();
    NativeLibrary.load();
    assertTrue(
        NativeLibrary.nativeVersion()
            .contains(System.getProperty("os.arch").equals("amd64") ? "x86_64" : ""));
  }
}

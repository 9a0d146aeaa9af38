package org.sparkk8snative;

import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/**
 * Runs against the packaged jar (failsafe), with no library on java.library.path: the loader must
 * extract the copy the jar carries.
 */
class NativeLibraryFromJarIT {

  @Test
  void loadsTheLibraryBundledInTheJar() {
    String version = NativeLibrary.nativeVersion();
    assertTrue(version.startsWith("spark-k8s-native "), version);
    String from = NativeLibrary.loadedFrom();
    assertTrue(
        from.startsWith("jar:/org/sparkk8snative/native/" + NativeLibrary.platform() + "/"), from);
  }
}

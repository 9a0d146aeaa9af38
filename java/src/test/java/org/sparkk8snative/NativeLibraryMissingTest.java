package org.sparkk8snative;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** Runs in its own JVM, so that the failed load does not affect the other tests. */
class NativeLibraryMissingTest {

  @Test
  void aWrongExplicitPathFailsWithAMessageNamingTheProperty() {
    System.setProperty(NativeLibrary.PATH_PROPERTY, "/nonexistent/libspark_k8s_native.so");
    UnsatisfiedLinkError e = assertThrows(UnsatisfiedLinkError.class, NativeLibrary::load);
    assertTrue(e.getMessage().contains(NativeLibrary.PATH_PROPERTY), e.getMessage());
    assertTrue(e.getMessage().contains("/nonexistent/libspark_k8s_native.so"), e.getMessage());
    // The failure is remembered: a second attempt says the same, without retrying.
    UnsatisfiedLinkError again = assertThrows(UnsatisfiedLinkError.class, NativeLibrary::load);
    assertTrue(again.getMessage().contains(NativeLibrary.PATH_PROPERTY), again.getMessage());
  }
}

package org.sparkk8snative.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import org.apache.logging.log4j.Level;
import org.junit.jupiter.api.Test;
import org.sparkk8snative.ConfigKeys;
import org.sparkk8snative.NativeExecutorServices;
import org.sparkk8snative.NativeInformer;

/**
 * The native handle of executor Services is released on close, and by the Cleaner when one is
 * forgotten.
 */
class NativeExecutorServicesCleanerTest {
  /** Services of a driver whose apiserver nobody runs: creating them sends no request. */
  private static final Map<String, String> CONF =
      Map.of(
          ConfigKeys.MASTER, "k8s://https://127.0.0.1:1",
          ConfigKeys.ENABLE_SERVICE, "true",
          ConfigKeys.BLOCK_MANAGER_PORT, "7079",
          ConfigKeys.DRIVER_POD_NAME, "spark-cleaner-driver");

  @Test
  void closeReleasesTheHandleOnce() {
    int before = NativeInformer.openInformers();
    NativeExecutorServices services = NativeExecutorServices.create(CONF, "spark-cleaner-closed");
    assertEquals(before + 1, NativeInformer.openInformers());
    services.close();
    services.close();
    assertTrue(services.isClosed());
    assertEquals(before, NativeInformer.openInformers());
    assertThrows(IllegalStateException.class, () -> services.ensure(java.util.List.of("1")));
  }

  @Test
  void aForgottenInstanceIsReleasedWhenCollected() throws InterruptedException {
    try (LogCapture log = LogCapture.of(NativeExecutorServices.class)) {
      int before = NativeInformer.openInformers();
      createAndForget();
      assertEquals(before + 1, NativeInformer.openInformers());
      long deadline = System.nanoTime() + 20_000_000_000L;
      while (NativeInformer.openInformers() > before && System.nanoTime() < deadline) {
        System.gc();
        Thread.sleep(50);
      }
      assertEquals(
          before, NativeInformer.openInformers(), "the Cleaner released the forgotten handle");
      assertTrue(
          log.logged(Level.WARN, "spark-cleaner-forgotten was not closed"),
          "the release is logged");
      assertFalse(
          log.logged(Level.WARN, "spark-cleaner-closed"), "a closed instance is not reported");
    }
  }

  private static void createAndForget() {
    NativeExecutorServices.create(CONF, "spark-cleaner-forgotten");
  }
}

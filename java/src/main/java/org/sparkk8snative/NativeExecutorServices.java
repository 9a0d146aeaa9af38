package org.sparkk8snative;

import java.util.Collection;
import java.util.Map;

/**
 * Executor Services (one ClusterIP Service per executor, as Spark's executor-service proposal has
 * it; see docs/spark-integration.md) managed without the native informer, for drivers that keep
 * Spark's own watch and polling sources: the allocator ensures the Service of each executor pod it
 * creates. (With the informer on, Services follow the pods the informer sees instead.)
 *
 * <p>Thread-safe. Closing twice is harmless. An instance collected without being closed releases
 * its native handle, with a log line (see {@link NativeHandle}).
 */
public final class NativeExecutorServices implements AutoCloseable {
  private final NativeHandle handle;

  private NativeExecutorServices(long handle, String applicationId) {
    this.handle =
        new NativeHandle(
            this, handle, NativeBridge::closeServices, "The executor Services of " + applicationId);
  }

  /**
   * @throws IllegalArgumentException naming the key when spark.kubernetes.executor.enableService is
   *     off or spark.blockManager.port or spark.kubernetes.driver.pod.name is missing
   */
  public static NativeExecutorServices create(Map<String, String> sparkConf, String applicationId) {
    String[] flat = NativeBridge.flatten(sparkConf);
    NativeLogBridge.ensureStarted();
    return new NativeExecutorServices(
        NativeBridge.createServices(flat, applicationId), applicationId);
  }

  /**
   * Ensures the Service of each executor; returns how many were created or repaired.
   *
   * @throws SparkK8sNativeException with the HTTP status of the first failure (after all were
   *     tried)
   */
  public int ensure(Collection<String> executorIds) {
    return NativeBridge.ensureServices(handle.id(), executorIds.toArray(new String[0]));
  }

  /** Releases the native handle; harmless when called again. */
  @Override
  public void close() {
    handle.close();
  }

  public boolean isClosed() {
    return handle.isClosed();
  }
}

package org.sparkk8snative;

import java.util.Collection;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Executor Services (SPARK-52505) managed without the native informer, for drivers that keep
 * Spark's own watch and polling sources: the allocator ensures the Service of each executor pod it
 * creates. (With the informer on, Services follow the pods the informer sees instead.)
 */
public final class NativeExecutorServices implements AutoCloseable {
  private final long handle;
  private final AtomicBoolean closed = new AtomicBoolean();

  private NativeExecutorServices(long handle) {
    this.handle = handle;
  }

  /**
   * @throws IllegalArgumentException naming the key when spark.kubernetes.executor.enableService
   *     is off or spark.blockManager.port or spark.kubernetes.driver.pod.name is missing
   */
  public static NativeExecutorServices create(Map<String, String> sparkConf, String applicationId) {
    String[] flat = NativeBridge.flatten(sparkConf);
    NativeLogBridge.ensureStarted();
    return new NativeExecutorServices(NativeBridge.createServices(flat, applicationId));
  }

  /**
   * Ensures the Service of each executor; returns how many were created or repaired.
   *
   * @throws SparkK8sNativeException with the HTTP status of the first failure (after all were tried)
   */
  public int ensure(Collection<String> executorIds) {
    return NativeBridge.ensureServices(handle, executorIds.toArray(new String[0]));
  }

  @Override
  public void close() {
    if (closed.compareAndSet(false, true)) {
      NativeBridge.closeServices(handle);
    }
  }
}

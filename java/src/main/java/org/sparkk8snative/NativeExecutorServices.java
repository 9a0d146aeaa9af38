package org.sparkk8snative;

import java.lang.ref.Cleaner;
import java.util.Collection;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Executor Services (one ClusterIP Service per executor, as Spark's executor-service proposal has
 * it; see docs/spark-integration.md) managed without the native informer, for drivers that keep
 * Spark's own watch and polling sources: the allocator ensures the Service of each executor pod it
 * creates. (With the informer on, Services follow the pods the informer sees instead.)
 *
 * <p>Thread-safe. Closing twice is harmless. A {@link Cleaner} releases the native handle of an
 * instance that is collected without being closed, and logs that it did.
 */
public final class NativeExecutorServices implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(NativeExecutorServices.class);
  private static final Cleaner CLEANER = Cleaner.create();

  private final long handle;
  private final AtomicBoolean closed;
  private final Cleaner.Cleanable cleanable;

  private NativeExecutorServices(long handle, String applicationId) {
    this.handle = handle;
    this.closed = new AtomicBoolean();
    this.cleanable = CLEANER.register(this, new Release(handle, applicationId, closed));
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
    return NativeBridge.ensureServices(handle, executorIds.toArray(new String[0]));
  }

  /** Releases the native handle; harmless when called again. */
  @Override
  public void close() {
    if (closed.compareAndSet(false, true)) {
      cleanable.clean();
    }
  }

  public boolean isClosed() {
    return closed.get();
  }

  /**
   * Releases the handle, on {@link #close()} or when the instance is collected unclosed. Must not
   * reference the NativeExecutorServices, or it would never be collected; it shares only the closed
   * flag, which tells the two cases apart.
   */
  private static final class Release implements Runnable {
    private final long handle;
    private final String applicationId;
    private final AtomicBoolean closed;

    Release(long handle, String applicationId, AtomicBoolean closed) {
      this.handle = handle;
      this.applicationId = applicationId;
      this.closed = closed;
    }

    @Override
    public void run() {
      if (closed.get()) {
        NativeBridge.closeServices(handle); // close(): a failure goes to its caller
        return;
      }
      // Collected unclosed: this runs on the Cleaner's thread, which would drop an exception
      // unseen.
      LOG.warn(
          "The executor Services of {} were not closed: releasing their native handle as they are "
              + "garbage-collected",
          applicationId);
      try {
        NativeBridge.closeServices(handle);
      } catch (RuntimeException e) {
        LOG.warn("Could not release the executor Services handle of {}", applicationId, e);
      }
    }
  }
}

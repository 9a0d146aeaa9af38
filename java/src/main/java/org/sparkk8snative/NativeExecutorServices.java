package org.sparkk8snative;

import java.util.Collection;
import java.util.Map;

/**
 * Executor Services (one ClusterIP Service per executor, as Spark's executor-service proposal has
 * it; see docs/spark-integration.md), through the application's one native Service controller. With
 * the native informer off ({@link #create}), the controller is this instance's own: the caller
 * ensures the Service of each executor before it creates the pod and reports the executors whose
 * pods are gone ({@link #gone}). With the informer on ({@link #ofInformer}), it is the informer's:
 * the informer feeds it the pods it sees, and {@link #ensure} still lets the caller ensure
 * synchronously, without a second request when the informer then sees the pod.
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
   * The Services of a driver without the native informer. Asks the apiserver whether the driver may
   * get, create and delete services in its namespace.
   *
   * @throws IllegalArgumentException naming the key when spark.kubernetes.executor.enableService is
   *     off or spark.blockManager.port or spark.kubernetes.driver.pod.name is missing or unusable
   * @throws SparkK8sNativeException (403, Forbidden) naming the verbs, the namespace and the fix
   *     when the apiserver says the driver may not
   */
  public static NativeExecutorServices create(Map<String, String> sparkConf, String applicationId) {
    String[] flat = NativeBridge.flatten(sparkConf);
    NativeLogBridge.ensureStarted();
    return new NativeExecutorServices(
        NativeBridge.createServices(flat, applicationId), applicationId);
  }

  /**
   * The Services of a driver with the native informer: shares the informer's Service controller
   * (created, and its rights checked, with the informer). Closing this instance leaves the
   * controller to the informer, which stops it when it stops.
   *
   * @throws IllegalArgumentException when {@code applicationId} is not the informer's
   * @throws IllegalStateException when the informer was created with Services off, or is closed
   */
  public static NativeExecutorServices ofInformer(NativeInformer informer, String applicationId) {
    if (informer == null) {
      throw new NullPointerException("informer");
    }
    if (!informer.applicationId().equals(applicationId)) {
      throw new IllegalArgumentException(
          "applicationId="
              + applicationId
              + ": the informer is the one of "
              + informer.applicationId());
    }
    return new NativeExecutorServices(
        NativeBridge.informerServices(informer.handleId()), applicationId);
  }

  /**
   * Ensures the Service of each executor now (the Service exists when this returns); returns how
   * many were created or repaired. A Service of the name that another tool made (a Spark that ships
   * its own, for instance) is left alone and not counted.
   *
   * @throws SparkK8sNativeException with the HTTP status of the first failure (after all were
   *     tried)
   * @throws IllegalStateException when the informer whose controller this shares has stopped
   */
  public int ensure(Collection<String> executorIds) {
    return NativeBridge.ensureServices(handle.id(), ids(executorIds));
  }

  /**
   * Reports executors whose pods are gone: their Services are deleted {@code
   * spark.kubernetes.native.service.deleteAfter} later (none when it is 0s). Returns at once. With
   * the informer on, it sees the deletions itself; reporting them too is harmless.
   */
  public void gone(Collection<String> executorIds) {
    NativeBridge.servicesGone(handle.id(), ids(executorIds));
  }

  /**
   * The ids for the native side, which names a null or empty one; a null collection is named here.
   */
  private static String[] ids(Collection<String> executorIds) {
    if (executorIds == null) {
      throw new NullPointerException("executorIds");
    }
    return executorIds.toArray(new String[0]);
  }

  /**
   * Releases the native handle, stopping this instance's own Service controller (never an
   * informer's); harmless when called again.
   */
  @Override
  public void close() {
    handle.close();
  }

  public boolean isClosed() {
    return handle.isClosed();
  }
}

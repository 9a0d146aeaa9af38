package org.sparkk8snative.spark;

import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.spark.SparkContext;
import org.apache.spark.SparkEnv;
import org.apache.spark.metrics.source.Source;
import org.apache.spark.scheduler.cluster.k8s.ExecutorPodsAllocator;
import org.apache.spark.scheduler.cluster.k8s.KubernetesClusterSchedulerBackend;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Every reach of this library into members of Spark that are not Spark's public API, in one place.
 * Any Spark release may rename or remove them; {@code SparkInternalsTest} finds each one in the
 * Spark classes the build compiles against, so that a Spark line that changes one fails that test
 * instead of a user's driver. The only reflection on Spark in this library is here.
 *
 * <ol>
 *   <li><b>{@code KubernetesClusterSchedulerBackend}: its {@code SparkContext}</b>, a constructor
 *       parameter that Scala keeps as a field without an accessor, read by reflection and found by
 *       its type (Scala mangles its name, {@code
 *       org$apache$spark$scheduler$cluster$k8s$KubernetesClusterSchedulerBackend$$sc} in 4.2). Why:
 *       the allocator is handed the backend, never the context, and needs the context to listen for
 *       the application's start (the metrics source is named after the application id) and end
 *       (Spark calls the allocator's {@code stop} only when {@code
 *       spark.kubernetes.executor.deleteOnTermination} is true). If it is missing: a WARN says so,
 *       the metrics are registered at once, and the native parts stop with the allocator or at JVM
 *       exit.
 *   <li><b>{@code ExecutorPodsAllocator.EXECUTOR_ID_COUNTER()}</b>, Scala-{@code protected} (public
 *       in the bytecode), called directly. Why: the ids of the executors that {@code
 *       requestNewExecutors} has just created, whose Services the allocator ensures when the
 *       informer is off. If it is missing: an ERROR, once, says executor Services are not ensured;
 *       executor allocation itself goes on.
 *   <li><b>{@code ExecutorPodsAllocator.requestNewExecutors(int, String, int,
 *       scala.collection.immutable.Set)}</b>, overridden by {@link NativeExecutorPodsAllocator} and
 *       looked up by reflection before Services depend on it. Why: an override whose signature no
 *       longer matches (4.0 and 4.1 take an {@code immutable.Seq}) is silently never called. If it
 *       is missing: an ERROR at start says executor Services are not ensured with the informer off.
 *   <li><b>{@code SparkEnv.metricsSystem()} and {@code MetricsSystem.registerSource / removeSource}
 *       </b> ({@code MetricsSystem} is {@code private[spark]}), called directly. Why: to publish
 *       the informer's gauges through whatever sink the operator configured. If they are missing: a
 *       WARN, and no metrics.
 * </ol>
 */
final class SparkInternals {
  private static final Logger LOG = LoggerFactory.getLogger(SparkInternals.class);

  /** What {@link #lastExecutorId} answers when Spark's counter cannot be read. */
  static final int UNKNOWN_EXECUTOR_ID = -1;

  private static final AtomicBoolean REPORTED_MISSING_COUNTER = new AtomicBoolean();

  private SparkInternals() {}

  /**
   * The backend's {@code SparkContext} field: the one field of {@code
   * KubernetesClusterSchedulerBackend} whose type is a {@code SparkContext}.
   *
   * @throws NoSuchFieldException when there is no such field, or more than one (which to read would
   *     then be a guess)
   */
  static Field backendSparkContextField() throws NoSuchFieldException {
    List<Field> found = new ArrayList<>();
    for (Field field : KubernetesClusterSchedulerBackend.class.getDeclaredFields()) {
      if (!Modifier.isStatic(field.getModifiers())
          && SparkContext.class.isAssignableFrom(field.getType())) {
        found.add(field);
      }
    }
    if (found.size() != 1) {
      throw new NoSuchFieldException(
          KubernetesClusterSchedulerBackend.class.getName()
              + " declares "
              + found.size()
              + " SparkContext fields "
              + found
              + " where exactly one was expected");
    }
    return found.get(0);
  }

  /**
   * The backend's SparkContext, or null (with a WARN saying why and what follows) when it cannot be
   * read.
   */
  static SparkContext sparkContextOf(KubernetesClusterSchedulerBackend backend) {
    try {
      Field field = backendSparkContextField();
      field.setAccessible(true);
      SparkContext context = (SparkContext) field.get(backend);
      if (context == null) {
        LOG.warn(
            "The SparkContext field {} of the scheduler backend is null: the native parts stop with the "
                + "allocator or at JVM exit, not when the application ends",
            field.getName());
      }
      return context;
    } catch (ReflectiveOperationException | RuntimeException e) {
      LOG.warn(
          "Could not read the SparkContext of the scheduler backend (this Spark line's "
              + "KubernetesClusterSchedulerBackend differs from 4.2's): the native parts stop with the allocator or "
              + "at JVM exit, not when the application ends",
          e);
      return null;
    }
  }

  /**
   * The last executor id the allocator handed out, or {@link #UNKNOWN_EXECUTOR_ID} (with an ERROR,
   * logged once per JVM) when this Spark line has no such counter.
   */
  static int lastExecutorId(ExecutorPodsAllocator allocator) {
    try {
      return allocator.EXECUTOR_ID_COUNTER().get();
    } catch (LinkageError e) {
      if (REPORTED_MISSING_COUNTER.compareAndSet(false, true)) {
        LOG.error(
            "Spark's ExecutorPodsAllocator.EXECUTOR_ID_COUNTER is missing on this Spark line: executor "
                + "Services are not ensured while the native informer is off",
            e);
      }
      return UNKNOWN_EXECUTOR_ID;
    }
  }

  /**
   * Spark's {@code requestNewExecutors}, with the signature {@link NativeExecutorPodsAllocator}
   * overrides.
   */
  static Method requestNewExecutorsMethod() throws NoSuchMethodException {
    return ExecutorPodsAllocator.class.getDeclaredMethod(
        "requestNewExecutors",
        int.class,
        String.class,
        int.class,
        scala.collection.immutable.Set.class);
  }

  /**
   * Whether Spark calls {@link NativeExecutorPodsAllocator}'s override of {@code
   * requestNewExecutors}; when it does not, an ERROR says what that costs.
   */
  static boolean requestNewExecutorsIsOverridden() {
    try {
      requestNewExecutorsMethod();
      return true;
    } catch (NoSuchMethodException | RuntimeException e) {
      LOG.error(
          "Spark's ExecutorPodsAllocator.requestNewExecutors has another signature on this Spark line, so "
              + "the allocator's override is never called: executor Services are not ensured while the native informer "
              + "is off (turn spark.kubernetes.executor.enableInformer on, or use a build for this Spark line)",
          e);
      return false;
    }
  }

  /**
   * Registers the source with the driver's metrics system; false (with a WARN) when there is no
   * SparkEnv yet or this Spark line's metrics system cannot be reached.
   */
  static boolean registerMetricsSource(Source source) {
    SparkEnv env = SparkEnv.get();
    if (env == null) {
      LOG.warn("No SparkEnv: metrics source {} is not registered", source.sourceName());
      return false;
    }
    try {
      env.metricsSystem().registerSource(source);
      return true;
    } catch (LinkageError | RuntimeException e) {
      LOG.warn(
          "Could not register metrics source {} with Spark's metrics system",
          source.sourceName(),
          e);
      return false;
    }
  }

  /** Removes a source registered by {@link #registerMetricsSource}; a failure is logged. */
  static void removeMetricsSource(Source source) {
    SparkEnv env = SparkEnv.get();
    if (env == null) {
      LOG.debug("No SparkEnv any more: metrics source {} goes with it", source.sourceName());
      return;
    }
    try {
      env.metricsSystem().removeSource(source);
    } catch (LinkageError | RuntimeException e) {
      LOG.warn(
          "Could not remove metrics source {} from Spark's metrics system", source.sourceName(), e);
    }
  }
}

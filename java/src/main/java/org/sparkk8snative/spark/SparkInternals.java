package org.sparkk8snative.spark;

import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.SparkContext;
import org.apache.spark.SparkEnv;
import org.apache.spark.metrics.source.Source;
import org.apache.spark.scheduler.cluster.k8s.KubernetesClusterSchedulerBackend;
import org.apache.spark.util.ShutdownHookManager;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import scala.runtime.AbstractFunction0;
import scala.runtime.BoxedUnit;

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
 *   <li><b>{@code SparkEnv.metricsSystem()} and {@code MetricsSystem.registerSource / removeSource}
 *       </b> ({@code MetricsSystem} is {@code private[spark]}), called directly. Why: to publish
 *       the informer's gauges through whatever sink the operator configured. If they are missing: a
 *       WARN, and no metrics.
 *   <li><b>{@code org.apache.spark.util.ShutdownHookManager.addShutdownHook(int, Function0)} and
 *       {@code removeShutdownHook(Object)}</b> ({@code private[spark]}), called directly. Why: the
 *       native parts stop at JVM exit after the SparkContext's own hook, and a stopped driver's
 *       hook is removed (a JVM hook per SparkContext would keep every stopped allocator alive). If
 *       they are missing: a WARN, and a plain JVM shutdown hook, removed the same way.
 *   <li><b>{@code org.apache.spark.deploy.k8s.Config.KUBERNETES_EXECUTOR_CHECK_ALL_CONTAINERS()}
 *       </b> ({@code private[spark]}), its default read directly. Why: the informer classifies pods
 *       as the driver's Spark does, and this key's default is {@code false} on 3.5 and {@code true}
 *       from 4.0. If it is missing: a WARN, and the native side's default ({@code false}).
 * </ol>
 */
final class SparkInternals {
  private static final Logger LOG = LoggerFactory.getLogger(SparkInternals.class);

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
   * Priority of the native parts' shutdown hook: below the SparkContext's (50), so that a context
   * stopped at JVM exit stops them first, the normal way.
   */
  private static final int SHUTDOWN_HOOK_PRIORITY = 40;

  /**
   * Runs {@code hook} at JVM exit through Spark's shutdown hooks; returns what {@link
   * #removeShutdownHook} takes.
   */
  static Object addShutdownHook(Runnable hook) {
    try {
      return ShutdownHookManager.addShutdownHook(
          SHUTDOWN_HOOK_PRIORITY,
          new AbstractFunction0<BoxedUnit>() {
            @Override
            public BoxedUnit apply() {
              hook.run();
              return BoxedUnit.UNIT;
            }
          });
    } catch (LinkageError | RuntimeException e) {
      LOG.warn(
          "Spark's ShutdownHookManager cannot be reached: a plain JVM shutdown hook instead", e);
      Thread thread = new Thread(hook, "spark-k8s-native-shutdown");
      Runtime.getRuntime().addShutdownHook(thread);
      return thread;
    }
  }

  /**
   * This Spark's default of {@code spark.kubernetes.executor.checkAllContainers}, or {@code null}
   * (logged) when its config entry cannot be read.
   */
  static String checkAllContainersDefault() {
    try {
      return org.apache.spark.deploy.k8s.Config.KUBERNETES_EXECUTOR_CHECK_ALL_CONTAINERS()
          .defaultValueString();
    } catch (LinkageError e) {
      LOG.warn(
          "Spark's default of spark.kubernetes.executor.checkAllContainers cannot be read ({}); the "
              + "informer classifies executor pods as if it were false unless it is set",
          e.toString());
      return null;
    }
  }

  /** Removes a hook {@link #addShutdownHook} returned; harmless during shutdown. */
  static void removeShutdownHook(Object hook) {
    try {
      if (hook instanceof Thread) {
        Runtime.getRuntime().removeShutdownHook((Thread) hook);
      } else {
        ShutdownHookManager.removeShutdownHook(hook);
      }
    } catch (IllegalStateException shuttingDown) {
      LOG.debug("The JVM is shutting down: its hooks run anyway", shuttingDown);
    } catch (LinkageError | RuntimeException e) {
      LOG.warn("Could not remove the native parts' shutdown hook", e);
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

package org.sparkk8snative.spark;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.spark.SparkContext;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerApplicationEnd;
import org.apache.spark.scheduler.SparkListenerApplicationStart;
import org.apache.spark.scheduler.cluster.k8s.KubernetesClusterSchedulerBackend;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs the native parts' callbacks at the driver's milestones: when the application starts (it has
 * its id then, which Spark names metrics sources after), and when it ends or the JVM exits. The end
 * matters because Spark calls the allocator's {@code stop} only when {@code
 * spark.kubernetes.executor.deleteOnTermination} is true.
 */
final class DriverLifecycle {
  private static final Logger LOG = LoggerFactory.getLogger(DriverLifecycle.class);

  /** Shutdown hooks registered and not removed yet: one per running driver's native parts. */
  private static final AtomicInteger REGISTERED_HOOKS = new AtomicInteger();

  private DriverLifecycle() {}

  /**
   * Follows the driver of {@code backend}: {@code onApplicationStart} runs when the application
   * starts (at once if the SparkContext cannot be reached), {@code onEnd} when it ends and at JVM
   * exit, through Spark's shutdown hooks, after the SparkContext's own (so it must be idempotent).
   * A callback's failure is logged.
   *
   * @return what runs {@code onEnd} and removes the shutdown hook: the caller's own stop, so that a
   *     stopped driver leaves no hook (and nothing it holds) behind in the JVM
   */
  static Runnable follow(
      KubernetesClusterSchedulerBackend backend, Runnable onApplicationStart, Runnable onEnd) {
    AtomicReference<Object> hook = new AtomicReference<>();
    Runnable end =
        () -> {
          try {
            onEnd.run();
          } finally {
            Object registered = hook.getAndSet(null);
            if (registered != null) {
              SparkInternals.removeShutdownHook(registered);
              REGISTERED_HOOKS.decrementAndGet();
            }
          }
        };
    SparkContext context = SparkInternals.sparkContextOf(backend);
    if (context != null) {
      context.addSparkListener(
          new SparkListener() {
            @Override
            public void onApplicationStart(SparkListenerApplicationStart start) {
              run("application start", onApplicationStart);
            }

            @Override
            public void onApplicationEnd(SparkListenerApplicationEnd applicationEnd) {
              run("application end", end);
            }
          });
    } else {
      run("allocator start, for want of the SparkContext", onApplicationStart);
    }
    hook.set(SparkInternals.addShutdownHook(() -> run("JVM exit", onEnd)));
    REGISTERED_HOOKS.incrementAndGet();
    return () -> run("allocator stop", end);
  }

  /** Shutdown hooks of drivers not stopped yet (a stopped driver must leave none). */
  static int registeredShutdownHooks() {
    return REGISTERED_HOOKS.get();
  }

  private static void run(String milestone, Runnable callback) {
    try {
      callback.run();
    } catch (RuntimeException e) {
      LOG.warn("The native parts failed to follow the driver at {}", milestone, e);
    }
  }
}

package org.sparkk8snative.node;

import java.lang.reflect.Field;
import org.apache.spark.SparkContext;
import org.apache.spark.scheduler.cluster.k8s.KubernetesClusterSchedulerBackend;

/** The parts Spark's Kubernetes scheduler backend holds privately, for tests and the demo. */
public final class SparkBackendParts {
  private SparkBackendParts() {}

  /**
   * The backend's part that is a {@code type} (its allocator, declared as an AbstractPodsAllocator;
   * its lifecycle manager, ...).
   */
  public static <T> T of(SparkContext sc, Class<T> type) {
    KubernetesClusterSchedulerBackend backend =
        (KubernetesClusterSchedulerBackend) sc.schedulerBackend();
    for (Field f : KubernetesClusterSchedulerBackend.class.getDeclaredFields()) {
      if (f.getType().isPrimitive()) {
        continue;
      }
      try {
        f.setAccessible(true);
        Object part = f.get(backend);
        if (type.isInstance(part)) {
          return type.cast(part);
        }
      } catch (IllegalAccessException | RuntimeException e) {
        // not one of the parts: JDK or Scala internals that refuse reflection
      }
    }
    throw new IllegalStateException("no " + type.getSimpleName() + " in the scheduler backend");
  }
}

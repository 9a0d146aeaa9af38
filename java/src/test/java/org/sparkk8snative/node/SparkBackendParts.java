package org.sparkk8snative.node;

import java.lang.reflect.Field;
import java.util.function.Consumer;
import org.apache.spark.SparkContext;
import org.apache.spark.scheduler.cluster.k8s.ExecutorPodState;
import org.apache.spark.scheduler.cluster.k8s.ExecutorPodsSnapshot;
import org.apache.spark.scheduler.cluster.k8s.ExecutorPodsSnapshotsStore;
import org.apache.spark.scheduler.cluster.k8s.KubernetesClusterSchedulerBackend;
import scala.jdk.javaapi.CollectionConverters;

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

  /**
   * Calls {@code each} with every executor pod state of every snapshot Spark's snapshot store hands
   * its subscribers from now on (a subscriber of its own, next to the lifecycle manager and the
   * allocator).
   */
  public static void onEveryPodState(SparkContext sc, Consumer<ExecutorPodState> each) {
    of(sc, ExecutorPodsSnapshotsStore.class)
        .addSubscriber(
            50L,
            snapshots -> {
              for (ExecutorPodsSnapshot snapshot : CollectionConverters.asJava(snapshots)) {
                snapshot
                    .executorPods()
                    .values()
                    .foreach(
                        state -> {
                          each.accept(state);
                          return null;
                        });
              }
              return null;
            });
  }
}

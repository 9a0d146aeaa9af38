package org.sparkk8snative.spark;

import io.fabric8.kubernetes.client.KubernetesClient;
import org.apache.spark.SecurityManager;
import org.apache.spark.SparkConf;
import org.apache.spark.scheduler.cluster.k8s.ExecutorPodsAllocator;
import org.apache.spark.scheduler.cluster.k8s.ExecutorPodsSnapshotsStore;
import org.apache.spark.scheduler.cluster.k8s.KubernetesClusterSchedulerBackend;
import org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBuilder;
import org.apache.spark.util.Clock;

/**
 * The drop-in for unmodified Spark 4.x: set {@code
 * spark.kubernetes.allocation.pods.allocator=org.sparkk8snative.spark.NativeExecutorPodsAllocator}.
 * It is Spark's own allocator (Spark's backend checks {@code instanceof ExecutorPodsAllocator}),
 * plus, with {@code spark.kubernetes.executor.enableInformer=true}: it turns Spark's watch and
 * polling sources off (Spark reads their switches when it constructs them, right after this
 * allocator) and runs the native informer and lister sources instead. With the flag off it is
 * exactly Spark's allocator, unless executor Services are on, which it then ensures for the
 * executors it requests.
 *
 * <p>Only what has to be in Spark's subclass is here; the work is done by {@link
 * SnapshotSourceMode}, {@link ExecutorServicesConf}, {@link NativeApplicationParts} and {@link
 * DriverLifecycle}.
 */
public class NativeExecutorPodsAllocator extends ExecutorPodsAllocator {
  private final SparkConf conf;
  private final ExecutorPodsSnapshotsStore store;
  private final SnapshotSourceMode mode;

  /** What runs beside Spark's allocation once started, or null. */
  private volatile NativeApplicationParts parts;

  /** Spark's constructor; the conf is adjusted here because Spark reads it right after. */
  public NativeExecutorPodsAllocator(
      SparkConf conf,
      SecurityManager secMgr,
      KubernetesExecutorBuilder executorBuilder,
      KubernetesClient kubernetesClient,
      ExecutorPodsSnapshotsStore snapshotsStore,
      Clock clock) {
    super(conf, secMgr, executorBuilder, kubernetesClient, snapshotsStore, clock);
    this.conf = conf;
    this.store = snapshotsStore;
    this.mode = SnapshotSourceMode.apply(conf);
    ExecutorServicesConf.prepareDriver(conf);
  }

  @Override
  public void start(String applicationId, KubernetesClusterSchedulerBackend schedulerBackend) {
    super.start(applicationId, schedulerBackend);
    NativeApplicationParts started = NativeApplicationParts.start(mode, conf, store, applicationId);
    if (started != null) {
      parts = started;
      DriverLifecycle.follow(schedulerBackend, started::applicationStarted, started::stop);
    }
  }

  /** Creates executor pods as Spark does; then, with the informer off, ensures their Services. */
  @Override
  public void requestNewExecutors(
      int numExecutorsToAllocate,
      String applicationId,
      int resourceProfileId,
      scala.collection.immutable.Set<String> pvcsInUse) {
    NativeApplicationParts running = parts;
    ExecutorServicesWithoutInformer services =
        running == null ? null : running.servicesWithoutInformer();
    if (services == null) {
      super.requestNewExecutors(
          numExecutorsToAllocate, applicationId, resourceProfileId, pvcsInUse);
      return;
    }
    int lastIdBefore = SparkInternals.lastExecutorId(this);
    super.requestNewExecutors(numExecutorsToAllocate, applicationId, resourceProfileId, pvcsInUse);
    services.ensureNewExecutors(lastIdBefore, SparkInternals.lastExecutorId(this));
  }

  @Override
  public void stop(String applicationId) {
    NativeApplicationParts running = parts;
    try {
      if (running != null) {
        running.stop();
      }
    } finally {
      super.stop(applicationId);
    }
  }
}

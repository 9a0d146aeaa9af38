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
 * The drop-in for unmodified Spark 3.5 and 4.x: set {@code
 * spark.kubernetes.allocation.pods.allocator=org.sparkk8snative.spark.NativeExecutorPodsAllocator}.
 * It is Spark's own allocator (Spark 4.2's backend checks {@code instanceof
 * ExecutorPodsAllocator}), plus, with {@code spark.kubernetes.executor.enableInformer=true}: it
 * turns Spark's watch and polling sources off (Spark reads their switches when it constructs them,
 * right after this allocator) and runs the native informer and lister sources instead. With
 * executor Services on, it runs the application's Services, which its feature step ensures as Spark
 * builds executor pods. With both off it is exactly Spark's allocator.
 *
 * <p>It overrides only {@code start} and {@code stop}, whose signatures are the same on every Spark
 * line: an override of a method whose parameter types differ between lines (as {@code
 * requestNewExecutors}' do) would silently never run on some of them.
 *
 * <p>Only what has to be in Spark's subclass is here; the work is done by {@link
 * SnapshotSourceMode}, {@link ExecutorServicesConf}, {@link NativeApplicationParts} and {@link
 * DriverLifecycle}.
 */
public class NativeExecutorPodsAllocator extends ExecutorPodsAllocator {
  private final SparkConf conf;
  private final ExecutorPodsSnapshotsStore store;
  private final SnapshotSourceMode mode;

  /** Stops what runs beside Spark's allocation, once started; null before. */
  private volatile Runnable stopParts;

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
      stopParts =
          DriverLifecycle.follow(schedulerBackend, started::applicationStarted, started::stop);
    }
  }

  @Override
  public void stop(String applicationId) {
    Runnable running = stopParts;
    try {
      if (running != null) {
        running.run();
      }
    } finally {
      super.stop(applicationId);
    }
  }
}

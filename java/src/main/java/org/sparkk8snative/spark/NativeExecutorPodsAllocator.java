package org.sparkk8snative.spark;

import io.fabric8.kubernetes.client.KubernetesClient;
import java.lang.reflect.Field;
import org.apache.spark.SecurityManager;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkContext;
import org.apache.spark.SparkEnv;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerApplicationEnd;
import org.apache.spark.scheduler.cluster.k8s.ExecutorPodsAllocator;
import org.apache.spark.scheduler.cluster.k8s.ExecutorPodsSnapshotsStore;
import org.apache.spark.scheduler.cluster.k8s.KubernetesClusterSchedulerBackend;
import org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBuilder;
import org.apache.spark.util.Clock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.sparkk8snative.NativeLibrary;

/**
 * The drop-in for unmodified Spark 4.x: set {@code
 * spark.kubernetes.allocation.pods.allocator=org.sparkk8snative.spark.NativeExecutorPodsAllocator}.
 * It is Spark's own allocator (Spark's backend checks {@code instanceof ExecutorPodsAllocator}),
 * plus, with {@code spark.kubernetes.executor.enableInformer=true}: it turns Spark's watch and
 * polling sources off (Spark reads their switches when it constructs them, right after this
 * allocator) and runs the native informer and lister sources instead. With the flag off it is
 * exactly Spark's allocator.
 */
public class NativeExecutorPodsAllocator extends ExecutorPodsAllocator {
  private static final Logger LOG = LoggerFactory.getLogger(NativeExecutorPodsAllocator.class);

  private final SparkConf conf;
  private final ExecutorPodsSnapshotsStore store;
  private final SnapshotSourceMode mode;
  private NativeSnapshotSources sources;
  private NativeInformerMetricsSource metrics;

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
  }

  @Override
  public void start(String applicationId, KubernetesClusterSchedulerBackend schedulerBackend) {
    super.start(applicationId, schedulerBackend);
    if (mode != SnapshotSourceMode.NATIVE) {
      return;
    }
    NativeSnapshotSources created = NativeSnapshotSources.create(conf, store);
    created.start(applicationId);
    synchronized (this) {
      sources = created;
    }
    LOG.info("Executor pods of {} are tracked by the native informer and lister ({}): Spark's watch and "
            + "polling sources are off; snapshots every {} ms from the local cache",
        applicationId, NativeLibrary.nativeVersion(), NativeSnapshotSources.listerIntervalMillis(conf));
    registerMetrics(created);
    stopWithTheDriver(schedulerBackend);
  }

  @Override
  public void stop(String applicationId) {
    try {
      stopNative();
    } finally {
      super.stop(applicationId);
    }
  }

  /** The native sources, or null when the informer is off or not started. */
  public synchronized NativeSnapshotSources nativeSources() {
    return sources;
  }

  /** Stops the native sources; idempotent. */
  public void stopNative() {
    NativeSnapshotSources toStop;
    NativeInformerMetricsSource toRemove;
    synchronized (this) {
      toStop = sources;
      toRemove = metrics;
      sources = null;
      metrics = null;
    }
    if (toStop == null) {
      return;
    }
    toStop.stop();
    SparkEnv env = SparkEnv.get();
    if (toRemove != null && env != null) {
      env.metricsSystem().removeSource(toRemove);
    }
    LOG.info("Native executor pod informer and lister stopped");
  }

  private void registerMetrics(NativeSnapshotSources started) {
    SparkEnv env = SparkEnv.get();
    if (env == null) {
      return;
    }
    NativeInformerMetricsSource source = new NativeInformerMetricsSource(started);
    env.metricsSystem().registerSource(source);
    synchronized (this) {
      metrics = source;
    }
  }

  /**
   * Spark calls the allocator's stop only when spark.kubernetes.executor.deleteOnTermination is
   * true, so the native sources also stop at the end of the application, and at JVM exit.
   */
  private void stopWithTheDriver(KubernetesClusterSchedulerBackend backend) {
    SparkContext sc = sparkContextOf(backend);
    if (sc != null) {
      sc.addSparkListener(new SparkListener() {
        @Override
        public void onApplicationEnd(SparkListenerApplicationEnd end) {
          stopNative();
        }
      });
    } else {
      LOG.warn("Could not find the SparkContext of the scheduler backend: the native informer stops with the "
          + "allocator or at JVM exit");
    }
    Runtime.getRuntime().addShutdownHook(new Thread(this::stopNative, "spark-k8s-native-shutdown"));
  }

  /** The backend's SparkContext: a constructor field of KubernetesClusterSchedulerBackend. */
  private static SparkContext sparkContextOf(KubernetesClusterSchedulerBackend backend) {
    for (Field field : KubernetesClusterSchedulerBackend.class.getDeclaredFields()) {
      if (SparkContext.class.isAssignableFrom(field.getType())) {
        try {
          field.setAccessible(true);
          return (SparkContext) field.get(backend);
        } catch (ReflectiveOperationException | RuntimeException e) {
          return null;
        }
      }
    }
    return null;
  }
}

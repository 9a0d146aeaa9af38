package org.sparkk8snative.spark;

import io.fabric8.kubernetes.client.KubernetesClient;
import java.lang.reflect.Field;
import org.apache.spark.SecurityManager;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkContext;
import org.apache.spark.SparkEnv;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerApplicationEnd;
import org.apache.spark.scheduler.SparkListenerApplicationStart;
import org.apache.spark.scheduler.cluster.k8s.ExecutorPodsAllocator;
import org.apache.spark.scheduler.cluster.k8s.ExecutorPodsSnapshotsStore;
import org.apache.spark.scheduler.cluster.k8s.KubernetesClusterSchedulerBackend;
import org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBuilder;
import org.apache.spark.util.Clock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.sparkk8snative.NativeExecutorServices;
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
  /** Executor Services when the informer is off (then this allocator ensures them). */
  private NativeExecutorServices servicesWithoutInformer;

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
    enableExecutorServices(conf);
  }

  /** Spark's key of custom executor feature steps. */
  static final String EXECUTOR_FEATURE_STEPS = "spark.kubernetes.executor.pod.featureSteps";

  /**
   * With spark.kubernetes.executor.enableService=true: fails driver start-up now if the block
   * manager port is not fixed, and adds the feature step that makes executors advertise their
   * Service (Spark reads the feature steps each time it builds an executor pod).
   */
  static void enableExecutorServices(SparkConf conf) {
    if (!conf.getBoolean(ExecutorServiceFeatureStep.ENABLE_SERVICE, false)) {
      return;
    }
    ExecutorServiceFeatureStep.requireBlockManagerPort(conf);
    String step = ExecutorServiceFeatureStep.class.getName();
    String steps = conf.get(EXECUTOR_FEATURE_STEPS, "").trim();
    if (!java.util.Arrays.asList(steps.split("\\s*,\\s*")).contains(step)) {
      conf.set(EXECUTOR_FEATURE_STEPS, steps.isEmpty() ? step : steps + "," + step);
    }
  }

  @Override
  public void start(String applicationId, KubernetesClusterSchedulerBackend schedulerBackend) {
    super.start(applicationId, schedulerBackend);
    if (mode != SnapshotSourceMode.NATIVE) {
      if (conf.getBoolean(ExecutorServiceFeatureStep.ENABLE_SERVICE, false)) {
        NativeExecutorServices services = NativeExecutorServices.create(NativeSnapshotSources.toMap(conf), applicationId);
        synchronized (this) {
          servicesWithoutInformer = services;
        }
        LOG.info("Executor Services of {} are ensured as executor pods are created (the native informer is off)",
            applicationId);
        followTheDriver(schedulerBackend, null);
      }
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
    followTheDriver(schedulerBackend, created);
  }

  /** Creates executor pods as Spark does; then, with the informer off, ensures their Services. */
  @Override
  public void requestNewExecutors(
      int numExecutorsToAllocate, String applicationId, int resourceProfileId, scala.collection.immutable.Set<String> pvcsInUse) {
    int before = EXECUTOR_ID_COUNTER().get();
    super.requestNewExecutors(numExecutorsToAllocate, applicationId, resourceProfileId, pvcsInUse);
    int after = EXECUTOR_ID_COUNTER().get();
    NativeExecutorServices services;
    synchronized (this) {
      services = servicesWithoutInformer;
    }
    if (services == null || after <= before) {
      return;
    }
    java.util.List<String> ids = new java.util.ArrayList<>();
    for (int id = before + 1; id <= after; id++) {
      ids.add(Integer.toString(id));
    }
    try {
      services.ensure(ids);
    } catch (RuntimeException e) {
      // A Service failure must not stop allocation: the executor works without it, only slower to fail.
      LOG.warn("Could not ensure the executor Services of executors {}: {}", ids, e.getMessage());
    }
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
    NativeExecutorServices services;
    synchronized (this) {
      toStop = sources;
      toRemove = metrics;
      services = servicesWithoutInformer;
      sources = null;
      metrics = null;
      servicesWithoutInformer = null;
    }
    if (services != null) {
      services.close();
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
    synchronized (this) {
      if (env == null || sources != started || metrics != null) {
        return; // stopped meanwhile, or already registered
      }
    }
    NativeInformerMetricsSource source = new NativeInformerMetricsSource(started);
    env.metricsSystem().registerSource(source);
    synchronized (this) {
      metrics = source;
    }
  }

  /**
   * Registers the metrics once the application has its id (Spark names sources after it), and
   * stops the native sources when the application ends: Spark calls the allocator's stop only when
   * spark.kubernetes.executor.deleteOnTermination is true. JVM exit stops them too.
   */
  private void followTheDriver(KubernetesClusterSchedulerBackend backend, NativeSnapshotSources started) {
    SparkContext sc = sparkContextOf(backend);
    if (sc != null) {
      sc.addSparkListener(new SparkListener() {
        @Override
        public void onApplicationStart(SparkListenerApplicationStart start) {
          if (started != null) {
            registerMetrics(started);
          }
        }

        @Override
        public void onApplicationEnd(SparkListenerApplicationEnd end) {
          stopNative();
        }
      });
    } else {
      LOG.warn("Could not find the SparkContext of the scheduler backend: the native sources stop with the "
          + "allocator or at JVM exit");
      if (started != null) {
        registerMetrics(started);
      }
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

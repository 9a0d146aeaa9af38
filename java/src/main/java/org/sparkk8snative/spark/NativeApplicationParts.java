package org.sparkk8snative.spark;

import org.apache.spark.SparkConf;
import org.apache.spark.scheduler.cluster.k8s.ExecutorPodsSnapshotsStore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.sparkk8snative.NativeLibrary;

/**
 * What the allocator runs beside Spark's own allocation for one application, as the mode and the
 * conf ask: the native snapshot sources and their metrics (informer on), and the executor Services
 * (Services on, following the informer or Spark's snapshots). Stopped once, by whichever comes
 * first of the allocator's stop, the application's end and JVM exit.
 */
final class NativeApplicationParts {
  private static final Logger LOG = LoggerFactory.getLogger(NativeApplicationParts.class);

  private final String applicationId;

  /** With the informer on: the sources and their metrics; otherwise null. */
  private final NativeSnapshotSources sources;

  private final NativeMetricsRegistration metrics;

  /** With Services on; otherwise null. */
  private final ApplicationExecutorServices services;

  private boolean stopped;

  private NativeApplicationParts(
      String applicationId, NativeSnapshotSources sources, ApplicationExecutorServices services) {
    this.applicationId = applicationId;
    this.sources = sources;
    this.metrics = sources == null ? null : new NativeMetricsRegistration(sources);
    this.services = services;
  }

  /**
   * Starts what {@code mode} and the conf ask for; null when that is nothing, and the allocator is
   * then exactly Spark's.
   *
   * @throws IllegalArgumentException naming a key the native side cannot use
   */
  static NativeApplicationParts start(
      SnapshotSourceMode mode,
      SparkConf conf,
      ExecutorPodsSnapshotsStore store,
      String applicationId) {
    boolean withServices = ExecutorServicesConf.enabled(conf);
    if (mode == SnapshotSourceMode.NATIVE) {
      NativeSnapshotSources sources = NativeSnapshotSources.create(conf, store);
      sources.start(applicationId);
      ApplicationExecutorServices services = null;
      try {
        if (withServices) {
          services =
              ApplicationExecutorServices.followingInformer(sources.informer(), applicationId);
        }
      } catch (RuntimeException e) {
        sources.stop();
        throw e;
      }
      LOG.info(
          "Executor pods of {} are tracked by the native informer and lister ({}): Spark's watch and "
              + "polling sources are off; snapshots every {} ms from the local cache",
          applicationId,
          NativeLibrary.nativeVersion(),
          NativeSnapshotSources.listerIntervalMillis(conf));
      return new NativeApplicationParts(applicationId, sources, services);
    }
    if (withServices) {
      return new NativeApplicationParts(
          applicationId,
          null,
          ApplicationExecutorServices.followingSparkSnapshots(conf, store, applicationId));
    }
    return null;
  }

  /** The application has its id: the metrics source, named after it, can be registered. */
  void applicationStarted() {
    if (metrics != null) {
      metrics.register();
    }
  }

  /** Stops every part, each whatever became of the others; idempotent. */
  void stop() {
    synchronized (this) {
      if (stopped) {
        return;
      }
      stopped = true;
    }
    if (services != null) {
      try {
        services.close();
      } catch (RuntimeException e) {
        LOG.warn("Could not close the executor Services of {}", applicationId, e);
      }
    }
    if (sources != null) {
      try {
        sources.stop();
        LOG.info("Native executor pod informer and lister of {} stopped", applicationId);
      } catch (RuntimeException e) {
        LOG.warn("Could not stop the native informer and lister of {}", applicationId, e);
      } finally {
        metrics.remove();
      }
    }
  }
}

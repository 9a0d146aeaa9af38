package org.sparkk8snative.bench;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.informers.ResourceEventHandler;
import io.fabric8.kubernetes.client.informers.SharedIndexInformer;
import io.fabric8.kubernetes.client.informers.cache.Lister;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.apache.spark.SparkConf;
import org.apache.spark.deploy.k8s.Constants;
import org.apache.spark.scheduler.cluster.k8s.ExecutorPodsPollingSnapshotSource;
import org.apache.spark.scheduler.cluster.k8s.ExecutorPodsSnapshotsStore;
import org.apache.spark.scheduler.cluster.k8s.ExecutorPodsWatchSnapshotSource;
import org.sparkk8snative.spark.NativeListerSnapshotSource;
import org.sparkk8snative.spark.NativeSnapshotSources;
import scala.jdk.javaapi.CollectionConverters;

/** One way for a driver to keep Spark's snapshot store fed with its executor pods. */
interface Contender {
  void start(String applicationId);

  void stop();

  /** The native lister's last round, for the native contender only. */
  default NativeListerSnapshotSource.Round lastListerRound() {
    return null;
  }

  /** A driver's Kubernetes client, made by Spark's own factory from the driver's conf. */
  static KubernetesClient driverClient(org.sparkk8snative.TestPlane plane, SparkConf conf) {
    return org.apache.spark.deploy.k8s.SparkKubernetesClientFactory.createKubernetesClient(
        plane.apiserverUrl(),
        scala.Option.apply(plane.namespace()),
        "spark.kubernetes.authenticate",
        org.apache.spark.deploy.k8s.SparkKubernetesClientFactory.ClientType$.MODULE$.Driver(),
        conf,
        scala.Option.empty());
  }

  static Contender create(
      String name, SparkConf conf, KubernetesClient client, ExecutorPodsSnapshotsStore store) {
    return switch (name) {
      case "legacy" -> new Legacy(conf, client, store);
      case "fabric8" -> new Fabric8Informer(conf, client, store);
      case "native" -> new Native(conf, store);
      default -> throw new IllegalArgumentException("unknown contender " + name);
    };
  }

  /** Spark 4.x's own sources: a fabric8 watch plus a LIST every apiPollingInterval. */
  final class Legacy implements Contender {
    private final ExecutorPodsWatchSnapshotSource watch;
    private final ExecutorPodsPollingSnapshotSource polling;
    private final ScheduledExecutorService pollingExecutor =
        Executors.newSingleThreadScheduledExecutor();

    Legacy(SparkConf conf, KubernetesClient client, ExecutorPodsSnapshotsStore store) {
      this.watch = new ExecutorPodsWatchSnapshotSource(store, client, conf);
      this.polling = new ExecutorPodsPollingSnapshotSource(conf, client, store, pollingExecutor);
    }

    @Override
    public void start(String applicationId) {
      watch.start(applicationId);
      polling.start(applicationId);
    }

    @Override
    public void stop() {
      polling.stop();
      watch.stop();
      pollingExecutor.shutdownNow();
    }
  }

  /**
   * The design of Spark's informer pull request (SPARK-33737), written here with Spark's fabric8: a
   * SharedIndexInformer on the watch source's selector feeding updatePod, and its Lister feeding
   * replaceSnapshot every listerPollingInterval once synced (never from an unsynced cache), the
   * first round right after the sync.
   */
  final class Fabric8Informer implements Contender {
    private final KubernetesClient client;
    private final ExecutorPodsSnapshotsStore store;
    private final long listerIntervalMillis;
    private final ScheduledExecutorService listerExecutor =
        Executors.newSingleThreadScheduledExecutor();
    private SharedIndexInformer<Pod> informer;

    Fabric8Informer(SparkConf conf, KubernetesClient client, ExecutorPodsSnapshotsStore store) {
      this.client = client;
      this.store = store;
      this.listerIntervalMillis =
          conf.getTimeAsMs(
              org.sparkk8snative.ConfigKeys.LISTER_POLLING_INTERVAL,
              org.sparkk8snative.ConfigKeys.LISTER_POLLING_INTERVAL_DEFAULT);
    }

    @Override
    public void start(String applicationId) {
      informer =
          client
              .pods()
              .inNamespace(client.getNamespace())
              .withLabel(Constants.SPARK_APP_ID_LABEL(), applicationId)
              .withLabel(Constants.SPARK_ROLE_LABEL(), Constants.SPARK_POD_EXECUTOR_ROLE())
              .withoutLabel(Constants.SPARK_EXECUTOR_INACTIVE_LABEL(), "true")
              .runnableInformer(0);
      informer.addEventHandler(
          new ResourceEventHandler<>() {
            @Override
            public void onAdd(Pod pod) {
              store.updatePod(pod);
            }

            @Override
            public void onUpdate(Pod oldPod, Pod newPod) {
              store.updatePod(newPod);
            }

            @Override
            public void onDelete(Pod pod, boolean deletedFinalStateUnknown) {
              store.updatePod(pod);
            }
          });
      Lister<Pod> lister = new Lister<>(informer.getIndexer(), client.getNamespace());
      informer
          .start()
          .thenRun(
              () ->
                  listerExecutor.scheduleWithFixedDelay(
                      () -> {
                        if (informer.hasSynced()) {
                          store.replaceSnapshot(
                              CollectionConverters.asScala(lister.list()).toSeq());
                        }
                      },
                      0,
                      listerIntervalMillis,
                      TimeUnit.MILLISECONDS));
    }

    @Override
    public void stop() {
      listerExecutor.shutdownNow();
      informer.stop();
    }
  }

  /** This project, through its Java sources. */
  final class Native implements Contender {
    private final NativeSnapshotSources sources;

    Native(SparkConf conf, ExecutorPodsSnapshotsStore store) {
      this.sources = NativeSnapshotSources.create(conf, store);
    }

    @Override
    public void start(String applicationId) {
      sources.start(applicationId);
    }

    @Override
    public void stop() {
      sources.stop();
    }

    @Override
    public NativeListerSnapshotSource.Round lastListerRound() {
      return sources.listerSource().lastRound();
    }
  }
}

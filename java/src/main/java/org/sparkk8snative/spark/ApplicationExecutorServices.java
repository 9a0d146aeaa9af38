package org.sparkk8snative.spark;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.spark.SparkConf;
import org.apache.spark.scheduler.cluster.k8s.ExecutorPodState;
import org.apache.spark.scheduler.cluster.k8s.ExecutorPodsSnapshot;
import org.apache.spark.scheduler.cluster.k8s.ExecutorPodsSnapshotsStore;
import org.apache.spark.scheduler.cluster.k8s.PodDeleted;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.sparkk8snative.NativeExecutorServices;
import org.sparkk8snative.NativeInformer;
import scala.Tuple2;

/**
 * The executor Services of one running application, which {@link ExecutorServiceFeatureStep} asks
 * for before it lets an executor advertise its Service's name: an executor is advertised by that
 * name only once its Service exists, so a Service that cannot be created (a missing right, a quota,
 * an apiserver that is down) leaves that executor reachable at its pod IP, only slower to be given
 * up on by its peers when it is gone.
 *
 * <p>One native Service controller per application does the work, fed by whoever sees the pods:
 * with the native informer on, the informer itself (it also deletes a gone executor's Service after
 * {@code spark.kubernetes.native.service.deleteAfter}); with Spark's own sources, this class
 * reports the executors that Spark's snapshots show deleted. No override of Spark's allocator
 * methods is involved, so every Spark line takes the same path.
 */
final class ApplicationExecutorServices implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(ApplicationExecutorServices.class);

  /** The running applications' Services, by application id: feature steps are built by Spark. */
  private static final Map<String, ApplicationExecutorServices> RUNNING = new ConcurrentHashMap<>();

  /** How often Spark hands the snapshots to the subscriber that reports deleted executors. */
  private static final long SNAPSHOT_BATCH_MILLIS = 1_000;

  private final NativeExecutorServices services;
  private final String applicationId;

  /** Executors reported gone (informer off): each is reported once. */
  private final Set<String> reportedGone = new HashSet<>();

  /** Executors whose pods the previous snapshot showed, not deleted (informer off). */
  private Set<String> present = new HashSet<>();

  private ApplicationExecutorServices(NativeExecutorServices services, String applicationId) {
    this.services = services;
    this.applicationId = applicationId;
  }

  /**
   * The Services of an application whose executor pods the native informer tracks: its Service
   * controller is the informer's.
   *
   * @throws RuntimeException from the native side, e.g. naming the rights on Services the driver
   *     lacks
   */
  static ApplicationExecutorServices followingInformer(
      NativeInformer informer, String applicationId) {
    return register(NativeExecutorServices.ofInformer(informer, applicationId), applicationId);
  }

  /**
   * The Services of an application whose executor pods Spark's own sources track: a Service
   * controller of its own, told of deleted executors by a subscriber to Spark's snapshot store.
   *
   * @throws RuntimeException from the native side, naming a key it cannot use or the rights on
   *     Services the driver lacks
   */
  static ApplicationExecutorServices followingSparkSnapshots(
      SparkConf conf, ExecutorPodsSnapshotsStore store, String applicationId) {
    ApplicationExecutorServices running =
        register(
            NativeExecutorServices.create(SparkConfValues.entries(conf), applicationId),
            applicationId);
    ScalaCollections.subscribe(store, SNAPSHOT_BATCH_MILLIS, running::reportDeletedExecutors);
    return running;
  }

  private static ApplicationExecutorServices register(
      NativeExecutorServices services, String applicationId) {
    ApplicationExecutorServices running = new ApplicationExecutorServices(services, applicationId);
    ApplicationExecutorServices previous = RUNNING.put(applicationId, running);
    if (previous != null) {
      previous.close();
    }
    LOG.info("Executor Services of {} are ensured as executor pods are built", applicationId);
    return running;
  }

  /** The Services of a running application, or null. */
  static ApplicationExecutorServices of(String applicationId) {
    return RUNNING.get(applicationId);
  }

  /**
   * Ensures the executor's Service now, before its pod is created; whether it exists (so the
   * executor may advertise its name). A failure is logged with its reason, and answers false.
   */
  boolean ensure(String executorId) {
    try {
      services.ensure(Collections.singletonList(executorId));
      return true;
    } catch (RuntimeException e) {
      // The native side logged the failure; this says what it means for the executor.
      LOG.warn(
          "No Service for executor {} of {} ({}): it advertises its pod IP instead, and its peers "
              + "wait out a connect timeout if it goes away",
          executorId,
          applicationId,
          e.getMessage());
      return false;
    }
  }

  /**
   * Tells the Service controller of the executors Spark's latest snapshot shows deleted, or no
   * longer shows at all (a full snapshot without a pod whose deletion the watch missed). Spark
   * calls this on one thread.
   */
  private void reportDeletedExecutors(List<ExecutorPodsSnapshot> snapshots) {
    if (snapshots.isEmpty() || services.isClosed()) {
      return;
    }
    ExecutorPodsSnapshot latest = snapshots.get(snapshots.size() - 1);
    Set<String> shown = new HashSet<>();
    Set<String> nowPresent = new HashSet<>();
    Set<String> gone = new HashSet<>();
    for (Tuple2<Object, ExecutorPodState> entry : ScalaCollections.toJava(latest.executorPods())) {
      String id = String.valueOf(entry._1());
      shown.add(id);
      if (entry._2() instanceof PodDeleted) {
        gone.add(id);
      } else {
        nowPresent.add(id);
      }
    }
    for (String id : present) {
      if (!shown.contains(id)) {
        gone.add(id);
      }
    }
    present = nowPresent;
    gone.removeAll(reportedGone);
    if (gone.isEmpty()) {
      return;
    }
    try {
      services.gone(new ArrayList<>(gone));
      reportedGone.addAll(gone);
    } catch (RuntimeException e) {
      LOG.warn("Could not report deleted executors {} of {}", gone, applicationId, e);
    }
  }

  @Override
  public void close() {
    RUNNING.remove(applicationId, this);
    services.close();
  }
}

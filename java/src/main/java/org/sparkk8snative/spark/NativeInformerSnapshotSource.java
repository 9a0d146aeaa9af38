package org.sparkk8snative.spark;

import io.fabric8.kubernetes.api.model.Pod;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.apache.spark.scheduler.cluster.k8s.ExecutorPodsSnapshotsStore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.sparkk8snative.NativeInformer;
import org.sparkk8snative.PodBatch;

/**
 * Delivers every executor pod change the native informer sees to Spark's {@code
 * ExecutorPodsSnapshotsStore.updatePod}, within milliseconds, from one daemon thread that pulls
 * changes from the native side. Pod state stays Spark's: this only decodes and hands over.
 *
 * <p>The thread outlives any failure of one batch or one change (each is logged, and delivery goes
 * on); it ends when the source is stopped, and whatever else ends it is logged at ERROR.
 */
public final class NativeInformerSnapshotSource implements ExecutorPodsSnapshotSource {
  private static final Logger LOG = LoggerFactory.getLogger(NativeInformerSnapshotSource.class);
  private static final int MAX_BATCH = 512;
  private static final long POLL_MILLIS = 200;

  /**
   * After a failed poll: long enough not to spin on a lasting failure, short against Spark's
   * cadence.
   */
  private static final long FAILED_POLL_PAUSE_MILLIS = 1_000;

  private static final long STOP_WAIT_MILLIS = 5_000;

  private final ExecutorPodsSnapshotsStore store;
  private final SharedNativeInformer shared;
  private volatile boolean running;
  private Thread thread;
  private boolean started;

  NativeInformerSnapshotSource(ExecutorPodsSnapshotsStore store, SharedNativeInformer shared) {
    this.store = store;
    this.shared = shared;
  }

  @Override
  public synchronized void start(String applicationId) {
    if (started) {
      throw new IllegalStateException("Cannot start the native informer source twice.");
    }
    started = true;
    NativeInformer informer = shared.acquire(applicationId);
    running = true;
    thread =
        new Thread(
            () -> run(informer, applicationId), "spark-k8s-native-informer-" + applicationId);
    thread.setDaemon(true);
    thread.start();
  }

  /** The delivery thread's body: nothing ends it unlogged. */
  private void run(NativeInformer informer, String applicationId) {
    try {
      deliverUntilStopped(informer, applicationId);
    } catch (Throwable t) {
      LOG.error(
          "The native informer source of {} died: executor pod changes no longer reach Spark's updatePod",
          applicationId,
          t);
    }
  }

  private void deliverUntilStopped(NativeInformer informer, String applicationId) {
    while (running) {
      Optional<List<PodBatch.Entry>> changes;
      try {
        changes = informer.pollChanges(MAX_BATCH, POLL_MILLIS);
      } catch (RuntimeException e) {
        if (informer.isClosed()) {
          ended(applicationId, "its native informer was closed", e);
          return;
        }
        LOG.warn(
            "Could not take the pod changes of {} from the native informer; again in {} ms",
            applicationId,
            FAILED_POLL_PAUSE_MILLIS,
            e);
        if (!pause(applicationId)) {
          return;
        }
        continue;
      }
      if (!changes.isPresent()) {
        ended(applicationId, "its native informer stopped", null);
        return;
      }
      deliver(changes.get(), applicationId);
    }
    LOG.debug("The native informer source of {} stopped", applicationId);
  }

  /**
   * Hands each change to Spark, decoded first and handed over under the lock the lister hands its
   * snapshots under (see {@link SharedNativeInformer#handOver}); one undeliverable change must not
   * stop the others.
   */
  private void deliver(List<PodBatch.Entry> changes, String applicationId) {
    List<Pod> pods = new ArrayList<>(changes.size());
    for (PodBatch.Entry change : changes) {
      try {
        pods.add(shared.decode(change));
      } catch (RuntimeException e) {
        undeliverable(change.podName(), applicationId, e);
      }
    }
    synchronized (shared.handOver()) {
      for (Pod pod : pods) {
        try {
          store.updatePod(pod);
        } catch (RuntimeException e) {
          undeliverable(pod.getMetadata().getName(), applicationId, e);
        }
      }
    }
  }

  private static void undeliverable(String podName, String applicationId, RuntimeException e) {
    LOG.warn("Could not deliver the change of pod {} of {} to Spark", podName, applicationId, e);
  }

  /** The end of delivery: expected after {@link #stop()}, an error otherwise. */
  private void ended(String applicationId, String why, Throwable cause) {
    if (running) {
      LOG.error(
          "The native informer source of {} ends because {}: executor pod changes no longer reach Spark's "
              + "updatePod",
          applicationId,
          why,
          cause);
    } else {
      LOG.debug("The native informer source of {} stopped ({})", applicationId, why, cause);
    }
  }

  /** Waits before the next poll; false when interrupted, which ends delivery. */
  private boolean pause(String applicationId) {
    try {
      Thread.sleep(FAILED_POLL_PAUSE_MILLIS);
      return true;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      ended(applicationId, "its thread was interrupted", e);
      return false;
    }
  }

  @Override
  public void stop() {
    Thread toJoin;
    synchronized (this) {
      if (!running) {
        return;
      }
      running = false;
      toJoin = thread;
      thread = null;
    }
    // Closing the informer (when the lister is done with it too) makes a blocked poll return at
    // once.
    shared.release();
    try {
      toJoin.join(STOP_WAIT_MILLIS);
      if (toJoin.isAlive()) {
        LOG.warn(
            "The native informer source's thread {} is still running {} ms after stop",
            toJoin.getName(),
            STOP_WAIT_MILLIS);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      LOG.warn(
          "Interrupted while waiting for the native informer source's thread {} to end",
          toJoin.getName(),
          e);
    }
  }
}

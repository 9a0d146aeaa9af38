package org.sparkk8snative.spark;

import java.util.List;
import org.apache.spark.scheduler.cluster.k8s.ExecutorPodsSnapshotsStore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.sparkk8snative.NativeInformer;
import org.sparkk8snative.PodBatch;

/**
 * Delivers every executor pod change the native informer sees to Spark's {@code
 * ExecutorPodsSnapshotsStore.updatePod}, within milliseconds, from one daemon thread that pulls
 * changes from the native side. Pod state stays Spark's: this only decodes and hands over.
 */
public final class NativeInformerSnapshotSource implements ExecutorPodsSnapshotSource {
  private static final Logger LOG = LoggerFactory.getLogger(NativeInformerSnapshotSource.class);
  private static final int MAX_BATCH = 512;
  private static final long POLL_MILLIS = 200;

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
    thread = new Thread(() -> deliver(informer), "spark-k8s-native-informer-" + applicationId);
    thread.setDaemon(true);
    thread.start();
  }

  private void deliver(NativeInformer informer) {
    while (running) {
      List<PodBatch.Entry> changes;
      try {
        changes = informer.pollChanges(MAX_BATCH, POLL_MILLIS);
      } catch (IllegalStateException closed) {
        return; // closed under us by stop()
      }
      if (changes == null) {
        return; // the informer stopped
      }
      for (PodBatch.Entry change : changes) {
        try {
          store.updatePod(shared.decode(change));
        } catch (RuntimeException e) {
          // One undeliverable change must not stop the others.
          LOG.warn("Could not deliver the change of pod {} to Spark", change.podName(), e);
        }
      }
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
    shared.release();
    try {
      toJoin.join(5_000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}

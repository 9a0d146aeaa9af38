package org.sparkk8snative.bench;

import io.fabric8.kubernetes.api.model.Pod;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.spark.scheduler.cluster.k8s.ExecutorPodsSnapshot;
import org.sparkk8snative.spark.ForwardingSnapshotsStore;
import scala.Function1;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;
import scala.runtime.BoxedUnit;

/**
 * Spark's real {@code ExecutorPodsSnapshotsStoreImpl}, with one subscriber at Spark's default batch
 * interval (as the lifecycle manager has), and the clocks the benchmark reads: when the store first
 * held every expected pod, when the first full snapshot came, and when each benchmark patch (its
 * sequence number and send time are in the pod's status message) arrived.
 */
final class MeasuringStore extends ForwardingSnapshotsStore {
  /** Status message of a benchmark patch: {@code bench <seq> <System.nanoTime() at send>}. */
  static final String PATCH_PREFIX = "bench ";

  private final long startNanos;
  private final int expectedPods;
  private final Set<String> seen = ConcurrentHashMap.newKeySet();
  private final AtomicLong allPodsNanos = new AtomicLong(-1);
  private final AtomicLong firstFullSnapshotNanos = new AtomicLong(-1);
  final AtomicLong updates = new AtomicLong();
  final AtomicLong replacements = new AtomicLong();

  /** Patch sequence number -> nanoseconds from the PATCH being sent to the store holding it. */
  final ConcurrentHashMap<Integer, Long> patchLatencyNanos = new ConcurrentHashMap<>();

  /** Patches sent before this are an earlier run's, still in the pods' status: not counted. */
  private volatile long countPatchesSentFrom = Long.MAX_VALUE;

  MeasuringStore(int expectedPods) {
    this.startNanos = System.nanoTime();
    this.expectedPods = expectedPods;
    Function1<Seq<ExecutorPodsSnapshot>, BoxedUnit> lifecycleManager = snapshots -> BoxedUnit.UNIT;
    addSubscriber(1000L, lifecycleManager);
  }

  @Override
  public void updatePod(Pod pod) {
    super.updatePod(pod);
    long now = System.nanoTime();
    updates.incrementAndGet();
    observe(pod, now);
    if (seen.size() >= expectedPods) {
      allPodsNanos.compareAndSet(-1, now - startNanos);
    }
  }

  @Override
  public void replaceSnapshot(Seq<Pod> pods) {
    super.replaceSnapshot(pods);
    long now = System.nanoTime();
    replacements.incrementAndGet();
    for (Pod pod : CollectionConverters.asJava(pods)) {
      observe(pod, now);
    }
    if (pods.size() >= expectedPods) {
      firstFullSnapshotNanos.compareAndSet(-1, now - startNanos);
      allPodsNanos.compareAndSet(-1, now - startNanos);
    }
  }

  private void observe(Pod pod, long now) {
    seen.add(pod.getMetadata().getName());
    String message = pod.getStatus() == null ? null : pod.getStatus().getMessage();
    if (message != null && message.startsWith(PATCH_PREFIX)) {
      int space = message.indexOf(' ', PATCH_PREFIX.length());
      int seq = Integer.parseInt(message.substring(PATCH_PREFIX.length(), space));
      long sent = Long.parseLong(message.substring(space + 1));
      if (sent >= countPatchesSentFrom) {
        patchLatencyNanos.putIfAbsent(seq, now - sent);
      }
    }
  }

  void countPatchesFromNow() {
    countPatchesSentFrom = System.nanoTime();
  }

  /** Nanoseconds from construction until every expected pod was in the store, or -1. */
  long allPodsNanos() {
    return allPodsNanos.get();
  }

  /** Nanoseconds from construction until the first full snapshot of every expected pod, or -1. */
  long firstFullSnapshotNanos() {
    return firstFullSnapshotNanos.get();
  }
}

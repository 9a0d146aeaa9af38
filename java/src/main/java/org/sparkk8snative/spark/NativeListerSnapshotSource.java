package org.sparkk8snative.spark;

import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.apache.spark.scheduler.cluster.k8s.ExecutorPodsSnapshotsStore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.sparkk8snative.ListerAnswer;
import org.sparkk8snative.NativeInformer;

/**
 * Every {@code listerPollingInterval}, replaces Spark's snapshot with the native cache's contents
 * ({@code replaceSnapshot}), at no apiserver cost. While no snapshot may be taken the round waits
 * in the native library for the cache to become ready, and never fakes one: Spark removes every
 * executor missing from a full snapshot. So the first snapshot follows the informer's sync at once,
 * and on a quiet watch (which proves the cache current only when it is renewed, once per {@code
 * watchTimeout}) the round's snapshot follows the next renewal. Pods unchanged since the previous
 * round are not decoded again, and when nothing changed at all the previous snapshot is handed to
 * Spark again as it is (with a new timestamp, which is what Spark's missing-pod detection needs).
 */
public final class NativeListerSnapshotSource implements ExecutorPodsSnapshotSource {
  private static final Logger LOG = LoggerFactory.getLogger(NativeListerSnapshotSource.class);

  /** The longest one native wait for readiness lasts: {@code stop()} waits for it at most. */
  private static final long READY_WAIT_MILLIS = 500;

  private final ExecutorPodsSnapshotsStore store;
  private final SharedNativeInformer shared;
  private final long intervalMillis;
  private ScheduledExecutorService executor;
  private NativeInformer informer;
  private boolean started;
  private volatile boolean stopped;

  // Used by the executor thread only.
  private final HeldSnapshot held;
  private final NotReadyStreak notReady;

  private volatile Round lastRound;
  private volatile long overtaken;

  /**
   * The cost of the last snapshot handed to Spark: from the JNI call to {@code replaceSnapshot}
   * returning, and of that the time inside Spark's {@code replaceSnapshot}; how many pods it held,
   * how many came with their JSON (changed since the previous round), and the bytes that crossed
   * JNI.
   */
  public static final class Round {
    private final long nanos;
    private final long sparkNanos;
    private final int pods;
    private final int changedPods;
    private final int frameBytes;

    Round(long nanos, long sparkNanos, int pods, int changedPods, int frameBytes) {
      this.nanos = nanos;
      this.sparkNanos = sparkNanos;
      this.pods = pods;
      this.changedPods = changedPods;
      this.frameBytes = frameBytes;
    }

    public long nanos() {
      return nanos;
    }

    public long sparkNanos() {
      return sparkNanos;
    }

    public int pods() {
      return pods;
    }

    public int changedPods() {
      return changedPods;
    }

    public int frameBytes() {
      return frameBytes;
    }
  }

  NativeListerSnapshotSource(
      ExecutorPodsSnapshotsStore store, SharedNativeInformer shared, long intervalMillis) {
    this.store = store;
    this.shared = shared;
    this.intervalMillis = intervalMillis;
    this.held = new HeldSnapshot(shared::decode);
    this.notReady = new NotReadyStreak(intervalMillis);
  }

  @Override
  public synchronized void start(String applicationId) {
    if (started) {
      throw new IllegalStateException("Cannot start the native lister source twice.");
    }
    started = true;
    informer = shared.acquire(applicationId);
    executor =
        Executors.newSingleThreadScheduledExecutor(
            r -> {
              Thread t = new Thread(r, "spark-k8s-native-lister-" + applicationId);
              t.setDaemon(true);
              return t;
            });
    executor.schedule(this::round, 0, TimeUnit.MILLISECONDS);
  }

  private void round() {
    if (stopped) {
      return;
    }
    long next = intervalMillis;
    try {
      long began = System.nanoTime();
      // While not ready, the native side waits for readiness (a sync, or the renewal that proves
      // a quiet watch again) and takes the snapshot at once; an answer that comes early without
      // one (the informer stopping) still paces the retries.
      ListerAnswer answer = informer.listerSnapshot(held.view(), READY_WAIT_MILLIS);
      if (answer instanceof ListerAnswer.NotReady) {
        notReady.skipped(
            ((ListerAnswer.NotReady) answer).reason(), () -> informer.health().description());
        long waited = (System.nanoTime() - began) / 1_000_000;
        next = Math.max(0, READY_WAIT_MILLIS - waited);
      } else if (!replace(answer, began)) {
        next = 0; // overtaken by a change: a newer snapshot at once
      }
    } catch (IllegalStateException closed) {
      if (stopped) {
        return;
      }
      LOG.warn("Lister round failed", closed);
    } catch (RuntimeException e) {
      LOG.warn("Lister round failed; next in {} ms", next, e);
    }
    if (!stopped) {
      executor.schedule(this::round, next, TimeUnit.MILLISECONDS);
    }
  }

  /**
   * Hands the answer's snapshot to Spark, unless a change newer than it has been taken meanwhile
   * (while it crossed JNI and was decoded): that change may already be in Spark's store, and the
   * snapshot after it would take the store back in time (an ended pod live again, a deleted one
   * back). False when overtaken so: the next round asks at once for a snapshot that holds it.
   */
  private boolean replace(ListerAnswer answer, long began) {
    HeldSnapshot.Assembled snapshot = held.assemble(answer);
    if (snapshot == null) {
      return true;
    }
    long handOver;
    long done;
    synchronized (shared.handOver()) {
      if (informer.changesTakenAfter(snapshot.view)) {
        overtaken++;
        // A round without a snapshot, as one that waits for readiness: an operator hears of a
        // streak that lasts two intervals (changes arriving faster than a snapshot crosses JNI).
        notReady.skipped(
            "the snapshot of view "
                + snapshot.view
                + " was overtaken by a change handed to Spark meanwhile; asking again at once",
            () -> informer.health().description());
        return false;
      }
      handOver = System.nanoTime();
      store.replaceSnapshot(snapshot.pods);
      done = System.nanoTime();
    }
    held.handedOver(snapshot);
    int pods = snapshot.pods.size();
    lastRound =
        new Round(done - began, done - handOver, pods, snapshot.decodedPods, answer.frameBytes());
    notReady.ended(pods);
    return true;
  }

  /** Snapshots not handed to Spark because a newer change was taken while they were prepared. */
  public long overtakenSnapshots() {
    return overtaken;
  }

  /** The last snapshot handed to Spark, or null before the first. */
  public Round lastRound() {
    return lastRound;
  }

  @Override
  public void stop() {
    synchronized (this) {
      if (!started || stopped) {
        return;
      }
      stopped = true;
    }
    executor.shutdownNow();
    try {
      executor.awaitTermination(5, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    shared.release();
  }
}

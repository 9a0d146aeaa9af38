package org.sparkk8snative.spark;

import io.fabric8.kubernetes.api.model.Pod;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.apache.spark.scheduler.cluster.k8s.ExecutorPodsSnapshotsStore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.sparkk8snative.ListerAnswer;
import org.sparkk8snative.NativeInformer;
import org.sparkk8snative.PodBatch;

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

  // Touched by the executor thread only.
  /** The pods of the last snapshot by name, and that snapshot as handed to Spark. */
  private Map<String, Pod> held = new HashMap<>();

  private scala.collection.immutable.List<Pod> lastSnapshot;

  /** Pods of the snapshot being handed over that came with their JSON. */
  private int changedPods;

  /** The view of the last snapshot handed to Spark (0: none). */
  private long knownView;

  private long notReadySince = -1;
  private boolean warnedThisStreak;

  private volatile Round lastRound;

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
      ListerAnswer answer = informer.listerSnapshot(knownView);
      if (answer instanceof ListerAnswer.NotReady) {
        skip(((ListerAnswer.NotReady) answer).reason());
        // Wait for readiness (a sync, or the renewal that proves a quiet watch again), then take
        // the snapshot at once; a wait that ends early without it (the informer stopping) still
        // paces the retries.
        String notReady = informer.awaitListerReady(READY_WAIT_MILLIS);
        long waited = (System.nanoTime() - began) / 1_000_000;
        next = notReady == null ? 0 : Math.max(0, READY_WAIT_MILLIS - waited);
      } else {
        replace(answer, began);
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

  private void replace(ListerAnswer answer, long began) {
    changedPods = 0;
    scala.collection.immutable.List<Pod> pods;
    long view;
    int frameBytes;
    if (answer instanceof ListerAnswer.Ready) {
      ListerAnswer.Ready ready = (ListerAnswer.Ready) answer;
      pods = assemble(ready.entries());
      view = ready.view();
      frameBytes = ready.frameBytes();
    } else {
      pods = lastSnapshot;
      view = ((ListerAnswer.Unchanged) answer).view();
      frameBytes = 10; // the UNCHANGED frame: version, tag and view
    }
    if (pods == null) {
      // A pod marked unchanged that this source does not hold: should not happen; ask for
      // every pod next round rather than guess.
      knownView = 0;
      return;
    }
    long handOver = System.nanoTime();
    store.replaceSnapshot(pods);
    long done = System.nanoTime();
    lastRound = new Round(done - began, done - handOver, pods.size(), changedPods, frameBytes);
    lastSnapshot = pods;
    knownView = view;
    if (warnedThisStreak) {
      LOG.info(
          "Lister ready again after {} ms; {} executor pods",
          System.currentTimeMillis() - notReadySince,
          pods.size());
    }
    notReadySince = -1;
    warnedThisStreak = false;
  }

  /**
   * Spark's list of the snapshot's pods, reusing those held; null if an unchanged one is not held.
   */
  private scala.collection.immutable.List<Pod> assemble(List<PodBatch.Entry> entries) {
    List<Pod> pods = new ArrayList<>(entries.size());
    Map<String, Pod> current = new HashMap<>(entries.size() * 2);
    for (PodBatch.Entry entry : entries) {
      boolean unchanged = entry.kind() == PodBatch.UNCHANGED;
      Pod pod = unchanged ? held.get(entry.podName()) : shared.decode(entry);
      changedPods += unchanged ? 0 : 1;
      if (pod == null) {
        LOG.debug(
            "Lister: pod {} marked unchanged but not held; every pod next round", entry.podName());
        return null;
      }
      current.put(entry.podName(), pod);
      pods.add(pod);
    }
    held = current;
    return ScalaCollections.toScalaList(pods);
  }

  private void skip(String reason) {
    long now = System.currentTimeMillis();
    if (notReadySince < 0) {
      notReadySince = now;
    }
    LOG.debug("Lister round waits: {}", reason);
    // A skipped round is normal for a moment; when it lasts, the operator should know.
    if (!warnedThisStreak && now - notReadySince >= 2 * intervalMillis) {
      warnedThisStreak = true;
      LOG.warn(
          "No executor pod snapshot for {} ms: {}. Informer: {}",
          now - notReadySince,
          reason,
          informer.health().description());
    }
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

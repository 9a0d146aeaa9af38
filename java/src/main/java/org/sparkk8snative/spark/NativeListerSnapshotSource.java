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
import org.sparkk8snative.ListerSnapshot;
import org.sparkk8snative.NativeInformer;
import org.sparkk8snative.PodBatch;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Every {@code listerPollingInterval}, replaces Spark's snapshot with the native cache's contents
 * ({@code replaceSnapshot}), at no apiserver cost. While the cache is unsynced or stale the round
 * is skipped, never faked: Spark removes every executor missing from a full snapshot. Until the
 * first snapshot lands, rounds come every second, so Spark sees existing pods soon after start.
 * Pods unchanged since the previous round are not decoded again.
 */
public final class NativeListerSnapshotSource implements ExecutorPodsSnapshotSource {
  private static final Logger LOG = LoggerFactory.getLogger(NativeListerSnapshotSource.class);
  private static final long FIRST_SNAPSHOT_RETRY_MILLIS = 1_000;

  private final ExecutorPodsSnapshotsStore store;
  private final SharedNativeInformer shared;
  private final long intervalMillis;
  private ScheduledExecutorService executor;
  private NativeInformer informer;
  private boolean started;
  private volatile boolean stopped;

  // Touched by the executor thread only.
  private final Map<String, Decoded> decoded = new HashMap<>();
  private long knownGeneration;
  private boolean hadSnapshot;
  private long notReadySince = -1;
  private boolean warnedThisStreak;

  private record Decoded(long generation, Pod pod) {}

  NativeListerSnapshotSource(ExecutorPodsSnapshotsStore store, SharedNativeInformer shared, long intervalMillis) {
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
    executor = Executors.newSingleThreadScheduledExecutor(r -> {
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
      ListerSnapshot snapshot = informer.listerSnapshot(knownGeneration);
      if (snapshot.isReady()) {
        replace(snapshot.entries());
      } else {
        skip(snapshot.notReadyReason());
        if (!hadSnapshot) {
          next = Math.min(intervalMillis, FIRST_SNAPSHOT_RETRY_MILLIS);
        }
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

  private void replace(List<PodBatch.Entry> entries) {
    List<Pod> pods = new ArrayList<>(entries.size());
    Map<String, Decoded> current = new HashMap<>(entries.size() * 2);
    long highest = knownGeneration;
    for (PodBatch.Entry entry : entries) {
      Decoded d;
      if (entry.kind() == PodBatch.UNCHANGED) {
        d = decoded.get(entry.podName());
        if (d == null) {
          // Should not happen; ask for everything next round rather than guess.
          LOG.debug("Lister: pod {} marked unchanged but unknown here; full snapshot next round", entry.podName());
          knownGeneration = 0;
          return;
        }
      } else {
        d = new Decoded(entry.generation(), entry.decodePod());
      }
      current.put(entry.podName(), d);
      pods.add(d.pod());
      highest = Math.max(highest, entry.generation());
    }
    store.replaceSnapshot(CollectionConverters.asScala(pods).toSeq());
    decoded.clear();
    decoded.putAll(current);
    knownGeneration = highest;
    hadSnapshot = true;
    if (notReadySince >= 0) {
      LOG.info("Lister ready again after {} ms; {} executor pods", System.currentTimeMillis() - notReadySince, pods.size());
    }
    notReadySince = -1;
    warnedThisStreak = false;
  }

  private void skip(String reason) {
    long now = System.currentTimeMillis();
    if (notReadySince < 0) {
      notReadySince = now;
    }
    LOG.debug("Skipping the lister round: {}", reason);
    // A skipped round is normal for a moment; when it lasts, the operator should know.
    if (!warnedThisStreak && now - notReadySince >= 2 * intervalMillis) {
      warnedThisStreak = true;
      LOG.warn("No executor pod snapshot for {} ms: {}. Informer: {}", now - notReadySince, reason,
          informer.health().description());
    }
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

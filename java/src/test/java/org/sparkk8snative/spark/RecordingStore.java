package org.sparkk8snative.spark;

import io.fabric8.kubernetes.api.model.Pod;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Consumer;
import java.util.function.Supplier;
import org.apache.spark.scheduler.cluster.k8s.ExecutorPodsSnapshot;
import org.sparkk8snative.InformerHealth;
import scala.Function1;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;
import scala.runtime.BoxedUnit;

/**
 * Spark's real {@code ExecutorPodsSnapshotsStoreImpl}, with every call recorded in the order the
 * store received it: each {@code updatePod} (pod, resourceVersion, deleted or not) and each {@code
 * replaceSnapshot} (its pods, and the informer's health at that moment). It also keeps what the
 * store holds per pod, the way Spark's store does: an update sets a pod (a deleted pod leaves), a
 * full snapshot replaces everything.
 */
final class RecordingStore extends ForwardingSnapshotsStore {
  /** One {@code updatePod}: when, which pod, its resourceVersion, deleted or not, its phase. */
  record Update(long at, String pod, long version, boolean deleted, String phase) {
    boolean terminal() {
      return "Failed".equals(phase) || "Succeeded".equals(phase);
    }
  }

  /** A full snapshot: pod name to resourceVersion, and the health when it was handed over. */
  record Replacement(long at, Map<String, Long> versions, InformerHealth health) {}

  private final Supplier<InformerHealth> health;
  private final Consumer<Replacement> onReplacement;

  // Guarded by this.
  private final List<Update> updates = new ArrayList<>();
  private final List<Replacement> replacements = new ArrayList<>();
  private final Map<String, List<Update>> updatesByPod = new HashMap<>();
  private Map<String, Long> held = new HashMap<>();

  /** Pods a full snapshot carried at an older version than an update had already delivered. */
  private final List<String> olderThanDelivered = new ArrayList<>();

  /**
   * Pods a full snapshot carried live after an update had delivered them as deleted: without a
   * deletionTimestamp, or at a version older than that update. Not the same state again: a pod
   * deleted with grace 0 is first written with its deletionTimestamp (a MODIFIED event at R), then
   * removed (DELETED at a later version), and a snapshot taken between them rightly holds it at R,
   * deletionTimestamp and all (what the chaos run first reported as unexplained, issue 49).
   */
  private final List<String> resurrectedBySnapshot = new ArrayList<>();

  /** Updates older than what the store had already received of their pod, by update or snapshot. */
  private final List<String> updatesBackInTime = new ArrayList<>();

  /** The newest resourceVersion of each pod the store ever received, by update or snapshot. */
  private final Map<String, Long> newestDelivered = new HashMap<>();

  /** Pods an update delivered as deleted: the newest such update of each. */
  private final Map<String, Update> deliveredDeleted = new HashMap<>();

  private volatile ExecutorPodsSnapshot lastSparkSnapshot;

  /**
   * @param health the informer's health now (called from the lister's thread, at each full
   *     snapshot)
   * @param onReplacement checks each full snapshot as it comes
   */
  RecordingStore(Supplier<InformerHealth> health, Consumer<Replacement> onReplacement) {
    this.health = health;
    this.onReplacement = onReplacement;
    Function1<Seq<ExecutorPodsSnapshot>, BoxedUnit> subscriber =
        snapshots -> {
          if (!snapshots.isEmpty()) {
            lastSparkSnapshot = snapshots.last();
          }
          return BoxedUnit.UNIT;
        };
    addSubscriber(20L, subscriber);
  }

  @Override
  public synchronized void updatePod(Pod pod) {
    String name = pod.getMetadata().getName();
    boolean deleted = pod.getMetadata().getDeletionTimestamp() != null;
    String phase = pod.getStatus() == null ? null : pod.getStatus().getPhase();
    Update update = new Update(System.currentTimeMillis(), name, version(pod), deleted, phase);
    Long newest = newestDelivered.merge(name, update.version(), Math::max);
    if (newest > update.version()) {
      updatesBackInTime.add(name + "@" + update.version() + " after " + newest);
    }
    if (deleted) {
      deliveredDeleted.merge(
          name, update, (old, fresh) -> fresh.version() >= old.version() ? fresh : old);
    }
    updates.add(update);
    updatesByPod.computeIfAbsent(name, k -> new ArrayList<>()).add(update);
    if (deleted) {
      held.remove(name);
    } else {
      held.put(name, update.version());
    }
    super.updatePod(pod);
  }

  @Override
  public synchronized void replaceSnapshot(Seq<Pod> pods) {
    InformerHealth now = health.get();
    Map<String, Long> versions = new HashMap<>();
    Set<String> withDeletionTimestamp = new HashSet<>();
    for (Pod pod : CollectionConverters.asJava(pods)) {
      versions.put(pod.getMetadata().getName(), version(pod));
      if (pod.getMetadata().getDeletionTimestamp() != null) {
        withDeletionTimestamp.add(pod.getMetadata().getName());
      }
    }
    versions.forEach(
        (name, version) -> {
          Long delivered = held.get(name);
          if (delivered != null && delivered > version) {
            olderThanDelivered.add(name + "@" + version + "<" + delivered);
          }
          Update deletion = deliveredDeleted.get(name);
          if (deletion != null
              && (!withDeletionTimestamp.contains(name) || version < deletion.version())) {
            resurrectedBySnapshot.add(
                name
                    + "@"
                    + version
                    + " (delivered deleted at "
                    + deletion.version()
                    + ", "
                    + (System.currentTimeMillis() - deletion.at())
                    + " ms before)");
          }
          newestDelivered.merge(name, version, Math::max);
        });
    Replacement replacement =
        new Replacement(System.currentTimeMillis(), Map.copyOf(versions), now);
    replacements.add(replacement);
    held = new HashMap<>(versions);
    super.replaceSnapshot(pods);
    onReplacement.accept(replacement);
  }

  private static long version(Pod pod) {
    return Long.parseLong(pod.getMetadata().getResourceVersion());
  }

  synchronized int updateCount() {
    return updates.size();
  }

  synchronized List<Replacement> replacements() {
    return new ArrayList<>(replacements);
  }

  synchronized Replacement lastReplacement() {
    return replacements.isEmpty() ? null : replacements.get(replacements.size() - 1);
  }

  /** What the store holds now, per pod: the resourceVersion last handed over. */
  synchronized Map<String, Long> held() {
    return new HashMap<>(held);
  }

  /** Every update of each pod, in the order delivered. */
  synchronized Map<String, List<Update>> updatesByPod() {
    Map<String, List<Update>> copy = new HashMap<>();
    updatesByPod.forEach((name, list) -> copy.put(name, new ArrayList<>(list)));
    return copy;
  }

  synchronized List<String> olderThanDelivered() {
    return new ArrayList<>(olderThanDelivered);
  }

  synchronized List<String> resurrectedBySnapshot() {
    return new ArrayList<>(resurrectedBySnapshot);
  }

  /** Updates older than a version of their pod already delivered, by an update or a snapshot. */
  synchronized List<String> updatesBackInTime() {
    return new ArrayList<>(updatesBackInTime);
  }

  /** The latest snapshot Spark's own subscribers saw. */
  ExecutorPodsSnapshot lastSparkSnapshot() {
    return lastSparkSnapshot;
  }
}

package org.sparkk8snative.spark;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.Service;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.stream.Collectors;
import org.apache.spark.scheduler.cluster.k8s.ExecutorPodState;
import org.apache.spark.scheduler.cluster.k8s.ExecutorPodsSnapshot;
import org.sparkk8snative.ExecutorServiceNames;
import org.sparkk8snative.InformerHealth;
import org.sparkk8snative.TestPlane;
import scala.jdk.javaapi.CollectionConverters;

/**
 * What must hold through the chaos run whatever the faults, each check returning what it found
 * wrong: on every full snapshot as it comes ({@link #check}: from a synced, fresh cache, lacking no
 * pod Spark's rule would remove); and at the end, against the apiserver's own LIST: every pod's
 * last state delivered in order, Spark's snapshot equal to the LIST, one Service per live executor
 * and none for a gone one, no full snapshot while the apiserver was silent past the stale bound.
 */
final class ChaosInvariants {
  /**
   * Spark removes an executor missing from a full snapshot once registered longer than this:
   * Spark's default. Longer than the informer is ever blind here (a fault plus its backoff), so a
   * removal can only come from a cache that lost a pod, not from a fault outlasting the delta (see
   * resumeRaces).
   */
  static final long MISSING_POD_DETECT_DELTA_MS = 30_000;

  /** Time between the lister's readiness check and the store receiving the snapshot (decoding). */
  private static final long HANDOVER_SLACK_MS = 500;

  /**
   * From a write's answer to the pod in the informer's cache, on a loaded 2-core machine, at most.
   */
  private static final long PROPAGATION_SLACK_MS = 1_000;

  private final ChaosConfig config;
  private final TestPlane plane;
  private final String app;
  private final PodChurn churn;

  /** Full snapshots Spark must never have received, found as they came. */
  private final List<String> unsyncedOrStale = Collections.synchronizedList(new ArrayList<>());

  private final List<String> spuriousRemovals = Collections.synchronizedList(new ArrayList<>());

  /** Full snapshots lacking a pod created longer ago than the stale bound allows. */
  private final List<String> laggingSnapshots = Collections.synchronizedList(new ArrayList<>());

  /** The same, in the first snapshot after the lister was not ready (after an outage). */
  private final List<String> resumeRaces = Collections.synchronizedList(new ArrayList<>());

  private long previousSnapshotAt;
  private volatile long longestMissing;

  ChaosInvariants(ChaosConfig config, TestPlane plane, String app, PodChurn churn) {
    this.config = config;
    this.plane = plane;
    this.app = app;
    this.churn = churn;
  }

  // ---- on every full snapshot ----

  /**
   * Each full snapshot, as it comes: from a synced, fresh cache (by the informer's health, and by
   * what it lacks: no pod created longer ago than the stale bound, plus propagation); and missing
   * no pod that Spark's rule would remove (ExecutorPodsLifecycleManager: registered more than
   * missingPodDetectDelta before the snapshot and absent from it). An executor registers after its
   * pod is created, so the creation time stands for the earliest registration.
   */
  void check(RecordingStore.Replacement replacement) {
    InformerHealth health = replacement.health();
    if (health == null || !health.hasSynced()) {
      unsyncedOrStale.add(
          "a full snapshot of " + replacement.versions().size() + " pods before the first sync");
    } else if (health.millisSinceLastActivity() < 0
        || health.millisSinceLastActivity() > config.staleBoundMs() + HANDOVER_SLACK_MS) {
      unsyncedOrStale.add(
          "a full snapshot with the apiserver silent for "
              + health.millisSinceLastActivity()
              + " ms: "
              + health);
    }
    boolean firstAfterAGap = replacement.at() - previousSnapshotAt > 2 * config.listerIntervalMs();
    previousSnapshotAt = replacement.at();
    for (PodChurn.PodHistory pod : churn.pods()) {
      long created = pod.createdAt;
      long gone = pod.goneAt;
      boolean existed = created >= 0 && (gone < 0 || gone > replacement.at());
      if (!existed || replacement.versions().containsKey(pod.name)) {
        continue;
      }
      long missingFor = replacement.at() - created;
      longestMissing = Math.max(longestMissing, missingFor);
      String what =
          pod.name
              + " (created "
              + missingFor
              + " ms before) missing from a full snapshot; health then: "
              + health;
      if (missingFor > MISSING_POD_DETECT_DELTA_MS) {
        spuriousRemovals.add(what);
      } else if (missingFor > config.staleBoundMs() + PROPAGATION_SLACK_MS) {
        (firstAfterAGap ? resumeRaces : laggingSnapshots).add(what);
      }
    }
  }

  List<String> unsyncedOrStale() {
    return List.copyOf(unsyncedOrStale);
  }

  List<String> spuriousRemovals() {
    return List.copyOf(spuriousRemovals);
  }

  List<String> laggingSnapshots() {
    return List.copyOf(laggingSnapshots);
  }

  List<String> resumeRaces() {
    return List.copyOf(resumeRaces);
  }

  /** The longest a live pod was missing from a full snapshot. */
  long longestMissing() {
    return longestMissing;
  }

  // ---- at the end, against the faults and the apiserver's LIST ----

  /**
   * Full snapshots while a black hole or a 429 burst kept the apiserver silent past the stale
   * bound, or while only a lagging apiserver answered past it (the HA plane's lags).
   */
  List<String> snapshotsDuringSilence(RecordingStore store, List<ChaosFaults.Fault> faults) {
    List<String> found = new ArrayList<>();
    for (ChaosFaults.Fault fault : faults) {
      long from;
      long to;
      switch (fault.kind) {
        case BLACKHOLE, THROTTLE -> {
          from = fault.start + config.staleBoundMs() + HANDOVER_SLACK_MS;
          to = fault.start + fault.millis - 100;
        }
        case LAG -> {
          from = fault.laggingFrom + config.staleBoundMs() + ChaosFaults.LAG_PROMISE_SLACK_MS;
          to = fault.laggingTo;
        }
        default -> {
          continue;
        }
      }
      for (RecordingStore.Replacement r : store.replacements()) {
        if (r.at() > from && r.at() < to) {
          found.add(
              fault.kind.label
                  + ": a full snapshot "
                  + (r.at() - fault.start)
                  + " ms into a "
                  + fault.millis
                  + " ms fault");
        }
      }
    }
    return found;
  }

  /**
   * Pods whose last state did not reach the store: a live pod's last update must carry the LIST's
   * resourceVersion, a gone pod's last update (if it had any) must be a deletion; and the store's
   * content and its last full snapshot, taken after the LIST, must equal the LIST.
   */
  List<String> undelivered(RecordingStore store, Map<String, Long> truth, long listedAt) {
    List<String> problems = new ArrayList<>();
    Map<String, List<RecordingStore.Update>> updates = store.updatesByPod();
    for (PodChurn.PodHistory pod : churn.pods()) {
      List<RecordingStore.Update> own = updates.getOrDefault(pod.name, List.of());
      RecordingStore.Update last = own.isEmpty() ? null : own.get(own.size() - 1);
      Long want = truth.get(pod.name);
      List<Long> written = pod.versions();
      // A pod that left the selector (inactive label) reaches Spark as the apiserver sent it, as
      // Spark's own watch source delivers it; the next full snapshot drops it.
      boolean leftAsSent =
          pod.inactivated
              && last != null
              && !written.isEmpty()
              && last.version() == written.get(written.size() - 1);
      if (want != null && (last == null || last.deleted() || last.version() != want)) {
        problems.add(pod.name + ": last update " + last + ", apiserver at " + want);
      } else if (want == null && last != null && !last.deleted() && !leftAsSent) {
        problems.add(pod.name + ": gone, but its last update is " + last);
      }
    }
    Map<String, Long> held = store.held();
    if (!held.equals(truth)) {
      problems.add(
          "the store holds "
              + held.size()
              + " pods, the LIST "
              + truth.size()
              + "; differing: "
              + difference(held, truth));
    }
    RecordingStore.Replacement last = store.lastReplacement();
    if (last == null || last.at() < listedAt || !last.versions().equals(truth)) {
      problems.add("no full snapshot equal to the LIST since it was taken");
    }
    return problems;
  }

  /**
   * Spark's own view, from its subscribers: the same executors as the LIST, each at its version.
   */
  static List<String> sparkDisagreement(RecordingStore store, Map<String, Pod> truth) {
    ExecutorPodsSnapshot snapshot = store.lastSparkSnapshot();
    if (snapshot == null) {
      return List.of("no snapshot reached Spark's subscribers");
    }
    Map<Long, String> sparkSees = new HashMap<>();
    for (Map.Entry<Object, ExecutorPodState> e :
        CollectionConverters.asJava(snapshot.executorPods()).entrySet()) {
      sparkSees.put((Long) e.getKey(), e.getValue().pod().getMetadata().getResourceVersion());
    }
    Map<Long, String> listed = new HashMap<>();
    truth.values().forEach(p -> listed.put(execId(p), p.getMetadata().getResourceVersion()));
    return sparkSees.equals(listed)
        ? List.of()
        : List.of(
            "Spark sees "
                + sparkSees.size()
                + " executors, the LIST "
                + listed.size()
                + "; differing: "
                + difference(sparkSees, listed));
  }

  /** Per pod, the resourceVersions delivered through updatePod never go backwards. */
  static List<String> outOfOrder(RecordingStore store) {
    List<String> found = new ArrayList<>();
    store
        .updatesByPod()
        .forEach(
            (pod, updates) -> {
              for (int i = 1; i < updates.size(); i++) {
                if (updates.get(i).version() < updates.get(i - 1).version()) {
                  found.add(
                      pod
                          + ": "
                          + updates.get(i - 1).version()
                          + " then "
                          + updates.get(i).version());
                }
              }
            });
    return found;
  }

  /**
   * Updates that told Spark a pod was deleted while it was still an active executor: Spark counts
   * the executor as lost and replaces it. A pod is delivered as deleted only once the churn has
   * sent its delete (or its inactive label, after which a relist may find it gone), never before.
   */
  List<String> liveDeliveredAsDeleted(RecordingStore store) {
    Map<String, PodChurn.PodHistory> byName = new HashMap<>();
    churn.pods().forEach(p -> byName.put(p.name, p));
    List<String> found = new ArrayList<>();
    store
        .updatesByPod()
        .forEach(
            (name, updates) -> {
              PodChurn.PodHistory pod = byName.get(name);
              for (RecordingStore.Update u : updates) {
                if (u.deleted() && (pod == null || pod.goneAt < 0 || pod.goneAt > u.at())) {
                  found.add(
                      name
                          + "@"
                          + u.version()
                          + " delivered as deleted "
                          + (pod == null || pod.goneAt < 0
                              ? "and never deleted"
                              : (pod.goneAt - u.at()) + " ms before its delete was sent"));
                }
              }
            });
    return found;
  }

  /**
   * Pods that came back: an update that shows a pod live after an update delivered it as deleted (a
   * deleted pod's name never returns: the churn's names are unique). Full snapshots that carry such
   * a pod live are {@link RecordingStore#resurrectedBySnapshot}.
   */
  static List<String> resurrected(RecordingStore store) {
    List<String> found = new ArrayList<>();
    store
        .updatesByPod()
        .forEach(
            (name, updates) -> {
              boolean deleted = false;
              for (RecordingStore.Update u : updates) {
                if (deleted && !u.deleted()) {
                  found.add(name + "@" + u.version() + " delivered live after its deletion");
                }
                deleted |= u.deleted();
              }
            });
    return found;
  }

  /**
   * Pods whose Failed or Succeeded state (what Spark counts as an executor's exit) did not reach
   * the store before their deletion did, although the watch saw the deletion: a watch shows every
   * change in order, so the informer saw the terminal state and must have delivered it (its queue
   * coalesces only what Spark does not act on); so must a relist that found the pod ended. Exempt
   * only a deletion a relist made up from a version older than the terminal write (the last one the
   * informer held): a pod that ended and went while the informer was away, which no LIST can show
   * (Spark's own sources neither).
   */
  List<String> terminalStatesLost(RecordingStore store) {
    Map<String, List<RecordingStore.Update>> updates = store.updatesByPod();
    List<String> found = new ArrayList<>();
    for (PodChurn.PodHistory pod : churn.pods()) {
      long terminal = pod.terminalVersion;
      if (terminal < 0) {
        continue;
      }
      boolean terminalSeen = false;
      for (RecordingStore.Update u : updates.getOrDefault(pod.name, List.of())) {
        if (u.deleted() && u.version() >= terminal && !terminalSeen) {
          found.add(
              pod.name
                  + ": written terminal at "
                  + terminal
                  + ", delivered deleted at "
                  + u.version()
                  + " without a terminal state before");
          break;
        }
        terminalSeen |= u.terminal() && u.version() >= terminal;
      }
    }
    return found;
  }

  /** Exactly one Service, with the expected name, per executor in the LIST. */
  List<String> serviceProblems(Map<String, Pod> truth) {
    Map<Long, List<String>> byExecutor = servicesByExecutor();
    List<String> problems = new ArrayList<>();
    for (Pod pod : truth.values()) {
      long id = execId(pod);
      List<String> names = byExecutor.getOrDefault(id, List.of());
      String expected = ExecutorServiceNames.serviceName(app, Long.toString(id));
      if (!names.equals(List.of(expected))) {
        problems.add("executor " + id + " has Services " + names + ", expected [" + expected + "]");
      }
    }
    return problems;
  }

  /** Services of executors whose pods are gone. */
  List<String> leftoverServices(Map<String, Pod> truth) {
    Set<Long> live =
        truth.values().stream().map(ChaosInvariants::execId).collect(Collectors.toSet());
    Map<Long, List<String>> byExecutor = servicesByExecutor();
    return byExecutor.keySet().stream()
        .filter(id -> !live.contains(id))
        .sorted()
        .map(id -> "gone executor " + id + " still has " + byExecutor.get(id))
        .toList();
  }

  // ---- what the run reports ----

  /**
   * Changes whose exact result reached updatePod: a written resourceVersion delivered (the inactive
   * label included: it arrives as the apiserver sent it), or a deletion delivered as one. The rest
   * were coalesced: states a pod went through while the informer was away, which the design allows
   * (latest state wins, terminal states excepted).
   */
  int deliveredChanges(RecordingStore store) {
    Map<String, List<RecordingStore.Update>> updates = store.updatesByPod();
    int delivered = 0;
    for (PodChurn.PodHistory pod : churn.pods()) {
      List<RecordingStore.Update> own = updates.getOrDefault(pod.name, List.of());
      Set<Long> seen =
          own.stream()
              .filter(u -> !u.deleted())
              .map(RecordingStore.Update::version)
              .collect(Collectors.toSet());
      List<Long> written = pod.versions();
      boolean deleted = pod.goneAt >= 0 && !pod.inactivated;
      for (Long version : written) {
        if (seen.contains(version)) {
          delivered++;
        }
      }
      if (deleted && own.stream().anyMatch(RecordingStore.Update::deleted)) {
        delivered++;
      }
    }
    return delivered;
  }

  private Map<Long, List<String>> servicesByExecutor() {
    Map<Long, List<String>> byExecutor = new HashMap<>();
    for (Service s : plane.executorServices(app)) {
      long id = Long.parseLong(s.getMetadata().getLabels().get("spark-exec-id"));
      byExecutor.computeIfAbsent(id, k -> new ArrayList<>()).add(s.getMetadata().getName());
    }
    return byExecutor;
  }

  private static long execId(Pod pod) {
    return Long.parseLong(TestPlane.executorId(pod));
  }

  private static <K, V> String difference(Map<K, V> a, Map<K, V> b) {
    Set<K> keys = new HashSet<>(a.keySet());
    keys.addAll(b.keySet());
    return keys.stream()
        .filter(k -> !Objects.equals(a.get(k), b.get(k)))
        .limit(10)
        .map(k -> k + " " + a.get(k) + " vs " + b.get(k))
        .collect(Collectors.joining(", "));
  }
}

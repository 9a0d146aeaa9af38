package org.sparkk8snative.spark;

import io.fabric8.kubernetes.api.model.Pod;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.spark.SparkConf;
import org.apache.spark.scheduler.cluster.k8s.ExecutorPodState;
import org.apache.spark.scheduler.cluster.k8s.ExecutorPodsSnapshot;
import scala.Function1;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;
import scala.runtime.BoxedUnit;

/**
 * Spark's real {@code ExecutorPodsSnapshotsStoreImpl}, with every call counted, and a subscriber
 * that records, per executor id, the states Spark itself derives from the pods.
 */
final class CountingStore extends ForwardingSnapshotsStore {
  final AtomicInteger updates = new AtomicInteger();
  final AtomicInteger replacements = new AtomicInteger();

  /** Sizes of each replacement, in order. */
  final List<Integer> replacementSizes = java.util.Collections.synchronizedList(new ArrayList<>());

  /** Executor id -> every distinct state Spark derived, in order (e.g. PodPending, PodRunning). */
  final Map<Long, List<String>> states = new HashMap<>();

  final Map<Long, ExecutorPodState> latest = new HashMap<>();

  CountingStore() {
    Function1<Seq<ExecutorPodsSnapshot>, BoxedUnit> subscriber =
        snapshots -> {
          synchronized (states) {
            for (ExecutorPodsSnapshot snapshot : CollectionConverters.asJava(snapshots)) {
              for (Map.Entry<Object, ExecutorPodState> e :
                  CollectionConverters.asJava(snapshot.executorPods()).entrySet()) {
                long id = (Long) e.getKey();
                String name = e.getValue().getClass().getSimpleName();
                List<String> seen = states.computeIfAbsent(id, k -> new ArrayList<>());
                if (seen.isEmpty() || !seen.get(seen.size() - 1).equals(name)) {
                  seen.add(name);
                }
                latest.put(id, e.getValue());
              }
            }
          }
          return BoxedUnit.UNIT;
        };
    addSubscriber(20L, subscriber);
  }

  List<String> statesOf(long execId) {
    synchronized (states) {
      return new ArrayList<>(states.getOrDefault(execId, List.of()));
    }
  }

  ExecutorPodState latestOf(long execId) {
    synchronized (states) {
      return latest.get(execId);
    }
  }

  @Override
  public void updatePod(Pod updatedPod) {
    updates.incrementAndGet();
    super.updatePod(updatedPod);
  }

  @Override
  public void replaceSnapshot(Seq<Pod> newSnapshot) {
    replacements.incrementAndGet();
    replacementSizes.add(newSnapshot.size());
    super.replaceSnapshot(newSnapshot);
  }

  static SparkConf conf(Map<String, String> entries) {
    SparkConf conf = new SparkConf(false);
    entries.forEach(conf::set);
    return conf;
  }
}

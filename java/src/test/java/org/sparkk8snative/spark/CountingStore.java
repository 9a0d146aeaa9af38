package org.sparkk8snative.spark;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.spark.SparkConf;
import org.apache.spark.scheduler.cluster.k8s.ExecutorPodState;
import org.apache.spark.scheduler.cluster.k8s.ExecutorPodsSnapshot;
import org.apache.spark.scheduler.cluster.k8s.ExecutorPodsSnapshotsStore;
import scala.Tuple2;

/**
 * Spark's real {@code ExecutorPodsSnapshotsStoreImpl}, with every call counted, and a subscriber
 * that records, per executor id, the states Spark itself derives from the pods. The same source on
 * every Spark line: the store's methods take a {@code Seq} that is another type on each Scala, so
 * the counting store is a proxy of Spark's interface ({@link #spark}) rather than an implementation
 * of it.
 */
final class CountingStore {
  final AtomicInteger updates = new AtomicInteger();
  final AtomicInteger replacements = new AtomicInteger();

  /** Sizes of each replacement, in order. */
  final List<Integer> replacementSizes = Collections.synchronizedList(new ArrayList<>());

  /** When each replacement came ({@code System.nanoTime()}), in order. */
  final List<Long> replacementNanos = Collections.synchronizedList(new ArrayList<>());

  /** Executor id -> every distinct state Spark derived, in order (e.g. PodPending, PodRunning). */
  final Map<Long, List<String>> states = new HashMap<>();

  final Map<Long, ExecutorPodState> latest = new HashMap<>();

  private final SparksOwnStore sparks = new SparksOwnStore();

  /** The store to hand to the sources under test. */
  final ExecutorPodsSnapshotsStore spark =
      (ExecutorPodsSnapshotsStore)
          Proxy.newProxyInstance(
              ExecutorPodsSnapshotsStore.class.getClassLoader(),
              new Class<?>[] {ExecutorPodsSnapshotsStore.class},
              (proxy, method, args) -> {
                if (method.getName().equals("updatePod")) {
                  updates.incrementAndGet();
                } else if (method.getName().equals("replaceSnapshot")) {
                  replacements.incrementAndGet();
                  replacementNanos.add(System.nanoTime());
                  replacementSizes.add(((scala.collection.Iterable<?>) args[0]).size());
                }
                try {
                  return method.invoke(sparks.impl, args);
                } catch (InvocationTargetException e) {
                  throw e.getCause();
                }
              });

  CountingStore() {
    ScalaCollections.subscribe(
        spark,
        20L,
        snapshots -> {
          synchronized (states) {
            for (ExecutorPodsSnapshot snapshot : snapshots) {
              for (Tuple2<Object, ExecutorPodState> e :
                  ScalaCollections.toJava(snapshot.executorPods())) {
                long id = (Long) e._1();
                String name = e._2().getClass().getSimpleName();
                List<String> seen = states.computeIfAbsent(id, k -> new ArrayList<>());
                if (seen.isEmpty() || !seen.get(seen.size() - 1).equals(name)) {
                  seen.add(name);
                }
                latest.put(id, e._2());
              }
            }
          }
        });
  }

  List<String> statesOf(long execId) {
    synchronized (states) {
      return new ArrayList<>(states.getOrDefault(execId, Collections.emptyList()));
    }
  }

  ExecutorPodState latestOf(long execId) {
    synchronized (states) {
      return latest.get(execId);
    }
  }

  void stop() {
    sparks.stop();
  }

  static SparkConf conf(Map<String, String> entries) {
    SparkConf conf = new SparkConf(false);
    entries.forEach(conf::set);
    return conf;
  }
}

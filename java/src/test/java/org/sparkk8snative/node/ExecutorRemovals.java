package org.sparkk8snative.node;

import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.spark.SparkContext;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerExecutorRemoved;

/**
 * Spark's removals of an app's executors, as its listener bus posts them. Spark may post more than
 * one for an executor (SPARK-35011: a removal of an executor already removed is posted too, e.g.
 * its pod's deletion or exit after the driver's kill, or after a decommission): the first is when
 * and why Spark removed it, and is what the tests compare; every reason is kept, in order.
 */
final class ExecutorRemovals extends SparkListener {
  private final Map<String, List<String>> posted = new ConcurrentHashMap<>();
  private final Map<String, Long> removedAt = new ConcurrentHashMap<>();

  private ExecutorRemovals() {}

  /** The removals {@code sc} posts from now on. */
  static ExecutorRemovals of(SparkContext sc) {
    ExecutorRemovals removals = new ExecutorRemovals();
    sc.addSparkListener(removals);
    return removals;
  }

  @Override
  public void onExecutorRemoved(SparkListenerExecutorRemoved e) {
    long now = System.nanoTime();
    // The reason first: an executor counts as removed (removedAt) only once its reason is there.
    posted.computeIfAbsent(e.executorId(), id -> new CopyOnWriteArrayList<>()).add(e.reason());
    removedAt.putIfAbsent(e.executorId(), now);
  }

  boolean removed(String executorId) {
    return removedAt.containsKey(executorId);
  }

  /** When Spark removed the executor ({@link System#nanoTime}): its first removal event. */
  long removedAt(String executorId) {
    return removedAt.get(executorId);
  }

  /** Spark's reason for removing the executor: its first removal event's. */
  String reason(String executorId) {
    return posted.get(executorId).get(0);
  }

  /** The executors removed so far, by id. */
  Set<String> ids() {
    return new TreeSet<>(removedAt.keySet());
  }

  /** Every reason posted for each executor removed so far, by id, in order (Spark's first). */
  Map<String, List<String>> reasons() {
    Map<String, List<String>> all = new TreeMap<>();
    for (String id : ids()) {
      all.put(id, List.copyOf(posted.get(id)));
    }
    return all;
  }
}

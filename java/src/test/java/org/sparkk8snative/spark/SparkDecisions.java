package org.sparkk8snative.spark;

import static org.mockito.ArgumentMatchers.any;
import static org.mockito.ArgumentMatchers.anyString;
import static org.mockito.Mockito.doAnswer;
import static org.mockito.Mockito.mock;
import static org.mockito.Mockito.when;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.ConfigBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import org.apache.spark.SparkConf;
import org.apache.spark.scheduler.ExecutorExited;
import org.apache.spark.scheduler.ExecutorLossReason;
import org.apache.spark.scheduler.cluster.k8s.ExecutorPodState;
import org.apache.spark.scheduler.cluster.k8s.ExecutorPodsLifecycleManager;
import org.apache.spark.scheduler.cluster.k8s.ExecutorPodsSnapshot;
import org.apache.spark.scheduler.cluster.k8s.ExecutorPodsSnapshotsStore;
import org.apache.spark.scheduler.cluster.k8s.KubernetesClusterSchedulerBackend;
import org.apache.spark.util.SystemClock;
import org.sparkk8snative.TestPlane;

/**
 * What Spark decides about its executors when one snapshot source feeds it: Spark's real snapshot
 * store and Spark's real {@code ExecutorPodsLifecycleManager}, started on a recording scheduler
 * backend (a Mockito mock, as Spark's own lifecycle-manager suite uses) that keeps the executors
 * registered with the driver as the real backend does: an executor registers when the test says its
 * JVM came up, and leaves when Spark removes it.
 *
 * <p>Recorded per executor: the state classes Spark's store was handed through {@code updatePod}
 * (as Spark's {@code ExecutorPodsSnapshot} classifies each pod, repeats removed), every removal
 * with its exit code, whether the app caused it and its message, and (Spark 4.x, where the
 * lifecycle manager counts them) the executors counted as failed.
 */
final class SparkDecisions {
  /** A removal as Spark's scheduler backend was asked for it. */
  record Removal(int exitCode, boolean exitCausedByApp, String message, long atMillis) {
    /**
     * What Spark decided and logged, comparable between two sources: the message up to the pod's
     * container statuses, and without the clock readings of a missing-pod message (its registration
     * and polling times, in epoch milliseconds). The container statuses describe the pod as Spark
     * first saw it in that state, and of two states of one class (a Running pod whose Spark
     * container exited, then the same pod Failed) which reaches Spark first is a race even between
     * Spark's own watch and its polling LIST; the decision (removed, exit code, cause) is the same.
     */
    String comparable() {
      int statuses = message.indexOf("The API gave the following container statuses");
      String decided = statuses < 0 ? message : message.substring(0, statuses);
      return exitCode
          + " "
          + exitCausedByApp
          + " "
          + decided.strip().replaceAll("\\d{12,}", "<ms>");
    }
  }

  private final String name;
  private final SparksOwnStore sparks = new SparksOwnStore();
  private final Map<Long, List<Handed>> classes = new TreeMap<>();
  private final List<Stall> stalls = new ArrayList<>();
  private final Map<Long, List<Removal>> removals = new TreeMap<>();
  private final Map<String, Long> registered = new TreeMap<>();
  private final KubernetesClient refusingClient;
  private final ExecutorPodsLifecycleManager lifecycle;

  /** A state class Spark's store was handed for an executor, and when. */
  record Handed(String sparkClass, long atMillis) {}

  /** A spell in which Spark's store took nothing from the source. */
  record Stall(long fromMillis, long untilMillis) {
    boolean covers(long millis) {
      return millis >= fromMillis && millis <= untilMillis;
    }
  }

  /** While set, {@code updatePod} and {@code replaceSnapshot} wait until then: a slow consumer. */
  private volatile long stalledUntilMillis;

  /** The store to hand to the source under test. */
  final ExecutorPodsSnapshotsStore store;

  SparkDecisions(String name, SparkConf conf) {
    this.name = name;
    this.store =
        (ExecutorPodsSnapshotsStore)
            Proxy.newProxyInstance(
                ExecutorPodsSnapshotsStore.class.getClassLoader(),
                new Class<?>[] {ExecutorPodsSnapshotsStore.class},
                (proxy, method, args) -> {
                  if (method.getName().equals("updatePod")
                      || method.getName().equals("replaceSnapshot")) {
                    waitOutStall();
                  }
                  if (method.getName().equals("updatePod")) {
                    record((Pod) args[0]);
                  }
                  try {
                    return method.invoke(sparks.impl, args);
                  } catch (InvocationTargetException e) {
                    throw e.getCause();
                  }
                });
    // The lifecycle manager deletes a failed executor's pod; the event history is the test's, so
    // its writes go to a port that refuses them at once (Spark logs and goes on, as on a 403).
    this.refusingClient =
        new KubernetesClientBuilder()
            .withConfig(
                new ConfigBuilder()
                    .withMasterUrl("https://127.0.0.1:1")
                    .withNamespace(conf.get("spark.kubernetes.namespace", "default"))
                    .withRequestRetryBackoffLimit(0)
                    .build())
            .build();
    this.lifecycle = newLifecycleManager(conf, refusingClient, store);
    lifecycle.start(recordingBackend());
  }

  /** Spark's constructor of the line under test: 3.5's takes no clock, 4.x's does. */
  private static ExecutorPodsLifecycleManager newLifecycleManager(
      SparkConf conf, KubernetesClient client, ExecutorPodsSnapshotsStore store) {
    try {
      for (Constructor<?> c : ExecutorPodsLifecycleManager.class.getConstructors()) {
        if (c.getParameterCount() == 3) {
          return (ExecutorPodsLifecycleManager) c.newInstance(conf, client, store);
        }
        if (c.getParameterCount() == 4) {
          return (ExecutorPodsLifecycleManager)
              c.newInstance(conf, client, store, new SystemClock());
        }
      }
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException("cannot build Spark's ExecutorPodsLifecycleManager", e);
    }
    throw new IllegalStateException("no known constructor of ExecutorPodsLifecycleManager");
  }

  @SuppressWarnings({"unchecked", "rawtypes"})
  private KubernetesClusterSchedulerBackend recordingBackend() {
    KubernetesClusterSchedulerBackend backend = mock(KubernetesClusterSchedulerBackend.class);
    doAnswer(
            call -> {
              String id = call.getArgument(0);
              ExecutorLossReason reason = call.getArgument(1);
              synchronized (this) {
                registered.remove(id);
                ExecutorExited exited = (ExecutorExited) reason;
                removals
                    .computeIfAbsent(Long.parseLong(id), k -> new ArrayList<>())
                    .add(
                        new Removal(
                            exited.exitCode(),
                            exited.exitCausedByApp(),
                            exited.message(),
                            System.currentTimeMillis()));
              }
              return null;
            })
        .when(backend)
        .doRemoveExecutor(anyString(), any());
    when(backend.getExecutorIds())
        .thenAnswer(
            call -> {
              synchronized (this) {
                return ScalaCollections.toScalaList(new ArrayList<>(registered.keySet()));
              }
            });
    when(backend.getExecutorsWithRegistrationTs())
        .thenAnswer(
            call -> {
              synchronized (this) {
                scala.collection.immutable.Map map =
                    scala.collection.immutable.Map$.MODULE$.empty();
                for (Map.Entry<String, Long> e : registered.entrySet()) {
                  map = (scala.collection.immutable.Map) map.updated(e.getKey(), e.getValue());
                }
                return map;
              }
            });
    when(backend.isExecutorActive(anyString()))
        .thenAnswer(
            call -> {
              synchronized (this) {
                return registered.containsKey((String) call.getArgument(0));
              }
            });
    return backend;
  }

  /** The executor's JVM registered with the driver (both sides are told at the same instant). */
  synchronized void registered(long execId, long atMillis) {
    registered.put(Long.toString(execId), atMillis);
  }

  /**
   * Spark's store takes nothing from the source for this long (or longer, if a stall already runs
   * past it): a consumer that fell behind.
   */
  synchronized void stall(long millis) {
    long now = System.currentTimeMillis();
    long until = Math.max(stalledUntilMillis, now + millis);
    stalls.add(new Stall(now, until));
    stalledUntilMillis = until;
  }

  /** Whether Spark's store is stalled now. */
  boolean stalled() {
    return stalledUntilMillis > System.currentTimeMillis();
  }

  synchronized List<Stall> stalls() {
    return new ArrayList<>(stalls);
  }

  private void waitOutStall() throws InterruptedException {
    long wait = stalledUntilMillis - System.currentTimeMillis();
    if (wait > 0) {
      Thread.sleep(wait);
    }
  }

  private void record(Pod pod) {
    String id = TestPlane.executorId(pod);
    if (id == null) {
      return;
    }
    String sparkClass = sparkClass(pod);
    long now = System.currentTimeMillis();
    synchronized (this) {
      List<Handed> seen = classes.computeIfAbsent(Long.parseLong(id), k -> new ArrayList<>());
      if (seen.isEmpty() || !seen.get(seen.size() - 1).sparkClass().equals(sparkClass)) {
        seen.add(new Handed(sparkClass, now));
      }
    }
  }

  /** The state Spark's store makes of this pod (ExecutorPodsSnapshot's own classification). */
  static String sparkClass(Pod pod) {
    ExecutorPodsSnapshot snapshot =
        ExecutorPodsSnapshot.apply(ScalaCollections.toScalaList(List.of(pod)), 0L);
    List<ExecutorPodState> states = ScalaCollections.toJava(snapshot.executorPods().values());
    return states.isEmpty() ? "none" : states.get(0).getClass().getSimpleName();
  }

  synchronized List<String> classesOf(long execId) {
    return classes.getOrDefault(execId, List.of()).stream().map(Handed::sparkClass).toList();
  }

  /** The state classes handed to the store for an executor, repeats removed, with their times. */
  synchronized List<Handed> handedOf(long execId) {
    return new ArrayList<>(classes.getOrDefault(execId, List.of()));
  }

  /** How many executors Spark has removed so far. */
  synchronized int executorsRemoved() {
    return removals.size();
  }

  synchronized List<Removal> removalsOf(long execId) {
    return new ArrayList<>(removals.getOrDefault(execId, List.of()));
  }

  synchronized boolean isRegistered(long execId) {
    return registered.containsKey(Long.toString(execId));
  }

  /**
   * The executors Spark counted as failed, where its lifecycle manager counts them (Spark 4.x:
   * every snapshot's PodFailed executors); empty when the line counts them elsewhere (3.5: its
   * allocator).
   */
  @SuppressWarnings("unchecked")
  Set<Long> countedFailed() {
    try {
      Field f = ExecutorPodsLifecycleManager.class.getDeclaredField("failedExecutorIds");
      f.setAccessible(true);
      Set<Long> ids = new TreeSet<>();
      for (Object id :
          ScalaCollections.toJava((scala.collection.Iterable<Object>) f.get(lifecycle))) {
        ids.add((Long) id);
      }
      return ids;
    } catch (NoSuchFieldException e) {
      return Set.of();
    } catch (IllegalAccessException e) {
      throw new IllegalStateException(e);
    }
  }

  /** Whether this Spark line's lifecycle manager counts executor failures. */
  static boolean lifecycleCountsFailures() {
    try {
      ExecutorPodsLifecycleManager.class.getDeclaredField("failedExecutorIds");
      return true;
    } catch (NoSuchFieldException e) {
      return false;
    }
  }

  void stop() {
    sparks.stop();
    refusingClient.close();
  }

  @Override
  public String toString() {
    return name;
  }
}

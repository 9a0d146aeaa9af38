package org.sparkk8snative.spark;

import io.fabric8.kubernetes.api.model.ContainerBuilder;
import io.fabric8.kubernetes.api.model.ContainerStatus;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.PodStatusBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.dsl.base.PatchContext;
import io.fabric8.kubernetes.client.dsl.base.PatchType;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.function.LongConsumer;
import org.sparkk8snative.ExecutorPods;
import org.sparkk8snative.TestPlane;

/**
 * Seeded, kubelet-realistic histories of executor pods, applied to the real apiserver: each
 * executor follows one of the ways an executor pod lives and ends (exits with a code, with and
 * without a sidecar still running; deleted before it was scheduled, while pending, while running,
 * with and without a grace period; phase Unknown; marked inactive; leaving the selector), and the
 * executors' steps are interleaved at random. Everything depends on the seed, nothing on timing.
 */
final class ExecutorHistories {
  static final String SPARK_CONTAINER = "spark-kubernetes-executor";
  private static final int[] EXIT_CODES = {0, 1, 52, 137, 143};

  /** What one step writes. */
  enum Kind {
    CREATE_UNSCHEDULED,
    CREATE_SCHEDULED,
    PENDING,
    /** Every container running; the executor's JVM registers with the driver. */
    RUNNING,
    RELABEL,
    /** The Spark container terminated with the step's exit code, the pod still Running. */
    SPARK_EXIT,
    /** Phase Failed (exit code not 0) or Succeeded, every container terminated. */
    END,
    UNKNOWN,
    DELETE_GRACEFULLY,
    DELETE_NOW,
    INACTIVATE,
    LEAVE_SELECTOR
  }

  record Step(Kind kind, int exitCode) {
    @Override
    public String toString() {
      return kind == Kind.SPARK_EXIT || kind == Kind.END ? kind + "(" + exitCode + ")" : "" + kind;
    }
  }

  /** One executor's whole history. */
  static final class Executor {
    final long execId;
    final boolean sidecar;
    final List<Step> steps = new ArrayList<>();
    int next;

    Executor(long execId, boolean sidecar) {
      this.execId = execId;
      this.sidecar = sidecar;
    }

    @Override
    public String toString() {
      return "executor " + execId + (sidecar ? " (with a sidecar)" : "") + ": " + steps;
    }
  }

  final List<Executor> executors = new ArrayList<>();
  private final Random random;
  private final KubernetesClient client;
  private final String namespace;
  private final String appId;
  int writes;

  ExecutorHistories(long seed, int count, TestPlane plane, String appId) {
    this.random = new Random(seed);
    this.client = plane.admin();
    this.namespace = plane.namespace();
    this.appId = appId;
    for (long id = 1; id <= count; id++) {
      executors.add(history(id));
    }
  }

  private Executor history(long execId) {
    Executor e = new Executor(execId, random.nextInt(3) == 0);
    int code = EXIT_CODES[random.nextInt(EXIT_CODES.length)];
    int killed = random.nextBoolean() ? 143 : 137;
    int way = random.nextInt(10);
    if (way == 0) { // deleted before it was scheduled
      add(e, Kind.CREATE_UNSCHEDULED, Kind.DELETE_NOW);
      return e;
    }
    add(e, Kind.CREATE_SCHEDULED, Kind.PENDING);
    switch (way) {
      case 1 -> add(e, Kind.DELETE_GRACEFULLY, Kind.DELETE_NOW); // deleted while pending
      case 2 -> { // failed while pending (an image that cannot start)
        e.steps.add(new Step(Kind.END, 1));
        add(e, Kind.DELETE_NOW);
      }
      default -> {
        add(e, Kind.RUNNING);
        if (random.nextBoolean()) {
          add(e, Kind.RELABEL);
        }
        switch (way) {
          case 3 -> { // exits, the kubelet ends the pod, Spark (or a user) deletes it
            e.steps.add(new Step(Kind.SPARK_EXIT, code));
            e.steps.add(new Step(Kind.END, code));
            add(e, Kind.DELETE_NOW);
          }
          case 4 -> { // exits and is deleted before the pod's phase follows
            e.steps.add(new Step(Kind.SPARK_EXIT, code));
            add(e, Kind.DELETE_NOW);
          }
          case 5 -> { // deleted with a grace period: the kubelet stops it, then it goes
            add(e, Kind.DELETE_GRACEFULLY);
            e.steps.add(new Step(Kind.SPARK_EXIT, killed));
            e.steps.add(new Step(Kind.END, killed));
            add(e, Kind.DELETE_NOW);
          }
          case 6 -> add(e, Kind.DELETE_NOW); // force-deleted while running
          case 7 -> add(e, Kind.UNKNOWN, Kind.DELETE_NOW); // its node was lost
          case 8 -> { // exits, and Spark keeps the pod (deleteOnTermination=false)
            e.steps.add(new Step(Kind.SPARK_EXIT, code));
            add(e, Kind.INACTIVATE);
          }
          default -> add(e, Kind.LEAVE_SELECTOR);
        }
      }
    }
    return e;
  }

  private static void add(Executor e, Kind... kinds) {
    for (Kind k : kinds) {
      e.steps.add(new Step(k, 0));
    }
  }

  int steps() {
    return executors.stream().mapToInt(e -> e.steps.size()).sum();
  }

  /** Hears of each step just before it is written. */
  interface BeforeWrite {
    void step(Executor executor, Step step);
  }

  /**
   * Applies every step, the executors interleaved at random (at most {@code concurrent} in flight);
   * {@code beforeWrite} hears of each step before it is written, {@code onRegistered} when an
   * executor's JVM came up.
   */
  void apply(int concurrent, BeforeWrite beforeWrite, LongConsumer onRegistered)
      throws InterruptedException {
    List<Executor> waiting = new ArrayList<>(executors);
    List<Executor> live = new ArrayList<>();
    while (!waiting.isEmpty() || !live.isEmpty()) {
      while (live.size() < concurrent && !waiting.isEmpty()) {
        live.add(waiting.remove(0));
      }
      Executor e = live.get(random.nextInt(live.size()));
      Step step = e.steps.get(e.next++);
      beforeWrite.step(e, step);
      write(e, step);
      if (step.kind() == Kind.RUNNING) {
        onRegistered.accept(e.execId);
      }
      if (e.next == e.steps.size()) {
        live.remove(e);
      }
      Thread.sleep(random.nextInt(25));
    }
  }

  /** Deletes what the histories left (pods marked inactive or out of the selector). */
  void cleanUp() {
    for (Executor e : executors) {
      client.pods().inNamespace(namespace).withName(name(e)).withGracePeriod(0).delete();
    }
  }

  private String name(Executor e) {
    return TestPlane.podName(appId, e.execId);
  }

  private void write(Executor e, Step step) {
    writes++;
    var pod = client.pods().inNamespace(namespace).withName(name(e));
    switch (step.kind()) {
      case CREATE_UNSCHEDULED, CREATE_SCHEDULED -> {
        PodBuilder builder = new PodBuilder(ExecutorPods.executorPod(appId, e.execId));
        if (e.sidecar) {
          builder
              .editSpec()
              .addToContainers(new ContainerBuilder().withName("sidecar").withImage("sc").build())
              .endSpec();
        }
        if (step.kind() == Kind.CREATE_SCHEDULED) {
          // Bound to a node no kubelet serves: a graceful delete then leaves the pod with a
          // deletionTimestamp until this history ends it, as a kubelet would.
          builder.editSpec().withNodeName("differential-node").endSpec();
        }
        client.pods().inNamespace(namespace).resource(builder.build()).create();
      }
      case PENDING -> status(e, "Pending", waiting(SPARK_CONTAINER), waiting("sidecar"));
      case RUNNING -> status(e, "Running", running(SPARK_CONTAINER), running("sidecar"));
      case SPARK_EXIT ->
          status(e, "Running", terminated(SPARK_CONTAINER, step.exitCode()), running("sidecar"));
      case END ->
          status(
              e,
              step.exitCode() == 0 ? "Succeeded" : "Failed",
              terminated(SPARK_CONTAINER, step.exitCode()),
              terminated("sidecar", 0));
      case UNKNOWN -> status(e, "Unknown", running(SPARK_CONTAINER), running("sidecar"));
      case RELABEL -> label(e, "differential-tick", Integer.toString(writes));
      case INACTIVATE -> label(e, "spark-exec-inactive", "true");
      case LEAVE_SELECTOR -> label(e, "spark-role", "former-executor");
      case DELETE_GRACEFULLY -> pod.withGracePeriod(30).delete();
      case DELETE_NOW -> pod.withGracePeriod(0).delete();
    }
  }

  private void label(Executor e, String key, String value) {
    client
        .pods()
        .inNamespace(namespace)
        .withName(name(e))
        .patch(
            PatchContext.of(PatchType.JSON_MERGE),
            "{\"metadata\":{\"labels\":{\"" + key + "\":\"" + value + "\"}}}");
  }

  private void status(Executor e, String phase, ContainerStatus spark, ContainerStatus sidecar) {
    Pod pod = client.pods().inNamespace(namespace).withName(name(e)).get();
    List<ContainerStatus> statuses = e.sidecar ? List.of(spark, sidecar) : List.of(spark);
    pod.setStatus(
        new PodStatusBuilder()
            .withPhase(phase)
            .withPodIP("10.244.0.10")
            .withContainerStatuses(statuses)
            .build());
    client.pods().inNamespace(namespace).resource(pod).updateStatus();
  }

  private static ContainerStatus waiting(String name) {
    return ExecutorPods.containerStatus("Pending", 0, name);
  }

  private static ContainerStatus running(String name) {
    return ExecutorPods.containerStatus("Running", 0, name);
  }

  private static ContainerStatus terminated(String name, int exitCode) {
    return ExecutorPods.containerStatus(exitCode == 0 ? "Succeeded" : "Failed", exitCode, name);
  }
}

package org.sparkk8snative.spark;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.dsl.base.PatchContext;
import io.fabric8.kubernetes.client.dsl.base.PatchType;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import org.sparkk8snative.TestPlane;

/**
 * Executor pods churning at random, as a busy application and its kubelet make them: created,
 * Pending to Running to Failed (with an exit code) or Succeeded, relabelled, marked {@code
 * spark-exec-inactive}, deleted. The apiserver is restarted under it, so every operation is retried
 * until the apiserver takes it, and what it finally wrote is recorded. The sequence of operations
 * depends on the seed only: each is decided from this model, never from timing.
 */
final class PodChurn {
  /** At most this many pods are live at once; the rest of the time pods come and go. */
  private static final int MAX_LIVE = 60;

  private static final int MIN_LIVE = 10;
  private static final int[] EXIT_CODES = {1, 52, 137, 143};

  /**
   * An operation still refused after this long fails the run (the apiserver is never down this
   * long).
   */
  private static final long GIVE_UP_MILLIS = 180_000;

  /** One executor pod, as the churn made it. */
  static final class PodHistory {
    final String name;
    final long execId;

    /** When its create was answered (epoch millis); from then on it exists on the apiserver. */
    volatile long createdAt = -1;

    /**
     * When its delete or inactive label was first sent; -1 while it is still an active executor.
     */
    volatile long goneAt = -1;

    /** Whether it left through the inactive label (its last write) rather than a delete. */
    volatile boolean inactivated;

    /** The resourceVersion of its write to Failed or Succeeded; -1 while it has none. */
    volatile long terminalVersion = -1;

    /** resourceVersions of every write, in order. */
    final List<Long> versions = new ArrayList<>();

    private String phase = "Pending";

    PodHistory(String name, long execId) {
      this.name = name;
      this.execId = execId;
    }

    synchronized List<Long> versions() {
      return new ArrayList<>(versions);
    }

    private synchronized void wrote(Pod pod) {
      versions.add(Long.parseLong(pod.getMetadata().getResourceVersion()));
    }
  }

  /** What the churn did, by kind. */
  final AtomicInteger creates = new AtomicInteger();

  final AtomicInteger phaseChanges = new AtomicInteger();
  final AtomicInteger relabels = new AtomicInteger();
  final AtomicInteger inactivations = new AtomicInteger();
  final AtomicInteger deletes = new AtomicInteger();

  /** Operations that had to be retried (the apiserver was down or refused). */
  final AtomicInteger retried = new AtomicInteger();

  private final TestPlane plane;
  private final String appId;
  private final Random random;
  private final Map<String, PodHistory> pods = new ConcurrentHashMap<>();

  /**
   * Live pods in creation order: the random choices index into it, so they depend on the seed only.
   */
  private final List<PodHistory> live = new ArrayList<>();

  private long nextExecId = 1;
  private long ticks;
  private volatile boolean running = true;
  private volatile Throwable failure;
  private Thread thread;

  PodChurn(TestPlane plane, String appId, long seed) {
    this.plane = plane.failingFast();
    this.appId = appId;
    this.random = new Random(seed);
  }

  /** The app whose executor pods churn. */
  String app() {
    return appId;
  }

  void start() {
    thread = new Thread(this::run, "chaos-churn");
    thread.setDaemon(true);
    thread.start();
  }

  /** Stops after the operation in progress; throws if an operation failed for good. */
  void stop() throws InterruptedException {
    running = false;
    thread.join(GIVE_UP_MILLIS + 10_000);
    plane.admin().close();
    if (failure != null) {
      throw new AssertionError("the churn failed", failure);
    }
  }

  Collection<PodHistory> pods() {
    return pods.values();
  }

  int changes() {
    return creates.get()
        + phaseChanges.get()
        + relabels.get()
        + inactivations.get()
        + deletes.get();
  }

  private void run() {
    try {
      while (running) {
        step();
        Thread.sleep(10 + random.nextInt(30));
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (Throwable t) {
      failure = t;
    }
  }

  private void step() {
    if (live.size() < MIN_LIVE || (live.size() < MAX_LIVE && random.nextInt(100) < 30)) {
      create();
      return;
    }
    PodHistory pod = live.get(random.nextInt(live.size()));
    int dice = random.nextInt(100);
    switch (pod.phase) {
      case "Pending" -> {
        if (dice < 60) {
          setPhase(pod, "Running", 0);
        } else if (dice < 70) {
          setPhase(pod, "Failed", EXIT_CODES[random.nextInt(EXIT_CODES.length)]);
        } else if (dice < 85) {
          relabel(pod);
        } else if (dice < 93) {
          inactivate(pod);
        } else {
          delete(pod);
        }
      }
      case "Running" -> {
        if (dice < 25) {
          setPhase(pod, "Failed", EXIT_CODES[random.nextInt(EXIT_CODES.length)]);
        } else if (dice < 40) {
          setPhase(pod, "Succeeded", 0);
        } else if (dice < 70) {
          relabel(pod);
        } else if (dice < 85) {
          inactivate(pod);
        } else {
          delete(pod);
        }
      }
      default -> { // Failed or Succeeded: what remains is cleanup, as Spark does it
        if (dice < 20) {
          relabel(pod);
        } else if (dice < 50) {
          inactivate(pod);
        } else {
          delete(pod);
        }
      }
    }
  }

  private void create() {
    long execId = nextExecId++;
    PodHistory pod = new PodHistory(TestPlane.podName(appId, execId), execId);
    pods.put(pod.name, pod);
    Pod created =
        retrying(
            "create " + pod.name,
            () -> {
              try {
                return plane.createExecutor(appId, execId);
              } catch (KubernetesClientException e) {
                if (e.getCode()
                    == 409) { // an earlier attempt made it before the apiserver went away
                  return plane.admin().pods().withName(pod.name).get();
                }
                throw e;
              }
            });
    pod.wrote(created);
    pod.createdAt = System.currentTimeMillis();
    live.add(pod);
    creates.incrementAndGet();
  }

  private void setPhase(PodHistory pod, String phase, int exitCode) {
    Pod written = retrying(phase + " " + pod.name, () -> plane.setPhase(pod.name, phase, exitCode));
    pod.wrote(written);
    if (phase.equals("Failed") || phase.equals("Succeeded")) {
      pod.terminalVersion = Long.parseLong(written.getMetadata().getResourceVersion());
    }
    pod.phase = phase;
    phaseChanges.incrementAndGet();
  }

  /** A label change that keeps the pod an active executor. */
  private void relabel(PodHistory pod) {
    pod.wrote(patchLabel(pod, "chaos-tick", Long.toString(++ticks)));
    relabels.incrementAndGet();
  }

  /** What Spark does to an executor it no longer tracks: the pod leaves the informer's selector. */
  private void inactivate(PodHistory pod) {
    pod.goneAt = System.currentTimeMillis();
    pod.inactivated = true;
    pod.wrote(patchLabel(pod, "spark-exec-inactive", "true"));
    live.remove(pod);
    inactivations.incrementAndGet();
  }

  private void delete(PodHistory pod) {
    pod.goneAt = System.currentTimeMillis();
    retrying(
        "delete " + pod.name,
        () -> {
          plane.deletePod(pod.name); // a pod already gone (an earlier attempt made it) is no error
          return null;
        });
    live.remove(pod);
    deletes.incrementAndGet();
  }

  private Pod patchLabel(PodHistory pod, String key, String value) {
    String patch = "{\"metadata\":{\"labels\":{\"" + key + "\":\"" + value + "\"}}}";
    return retrying(
        "label " + pod.name,
        () ->
            plane
                .admin()
                .pods()
                .withName(pod.name)
                .patch(PatchContext.of(PatchType.JSON_MERGE), patch));
  }

  /**
   * Runs {@code operation} until the apiserver takes it: it may be restarting, or refuse for a
   * moment.
   */
  private <T> T retrying(String what, Supplier<T> operation) {
    long deadline = System.currentTimeMillis() + GIVE_UP_MILLIS;
    boolean first = true;
    while (true) {
      try {
        return operation.get();
      } catch (KubernetesClientException e) {
        // Anything but a refusal of the request itself may pass: down, restarting, not ready,
        // throttled, conflict.
        boolean refused = e.getCode() == 400 || e.getCode() == 404 || e.getCode() == 422;
        if (refused || System.currentTimeMillis() > deadline) {
          throw new IllegalStateException(what + " failed", e);
        }
        if (first) {
          retried.incrementAndGet();
          first = false;
        }
        try {
          Thread.sleep(200);
        } catch (InterruptedException interrupted) {
          Thread.currentThread().interrupt();
          throw new IllegalStateException(what + " interrupted", interrupted);
        }
      }
    }
  }
}

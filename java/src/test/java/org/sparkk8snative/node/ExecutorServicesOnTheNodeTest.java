package org.sparkk8snative.node;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.fabric8.kubernetes.api.model.Pod;
import java.io.IOException;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import org.apache.spark.SparkContext;
import org.apache.spark.SparkExecutorInfo;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.sparkk8snative.ExecutorServiceNames;
import org.sparkk8snative.TestPlane;

/**
 * Executor Services (SPARK-52505) end to end on the real node: each executor advertises its
 * Service's name, peers fetch shuffle blocks through it (cluster DNS, then kube-proxy to the pod),
 * and once the executor is gone a connection to its Service is refused at once (kube-proxy rejects
 * a Service without endpoints), where a connection to its old pod IP, dropped as a routed
 * multi-node network drops it, waits out the whole connect timeout.
 */
@Tag("node")
class ExecutorServicesOnTheNodeTest {
  private static final int BLOCK_MANAGER_PORT = 7079;
  private static final int CONNECT_TIMEOUT_MILLIS = 10_000;

  private final ProcessNode node = ProcessNode.get();
  private final TestPlane plane = node.plane();

  /** How a connection attempt ended, and after how long. */
  private record Attempt(String outcome, long millis) {}

  private static Attempt connect(String host, int port) {
    long began = System.nanoTime();
    String outcome;
    try (Socket socket = new Socket()) {
      socket.connect(new InetSocketAddress(host, port), CONNECT_TIMEOUT_MILLIS);
      outcome = "connected";
    } catch (ConnectException e) {
      outcome = "refused";
    } catch (SocketTimeoutException e) {
      outcome = "timed out";
    } catch (IOException e) {
      outcome = e.getClass().getSimpleName() + ": " + e.getMessage();
    }
    return new Attempt(outcome, (System.nanoTime() - began) / 1_000_000);
  }

  /**
   * Connection attempts begun every 50 ms from a moment on, each on its own thread, so that an
   * attempt that hangs (a SYN sent to the pod's address while its network is torn down, before
   * kube-proxy has dropped the endpoint) does not delay the ones begun after it: what a peer sees
   * depends on when its fetch begins, not on when the one before it gave up.
   */
  private record Probes(List<Long> begunAt, List<Attempt> attempts, long settledAt) {
    private static final long PACE_MILLIS = 50;
    private static final long STABLE_MILLIS = 2_000;
    private static final long GIVE_UP_MILLIS = 30_000;

    /**
     * Probes until {@code settled} holds and every attempt of the last 2 s since was refused fast,
     * or 30 s have passed. Until the pod's network is gone, its dead process's address refuses by
     * itself; only after that does a refusal prove kube-proxy's. Paced: hundreds of refusals a
     * second would run into the kernel's ICMP rate limit (icmp_msgs_per_sec), and a SYN left
     * without its reject is retried only after 1 s.
     */
    static Probes after(long since, Supplier<Attempt> attempt, BooleanSupplier settled)
        throws InterruptedException {
      ExecutorService threads = Executors.newCachedThreadPool();
      List<Long> begunAt = new ArrayList<>();
      List<Future<Attempt>> pending = new ArrayList<>();
      long settledAt = -1;
      try {
        while (true) {
          begunAt.add(millisSince(since));
          pending.add(threads.submit(attempt::get));
          Thread.sleep(PACE_MILLIS);
          long elapsed = millisSince(since);
          if (settledAt < 0 && settled.getAsBoolean()) {
            settledAt = elapsed;
          }
          if (elapsed > GIVE_UP_MILLIS
              || (settledAt >= 0
                  && elapsed - settledAt >= STABLE_MILLIS
                  && lastAttemptsRefused(begunAt, pending, elapsed))) {
            break;
          }
        }
        List<Attempt> attempts = new ArrayList<>();
        for (Future<Attempt> each : pending) {
          attempts.add(each.get());
        }
        return new Probes(begunAt, attempts, settledAt);
      } catch (ExecutionException e) {
        throw new IllegalStateException("a connection attempt failed to run", e.getCause());
      } finally {
        threads.shutdownNow();
      }
    }

    private static long millisSince(long nanos) {
      return (System.nanoTime() - nanos) / 1_000_000;
    }

    private static boolean lastAttemptsRefused(
        List<Long> begunAt, List<Future<Attempt>> pending, long elapsed)
        throws InterruptedException {
      for (int i = pending.size() - 1; i >= 0 && begunAt.get(i) >= elapsed - STABLE_MILLIS; i--) {
        Future<Attempt> each = pending.get(i);
        if (!each.isDone() || !refusedFast(getNow(each))) {
          return false;
        }
      }
      return true;
    }

    private static Attempt getNow(Future<Attempt> done) throws InterruptedException {
      try {
        return done.get();
      } catch (ExecutionException e) {
        throw new IllegalStateException("a connection attempt failed to run", e.getCause());
      }
    }

    private static boolean refusedFast(Attempt attempt) {
      return attempt.outcome().equals("refused") && attempt.millis() < 200;
    }

    int count() {
      return attempts.size();
    }

    /**
     * When, after {@code since}, the attempts began to be refused fast, every one from then on; -1
     * if the last attempts were not.
     */
    long refusedFromMillis() {
      long from = -1;
      for (int i = attempts.size() - 1; i >= 0 && refusedFast(attempts.get(i)); i--) {
        from = begunAt.get(i);
      }
      return from;
    }

    /** The slowest attempt begun before {@code millis}: what a fetch in that window waited. */
    Attempt slowestBefore(long millis) {
      Attempt slowest = new Attempt("none", -1);
      for (int i = 0; i < attempts.size(); i++) {
        if ((millis < 0 || begunAt.get(i) < millis)
            && attempts.get(i).millis() > slowest.millis()) {
          slowest = attempts.get(i);
        }
      }
      return slowest;
    }
  }

  @Test
  void peersFetchThroughExecutorServicesAndAGoneExecutorsServiceRefusesAtOnce()
      throws InterruptedException {
    String driverPod = node.createDriverPod();
    SparkSession spark =
        SparkSession.builder()
            .config(
                node.sparkJobConf("executor-services", 2, true)
                    .set("spark.kubernetes.executor.enableService", "true")
                    .set("spark.blockManager.port", String.valueOf(BLOCK_MANAGER_PORT))
                    .set("spark.kubernetes.driver.pod.name", driverPod))
            .getOrCreate();
    SparkContext sc = spark.sparkContext();
    String appId = sc.applicationId();
    AtomicLong remoteBytesRead = new AtomicLong();
    sc.addSparkListener(
        new SparkListener() {
          @Override
          public void onTaskEnd(SparkListenerTaskEnd task) {
            if (task.taskMetrics() != null) {
              remoteBytesRead.addAndGet(task.taskMetrics().shuffleReadMetrics().remoteBytesRead());
            }
          }
        });
    try {
      TestPlane.eventually(
          "2 executors to register",
          Duration.ofSeconds(180),
          () -> sc.statusTracker().getExecutorInfos().length == 3);
      for (Pod pod : plane.executorPods(appId)) {
        String service =
            ExecutorServiceNames.serviceName(
                appId, pod.getMetadata().getLabels().get("spark-exec-id"));
        boolean advertised = false;
        for (SparkExecutorInfo info : sc.statusTracker().getExecutorInfos()) {
          advertised |= info.host().equals(service);
        }
        assertTrue(advertised, "an executor's block manager is known by its Service: " + service);
      }

      List<Row> counts =
          spark
              .range(0, 2_000_000, 1, 8)
              .selectExpr("id % 100 AS k")
              .groupBy("k")
              .count()
              .collectAsList();
      assertEquals(100, counts.size());
      counts.forEach(row -> assertEquals(20_000L, row.getLong(1)));
      TestPlane.eventually(
          "the reduce tasks' metrics", Duration.ofSeconds(10), () -> remoteBytesRead.get() > 0);
      System.out.printf(
          "shuffle through executor Services: %d bytes fetched from the other executor%n",
          remoteBytesRead.get());

      Pod victim = plane.executorPods(appId).get(0);
      String victimIp = victim.getStatus().getPodIP();
      String service =
          ExecutorServiceNames.serviceName(
              appId, victim.getMetadata().getLabels().get("spark-exec-id"));
      assertEquals(
          "connected", connect(service, BLOCK_MANAGER_PORT).outcome(), "alive, via the Service");
      node.signal(victim.getMetadata().getName(), "KILL");
      long killed = System.nanoTime();
      Probes probes =
          Probes.after(
              killed,
              () -> connect(service, BLOCK_MANAGER_PORT),
              () ->
                  plane.executorPods(appId).stream()
                      .noneMatch(
                          p -> p.getMetadata().getUid().equals(victim.getMetadata().getUid())));
      long refusedAfter = probes.refusedFromMillis();
      Attempt throughService = connect(service, BLOCK_MANAGER_PORT);

      // Spark deleted the Failed pod (the probes waited for it to be gone, and its network).
      assertTrue(probes.settledAt() >= 0, "Spark deletes the killed executor's pod");
      node.dropTrafficToGonePods(true);
      Attempt toDroppedPodIp;
      try {
        toDroppedPodIp = connect(victimIp, BLOCK_MANAGER_PORT);
      } finally {
        node.dropTrafficToGonePods(false);
      }
      Attempt slowestBefore = probes.slowestBefore(refusedAfter);
      System.out.printf(
          "a gone executor: its Service refuses every connection begun %d ms after the kill or"
              + " later (%d attempts; the pod gone after %d ms; the slowest attempt begun before:"
              + " %d ms, %s), each in %d ms (%s);"
              + " its old pod IP, dropped as on a routed network: %s after %d ms (Spark's connect"
              + " timeout: spark.shuffle.io.connectionTimeout, 120 s by default)%n",
          refusedAfter,
          probes.count(),
          probes.settledAt(),
          slowestBefore.millis(),
          slowestBefore.outcome(),
          throughService.millis(),
          throughService.outcome(),
          toDroppedPodIp.outcome(),
          toDroppedPodIp.millis());
      assertEquals("refused", throughService.outcome());
      assertTrue(
          refusedAfter >= 0 && refusedAfter < 10_000,
          "refused at once within 10 s of the kill: " + refusedAfter);
      assertTrue(throughService.millis() < 200, "each refusal is fast");
      assertEquals("timed out", toDroppedPodIp.outcome());
    } finally {
      spark.stop();
      plane.deletePod(driverPod);
    }
  }
}

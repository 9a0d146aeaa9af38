package org.sparkk8snative.node;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import java.io.IOException;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
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

  /** A driver pod that owns the app's Services (what spark-submit makes in cluster mode). */
  private String createDriverPod() {
    String name = TestPlane.uniqueAppId("driver");
    plane
        .admin()
        .pods()
        .inNamespace(plane.namespace())
        .resource(
            new PodBuilder()
                .withNewMetadata()
                .withName(name)
                .addToLabels("spark-role", "driver")
                .endMetadata()
                .withNewSpec()
                .addNewContainer()
                .withName("spark-kubernetes-driver")
                .withImage(ProcessNode.HOST_IMAGE)
                .withCommand("sleep", "3600")
                .endContainer()
                .endSpec()
                .build())
        .create();
    return name;
  }

  @Test
  void peersFetchThroughExecutorServicesAndAGoneExecutorsServiceRefusesAtOnce()
      throws InterruptedException {
    String driverPod = createDriverPod();
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
      // Until kube-proxy has dropped the pod's endpoint (its 1 s minimum sync), a connection may
      // still reach the pod's address: refused by its dead process, or, once Spark has deleted
      // the pod and its network is gone, "no route to host" after seconds. So: the time until
      // every attempt for 2 s is refused, and the slowest attempt before that.
      long stableSince = -1;
      long slowestBefore = 0;
      String slowestOutcome = "";
      Attempt attempt;
      do {
        // Paced: hundreds of refusals a second would run into the kernel's ICMP rate limit
        // (icmp_msgs_per_sec), and a SYN left without its reject is retried after 1 s.
        Thread.sleep(50);
        attempt = connect(service, BLOCK_MANAGER_PORT);
        long now = System.nanoTime();
        if (attempt.outcome().equals("refused") && attempt.millis() < 200) {
          stableSince = stableSince < 0 ? now - attempt.millis() * 1_000_000 : stableSince;
        } else {
          stableSince = -1;
          if (attempt.millis() > slowestBefore) {
            slowestBefore = attempt.millis();
            slowestOutcome = attempt.outcome();
          }
        }
      } while ((stableSince < 0 || System.nanoTime() - stableSince < 2_000_000_000L)
          && System.nanoTime() - killed < Duration.ofSeconds(30).toNanos());
      long refusedAfter = stableSince < 0 ? -1 : (stableSince - killed) / 1_000_000;
      Attempt throughService = connect(service, BLOCK_MANAGER_PORT);

      // Its Failed pod keeps the IP until the pod object is gone (Spark deletes it, in time).
      plane.deletePod(victim.getMetadata().getName());
      node.dropTrafficToGonePods(true);
      Attempt toDroppedPodIp;
      try {
        TestPlane.eventually(
            "the killed pod to be gone",
            Duration.ofSeconds(30),
            () ->
                plane.executorPods(appId).stream()
                    .noneMatch(
                        p -> p.getMetadata().getUid().equals(victim.getMetadata().getUid())));
        toDroppedPodIp = connect(victimIp, BLOCK_MANAGER_PORT);
      } finally {
        node.dropTrafficToGonePods(false);
      }
      System.out.printf(
          "a gone executor: its Service refuses every connection from %d ms after the kill on"
              + " (slowest attempt before: %d ms, %s), each in %d ms (%s); its old pod IP, dropped"
              + " as on a routed network: %s after %d ms (Spark's connect timeout:"
              + " spark.shuffle.io.connectionTimeout, 120 s by default)%n",
          refusedAfter,
          slowestBefore,
          slowestOutcome.isEmpty() ? "none" : slowestOutcome,
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

package org.sparkk8snative.node;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.fabric8.kubernetes.api.model.Pod;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.spark.SparkContext;
import org.apache.spark.SparkExecutorInfo;
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
class ExecutorServicesOnTheNodeTest extends NodeTest {

  @Test
  void peersFetchThroughExecutorServicesAndAGoneExecutorsServiceRefusesAtOnce()
      throws InterruptedException {
    try (NodeJob job = NodeJob.withServices(node, "executor-services", 2, conf -> conf)) {
      SparkContext sc = job.sc;
      String appId = job.appId;
      AtomicLong remoteBytesRead = job.remoteShuffleBytes;
      for (Pod pod : plane.executorPods(appId)) {
        String service = ExecutorServiceNames.serviceName(appId, TestPlane.executorId(pod));
        boolean advertised = false;
        for (SparkExecutorInfo info : sc.statusTracker().getExecutorInfos()) {
          advertised |= info.host().equals(service);
        }
        assertTrue(advertised, "an executor's block manager is known by its Service: " + service);
      }

      ProcessNode.groupByWithAShuffle(job.spark);
      TestPlane.eventually(
          "the reduce tasks' metrics", Duration.ofSeconds(10), () -> remoteBytesRead.get() > 0);
      System.out.printf(
          "shuffle through executor Services: %d bytes fetched from the other executor%n",
          remoteBytesRead.get());

      Pod victim = plane.executorPods(appId).get(0);
      String victimIp = victim.getStatus().getPodIP();
      String service = ExecutorServiceNames.serviceName(appId, TestPlane.executorId(victim));
      assertEquals(
          "connected",
          ConnectionProbes.connect(service, ProcessNode.BLOCK_MANAGER_PORT).outcome(),
          "alive, via the Service");
      node.signal(victim.getMetadata().getName(), "KILL");
      long killed = System.nanoTime();
      ConnectionProbes probes =
          ConnectionProbes.after(
              killed,
              () -> ConnectionProbes.connect(service, ProcessNode.BLOCK_MANAGER_PORT),
              () ->
                  plane.executorPods(appId).stream()
                      .noneMatch(
                          p -> p.getMetadata().getUid().equals(victim.getMetadata().getUid())));
      long refusedAfter = probes.refusedFromMillis();
      ConnectionProbes.Attempt throughService =
          ConnectionProbes.connect(service, ProcessNode.BLOCK_MANAGER_PORT);

      // Spark deleted the Failed pod (the probes waited for it to be gone, and its network).
      assertTrue(probes.settledAt() >= 0, "Spark deletes the killed executor's pod");
      node.dropTrafficToGonePods(true);
      ConnectionProbes.Attempt toDroppedPodIp;
      try {
        toDroppedPodIp = ConnectionProbes.connect(victimIp, ProcessNode.BLOCK_MANAGER_PORT);
      } finally {
        node.dropTrafficToGonePods(false);
      }
      ConnectionProbes.Attempt slowestBefore = probes.slowestBefore(refusedAfter);
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
    }
  }
}

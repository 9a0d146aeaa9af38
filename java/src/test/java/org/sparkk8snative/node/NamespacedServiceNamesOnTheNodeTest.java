package org.sparkk8snative.node;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.fabric8.kubernetes.api.model.HostAlias;
import io.fabric8.kubernetes.api.model.Pod;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.spark.SparkContext;
import org.apache.spark.SparkExecutorInfo;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.Test;
import org.sparkk8snative.ExecutorServiceNames;
import org.sparkk8snative.TestPlane;

/**
 * {@code spark.kubernetes.native.service.advertisedName=namespaced} on the real node: executors
 * advertise {@code <service>.<namespace>.svc}, the name every pod of the cluster resolves (for a
 * driver whose process runs outside the executors' namespace), and bind to it through a host alias
 * to 0.0.0.0 in their own pod. Peers fetch shuffle blocks through it, and so does the driver: task
 * results above {@code spark.task.maxDirectResultSize} are fetched from the executor's block
 * manager by its advertised name.
 */
class NamespacedServiceNamesOnTheNodeTest extends NodeTest {
  @Test
  void executorsAdvertiseTheNamespacedNameAndPeersAndTheDriverFetchThroughIt() {
    try (NodeJob job =
        NodeJob.withServices(
            node,
            "namespaced-names",
            2,
            conf ->
                conf.set("spark.kubernetes.native.service.advertisedName", "namespaced")
                    // Every task result goes through the executor's block manager.
                    .set("spark.task.maxDirectResultSize", "1k"))) {
      SparkSession spark = job.spark;
      SparkContext sc = job.sc;
      String appId = job.appId;
      AtomicLong remoteBytesRead = job.remoteShuffleBytes;
      Set<String> hosts = new HashSet<>();
      for (SparkExecutorInfo info : sc.statusTracker().getExecutorInfos()) {
        hosts.add(info.host());
      }
      for (Pod pod : plane.executorPods(appId)) {
        String service = ExecutorServiceNames.serviceName(appId, TestPlane.executorId(pod));
        String advertised = service + "." + plane.namespace() + ".svc";
        assertTrue(hosts.contains(advertised), advertised + " among " + hosts);
        List<HostAlias> aliases = pod.getSpec().getHostAliases();
        assertEquals(1, aliases.size(), String.valueOf(aliases));
        assertEquals("0.0.0.0", aliases.get(0).getIp());
        assertEquals(List.of(advertised), aliases.get(0).getHostnames());
        assertEquals(service, pod.getSpec().getHostname());
      }

      ProcessNode.groupByWithAShuffle(spark);
      TestPlane.eventually(
          "the reduce tasks' metrics", Duration.ofSeconds(10), () -> remoteBytesRead.get() > 0);

      // 4 tasks of 50,000 longs each (~400 kB): far above 1k, so fetched by the driver.
      List<Long> ids =
          spark.range(0, 200_000, 1, 4).as(org.apache.spark.sql.Encoders.LONG()).collectAsList();
      assertEquals(200_000, ids.size());
      assertEquals(199_999L, (long) ids.get(ids.size() - 1));
      System.out.printf(
          "namespaced names: executors %s; %d shuffle bytes fetched between them; 200,000 rows"
              + " fetched by the driver from their block managers%n",
          hosts, remoteBytesRead.get());
    }
  }
}

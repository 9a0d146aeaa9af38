package org.sparkk8snative.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.fabric8.kubernetes.api.model.ContainerStatus;
import io.fabric8.kubernetes.api.model.ContainerStatusBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.SparkConf;
import org.apache.spark.scheduler.cluster.k8s.ExecutorPodState;
import org.apache.spark.scheduler.cluster.k8s.ExecutorPodsSnapshot;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.sparkk8snative.ConfigKeys;
import org.sparkk8snative.ExecutorPodStates;

/**
 * The informer keeps every pod state that Spark removes an executor on (its change queue never
 * coalesces one away), so it must classify states exactly as the driver's Spark does. Here, pod by
 * pod, against Spark's own {@code ExecutorPodsSnapshot} on the line under test: every phase, with
 * and without a deletionTimestamp, every restart policy, the executor container running or exited
 * with each code, a sidecar exited, under both values of {@code checkAllContainers} and both a
 * default and a template's container name.
 */
@Tag("every-line")
class ExecutorPodStatesTest {
  private static final String DEFAULT_CONTAINER = "spark-kubernetes-executor";
  private static final String TEMPLATE_CONTAINER = "spark-executor";
  private static final KubernetesSerialization JSON = new KubernetesSerialization();

  @AfterAll
  static void restoreSparksDefaults() {
    ExecutorPodsSnapshot.setShouldCheckAllContainers(
        Boolean.parseBoolean(SparkInternals.checkAllContainersDefault()));
    ExecutorPodsSnapshot.setSparkContainerName(DEFAULT_CONTAINER);
  }

  @Test
  void everyPodStateIsClassifiedAsSparksExecutorPodsSnapshotClassifiesIt() {
    List<Pod> pods = podStates();
    int compared = 0;
    List<String> differences = new ArrayList<>();
    for (boolean checkAll : new boolean[] {false, true}) {
      for (String containerName : List.of(DEFAULT_CONTAINER, TEMPLATE_CONTAINER)) {
        ExecutorPodsSnapshot.setShouldCheckAllContainers(checkAll);
        ExecutorPodsSnapshot.setSparkContainerName(containerName);
        Map<String, String> conf = new HashMap<>();
        conf.put(ConfigKeys.CHECK_ALL_CONTAINERS, Boolean.toString(checkAll));
        if (!containerName.equals(DEFAULT_CONTAINER)) {
          conf.put(ConfigKeys.EXECUTOR_CONTAINER_NAME, containerName);
        }
        for (Pod pod : pods) {
          String sparks = sparksClass(pod);
          String natives = ExecutorPodStates.sparkClassName(conf, JSON.asJson(pod));
          compared++;
          if (!sparks.equals(natives)) {
            differences.add(
                "checkAllContainers="
                    + checkAll
                    + " container="
                    + containerName
                    + " "
                    + pod.getMetadata().getName()
                    + ": Spark "
                    + sparks
                    + ", native "
                    + natives);
          }
        }
      }
    }
    System.out.printf("%d pod states compared with Spark's classification%n", compared);
    assertTrue(compared >= 1000, "the matrix covers the states: " + compared);
    assertEquals(List.of(), differences);
  }

  /** Spark's own default of checkAllContainers reaches the native side when the key is unset. */
  @Test
  void theDriversSparkDefaultOfCheckAllContainersReachesTheNativeSide() {
    String version = org.apache.spark.package$.MODULE$.SPARK_VERSION();
    String expected = version.startsWith("3.") ? "false" : "true";
    assertEquals(
        expected,
        SparkConfValues.entries(new SparkConf(false)).get(ConfigKeys.CHECK_ALL_CONTAINERS));
    SparkConf set = new SparkConf(false).set(ConfigKeys.CHECK_ALL_CONTAINERS, "false");
    assertEquals("false", SparkConfValues.entries(set).get(ConfigKeys.CHECK_ALL_CONTAINERS));
  }

  @Test
  void badInputIsRefusedNamingWhatIsWrong() {
    Map<String, String> conf = Map.of(ConfigKeys.CHECK_ALL_CONTAINERS, "maybe");
    String pod = JSON.asJson(pod("p", "Running", false, null, List.of()));
    IllegalArgumentException badKey =
        assertThrows(
            IllegalArgumentException.class, () -> ExecutorPodStates.sparkClassName(conf, pod));
    assertTrue(badKey.getMessage().contains(ConfigKeys.CHECK_ALL_CONTAINERS), badKey.getMessage());
    IllegalArgumentException badJson =
        assertThrows(
            IllegalArgumentException.class,
            () -> ExecutorPodStates.sparkClassName(Map.of(), "{\"status\": 7}"));
    assertTrue(badJson.getMessage().contains("podJson"), badJson.getMessage());
    IllegalArgumentException nullJson =
        assertThrows(
            IllegalArgumentException.class, () -> ExecutorPodStates.sparkClassName(Map.of(), null));
    assertTrue(nullJson.getMessage().contains("podJson"), nullJson.getMessage());
  }

  private static String sparksClass(Pod pod) {
    ExecutorPodsSnapshot snapshot =
        ExecutorPodsSnapshot.apply(ScalaCollections.toScalaList(List.of(pod)), 0L);
    List<ExecutorPodState> states = ScalaCollections.toJava(snapshot.executorPods().values());
    assertEquals(1, states.size(), pod.getMetadata().getName());
    return states.get(0).getClass().getSimpleName();
  }

  /** The matrix: phase x deletion x restart policy x container statuses. */
  private static List<Pod> podStates() {
    List<String> phases =
        Arrays.asList(
            "Pending", "Running", "running", "Failed", "Succeeded", "Unknown", "Terminating");
    List<String> policies = Arrays.asList("Never", "OnFailure", null);
    Map<String, List<ContainerStatus>> statuses = new java.util.LinkedHashMap<>();
    statuses.put("none", List.of());
    for (String name : List.of(DEFAULT_CONTAINER, TEMPLATE_CONTAINER)) {
      statuses.put(name + "-running", List.of(running(name)));
      for (int code : new int[] {0, 1, 52, 137, 143}) {
        statuses.put(name + "-exited-" + code, List.of(exited(name, code)));
        statuses.put(
            name + "-exited-" + code + "-sidecar-running",
            List.of(exited(name, code), running("sidecar")));
      }
      statuses.put(
          name + "-running-sidecar-exited-1", List.of(running(name), exited("sidecar", 1)));
      statuses.put(
          name + "-running-sidecar-exited-0", List.of(running(name), exited("sidecar", 0)));
    }
    List<Pod> pods = new ArrayList<>();
    for (String phase : phases) {
      for (boolean deleted : new boolean[] {false, true}) {
        for (String policy : policies) {
          for (Map.Entry<String, List<ContainerStatus>> s : statuses.entrySet()) {
            String name =
                String.join(
                    "-",
                    phase,
                    deleted ? "deleted" : "live",
                    policy == null ? "nopolicy" : policy,
                    s.getKey());
            pods.add(pod(name, phase, deleted, policy, s.getValue()));
          }
        }
      }
    }
    return pods;
  }

  private static Pod pod(
      String name, String phase, boolean deleted, String policy, List<ContainerStatus> statuses) {
    return new PodBuilder()
        .withNewMetadata()
        .withName(name.toLowerCase())
        .withDeletionTimestamp(deleted ? "2026-12-02T10:00:00Z" : null)
        .addToLabels("spark-exec-id", "7")
        .addToLabels("spark-role", "executor")
        .endMetadata()
        .withNewSpec()
        .withRestartPolicy(policy)
        .endSpec()
        .withNewStatus()
        .withPhase(phase)
        .withContainerStatuses(statuses)
        .endStatus()
        .build();
  }

  private static ContainerStatus running(String name) {
    return new ContainerStatusBuilder()
        .withName(name)
        .withNewState()
        .withNewRunning()
        .withStartedAt("2026-12-02T09:00:00Z")
        .endRunning()
        .endState()
        .build();
  }

  private static ContainerStatus exited(String name, int code) {
    return new ContainerStatusBuilder()
        .withName(name)
        .withNewState()
        .withNewTerminated()
        .withExitCode(code)
        .withFinishedAt("2026-12-02T09:30:00Z")
        .endTerminated()
        .endState()
        .build();
  }
}

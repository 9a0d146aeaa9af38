package org.sparkk8snative.bench;

import io.fabric8.kubernetes.api.model.ContainerStatusBuilder;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.EnvVarBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.PodConditionBuilder;
import io.fabric8.kubernetes.api.model.PodStatus;
import io.fabric8.kubernetes.api.model.PodStatusBuilder;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Running executor pods shaped like the ones Spark 4.x creates (environment, resources, ports,
 * local-dir volume; status as a kubelet reports it), so that sizes on the wire and in memory are
 * realistic: about 6.5 KB of JSON each as listed, managedFields included.
 */
final class ExecutorPodPopulation {
  private static final int CONCURRENCY = 16;

  private ExecutorPodPopulation() {}

  static void create(KubernetesClient admin, String namespace, String applicationId, int count) {
    ExecutorService pool = Executors.newFixedThreadPool(CONCURRENCY);
    AtomicInteger done = new AtomicInteger();
    try {
      List<Future<?>> work = new ArrayList<>();
      for (int id = 1; id <= count; id++) {
        int execId = id;
        work.add(
            pool.submit(
                () -> {
                  createRunning(admin, namespace, applicationId, execId);
                  int n = done.incrementAndGet();
                  if (n % 2000 == 0) {
                    System.err.printf("  %s: %d / %d pods%n", applicationId, n, count);
                  }
                }));
      }
      for (Future<?> f : work) {
        f.get();
      }
    } catch (Exception e) {
      throw new IllegalStateException("could not create the pods of " + applicationId, e);
    } finally {
      pool.shutdownNow();
    }
  }

  static String podName(String applicationId, long execId) {
    return applicationId + "-exec-" + execId;
  }

  /** One Running executor pod, created (or found) and given its status. */
  static void createRunning(
      KubernetesClient admin, String namespace, String applicationId, long execId) {
    Pod pod = executorPod(applicationId, execId);
    try {
      pod = admin.pods().inNamespace(namespace).resource(pod).create();
    } catch (KubernetesClientException e) {
      if (e.getCode() != 409) {
        throw e;
      }
      pod = admin.pods().inNamespace(namespace).withName(pod.getMetadata().getName()).get();
    }
    pod.setStatus(runningStatus(execId));
    admin.pods().inNamespace(namespace).resource(pod).updateStatus();
  }

  private static Pod executorPod(String applicationId, long execId) {
    String name = podName(applicationId, execId);
    List<EnvVar> env =
        List.of(
            env("SPARK_USER", "spark"),
            env(
                "SPARK_DRIVER_URL",
                "spark://CoarseGrainedScheduler@" + applicationId + "-driver-svc.spark.svc:7078"),
            env("SPARK_EXECUTOR_CORES", "4"),
            env("SPARK_EXECUTOR_MEMORY", "8g"),
            env("SPARK_APPLICATION_ID", applicationId),
            env("SPARK_CONF_DIR", "/opt/spark/conf"),
            env("SPARK_EXECUTOR_ID", Long.toString(execId)),
            env("SPARK_RESOURCE_PROFILE_ID", "0"),
            new EnvVarBuilder()
                .withName("SPARK_EXECUTOR_POD_IP")
                .withNewValueFrom()
                .withNewFieldRef()
                .withApiVersion("v1")
                .withFieldPath("status.podIP")
                .endFieldRef()
                .endValueFrom()
                .build(),
            new EnvVarBuilder()
                .withName("SPARK_EXECUTOR_POD_NAME")
                .withNewValueFrom()
                .withNewFieldRef()
                .withApiVersion("v1")
                .withFieldPath("metadata.name")
                .endFieldRef()
                .endValueFrom()
                .build(),
            env("SPARK_JAVA_OPT_0", "-Dspark.driver.port=7078"),
            env("SPARK_JAVA_OPT_1", "-Dspark.driver.blockManager.port=7079"),
            env("SPARK_LOCAL_DIRS", "/var/data/spark-0b6a6f5e-3c2d-4f3e-9a65-0a1f6c2b7d11"));
    return new PodBuilder()
        .withNewMetadata()
        .withName(name)
        .addToLabels("spark-app-selector", applicationId)
        .addToLabels("spark-app-name", "benchmark")
        .addToLabels("spark-role", "executor")
        .addToLabels("spark-exec-id", Long.toString(execId))
        .addToLabels("spark-exec-resourceprofile-id", "0")
        .addToLabels("spark-version", "4.2.0")
        .endMetadata()
        .withNewSpec()
        .withHostname(name)
        .withRestartPolicy("Never")
        .withServiceAccountName("default")
        .withAutomountServiceAccountToken(false)
        .withEnableServiceLinks(false)
        .addNewContainer()
        .withName("spark-kubernetes-executor")
        .withImage("apache/spark:4.2.0")
        .withImagePullPolicy("IfNotPresent")
        .withArgs("executor")
        .withEnv(env)
        .addNewPort()
        .withName("blockmanager")
        .withContainerPort(7079)
        .withProtocol("TCP")
        .endPort()
        .withNewResources()
        .addToRequests("cpu", new Quantity("4"))
        .addToRequests("memory", new Quantity("8601Mi"))
        .addToLimits("memory", new Quantity("8601Mi"))
        .endResources()
        .addNewVolumeMount()
        .withName("spark-local-dir-1")
        .withMountPath("/var/data/spark-0b6a6f5e")
        .endVolumeMount()
        .endContainer()
        .addNewVolume()
        .withName("spark-local-dir-1")
        .withNewEmptyDir()
        .endEmptyDir()
        .endVolume()
        .endSpec()
        .build();
  }

  private static PodStatus runningStatus(long execId) {
    String ip = "10.244." + (execId / 250) % 250 + "." + (execId % 250 + 2);
    String at = "2026-11-29T10:00:00Z";
    return new PodStatusBuilder()
        .withPhase("Running")
        .withHostIP("10.0.0.7")
        .withPodIP(ip)
        .addNewPodIP(ip)
        .withQosClass("Burstable")
        .withStartTime(at)
        .withConditions(
            new PodConditionBuilder()
                .withType("PodReadyToStartContainers")
                .withStatus("True")
                .withLastTransitionTime(at)
                .build(),
            new PodConditionBuilder()
                .withType("Initialized")
                .withStatus("True")
                .withLastTransitionTime(at)
                .build(),
            new PodConditionBuilder()
                .withType("Ready")
                .withStatus("True")
                .withLastTransitionTime(at)
                .build(),
            new PodConditionBuilder()
                .withType("ContainersReady")
                .withStatus("True")
                .withLastTransitionTime(at)
                .build(),
            new PodConditionBuilder()
                .withType("PodScheduled")
                .withStatus("True")
                .withLastTransitionTime(at)
                .build())
        .withContainerStatuses(
            new ContainerStatusBuilder()
                .withName("spark-kubernetes-executor")
                .withImage("docker.io/apache/spark:4.2.0")
                .withImageID(
                    "docker.io/apache/spark@sha256:5a0f3c3d1f3e2b0c9f7e6d5c4b3a29181716151413121110f0e0d0c0b0a0908")
                .withContainerID(
                    "containerd://4f1d2c3b4a5968778695a4b3c2d1e0f1a2b3c4d5e6f708192a3b4c5d6e7f8091")
                .withReady(true)
                .withStarted(true)
                .withRestartCount(0)
                .withNewState()
                .withNewRunning()
                .withStartedAt(at)
                .endRunning()
                .endState()
                .build())
        .build();
  }

  private static EnvVar env(String name, String value) {
    return new EnvVarBuilder().withName(name).withValue(value).build();
  }
}

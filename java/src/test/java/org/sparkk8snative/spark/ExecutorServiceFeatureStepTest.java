package org.sparkk8snative.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.ContainerBuilder;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import org.apache.spark.SparkConf;
import org.apache.spark.deploy.k8s.KubernetesConf$;
import org.apache.spark.deploy.k8s.KubernetesExecutorConf;
import org.apache.spark.deploy.k8s.SparkPod;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.sparkk8snative.ConfigKeys;

/** The executor side of executor Services: what the feature step does to Spark's executor pod. */
@Tag("every-line")
class ExecutorServiceFeatureStepTest {
  private static SparkPod sparkPod() {
    Container container =
        new ContainerBuilder()
            .withName("spark-kubernetes-executor")
            .addNewEnv()
            .withName("SPARK_EXECUTOR_ID")
            .withValue("7")
            .endEnv()
            .addNewEnv()
            .withName("SPARK_EXECUTOR_POD_IP")
            .withNewValueFrom()
            .withNewFieldRef()
            .withFieldPath("status.podIP")
            .endFieldRef()
            .endValueFrom()
            .endEnv()
            .build();
    Pod pod =
        new PodBuilder()
            .withNewMetadata()
            .withName("app-exec-7")
            .endMetadata()
            .withNewSpec()
            .endSpec()
            .build();
    return new SparkPod(pod, container);
  }

  /**
   * A driver's conf with Services on, as the native side accepts it (a k8s master: nothing is
   * contacted), except for the block manager port.
   */
  private static SparkConf servicesOn() {
    return new SparkConf(false)
        .set(ConfigKeys.MASTER, "k8s://https://127.0.0.1:6443")
        .set(ConfigKeys.DRIVER_POD_NAME, "spark-feature-driver")
        .set(ConfigKeys.ENABLE_SERVICE, "true");
  }

  private static SparkPod configure(SparkConf conf) {
    KubernetesExecutorConf executorConf =
        KubernetesConf$.MODULE$.createExecutorConf(
            conf, "7", "spark-feature-app", scala.Option.empty(), 0);
    ExecutorServiceFeatureStep step = new ExecutorServiceFeatureStep();
    step.init(executorConf);
    return step.configurePod(sparkPod());
  }

  /**
   * No Service, no name: an executor whose Service is not known to exist (here no Services run for
   * the app at all) keeps advertising its pod IP, so it stays reachable. (Executors whose Service
   * exists: SparkDriverTest, against a real apiserver.)
   */
  @Test
  void withoutItsServiceTheExecutorAdvertisesItsPodIp() {
    SparkPod original = sparkPod();
    SparkPod pod = configure(servicesOn().set(ConfigKeys.BLOCK_MANAGER_PORT, "7079"));
    assertEquals(null, pod.pod().getSpec().getHostname());
    assertEquals(original.container().getEnv(), pod.container().getEnv());
    assertEquals(
        Boolean.FALSE,
        pod.pod().getSpec().getEnableServiceLinks(),
        "no Service of the namespace becomes environment variables of an executor");
  }

  /** A Spark that ships executor Services sets the variable itself: the step steps back. */
  @Test
  void aPodThatSparkGaveAServiceNameIsLeftToSpark() {
    SparkPod sparks = sparkPod();
    sparks
        .container()
        .getEnv()
        .add(new EnvVar(ExecutorServiceFeatureStep.SERVICE_NAME_ENV, "svc-by-spark", null));
    KubernetesExecutorConf executorConf =
        KubernetesConf$.MODULE$.createExecutorConf(
            servicesOn().set(ConfigKeys.BLOCK_MANAGER_PORT, "7079"),
            "7",
            "spark-feature-app",
            scala.Option.empty(),
            0);
    ExecutorServiceFeatureStep step = new ExecutorServiceFeatureStep();
    step.init(executorConf);
    assertSame(sparks, step.configurePod(sparks));
  }

  @Test
  void withServicesOffThePodIsUntouched() {
    SparkPod original = sparkPod();
    KubernetesExecutorConf executorConf =
        KubernetesConf$.MODULE$.createExecutorConf(
            new SparkConf(false), "7", "app", scala.Option.empty(), 0);
    ExecutorServiceFeatureStep step = new ExecutorServiceFeatureStep();
    step.init(executorConf);
    assertSame(original, step.configurePod(original));
  }

  @Test
  void withoutTheBlockManagerPortDriverStartUpFailsNamingIt() {
    for (String port : new String[] {null, "", "0", "80", "1023", "70000", "random"}) {
      SparkConf conf = servicesOn();
      if (port != null) {
        conf.set(ConfigKeys.BLOCK_MANAGER_PORT, port);
      }
      IllegalArgumentException e =
          assertThrows(
              IllegalArgumentException.class, () -> ExecutorServicesConf.prepareDriver(conf));
      // The native parser's message: the key, the value, and why it is needed.
      assertTrue(e.getMessage().startsWith(ConfigKeys.BLOCK_MANAGER_PORT + "="), e.getMessage());
      assertTrue(e.getMessage().contains(ConfigKeys.ENABLE_SERVICE + "=true"), e.getMessage());
      assertFalse(
          conf.contains(ConfigKeys.EXECUTOR_FEATURE_STEPS),
          "no step is added to a conf that fails");
    }
  }

  @Test
  void withoutTheBlockManagerPortNoExecutorPodIsBuilt() {
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> configure(servicesOn()));
    assertTrue(e.getMessage().startsWith(ConfigKeys.BLOCK_MANAGER_PORT + "="), e.getMessage());
  }

  @Test
  void theAllocatorAddsTheStepOnce() {
    SparkConf conf =
        servicesOn()
            .set(ConfigKeys.BLOCK_MANAGER_PORT, "7079")
            .set(ConfigKeys.EXECUTOR_FEATURE_STEPS, "com.example.Step");
    ExecutorServicesConf.prepareDriver(conf);
    ExecutorServicesConf.prepareDriver(conf);
    assertEquals(
        "com.example.Step," + ExecutorServiceFeatureStep.class.getName(),
        conf.get(ConfigKeys.EXECUTOR_FEATURE_STEPS));
  }

  @Test
  void withServicesOffTheDriverConfIsUntouched() {
    SparkConf conf =
        new SparkConf(false).set(ConfigKeys.EXECUTOR_FEATURE_STEPS, "com.example.Step");
    ExecutorServicesConf.prepareDriver(conf); // no port, no master: nothing is checked either
    assertEquals("com.example.Step", conf.get(ConfigKeys.EXECUTOR_FEATURE_STEPS));
  }
}

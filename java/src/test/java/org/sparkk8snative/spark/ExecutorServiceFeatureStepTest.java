package org.sparkk8snative.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.ContainerBuilder;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import java.util.Map;
import java.util.stream.Collectors;
import org.apache.spark.SparkConf;
import org.apache.spark.deploy.k8s.KubernetesConf$;
import org.apache.spark.deploy.k8s.KubernetesExecutorConf;
import org.apache.spark.deploy.k8s.SparkPod;
import org.junit.jupiter.api.Test;
import org.sparkk8snative.ExecutorServiceNames;

/** The executor side of executor Services: what the feature step does to Spark's executor pod. */
class ExecutorServiceFeatureStepTest {
  private static SparkPod sparkPod() {
    Container container = new ContainerBuilder()
        .withName("spark-kubernetes-executor")
        .addNewEnv().withName("SPARK_EXECUTOR_ID").withValue("7").endEnv()
        .addNewEnv().withName("SPARK_EXECUTOR_POD_IP").withNewValueFrom().withNewFieldRef()
        .withFieldPath("status.podIP").endFieldRef().endValueFrom().endEnv()
        .build();
    Pod pod = new PodBuilder().withNewMetadata().withName("app-exec-7").endMetadata().withNewSpec().endSpec().build();
    return new SparkPod(pod, container);
  }

  private static SparkPod configure(SparkConf conf) {
    KubernetesExecutorConf executorConf =
        KubernetesConf$.MODULE$.createExecutorConf(conf, "7", "spark-feature-app", scala.Option.empty(), 0);
    ExecutorServiceFeatureStep step = new ExecutorServiceFeatureStep();
    step.init(executorConf);
    return step.configurePod(sparkPod());
  }

  @Test
  void theExecutorAdvertisesItsServiceNameAndBindsThroughThePodHostname() {
    SparkConf conf = new SparkConf(false)
        .set("spark.kubernetes.executor.enableService", "true")
        .set("spark.blockManager.port", "7079");
    SparkPod pod = configure(conf);
    String name = ExecutorServiceNames.serviceName("spark-feature-app", "7");
    assertEquals("svc-spark-feature-app-exec-7", name);
    assertEquals(name, pod.pod().getSpec().getHostname());
    Map<String, EnvVar> env = pod.container().getEnv().stream().collect(Collectors.toMap(EnvVar::getName, e -> e));
    assertEquals(name, env.get("SPARK_EXECUTOR_POD_IP").getValue());
    assertEquals(null, env.get("SPARK_EXECUTOR_POD_IP").getValueFrom());
    assertEquals(name, env.get("EXECUTOR_SERVICE_NAME").getValue());
    assertEquals("7", env.get("SPARK_EXECUTOR_ID").getValue());
  }

  @Test
  void withServicesOffThePodIsUntouched() {
    SparkPod original = sparkPod();
    KubernetesExecutorConf executorConf =
        KubernetesConf$.MODULE$.createExecutorConf(new SparkConf(false), "7", "app", scala.Option.empty(), 0);
    ExecutorServiceFeatureStep step = new ExecutorServiceFeatureStep();
    step.init(executorConf);
    assertSame(original, step.configurePod(original));
  }

  @Test
  void withoutTheBlockManagerPortDriverStartUpFailsNamingIt() {
    for (String port : new String[] {null, "0", "70000", "random"}) {
      SparkConf conf = new SparkConf(false).set("spark.kubernetes.executor.enableService", "true");
      if (port != null) {
        conf.set("spark.blockManager.port", port);
      }
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
          () -> NativeExecutorPodsAllocator.enableExecutorServices(conf));
      assertTrue(e.getMessage().startsWith("spark.blockManager.port"), e.getMessage());
    }
  }

  @Test
  void theAllocatorAddsTheStepOnce() {
    SparkConf conf = new SparkConf(false)
        .set("spark.kubernetes.executor.enableService", "true")
        .set("spark.blockManager.port", "7079")
        .set("spark.kubernetes.executor.pod.featureSteps", "com.example.Step");
    NativeExecutorPodsAllocator.enableExecutorServices(conf);
    NativeExecutorPodsAllocator.enableExecutorServices(conf);
    assertEquals("com.example.Step," + ExecutorServiceFeatureStep.class.getName(),
        conf.get("spark.kubernetes.executor.pod.featureSteps"));
  }
}

package org.sparkk8snative.spark;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.ContainerBuilder;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.EnvVarBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.SparkConf;
import org.apache.spark.deploy.k8s.KubernetesExecutorConf;
import org.apache.spark.deploy.k8s.SparkPod;
import org.apache.spark.deploy.k8s.features.KubernetesExecutorCustomFeatureConfigStep;
import org.sparkk8snative.ExecutorServiceNames;

/**
 * Executor feature step for {@code spark.kubernetes.executor.pod.featureSteps}: with {@code
 * spark.kubernetes.executor.enableService=true}, the executor advertises its Service's name for its
 * block manager, so that peers of a gone executor are refused at once instead of waiting out a
 * connect timeout.
 *
 * <p>How, on unmodified Spark 4.x: the image's entrypoint starts the executor with {@code
 * --hostname $SPARK_EXECUTOR_POD_IP} and no bind address, so the executor binds to the name it
 * advertises. This step sets that variable to the Service's name and the pod's {@code
 * spec.hostname} to the same name: inside the pod the kubelet maps the pod's hostname to the pod's
 * IP in /etc/hosts (so binding works); everywhere else in the namespace the name resolves, through
 * cluster DNS and the namespace's search path, to the Service (so peers go through it). The
 * executor's RPC environment runs in client mode (it connects to the driver), so the block manager
 * port, fixed by {@code spark.blockManager.port}, is the only port peers need.
 */
public final class ExecutorServiceFeatureStep implements KubernetesExecutorCustomFeatureConfigStep {
  /** The variable that carries the executor's Service name, for the executor's own use. */
  public static final String SERVICE_NAME_ENV = "EXECUTOR_SERVICE_NAME";

  /** The variable Spark's entrypoint passes as the executor's {@code --hostname}. */
  static final String POD_IP_ENV = "SPARK_EXECUTOR_POD_IP";

  private KubernetesExecutorConf conf;

  @Override
  public void init(KubernetesExecutorConf conf) {
    this.conf = conf;
  }

  /**
   * With Services on: the pod's hostname and the executor's advertised name become its Service's
   * name. Fails, naming the key, when the native side refuses the settings (for example no fixed
   * block manager port), which driver start-up already checked when the allocator added this step.
   */
  @Override
  public SparkPod configurePod(SparkPod sparkPod) {
    SparkConf sparkConf = conf.sparkConf();
    if (!ExecutorServicesConf.enabled(sparkConf)) {
      return sparkPod;
    }
    ExecutorServicesConf.check(sparkConf);
    String name = ExecutorServiceNames.serviceName(conf.appId(), conf.executorId());
    Pod pod = new PodBuilder(sparkPod.pod()).editOrNewSpec().withHostname(name).endSpec().build();
    List<EnvVar> env = new ArrayList<>();
    for (EnvVar var : sparkPod.container().getEnv()) {
      if (!POD_IP_ENV.equals(var.getName()) && !SERVICE_NAME_ENV.equals(var.getName())) {
        env.add(var);
      }
    }
    env.add(new EnvVarBuilder().withName(POD_IP_ENV).withValue(name).build());
    env.add(new EnvVarBuilder().withName(SERVICE_NAME_ENV).withValue(name).build());
    Container container = new ContainerBuilder(sparkPod.container()).withEnv(env).build();
    return new SparkPod(pod, container);
  }
}

package org.sparkk8snative.spark;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.ContainerBuilder;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.EnvVarBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.spark.SparkConf;
import org.apache.spark.deploy.k8s.KubernetesExecutorConf;
import org.apache.spark.deploy.k8s.SparkPod;
import org.apache.spark.deploy.k8s.features.KubernetesExecutorCustomFeatureConfigStep;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.sparkk8snative.ConfigKeys;
import org.sparkk8snative.ExecutorServiceNames;

/**
 * Executor feature step for {@code spark.kubernetes.executor.pod.featureSteps}: with {@code
 * spark.kubernetes.executor.enableService=true}, the executor's Service is created before its pod,
 * and the executor advertises the Service's name for its block manager, so that peers of a gone
 * executor are refused at once instead of waiting out a connect timeout.
 *
 * <p>How, on unmodified Spark: the image's entrypoint starts the executor with {@code --hostname
 * $SPARK_EXECUTOR_POD_IP} and no bind address, so the executor binds to the name it advertises.
 * This step sets that variable to the Service's name and the pod's {@code spec.hostname} to the
 * same name: inside the pod the kubelet maps the pod's hostname to the pod's IP in /etc/hosts (so
 * binding works); everywhere else in the namespace the name resolves, through cluster DNS and the
 * namespace's search path, to the Service (so peers go through it). The executor's RPC environment
 * runs in client mode (it connects to the driver), so the block manager port, fixed by {@code
 * spark.blockManager.port}, is the only port peers need. With {@code
 * spark.kubernetes.native.service.advertisedName=namespaced} the executor advertises {@code
 * <service>.<namespace>.svc}, which resolves from every pod of the cluster (a driver elsewhere),
 * and a host alias of the pod maps that name to 0.0.0.0, so the executor binds to all its
 * addresses.
 *
 * <p>Only an executor whose Service exists advertises its name: when the Service cannot be created,
 * the pod is left to advertise its IP, as without Services (see {@link
 * ApplicationExecutorServices}). Executor pods get {@code enableServiceLinks=false}, or every
 * Service of the namespace would become environment variables in each of them. A Spark that sets
 * {@code EXECUTOR_SERVICE_NAME} itself ships executor Services of its own: the step then leaves the
 * pod alone.
 */
public final class ExecutorServiceFeatureStep implements KubernetesExecutorCustomFeatureConfigStep {
  private static final Logger LOG = LoggerFactory.getLogger(ExecutorServiceFeatureStep.class);

  /** The variable that carries the executor's Service name, for the executor's own use. */
  public static final String SERVICE_NAME_ENV = "EXECUTOR_SERVICE_NAME";

  /** The variable Spark's entrypoint passes as the executor's {@code --hostname}. */
  static final String POD_IP_ENV = "SPARK_EXECUTOR_POD_IP";

  /** What the namespaced name means inside the executor's own pod: bind to every address. */
  static final String ALL_ADDRESSES = "0.0.0.0";

  private static final AtomicBoolean REPORTED_SPARKS_OWN = new AtomicBoolean();
  private static final AtomicBoolean REPORTED_NOT_RUNNING = new AtomicBoolean();

  private KubernetesExecutorConf conf;

  @Override
  public void init(KubernetesExecutorConf conf) {
    this.conf = conf;
  }

  /**
   * With Services on: the executor's Service is ensured, then the pod's hostname and the executor's
   * advertised name become the Service's name. Fails, naming the key, when the native side refuses
   * the settings (for example no fixed block manager port), which driver start-up already checked
   * when the allocator added this step.
   */
  @Override
  public SparkPod configurePod(SparkPod sparkPod) {
    SparkConf sparkConf = conf.sparkConf();
    if (!ExecutorServicesConf.enabled(sparkConf)) {
      return sparkPod;
    }
    ExecutorServicesConf.check(sparkConf);
    if (hasEnv(sparkPod.container(), SERVICE_NAME_ENV)) {
      if (REPORTED_SPARKS_OWN.compareAndSet(false, true)) {
        LOG.info(
            "Spark set {} on executor pods itself: this Spark manages executor Services, and "
                + "spark-k8s-native leaves them to it",
            SERVICE_NAME_ENV);
      }
      return sparkPod;
    }
    Pod withoutServiceLinks =
        new PodBuilder(sparkPod.pod())
            .editOrNewSpec()
            .withEnableServiceLinks(false)
            .endSpec()
            .build();
    ApplicationExecutorServices services = ApplicationExecutorServices.of(conf.appId());
    if (services == null) {
      if (REPORTED_NOT_RUNNING.compareAndSet(false, true)) {
        LOG.warn(
            "Executor Services of {} are not running (is {} set to {}?): executors advertise their pod IPs",
            conf.appId(),
            ConfigKeys.PODS_ALLOCATOR,
            NativeExecutorPodsAllocator.class.getName());
      }
      return new SparkPod(withoutServiceLinks, sparkPod.container());
    }
    if (!services.ensure(conf.executorId())) {
      return new SparkPod(withoutServiceLinks, sparkPod.container());
    }
    String service = ExecutorServiceNames.serviceName(conf.appId(), conf.executorId());
    PodBuilder pod = new PodBuilder(withoutServiceLinks).editSpec().withHostname(service).endSpec();
    String advertised = service;
    if (ExecutorServicesConf.advertisesNamespacedName(sparkConf)) {
      // Cluster DNS resolves this name to the Service everywhere but in the pod itself, where the
      // executor binds to it: there it means every address of the pod.
      advertised = ExecutorServiceNames.namespacedName(service, conf.namespace());
      pod.editSpec()
          .addNewHostAlias()
          .withIp(ALL_ADDRESSES)
          .withHostnames(advertised)
          .endHostAlias()
          .endSpec();
    }
    List<EnvVar> env = new ArrayList<>();
    for (EnvVar var : sparkPod.container().getEnv()) {
      if (!POD_IP_ENV.equals(var.getName())) {
        env.add(var);
      }
    }
    env.add(new EnvVarBuilder().withName(POD_IP_ENV).withValue(advertised).build());
    env.add(new EnvVarBuilder().withName(SERVICE_NAME_ENV).withValue(service).build());
    Container container = new ContainerBuilder(sparkPod.container()).withEnv(env).build();
    return new SparkPod(pod.build(), container);
  }

  private static boolean hasEnv(Container container, String name) {
    for (EnvVar var : container.getEnv()) {
      if (name.equals(var.getName())) {
        return true;
      }
    }
    return false;
  }
}

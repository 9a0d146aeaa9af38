package org.sparkk8snative;

/**
 * The configuration keys the Java layer reads, and their defaults. Generated from
 * src/settings/keys.rs (the one description of every key; see docs/configuration.md): do not edit;
 * run {@code UPDATE_GENERATED=1 cargo test --lib generated} after changing the table.
 */
public final class ConfigKeys {
  private ConfigKeys() {}

  /** Default: false. */
  public static final String ENABLE_INFORMER = "spark.kubernetes.executor.enableInformer";
  public static final String ENABLE_INFORMER_DEFAULT = "false";

  /** Default: 30s. */
  public static final String LISTER_POLLING_INTERVAL = "spark.kubernetes.executor.listerPollingInterval";
  public static final String LISTER_POLLING_INTERVAL_DEFAULT = "30s";

  /** Default: 0s. */
  public static final String INFORMER_RESYNC_INTERVAL = "spark.kubernetes.executor.informerResyncInterval";
  public static final String INFORMER_RESYNC_INTERVAL_DEFAULT = "0s";

  /** Default: 30s. */
  public static final String MISSING_POD_DETECT_DELTA = "spark.kubernetes.executor.missingPodDetectDelta";
  public static final String MISSING_POD_DETECT_DELTA_DEFAULT = "30s";

  /** Default: Spark's: false on 3.5, true from 4.0. */
  public static final String CHECK_ALL_CONTAINERS = "spark.kubernetes.executor.checkAllContainers";

  /** Default: spark-kubernetes-executor, Spark's executor container. */
  public static final String EXECUTOR_CONTAINER_NAME = "spark.kubernetes.executor.podTemplateContainerName";

  /** Default: half of missingPodDetectDelta. */
  public static final String STALE_BOUND = "spark.kubernetes.native.lister.staleBound";

  /** Default: listerPollingInterval or two thirds of the stale bound, whichever is longer (30 s by default). */
  public static final String WATCH_TIMEOUT = "spark.kubernetes.native.informer.watchTimeout";

  /** Default: auto. */
  public static final String INITIAL_LIST = "spark.kubernetes.native.informer.initialList";
  public static final String INITIAL_LIST_DEFAULT = "auto";

  /** Default: 500. */
  public static final String PAGE_SIZE = "spark.kubernetes.native.informer.pageSize";
  public static final String PAGE_SIZE_DEFAULT = "500";

  /** Default: 60s. */
  public static final String INITIAL_LIST_TIMEOUT = "spark.kubernetes.native.informer.initialListTimeout";
  public static final String INITIAL_LIST_TIMEOUT_DEFAULT = "60s";

  /** Default: false. */
  public static final String ENABLE_SERVICE = "spark.kubernetes.executor.enableService";
  public static final String ENABLE_SERVICE_DEFAULT = "false";

  /** Default: (Spark: random). */
  public static final String BLOCK_MANAGER_PORT = "spark.blockManager.port";

  /** Default: (set by spark-submit in cluster mode). */
  public static final String DRIVER_POD_NAME = "spark.kubernetes.driver.pod.name";

  /** Default: 300s. */
  public static final String SERVICE_DELETE_AFTER = "spark.kubernetes.native.service.deleteAfter";
  public static final String SERVICE_DELETE_AFTER_DEFAULT = "300s";

  /** Default: short. */
  public static final String SERVICE_ADVERTISED_NAME = "spark.kubernetes.native.service.advertisedName";
  public static final String SERVICE_ADVERTISED_NAME_DEFAULT = "short";

  /** Default: 10. */
  public static final String SERVICE_MAX_CONCURRENT_REQUESTS = "spark.kubernetes.native.service.maxConcurrentRequests";
  public static final String SERVICE_MAX_CONCURRENT_REQUESTS_DEFAULT = "10";

  /** Default: direct. */
  public static final String PODS_ALLOCATOR = "spark.kubernetes.allocation.pods.allocator";
  public static final String PODS_ALLOCATOR_DEFAULT = "direct";

  /** Default: true. */
  public static final String ENABLE_API_WATCHER = "spark.kubernetes.executor.enableApiWatcher";
  public static final String ENABLE_API_WATCHER_DEFAULT = "true";

  /** Default: true. */
  public static final String ENABLE_API_POLLING = "spark.kubernetes.executor.enableApiPolling";
  public static final String ENABLE_API_POLLING_DEFAULT = "true";

  /** Default: (none). */
  public static final String EXECUTOR_FEATURE_STEPS = "spark.kubernetes.executor.pod.featureSteps";

  /** Default: (required in client mode). */
  public static final String MASTER = "spark.master";

  /** Default: https://kubernetes.default.svc. */
  public static final String DRIVER_MASTER = "spark.kubernetes.driver.master";
  public static final String DRIVER_MASTER_DEFAULT = "https://kubernetes.default.svc";

  /** Default: false. */
  public static final String SUBMIT_IN_DRIVER = "spark.kubernetes.submitInDriver";
  public static final String SUBMIT_IN_DRIVER_DEFAULT = "false";

  /** Default: default. */
  public static final String NAMESPACE = "spark.kubernetes.namespace";
  public static final String NAMESPACE_DEFAULT = "default";

  /** Default: (the kubeconfig's current context). */
  public static final String CONTEXT = "spark.kubernetes.context";

  /** Default: false. */
  public static final String TRUST_CERTIFICATES = "spark.kubernetes.trust.certificates";
  public static final String TRUST_CERTIFICATES_DEFAULT = "false";

  /** Default: 10000. */
  public static final String REQUEST_TIMEOUT = "spark.kubernetes.driver.requestTimeout";
  public static final String REQUEST_TIMEOUT_DEFAULT = "10000";

  /** Default: 10000. */
  public static final String CONNECTION_TIMEOUT = "spark.kubernetes.driver.connectionTimeout";
  public static final String CONNECTION_TIMEOUT_DEFAULT = "10000";
}

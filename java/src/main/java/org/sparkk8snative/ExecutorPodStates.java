package org.sparkk8snative;

import java.util.Map;

/**
 * How the native informer classifies an executor pod's state: as Spark's {@code
 * ExecutorPodsSnapshot} does, which decides what the change queue may never coalesce away (a state
 * Spark removes an executor on). One implementation, the native one; this class only asks it.
 */
public final class ExecutorPodStates {
  private ExecutorPodStates() {}

  /**
   * The simple name of the class Spark gives the pod ({@code PodPending}, {@code PodRunning},
   * {@code PodFailed}, {@code PodSucceeded}, {@code PodDeleted}, {@code PodTerminating}, {@code
   * PodUnknown}) under the driver's {@code spark.kubernetes.executor.checkAllContainers} and {@code
   * spark.kubernetes.executor.podTemplateContainerName} in {@code sparkConf}.
   *
   * @param podJson the pod as the apiserver serves it (fabric8's {@code
   *     KubernetesSerialization.asJson})
   * @throws IllegalArgumentException when a key's value or the JSON is not valid
   */
  public static String sparkClassName(Map<String, String> sparkConf, String podJson) {
    return NativeBridge.sparkPodState(NativeBridge.flatten(sparkConf), podJson);
  }
}

package org.sparkk8snative;

/** Names of executor Services, made by the native library (one implementation for both sides). */
public final class ExecutorServiceNames {
  private ExecutorServiceNames() {}

  /**
   * {@code svc-<appId>-exec-<execId>}, always a valid DNS-1035 label: lower case, at most 63
   * characters; a long or odd app id is shortened deterministically, keeping the executor id.
   */
  public static String serviceName(String applicationId, String executorId) {
    return NativeBridge.executorServiceName(applicationId, executorId);
  }

  /**
   * {@code <service>.<namespace>.svc}: the Service's name as every pod of the cluster resolves it
   * (pods search {@code svc.<cluster domain>}), where the short name resolves only in its
   * namespace.
   */
  public static String namespacedName(String serviceName, String namespace) {
    return serviceName + "." + namespace + ".svc";
  }
}

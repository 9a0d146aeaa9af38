package org.sparkk8snative.spark;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.SparkConf;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.sparkk8snative.NativeExecutorServices;

/**
 * Executor Services while Spark's own sources track the pods (the informer is off): the allocator
 * reports the executors it has just requested, and this ensures their Services. A failure is logged
 * and never stops allocation: an executor works without its Service, it is only slower to be given
 * up on by its peers when it is gone.
 */
final class ExecutorServicesWithoutInformer implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(ExecutorServicesWithoutInformer.class);

  private final NativeExecutorServices services;
  private final String applicationId;

  private ExecutorServicesWithoutInformer(NativeExecutorServices services, String applicationId) {
    this.services = services;
    this.applicationId = applicationId;
  }

  /**
   * Creates the native Services client of the application (no request is sent yet).
   *
   * @throws IllegalArgumentException naming the key the native side cannot use
   */
  static ExecutorServicesWithoutInformer create(SparkConf conf, String applicationId) {
    // Before Services depend on it: an override Spark never calls would leave them silently
    // missing.
    SparkInternals.requestNewExecutorsIsOverridden();
    NativeExecutorServices services =
        NativeExecutorServices.create(SparkConfValues.entries(conf), applicationId);
    LOG.info(
        "Executor Services of {} are ensured as executor pods are created (the native informer is off)",
        applicationId);
    return new ExecutorServicesWithoutInformer(services, applicationId);
  }

  /**
   * Ensures the Services of executors {@code lastIdBefore + 1} to {@code lastIdAfter}, the ids
   * Spark's allocator handed out meanwhile; nothing when either id is unknown or none was handed
   * out.
   */
  void ensureNewExecutors(int lastIdBefore, int lastIdAfter) {
    if (lastIdBefore == SparkInternals.UNKNOWN_EXECUTOR_ID || lastIdAfter <= lastIdBefore) {
      return;
    }
    if (services.isClosed()) {
      LOG.debug(
          "Executors {} to {} of {} were requested after the Services were closed",
          lastIdBefore + 1,
          lastIdAfter,
          applicationId);
      return;
    }
    List<String> ids = new ArrayList<>();
    for (int id = lastIdBefore + 1; id <= lastIdAfter; id++) {
      ids.add(Integer.toString(id));
    }
    try {
      services.ensure(ids);
    } catch (RuntimeException e) {
      LOG.warn(
          "Could not ensure the executor Services of executors {} of {}", ids, applicationId, e);
    }
  }

  @Override
  public void close() {
    services.close();
  }
}

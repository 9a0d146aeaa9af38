package org.sparkk8snative.spark;

import static org.sparkk8snative.ConfigKeys.ENABLE_SERVICE;
import static org.sparkk8snative.ConfigKeys.ENABLE_SERVICE_DEFAULT;
import static org.sparkk8snative.ConfigKeys.EXECUTOR_FEATURE_STEPS;
import static org.sparkk8snative.ConfigKeys.SERVICE_ADVERTISED_NAME;
import static org.sparkk8snative.ConfigKeys.SERVICE_ADVERTISED_NAME_DEFAULT;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.SparkConf;
import org.sparkk8snative.NativeSettings;

/**
 * What {@code spark.kubernetes.executor.enableService=true} asks of the driver's SparkConf: that
 * the native side accepts its settings (the block manager port is fixed, the driver pod is named),
 * and that Spark runs {@link ExecutorServiceFeatureStep} on every executor pod it builds.
 */
final class ExecutorServicesConf {
  private ExecutorServicesConf() {}

  static boolean enabled(SparkConf conf) {
    return SparkConfValues.flag(conf, ENABLE_SERVICE, ENABLE_SERVICE_DEFAULT);
  }

  /**
   * Whether executors advertise {@code <service>.<namespace>.svc} ({@code
   * spark.kubernetes.native.service.advertisedName=namespaced}) rather than the Service's short
   * name; the native side has validated the value (see {@link #check}).
   */
  static boolean advertisesNamespacedName(SparkConf conf) {
    return "namespaced"
        .equals(conf.get(SERVICE_ADVERTISED_NAME, SERVICE_ADVERTISED_NAME_DEFAULT).trim());
  }

  /**
   * With Services on: fails driver start-up now if the native side would refuse the settings, and
   * adds the feature step that makes executors advertise their Service (Spark reads the feature
   * steps each time it builds an executor pod). With Services off the conf is left as it is.
   *
   * @throws IllegalArgumentException naming the key, e.g. {@code spark.blockManager.port} when it
   *     is not a fixed port
   */
  static void prepareDriver(SparkConf conf) {
    if (!enabled(conf)) {
      return;
    }
    check(conf);
    addFeatureStep(conf);
  }

  /**
   * The native side's verdict on the settings: the same parser, so the same messages, as when the
   * Services are created.
   *
   * @throws IllegalArgumentException naming the key whose value cannot be used
   */
  static void check(SparkConf conf) {
    NativeSettings.check(SparkConfValues.entries(conf));
  }

  /**
   * Appends {@link ExecutorServiceFeatureStep} to Spark's executor feature steps, unless it is
   * there.
   */
  static void addFeatureStep(SparkConf conf) {
    String step = ExecutorServiceFeatureStep.class.getName();
    List<String> steps = new ArrayList<>();
    if (conf.contains(EXECUTOR_FEATURE_STEPS)) {
      for (String existing : conf.get(EXECUTOR_FEATURE_STEPS).split(",")) {
        if (!existing.trim().isEmpty()) {
          steps.add(existing.trim());
        }
      }
    }
    if (!steps.contains(step)) {
      steps.add(step);
      conf.set(EXECUTOR_FEATURE_STEPS, String.join(",", steps));
    }
  }
}

package org.sparkk8snative;

import java.util.Map;

/**
 * The native side's reading of the SparkConf, for failing driver start-up early: the same parser
 * (and so the same checks and messages) as the informer and the executor Services use when they are
 * created, never a second validation in Java.
 */
public final class NativeSettings {
  private NativeSettings() {}

  /**
   * @throws IllegalArgumentException naming the key and the value that cannot be used (for example
   *     {@code spark.blockManager.port} missing while {@code
   *     spark.kubernetes.executor.enableService} is true)
   */
  public static void check(Map<String, String> sparkConf) {
    NativeBridge.checkSettings(NativeBridge.flatten(sparkConf));
  }
}

package org.sparkk8snative;

/**
 * The native methods of the informer and the executor Services (the library's own, its version,
 * wire version and native memory, are {@link NativeLibrary}'s). Each converts and delegates to the
 * Rust core; errors come back as {@link IllegalArgumentException} (a bad argument or setting,
 * named), {@link IllegalStateException} (misuse: a closed handle, a second start) or {@link
 * SparkK8sNativeException}. Handles are ids, so a stale handle is an exception, never a crash.
 */
final class NativeBridge {
  static {
    NativeLibrary.load();
  }

  private NativeBridge() {}

  /** SparkConf entries as key, value, key, value, ... (what create and createServices take). */
  static String[] flatten(java.util.Map<String, String> conf) {
    java.util.Objects.requireNonNull(conf, "sparkConf");
    String[] flat = new String[conf.size() * 2];
    int i = 0;
    for (java.util.Map.Entry<String, String> e : conf.entrySet()) {
      flat[i++] = e.getKey();
      flat[i++] = e.getValue();
    }
    return flat;
  }

  /** An informer for the app's executor pods, from SparkConf entries as key, value, ... */
  static native long create(String[] confKeyValues, String applicationId);

  static native void start(long handle);

  static native void stop(long handle);

  static native void close(long handle);

  /** A CHANGES frame (see Wire), empty after the timeout; NOT_READY once stopped. */
  static native byte[] pollChanges(long handle, int maxBatch, long timeoutMillis);

  /** A SNAPSHOT, UNCHANGED or NOT_READY frame (see Wire), once ready or after waitMillis. */
  static native byte[] listerSnapshot(long handle, long knownView, long waitMillis);

  /** Whether pollChanges handed out a change newer than the lister snapshot of this view. */
  static native boolean changesTakenAfter(long handle, long view);

  /** A HEALTH frame (see Wire). */
  static native byte[] health(long handle);

  /** Log records as level, target, message triples; empty after the timeout. */
  static native String[] pollLogs(int max, long timeoutMillis);

  /** 0 OFF, 1 ERROR, 2 WARN, 3 INFO, 4 DEBUG, 5 TRACE. */
  static native void setLogLevel(int level);

  static native int openHandles();

  /**
   * The name of the class Spark gives this pod state ({@code PodFailed}, ...) by the rules the
   * informer keeps states by, under these SparkConf entries.
   */
  static native String sparkPodState(String[] confKeyValues, String podJson);

  /** Parses SparkConf entries as create does; throws IllegalArgumentException naming a bad key. */
  static native void checkSettings(String[] confKeyValues);

  /**
   * Executor Services without an informer, with a Service controller of their own; needs
   * spark.kubernetes.executor.enableService=true and the driver's right to get, create and delete
   * services (asked of the apiserver; a denial throws SparkK8sNativeException, 403 Forbidden).
   */
  static native long createServices(String[] confKeyValues, String applicationId);

  /**
   * A Services handle sharing the Service controller of an informer created with Services on;
   * throws IllegalStateException when that informer has Services off or is closed.
   */
  static native long informerServices(long informerHandle);

  /**
   * Ensures each executor's Service now; returns how many were created or repaired (a Service of
   * the name that another tool made is left alone and not counted).
   */
  static native int ensureServices(long handle, String[] executorIds);

  /** These executors' pods are gone: their Services go deleteAfter later. Returns at once. */
  static native void servicesGone(long handle, String[] executorIds);

  /** Stops the handle's own Service controller; one shared with an informer keeps running. */
  static native void closeServices(long handle);

  /**
   * The name of an executor's Service: {@code svc-<appId>-exec-<execId>}, a valid DNS-1035 label.
   */
  static native String executorServiceName(String applicationId, String executorId);
}

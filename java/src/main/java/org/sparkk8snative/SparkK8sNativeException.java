package org.sparkk8snative;

/**
 * A failure of the native library that is not a bad argument or a misuse: the Kubernetes client
 * could not be built, the apiserver refused a request, or an internal error. Carries the HTTP
 * status when there is one.
 */
public class SparkK8sNativeException extends RuntimeException {
  private final int httpStatus;
  private final String reason;

  public SparkK8sNativeException(String message, int httpStatus, String reason) {
    super(message);
    this.httpStatus = httpStatus;
    this.reason = reason;
  }

  /** The HTTP status the apiserver answered, or 0 when the failure is not an HTTP answer. */
  public int httpStatus() {
    return httpStatus;
  }

  /** A short machine-readable reason, e.g. {@code Forbidden} or {@code ClientConfiguration}. */
  public String reason() {
    return reason;
  }
}

package org.sparkk8snative.spark;

/**
 * The {@link NativeInformerMetricsSource} of one application's native sources in Spark's metrics
 * system: registered at most once, and never after it was removed (the application may end before
 * the event that would register it is handled).
 */
final class NativeMetricsRegistration {
  private final NativeSnapshotSources sources;
  private NativeInformerMetricsSource registered;
  private boolean removed;

  NativeMetricsRegistration(NativeSnapshotSources sources) {
    this.sources = sources;
  }

  /** Registers the source; does nothing when it is registered already or was removed. */
  synchronized void register() {
    if (registered != null || removed) {
      return;
    }
    NativeInformerMetricsSource source = new NativeInformerMetricsSource(sources);
    if (SparkInternals.registerMetricsSource(source)) {
      registered = source;
    }
  }

  /** Removes the source if it was registered; for good, and harmless when called again. */
  synchronized void remove() {
    removed = true;
    if (registered != null) {
      SparkInternals.removeMetricsSource(registered);
      registered = null;
    }
  }
}

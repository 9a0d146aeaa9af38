package org.sparkk8snative.spark;

import com.codahale.metrics.Counter;
import com.codahale.metrics.Gauge;
import com.codahale.metrics.MetricRegistry;
import java.util.function.ToLongFunction;
import org.apache.spark.metrics.source.Source;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.sparkk8snative.InformerHealth;
import org.sparkk8snative.NativeInformer;
import org.sparkk8snative.NativeLibrary;

/**
 * The native informer's health as a source of Spark's metrics system (namespace {@code
 * sparkK8sNative}), so it reaches whatever sink the operator configured. What only grows (events,
 * relists, errors, requests) is a counter, as Spark's own cumulative metrics are, so that sinks
 * compute rates; it keeps its last value once the informer is closed. What goes up and down is a
 * gauge, -1 while there is no informer (or no lister round) to read.
 */
public final class NativeInformerMetricsSource implements Source {
  private static final Logger LOG = LoggerFactory.getLogger(NativeInformerMetricsSource.class);

  private final MetricRegistry registry = new MetricRegistry();
  private final NativeSnapshotSources sources;

  public NativeInformerMetricsSource(NativeSnapshotSources sources) {
    this.sources = sources;
    gauge("synced", h -> h.state() == InformerHealth.State.SYNCED ? 1 : 0);
    gauge("degraded", h -> h.state() == InformerHealth.State.DEGRADED ? 1 : 0);
    gauge("cacheSize", InformerHealth::cacheSize);
    counter("eventsApplied", InformerHealth::eventsApplied);
    counter("relists", InformerHealth::relists);
    counter("resumes", InformerHealth::resumes);
    counter("errors", InformerHealth::errors);
    counter("listRequests", InformerHealth::lists);
    counter("watchRequests", InformerHealth::watchConnects);
    gauge("pendingChanges", InformerHealth::pendingChanges);
    gauge(
        "secondsSinceLastEvent",
        h -> h.millisSinceLastEvent() < 0 ? -1 : h.millisSinceLastEvent() / 1000);
    gauge(
        "secondsSinceLastActivity",
        h -> h.millisSinceLastActivity() < 0 ? -1 : h.millisSinceLastActivity() / 1000);
    listerGauge("lastSnapshotMicros", round -> round.nanos() / 1000);
    listerGauge("lastSnapshotPods", NativeListerSnapshotSource.Round::pods);
    listerGauge("lastSnapshotChangedPods", NativeListerSnapshotSource.Round::changedPods);
    // The library's whole native heap (every informer of the process), as its allocator counts it:
    // the driver memory the JVM's own figures do not show.
    registry.register(
        MetricRegistry.name("library", "allocatedBytes"),
        (Gauge<Long>) NativeLibrary::allocatedBytes);
  }

  private void listerGauge(String name, ToLongFunction<NativeListerSnapshotSource.Round> read) {
    registry.register(
        MetricRegistry.name("lister", name),
        (Gauge<Long>)
            () -> {
              NativeListerSnapshotSource.Round round = sources.listerSource().lastRound();
              return round == null ? -1L : read.applyAsLong(round);
            });
  }

  /** A counter whose count is the informer's; the last one read once the informer is closed. */
  private void counter(String name, ToLongFunction<InformerHealth> read) {
    registry.register(
        MetricRegistry.name("informer", name),
        new Counter() {
          private long last;

          @Override
          public synchronized long getCount() {
            NativeInformer informer = sources.informer();
            if (informer != null) {
              try {
                last = Math.max(last, read.applyAsLong(informer.health()));
              } catch (IllegalStateException closed) {
                LOG.debug(
                    "Counter informer.{} read while the native informer closed", name, closed);
              }
            }
            return last;
          }
        });
  }

  private void gauge(String name, ToLongFunction<InformerHealth> read) {
    registry.register(
        MetricRegistry.name("informer", name),
        (Gauge<Long>)
            () -> {
              NativeInformer informer = sources.informer();
              if (informer == null) {
                return -1L;
              }
              try {
                return read.applyAsLong(informer.health());
              } catch (IllegalStateException closed) {
                // Closed between the two calls, as the sources stop: a sink reads the gauge as
                // absent.
                LOG.debug("Gauge informer.{} read while the native informer closed", name, closed);
                return -1L;
              }
            });
  }

  @Override
  public String sourceName() {
    return "sparkK8sNative";
  }

  @Override
  public MetricRegistry metricRegistry() {
    return registry;
  }
}

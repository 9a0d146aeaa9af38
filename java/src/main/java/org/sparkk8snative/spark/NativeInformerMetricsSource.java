package org.sparkk8snative.spark;

import com.codahale.metrics.Gauge;
import com.codahale.metrics.MetricRegistry;
import java.util.function.ToLongFunction;
import org.apache.spark.metrics.source.Source;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.sparkk8snative.InformerHealth;
import org.sparkk8snative.NativeInformer;

/**
 * The native informer's health as a source of Spark's metrics system (namespace {@code
 * sparkK8sNative}), so it reaches whatever sink the operator configured.
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
    gauge("eventsApplied", InformerHealth::eventsApplied);
    gauge("relists", InformerHealth::relists);
    gauge("errors", InformerHealth::errors);
    gauge("listRequests", InformerHealth::lists);
    gauge("watchRequests", InformerHealth::watchConnects);
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

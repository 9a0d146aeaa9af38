package org.sparkk8snative.spark;

import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Rounds in a row the lister could not take a snapshot: a skipped round is normal for a moment (the
 * first sync, a quiet watch awaiting its renewal); when the streak lasts two intervals the operator
 * is warned once, and told when snapshots resume. Used by the lister's thread only.
 */
final class NotReadyStreak {
  private static final Logger LOG = LoggerFactory.getLogger(NativeListerSnapshotSource.class);

  private final long intervalMillis;
  private long since = -1;
  private boolean warned;

  NotReadyStreak(long intervalMillis) {
    this.intervalMillis = intervalMillis;
  }

  /** A round skipped for this reason; {@code health} describes the informer for the warning. */
  void skipped(String reason, Supplier<String> health) {
    long now = System.currentTimeMillis();
    if (since < 0) {
      since = now;
    }
    LOG.debug("Lister round waits: {}", reason);
    if (!warned && now - since >= 2 * intervalMillis) {
      warned = true;
      LOG.warn(
          "No executor pod snapshot for {} ms: {}. Informer: {}",
          now - since,
          reason,
          health.get());
    }
  }

  /** A snapshot of this many pods was handed to Spark: the streak, if any, is over. */
  void ended(int pods) {
    if (warned) {
      LOG.info(
          "Lister ready again after {} ms; {} executor pods",
          System.currentTimeMillis() - since,
          pods);
    }
    since = -1;
    warned = false;
  }
}

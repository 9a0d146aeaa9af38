package org.sparkk8snative;

/** The informer's health and counters at one instant (a HEALTH frame, see {@link Wire}). */
public final class InformerHealth {
  /** The informer's state. */
  public enum State {
    /** Started; the first list has not completed. */
    STARTING,
    /** Listed once; the watch is healthy. */
    SYNCED,
    /** Failing and retrying with backoff; see {@link InformerHealth#description()}. */
    DEGRADED,
    STOPPED
  }

  private final State state;
  private final boolean hasSynced;
  private final int consecutiveFailures;

  /** In the frame's order: see {@code src/wire.rs}. */
  private final long[] counters;

  private final String phase;
  private final String description;

  InformerHealth(
      State state,
      boolean hasSynced,
      int consecutiveFailures,
      long[] counters,
      String phase,
      String description) {
    this.state = state;
    this.hasSynced = hasSynced;
    this.consecutiveFailures = consecutiveFailures;
    this.counters = counters;
    this.phase = phase;
    this.description = description;
  }

  public State state() {
    return state;
  }

  public boolean hasSynced() {
    return hasSynced;
  }

  public long consecutiveFailures() {
    return consecutiveFailures;
  }

  public long cacheSize() {
    return counters[0];
  }

  public long eventsApplied() {
    return counters[1];
  }

  public long relists() {
    return counters[2];
  }

  public long errors() {
    return counters[3];
  }

  /** LIST requests sent (each page counts). */
  public long lists() {
    return counters[4];
  }

  /** WATCH requests sent: the first and every reconnect. */
  public long watchConnects() {
    return counters[5];
  }

  /** Milliseconds since the last pod event, or -1. */
  public long millisSinceLastEvent() {
    return counters[6];
  }

  /** Milliseconds since the apiserver last sent anything (event, bookmark, list page), or -1. */
  public long millisSinceLastActivity() {
    return counters[7];
  }

  public long pendingChanges() {
    return counters[8];
  }

  public long cacheJsonBytes() {
    return counters[9];
  }

  /** Watches resumed after a stale spell (each after a consistent read), without a relist. */
  public long resumes() {
    return counters[10];
  }

  /**
   * What the informer does now: {@code initial list}, {@code watching}, {@code relisting after 410
   * Gone}, ...
   */
  public String phase() {
    return phase;
  }

  /**
   * In words, e.g. {@code Degraded (3 consecutive failures; last: ...) (watching); 12 pods cached;
   * ...}.
   */
  public String description() {
    return description;
  }

  @Override
  public String toString() {
    return description;
  }
}

package org.sparkk8snative;

/** The informer's health and counters at one instant. */
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

  private final long[] counters;
  private final String description;

  InformerHealth(long[] counters, String description) {
    this.counters = counters;
    this.description = description;
  }

  public State state() {
    return State.values()[(int) counters[NativeBridge.H_STATE]];
  }

  public boolean hasSynced() {
    return counters[NativeBridge.H_HAS_SYNCED] != 0;
  }

  public long cacheSize() {
    return counters[NativeBridge.H_CACHE_SIZE];
  }

  public long eventsApplied() {
    return counters[NativeBridge.H_EVENTS_APPLIED];
  }

  public long relists() {
    return counters[NativeBridge.H_RELISTS];
  }

  public long errors() {
    return counters[NativeBridge.H_ERRORS];
  }

  /** LIST requests sent (each page counts). */
  public long lists() {
    return counters[NativeBridge.H_LISTS];
  }

  /** WATCH requests sent: the first and every reconnect. */
  public long watchConnects() {
    return counters[NativeBridge.H_WATCH_CONNECTS];
  }

  /** Milliseconds since the last pod event, or -1. */
  public long millisSinceLastEvent() {
    return counters[NativeBridge.H_MILLIS_SINCE_EVENT];
  }

  /** Milliseconds since the apiserver last sent anything (event, bookmark, list page), or -1. */
  public long millisSinceLastActivity() {
    return counters[NativeBridge.H_MILLIS_SINCE_ACTIVITY];
  }

  public long pendingChanges() {
    return counters[NativeBridge.H_PENDING_CHANGES];
  }

  public long consecutiveFailures() {
    return counters[NativeBridge.H_CONSECUTIVE_FAILURES];
  }

  public long cacheJsonBytes() {
    return counters[NativeBridge.H_CACHE_JSON_BYTES];
  }

  /** In words, e.g. {@code Degraded (3 consecutive failures; last: ...); 12 pods cached; ...}. */
  public String description() {
    return description;
  }

  @Override
  public String toString() {
    return description;
  }
}

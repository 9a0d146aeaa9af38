package org.sparkk8snative;

import java.util.List;

/**
 * What the lister answers: every cached pod; or that nothing changed since the caller's previous
 * snapshot (then the caller hands that one to Spark again); or why it may not answer now.
 */
public final class ListerSnapshot {
  private final List<PodBatch.Entry> entries;
  private final String notReadyReason;
  private final int frameBytes;
  private final long generation;
  private final boolean unchanged;

  private ListerSnapshot(List<PodBatch.Entry> entries, String notReadyReason, int frameBytes, long generation,
      boolean unchanged) {
    this.entries = entries;
    this.notReadyReason = notReadyReason;
    this.frameBytes = frameBytes;
    this.generation = generation;
    this.unchanged = unchanged;
  }

  static ListerSnapshot ready(List<PodBatch.Entry> entries, long generation, int frameBytes) {
    return new ListerSnapshot(entries, null, frameBytes, generation, false);
  }

  static ListerSnapshot unchangedSince(long knownGeneration) {
    return new ListerSnapshot(List.of(), null, 1, knownGeneration, true);
  }

  static ListerSnapshot notReady(String reason) {
    return new ListerSnapshot(null, reason, 0, 0, false);
  }

  /**
   * Whether the cache is exactly as at the generation the caller passed: {@link #entries()} is
   * then empty, and the caller's previous snapshot is still the truth.
   */
  public boolean isUnchanged() {
    return unchanged;
  }

  /** The cache generation this snapshot shows; pass it as {@code knownGeneration} next time. */
  public long generation() {
    return generation;
  }

  /** Bytes that crossed JNI for this snapshot (unchanged pods cost their name only). */
  public int frameBytes() {
    return frameBytes;
  }

  public boolean isReady() {
    return entries != null;
  }

  /** The pods; only when ready. */
  public List<PodBatch.Entry> entries() {
    if (entries == null) {
      throw new IllegalStateException("the lister is not ready: " + notReadyReason);
    }
    return entries;
  }

  /** Why the lister is not ready (unsynced, stale or stopped); null when ready. */
  public String notReadyReason() {
    return notReadyReason;
  }
}

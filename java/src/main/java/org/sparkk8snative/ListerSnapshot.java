package org.sparkk8snative;

import java.util.List;

/** What the lister answers: every cached pod, or why it may not answer now. */
public final class ListerSnapshot {
  private final List<PodBatch.Entry> entries;
  private final String notReadyReason;

  private ListerSnapshot(List<PodBatch.Entry> entries, String notReadyReason) {
    this.entries = entries;
    this.notReadyReason = notReadyReason;
  }

  static ListerSnapshot ready(List<PodBatch.Entry> entries) {
    return new ListerSnapshot(entries, null);
  }

  static ListerSnapshot notReady(String reason) {
    return new ListerSnapshot(null, reason);
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

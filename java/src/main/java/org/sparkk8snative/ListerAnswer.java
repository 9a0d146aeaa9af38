package org.sparkk8snative;

import java.util.List;

/** What the lister answers: a full snapshot, "unchanged since your view", or not ready. */
public sealed interface ListerAnswer {
  /**
   * Every cached pod; those the caller holds (generation at or below its known view) without JSON.
   *
   * @param view identifies these contents; pass it as {@code knownView} next time
   * @param frameBytes bytes that crossed JNI for this answer
   */
  record Ready(List<PodBatch.Entry> entries, long view, int frameBytes) implements ListerAnswer {}

  /**
   * The cache is exactly as the caller's previous snapshot showed it: hand that one to Spark again.
   */
  record Unchanged(long view) implements ListerAnswer {}

  /**
   * No full snapshot may be taken now (the cache is unsynced, stale or relisting after a stale
   * spell).
   */
  record NotReady(String reason) implements ListerAnswer {}
}

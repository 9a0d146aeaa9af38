package org.sparkk8snative;

import java.util.List;
import java.util.Objects;

/**
 * What the lister answers: a full snapshot, "unchanged since your view", or not ready. Exactly
 * these three (the constructor is private); value classes rather than records, as the Spark 3.5
 * artifact is compiled for Java 8.
 */
public abstract class ListerAnswer {
  private final int frameBytes;

  private ListerAnswer(int frameBytes) {
    this.frameBytes = frameBytes;
  }

  /** Bytes that crossed JNI for this answer. */
  public int frameBytes() {
    return frameBytes;
  }

  /**
   * Every cached pod; those the caller holds (generation at or below its known view) without JSON.
   */
  public static final class Ready extends ListerAnswer {
    private final List<PodBatch.Entry> entries;
    private final long view;

    /**
     * @param view identifies these contents; pass it as {@code knownView} next time
     * @param frameBytes bytes that crossed JNI for this answer
     */
    public Ready(List<PodBatch.Entry> entries, long view, int frameBytes) {
      super(frameBytes);
      this.entries = entries;
      this.view = view;
    }

    public List<PodBatch.Entry> entries() {
      return entries;
    }

    public long view() {
      return view;
    }

    @Override
    public String toString() {
      return "Ready[" + entries.size() + " entries, view " + view + ", " + frameBytes() + " bytes]";
    }
  }

  /**
   * The cache is exactly as the caller's previous snapshot showed it: hand that one to Spark again.
   */
  public static final class Unchanged extends ListerAnswer {
    private final long view;

    /**
     * @param frameBytes bytes that crossed JNI for this answer
     */
    public Unchanged(long view, int frameBytes) {
      super(frameBytes);
      this.view = view;
    }

    public long view() {
      return view;
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof Unchanged
          && ((Unchanged) o).view == view
          && ((Unchanged) o).frameBytes() == frameBytes();
    }

    @Override
    public int hashCode() {
      return Long.hashCode(view) * 31 + frameBytes();
    }

    @Override
    public String toString() {
      return "Unchanged[view " + view + ", " + frameBytes() + " bytes]";
    }
  }

  /**
   * No full snapshot may be taken now (the cache is unsynced, stale or relisting after a stale
   * spell).
   */
  public static final class NotReady extends ListerAnswer {
    private final String reason;

    /**
     * @param frameBytes bytes that crossed JNI for this answer
     */
    public NotReady(String reason, int frameBytes) {
      super(frameBytes);
      this.reason = reason;
    }

    public String reason() {
      return reason;
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof NotReady
          && Objects.equals(((NotReady) o).reason, reason)
          && ((NotReady) o).frameBytes() == frameBytes();
    }

    @Override
    public int hashCode() {
      return Objects.hashCode(reason) * 31 + frameBytes();
    }

    @Override
    public String toString() {
      return "NotReady[" + reason + "]";
    }
  }
}

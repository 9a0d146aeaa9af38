package org.sparkk8snative.spark;

/**
 * A source of executor pod snapshots for Spark's {@code ExecutorPodsSnapshotsStore}: the contract
 * of the trait that Spark's informer pull request (SPARK-33737) extracts from the watch and polling
 * sources, {@code start(applicationId)} and {@code stop()}. Unmodified Spark 4.x has no such trait;
 * this interface is the same contract for the sources of this library.
 */
public interface ExecutorPodsSnapshotSource {
  /** Starts feeding the store; a second start throws {@link IllegalStateException}. */
  void start(String applicationId);

  /** Stops feeding the store; idempotent. */
  void stop();
}

package org.sparkk8snative.node;

import java.util.List;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;

/**
 * The node tests' job: a groupBy whose shuffle crosses the executors. It runs in a test's JVM and,
 * from the jar of the jobs, in a cluster-mode driver pod ({@link ClusterModeJob}), so it uses
 * nothing of the tests but Spark.
 */
final class ShuffleJob {
  /** The keys a test's groupBy counts by, unless it needs more. */
  static final int KEYS = 100;

  private ShuffleJob() {}

  /**
   * The ids 0 to {@code rows} in {@code partitions} map tasks, counted by id modulo {@code keys}.
   */
  static List<Row> countByKey(SparkSession spark, long rows, int partitions, int keys) {
    return spark
        .range(0, rows, 1, partitions)
        .selectExpr("id % " + keys + " AS k")
        .groupBy("k")
        .count()
        .collectAsList();
  }

  /** The keys missing from {@code counts} or counted other than {@code rows / keys}. */
  static long wrongKeys(List<Row> counts, long rows, int keys) {
    long wrongCounts = counts.stream().filter(row -> row.getLong(1) != rows / keys).count();
    return wrongCounts + Math.max(0, keys - counts.size());
  }
}

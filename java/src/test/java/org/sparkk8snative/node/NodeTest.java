package org.sparkk8snative.node;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import org.apache.spark.sql.Row;
import org.junit.jupiter.api.Tag;
import org.sparkk8snative.TestPlane;

/**
 * A test on the real node ({@code make node-test}, stage {@code node}): the one node of the test
 * JVM ({@link ProcessNode#get()}, started on first use) and its plane. The tag is inherited, so
 * every subclass runs in that stage and no other.
 */
@Tag("node")
abstract class NodeTest {
  final ProcessNode node = ProcessNode.get();
  final TestPlane plane = node.plane();

  /**
   * That a groupBy of the ids 0 to {@code rows} by id modulo {@code keys} ({@link ShuffleJob})
   * counted every key, each {@code rows / keys} times: no shuffle block lost or read twice.
   */
  static void assertEveryKeyCounted(List<Row> counts, long rows, int keys, String what) {
    assertEquals(
        0,
        ShuffleJob.wrongKeys(counts, rows, keys),
        what + ": keys missing or not counted " + rows / keys + " times, of " + keys);
  }
}

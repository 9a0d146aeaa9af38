package org.sparkk8snative.bench;

import java.time.LocalDate;

/**
 * When and from which commit a benchmark ran, as every section it writes states it: the commit is
 * the one {@code scripts/bench.sh} built (its {@code BENCH_COMMIT}, {@code git describe --dirty}).
 */
final class RunStamp {
  private RunStamp() {}

  /** Today, and the commit measured. */
  static String now() {
    String commit = System.getenv("BENCH_COMMIT");
    return LocalDate.now()
        + ", commit "
        + (commit == null || commit.isBlank() ? "unknown" : commit.trim());
  }
}

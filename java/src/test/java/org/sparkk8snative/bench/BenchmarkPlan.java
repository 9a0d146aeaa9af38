package org.sparkk8snative.bench;

import java.time.Duration;
import java.util.Arrays;
import java.util.List;

/**
 * What one benchmark run does: pod counts for the first snapshot, the steady-state population, the
 * patches, the request-counting window, and the polling interval of both the legacy polling source
 * and the listers.
 */
record BenchmarkPlan(
    String name,
    List<Integer> sizes,
    int steadyPods,
    int patches,
    long patchIntervalMillis,
    long windowSeconds,
    long pollingSeconds,
    int repetitions,
    long seed) {
  static final String STEADY_APP = "bench-steady";

  /**
   * Spark's defaults: 30 s polling; a 60 s window holds two polls; every contender 5 times ({@code
   * BENCH_REPS} overrides it for a shorter run by hand).
   */
  static BenchmarkPlan full() {
    String reps = System.getenv().getOrDefault("BENCH_REPS", "5");
    return new BenchmarkPlan(
        "full",
        List.of(1000, 5000, 10000, 20000),
        100,
        1000,
        10,
        60,
        30,
        Integer.parseInt(reps),
        15);
  }

  /** A smoke check of the harness: small numbers, polling scaled down to 2 s, two repetitions. */
  static final BenchmarkPlan QUICK =
      new BenchmarkPlan("quick", List.of(100, 300), 20, 100, 10, 8, 2, 2, 15);

  static String appId(int pods) {
    return "bench-" + pods;
  }

  String pollingInterval() {
    return pollingSeconds + "s";
  }

  Duration pollingDuration() {
    return Duration.ofSeconds(pollingSeconds);
  }

  int largest() {
    return sizes.get(sizes.size() - 1);
  }

  String encode() {
    return String.join(
        ";",
        name,
        join(sizes),
        Integer.toString(steadyPods),
        Integer.toString(patches),
        Long.toString(patchIntervalMillis),
        Long.toString(windowSeconds),
        Long.toString(pollingSeconds),
        Integer.toString(repetitions),
        Long.toString(seed));
  }

  static BenchmarkPlan parse(String encoded) {
    String[] f = encoded.split(";");
    List<Integer> sizes = Arrays.stream(f[1].split(",")).map(Integer::parseInt).toList();
    return new BenchmarkPlan(
        f[0],
        sizes,
        Integer.parseInt(f[2]),
        Integer.parseInt(f[3]),
        Long.parseLong(f[4]),
        Long.parseLong(f[5]),
        Long.parseLong(f[6]),
        Integer.parseInt(f[7]),
        Long.parseLong(f[8]));
  }

  private static String join(List<Integer> values) {
    return String.join(",", values.stream().map(String::valueOf).toList());
  }
}

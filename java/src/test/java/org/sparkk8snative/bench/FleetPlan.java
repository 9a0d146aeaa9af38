package org.sparkk8snative.bench;

import java.util.List;

/**
 * What one fleet benchmark run does: fleet sizes (drivers), executors per driver, the other apps'
 * pods in the same namespace, repetitions, the measuring window, Spark's polling interval, and the
 * churn (executors replaced per driver per minute).
 */
record FleetPlan(
    String name,
    List<Integer> drivers,
    int executorsPerDriver,
    int unrelatedPods,
    int repetitions,
    long settleSeconds,
    long windowSeconds,
    long pollingSeconds,
    double replacementsPerDriverMinute,
    long seed) {
  /** Pods per unrelated app: other Spark apps' executors in the namespace, never watched. */
  static final int PODS_PER_UNRELATED_APP = 50;

  /**
   * 10, 30 and 100 drivers x 50 executors among 5,000 other pods, Spark's 30 s polling, one
   * executor replaced per driver per minute, 30 s windows, 5 repetitions. {@code BENCH_FLEET_REPS}
   * and {@code BENCH_FLEET_WINDOW} (seconds) override the repetitions and the window for a shorter
   * run by hand.
   */
  static FleetPlan full() {
    return new FleetPlan(
        "full",
        List.of(10, 30, 100),
        50,
        5000,
        envInt("BENCH_FLEET_REPS", 5),
        10,
        envInt("BENCH_FLEET_WINDOW", 30),
        30,
        1.0,
        envInt("BENCH_FLEET_SEED", 16));
  }

  /** A smoke check of the harness: every figure, small numbers, polling scaled down to 2 s. */
  static FleetPlan quick() {
    return new FleetPlan("quick", List.of(2, 8), 10, 200, 1, 2, 5, 2, 6.0, 16);
  }

  static String appId(int driver) {
    return "fleet-" + driver;
  }

  static String unrelatedAppId(int app) {
    return "other-" + app;
  }

  /**
   * Whether a contender runs at a fleet size: the long-watch variant of native answers one question
   * (what the proof of life, a watch per lister round, costs at fleet scale), at the largest size
   * only.
   */
  boolean measures(String contender, int size) {
    return !contender.equals(FleetDrivers.NATIVE_LONG_WATCH) || size == largest();
  }

  int largest() {
    return drivers.get(drivers.size() - 1);
  }

  int unrelatedApps() {
    return Math.max(1, unrelatedPods / PODS_PER_UNRELATED_APP);
  }

  private static int envInt(String key, int fallback) {
    String value = System.getenv(key);
    return value == null || value.isBlank() ? fallback : Integer.parseInt(value.trim());
  }
}

package org.sparkk8snative.bench;

import java.util.List;

/**
 * Median and range (min-max) of one figure over a benchmark's repetitions. A difference between two
 * contenders is a win or a loss only when their ranges do not overlap.
 */
record Spread(double median, double min, double max, int n) {
  static Spread of(List<Double> values) {
    List<Double> sorted = values.stream().filter(v -> !Double.isNaN(v)).sorted().toList();
    if (sorted.isEmpty()) {
      return new Spread(Double.NaN, Double.NaN, Double.NaN, 0);
    }
    int k = sorted.size();
    double median =
        k % 2 == 1 ? sorted.get(k / 2) : (sorted.get(k / 2 - 1) + sorted.get(k / 2)) / 2;
    return new Spread(median, sorted.get(0), sorted.get(k - 1), k);
  }

  boolean present() {
    return n > 0;
  }

  /** "win" if all of this is below all of other, "loss" if above, else "within noise". */
  String against(Spread other) {
    if (!present() || !other.present()) {
      return "n/a";
    }
    if (max < other.min) {
      return "win";
    }
    if (min > other.max) {
      return "loss";
    }
    return "within noise";
  }

  String format(String unit, int decimals) {
    if (!present()) {
      return "n/a";
    }
    String f = "%." + decimals + "f";
    return String.format(f + "%s (" + f + "-" + f + ")", median, unit, min, max);
  }
}

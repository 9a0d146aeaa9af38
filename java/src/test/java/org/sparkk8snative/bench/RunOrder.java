package org.sparkk8snative.bench;

import java.util.Collections;
import java.util.List;
import java.util.SplittableRandom;

/** The order of a benchmark repetition: the runs shuffled from a printed seed. */
final class RunOrder {
  /** How the order is made, as the reports say it. */
  static final String HOW = "a Fisher-Yates shuffle drawing from `new SplittableRandom(seed)`";

  private RunOrder() {}

  /** The seed of repetition {@code rep} of a plan seeded {@code planSeed}, as printed. */
  static long seed(long planSeed, int rep) {
    return planSeed * 1000 + rep;
  }

  /**
   * Shuffles {@code runs} in place. Not {@code Collections.shuffle(runs, new Random(seed))}: for
   * consecutive seeds the first outputs of {@code java.util.Random} are nearly equal, and with four
   * runs its first draw (the last place) comes from their high bits, so fabric8 ran last in all
   * five repetitions of a run. SplittableRandom mixes the seed; Java 17 has no {@code
   * Collections.shuffle} that takes it.
   */
  static <T> void shuffle(List<T> runs, long seed) {
    SplittableRandom random = new SplittableRandom(seed);
    for (int i = runs.size() - 1; i > 0; i--) {
      Collections.swap(runs, i, random.nextInt(i + 1));
    }
  }
}

package org.sparkk8snative.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class HeadlineRowTest {
  /** The row of one figure whose runs gave these values per contender. */
  private static String row(List<Double> legacy, List<Double> fabric8, List<Double> nativeRuns) {
    Map<String, List<Double>> values =
        Map.of("legacy", legacy, "fabric8", fabric8, "native", nativeRuns);
    return HeadlineRow.of("x", c -> Spread.of(values.get(c)), s -> s.format("", 0));
  }

  @Test
  void aContenderIsBoldOnlyWhereItsRangeLiesBelowEveryOther() {
    assertEquals(
        "| x | 10 (9-11) | 8 (7-9) | **3 (2-4)** |\n",
        row(List.of(9.0, 10.0, 11.0), List.of(7.0, 8.0, 9.0), List.of(2.0, 3.0, 4.0)));
  }

  @Test
  void aLowerMedianWithinAnotherRangeIsNotBold() {
    // Native's median is the lowest, but its range overlaps fabric8's: within noise, no claim.
    assertEquals(
        "| x | 10 (9-11) | 5 (3-8) | 4 (2-6) |\n",
        row(List.of(9.0, 10.0, 11.0), List.of(3.0, 5.0, 8.0), List.of(2.0, 4.0, 6.0)));
  }

  @Test
  void aPeerThatWinsIsTheOneInBold() {
    assertEquals(
        "| x | 10 (9-11) | **1 (0-2)** | 4 (3-5) |\n",
        row(List.of(9.0, 10.0, 11.0), List.of(0.0, 1.0, 2.0), List.of(3.0, 4.0, 5.0)));
  }
}

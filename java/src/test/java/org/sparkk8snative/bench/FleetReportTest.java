package org.sparkk8snative.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import java.util.List;
import org.junit.jupiter.api.Test;

class FleetReportTest {
  private static Spread range(double median, double min, double max) {
    return new Spread(median, min, max, 3);
  }

  @Test
  void aPredictionSumsCountsTimesUnitsWithRangesFromTheirEnds() {
    // 120 LISTs (100-130) of 2 ms (1-3 ms), and 10 renewals (10-10) of 1 ms (-1..2 ms: a CPU
    // figure after the idle apiserver's share is taken out may come out below zero).
    Spread predicted =
        FleetReport.predicted(
            List.of(range(120, 100, 130), range(10, 10, 10)),
            List.of(range(0.002, 0.001, 0.003), range(0.001, -0.001, 0.002)));
    assertEquals(0.25, predicted.median(), 1e-12);
    assertEquals(0.1 - 0.01, predicted.min(), 1e-12);
    assertEquals(0.39 + 0.02, predicted.max(), 1e-12);
  }

  @Test
  void aPredictionWithAFigureMissingIsMissing() {
    assertFalse(
        FleetReport.predicted(List.of(Spread.of(List.of())), List.of(range(1, 1, 1))).present());
  }

  @Test
  void predictionAndMeasurementAgreeOnlyWhereTheirRangesOverlap() {
    assertEquals("agree", FleetReport.agreement(range(1.0, 0.8, 1.2), range(1.1, 1.15, 1.3)));
    assertEquals(
        "measured more", FleetReport.agreement(range(1.0, 0.8, 1.2), range(2.0, 1.5, 2.5)));
    assertEquals(
        "measured less", FleetReport.agreement(range(1.0, 0.8, 1.2), range(0.5, 0.4, 0.7)));
  }
}

package org.sparkk8snative.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

class RunOrderTest {
  private static final List<String> RUNS = List.of("floor", "legacy", "fabric8", "native");

  private static List<String> order(long planSeed, int rep) {
    List<String> order = new ArrayList<>(RUNS);
    RunOrder.shuffle(order, RunOrder.seed(planSeed, rep));
    return order;
  }

  @Test
  void consecutiveRepetitionsDoNotGiveOneContenderTheSamePlace() {
    // The plans' own seeds (15: make bench, 16: make bench-fleet) and a few more.
    for (long planSeed = 10; planSeed <= 20; planSeed++) {
      Set<String> last = new HashSet<>();
      Set<List<String>> orders = new HashSet<>();
      for (int rep = 1; rep <= 5; rep++) {
        List<String> order = order(planSeed, rep);
        assertEquals(new HashSet<>(RUNS), new HashSet<>(order), "a permutation of the runs");
        last.add(order.get(RUNS.size() - 1));
        orders.add(order);
      }
      assertTrue(
          last.size() >= 2, "seed " + planSeed + ": the same contender last in every repetition");
      assertTrue(orders.size() >= 3, "seed " + planSeed + ": repetitions in at most two orders");
    }
  }

  @Test
  void aPrintedSeedReplaysItsOrder() {
    assertEquals(order(15, 3), order(15, 3));
  }
}

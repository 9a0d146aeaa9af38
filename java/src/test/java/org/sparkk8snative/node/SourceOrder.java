package org.sparkk8snative.node;

import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Runs a node test's two halves, the native sources and Spark's own, in an order drawn per run and
 * printed: whichever runs first does so in a JVM still loading and compiling Spark, on 2 cores, and
 * is slower for it (seen with either source). A fixed order would charge that to one source, and a
 * comparison of times with a slack would then measure the order. {@code -Dnode.nativeFirst=true} or
 * {@code false} replays an order.
 */
final class SourceOrder {
  private SourceOrder() {}

  /** Both outcomes, native first in the list, whichever ran first. */
  static <T> List<T> run(String test, Callable<T> nativeRun, Callable<T> legacyRun)
      throws Exception {
    String fixed = System.getProperty("node.nativeFirst");
    boolean nativeFirst =
        fixed != null ? Boolean.parseBoolean(fixed) : ThreadLocalRandom.current().nextBoolean();
    System.out.printf(
        "%s: %s sources run first (-Dnode.nativeFirst=%s replays the order)%n",
        test, nativeFirst ? "the native" : "Spark's own", nativeFirst);
    if (nativeFirst) {
      T first = nativeRun.call();
      return List.of(first, legacyRun.call());
    }
    T first = legacyRun.call();
    return List.of(nativeRun.call(), first);
  }
}

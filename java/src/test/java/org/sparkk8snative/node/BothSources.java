package org.sparkk8snative.node;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.ThreadLocalRandom;
import java.util.function.BiConsumer;
import java.util.function.ToLongFunction;

/**
 * One node test's two runs, with the native sources and with Spark's own, and the one rule by which
 * their times are compared.
 *
 * <p>The two run in an order drawn per run and printed: whichever runs first does so in a JVM still
 * loading and compiling Spark, on 2 cores, and is slower for it (seen with either source). A fixed
 * order would charge that to one source, and a comparison of times with a slack would then measure
 * the order. {@code -Dnode.nativeFirst=true} or {@code false} replays an order.
 *
 * @param <T> what one run saw
 */
final class BothSources<T> {
  /** One run of the scenario, with the native sources or with Spark's own. */
  interface Run<T> {
    T run(boolean nativeSources) throws Exception;
  }

  final T nativeRun;
  final T legacyRun;

  private BothSources(T nativeRun, T legacyRun) {
    this.nativeRun = nativeRun;
    this.legacyRun = legacyRun;
  }

  /** Runs {@code test} with both sources, in the drawn order. */
  static <T> BothSources<T> run(String test, Run<T> run) throws Exception {
    String fixed = System.getProperty("node.nativeFirst");
    boolean nativeFirst =
        fixed != null ? Boolean.parseBoolean(fixed) : ThreadLocalRandom.current().nextBoolean();
    System.out.printf(
        "%s: %s sources run first (-Dnode.nativeFirst=%s replays the order)%n",
        test, nativeFirst ? "the native" : "Spark's own", nativeFirst);
    if (nativeFirst) {
      T first = run.run(true);
      return new BothSources<>(first, run.run(false));
    }
    T first = run.run(false);
    return new BothSources<>(run.run(true), first);
  }

  /** {@code check} on each run, with its mode's name: "native", then "legacy". */
  void each(BiConsumer<String, T> check) {
    check.accept("native", nativeRun);
    check.accept("legacy", legacyRun);
  }

  /**
   * The native sources took at most Spark's own time for {@code what} plus {@code slackMillis}: the
   * slack each test names and explains (the JVMs and the job share 2 cores), never widened by how
   * far the two differ.
   */
  void nativeNoLaterThanLegacy(String what, ToLongFunction<T> millis, long slackMillis) {
    noLaterThanLegacy(
        what, millis.applyAsLong(nativeRun), millis.applyAsLong(legacyRun), slackMillis);
  }

  /** The same rule for two times a test measured itself (one loss of a run, say). */
  static void noLaterThanLegacy(
      String what, long nativeMillis, long legacyMillis, long slackMillis) {
    assertTrue(
        nativeMillis <= legacyMillis + slackMillis,
        what
            + " after "
            + nativeMillis
            + " ms with the native sources, "
            + legacyMillis
            + " ms with Spark's own (slack "
            + slackMillis
            + " ms)");
  }
}

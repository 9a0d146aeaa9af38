package org.sparkk8snative.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.function.DoubleBinaryOperator;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Turns the figures of one run into BENCHMARKS.md's JVM section and the README's headline. */
final class BenchmarkReport {
  static final List<String> CONTENDERS = List.of("legacy", "fabric8", "native");
  static final Map<String, String> LABELS =
      Map.of(
          "floor",
          "floor (raw HTTP)",
          "legacy",
          "legacy (Spark watch + polling)",
          "fabric8",
          "fabric8 informer + lister",
          "native",
          "native (this project)");

  final BenchmarkPlan plan;
  final Map<String, Map<String, String>> figures;
  private final long seconds;

  BenchmarkReport(BenchmarkPlan plan, Map<String, Map<String, String>> figures, long seconds) {
    this.plan = plan;
    this.figures = figures;
    this.seconds = seconds;
  }

  /** A figure as a number, or NaN when the run did not produce it. */
  double number(String run, String key) {
    String value = figures.getOrDefault(run, Map.of()).get(key);
    try {
      return value == null ? Double.NaN : Double.parseDouble(value);
    } catch (NumberFormatException e) {
      return Double.NaN;
    }
  }

  /** Sorted latencies in milliseconds. */
  double[] latenciesMillis(String run) {
    String value = figures.getOrDefault(run, Map.of()).getOrDefault("latency.micros", "-");
    if (value.equals("-")) {
      return new double[0];
    }
    return Arrays.stream(value.split(","))
        .mapToDouble(v -> Long.parseLong(v) / 1000.0)
        .sorted()
        .toArray();
  }

  static double percentile(double[] sorted, double p) {
    if (sorted.length == 0) {
      return Double.NaN;
    }
    return sorted[Math.min(sorted.length - 1, (int) Math.ceil(p * sorted.length) - 1)];
  }

  /** The better of legacy and fabric8 for a figure (lower is better). */
  private double bestPeer(String key) {
    return Math.min(orInf(number("legacy", key)), orInf(number("fabric8", key)));
  }

  private static double orInf(double v) {
    return Double.isNaN(v) ? Double.POSITIVE_INFINITY : v;
  }

  /** Figures a complete run has and this one lacks (a harness fault, not a slow contender). */
  List<String> missing() {
    List<String> missing = new ArrayList<>();
    for (String run : SnapshotSourcesBenchmark.RUNS) {
      List<String> keys = new ArrayList<>(List.of("latency.received"));
      for (int size : plan.sizes()) {
        keys.add("first." + size + ".allPodsMs");
      }
      if (!run.equals("floor")) {
        keys.addAll(List.of("requests.LIST.perHour", "heap.retainedBytes", "alloc.bytesPerEvent"));
      }
      if (run.equals("native")) {
        keys.add("lister.unchangedMicros");
      }
      for (String key : keys) {
        if (Double.isNaN(number(run, key))) {
          missing.add(run + " " + key);
        }
      }
      if (number(run, "latency.received") < plan.patches()) {
        missing.add(
            run
                + ": "
                + fmt(number(run, "latency.received"))
                + " of "
                + plan.patches()
                + " patches reached it");
      }
    }
    return missing;
  }

  String headline() {
    double lists = number("native", "requests.LIST.perHour");
    double legacyLists = number("legacy", "requests.LIST.perHour");
    double[] nat = latenciesMillis("native");
    double[] f8 = latenciesMillis("fabric8");
    int n = plan.largest();
    return String.format(
        "headline: LIST per driver-hour native %.0f vs legacy %.0f; apiserver bytes per hour native %s vs legacy %s;"
            + " first view of %d pods native %.0f ms vs fabric8 %.0f ms (raw LIST %.0f ms);"
            + " p99 patch->store native %.1f ms vs fabric8 %.1f ms; heap retained native %s vs fabric8 %s",
        lists,
        legacyLists,
        bytes(number("native", "bytes.perHour")),
        bytes(number("legacy", "bytes.perHour")),
        n,
        number("native", "first." + n + ".allPodsMs"),
        number("fabric8", "first." + n + ".allPodsMs"),
        number("floor", "first." + n + ".allPodsMs"),
        percentile(nat, 0.99),
        percentile(f8, 0.99),
        bytes(number("native", "heap.retainedBytes")),
        bytes(number("fabric8", "heap.retainedBytes")));
  }

  void writeMarkdown(Path file) throws IOException {
    MarkdownSections.write(file, "jvm", section());
  }

  private String section() {
    StringBuilder md = new StringBuilder();
    int n = plan.largest();
    md.append("### Snapshot sources side by side: legacy, fabric8 informer, native\n\n");
    md.append(
        String.format(
            """
        `make bench` (plan `%s`, %d s on %s, %s). Each contender runs in a JVM of its own (`-Xmx2g`, \
        same flags), one after the other on the same local control plane (kube-apiserver v1.36.3, watch \
        cache on), and feeds Spark's real `ExecutorPodsSnapshotsStoreImpl` (one subscriber at 1 s, as the \
        lifecycle manager). Spark %s with its fabric8 %s. Executor pods are shaped like Spark's (environment, \
        resources, local-dir volume, Running status; about %s of JSON each). Polling interval of the legacy \
        source and of both listers: %d s%s. Lower is better everywhere; ratios are native / best peer.

        ![latency distributions and request counts](docs/benchmark.png)

        """,
            plan.name(),
            seconds,
            machine(),
            LocalDate.now(),
            jarVersion("spark-core_2.13-"),
            jarVersion("kubernetes-client-api-"),
            bytes(number("floor", "first." + n + ".listBytes") / n),
            plan.pollingSeconds(),
            plan.pollingSeconds() == 30 ? " (Spark's default)" : " (scaled down for a short run)"));

    md.append(
        String.format(
            "**Apiserver requests at steady state, per driver-hour** (%d executors, %d s window "
                + "scaled to an hour; from the apiserver's `/metrics`, namespaced pod requests; bytes are LIST and GET "
                + "response bodies):\n\n",
            plan.steadyPods(), plan.windowSeconds()));
    md.append("| | LIST | WATCH | GET | bytes served |\n| --- | ---: | ---: | ---: | ---: |\n");
    for (String c : CONTENDERS) {
      md.append(
          String.format(
              "| %s | %.0f | %.0f | %.0f | %s |\n",
              LABELS.get(c),
              number(c, "requests.LIST.perHour"),
              number(c, "requests.WATCH.perHour"),
              number(c, "requests.GET.perHour"),
              bytes(number(c, "bytes.perHour"))));
    }
    md.append(
        "\nA native WATCH request ends every `watchTimeout` (10 s by default, two thirds of the stale bound) "
            + "and resumes from its resourceVersion, served from the watch cache: that is how a quiet watch proves "
            + "itself alive, so the lister never snapshots a silently dead cache.\n\n");

    md.append(
        "**Time from `start` to Spark's store holding every executor pod** (median of 3 starts), next to a "
            + "raw LIST of the same pods read over plain HTTPS without decoding (the floor):\n\n");
    md.append(
        "| pods | raw LIST | legacy | fabric8 | native | native / best peer | native / raw LIST |\n");
    md.append("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
    for (int size : plan.sizes()) {
      String key = "first." + size + ".allPodsMs";
      md.append(
          String.format(
              "| %d | %s | %s | %s | %s | %s | %s |\n",
              size,
              ms(number("floor", key)),
              ms(number("legacy", key)),
              ms(number("fabric8", key)),
              ms(number("native", key)),
              ratio(number("native", key), bestPeer(key)),
              ratio(number("native", key), number("floor", key))));
    }
    md.append(
        "\nFirst full snapshot (`replaceSnapshot`, which Spark needs before it can detect missing pods):\n\n");
    md.append("| pods | legacy | fabric8 | native |\n| ---: | ---: | ---: | ---: |\n");
    for (int size : plan.sizes()) {
      String key = "first." + size + ".fullSnapshotMs";
      md.append(
          String.format(
              "| %d | %s | %s | %s |\n",
              size,
              Double.isNaN(number("legacy", key))
                  ? "after one polling interval"
                  : ms(number("legacy", key)),
              ms(number("fabric8", key)),
              ms(number("native", key))));
    }

    md.append(
        String.format(
            "%n**Status PATCH to Spark's store holding the new state** (%d patches, one every %d ms, "
                + "round-robin over the %d pods; send time carried in the patch), next to a raw watch of the same pods "
                + "(the floor):%n%n",
            plan.patches(), plan.patchIntervalMillis(), plan.steadyPods()));
    md.append("| | p50 | p99 | max | received |\n| --- | ---: | ---: | ---: | ---: |\n");
    for (String run : SnapshotSourcesBenchmark.RUNS) {
      double[] l = latenciesMillis(run);
      md.append(
          String.format(
              "| %s | %.2f ms | %.2f ms | %.2f ms | %d / %d |\n",
              LABELS.get(run),
              percentile(l, 0.5),
              percentile(l, 0.99),
              percentile(l, 1.0),
              l.length,
              plan.patches()));
    }

    md.append(
        String.format(
            "%n**Driver footprint** (heap retained after GC and RSS with %d pods tracked, once the "
                + "first full snapshot is in; JVM bytes allocated per pod event during the patches; CPU over the "
                + "steady-state window, per hour):%n%n",
            n));
    md.append(
        "| | heap retained | RSS | JVM bytes / event | process CPU / hour | native CPU / hour |\n");
    md.append("| --- | ---: | ---: | ---: | ---: | ---: |\n");
    for (String c : CONTENDERS) {
      double hours = number(c, "steady.windowMs") / 3.6e6;
      md.append(
          String.format(
              "| %s | %s | %s | %s | %.1f s | %.1f s |\n",
              LABELS.get(c),
              bytes(number(c, "heap.retainedBytes")),
              bytes(number(c, "rss.bytes")),
              bytes(number(c, "alloc.bytesPerEvent")),
              number(c, "steady.processCpuMs") / 1000 / hours,
              number(c, "steady.nativeCpuMs") / 1000 / hours));
    }
    md.append(
        String.format(
            "| native / best peer | %s | %s | %s | | |\n",
            ratio(number("native", "heap.retainedBytes"), bestPeer("heap.retainedBytes")),
            ratio(number("native", "rss.bytes"), bestPeer("rss.bytes")),
            ratio(number("native", "alloc.bytesPerEvent"), bestPeer("alloc.bytesPerEvent"))));

    md.append(
        String.format(
            "%n**Native lister, %s unchanged pods into the store** (median of %s rounds after "
                + "the JIT settled; best in brackets): %s per round (%s), of which ours %s (%s) and the rest Spark's own "
                + "`replaceSnapshot` building its executor states, the same for every source. Ours is one JNI call "
                + "answering %s: nothing changed since the previous round, so that snapshot is handed to Spark again "
                + "and no pod is encoded, copied or decoded. When some pods changed, only those cross JNI with their "
                + "JSON; the others cross as a name.%n%n",
            fmt(number("native", "lister.pods")),
            fmt(number("native", "lister.rounds")),
            ms(number("native", "lister.unchangedMicros") / 1000),
            ms(number("native", "lister.unchangedBestMicros") / 1000),
            ms(number("native", "lister.oursMicros") / 1000),
            ms(number("native", "lister.oursBestMicros") / 1000),
            bytes(number("native", "lister.frameBytes"))));

    md.append(targets());
    return md.toString();
  }

  private String targets() {
    int n = plan.largest();
    String first = "first." + n + ".allPodsMs";
    double[] nat = latenciesMillis("native");
    double nativeP99 = percentile(nat, 0.99);
    List<String[]> rows = new ArrayList<>();
    rows.add(
        target(
            "0 LIST requests in steady state",
            number("native", "requests.LIST.perHour"),
            0,
            (v, t) -> v <= t ? 1 : 0,
            "%.0f per hour"));
    rows.add(
        target(
            "first view <= 0.7x fabric8",
            number("native", first) / number("fabric8", first),
            0.7,
            (v, t) -> v <= t ? 1 : 0,
            "%.2fx"));
    rows.add(
        target(
            "first view <= 1.5x raw LIST",
            number("native", first) / number("floor", first),
            1.5,
            (v, t) -> v <= t ? 1 : 0,
            "%.2fx"));
    rows.add(
        target(
            "p99 <= fabric8's",
            nativeP99 / percentile(latenciesMillis("fabric8"), 0.99),
            1.0,
            (v, t) -> v <= t ? 1 : 0,
            "%.2fx"));
    rows.add(
        target(
            "p99 <= 2x raw watch",
            nativeP99 / percentile(latenciesMillis("floor"), 0.99),
            2.0,
            (v, t) -> v <= t ? 1 : 0,
            "%.2fx"));
    rows.add(
        target(
            "heap retained <= 0.5x fabric8",
            number("native", "heap.retainedBytes") / number("fabric8", "heap.retainedBytes"),
            0.5,
            (v, t) -> v <= t ? 1 : 0,
            "%.2fx"));
    rows.add(
        target(
            "JVM bytes per event <= 0.5x fabric8",
            number("native", "alloc.bytesPerEvent") / number("fabric8", "alloc.bytesPerEvent"),
            0.5,
            (v, t) -> v <= t ? 1 : 0,
            "%.2fx"));
    rows.add(
        target(
            "lister snapshot of "
                + n
                + " unchanged pods <= 5 ms (ours, without Spark's replaceSnapshot)",
            number("native", "lister.oursMicros") / 1000,
            5,
            (v, t) -> v <= t ? 1 : 0,
            "%.2f ms"));
    rows.add(
        target(
            "lister snapshot of " + n + " unchanged pods <= 5 ms (with Spark's replaceSnapshot)",
            number("native", "lister.unchangedMicros") / 1000,
            5,
            (v, t) -> v <= t ? 1 : 0,
            "%.2f ms"));
    StringBuilder md =
        new StringBuilder("**Targets**:\n\n| target | measured | met |\n| --- | ---: | :---: |\n");
    for (String[] row : rows) {
      md.append("| ").append(String.join(" | ", row)).append(" |\n");
    }
    return md.append('\n').toString();
  }

  private static String[] target(
      String what, double value, double limit, DoubleBinaryOperator met, String format) {
    String measured = Double.isNaN(value) ? "n/a" : String.format(format, value);
    String verdict =
        Double.isNaN(value) ? "?" : met.applyAsDouble(value, limit) == 1 ? "yes" : "**no**";
    return new String[] {what, measured, verdict};
  }

  static String ms(double millis) {
    if (Double.isNaN(millis)) {
      return "n/a";
    }
    return millis < 10 ? String.format("%.2f ms", millis) : String.format("%.0f ms", millis);
  }

  static String ratio(double value, double peer) {
    if (Double.isNaN(value) || Double.isNaN(peer) || Double.isInfinite(peer) || peer == 0) {
      return "n/a";
    }
    return String.format("%.2fx", value / peer);
  }

  static String bytes(double b) {
    if (Double.isNaN(b)) {
      return "n/a";
    }
    if (Math.abs(b) >= 1 << 20) {
      return String.format("%.1f MB", b / (1 << 20));
    }
    if (Math.abs(b) >= 1 << 10) {
      return String.format("%.1f KB", b / (1 << 10));
    }
    return String.format("%.0f B", b);
  }

  private static String fmt(double v) {
    return Double.isNaN(v) ? "n/a" : String.format("%.0f", v);
  }

  private static String machine() {
    String cpu = "unknown CPU";
    try {
      for (String line : Files.readAllLines(Path.of("/proc/cpuinfo"))) {
        if (line.startsWith("model name")) {
          cpu = line.substring(line.indexOf(':') + 1).trim();
          break;
        }
      }
    } catch (IOException ignored) {
      // keep "unknown CPU"
    }
    return String.format(
        "%d cores (%s), %s %s, Java %s",
        Runtime.getRuntime().availableProcessors(),
        cpu,
        System.getProperty("os.name"),
        System.getProperty("os.arch"),
        System.getProperty("java.version"));
  }

  private static String jarVersion(String artifactPrefix) {
    Matcher m =
        Pattern.compile(Pattern.quote(artifactPrefix) + "([0-9][^/:]*)\\.jar")
            .matcher(System.getProperty("java.class.path"));
    return m.find() ? m.group(1) : "?";
  }
}

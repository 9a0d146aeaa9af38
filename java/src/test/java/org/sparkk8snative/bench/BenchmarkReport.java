package org.sparkk8snative.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Turns the figures of one run into BENCHMARKS.md's JVM section and the README's headline. */
/**
 * @param figures run -> one figure map per repetition
 * @param orders repetition -> the order its runs went in
 * @param seconds how long the whole benchmark took
 */
record BenchmarkReport(
    BenchmarkPlan plan,
    Map<String, List<Map<String, String>>> figures,
    Map<Integer, List<String>> orders,
    long seconds)
    implements BenchmarkOutput {
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

  /** A figure's median over the repetitions, or NaN when no run produced it. */
  double number(String run, String key) {
    return spread(run, key).median();
  }

  /** A figure's median and range over the repetitions. */
  Spread spread(String run, String key) {
    List<Double> values = new ArrayList<>();
    for (Map<String, String> rep : figures.getOrDefault(run, List.of())) {
      values.add(parse(rep.get(key)));
    }
    return Spread.of(values);
  }

  private static double parse(String value) {
    try {
      return value == null ? Double.NaN : Double.parseDouble(value);
    } catch (NumberFormatException e) {
      return Double.NaN;
    }
  }

  /** Sorted latencies in milliseconds, of every repetition together (the chart's CDF). */
  double[] latenciesMillis(String run) {
    return figures.getOrDefault(run, List.of()).stream()
        .flatMapToDouble(rep -> Arrays.stream(latenciesMillis(rep)))
        .sorted()
        .toArray();
  }

  private static double[] latenciesMillis(Map<String, String> rep) {
    String value = rep.getOrDefault("latency.micros", "-");
    if (value.equals("-")) {
      return new double[0];
    }
    return Arrays.stream(value.split(","))
        .mapToDouble(v -> Long.parseLong(v) / 1000.0)
        .sorted()
        .toArray();
  }

  /** A latency percentile of each repetition: its median and range. */
  Spread latency(String run, double p) {
    List<Double> values = new ArrayList<>();
    for (Map<String, String> rep : figures.getOrDefault(run, List.of())) {
      values.add(percentile(latenciesMillis(rep), p));
    }
    return Spread.of(values);
  }

  static double percentile(double[] sorted, double p) {
    if (sorted.length == 0) {
      return Double.NaN;
    }
    return sorted[Math.min(sorted.length - 1, (int) Math.ceil(p * sorted.length) - 1)];
  }

  /**
   * A driver's memory for its pods, per repetition: JVM heap retained after GC plus the native
   * library's heap.
   */
  Spread driverMemory(String run) {
    List<Double> values = new ArrayList<>();
    for (Map<String, String> rep : figures.getOrDefault(run, List.of())) {
      values.add(parse(rep.get("heap.retainedBytes")) + parse(rep.get("native.heapBytes")));
    }
    return Spread.of(values);
  }

  /** The better of legacy and fabric8 for a figure (lower is better). */
  private double bestPeer(String key) {
    return Math.min(orInf(number("legacy", key)), orInf(number("fabric8", key)));
  }

  private static double orInf(double v) {
    return Double.isNaN(v) ? Double.POSITIVE_INFINITY : v;
  }

  /** Figures a complete run has and this one lacks (a harness fault, not a slow contender). */
  @Override
  public List<String> missing() {
    List<String> missing = new ArrayList<>();
    for (String run : SnapshotSourcesBenchmark.RUNS) {
      List<Map<String, String>> reps = figures.getOrDefault(run, List.of());
      if (reps.size() != plan.repetitions()) {
        missing.add(run + ": " + reps.size() + " of " + plan.repetitions() + " repetitions");
      }
      List<String> keys = new ArrayList<>(List.of("latency.received"));
      for (int size : plan.sizes()) {
        keys.add("first." + size + ".allPodsMs");
      }
      if (!run.equals("floor")) {
        keys.addAll(
            List.of(
                "requests.LIST.perHour",
                "heap.retainedBytes",
                "native.heapBytes",
                "rss.bytes",
                "alloc.bytesPerEvent"));
      }
      if (run.equals("native")) {
        keys.add("lister.unchangedMicros");
      }
      if (run.equals("floor")) {
        keys.add("heap.storeFloorBytes");
        keys.add("first." + plan.largest() + ".decodedListMs");
      }
      for (int r = 0; r < reps.size(); r++) {
        for (String key : keys) {
          if (Double.isNaN(parse(reps.get(r).get(key)))) {
            missing.add(run + " repetition " + (r + 1) + " " + key);
          }
        }
        double received = parse(reps.get(r).get("latency.received"));
        if (received < plan.patches()) {
          missing.add(
              run
                  + " repetition "
                  + (r + 1)
                  + ": "
                  + fmt(received)
                  + " of "
                  + plan.patches()
                  + " patches reached it");
        }
      }
    }
    return missing;
  }

  @Override
  public String headline() {
    double lists = number("native", "requests.LIST.perHour");
    double legacyLists = number("legacy", "requests.LIST.perHour");

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
        latency("native", 0.99).median(),
        latency("fabric8", 0.99).median(),
        bytes(number("native", "heap.retainedBytes")),
        bytes(number("fabric8", "heap.retainedBytes")));
  }

  /** The README's headline table, from this run's figures. */
  @Override
  public String readmeHeadline() {
    int n = plan.largest();
    String first = "first." + n + ".allPodsMs";
    StringBuilder md = new StringBuilder();
    md.append("| | legacy | fabric8 informer | native |\n| --- | ---: | ---: | ---: |\n");
    md.append(
        HeadlineRow.of(
            "LIST requests per driver-hour (" + plan.steadyPods() + " executors)",
            c -> spread(c, "requests.LIST.perHour"),
            s -> s.format("", 0)));
    md.append(
        HeadlineRow.of(
            "every pod in Spark's store, " + n + " pods",
            c -> spread(c, first),
            s -> s.format(" ms", 0)));
    md.append(
        HeadlineRow.of(
            "driver memory for " + n + " pods (JVM heap after GC + native heap)",
            this::driverMemory,
            BenchmarkReport::bytes));
    md.append(
        HeadlineRow.of(
            "process RSS, " + n + " pods", c -> spread(c, "rss.bytes"), BenchmarkReport::bytes));
    md.append(
        HeadlineRow.of(
            "JVM bytes allocated per pod event",
            c -> spread(c, "alloc.bytesPerEvent"),
            BenchmarkReport::bytes));
    md.append(
        String.format(
            "%nMedian (min-max) of %d repetitions; bold only where a range lies below every other's. "
                + "Written by `make bench` (plan `%s`, %s, Spark %s).%n",
            plan.repetitions(), plan.name(), RunStamp.now(), jarVersion("spark-core_2.13-")));
    return md.toString();
  }

  @Override
  public String section() {
    StringBuilder md = new StringBuilder();
    int n = plan.largest();
    md.append("### Snapshot sources side by side: legacy, fabric8 informer, native\n\n");
    md.append(
        String.format(
            """
        `make bench` (plan `%s`, %d s on %s, %s). Each contender runs in a JVM of its own (`-Xmx2g`, \
        same flags), %d times, in an order shuffled per repetition (listed at the end), on the same local \
        control plane (kube-apiserver v1.36.3, watch cache on), and feeds Spark's real `ExecutorPodsSnapshotsStoreImpl` (one subscriber at 1 s, as the \
        lifecycle manager). Spark %s with its fabric8 %s. Executor pods are shaped like Spark's (environment, \
        resources, local-dir volume, Running status; about %s of JSON each). Polling interval of the legacy \
        source and of both listers: %d s%s. Lower is better everywhere; ratios are native / best peer.

        ![latency distributions and request counts](docs/benchmark.png)

        """,
            plan.name(),
            seconds,
            machine(),
            RunStamp.now(),
            plan.repetitions(),
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
              "| %s | %s | %s | %s | %s |\n",
              LABELS.get(c),
              spread(c, "requests.LIST.perHour").format("", 0),
              spread(c, "requests.WATCH.perHour").format("", 0),
              spread(c, "requests.GET.perHour").format("", 0),
              bytes(spread(c, "bytes.perHour"))));
    }
    md.append(
        "\nA native WATCH request ends every `watchTimeout` (by default the lister's polling interval, 30 s, "
            + "at least two thirds of the stale bound) and resumes from its resourceVersion, served from the watch "
            + "cache: its clean end proves a quiet cache current, the lister takes each round's snapshot right after "
            + "one, and so never snapshots a silently dead cache.\n\n");

    md.append(
        "**Time from `start` to Spark's store holding every executor pod** (ms, one start per "
            + "repetition), next to a raw LIST of the same pods read over plain HTTPS without decoding (the "
            + "floor); native against the better peer is a win or a loss only when the ranges do not overlap:\n\n");
    md.append(
        "| pods | raw LIST | legacy | fabric8 | native | native / best peer | native vs best peer | native / raw LIST |\n");
    md.append("| ---: | ---: | ---: | ---: | ---: | ---: | :---: | ---: |\n");
    for (int size : plan.sizes()) {
      String key = "first." + size + ".allPodsMs";
      String peer = number("legacy", key) < number("fabric8", key) ? "legacy" : "fabric8";
      md.append(
          String.format(
              "| %d | %s | %s | %s | %s | %s | %s | %s |\n",
              size,
              spread("floor", key).format("", 0),
              spread("legacy", key).format("", 0),
              spread("fabric8", key).format("", 0),
              spread("native", key).format("", 0),
              ratio(number("native", key), bestPeer(key)),
              spread("native", key).against(spread(peer, key)) + " (" + peer + ")",
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
                  : spread("legacy", key).format(" ms", 0),
              spread("fabric8", key).format(" ms", 0),
              spread("native", key).format(" ms", 0)));
    }

    md.append(
        String.format(
            "%n**Status PATCH to Spark's store holding the new state** (%d patches, one every %d ms, "
                + "round-robin over the %d pods; send time carried in the patch), next to a raw watch of the same pods "
                + "(the floor); percentiles of each repetition, median (min-max) over them, in ms:%n%n",
            plan.patches(), plan.patchIntervalMillis(), plan.steadyPods()));
    md.append("| | p50 | p99 | max | received |\n| --- | ---: | ---: | ---: | ---: |\n");
    for (String run : SnapshotSourcesBenchmark.RUNS) {
      md.append(
          String.format(
              "| %s | %s | %s | %s | %.0f / %d |\n",
              LABELS.get(run),
              latency(run, 0.5).format("", 2),
              latency(run, 0.99).format("", 2),
              latency(run, 1.0).format("", 2),
              spread(run, "latency.received").min(),
              plan.patches()));
    }

    md.append(
        String.format(
            "%n**Driver memory, counted the same way for every contender**, with %d pods tracked once "
                + "the first full snapshot is in: the JVM heap retained after GC, plus the native library's heap as "
                + "its allocator counts it (a counting wrapper of the system allocator in the library, live bytes "
                + "requested; 0 for the other two, which keep everything on the JVM heap), and the process RSS, "
                + "which also holds what the JVM keeps off-heap for itself. JVM bytes allocated per pod event "
                + "during the patches; CPU over the steady-state window, per hour:%n%n",
            n));
    md.append(
        "| | heap retained | native heap | **heap + native** | RSS | JVM bytes / event "
            + "| process CPU / hour | native CPU / hour |\n");
    md.append("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
    for (String c : CONTENDERS) {
      double hours = number(c, "steady.windowMs") / 3.6e6;
      md.append(
          String.format(
              "| %s | %s | %s | **%s** | %s | %s | %.1f s | %.1f s |\n",
              LABELS.get(c),
              bytes(spread(c, "heap.retainedBytes")),
              bytes(spread(c, "native.heapBytes")),
              bytes(driverMemory(c)),
              bytes(spread(c, "rss.bytes")),
              bytes(spread(c, "alloc.bytesPerEvent")),
              number(c, "steady.processCpuMs") / 1000 / hours,
              number(c, "steady.nativeCpuMs") / 1000 / hours));
    }
    md.append(
        String.format(
            "| floor: Spark's own store of the pods (without `managedFields`) | %s | | %s | | | | |\n",
            bytes(spread("floor", "heap.storeFloorBytes")),
            bytes(spread("floor", "heap.storeFloorBytes"))));
    md.append(
        String.format(
            "| native / Spark's own store | %s | | %s | | | | |\n",
            ratio(number("native", "heap.retainedBytes"), number("floor", "heap.storeFloorBytes")),
            ratio(driverMemory("native").median(), number("floor", "heap.storeFloorBytes"))));
    md.append(
        String.format(
            "| native / best peer | %s | | %s | %s | %s | | |\n",
            ratio(number("native", "heap.retainedBytes"), bestPeer("heap.retainedBytes")),
            ratio(
                driverMemory("native").median(),
                Math.min(driverMemory("legacy").median(), driverMemory("fabric8").median())),
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
    md.append(
        String.format(
            "Each contender ran %d times, in an order shuffled per repetition (%s); "
                + "figures are the median over the repetitions and, in brackets, their range:%n%n",
            plan.repetitions(), RunOrder.HOW));
    for (Map.Entry<Integer, List<String>> e : orders.entrySet()) {
      md.append(
          String.format(
              "- repetition %d, seed %d: %s%n",
              e.getKey(), plan.seed() * 1000 + e.getKey(), String.join(", ", e.getValue())));
    }
    md.append('\n');
    return md.toString();
  }

  private String targets() {
    int n = plan.largest();
    String first = "first." + n + ".allPodsMs";
    double nativeP99 = latency("native", 0.99).median();
    List<String[]> rows = new ArrayList<>();
    rows.add(
        target(
            "0 LIST requests in steady state",
            number("native", "requests.LIST.perHour"),
            0,
            "%.0f per hour"));
    rows.add(
        ratioAtMost(
            "first view <= 0.7x fabric8", number("native", first) / number("fabric8", first), 0.7));
    rows.add(
        ratioAtMost(
            "first view of "
                + n
                + " pods <= 1.2x a LIST decoded into fabric8's pods (no source can skip the decoding)",
            number("native", first) / number("floor", "first." + n + ".decodedListMs"),
            1.2));
    for (int size :
        plan.sizes().subList(Math.max(0, plan.sizes().size() - 2), plan.sizes().size())) {
      String view = "first." + size + ".allPodsMs";
      rows.add(
          ratioAtMost(
              "first view of " + size + " pods <= 1.2x raw LIST",
              number("native", view) / number("floor", view),
              1.2));
    }
    rows.add(ratioAtMost("p99 <= fabric8's", nativeP99 / latency("fabric8", 0.99).median(), 1.0));
    rows.add(ratioAtMost("p99 <= 2x raw watch", nativeP99 / latency("floor", 0.99).median(), 2.0));
    rows.add(
        ratioAtMost(
            "driver memory (heap + native) <= 0.5x fabric8",
            driverMemory("native").median() / driverMemory("fabric8").median(),
            0.5));
    // Judged on the ranges, not the medians: met only if native's largest total is within the
    // bound of the store's smallest.
    rows.add(
        ratioAtMost(
            "driver memory (heap + native) <= 1.15x Spark's own store (native's largest / the store's smallest)",
            driverMemory("native").max() / spread("floor", "heap.storeFloorBytes").min(),
            1.15));
    rows.add(
        ratioAtMost(
            "JVM bytes per event <= 0.5x fabric8",
            number("native", "alloc.bytesPerEvent") / number("fabric8", "alloc.bytesPerEvent"),
            0.5));
    rows.add(
        target(
            "lister snapshot of "
                + n
                + " unchanged pods <= 5 ms (ours, without Spark's replaceSnapshot)",
            number("native", "lister.oursMicros") / 1000,
            5,
            "%.2f ms"));
    rows.add(
        target(
            "lister snapshot of " + n + " unchanged pods <= 5 ms (with Spark's replaceSnapshot)",
            number("native", "lister.unchangedMicros") / 1000,
            5,
            "%.2f ms"));
    StringBuilder md =
        new StringBuilder("**Targets**:\n\n| target | measured | met |\n| --- | ---: | :---: |\n");
    for (String[] row : rows) {
      md.append("| ").append(String.join(" | ", row)).append(" |\n");
    }
    return md.append('\n').toString();
  }

  /** A target met when {@code value} is at most {@code limit}; "?" when it was not measured. */
  private static String[] target(String what, double value, double limit, String format) {
    String measured = Double.isNaN(value) ? "n/a" : String.format(format, value);
    String verdict = Double.isNaN(value) ? "?" : value <= limit ? "yes" : "**no**";
    return new String[] {what, measured, verdict};
  }

  /** A target on a ratio, at most {@code limit} times its peer. */
  private static String[] ratioAtMost(String what, double ratio, double limit) {
    return target(what, ratio, limit, "%.2fx");
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

  static String bytes(Spread s) {
    if (!s.present()) {
      return "n/a";
    }
    return s.min() == s.max()
        ? bytes(s.median())
        : bytes(s.median()) + " (" + bytes(s.min()) + "-" + bytes(s.max()) + ")";
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

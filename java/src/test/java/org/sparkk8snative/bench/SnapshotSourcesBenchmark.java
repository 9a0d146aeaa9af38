package org.sparkk8snative.bench;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.sparkk8snative.TestPlane;

/**
 * The three-way benchmark: Spark's legacy watch + polling sources, a fabric8 informer + lister
 * (Spark's informer pull request), and the native sources, each feeding Spark's real snapshot store
 * in a JVM of its own, one after the other on the same control plane; plus the floors (a raw LIST,
 * a raw watch). Writes BENCHMARKS.md's JVM section, a PNG chart and the README's headline table.
 *
 * <p>Usage: {@code SnapshotSourcesBenchmark full|quick <BENCHMARKS.md> <chart.png> <README.md>};
 * the control plane is the one named by {@code -Dspark.k8s.native.test.planeEnv}.
 */
public final class SnapshotSourcesBenchmark {
  static final List<String> RUNS = List.of("floor", "legacy", "fabric8", "native");

  private final BenchmarkPlan plan;
  private final TestPlane plane = TestPlane.get();
  private final PlaneHttp admin;

  /** Run name -> one figure map (key -> value) per repetition. */
  private final Map<String, List<Map<String, String>>> figures = new LinkedHashMap<>();

  /** Repetition -> the order its runs went in. */
  private final Map<Integer, List<String>> orders = new LinkedHashMap<>();

  private SnapshotSourcesBenchmark(BenchmarkPlan plan) {
    this.plan = plan;
    this.admin = PlaneHttp.asAdmin(plane);
  }

  public static void main(String[] args) throws Exception {
    BenchmarkPlan plan = args[0].equals("quick") ? BenchmarkPlan.QUICK : BenchmarkPlan.full();
    SnapshotSourcesBenchmark bench = new SnapshotSourcesBenchmark(plan);
    long began = System.nanoTime();
    bench.populate();
    // BENCH_RUNS=native,fabric8 runs only those (profiling by hand); the report needs all four.
    String only = System.getenv().getOrDefault("BENCH_RUNS", "");
    for (int rep = 1; rep <= plan.repetitions(); rep++) {
      // Each repetition in its own order, so that no contender always meets the warmest apiserver.
      List<String> order = new ArrayList<>();
      for (String run : RUNS) {
        if (only.isEmpty() || List.of(only.split(",")).contains(run)) {
          order.add(run);
        }
      }
      long seed = RunOrder.seed(plan.seed(), rep);
      RunOrder.shuffle(order, seed);
      bench.orders.put(rep, order);
      progress("repetition " + rep + " of " + plan.repetitions() + ", seed " + seed + ": " + order);
      for (String run : order) {
        bench.run(run);
      }
    }
    BenchmarkReport report =
        new BenchmarkReport(
            plan,
            bench.figures,
            bench.orders,
            TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - began));
    BenchmarkOutput.writeAndExit(
        "bench",
        new BenchmarkOutput.Sections("jvm", "headline"),
        report,
        BenchmarkChart::write,
        args);
  }

  private void populate() {
    progress(
        "creating executor pods (Spark-shaped, Running): "
            + plan.steadyPods()
            + " + "
            + plan.sizes());
    long began = System.nanoTime();
    ExecutorPodPopulation.create(
        plane.admin(), plane.namespace(), BenchmarkPlan.STEADY_APP, plan.steadyPods());
    for (int size : plan.sizes()) {
      ExecutorPodPopulation.create(
          plane.admin(), plane.namespace(), BenchmarkPlan.appId(size), size);
    }
    progress(String.format("pods created in %.1f s", (System.nanoTime() - began) / 1e9));
  }

  private void run(String name) throws Exception {
    progress("contender " + name + ": own JVM");
    Map<String, String> results = new LinkedHashMap<>();
    figures.computeIfAbsent(name, k -> new ArrayList<>()).add(results);
    Process child =
        new ProcessBuilder(childCommand(name))
            .redirectError(ProcessBuilder.Redirect.INHERIT)
            .start();
    PrintWriter commands = new PrintWriter(child.getOutputStream(), true, StandardCharsets.UTF_8);
    try (BufferedReader out =
        new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8))) {
      String phase;
      while ((phase =
              BenchLines.readUntilReady(
                  out,
                  (key, value) -> {
                    results.put(key, value);
                    if (!key.equals("latency.micros")) {
                      progress("  " + name + " " + key + " = " + value);
                    }
                  }))
          != null) {
        switch (phase) {
          case "steady" -> steadyWindow(results);
          case "warmup" -> sendPatches(Math.max(20, plan.patches() / 5));
          case "latency" -> sendPatches(plan.patches());
          default -> throw new IllegalStateException("unknown phase " + phase);
        }
        commands.println("go");
      }
    }
    if (!child.waitFor(5, TimeUnit.MINUTES) || child.exitValue() != 0) {
      child.destroyForcibly();
      throw new IllegalStateException(
          "contender " + name + " failed (exit " + child.exitValue() + ")");
    }
  }

  private List<String> childCommand(String name) {
    List<String> command = jvmLike(ContenderProcess.class);
    // BENCH_JFR=dir records each contender with Java Flight Recorder (profiling by hand).
    String jfr = System.getenv().getOrDefault("BENCH_JFR", "");
    if (!jfr.isEmpty()) {
      command.add(
          command.size() - 1,
          "-XX:StartFlightRecording=settings=profile,filename=" + jfr + "/" + name + ".jfr");
    }
    command.add(name);
    command.add(plan.encode());
    return command;
  }

  /**
   * The command line of a JVM like this one (Spark's --add-opens, library path, plane, class path)
   * with a heap of its own, running {@code main}; the caller appends its arguments.
   */
  static List<String> jvmLike(Class<?> main) {
    List<String> command = new ArrayList<>();
    command.add(ProcessHandle.current().info().command().orElse("java"));
    command.add("-Xmx2g");
    for (String arg : ManagementFactory.getRuntimeMXBean().getInputArguments()) {
      if (!arg.startsWith("-Xmx")
          && !arg.startsWith("-Xms")
          && !arg.startsWith("-agent")
          && !arg.startsWith("-javaagent")) {
        command.add(arg);
      }
    }
    command.add("-cp");
    command.add(System.getProperty("java.class.path"));
    command.add(main.getName());
    return command;
  }

  /** Counts the apiserver's pod requests over the window; the contender idles at steady state. */
  private void steadyWindow(Map<String, String> results) throws InterruptedException {
    progress("  steady state: counting apiserver requests for " + plan.windowSeconds() + " s");
    ApiserverMetrics before = ApiserverMetrics.scrape(admin);
    long began = System.nanoTime();
    Thread.sleep(plan.windowSeconds() * 1000);
    ApiserverMetrics after = ApiserverMetrics.scrape(admin);
    double hours = (System.nanoTime() - began) / 3.6e12;
    for (String verb : List.of("LIST", "WATCH", "GET")) {
      results.put(
          "requests." + verb + ".perHour",
          String.format("%.0f", ApiserverMetrics.started(before, after, verb) / hours));
    }
    results.put(
        "bytes.perHour", String.format("%.0f", ApiserverMetrics.bytes(before, after) / hours));
    for (String verb : after.responseBytes.keySet()) {
      double b = after.responseBytes.get(verb) - before.responseBytes.getOrDefault(verb, 0.0);
      results.put("bytes." + verb + ".perHour", String.format("%.0f", b / hours));
    }
    progress("  steady state: " + results);
  }

  /** Status PATCHes round-robin over the steady-state pods, paced; each carries its send time. */
  private void sendPatches(int count) throws InterruptedException {
    progress("  " + count + " status patches, one every " + plan.patchIntervalMillis() + " ms");
    long began = System.nanoTime();
    for (int seq = 0; seq < count; seq++) {
      long due = began + TimeUnit.MILLISECONDS.toNanos(seq * plan.patchIntervalMillis());
      long wait = due - System.nanoTime();
      if (wait > 0) {
        TimeUnit.NANOSECONDS.sleep(wait);
      }
      String pod = TestPlane.podName(BenchmarkPlan.STEADY_APP, seq % plan.steadyPods() + 1);
      admin.patchPodStatus(
          plane.namespace(),
          pod,
          "{\"message\":\"" + MeasuringStore.PATCH_PREFIX + seq + " " + System.nanoTime() + "\"}");
    }
  }

  static void progress(String message) {
    System.err.println("[bench] " + message);
  }
}

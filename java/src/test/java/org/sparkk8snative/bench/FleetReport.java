package org.sparkk8snative.bench;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.BiFunction;
import java.util.function.Function;
import java.util.function.ToDoubleFunction;

/**
 * The fleet benchmark's figures: every figure as the median and the range (min-max) of its
 * repetitions, per fleet size and contender; BENCHMARKS.md's fleet section and the README's fleet
 * table. A difference is called a win or a loss only when the ranges do not overlap.
 *
 * @param unitCosts {@link UnitCosts#measure()}: each unit cost's figure per batch
 * @param orders repetition -> the order its runs went in
 * @param seconds how long the whole benchmark took
 */
record FleetReport(
    FleetPlan plan,
    List<FleetReport.Run> runs,
    Map<String, List<Double>> unitCosts,
    Map<Integer, List<String>> orders,
    long seconds)
    implements BenchmarkOutput {
  /** One contender at one fleet size in one repetition: the figures of its window. */
  record Run(int repetition, String contender, int drivers, Map<String, Double> figures) {
    double get(String key) {
      Double v = figures.get(key);
      return v == null ? Double.NaN : v;
    }

    double hours() {
      return get("window.seconds") / 3600;
    }

    double perHour(String key) {
      return get(key) / hours();
    }
  }

  static final Map<String, String> LABELS =
      Map.of(
          "none",
          "no drivers (churn and the other client only)",
          "legacy",
          "legacy (Spark watch + 30 s polling)",
          "fabric8",
          "fabric8 informer + lister",
          "native",
          "native (a watch per 30 s round)",
          FleetDrivers.NATIVE_LONG_WATCH,
          "native, 290 s watches");

  static final List<String> DRIVER_CONTENDERS =
      List.of("legacy", "fabric8", "native", FleetDrivers.NATIVE_LONG_WATCH);

  /** A unit cost over its batches, e.g. {@code unit("list", "cpuSeconds")}. */
  Spread unit(String name, String measure) {
    return Spread.of(unitCosts.getOrDefault("unit." + name + "." + measure, List.of()));
  }

  List<Run> runsOf(String contender, int drivers) {
    return runs.stream()
        .filter(r -> r.contender().equals(contender) && r.drivers() == drivers)
        .toList();
  }

  Spread spread(String contender, int drivers, ToDoubleFunction<Run> figure) {
    List<Double> values = new ArrayList<>();
    for (Run r : runsOf(contender, drivers)) {
      values.add(figure.applyAsDouble(r));
    }
    return Spread.of(values);
  }

  /** The median of the no-driver runs at this size: what churn and the other client cost alone. */
  double baselinePerHour(int drivers, String key) {
    return spread("none", drivers, r -> r.perHour(key)).median();
  }

  /**
   * A figure per driver-hour above the no-driver baseline of the same size: for what the drivers
   * share with the churn and the other client (CPU, etcd requests, watch events).
   */
  Spread aboveBaselinePerDriverHour(String contender, int drivers, String key) {
    double baseline = baselinePerHour(drivers, key);
    return spread(contender, drivers, r -> (r.perHour(key) - baseline) / drivers);
  }

  /** A figure that is the drivers' alone (their requests and bytes), per driver-hour. */
  Spread perDriverHour(String contender, int drivers, String key) {
    return spread(contender, drivers, r -> r.perHour(key) / drivers);
  }

  /** The apiserver's time executing the drivers' requests, per driver-hour: attributed. */
  Spread apiserverTimePerDriverHour(String contender, int drivers) {
    return perDriverHour(contender, drivers, "flow.executionSeconds");
  }

  Spread apiserverCpuPerDriverHour(String contender, int drivers) {
    return aboveBaselinePerDriverHour(contender, drivers, "apiserver.cpuSeconds");
  }

  /** Figures a complete run has and this one lacks (a harness fault, not a slow contender). */
  @Override
  public List<String> missing() {
    List<String> missing = new ArrayList<>();
    for (String unit : List.of(UnitCosts.LIST, UnitCosts.RENEWAL, UnitCosts.EVENT)) {
      for (String measure : List.of("cpuSeconds", "flowSeconds")) {
        if (!unit(unit, measure).present()) {
          missing.add("unit cost " + unit + " " + measure);
        }
      }
    }
    // The unit requests were made as the drivers' identity: their flow must have timed them.
    if (!(unit(UnitCosts.LIST, "flowSeconds").min() > 0)) {
      missing.add("the drivers' flow did not time the unit-cost LISTs");
    }
    List<String> keys =
        new ArrayList<>(
            List.of(
                "apiserver.cpuSeconds",
                "apiserver.rssBytes",
                "apiserver.etcdRequests",
                "launcher.cpuSeconds",
                "other.LIST.p99Ms",
                "other.GET.p99Ms",
                "churn.replaced",
                "watch.events"));
    for (String verb : FleetBenchmark.VERBS) {
      keys.add("requests." + verb);
    }
    for (int size : plan.drivers()) {
      for (String c : FleetBenchmark.CONTENDERS) {
        if (!plan.measures(c, size)) {
          continue;
        }
        List<Run> of = runsOf(c, size);
        if (of.size() != plan.repetitions()) {
          missing.add(c + "@" + size + ": " + of.size() + " of " + plan.repetitions() + " runs");
        }
        for (Run r : of) {
          for (String key : keys) {
            if (Double.isNaN(r.get(key))) {
              missing.add(c + "@" + size + " rep " + r.repetition() + " " + key);
            }
          }
          if (!c.equals("none") && Double.isNaN(r.get("drivers.fleetCpu.ms"))) {
            missing.add(c + "@" + size + " rep " + r.repetition() + " drivers.fleetCpu.ms");
          }
          // The attribution must have seen the drivers' requests, and only theirs: at least each
          // driver's first list over the run (a window may hold none: fabric8's informer sends
          // nothing in steady state), and nothing without drivers.
          double dispatched = r.get("flow.run.dispatched");
          if (c.equals("none")
              ? !(dispatched == 0 && r.get("flow.dispatched") == 0)
              : !(dispatched >= size)) {
            missing.add(
                c
                    + "@"
                    + size
                    + " rep "
                    + r.repetition()
                    + ": the drivers' flow dispatched "
                    + dispatched
                    + " requests");
          }
          if (r.get("churn.replaced") < 1) {
            missing.add(c + "@" + size + " rep " + r.repetition() + ": no executor replaced");
          }
        }
      }
    }
    return missing;
  }

  @Override
  public String headline() {
    int n = plan.largest();
    return String.format(
        "fleet headline (%d drivers): apiserver time serving the drivers per driver-hour (attributed)"
            + " legacy %s, fabric8 %s, native %s; apiserver CPU per driver-hour (by subtraction) legacy"
            + " %s, fabric8 %s, native %s; other client's LIST p99 none %s, native %s",
        n,
        apiserverTimePerDriverHour("legacy", n).format(" s", 3),
        apiserverTimePerDriverHour("fabric8", n).format(" s", 3),
        apiserverTimePerDriverHour("native", n).format(" s", 3),
        apiserverCpuPerDriverHour("legacy", n).format(" s", 2),
        apiserverCpuPerDriverHour("fabric8", n).format(" s", 2),
        apiserverCpuPerDriverHour("native", n).format(" s", 2),
        spread("none", n, r -> r.get("other.LIST.p99Ms")).format(" ms", 1),
        spread("native", n, r -> r.get("other.LIST.p99Ms")).format(" ms", 1));
  }

  /** The README's fleet table. */
  @Override
  public String readmeHeadline() {
    int n = plan.largest();
    StringBuilder md = new StringBuilder();
    md.append(
        String.format(
            "| %d drivers x %d executors, %d other pods in the namespace (median (min-max) of %d; bold only where a range lies below every other's) | legacy | fabric8 informer | native |%n",
            n, plan.executorsPerDriver(), plan.unrelatedPods(), plan.repetitions()));
    md.append("| --- | ---: | ---: | ---: |\n");
    md.append(
        HeadlineRow.of(
            "apiserver time serving the drivers per driver-hour (attributed)",
            c -> apiserverTimePerDriverHour(c, n),
            s -> s.format(" s", 3)));
    md.append(
        HeadlineRow.of(
            "apiserver CPU per driver-hour (by subtraction)",
            c -> apiserverCpuPerDriverHour(c, n),
            s -> s.format(" s", 2)));
    md.append(
        HeadlineRow.of(
            "pod LIST requests per driver-hour",
            c -> perDriverHour(c, n, "requests.LIST"),
            s -> s.format("", 0)));
    md.append(
        HeadlineRow.of(
            "pod WATCH requests per driver-hour",
            c -> perDriverHour(c, n, "requests.WATCH"),
            s -> s.format("", 0)));
    md.append(
        HeadlineRow.of(
            "another client's pod LIST, p99",
            c -> spread(c, n, r -> r.get("other.LIST.p99Ms")),
            s -> s.format(" ms", 1)));
    md.append(
        String.format(
            "%nWritten by `make bench-fleet` (plan `%s`, %s); with no drivers the other client's LIST p99 is %.1f ms.%n",
            plan.name(),
            RunStamp.now(),
            spread("none", n, r -> r.get("other.LIST.p99Ms")).median()));
    return md.toString();
  }

  @Override
  public String section() {
    int n = plan.largest();
    StringBuilder md = new StringBuilder();
    md.append("### A fleet of drivers on one apiserver\n\n");
    md.append(
        String.format(
            """
            `make bench-fleet` (plan `%s`, %d s, %s). One namespace holds every driver's executor pods \
            (%d executors each, Spark-shaped, Running) and %d pods of %d other apps that no driver watches, \
            so a label-selected LIST filters them all. N drivers of one contender run in a JVM of their own, \
            each with its own Kubernetes client, snapshot sources and Spark `ExecutorPodsSnapshotsStoreImpl` \
            (what the apiserver sees is N drivers: N clients, their requests, their watches), started %s apart \
            as a fleet's drivers are. Polling interval of the legacy source and of both listers: %d s. During \
            each %d s window, after %d s of settling, executors are replaced at %.1f per driver per minute \
            (the oldest pod deleted, a new one created Running), and another client LISTs one other app's %d \
            pods by label and GETs one pod, alternately every 100 ms (its own requests and bytes, which it counts, are taken out of the request and byte figures). Each size and contender ran %d times, in \
            an order shuffled per repetition (seeds and orders below), each on the same population. Figures \
            are the median and, in brackets, the range over the repetitions; a difference counts as a win only \
            when the ranges do not overlap. Apiserver figures come from its `/metrics` \
            (`process_cpu_seconds_total`, `process_resident_memory_bytes`, `apiserver_request_total` for \
            namespaced pods, `etcd_requests_total`); etcd runs embedded in the plane's launcher, whose CPU is \
            read from `/proc`. %s "Per driver-hour" by subtraction is the figure per hour above the \
            no-driver runs of the same size (which have the same churn and the same other client), divided \
            by N; by attribution it is the drivers' own flow's, divided by N. Periodic costs a window cannot \
            see are not in these figures: every driver's initial LIST (or streaming list), and the renewal \
            of Spark's and fabric8's long watches every 30-60 minutes.

            ![fleet figures by size](docs/fleet.png)

            """,
            plan.name(),
            seconds,
            RunStamp.now(),
            plan.executorsPerDriver(),
            plan.unrelatedPods(),
            plan.unrelatedApps(),
            Math.min(10_000, plan.pollingSeconds() * 500) + " ms / N",
            plan.pollingSeconds(),
            plan.windowSeconds(),
            plan.settleSeconds(),
            plan.replacementsPerDriverMinute(),
            FleetPlan.PODS_PER_UNRELATED_APP,
            plan.repetitions(),
            FleetBenchmark.driversCpus().isEmpty()
                ? "Every process shared every CPU."
                : "The control plane, the churn and the other client ran on CPU 0, the drivers' JVMs on"
                    + " CPUs "
                    + FleetBenchmark.driversCpus()
                    + " (CPU affinity), so that the other client's latency measures the apiserver,"
                    + " not CPUs shared with the drivers."));

    md.append(
        "**Apiserver time serving the drivers, per driver-hour, by attribution** (seconds the "
            + "apiserver spent executing the drivers' requests, from API Priority and Fairness's "
            + "`apiserver_flowcontrol_request_execution_seconds` for the flow of their own identity, "
            + "`"
            + ApiserverMetrics.DRIVERS_FLOW
            + "`: no baseline subtracted; a watch counts up to its initialization, its events are "
            + "not a request's execution), and the requests that flow dispatched:\n\n");
    sizesTable(
        md,
        DRIVER_CONTENDERS,
        (c, size) ->
            apiserverTimePerDriverHour(c, size).format(" s", 3)
                + ", "
                + perDriverHour(c, size, "flow.dispatched").format(" requests", 0));
    md.append(
        String.format(
            "%nOnce per driver start, which no window sees: apiserver time serving the drivers from their "
                + "start to their end, outside the window, per driver (initial lists and watches, at %d "
                + "drivers): ",
            n));
    md.append(
            perDriverContender(
                c ->
                    spread(
                            c,
                            n,
                            r ->
                                (r.get("flow.run.executionSeconds")
                                        - r.get("flow.executionSeconds"))
                                    / n)
                        .format(" s", 3)))
        .append(".\n");
    md.append(
        String.format(
            "%nPods that LISTs fetched, evaluated against their selectors and returned, per driver-hour "
                + "above the no-driver runs, at %d drivers (`apiserver_storage_list_*_objects_total` for LISTs from etcd plus `apiserver_cache_list_*` for LISTs from the watch cache, which counts no evaluated objects): ",
            n));
    md.append(
            perDriverContender(
                c ->
                    aboveBaselinePerDriverHour(c, n, "listObjects.fetched").format("", 0)
                        + " / "
                        + aboveBaselinePerDriverHour(c, n, "listObjects.evaluated").format("", 0)
                        + " / "
                        + aboveBaselinePerDriverHour(c, n, "listObjects.returned").format("", 0)))
        .append(".\n\n");

    md.append(
        "**Apiserver CPU per driver-hour, by subtraction** (CPU seconds above the no-driver runs, divided by N; the baseline's own spread is larger than most drivers' share):\n\n");
    sizesTable(
        md, DRIVER_CONTENDERS, (c, size) -> apiserverCpuPerDriverHour(c, size).format(" s", 2));
    md.append("\n**Whole apiserver, CPU seconds per hour**:\n\n");
    sizesTable(
        md,
        FleetBenchmark.CONTENDERS,
        (c, size) -> spread(c, size, r -> r.perHour("apiserver.cpuSeconds")).format(" s", 0));

    md.append(
        String.format(
            "%n**At %d drivers, per driver-hour** (requests and response bytes for namespaced pods "
                + "from the drivers; watch event bytes and etcd requests above the no-driver runs; watch event "
                + "bytes count watches streamed over HTTP only, not the WebSocket watches of Spark and fabric8; LIST and GET bytes are response bodies, watch bytes the pod "
                + "events the apiserver sent to every watcher):%n%n",
            n));
    md.append(
        "| | LIST | WATCH | GET | LIST + GET bytes | watch event bytes | etcd requests |\n"
            + "| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n");
    for (String c : DRIVER_CONTENDERS) {
      Spread bytes = spread(c, n, r -> (r.perHour("bytes.LIST") + r.perHour("bytes.GET")) / n);
      md.append(
          String.format(
              "| %s | %s | %s | %s | %s | %s | %s |%n",
              LABELS.get(c),
              perDriverHour(c, n, "requests.LIST").format("", 0),
              perDriverHour(c, n, "requests.WATCH").format("", 0),
              perDriverHour(c, n, "requests.GET").format("", 0),
              mb(bytes),
              mb(aboveBaselinePerDriverHour(c, n, "bytes.watchEvents")),
              aboveBaselinePerDriverHour(c, n, "apiserver.etcdRequests").format("", 0)));
    }

    md.append(
        String.format(
            "%n**At %d drivers, the control plane's processes** (apiserver RSS at the window's end; "
                + "CPU seconds per hour of the apiserver and of the launcher that embeds etcd):%n%n",
            n));
    md.append(
        "| | apiserver CPU / hour | apiserver RSS | etcd (launcher) CPU / hour | drivers' JVM CPU per driver-hour |\n"
            + "| --- | ---: | ---: | ---: | ---: |\n");
    for (String c : FleetBenchmark.CONTENDERS) {
      md.append(
          String.format(
              "| %s | %s | %s | %s | %s |%n",
              LABELS.get(c),
              spread(c, n, r -> r.perHour("apiserver.cpuSeconds")).format(" s", 0),
              mb(spread(c, n, r -> r.get("apiserver.rssBytes"))),
              spread(c, n, r -> r.perHour("launcher.cpuSeconds")).format(" s", 0),
              c.equals("none")
                  ? ""
                  : spread(
                          c,
                          n,
                          r ->
                              r.get("drivers.fleetCpu.ms")
                                  / 1000
                                  / (r.get("drivers.fleetWindow.ms") / 3.6e6)
                                  / n)
                      .format(" s", 1)));
    }

    md.append(
        "\n**What the fleet does to everybody else**: another client's pod requests, latency "
            + "in ms (p50 and p99 of its requests in each window):\n\n");
    md.append("| | drivers | LIST p50 | LIST p99 | GET p50 | GET p99 |\n");
    md.append("| --- | ---: | ---: | ---: | ---: | ---: |\n");
    for (int size : plan.drivers()) {
      for (String c : FleetBenchmark.CONTENDERS) {
        if (!plan.measures(c, size)) {
          continue;
        }
        md.append(
            String.format(
                "| %s | %d | %s | %s | %s | %s |%n",
                LABELS.get(c),
                size,
                spread(c, size, r -> r.get("other.LIST.p50Ms")).format("", 1),
                spread(c, size, r -> r.get("other.LIST.p99Ms")).format("", 1),
                spread(c, size, r -> r.get("other.GET.p50Ms")).format("", 1),
                spread(c, size, r -> r.get("other.GET.p99Ms")).format("", 1)));
      }
    }

    md.append(crossCheck());
    md.append(liveness());
    md.append(targets());
    md.append("\nRun order (each repetition shuffled with " + RunOrder.HOW + "):\n\n");
    for (Map.Entry<Integer, List<String>> e : orders.entrySet()) {
      md.append(
          String.format(
              "- repetition %d, seed %d: %s%n",
              e.getKey(), plan.seed() * 1000 + e.getKey(), String.join(", ", e.getValue())));
    }
    return md.toString();
  }

  /**
   * The fleet's figures against what its request counts predict from the unit costs measured alone:
   * attributed time (LISTs and watch renewals; a watch's events are not its execution) and CPU
   * (also every watch event a driver's watch received).
   */
  private String crossCheck() {
    int n = plan.largest();
    Spread listFlow = unit(UnitCosts.LIST, "flowSeconds");
    Spread renewalFlow = unit(UnitCosts.RENEWAL, "flowSeconds");
    Spread listCpu = unit(UnitCosts.LIST, "cpuSeconds");
    Spread renewalCpu = unit(UnitCosts.RENEWAL, "cpuSeconds");
    Spread eventCpu = unit(UnitCosts.EVENT, "cpuSeconds");
    StringBuilder md = new StringBuilder();
    md.append(
        String.format(
            "%n**Unit costs**, measured alone on the idle plane before the runs (the namespace"
                + " populated as above), as the drivers' identity, %d batches (median and range):"
                + " a LIST of one app's %d executor pods by label; a WATCH from the current"
                + " resourceVersion ended by its 1 s timeout (a renewal); one watch event delivered"
                + " to one watcher (annotation patches of that app's pods with watchers open, less"
                + " the same patches with none, per event and watcher). CPU is the apiserver's less"
                + " what it spends idle in the same time:%n%n"
                + "| unit | apiserver CPU | attributed time |%n| --- | ---: | ---: |%n"
                + "| LIST | %s | %s |%n| WATCH renewal | %s | %s |%n| watch event, per watcher | %s"
                + " | - |%n",
            listCpu.n(),
            plan.executorsPerDriver(),
            ms(listCpu),
            ms(listFlow),
            ms(renewalCpu),
            ms(renewalFlow),
            ms(eventCpu)));
    md.append(
        String.format(
            "%n**Cross-check at %d drivers**, per driver-hour: the fleet's request counts times the"
                + " unit costs (ranges from the ends of both), against what the fleet measured. They"
                + " agree where the ranges overlap:%n%n"
                + "| | LIST | WATCH | watch events | predicted time | attributed time | |"
                + " predicted CPU | CPU by subtraction | |%n"
                + "| --- | ---: | ---: | ---: | ---: | ---: | :---: | ---: | ---: | :---: |%n",
            n));
    for (String c : DRIVER_CONTENDERS) {
      Spread lists = perDriverHour(c, n, "requests.LIST");
      Spread watches = perDriverHour(c, n, "requests.WATCH");
      Spread events = aboveBaselinePerDriverHour(c, n, "watch.events");
      Spread time = predicted(List.of(lists, watches), List.of(listFlow, renewalFlow));
      Spread cpu =
          predicted(List.of(lists, watches, events), List.of(listCpu, renewalCpu, eventCpu));
      Spread attributed = apiserverTimePerDriverHour(c, n);
      Spread subtracted = apiserverCpuPerDriverHour(c, n);
      md.append(
          String.format(
              "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |%n",
              LABELS.get(c),
              lists.format("", 0),
              watches.format("", 0),
              events.format("", 0),
              time.format(" s", 3),
              attributed.format(" s", 3),
              agreement(time, attributed),
              cpu.format(" s", 2),
              subtracted.format(" s", 2),
              agreement(cpu, subtracted)));
    }
    return md.toString();
  }

  /** "agree" where two ranges overlap, else which side is larger. */
  static String agreement(Spread predicted, Spread measured) {
    return switch (predicted.against(measured)) {
      case "within noise" -> "agree";
      case "win" -> "measured more";
      case "loss" -> "measured less";
      default -> "n/a";
    };
  }

  /**
   * The sum of counts times unit costs: the medians' products for the median, and for the ends the
   * least and the greatest product of the two ranges' ends.
   */
  static Spread predicted(List<Spread> counts, List<Spread> units) {
    double median = 0;
    double min = 0;
    double max = 0;
    for (int i = 0; i < counts.size(); i++) {
      Spread count = counts.get(i);
      Spread unit = units.get(i);
      if (!count.present() || !unit.present()) {
        return Spread.of(List.of());
      }
      double[] ends = {
        count.min() * unit.min(), count.min() * unit.max(),
        count.max() * unit.min(), count.max() * unit.max()
      };
      median += count.median() * unit.median();
      min += java.util.Arrays.stream(ends).min().getAsDouble();
      max += java.util.Arrays.stream(ends).max().getAsDouble();
    }
    return new Spread(median, min, max, 1);
  }

  private static String ms(Spread seconds) {
    if (!seconds.present()) {
      return "n/a";
    }
    return String.format(
        "%.3f ms (%.3f-%.3f)", seconds.median() * 1e3, seconds.min() * 1e3, seconds.max() * 1e3);
  }

  /** What native's proof of life (one watch per lister round) costs, against 290 s watches. */
  private String liveness() {
    StringBuilder md = new StringBuilder();
    md.append(
        "\n**The cost of liveness**: native with its default watches, one per lister round (30 s: each "
            + "clean end proves the cache current within the 15 s stale bound for that round's snapshot), against "
            + "the same sources with 290 s watches (stale bound 435 s, so never waiting for a proof), per "
            + "driver-hour, at the largest fleet:\n\n");
    md.append(
        "| drivers | WATCH, 30 s | WATCH, 290 s | apiserver CPU, 30 s | apiserver CPU, 290 s | difference | legacy |\n");
    md.append("| ---: | ---: | ---: | ---: | ---: | :---: | ---: |\n");
    for (int size : plan.drivers()) {
      if (!plan.measures(FleetDrivers.NATIVE_LONG_WATCH, size)) {
        continue;
      }
      Spread shortWatch = apiserverCpuPerDriverHour("native", size);
      Spread longWatch = apiserverCpuPerDriverHour(FleetDrivers.NATIVE_LONG_WATCH, size);
      md.append(
          String.format(
              "| %d | %s | %s | %s | %s | %s | %s |%n",
              size,
              perDriverHour("native", size, "requests.WATCH").format("", 0),
              perDriverHour(FleetDrivers.NATIVE_LONG_WATCH, size, "requests.WATCH").format("", 0),
              shortWatch.format(" s", 2),
              longWatch.format(" s", 2),
              differenceWord(longWatch.against(shortWatch)),
              apiserverCpuPerDriverHour("legacy", size).format(" s", 2)));
    }
    return md.toString();
  }

  private static String differenceWord(String longAgainstShort) {
    return switch (longAgainstShort) {
      case "win" -> "30 s costs more";
      case "loss" -> "30 s costs less";
      case "within noise" -> "within noise";
      default -> "n/a";
    };
  }

  private String targets() {
    int n = plan.largest();
    Spread natTime = apiserverTimePerDriverHour("native", n);
    Spread legacyTime = apiserverTimePerDriverHour("legacy", n);
    Spread fabric8Time = apiserverTimePerDriverHour("fabric8", n);
    Spread nat = apiserverCpuPerDriverHour("native", n);
    Spread legacy = apiserverCpuPerDriverHour("legacy", n);
    Spread fabric8 = apiserverCpuPerDriverHour("fabric8", n);
    Spread otherNone = spread("none", n, r -> r.get("other.LIST.p99Ms"));
    Spread otherNative = spread("native", n, r -> r.get("other.LIST.p99Ms"));
    StringBuilder md =
        new StringBuilder(
            String.format(
                "%n**Targets** (at %d drivers):%n%n| target | measured | met |%n| --- | --- | :---: |%n",
                n));
    tenthRow(md, "native apiserver CPU per driver-hour", nat, legacy, " s", 2);
    tenthRow(
        md, "native's attributed apiserver time per driver-hour", natTime, legacyTime, " s", 3);
    comparedRow(
        md,
        "native's attributed apiserver time per driver-hour <= fabric8's",
        natTime,
        fabric8Time,
        " s",
        3,
        true);
    comparedRow(
        md, "native apiserver CPU per driver-hour <= fabric8's", nat, fabric8, " s", 2, false);
    comparedRow(
        md,
        "another client's LIST p99 unaffected by native (within noise of no drivers)",
        otherNative,
        otherNone,
        " ms",
        1,
        false);
    return md.toString();
  }

  /**
   * A target row "{@code what} <= 1/10 of legacy's": met only if native's largest is within a tenth
   * of legacy's smallest; a goal met by the medians alone is not resolved by the run.
   */
  private static void tenthRow(
      StringBuilder md, String what, Spread nat, Spread legacy, String unit, int digits) {
    String met =
        nat.max() <= legacy.min() / 10
            ? "yes"
            : nat.median() <= legacy.median() / 10 ? "not resolved (medians only)" : "**no**";
    md.append(
        String.format(
            "| %s <= 1/10 of legacy's | %s vs %s | %s |%n",
            what, nat.format(unit, digits), legacy.format(unit, digits), met));
  }

  /**
   * A target row comparing native with another figure by their ranges. A target that asks for a win
   * ({@code winNeeded}) is met only by one, and "within noise" otherwise; one that asks only for no
   * loss is met unless native's range lies wholly above.
   */
  private static void comparedRow(
      StringBuilder md,
      String target,
      Spread nat,
      Spread other,
      String unit,
      int digits,
      boolean winNeeded) {
    String against = nat.against(other);
    String met =
        against.equals("loss")
            ? "**no**"
            : !winNeeded || against.equals("win") ? "yes" : "within noise";
    md.append(
        String.format(
            "| %s | %s vs %s: %s | %s |%n",
            target, nat.format(unit, digits), other.format(unit, digits), against, met));
  }

  /** A table's header with one column per fleet size. */
  /** A table of one row per contender and one column per fleet size, each cell {@code cell}'s. */
  private void sizesTable(
      StringBuilder md, List<String> contenders, BiFunction<String, Integer, String> cell) {
    sizesHeader(md);
    for (String c : contenders) {
      md.append("| ").append(LABELS.get(c));
      for (int size : plan.drivers()) {
        md.append(" | ").append(cell.apply(c, size));
      }
      md.append(" |\n");
    }
  }

  /** "label figure; label figure..." over the drivers' contenders. */
  private static String perDriverContender(Function<String, String> figure) {
    List<String> parts = new ArrayList<>();
    for (String c : DRIVER_CONTENDERS) {
      parts.add(LABELS.get(c) + " " + figure.apply(c));
    }
    return String.join("; ", parts);
  }

  private void sizesHeader(StringBuilder md) {
    md.append("|");
    for (int size : plan.drivers()) {
      md.append(" | ").append(size).append(" drivers");
    }
    md.append(" |\n| ---");
    for (int i = 0; i < plan.drivers().size(); i++) {
      md.append(" | ---:");
    }
    md.append(" |\n");
  }

  private static String mb(Spread s) {
    if (!s.present()) {
      return "n/a";
    }
    return String.format(
        "%s (%s-%s)",
        BenchmarkReport.bytes(s.median()),
        BenchmarkReport.bytes(s.min()),
        BenchmarkReport.bytes(s.max()));
  }
}

package org.sparkk8snative.bench;

import io.fabric8.kubernetes.client.KubernetesClient;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.sparkk8snative.TestPlane;

/**
 * What a fleet of drivers costs the apiserver, and everybody else on it: for each fleet size and
 * contender (no drivers, Spark's own sources, the fabric8 informer design, native, native with long
 * watches), N drivers run in a JVM of their own ({@link FleetDrivers}) on one namespace that also
 * holds other apps' pods, while executors are replaced at a steady rate and an unrelated client
 * LISTs and GETs pods. Over the window it takes the apiserver's CPU and memory and its requests by
 * verb (from its {@code /metrics}), its requests to etcd, the CPU of the launcher that embeds etcd,
 * and the unrelated client's latencies. Every (size, contender) runs once per repetition, in an
 * order shuffled per repetition from a printed seed. Before the runs, on the idle plane, it
 * measures what each kind of request a driver makes costs the apiserver ({@link UnitCosts}), to
 * cross-check the fleet's figures.
 *
 * <p>Usage: {@code FleetBenchmark full|quick <BENCHMARKS.md> <chart.png> <README.md>}.
 */
public final class FleetBenchmark {
  static final List<String> CONTENDERS =
      List.of("none", "legacy", "fabric8", "native", FleetDrivers.NATIVE_LONG_WATCH);

  /** Pod verbs whose counts and bytes are reported. */
  static final List<String> VERBS = List.of("LIST", "WATCH", "GET", "CREATE", "DELETE", "PATCH");

  private final FleetPlan plan;
  private final TestPlane plane = TestPlane.get();
  private final KubernetesClient admin = plane.admin();
  private final PlaneHttp http;
  private final Churn churn;
  private final List<FleetReport.Run> runs = new ArrayList<>();
  private Map<String, List<Double>> unitCosts = Map.of();
  private final Map<Integer, List<String>> orders = new LinkedHashMap<>();

  private FleetBenchmark(FleetPlan plan) {
    this.plan = plan;
    this.http = PlaneHttp.asAdmin(plane);
    this.churn = new Churn(plan.largest(), plan.executorsPerDriver());
  }

  public static void main(String[] args) throws Exception {
    FleetPlan plan = args[0].equals("quick") ? FleetPlan.quick() : FleetPlan.full();
    FleetBenchmark bench = new FleetBenchmark(plan);
    long began = System.nanoTime();
    bench.attributeTheDriversTheirOwnFlow();
    bench.populate();
    bench.measureUnitCosts(
        args[0].equals("quick") ? UnitCosts.Plan.quick() : UnitCosts.Plan.full());
    for (int rep = 1; rep <= plan.repetitions(); rep++) {
      List<String> order = new ArrayList<>();
      for (int size : plan.drivers()) {
        for (String contender : CONTENDERS) {
          if (plan.measures(contender, size)) {
            order.add(contender + "@" + size);
          }
        }
      }
      long seed = RunOrder.seed(plan.seed(), rep);
      RunOrder.shuffle(order, seed);
      bench.orders.put(rep, order);
      progress("repetition " + rep + " of " + plan.repetitions() + ", seed " + seed + ": " + order);
      for (String entry : order) {
        String[] parts = entry.split("@");
        bench.run(rep, parts[0], Integer.parseInt(parts[1]));
      }
    }
    FleetReport report =
        new FleetReport(
            plan,
            bench.runs,
            bench.unitCosts,
            bench.orders,
            (System.nanoTime() - began) / 1_000_000_000L);
    BenchmarkOutput.writeAndExit(
        "fleet",
        new BenchmarkOutput.Sections("fleet", "fleet-headline"),
        report,
        FleetChart::write,
        args);
  }

  /**
   * Gives the drivers' identity (the plane's restricted user, which every contender's drivers and
   * nothing else use) a FlowSchema and priority level of their own, so that API Priority and
   * Fairness measures the apiserver's time serving them, with no baseline to subtract. Its share of
   * concurrency is the global default's, so the drivers are served as before.
   */
  private void attributeTheDriversTheirOwnFlow() {
    String flow = ApiserverMetrics.DRIVERS_FLOW;
    String priorityLevel =
        """
        apiVersion: flowcontrol.apiserver.k8s.io/v1
        kind: PriorityLevelConfiguration
        metadata: {name: %s}
        spec:
          type: Limited
          limited:
            nominalConcurrencyShares: 20
            limitResponse:
              type: Queue
              queuing: {queues: 128, handSize: 6, queueLengthLimit: 50}
        """
            .formatted(flow);
    String flowSchema =
        """
        apiVersion: flowcontrol.apiserver.k8s.io/v1
        kind: FlowSchema
        metadata: {name: %s}
        spec:
          priorityLevelConfiguration: {name: %s}
          matchingPrecedence: 500
          distinguisherMethod: {type: ByUser}
          rules:
          - subjects: [{kind: User, user: {name: %s}}]
            resourceRules:
            - {verbs: ["*"], apiGroups: ["*"], resources: ["*"], namespaces: ["*"], clusterScope: true}
            nonResourceRules:
            - {verbs: ["*"], nonResourceURLs: ["*"]}
        """
            .formatted(flow, flow, TestPlane.RESTRICTED_USER);
    for (String manifest : List.of(priorityLevel, flowSchema)) {
      admin.resource(manifest).serverSideApply();
    }
    progress("the drivers' identity (" + TestPlane.RESTRICTED_USER + ") has its own flow: " + flow);
  }

  private void populate() {
    long began = System.nanoTime();
    progress(
        String.format(
            "creating pods (Spark-shaped, Running): %d drivers x %d executors + %d pods of %d other apps",
            plan.largest(),
            plan.executorsPerDriver(),
            plan.unrelatedApps() * FleetPlan.PODS_PER_UNRELATED_APP,
            plan.unrelatedApps()));
    for (int app = 1; app <= plan.unrelatedApps(); app++) {
      ExecutorPodPopulation.create(
          admin,
          plane.namespace(),
          FleetPlan.unrelatedAppId(app),
          FleetPlan.PODS_PER_UNRELATED_APP);
    }
    for (int d = 1; d <= plan.largest(); d++) {
      ExecutorPodPopulation.create(
          admin, plane.namespace(), FleetPlan.appId(d), plan.executorsPerDriver());
    }
    progress(String.format("pods created in %.0f s", (System.nanoTime() - began) / 1e9));
  }

  /** Unit costs on the populated, idle plane, as the drivers' identity; the first driver's app. */
  private void measureUnitCosts(UnitCosts.Plan unitPlan) throws Exception {
    long began = System.nanoTime();
    String app = FleetPlan.appId(1);
    List<String> pods = new ArrayList<>();
    for (long id = 1; id <= plan.executorsPerDriver(); id++) {
      pods.add(TestPlane.podName(app, id));
    }
    PlaneHttp asDriver = PlaneHttp.asDriver(plane);
    unitCosts = new UnitCosts(unitPlan, http, asDriver, plane.namespace(), app, pods).measure();
    progress(String.format("unit costs measured in %.0f s", (System.nanoTime() - began) / 1e9));
  }

  private void run(int rep, String contender, int drivers) throws Exception {
    progress(String.format("rep %d: %s, %d drivers", rep, contender, drivers));
    Map<String, Double> figures = new HashMap<>();
    // Around the whole run too: what the drivers' flow saw from their start (initial lists and
    // watches, which a window never sees) to their end.
    ApiserverMetrics beforeRun = ApiserverMetrics.scrape(http);
    Process child = contender.equals("none") ? null : startDrivers(contender, drivers);
    PrintWriter commands = null;
    BufferedReader out = null;
    if (child != null) {
      commands = new PrintWriter(child.getOutputStream(), true, StandardCharsets.UTF_8);
      out =
          new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8));
      readUntilReady(out, figures);
    }
    Thread.sleep(plan.settleSeconds() * 1000);
    window(drivers, figures);
    if (child != null) {
      commands.println("go");
      readUntilReady(out, figures);
      if (!child.waitFor(2, TimeUnit.MINUTES) || child.exitValue() != 0) {
        child.destroyForcibly();
        throw new IllegalStateException(contender + " with " + drivers + " drivers failed");
      }
    }
    ApiserverMetrics afterRun = ApiserverMetrics.scrape(http);
    figures.put(
        "flow.run.executionSeconds",
        afterRun.driversExecutionSeconds - beforeRun.driversExecutionSeconds);
    figures.put("flow.run.dispatched", afterRun.driversDispatched - beforeRun.driversDispatched);
    runs.add(new FleetReport.Run(rep, contender, drivers, figures));
    progress(
        String.format(
            "  apiserver CPU %.2f s in %.0f s; LIST %.0f, WATCH %.0f; other client's LIST p99 %.1f ms",
            figures.get("apiserver.cpuSeconds"),
            figures.get("window.seconds"),
            figures.get("requests.LIST"),
            figures.get("requests.WATCH"),
            figures.get("other.LIST.p99Ms")));
    // What the run left settles (watch terminations, the churn's last deletions) before the next.
    Thread.sleep(2_000);
  }

  /** One window: the churn and the other client run, the apiserver is measured around them. */
  private void window(int drivers, Map<String, Double> figures) throws Exception {
    ApiserverMetrics before = ApiserverMetrics.scrape(http);
    long launcherBefore = launcherCpuTicks();
    OtherClient other = new OtherClient(http, plane.namespace());
    long began = System.nanoTime();
    int replaced = churn.run(drivers, plan, other);
    double seconds = (System.nanoTime() - began) / 1e9;
    ApiserverMetrics after = ApiserverMetrics.scrape(http);
    long launcherAfter = launcherCpuTicks();

    figures.put("window.seconds", seconds);
    figures.put("churn.replaced", (double) replaced);
    figures.put("apiserver.cpuSeconds", after.cpuSeconds - before.cpuSeconds);
    figures.put("apiserver.rssBytes", after.residentBytes);
    figures.put("apiserver.etcdRequests", after.etcdRequests - before.etcdRequests);
    figures.put("launcher.cpuSeconds", (launcherAfter - launcherBefore) / 100.0);
    // The other client's own requests and response bytes, which it counted, are taken out: what
    // is left of LIST, WATCH and GET is the drivers' (CREATE and DELETE are the churn's).
    for (String verb : VERBS) {
      figures.put(
          "requests." + verb, ApiserverMetrics.started(before, after, verb) - other.count(verb));
      figures.put(
          "bytes." + verb,
          after.responseBytes.getOrDefault(verb, 0.0)
              - before.responseBytes.getOrDefault(verb, 0.0)
              - other.bytes(verb));
    }
    figures.put("bytes.watchEvents", after.podWatchEventBytes - before.podWatchEventBytes);
    figures.put("watch.events", after.podWatchEvents - before.podWatchEvents);
    // The drivers' own: their identity has a flow of its own (attributeTheDriversTheirOwnFlow).
    figures.put(
        "flow.executionSeconds", after.driversExecutionSeconds - before.driversExecutionSeconds);
    figures.put("flow.dispatched", after.driversDispatched - before.driversDispatched);
    for (String stage : List.of("fetched", "evaluated", "returned")) {
      figures.put(
          "listObjects." + stage,
          after.podListObjects.getOrDefault(stage, 0.0)
              - before.podListObjects.getOrDefault(stage, 0.0));
    }
    other.report(figures);
  }

  private Process startDrivers(String contender, int drivers) throws IOException {
    List<String> command = new ArrayList<>();
    String cpus = driversCpus();
    if (!cpus.isEmpty()) {
      command.addAll(List.of("taskset", "-c", cpus));
    }
    command.addAll(SnapshotSourcesBenchmark.jvmLike(FleetDrivers.class));
    command.add(contender);
    command.add(Integer.toString(drivers));
    command.add(Integer.toString(plan.executorsPerDriver()));
    command.add(Long.toString(plan.pollingSeconds()));
    // Starts spread over half a polling interval at most, as drivers of a fleet start apart.
    command.add(Long.toString(Math.min(10_000, plan.pollingSeconds() * 500)));
    return new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT).start();
  }

  /**
   * The CPUs the drivers' JVMs are pinned to, apart from the control plane's (set by
   * scripts/bench.sh fleet), or empty when every process shares every CPU.
   */
  static String driversCpus() {
    return System.getenv().getOrDefault("FLEET_DRIVERS_CPUS", "");
  }

  /** Reads the drivers' figures, each as {@code drivers.<key>}, up to their next READY. */
  private static void readUntilReady(BufferedReader out, Map<String, Double> figures)
      throws IOException {
    BenchLines.readUntilReady(
        out, (key, value) -> figures.put("drivers." + key, Double.parseDouble(value)));
  }

  /** CPU ticks (1/100 s) of the plane's launcher process, which embeds etcd. */
  private long launcherCpuTicks() throws IOException {
    String stat = Files.readString(Paths.get("/proc", plane.var("LOCALPLANE_PID"), "stat"));
    String[] fields = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
    return Long.parseLong(fields[11]) + Long.parseLong(fields[12]);
  }

  /**
   * Executors replaced at a steady rate, the same for every contender: the oldest executor pod of
   * the next driver in turn is deleted and a new one (the next executor id) created Running, as
   * Spark's allocator does after a loss. Each driver keeps its number of executors, so every run
   * starts on the same population.
   */
  private final class Churn {
    private final Map<Integer, ArrayDeque<Long>> executors = new HashMap<>();
    private final Map<Integer, Long> nextId = new HashMap<>();
    private int turn;

    Churn(int drivers, int executorsPerDriver) {
      for (int d = 1; d <= drivers; d++) {
        ArrayDeque<Long> ids = new ArrayDeque<>();
        for (long id = 1; id <= executorsPerDriver; id++) {
          ids.add(id);
        }
        executors.put(d, ids);
        nextId.put(d, executorsPerDriver + 1L);
      }
    }

    /** Replaces executors for the window while the other client runs; how many were replaced. */
    int run(int drivers, FleetPlan plan, OtherClient other) throws InterruptedException {
      double perSecond = drivers * plan.replacementsPerDriverMinute() / 60.0;
      long periodMicros = (long) (1_000_000 / perSecond);
      AtomicInteger replaced = new AtomicInteger();
      ScheduledExecutorService pace = Executors.newSingleThreadScheduledExecutor();
      pace.scheduleAtFixedRate(
          () -> {
            try {
              replaceOne(drivers);
              replaced.incrementAndGet();
            } catch (RuntimeException e) {
              progress("  churn: " + e.getMessage());
            }
          },
          periodMicros / 2,
          periodMicros,
          TimeUnit.MICROSECONDS);
      other.start();
      Thread.sleep(plan.windowSeconds() * 1000);
      other.stop();
      pace.shutdown();
      pace.awaitTermination(30, TimeUnit.SECONDS);
      return replaced.get();
    }

    private void replaceOne(int drivers) {
      int driver = turn % drivers + 1;
      turn++;
      String app = FleetPlan.appId(driver);
      long gone = executors.get(driver).removeFirst();
      admin
          .pods()
          .inNamespace(plane.namespace())
          .withName(TestPlane.podName(app, gone))
          .withGracePeriod(0)
          .delete();
      long id = nextId.merge(driver, 1L, Long::sum) - 1;
      ExecutorPodPopulation.createRunning(admin, plane.namespace(), app, id);
      executors.get(driver).addLast(id);
    }
  }

  /**
   * Somebody else on the cluster: a client that LISTs one other app's pods by label and GETs one
   * pod, alternately every 100 ms, over plain HTTPS, and keeps its latencies, its request count and
   * the bytes it was sent.
   */
  private static final class OtherClient {
    private final PlaneHttp http;
    private final String listPath;
    private final String getPath;
    private final List<Long> listNanos = Collections.synchronizedList(new ArrayList<>());
    private final List<Long> getNanos = Collections.synchronizedList(new ArrayList<>());
    private final Map<String, Long> bytes = new java.util.concurrent.ConcurrentHashMap<>();
    private volatile boolean running = true;
    private Thread thread;

    OtherClient(PlaneHttp http, String namespace) {
      this.http = http;
      String app = FleetPlan.unrelatedAppId(1);
      this.listPath =
          "/api/v1/namespaces/"
              + namespace
              + "/pods?labelSelector=spark-app-selector%3D"
              + app
              + "%2Cspark-role%3Dexecutor";
      this.getPath = "/api/v1/namespaces/" + namespace + "/pods/" + TestPlane.podName(app, 1);
    }

    void start() {
      thread =
          new Thread(
              () -> {
                boolean list = true;
                while (running) {
                  long began = System.nanoTime();
                  int body =
                      http.get(list ? listPath : getPath).getBytes(StandardCharsets.UTF_8).length;
                  (list ? listNanos : getNanos).add(System.nanoTime() - began);
                  bytes.merge(list ? "LIST" : "GET", (long) body, Long::sum);
                  list = !list;
                  try {
                    Thread.sleep(100);
                  } catch (InterruptedException e) {
                    return;
                  }
                }
              },
              "fleet-other-client");
      thread.setDaemon(true);
      thread.start();
    }

    void stop() throws InterruptedException {
      running = false;
      thread.join(30_000);
    }

    double count(String verb) {
      return switch (verb) {
        case "LIST" -> listNanos.size();
        case "GET" -> getNanos.size();
        default -> 0;
      };
    }

    double bytes(String verb) {
      return bytes.getOrDefault(verb, 0L);
    }

    void report(Map<String, Double> figures) {
      put(figures, "LIST", listNanos);
      put(figures, "GET", getNanos);
    }

    private static void put(Map<String, Double> figures, String verb, List<Long> nanos) {
      double[] ms = nanos.stream().mapToDouble(n -> n / 1e6).sorted().toArray();
      figures.put("other." + verb + ".count", (double) ms.length);
      figures.put("other." + verb + ".p50Ms", BenchmarkReport.percentile(ms, 0.5));
      figures.put("other." + verb + ".p99Ms", BenchmarkReport.percentile(ms, 0.99));
    }
  }

  static void progress(String message) {
    System.err.println("[fleet] " + message);
  }
}

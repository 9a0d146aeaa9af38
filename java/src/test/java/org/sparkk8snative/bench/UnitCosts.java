package org.sparkk8snative.bench;

import java.io.InputStream;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * What each kind of request a driver makes costs the apiserver, measured alone on the idle plane
 * before the fleet runs, as the drivers' identity (so in their flow), in batches whose spread is
 * reported: a label-selected LIST of one app's executor pods in the populated namespace, a WATCH
 * renewal from the current resourceVersion (as each lister round's proof of life and each resumed
 * watch is), and one watch event delivered to one watcher. Counts times these unit costs predict
 * the fleet's figures ({@link FleetReport}'s cross-check), which must agree with what the fleet
 * measured: attributed time by the drivers' flow, CPU by subtraction.
 *
 * <p>CPU is the apiserver's {@code process_cpu_seconds_total} over the batch less what the idle
 * apiserver spends in the same time (measured just before), divided by the requests; time is the
 * drivers' flow's {@code apiserver_flowcontrol_request_execution_seconds}, divided likewise (a
 * watch's execution ends at its initialization; its events are CPU only).
 */
final class UnitCosts {
  /** How many batches, and how much each does. */
  record Plan(int batches, int lists, int renewals, int watchers, int events, long idleMillis) {
    static Plan full() {
      return new Plan(5, 100, 200, 50, 500, 3_000);
    }

    static Plan quick() {
      return new Plan(1, 10, 10, 4, 20, 1_000);
    }
  }

  static final String LIST = "list";
  static final String RENEWAL = "renewal";
  static final String EVENT = "event";

  /** A renewal's watch length: short, since only its opening and closing cost anything. */
  private static final int RENEWAL_TIMEOUT_SECONDS = 1;

  /** Renewals in flight at once, so that a batch takes seconds rather than minutes. */
  private static final int RENEWALS_AT_ONCE = 10;

  private final Plan plan;
  private final PlaneHttp admin;
  private final PlaneHttp driver;
  private final String namespace;
  private final String app;
  private final List<String> appPods;

  /**
   * @param driver HTTPS as the drivers' identity, whose requests their flow attributes
   * @param app an app of the populated namespace whose pods ({@code appPods}) are listed, watched
   *     and patched
   */
  UnitCosts(
      Plan plan,
      PlaneHttp admin,
      PlaneHttp driver,
      String namespace,
      String app,
      List<String> appPods) {
    this.plan = plan;
    this.admin = admin;
    this.driver = driver;
    this.namespace = namespace;
    this.app = app;
    this.appPods = appPods;
  }

  /**
   * Per unit ({@link #LIST}, {@link #RENEWAL}, {@link #EVENT}): {@code unit.<name>.cpuSeconds} and
   * {@code unit.<name>.flowSeconds} of each batch, in order.
   */
  Map<String, List<Double>> measure() throws Exception {
    Map<String, List<Double>> figures = new LinkedHashMap<>();
    for (int batch = 1; batch <= plan.batches(); batch++) {
      put(figures, LIST, lists());
      put(figures, RENEWAL, renewals());
      put(figures, EVENT, events());
      FleetBenchmark.progress(
          String.format(
              "unit costs, batch %d of %d: LIST %.2f ms CPU, renewal %.3f ms CPU, event to one"
                  + " watcher %.1f us CPU",
              batch,
              plan.batches(),
              last(figures, LIST) * 1e3,
              last(figures, RENEWAL) * 1e3,
              last(figures, EVENT) * 1e6));
    }
    return figures;
  }

  private static void put(Map<String, List<Double>> figures, String unit, double[] cpuAndFlow) {
    figures
        .computeIfAbsent("unit." + unit + ".cpuSeconds", k -> new ArrayList<>())
        .add(cpuAndFlow[0]);
    figures
        .computeIfAbsent("unit." + unit + ".flowSeconds", k -> new ArrayList<>())
        .add(cpuAndFlow[1]);
  }

  private static double last(Map<String, List<Double>> figures, String unit) {
    List<Double> cpu = figures.get("unit." + unit + ".cpuSeconds");
    return cpu.get(cpu.size() - 1);
  }

  /**
   * The path of the app's executor pods, selected by label, with {@code query} ("k=v&...") first.
   */
  private String appPodsPath(String query) {
    return "/api/v1/namespaces/"
        + namespace
        + "/pods?"
        + query
        + "labelSelector="
        + PlaneHttp.executorSelector(app);
  }

  /** CPU and flow time per LIST of the app's executor pods by label, as Spark's polling asks. */
  private double[] lists() {
    String path = appPodsPath("");
    return perRequest(
        plan.lists(),
        () -> {
          for (int i = 0; i < plan.lists(); i++) {
            driver.get(path);
          }
        });
  }

  /** CPU and flow time per WATCH from the current resourceVersion, ended by its timeout. */
  private double[] renewals() {
    String resourceVersion = resourceVersion(admin.get(appPodsPath("limit=1&")));
    String path =
        appPodsPath(
            "watch=true&allowWatchBookmarks=true&timeoutSeconds="
                + RENEWAL_TIMEOUT_SECONDS
                + "&resourceVersion="
                + resourceVersion
                + "&");
    return perRequest(
        plan.renewals(),
        () -> {
          ExecutorService pool = Executors.newFixedThreadPool(RENEWALS_AT_ONCE);
          try {
            List<Future<?>> watches = new ArrayList<>();
            for (int i = 0; i < plan.renewals(); i++) {
              watches.add(pool.submit(() -> drain(driver, path)));
            }
            for (Future<?> watch : watches) {
              watch.get();
            }
          } finally {
            pool.shutdownNow();
          }
        });
  }

  /**
   * CPU per watch event delivered to one watcher: the same annotation patches of the app's pods,
   * once with {@code watchers} watches of its pods open and once with none; the difference, divided
   * by the events times the watchers. Time per event is not a request's: 0.
   */
  private double[] events() throws Exception {
    double alone = cpuOfPatches();
    String path = appPodsPath("watch=true&timeoutSeconds=300&");
    List<HttpResponse<InputStream>> open = new ArrayList<>();
    List<Thread> readers = new ArrayList<>();
    double watched;
    try {
      for (int i = 0; i < plan.watchers(); i++) {
        HttpResponse<InputStream> watch =
            driver.send(
                driver.request(path).GET().build(), HttpResponse.BodyHandlers.ofInputStream());
        open.add(watch);
        Thread reader = new Thread(() -> discard(watch.body()), "unit-cost-watcher-" + i);
        reader.setDaemon(true);
        reader.start();
        readers.add(reader);
      }
      // Every watch has sent its initial events before the patches are measured.
      Thread.sleep(1_000);
      watched = cpuOfPatches();
    } finally {
      for (HttpResponse<InputStream> watch : open) {
        watch.body().close();
      }
      for (Thread reader : readers) {
        reader.join(10_000);
      }
    }
    return new double[] {(watched - alone) / ((double) plan.events() * plan.watchers()), 0};
  }

  /** The apiserver's CPU for {@code events} annotation patches of the app's pods, idle removed. */
  private double cpuOfPatches() {
    return perRequest(
        1,
        () -> {
          for (int i = 0; i < plan.events(); i++) {
            String pod = appPods.get(i % appPods.size());
            admin.mergePatch(
                "/api/v1/namespaces/" + namespace + "/pods/" + pod,
                "{\"metadata\":{\"annotations\":{\"bench.sparkk8snative.org/unit-cost\":\""
                    + i
                    + "\"}}}");
          }
        })[0];
  }

  /**
   * Runs {@code work} between two scrapes: the apiserver's CPU less the idle apiserver's in the
   * same time, and the drivers' flow's execution time, each divided by {@code requests}.
   */
  private double[] perRequest(int requests, Work work) {
    try {
      ApiserverMetrics idleFrom = ApiserverMetrics.scrape(admin);
      long idleBegan = System.nanoTime();
      Thread.sleep(plan.idleMillis());
      ApiserverMetrics from = ApiserverMetrics.scrape(admin);
      long began = System.nanoTime();
      double idlePerSecond = (from.cpuSeconds - idleFrom.cpuSeconds) / ((began - idleBegan) / 1e9);
      work.run();
      ApiserverMetrics to = ApiserverMetrics.scrape(admin);
      double seconds = (System.nanoTime() - began) / 1e9;
      double cpu = to.cpuSeconds - from.cpuSeconds - idlePerSecond * seconds;
      double flow = to.driversExecutionSeconds - from.driversExecutionSeconds;
      return new double[] {cpu / requests, flow / requests};
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    } catch (Exception e) {
      throw new IllegalStateException("measuring a unit cost", e);
    }
  }

  @FunctionalInterface
  private interface Work {
    void run() throws Exception;
  }

  private static void drain(PlaneHttp http, String path) {
    discard(
        http.send(http.request(path).GET().build(), HttpResponse.BodyHandlers.ofInputStream())
            .body());
  }

  private static void discard(InputStream in) {
    byte[] buffer = new byte[64 * 1024];
    try (in) {
      while (in.read(buffer) >= 0) {
        // Read to the end, as a client does.
      }
    } catch (java.io.IOException closed) {
      // Closed by the benchmark, or ended by the apiserver: either is the end.
    }
  }

  private static String resourceVersion(String listJson) {
    java.util.regex.Matcher rv =
        java.util.regex.Pattern.compile("\"resourceVersion\":\"(\\d+)\"").matcher(listJson);
    if (!rv.find()) {
      throw new IllegalStateException("no resourceVersion in a list: " + listJson);
    }
    return rv.group(1);
  }
}

package org.sparkk8snative.bench;

import java.util.HashMap;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * One scrape of the apiserver's {@code /metrics}, reduced to what a driver costs it: requests and
 * response bytes for pods in a namespace, by verb. Cluster-scoped requests (the control plane's own
 * controllers watch every pod) are left out.
 */
final class ApiserverMetrics {
  private static final Pattern LINE = Pattern.compile("^(\\w+)\\{([^}]*)\\} (\\S+)$");
  private static final Pattern UNLABELLED = Pattern.compile("^(\\w+) (\\S+)$");
  private static final Pattern LABEL = Pattern.compile("(\\w+)=\"([^\"]*)\"");
  private static final Pattern LIST_OBJECTS =
      Pattern.compile(
          "apiserver_(?:storage|cache)_list_(fetched|evaluated|returned)_objects_total");

  /** verb -> requests completed. */
  final Map<String, Double> completed = new HashMap<>();

  /** verb -> requests in flight (long-running: WATCH). */
  final Map<String, Double> inFlight = new HashMap<>();

  /** verb -> response bytes (LIST and GET; watch streams are not counted by the apiserver). */
  final Map<String, Double> responseBytes = new HashMap<>();

  /** Bytes of pod watch events the apiserver sent, to every watcher. */
  double podWatchEventBytes;

  /** Pod watch events the apiserver sent, to every watcher. */
  double podWatchEvents;

  /** CPU seconds of the apiserver process since it started. */
  double cpuSeconds;

  /** Resident memory of the apiserver process. */
  double residentBytes;

  /** Requests the apiserver made to etcd since it started, every resource and operation. */
  double etcdRequests;

  /**
   * Seconds the apiserver spent executing requests of the drivers' own flow ({@link
   * #DRIVERS_FLOW}), as API Priority and Fairness measures them: a request's whole handling, a
   * watch's up to its initialization (its events are not a request's execution).
   */
  double driversExecutionSeconds;

  /** Requests of the drivers' own flow that API Priority and Fairness dispatched. */
  double driversDispatched;

  /**
   * Pods the apiserver's LISTs fetched, evaluated and returned, from etcd ({@code
   * apiserver_storage_list_*}) and from its watch cache ({@code apiserver_cache_list_*}, which
   * counts no "evaluated": its fetched pods are the ones it filtered).
   */
  final Map<String, Double> podListObjects = new HashMap<>();

  /** The FlowSchema and priority level the fleet benchmark gives the drivers' identity. */
  static final String DRIVERS_FLOW = "spark-drivers";

  static ApiserverMetrics scrape(PlaneHttp http) {
    ApiserverMetrics m = new ApiserverMetrics();
    for (String line : http.get("/metrics").split("\n")) {
      Matcher plain = UNLABELLED.matcher(line);
      if (plain.matches()) {
        switch (plain.group(1)) {
          case "process_cpu_seconds_total" -> m.cpuSeconds = Double.parseDouble(plain.group(2));
          case "process_resident_memory_bytes" ->
              m.residentBytes = Double.parseDouble(plain.group(2));
          default -> {}
        }
        continue;
      }
      Matcher matcher = LINE.matcher(line);
      if (!matcher.matches()) {
        continue;
      }
      Map<String, String> labels = new HashMap<>();
      Matcher l = LABEL.matcher(matcher.group(2));
      while (l.find()) {
        labels.put(l.group(1), l.group(2));
      }
      double value = Double.parseDouble(matcher.group(3));
      String metric = matcher.group(1);
      // Labelled by resource since Kubernetes 1.30 (by kind before).
      boolean podWatchMetric =
          "pods".equals(labels.get("resource")) || "Pod".equals(labels.get("kind"));
      if (metric.equals("apiserver_watch_events_sizes_sum") && podWatchMetric) {
        m.podWatchEventBytes += value;
      }
      if (metric.equals("apiserver_watch_events_total") && podWatchMetric) {
        m.podWatchEvents += value;
      }
      if (metric.equals("etcd_requests_total")) {
        m.etcdRequests += value;
      }
      if (DRIVERS_FLOW.equals(labels.get("flow_schema"))) {
        switch (metric) {
          case "apiserver_flowcontrol_request_execution_seconds_sum" ->
              m.driversExecutionSeconds += value;
          case "apiserver_flowcontrol_dispatched_requests_total" -> m.driversDispatched += value;
          default -> {}
        }
      }
      Matcher listObjects = LIST_OBJECTS.matcher(metric);
      if (listObjects.matches() && "pods".equals(labels.get("resource"))) {
        m.podListObjects.merge(listObjects.group(1), value, Double::sum);
      }
      boolean namespacedPods =
          "pods".equals(labels.get("resource"))
              && "".equals(labels.getOrDefault("subresource", ""))
              && !"cluster".equals(labels.get("scope"));
      if (!namespacedPods) {
        continue;
      }
      String verb = labels.get("verb");
      switch (metric) {
        case "apiserver_request_total" -> m.completed.merge(verb, value, Double::sum);
        case "apiserver_longrunning_requests" -> m.inFlight.merge(verb, value, Double::sum);
        case "apiserver_response_sizes_sum" -> m.responseBytes.merge(verb, value, Double::sum);
        default -> {}
      }
    }
    return m;
  }

  /**
   * Requests of {@code verb} started between two scrapes: those that ended plus those still open.
   */
  static double started(ApiserverMetrics before, ApiserverMetrics after, String verb) {
    return after.completed.getOrDefault(verb, 0.0)
        - before.completed.getOrDefault(verb, 0.0)
        + after.inFlight.getOrDefault(verb, 0.0)
        - before.inFlight.getOrDefault(verb, 0.0);
  }

  static double bytes(ApiserverMetrics before, ApiserverMetrics after) {
    double sum = 0;
    for (String verb : after.responseBytes.keySet()) {
      sum += after.responseBytes.get(verb) - before.responseBytes.getOrDefault(verb, 0.0);
    }
    return sum;
  }
}

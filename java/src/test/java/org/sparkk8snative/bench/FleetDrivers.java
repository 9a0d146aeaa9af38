package org.sparkk8snative.bench;

import static org.sparkk8snative.bench.BenchLines.emit;

import io.fabric8.kubernetes.client.KubernetesClient;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.SparkConf;
import org.sparkk8snative.ConfigKeys;
import org.sparkk8snative.TestPlane;

/**
 * Several simulated drivers of one contender in one JVM, for {@link FleetBenchmark}: each has what
 * a real driver has, its own Kubernetes client (Spark's factory, for the legacy and fabric8
 * contenders; the native library's own client per informer for native), its own snapshot sources
 * and its own Spark snapshot store, on its own app's executor pods. Only the JVM is shared, which
 * the apiserver cannot see: every driver has its own connections, requests and watches.
 *
 * <p>Usage: {@code FleetDrivers <contender> <drivers> <executorsPerDriver> <pollingSeconds>
 * <staggerMillis>}; over stdout it prints {@code BENCH READY window} once every driver's store
 * holds its pods, waits for a line, prints its figures and stops every driver.
 */
public final class FleetDrivers {
  /**
   * The native sources with long watches: what the proof of life (a watch per lister round) costs,
   * measured.
   */
  static final String NATIVE_LONG_WATCH = "native-290s";

  private FleetDrivers() {}

  public static void main(String[] args) throws Exception {
    String contender = args[0];
    int drivers = Integer.parseInt(args[1]);
    int executors = Integer.parseInt(args[2]);
    long pollingSeconds = Long.parseLong(args[3]);
    long staggerMillis = Long.parseLong(args[4]);
    TestPlane plane = TestPlane.get();
    SparkConf conf = new SparkConf(false);
    plane.sparkConf(false).forEach(conf::set);
    conf.set("spark.kubernetes.executor.apiPollingInterval", pollingSeconds + "s");
    conf.set(ConfigKeys.LISTER_POLLING_INTERVAL, pollingSeconds + "s");
    if (contender.equals(NATIVE_LONG_WATCH)) {
      // The longest watch the library allows, and a stale bound that keeps it (1.5x).
      conf.set(ConfigKeys.WATCH_TIMEOUT, "290s");
      conf.set(ConfigKeys.STALE_BOUND, "435s");
    }
    String kind = contender.startsWith("native") ? "native" : contender;

    List<KubernetesClient> clients = new ArrayList<>();
    List<MeasuringStore> stores = new ArrayList<>();
    List<Contender> running = new ArrayList<>();
    long began = System.nanoTime();
    for (int d = 1; d <= drivers; d++) {
      KubernetesClient client = kind.equals("native") ? null : Contender.driverClient(plane, conf);
      if (client != null) {
        clients.add(client);
      }
      MeasuringStore store = new MeasuringStore(executors);
      Contender c = Contender.create(kind, conf, client, store);
      c.start(FleetPlan.appId(d));
      stores.add(store);
      running.add(c);
      // Drivers of a fleet start at different times; spread so their polls are too.
      Thread.sleep(staggerMillis / drivers);
    }
    long deadline = System.nanoTime() + 180_000_000_000L;
    for (MeasuringStore store : stores) {
      while (store.allPodsNanos() < 0) {
        if (System.nanoTime() > deadline) {
          throw new IllegalStateException("a driver's store did not get its pods in 3 minutes");
        }
        Thread.sleep(20);
      }
    }
    emit("synced.ms", String.format("%.0f", (System.nanoTime() - began) / 1e6));
    emit("threads.live", ManagementFactory.getThreadMXBean().getThreadCount());

    com.sun.management.OperatingSystemMXBean os =
        (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
    long cpu = os.getProcessCpuTime();
    long windowBegan = System.nanoTime();
    emit("READY", "window");
    BufferedReader commands =
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    if (commands.readLine() == null) {
      throw new IllegalStateException("the benchmark went away");
    }
    emit("fleetCpu.ms", String.format("%.0f", (os.getProcessCpuTime() - cpu) / 1e6));
    emit("fleetWindow.ms", String.format("%.0f", (System.nanoTime() - windowBegan) / 1e6));
    for (Contender c : running) {
      c.stop();
    }
    for (MeasuringStore store : stores) {
      store.stop();
    }
    for (KubernetesClient client : clients) {
      client.close();
    }
    emit("stopped", "1");
    System.exit(0);
  }
}

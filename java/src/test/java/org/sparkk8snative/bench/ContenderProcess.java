package org.sparkk8snative.bench;

import static org.sparkk8snative.bench.BenchLines.emit;

import io.fabric8.kubernetes.api.model.PodList;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.lang.management.ManagementFactory;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.LongSupplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.apache.spark.SparkConf;
import org.sparkk8snative.TestPlane;
import org.sparkk8snative.spark.NativeListerSnapshotSource;
import scala.jdk.javaapi.CollectionConverters;

/**
 * One contender in a JVM of its own, the way a driver would run it, so that heap, RSS and CPU are
 * its own. Driven by {@link SnapshotSourcesBenchmark} over stdin / stdout: it prints {@code BENCH
 * READY <phase>} and waits for a line; figures are {@code BENCH <key> <value>}. The contender
 * {@code floor} is no contender: a raw LIST and a raw watch over plain HTTPS.
 */
public final class ContenderProcess {
  private static final Duration SYNC_TIMEOUT = Duration.ofMinutes(3);

  /**
   * Starts per pod count for the first-view figure in one process; the benchmark's repetitions,
   * each in a process of its own, give the median and the spread.
   */
  private static final int REPEATS = 1;

  private final String contender;
  private final BenchmarkPlan plan;
  private final TestPlane plane = TestPlane.get();
  private final BufferedReader commands =
      new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
  private final long baselineHeap;

  private ContenderProcess(String contender, BenchmarkPlan plan) {
    this.contender = contender;
    this.plan = plan;
    this.baselineHeap = heapAfterGc();
  }

  public static void main(String[] args) throws Exception {
    ContenderProcess process = new ContenderProcess(args[0], BenchmarkPlan.parse(args[1]));
    if (process.contender.equals("floor")) {
      process.runFloor();
    } else {
      process.runContender();
    }
    System.exit(0);
  }

  private SparkConf sparkConf() {
    SparkConf conf = new SparkConf(false);
    plane.sparkConf(false).forEach(conf::set);
    conf.set("spark.kubernetes.executor.apiPollingInterval", plan.pollingInterval());
    conf.set("spark.kubernetes.executor.listerPollingInterval", plan.pollingInterval());
    return conf;
  }

  private void runContender() throws Exception {
    SparkConf conf = sparkConf();
    KubernetesClient client = Contender.driverClient(plane, conf);
    warmUp(conf, client);
    long nativeCpuMillis = 0;
    int largest = plan.largest();
    for (int size : plan.sizes()) {
      // Each size REPEATS times, median reported: one start is too noisy on a small machine.
      List<Long> allPods = new ArrayList<>();
      List<Long> fullSnapshots = new ArrayList<>();
      for (int repeat = 1; repeat <= REPEATS; repeat++) {
        boolean last = size == largest && repeat == REPEATS;
        MeasuringStore store = new MeasuringStore(size);
        Contender c = Contender.create(contender, conf, client, store);
        c.start(BenchmarkPlan.appId(size));
        awaitNanos("all " + size + " pods in the store", store::allPodsNanos, SYNC_TIMEOUT);
        allPods.add(store.allPodsNanos());
        // The legacy sources' first full snapshot is the first poll, one interval after start:
        // waited for once, before the footprint is taken.
        Duration fullWait =
            contender.equals("legacy") && !last
                ? Duration.ZERO
                : plan.pollingDuration().plusSeconds(15);
        long full = tryAwaitNanos(store::firstFullSnapshotNanos, fullWait);
        if (full >= 0) {
          fullSnapshots.add(full);
        }
        if (last) {
          measureFootprint();
        }
        nativeCpuMillis += nativeCpuMillis();
        c.stop();
        store.stop();
      }
      emit("first." + size + ".allPodsMs", millis(median(allPods)));
      emit(
          "first." + size + ".fullSnapshotMs",
          fullSnapshots.isEmpty() ? "-" : millis(median(fullSnapshots)));
    }
    if (contender.equals("native")) {
      measureListerRounds(conf, largest);
    }

    MeasuringStore store = new MeasuringStore(plan.steadyPods());
    Contender c = Contender.create(contender, conf, client, store);
    c.start(BenchmarkPlan.STEADY_APP);
    awaitNanos("the steady-state pods in the store", store::allPodsNanos, SYNC_TIMEOUT);
    // Past the first native watch request (its default length: the polling interval, at least
    // 10 s), whose bytes the apiserver counts when it ends; the same wait for every contender.
    Thread.sleep(Math.max(10_000, plan.pollingDuration().toMillis()) + 2_000);
    steadyWindow();
    latency(store);
    nativeCpuMillis += nativeCpuMillis();
    c.stop();
    store.stop();
    client.close();
    emit("cpu.nativeTotalMs", nativeCpuMillis);
  }

  /**
   * One untimed start and stop on the steady-state pods, so that class loading and the first JIT
   * rounds are not in the first figure of one contender and not of another.
   */
  private void warmUp(SparkConf conf, KubernetesClient client) throws InterruptedException {
    MeasuringStore store = new MeasuringStore(plan.steadyPods());
    Contender c = Contender.create(contender, conf, client, store);
    c.start(BenchmarkPlan.STEADY_APP);
    awaitNanos("the warm-up", store::allPodsNanos, SYNC_TIMEOUT);
    c.stop();
    store.stop();
  }

  /**
   * A driver's memory while the contender runs with every pod, counted the same way for each: the
   * JVM heap retained after GC, plus the bytes the native library holds on its heap as its
   * allocator counts them (0 where the library is not loaded: the legacy and fabric8 contenders
   * keep everything on the JVM heap), and the process RSS (which also holds what the JVM itself
   * keeps off-heap: code, metaspace, thread stacks, buffers).
   */
  private void measureFootprint() {
    emit("heap.retainedBytes", heapAfterGc() - baselineHeap);
    emit(
        "native.heapBytes",
        contender.equals("native") ? org.sparkk8snative.NativeLibrary.allocatedBytes() : 0);
    emit("rss.bytes", procStatusKb("VmRSS") * 1024);
  }

  /**
   * The native lister's round over unchanged pods, as a driver runs it for hours: a lister of its
   * own at a short interval (the cost of a round does not depend on it), rounds after the first
   * (which decodes every pod) and after the JIT has settled; median and best of the rest.
   */
  private void measureListerRounds(SparkConf conf, int size) throws InterruptedException {
    SparkConf fast =
        conf.clone().set(org.sparkk8snative.ConfigKeys.LISTER_POLLING_INTERVAL, "200ms");
    MeasuringStore store = new MeasuringStore(size);
    Contender c = Contender.create("native", fast, null, store);
    c.start(BenchmarkPlan.appId(size));
    List<NativeListerSnapshotSource.Round> rounds = new ArrayList<>();
    NativeListerSnapshotSource.Round last = null;
    long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
    while (rounds.size() < 25 && System.nanoTime() < deadline) {
      NativeListerSnapshotSource.Round round = c.lastListerRound();
      if (round != null && round != last && round.changedPods() == 0) {
        rounds.add(round);
      }
      last = round;
      Thread.sleep(20);
    }
    c.stop();
    store.stop();
    if (rounds.size() < 10) {
      return;
    }
    List<NativeListerSnapshotSource.Round> settled = rounds.subList(5, rounds.size());
    long[] total =
        settled.stream().mapToLong(NativeListerSnapshotSource.Round::nanos).sorted().toArray();
    long[] ours = settled.stream().mapToLong(r -> r.nanos() - r.sparkNanos()).sorted().toArray();
    emit("lister.rounds", settled.size());
    emit("lister.unchangedMicros", total[total.length / 2] / 1000);
    emit("lister.unchangedBestMicros", total[0] / 1000);
    emit("lister.oursMicros", ours[ours.length / 2] / 1000);
    emit("lister.oursBestMicros", ours[0] / 1000);
    emit("lister.pods", settled.get(0).pods());
    emit("lister.frameBytes", settled.get(0).frameBytes());
  }

  private void steadyWindow() throws IOException {
    long cpu = processCpuNanos();
    long nativeCpu = nativeCpuMillis();
    long began = System.nanoTime();
    ready("steady");
    emit("steady.windowMs", millis(System.nanoTime() - began));
    emit("steady.processCpuMs", millis(processCpuNanos() - cpu));
    emit("steady.nativeCpuMs", nativeCpuMillis() - nativeCpu);
  }

  private void latency(MeasuringStore store) throws Exception {
    // Untimed patches first: the first updates of a process load classes and leave a backlog.
    ready("warmup");
    Thread.sleep(1_000);
    com.sun.management.ThreadMXBean threads =
        (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    long allocated = threads.getTotalThreadAllocatedBytes();
    long updates = store.updates.get();
    store.countPatchesFromNow();
    ready("latency"); // the benchmark sends its patches, then a line
    long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
    while (store.patchLatencyNanos.size() < plan.patches() && System.nanoTime() < deadline) {
      Thread.sleep(10);
    }
    long events = store.updates.get() - updates;
    emit("latency.events", events);
    emit(
        "alloc.bytesPerEvent",
        (threads.getTotalThreadAllocatedBytes() - allocated) / Math.max(events, 1));
    emitLatencies(store.patchLatencyNanos);
  }

  private void runFloor() throws Exception {
    PlaneHttp http = PlaneHttp.asDriver(plane);
    String pods = "/api/v1/namespaces/" + plane.namespace() + "/pods?labelSelector=";
    http.get(
        pods + PlaneHttp.executorSelector(BenchmarkPlan.appId(plan.sizes().get(0)))); // warm-up
    for (int size : plan.sizes()) {
      List<Long> lists = new ArrayList<>();
      int bytes = 0;
      for (int repeat = 1; repeat <= REPEATS; repeat++) {
        long began = System.nanoTime();
        bytes =
            http.send(
                    http.request(pods + PlaneHttp.executorSelector(BenchmarkPlan.appId(size)))
                        .GET()
                        .build(),
                    HttpResponse.BodyHandlers.ofByteArray())
                .body()
                .length;
        lists.add(System.nanoTime() - began);
      }
      emit("first." + size + ".allPodsMs", millis(median(lists)));
      emit("first." + size + ".listBytes", bytes);
    }

    measureStoreFloor(http, pods + PlaneHttp.executorSelector(BenchmarkPlan.appId(plan.largest())));

    // A raw watch of the steady-state pods: the patches' floor.
    String list =
        http.get(pods + PlaneHttp.executorSelector(BenchmarkPlan.STEADY_APP) + "&limit=1");
    Matcher rv = Pattern.compile("\"resourceVersion\":\"(\\d+)\"").matcher(list);
    if (!rv.find()) {
      throw new IllegalStateException("no resourceVersion in the list");
    }
    java.util.concurrent.ConcurrentHashMap<Integer, Long> latencies =
        new java.util.concurrent.ConcurrentHashMap<>();
    Pattern patch =
        Pattern.compile("\"message\":\"" + MeasuringStore.PATCH_PREFIX + "(\\d+) (\\d+)\"");
    java.util.concurrent.atomic.AtomicLong countFrom =
        new java.util.concurrent.atomic.AtomicLong(Long.MAX_VALUE);
    Stream<String> events =
        http.send(
                http.request(
                        pods
                            + PlaneHttp.executorSelector(BenchmarkPlan.STEADY_APP)
                            + "&watch=true&resourceVersion="
                            + rv.group(1))
                    .GET()
                    .build(),
                HttpResponse.BodyHandlers.ofLines())
            .body();
    Thread reader =
        new Thread(
            () -> {
              try {
                events.forEach(
                    line -> {
                      long now = System.nanoTime();
                      Matcher m = patch.matcher(line);
                      if (m.find() && Long.parseLong(m.group(2)) >= countFrom.get()) {
                        latencies.putIfAbsent(
                            Integer.parseInt(m.group(1)), now - Long.parseLong(m.group(2)));
                      }
                    });
              } catch (java.io.UncheckedIOException closedWhenDone) {
                // events.close() below ends the watch once the latencies are in
              }
            },
            "bench-raw-watch");
    reader.setDaemon(true);
    reader.start();
    ready("warmup");
    Thread.sleep(1_000);
    countFrom.set(System.nanoTime());
    ready("latency");
    long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
    while (latencies.size() < plan.patches() && System.nanoTime() < deadline) {
      Thread.sleep(10);
    }
    emitLatencies(latencies);
    events.close();
  }

  /**
   * The floor of a driver's memory for its pods: Spark's own store holding them, the JVM heap every
   * contender needs. The pods of the largest list, decoded as Spark's fabric8 decodes them, without
   * {@code managedFields} (Spark never reads them; a source that keeps them pays for them), handed
   * to the same store the contenders feed, and counted the same way: heap retained after GC.
   */
  private void measureStoreFloor(PlaneHttp http, String list) {
    // Timed too: a LIST decoded into fabric8's model, what any source's first view must at least
    // do before Spark can hold the pods (the raw LIST decodes nothing).
    // Warmed first on the smallest app's pods, as every contender warms up before its first view.
    KubernetesSerialization serialization = new KubernetesSerialization();
    serialization.unmarshal(
        http.get(list.replace(BenchmarkPlan.appId(plan.largest()), BenchmarkPlan.STEADY_APP)),
        PodList.class);
    long began = System.nanoTime();
    PodList listed = serialization.unmarshal(http.get(list), PodList.class);
    emit("first." + plan.largest() + ".decodedListMs", millis(System.nanoTime() - began));
    listed.getItems().forEach(pod -> pod.getMetadata().setManagedFields(null));
    MeasuringStore store = new MeasuringStore(listed.getItems().size());
    store.replaceSnapshot(CollectionConverters.asScala(listed.getItems()).toSeq());
    listed = null; // only the store may hold the pods now
    emit("heap.storeFloorBytes", heapAfterGc() - baselineHeap);
    store.stop();
  }

  private void emitLatencies(Map<Integer, Long> latencies) {
    List<String> micros = new ArrayList<>();
    latencies.values().forEach(n -> micros.add(Long.toString(n / 1000)));
    emit("latency.received", latencies.size());
    emit("latency.micros", micros.isEmpty() ? "-" : String.join(",", micros));
  }

  private void ready(String phase) throws IOException {
    emit("READY", phase);
    if (commands.readLine() == null) {
      throw new IllegalStateException("the benchmark went away");
    }
  }

  private static void awaitNanos(String what, LongSupplier value, Duration timeout)
      throws InterruptedException {
    if (tryAwaitNanos(value, timeout) < 0) {
      throw new IllegalStateException("timed out after " + timeout + " waiting for " + what);
    }
  }

  private static long tryAwaitNanos(LongSupplier value, Duration timeout)
      throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (value.getAsLong() < 0 && System.nanoTime() < deadline) {
      Thread.sleep(5);
    }
    return value.getAsLong();
  }

  private static long median(List<Long> values) {
    List<Long> sorted = values.stream().sorted().toList();
    return sorted.get(sorted.size() / 2);
  }

  private static String millis(long nanos) {
    return String.format("%.1f", nanos / 1e6);
  }

  static long heapAfterGc() {
    for (int i = 0; i < 3; i++) {
      System.gc();
      try {
        Thread.sleep(200);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
  }

  private static long processCpuNanos() {
    return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
        .getProcessCpuTime();
  }

  /** CPU time of the native runtime's threads ("spark-k8s-rt"), which the JVM does not account. */
  static long nativeCpuMillis() {
    long ticks = 0;
    try (Stream<Path> tasks = Files.list(Paths.get("/proc/self/task"))) {
      for (Path task : tasks.toList()) {
        try {
          if (!Files.readString(task.resolve("comm")).startsWith("spark-k8s-rt")) {
            continue;
          }
          String stat = Files.readString(task.resolve("stat"));
          String[] fields = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
          ticks += Long.parseLong(fields[11]) + Long.parseLong(fields[12]); // utime, stime
        } catch (IOException gone) {
          // the thread ended meanwhile
        }
      }
    } catch (IOException e) {
      return -1;
    }
    return ticks * 10; // USER_HZ = 100
  }

  private static long procStatusKb(String field) {
    try {
      for (String line : Files.readAllLines(Paths.get("/proc/self/status"))) {
        if (line.startsWith(field + ":")) {
          return Long.parseLong(line.replaceAll("[^0-9]", ""));
        }
      }
    } catch (IOException e) {
      return -1;
    }
    return -1;
  }
}

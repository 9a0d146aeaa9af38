package org.sparkk8snative.node;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.informers.ResourceEventHandler;
import io.fabric8.kubernetes.client.informers.SharedIndexInformer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkContext;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerExecutorAdded;
import org.apache.spark.scheduler.SparkListenerExecutorRemoved;
import org.apache.spark.sql.SparkSession;
import org.sparkk8snative.ExecutorServiceNames;
import org.sparkk8snative.TestPlane;
import org.sparkk8snative.bench.MarkdownSections;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Spark on the real node, native sources against Spark's own, round after round in one run, in
 * alternating order: the time to the executors' registration, a job's time, an executor's loss to
 * its replacement, and how long a connection to a gone executor takes to fail (through its Service,
 * native; to its old pod IP dropped as a routed network drops it, legacy). Prints each figure side
 * by side with its spread and writes BENCHMARKS.md's "real node" section. Runs inside the sealed
 * cluster as a client-mode driver (scripts/bench-node.sh).
 *
 * <p>Arguments: {@code full|quick} (a warm-up round and 5 counted rounds, or 1 round), the markdown
 * file to write.
 */
public final class RealNodeBenchmark {
  private static final int EXECUTORS = 2;
  private static final long ROWS = 4_000_000;

  private final ProcessNode node = ProcessNode.get();
  private final TestPlane plane = node.plane();

  /** Figure name -> mode -> samples (ms), in the order figures are first recorded. */
  private final Map<String, Map<String, List<Long>>> samples = new java.util.LinkedHashMap<>();

  /** What a connection to a gone executor ended with, per mode. */
  private final Map<String, String> goneOutcome = new TreeMap<>();

  private void record(String figure, String mode, long millis) {
    samples
        .computeIfAbsent(figure, f -> new TreeMap<>())
        .computeIfAbsent(mode, m -> new ArrayList<>())
        .add(millis);
  }

  private void round(boolean nativeSources) throws Exception {
    String mode = nativeSources ? "native" : "legacy";
    String run = UUID.randomUUID().toString().substring(0, 8);
    String driverPod = node.createDriverPod();
    SparkConf conf =
        node.sparkJobConf("bench-" + mode, EXECUTORS, nativeSources)
            .set("spark.kubernetes.executor.label.bench-run", run)
            .set("spark.kubernetes.driver.pod.name", driverPod);
    if (nativeSources) {
      ProcessNode.withExecutorServices(conf);
    }
    // When each executor pod is first seen, from a watch of the bench's own, started before
    // the driver so that no pod is seen late.
    Map<String, Long> podSeenAt = new ConcurrentHashMap<>();
    SharedIndexInformer<Pod> pods =
        plane
            .admin()
            .pods()
            .inNamespace(plane.namespace())
            .withLabel("bench-run", run)
            .inform(
                new ResourceEventHandler<>() {
                  @Override
                  public void onAdd(Pod pod) {
                    podSeenAt.putIfAbsent(
                        pod.getMetadata().getLabels().getOrDefault("spark-exec-id", "?"),
                        System.currentTimeMillis());
                  }

                  @Override
                  public void onUpdate(Pod old, Pod pod) {}

                  @Override
                  public void onDelete(Pod pod, boolean unknown) {}
                });
    long began = System.currentTimeMillis();
    SparkSession spark = SparkSession.builder().config(conf).getOrCreate();
    SparkContext sc = spark.sparkContext();
    String appId = sc.applicationId();
    Map<String, Long> addedAt = new ConcurrentHashMap<>();
    Map<String, Long> removedAt = new ConcurrentHashMap<>();
    sc.addSparkListener(
        new SparkListener() {
          @Override
          public void onExecutorAdded(SparkListenerExecutorAdded e) {
            addedAt.put(e.executorId(), e.time());
          }

          @Override
          public void onExecutorRemoved(SparkListenerExecutorRemoved e) {
            removedAt.put(e.executorId(), System.currentTimeMillis());
          }
        });
    try {
      TestPlane.eventually(
          EXECUTORS + " executors to register",
          Duration.ofSeconds(180),
          () -> sc.getExecutorIds().size() == EXECUTORS);
      // Executors that registered before the listener: their time is in the status store.
      for (var info : CollectionConverters.asJava(sc.statusStore().executorList(true))) {
        if (!info.id().equals("driver")) {
          addedAt.putIfAbsent(info.id(), info.addTime().getTime());
        }
      }
      record(
          "driver start -> " + EXECUTORS + " executors registered",
          mode,
          addedAt.values().stream().mapToLong(Long::longValue).max().orElseThrow() - began);
      for (var added : addedAt.entrySet()) {
        Long seen = podSeenAt.get(added.getKey());
        if (seen != null) {
          record("executor pod seen -> executor registered", mode, added.getValue() - seen);
        }
      }
      for (String which : List.of("job (groupBy, first)", "job (groupBy, again)")) {
        long t = System.nanoTime();
        long groups =
            spark
                .range(0, ROWS, 1, 8)
                .selectExpr("id % 1000 AS k", "sha2(CAST(id AS STRING), 256) AS h")
                .groupBy("k")
                .count()
                .collectAsList()
                .size();
        if (groups != 1000) {
          throw new AssertionError(mode + ": " + groups + " groups, not 1000");
        }
        record(which, mode, (System.nanoTime() - t) / 1_000_000);
      }

      Pod victim = plane.executorPods(appId).get(0);
      String victimId = TestPlane.executorId(victim);
      String victimIp = victim.getStatus().getPodIP();
      String service = ExecutorServiceNames.serviceName(appId, victimId);
      long killedNanos = System.nanoTime();
      long killed = System.currentTimeMillis();
      node.signal(victim.getMetadata().getName(), "KILL");
      if (nativeSources) {
        ConnectionProbes probes =
            ConnectionProbes.after(
                killedNanos,
                () -> ConnectionProbes.connect(service, ProcessNode.BLOCK_MANAGER_PORT),
                () -> gone(appId, victim));
        record("SIGKILL -> every connection to it refused", mode, probes.refusedFromMillis());
        ConnectionProbes.Attempt attempt =
            ConnectionProbes.connect(service, ProcessNode.BLOCK_MANAGER_PORT);
        record("a connection to the gone executor fails after", mode, attempt.millis());
        goneOutcome.put(mode, attempt.outcome() + " (its Service)");
      } else {
        TestPlane.eventually(
            "the killed pod to be gone", Duration.ofSeconds(60), () -> gone(appId, victim));
        node.dropTrafficToGonePods(true);
        try {
          ConnectionProbes.Attempt attempt =
              ConnectionProbes.connect(victimIp, ProcessNode.BLOCK_MANAGER_PORT);
          record("a connection to the gone executor fails after", mode, attempt.millis());
          goneOutcome.put(mode, attempt.outcome() + " (its old pod IP, dropped)");
        } finally {
          node.dropTrafficToGonePods(false);
        }
      }
      TestPlane.eventually(
          "a replacement executor",
          Duration.ofSeconds(180),
          () -> removedAt.containsKey(victimId) && sc.getExecutorIds().size() == EXECUTORS);
      record("SIGKILL -> Spark removes the executor", mode, removedAt.get(victimId) - killed);
      long replaced =
          addedAt.entrySet().stream()
              .filter(e -> Integer.parseInt(e.getKey()) > EXECUTORS)
              .mapToLong(Map.Entry::getValue)
              .min()
              .orElseThrow();
      record("SIGKILL -> replacement registered", mode, replaced - killed);
    } finally {
      spark.stop();
      pods.close();
      plane.deletePod(driverPod);
    }
  }

  private boolean gone(String appId, Pod pod) {
    return plane.executorPods(appId).stream()
        .noneMatch(p -> p.getMetadata().getUid().equals(pod.getMetadata().getUid()));
  }

  private static String spread(List<Long> values) {
    if (values == null || values.isEmpty()) {
      return "";
    }
    List<Long> sorted = values.stream().sorted().toList();
    long median = sorted.get(sorted.size() / 2);
    return sorted.size() == 1
        ? String.valueOf(median)
        : String.format("%d (%d-%d)", median, sorted.get(0), sorted.get(sorted.size() - 1));
  }

  private String table(int rounds, boolean warmedUp, long seconds) {
    StringBuilder md =
        new StringBuilder("### Real node: Spark jobs, executors lost and replaced\n\n");
    md.append(
        String.format(
            Locale.ROOT,
            "`make bench-node` (%d round%s%s, %d s, %s, %d cores, Java %s, Spark %s, %s). A"
                + " client-mode driver in the sealed cluster (scripts/bench-node.sh), %d executor"
                + " pods of 512m as processes on the node agent; each round runs the native"
                + " sources (with executor Services) and Spark's own, in alternating order. Times"
                + " in ms, median (min-max) over the rounds; the executor-start row pools every"
                + " executor.%n%n",
            rounds,
            rounds == 1 ? "" : "s",
            warmedUp ? " after an uncounted warm-up round" : "",
            seconds,
            cpuModel(),
            Runtime.getRuntime().availableProcessors(),
            System.getProperty("java.version"),
            org.apache.spark.package$.MODULE$.SPARK_VERSION(),
            LocalDate.now(),
            EXECUTORS));
    md.append("| figure | native | legacy |\n| --- | ---: | ---: |\n");
    samples.forEach(
        (figure, byMode) ->
            md.append(
                String.format(
                    "| %s | %s | %s |%n",
                    figure, spread(byMode.get("native")), spread(byMode.get("legacy")))));
    md.append(
        String.format(
            "%nA connection to the gone executor: native %s; legacy %s, where the probe's 10 s"
                + " connect timeout ends it and Spark's fetch would wait out"
                + " `spark.shuffle.io.connectionTimeout` (120 s by default) per attempt.%n",
            goneOutcome.getOrDefault("native", "-"), goneOutcome.getOrDefault("legacy", "-")));
    return md.toString();
  }

  private static String cpuModel() {
    try {
      return Files.readAllLines(Path.of("/proc/cpuinfo")).stream()
          .filter(l -> l.startsWith("model name"))
          .map(l -> l.substring(l.indexOf(':') + 1).trim())
          .findFirst()
          .orElse("unknown CPU");
    } catch (java.io.IOException e) {
      return "unknown CPU";
    }
  }

  public static void main(String[] args) throws Exception {
    boolean quick = args.length > 0 && args[0].equals("quick");
    int rounds = quick ? 1 : 5;
    Path markdown = Path.of(args.length > 1 ? args[1] : "BENCHMARKS.md");
    long t = System.nanoTime();
    if (!quick) {
      // One driver JVM runs every round: a first round, not counted, loads and JITs what all
      // rounds run, so that whichever mode comes first does not pay for it.
      System.out.println("warm-up round (not counted)");
      RealNodeBenchmark warmUp = new RealNodeBenchmark();
      warmUp.round(true);
      warmUp.round(false);
    }
    RealNodeBenchmark bench = new RealNodeBenchmark();
    for (int r = 0; r < rounds; r++) {
      boolean nativeFirst = r % 2 == 0;
      for (boolean nativeSources : List.of(nativeFirst, !nativeFirst)) {
        System.out.printf("round %d/%d: %s%n", r + 1, rounds, nativeSources ? "native" : "legacy");
        bench.round(nativeSources);
      }
    }
    String section = bench.table(rounds, !quick, (System.nanoTime() - t) / 1_000_000_000);
    System.out.print(section);
    MarkdownSections.write(markdown, "node", section);
    System.out.println("wrote " + markdown);
    System.exit(0);
  }
}

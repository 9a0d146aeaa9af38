package org.sparkk8snative.node;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Base64;
import java.util.List;
import org.apache.spark.SparkContext;
import org.apache.spark.metrics.source.Source;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;

/**
 * The application of {@link ClusterModeTest}: the main class that spark-submit runs in the driver
 * pod. It says what the driver sees on lines {@code cluster-mode-job: key=value ...} in its log
 * (the test reads them through the apiserver): the service-account token in the pod, when its
 * executors registered, the answer of a groupBy count, and the native informer's gauges. Exits 1 on
 * a wrong answer. Arguments: rows, keys, and {@code exit}, or {@code hold} to keep the driver
 * running once its executors have registered, without a job, for the test to delete its pod.
 */
public final class ClusterModeJob {
  /** Where the kubelet (here the node agent) mounts the pod's service-account token. */
  static final Path SERVICE_ACCOUNT_DIR = Path.of("/var/run/secrets/kubernetes.io/serviceaccount");

  static final String PREFIX = "cluster-mode-job: ";

  private ClusterModeJob() {}

  public static void main(String[] args) throws Exception {
    long rows = Long.parseLong(args[0]);
    int keys = Integer.parseInt(args[1]);
    boolean hold = args.length > 2 && args[2].equals("hold");
    sayWhatTheTokenIs();

    long began = System.nanoTime();
    SparkSession spark = SparkSession.builder().getOrCreate();
    SparkContext sc = spark.sparkContext();
    int executors = sc.conf().getInt("spark.executor.instances", 2);
    long deadline = System.nanoTime() + 180_000_000_000L;
    // The driver is one of the executor infos.
    while (sc.statusTracker().getExecutorInfos().length < executors + 1) {
      if (System.nanoTime() > deadline) {
        say("executors-registered=" + (sc.statusTracker().getExecutorInfos().length - 1));
        spark.stop();
        System.exit(2);
      }
      Thread.sleep(50);
    }
    say(
        "executors-registered="
            + executors
            + " after-ms="
            + (System.nanoTime() - began) / 1_000_000
            + " app-id="
            + sc.applicationId()
            + " max-heap-mb="
            + Runtime.getRuntime().maxMemory() / (1024 * 1024));

    if (hold) {
      say("holding");
      while (true) {
        Thread.sleep(60_000);
      }
    }

    long jobBegan = System.nanoTime();
    List<Row> counts = ShuffleJob.countByKey(spark, rows, 8, keys);
    long wrongKeys = ShuffleJob.wrongKeys(counts, rows, keys);
    boolean right = counts.size() == keys && wrongKeys == 0;
    say(
        "answer="
            + (right ? "right" : "wrong")
            + " keys="
            + counts.size()
            + " rows-per-key="
            + rows / keys
            + " wrong-keys="
            + wrongKeys
            + " job-ms="
            + (System.nanoTime() - jobBegan) / 1_000_000);

    scala.collection.Seq<Source> sources =
        sc.env().metricsSystem().getSourcesByName("sparkK8sNative");
    if (sources.isEmpty()) { // Spark's own sources
      say("informer-synced=none");
    } else {
      Source source = sources.head();
      say(
          "informer-synced="
              + gauge(source, "informer.synced")
              + " informer-cache-size="
              + gauge(source, "informer.cacheSize"));
    }

    spark.stop();
    if (!right) {
      System.exit(1);
    }
  }

  /**
   * The claims of the pod's token (never the token): whose it is and the pod it is bound to, so
   * that the test can check that the driver runs as its service account, with a projected token.
   */
  private static void sayWhatTheTokenIs() throws Exception {
    String token = Files.readString(SERVICE_ACCOUNT_DIR.resolve("token")).trim();
    JsonNode claims =
        new ObjectMapper()
            .readTree(
                new String(
                    Base64.getUrlDecoder().decode(token.split("\\.")[1]), StandardCharsets.UTF_8));
    say(
        "token-subject="
            + claims.path("sub").asText()
            + " token-pod="
            + claims.path("kubernetes.io").path("pod").path("name").asText()
            + " token-lifetime-s="
            + (claims.path("exp").asLong() - claims.path("iat").asLong())
            + " ca-present="
            + Files.exists(SERVICE_ACCOUNT_DIR.resolve("ca.crt"))
            + " namespace="
            + Files.readString(SERVICE_ACCOUNT_DIR.resolve("namespace")).trim());
  }

  private static long gauge(Source source, String name) {
    return ((Number) source.metricRegistry().getGauges().get(name).getValue()).longValue();
  }

  static void say(String line) {
    System.out.println(PREFIX + line);
    System.out.flush();
  }
}

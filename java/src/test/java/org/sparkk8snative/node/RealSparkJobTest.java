package org.sparkk8snative.node;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.fabric8.kubernetes.api.model.Pod;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkContext;
import org.apache.spark.metrics.source.Source;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerStageCompleted;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.Test;
import org.sparkk8snative.AuditLog;
import org.sparkk8snative.NativeInformer;
import org.sparkk8snative.TestPlane;

/**
 * A real Spark job on real executor pods: a driver in client mode on the node, a {@code k8s://}
 * master, executors that are processes of Spark's image on the node, and a groupBy whose shuffle
 * crosses them. Once with the native allocator and informer, once with Spark's own sources.
 */
class RealSparkJobTest extends NodeTest {
  private static final long ROWS = 3_000_000;
  private static final int EXECUTORS = 2;

  /**
   * How much later than with Spark's own sources the native ones may have the executors registered
   * after the driver starts: a Service is created before each executor pod, and the first of the
   * two drivers runs in a JVM still loading Spark (7.5 s with either source in the node benchmark).
   * A source that delivered the pods' start only on a lister round would add up to 30 s.
   */
  private static final long REGISTRATION_SLACK_MS = 10_000;

  /**
   * One driver's run: when its executors registered, and the job's time the first time (a cold JVM:
   * class loading, JIT) and the second.
   */
  private record JobRun(
      String appId,
      long registeredMillis,
      long firstJobMillis,
      long jobMillis,
      long shuffleBytes) {}

  private SparkConf conf(boolean nativeSources) {
    return node.sparkJobConf(
            "real-job-" + (nativeSources ? "native" : "legacy"), EXECUTORS, nativeSources)
        // Spark's own sources then LIST within the run (the count's positive control); the
        // native sources have no such setting and never LIST.
        .set("spark.kubernetes.executor.apiPollingInterval", "5s");
  }

  private static long gauge(Source source, String name) {
    return ((Number) source.metricRegistry().getGauges().get(name).getValue()).longValue();
  }

  private JobRun runJob(boolean nativeSources) {
    long began = System.nanoTime();
    SparkSession spark = SparkSession.builder().config(conf(nativeSources)).getOrCreate();
    SparkContext sc = spark.sparkContext();
    String appId = sc.applicationId();
    AtomicLong shuffleBytes = new AtomicLong();
    sc.addSparkListener(
        new SparkListener() {
          @Override
          public void onStageCompleted(SparkListenerStageCompleted stage) {
            shuffleBytes.addAndGet(
                stage.stageInfo().taskMetrics().shuffleWriteMetrics().bytesWritten());
          }
        });
    try {
      // The driver itself is one of the executor infos.
      ProcessNode.awaitExecutors(sc, EXECUTORS);
      long registeredMillis = (System.nanoTime() - began) / 1_000_000;
      for (Pod pod : plane.executorPods(appId)) {
        assertEquals("Running", pod.getStatus().getPhase(), pod.getMetadata().getName());
        assertTrue(pod.getStatus().getPodIP().startsWith("10.244.0."), "a pod IP of the node");
      }

      long[] millis = new long[2];
      for (int run = 0; run < millis.length; run++) {
        long jobBegan = System.nanoTime();
        List<Row> counts = ShuffleJob.countByKey(spark, ROWS, 6, ShuffleJob.KEYS);
        millis[run] = (System.nanoTime() - jobBegan) / 1_000_000;
        assertEveryKeyCounted(counts, ROWS, ShuffleJob.KEYS, "run " + (run + 1));
      }
      TestPlane.eventually(
          "the shuffle's stage metrics", Duration.ofSeconds(10), () -> shuffleBytes.get() > 0);

      if (nativeSources) {
        Source source = sc.env().metricsSystem().getSourcesByName("sparkK8sNative").head();
        assertEquals(1, gauge(source, "informer.synced"), "native informer Synced");
        assertEquals(EXECUTORS, gauge(source, "informer.cacheSize"), "the executors, cached");
      }
      return new JobRun(appId, registeredMillis, millis[0], millis[1], shuffleBytes.get());
    } finally {
      spark.stop();
    }
  }

  @Test
  void aShuffleJobRunsOnExecutorPodsTrackedByTheNativeInformerAndTheSameJobWithSparksOwnSources()
      throws Exception {
    BothSources<JobRun> both =
        BothSources.run(
            "real job",
            nativeSources -> {
              JobRun run = runJob(nativeSources);
              assertEquals(
                  0, NativeInformer.openInformers(), "the informer is closed with the driver");
              return run;
            });
    long nativeLists = AuditLog.snapshotSourceLists(plane, both.nativeRun.appId());
    long legacyLists = AuditLog.snapshotSourceLists(plane, both.legacyRun.appId());
    both.each(
        (mode, run) ->
            System.out.printf(
                "real job (%s sources): %d executors registered %d ms after the driver started; groupBy"
                    + " of %d rows over %d keys in %d ms (first run, cold JVM: %d ms), %d shuffle bytes;"
                    + " snapshot-source LISTs %d%n",
                mode,
                EXECUTORS,
                run.registeredMillis(),
                ROWS,
                ShuffleJob.KEYS,
                run.jobMillis(),
                run.firstJobMillis(),
                run.shuffleBytes(),
                run == both.nativeRun ? nativeLists : legacyLists));
    assertTrue(
        legacyLists > 0, "the audit log counts Spark's own polling LISTs of the same harness");
    assertEquals(0, nativeLists, "the native sources never LIST executor pods");
    both.nativeNoLaterThanLegacy(
        "executors registered, from the driver's start,",
        JobRun::registeredMillis,
        REGISTRATION_SLACK_MS);
  }
}

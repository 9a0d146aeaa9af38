package org.sparkk8snative.node;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaSparkContext;
import org.sparkk8snative.NativeLibrary;

/**
 * The application of {@link ClusterModeTest}'s tests of how the jar is installed: waits for its
 * executors, counts a small RDD on them, and says on a {@code cluster-mode-job: key=value ...} line
 * where this project's classes and native library were loaded from (a --packages jar in Ivy's
 * cache, the image's jars/ ...). It uses only Spark's Java API that every Spark line has, so that
 * the same class runs on Spark 3.5 and 4.x. Exits 1 on a wrong count, 2 when the executors never
 * registered. Argument: the number of elements.
 */
public final class InstallPathJob {
  private InstallPathJob() {}

  public static void main(String[] args) throws Exception {
    int elements = Integer.parseInt(args[0]);
    try (JavaSparkContext jsc = new JavaSparkContext(new SparkConf())) {
      int executors = jsc.getConf().getInt("spark.executor.instances", 2);
      long deadline = System.nanoTime() + 180_000_000_000L;
      // The driver is one of the executor infos.
      while (jsc.sc().statusTracker().getExecutorInfos().length < executors + 1) {
        if (System.nanoTime() > deadline) {
          ClusterModeJob.say("executors-registered=0");
          System.exit(2);
        }
        Thread.sleep(50);
      }
      List<Integer> numbers = new ArrayList<>();
      for (int i = 0; i < elements; i++) {
        numbers.add(i);
      }
      long count = jsc.parallelize(numbers, 4).count();
      ClusterModeJob.say(
          "executors-registered="
              + executors
              + " app-id="
              + jsc.sc().applicationId()
              + " answer="
              + (count == elements ? "right" : "wrong")
              + " classes-from="
              + NativeLibrary.class.getProtectionDomain().getCodeSource().getLocation().getPath()
              + " native-from="
              + NativeLibrary.loadedFrom());
      if (count != elements) {
        System.exit(1);
      }
    }
  }
}

package org.sparkk8snative.node;

import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import java.util.function.UnaryOperator;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkContext;
import org.apache.spark.sql.SparkSession;

/**
 * A client-mode Spark app on the node, with a driver pod made for it (the owner of its executor
 * Services, if it has them). Closing stops the app and deletes that pod.
 */
final class NodeJob implements AutoCloseable {
  final SparkSession spark;
  final SparkContext sc;
  final String appId;

  /** The shuffle bytes reducers fetched from other executors so far. */
  final AtomicLong remoteShuffleBytes;

  private final ProcessNode node;
  private final String driverPod;

  private NodeJob(ProcessNode node, String driverPod, SparkSession spark) {
    this.node = node;
    this.driverPod = driverPod;
    this.spark = spark;
    this.sc = spark.sparkContext();
    this.appId = sc.applicationId();
    this.remoteShuffleBytes = ProcessNode.remoteShuffleBytes(sc);
  }

  /**
   * Starts the app of {@code confOfDriverPod}'s settings, given the name of the driver pod made for
   * it; its executors may not have registered yet.
   */
  static NodeJob start(ProcessNode node, Function<String, SparkConf> confOfDriverPod) {
    String driverPod = node.createDriverPod();
    try {
      SparkConf conf = confOfDriverPod.apply(driverPod);
      return new NodeJob(node, driverPod, SparkSession.builder().config(conf).getOrCreate());
    } catch (RuntimeException | Error e) {
      node.plane().deletePod(driverPod);
      throw e;
    }
  }

  /**
   * Starts {@code appName} with {@code executors} executors, the native sources and executor
   * Services, {@code settings} applied on top, and waits for its executors to register.
   */
  static NodeJob withServices(
      ProcessNode node, String appName, int executors, UnaryOperator<SparkConf> settings) {
    NodeJob job =
        start(
            node, driverPod -> settings.apply(node.servicesJobConf(appName, executors, driverPod)));
    try {
      ProcessNode.awaitExecutors(job.sc, executors);
    } catch (RuntimeException | Error e) {
      job.close();
      throw e;
    }
    return job;
  }

  @Override
  public void close() {
    try {
      spark.stop();
    } finally {
      node.plane().deletePod(driverPod);
    }
  }
}

package org.sparkk8snative.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.sparkk8snative.TestPlane.eventually;

import io.fabric8.kubernetes.api.model.Pod;
import java.time.Duration;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkContext;
import org.junit.jupiter.api.Test;
import org.sparkk8snative.AuditLog;
import org.sparkk8snative.TestPlane;

/**
 * A real SparkContext on a k8s:// master (the local control plane), client mode, with the drop-in
 * allocator: Spark creates its executor pods, the test plays the kubelet, and the snapshots reach
 * Spark's allocator, which replaces a deleted executor. The apiserver's audit log shows who LISTs.
 */
class SparkDriverTest {
  private final TestPlane plane = TestPlane.get();

  private SparkConf conf(boolean nativeInformer) {
    SparkConf conf =
        plane
            .sparkDriverConf("spark-k8s-native-test")
            .set("spark.executor.instances", "2")
            .set("spark.kubernetes.allocation.batch.delay", "200ms")
            .set(
                "spark.kubernetes.allocation.pods.allocator",
                NativeExecutorPodsAllocator.class.getName())
            // Short polling so the legacy LISTs show within the test's window.
            .set("spark.kubernetes.executor.apiPollingInterval", "1s")
            .set("spark.kubernetes.executor.listerPollingInterval", "1s");
    if (nativeInformer) {
      conf.set("spark.kubernetes.executor.enableInformer", "true");
    }
    return conf;
  }

  /** Runs a driver for a while: two executors start, one is deleted, Spark replaces it. */
  private String runDriver(boolean nativeInformer) {
    SparkContext sc = new SparkContext(conf(nativeInformer));
    String appId = sc.applicationId();
    try {
      eventually(
          "Spark to create 2 executor pods",
          Duration.ofSeconds(60),
          () -> plane.executorPods(appId).size() == 2);
      if (nativeInformer) {
        eventually(
            "the metrics source, registered once the app has its id",
            Duration.ofSeconds(10),
            () -> sc.env().metricsSystem().getSourcesByName("sparkK8sNative").size() == 1);
      }
      for (Pod pod : plane.executorPods(appId)) {
        plane.setPhase(pod.getMetadata().getName(), "Running", 0);
      }
      Thread.sleep(3_000);
      String victim = plane.executorPods(appId).get(0).getMetadata().getName();
      plane.deletePod(victim);
      eventually(
          "Spark to request a replacement executor",
          Duration.ofSeconds(60),
          () ->
              plane.executorPods(appId).stream()
                  .anyMatch(p -> "3".equals(p.getMetadata().getLabels().get("spark-exec-id"))));
      Thread.sleep(4_000); // a few polling intervals, for the audit log
    } catch (InterruptedException e) {
      throw new AssertionError(e);
    } finally {
      sc.stop();
    }
    return appId;
  }

  @Test
  void withServicesOnAndNoBlockManagerPortTheDriverDoesNotStart() {
    SparkConf conf = conf(true).set("spark.kubernetes.executor.enableService", "true");
    // Spark wraps what the allocator's constructor throws ("External scheduler cannot be
    // instantiated").
    Throwable e =
        org.junit.jupiter.api.Assertions.assertThrows(
            Exception.class, () -> new SparkContext(conf));
    while (e.getCause() != null && !(e instanceof IllegalArgumentException)) {
      e = e.getCause();
    }
    assertTrue(
        e instanceof IllegalArgumentException
            && e.getMessage().startsWith("spark.blockManager.port"),
        String.valueOf(e));
  }

  /**
   * With executor Services on, in both modes: each executor pod's Service, owned by the driver pod.
   */
  @Test
  void everyExecutorSparkCreatesGetsItsServiceAndAdvertisesIt() throws Exception {
    for (boolean nativeInformer : new boolean[] {true, false}) {
      String driverName = TestPlane.uniqueAppId("driver");
      Pod driver =
          plane
              .admin()
              .pods()
              .inNamespace(plane.namespace())
              .resource(
                  new io.fabric8.kubernetes.api.model.PodBuilder()
                      .withNewMetadata()
                      .withName(driverName)
                      .addToLabels("spark-role", "driver")
                      .endMetadata()
                      .withNewSpec()
                      .withAutomountServiceAccountToken(false)
                      .addNewContainer()
                      .withName("spark-kubernetes-driver")
                      .withImage("spark:4.0.0")
                      .endContainer()
                      .endSpec()
                      .build())
              .create();
      SparkConf conf =
          conf(nativeInformer)
              .set("spark.kubernetes.executor.enableService", "true")
              .set("spark.blockManager.port", "7079")
              .set("spark.kubernetes.driver.pod.name", driverName)
              .set("spark.kubernetes.allocation.driver.readinessTimeout", "1s");
      SparkContext sc = new SparkContext(conf);
      String appId = sc.applicationId();
      try {
        eventually(
            "Spark to create 2 executor pods",
            Duration.ofSeconds(60),
            () -> plane.executorPods(appId).size() == 2);
        eventually(
            "a Service for each executor",
            Duration.ofSeconds(30),
            () ->
                plane
                        .admin()
                        .services()
                        .inNamespace(plane.namespace())
                        .withLabel("spark-app-selector", appId)
                        .list()
                        .getItems()
                        .size()
                    == 2);
        for (Pod pod : plane.executorPods(appId)) {
          String execId = pod.getMetadata().getLabels().get("spark-exec-id");
          String name = org.sparkk8snative.ExecutorServiceNames.serviceName(appId, execId);
          assertEquals(
              name, pod.getSpec().getHostname(), "the pod's hostname is its Service's name");
          assertTrue(
              pod.getSpec().getContainers().get(0).getEnv().stream()
                  .anyMatch(
                      e ->
                          e.getName().equals("EXECUTOR_SERVICE_NAME")
                              && name.equals(e.getValue())));
          io.fabric8.kubernetes.api.model.Service svc =
              plane.admin().services().inNamespace(plane.namespace()).withName(name).get();
          assertEquals(
              driver.getMetadata().getUid(),
              svc.getMetadata().getOwnerReferences().get(0).getUid());
          assertEquals(7079, svc.getSpec().getPorts().get(0).getPort());
          assertEquals(execId, svc.getSpec().getSelector().get("spark-exec-id"));
        }
      } finally {
        sc.stop();
        plane.deletePod(driverName);
      }
    }
  }

  @Test
  void theNativeSourcesDriveAnUnmodifiedSparkAndNeverListAfterTheFirstSync() throws Exception {
    String nativeApp = runDriver(true);
    String legacyApp = runDriver(false);
    long nativeLists = AuditLog.snapshotSourceLists(plane, nativeApp);
    long legacyLists = AuditLog.snapshotSourceLists(plane, legacyApp);
    System.out.printf(
        "LIST requests of executor pods by the snapshot sources: native %d, legacy %d%n",
        nativeLists, legacyLists);
    assertEquals(0, nativeLists, "the native sources never LIST (streaming list, then watch)");
    assertTrue(legacyLists >= 5, "Spark's polling source LISTs every second: " + legacyLists);
    assertEquals(
        0,
        org.sparkk8snative.NativeInformer.openInformers(),
        "the informer is closed with the driver");
  }
}

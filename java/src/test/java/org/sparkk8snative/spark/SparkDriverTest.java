package org.sparkk8snative.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.sparkk8snative.TestPlane.eventually;

import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.ResourceQuota;
import io.fabric8.kubernetes.api.model.ResourceQuotaBuilder;
import io.fabric8.kubernetes.api.model.ResourceQuotaStatusBuilder;
import io.fabric8.kubernetes.api.model.Service;
import java.time.Duration;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkContext;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.sparkk8snative.AuditLog;
import org.sparkk8snative.ExecutorServiceNames;
import org.sparkk8snative.TestPlane;

/**
 * A real SparkContext on a k8s:// master (the local control plane), client mode, with the drop-in
 * allocator: Spark creates its executor pods, the test plays the kubelet, and the snapshots reach
 * Spark's allocator, which replaces a deleted executor. The apiserver's audit log shows who LISTs.
 */
@Tag("every-line")
class SparkDriverTest {
  private final TestPlane plane = TestPlane.get();

  /** Waits for the two executor pods Spark creates ({@code spark.executor.instances}). */
  private void awaitBothExecutorPods(String appId) {
    eventually(
        "Spark to create 2 executor pods",
        Duration.ofSeconds(60),
        () -> plane.executorPods(appId).size() == 2);
  }

  private SparkConf conf(boolean nativeInformer) {
    SparkConf conf =
        plane
            .sparkDriverConf("spark-k8s-native-test")
            .set("spark.executor.instances", "2")
            .set("spark.kubernetes.allocation.batch.delay", "200ms")
            // No executor of this plane ever registers (no kubelet): do not wait 30 s for them
            // in the SparkContext's constructor.
            .set("spark.scheduler.maxRegisteredResourcesWaitingTime", "1s")
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
      awaitBothExecutorPods(appId);
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
                  .anyMatch(p -> "3".equals(TestPlane.executorId(p))));
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

  private Pod createDriverPod() {
    return plane.createDriver(TestPlane.uniqueAppId("driver"));
  }

  private SparkConf servicesConf(boolean nativeInformer, Pod driver) {
    return conf(nativeInformer)
        .set("spark.kubernetes.executor.enableService", "true")
        .set("spark.blockManager.port", "7079")
        .set("spark.kubernetes.driver.pod.name", driver.getMetadata().getName())
        .set("spark.kubernetes.native.service.deleteAfter", "1s")
        .set("spark.kubernetes.allocation.driver.readinessTimeout", "1s");
  }

  /**
   * With executor Services on, in both modes, on every Spark line (no allocator override is
   * involved): each executor's Service exists, owned by the driver pod, before the executor
   * advertises its name; the Service of a deleted executor is deleted after {@code deleteAfter}
   * (told by the informer, or by Spark's own snapshots with the informer off).
   */
  @Test
  void everyExecutorSparkCreatesGetsItsServiceAndAdvertisesIt() throws Exception {
    for (boolean nativeInformer : new boolean[] {true, false}) {
      Pod driver = createDriverPod();
      SparkContext sc = new SparkContext(servicesConf(nativeInformer, driver));
      String appId = sc.applicationId();
      try {
        awaitBothExecutorPods(appId);
        assertEquals(
            2, plane.executorServices(appId).size(), "each Service exists once its pod does");
        for (Pod pod : plane.executorPods(appId)) {
          String execId = TestPlane.executorId(pod);
          String name = ExecutorServiceNames.serviceName(appId, execId);
          assertEquals(
              name, pod.getSpec().getHostname(), "the pod's hostname is its Service's name");
          assertEquals(Boolean.FALSE, pod.getSpec().getEnableServiceLinks());
          assertTrue(
              pod.getSpec().getContainers().get(0).getEnv().stream()
                  .anyMatch(
                      e ->
                          e.getName().equals("EXECUTOR_SERVICE_NAME")
                              && name.equals(e.getValue())));
          Service svc =
              plane.admin().services().inNamespace(plane.namespace()).withName(name).get();
          assertEquals(
              driver.getMetadata().getUid(),
              svc.getMetadata().getOwnerReferences().get(0).getUid());
          assertEquals(7079, svc.getSpec().getPorts().get(0).getPort());
          assertEquals(execId, svc.getSpec().getSelector().get("spark-exec-id"));
        }
        Pod victim = plane.executorPods(appId).get(0);
        String victimService =
            ExecutorServiceNames.serviceName(appId, TestPlane.executorId(victim));
        plane.deletePod(victim.getMetadata().getName());
        eventually(
            "the Service of the deleted executor to be deleted after deleteAfter (1 s)",
            Duration.ofSeconds(20),
            () ->
                plane.executorServices(appId).stream()
                    .noneMatch(x -> x.getMetadata().getName().equals(victimService)));
      } finally {
        sc.stop();
        plane.deletePod(driver.getMetadata().getName());
      }
    }
  }

  /**
   * A Service the apiserver refuses (here a quota of 0 Services; also a 429 storm or an apiserver
   * that is down) must not make its executor unreachable: the executor advertises its pod IP, as
   * without Services, and the driver runs on.
   */
  @Test
  void anExecutorWhoseServiceCannotBeCreatedAdvertisesItsPodIp() {
    ResourceQuota noServices =
        new ResourceQuotaBuilder()
            .withNewMetadata()
            .withName("no-services")
            .endMetadata()
            .withNewSpec()
            .addToHard("services", new Quantity("0"))
            .endSpec()
            .build();
    Pod driver = createDriverPod();
    ResourceQuota created =
        plane.admin().resourceQuotas().inNamespace(plane.namespace()).resource(noServices).create();
    // What the quota controller would write (this plane runs none): the quota admission enforces
    // status.hard, and counts the Services it admits into status.used.
    created.setStatus(
        new ResourceQuotaStatusBuilder()
            .addToHard("services", new Quantity("0"))
            .addToUsed("services", new Quantity("0"))
            .build());
    plane.admin().resourceQuotas().inNamespace(plane.namespace()).resource(created).updateStatus();
    SparkContext sc = null;
    try {
      sc = new SparkContext(servicesConf(true, driver));
      String appId = sc.applicationId();
      awaitBothExecutorPods(appId);
      assertEquals(0, plane.executorServices(appId).size(), "the quota refused every Service");
      for (Pod pod : plane.executorPods(appId)) {
        String service = ExecutorServiceNames.serviceName(appId, TestPlane.executorId(pod));
        assertTrue(
            !service.equals(pod.getSpec().getHostname()),
            "the pod keeps the hostname Spark gave it: " + pod.getSpec().getHostname());
        EnvVar podIp =
            pod.getSpec().getContainers().get(0).getEnv().stream()
                .filter(e -> e.getName().equals("SPARK_EXECUTOR_POD_IP"))
                .findFirst()
                .get();
        assertEquals(
            "status.podIP",
            podIp.getValueFrom().getFieldRef().getFieldPath(),
            "the executor advertises its pod IP, as Spark sets it");
        assertTrue(
            pod.getSpec().getContainers().get(0).getEnv().stream()
                .noneMatch(e -> e.getName().equals("EXECUTOR_SERVICE_NAME")));
      }
    } finally {
      if (sc != null) {
        sc.stop();
      }
      plane.admin().resourceQuotas().inNamespace(plane.namespace()).resource(noServices).delete();
      plane.deletePod(driver.getMetadata().getName());
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
    assertEquals(
        0,
        DriverLifecycle.registeredShutdownHooks(),
        "a stopped driver leaves no shutdown hook (nor the allocator it holds) in the JVM");
  }
}

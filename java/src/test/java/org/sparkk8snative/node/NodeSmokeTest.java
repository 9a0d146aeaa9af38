package org.sparkk8snative.node;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.fabric8.kubernetes.api.model.ContainerStateTerminated;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.ResourceRequirementsBuilder;
import io.fabric8.kubernetes.api.model.ServiceBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.Watch;
import io.fabric8.kubernetes.client.Watcher;
import io.fabric8.kubernetes.client.WatcherException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.sparkk8snative.TestPlane;

/**
 * What the node must do before a Spark executor can run on it: cluster DNS, a ClusterIP Service
 * that reaches a pod (kube-proxy), container logs through the apiserver, a memory limit the kernel
 * enforces (exit 137, OOMKilled), and graceful deletion (SIGTERM, SIGKILL after the grace period).
 */
class NodeSmokeTest extends NodeTest {
  private final KubernetesClient kube = plane.admin();
  private final String ns = plane.namespace();
  private final List<String> created = new CopyOnWriteArrayList<>();

  @AfterEach
  void deleteWhatTheTestMade() {
    for (String name : created) {
      kube.pods().inNamespace(ns).withName(name).withGracePeriod(0).delete();
      kube.services().inNamespace(ns).withName(name).delete();
    }
  }

  private Pod hostPod(String name, Map<String, String> labels, String... command) {
    return kube.pods().inNamespace(ns).resource(hostPodSpec(name, labels, command)).create();
  }

  /** A pod of the node's host image running {@code command}, deleted after the test. */
  private Pod hostPodSpec(String name, Map<String, String> labels, String... command) {
    created.add(name);
    return new PodBuilder()
        .withNewMetadata()
        .withName(name)
        .withLabels(labels)
        .endMetadata()
        .withNewSpec()
        .withRestartPolicy("Never")
        .addNewContainer()
        .withName("main")
        .withImage(ProcessNode.HOST_IMAGE)
        .withCommand(command)
        .endContainer()
        .endSpec()
        .build();
  }

  private static ContainerStateTerminated terminated(Pod pod) {
    return pod.getStatus().getContainerStatuses().get(0).getState().getTerminated();
  }

  @Test
  void clusterDnsResolvesServicesThroughTheSearchPathAndLogsReachTheApiserver() {
    String name = TestPlane.uniqueAppId("dns");
    hostPod(
        name,
        Map.of(),
        "sh",
        "-c",
        "getent hosts kubernetes.default.svc.cluster.local && getent hosts kubernetes.default"
            + " && cat /etc/resolv.conf && ! getent hosts example.com");
    Pod ended = node.awaitEnded(name, Duration.ofSeconds(60));
    String log = kube.pods().inNamespace(ns).withName(name).getLog();
    assertEquals("Succeeded", ended.getStatus().getPhase(), log);
    assertTrue(log.contains("10.96.0.1"), "the kubernetes Service's ClusterIP, resolved: " + log);
    assertTrue(log.contains("search spark.svc.cluster.local"), log);
  }

  @Test
  void aClusterIpServiceReachesItsPodFromAnotherPodAndFromTheNode() throws Exception {
    String web = TestPlane.uniqueAppId("web");
    Pod server =
        hostPod(
            web, Map.of("app", web), "python3", "-m", "http.server", "8080", "--bind", "0.0.0.0");
    kube.services()
        .inNamespace(ns)
        .resource(
            new ServiceBuilder()
                .withNewMetadata()
                .withName(web)
                .endMetadata()
                .withNewSpec()
                .withSelector(Map.of("app", web))
                .addNewPort()
                .withPort(80)
                .withNewTargetPort(8080)
                .endPort()
                .endSpec()
                .build())
        .create();
    TestPlane.eventually(
        "the web pod to run",
        Duration.ofSeconds(60),
        () ->
            "Running"
                .equals(kube.pods().inNamespace(ns).withName(web).get().getStatus().getPhase()));
    String clusterIp = kube.services().inNamespace(ns).withName(web).get().getSpec().getClusterIP();

    String client = TestPlane.uniqueAppId("client");
    hostPod(
        client,
        Map.of(),
        "python3",
        "-c",
        "import time, urllib.request\n"
            + "for attempt in range(100):\n"
            + "    try:\n"
            + "        print(urllib.request.urlopen('http://"
            + web
            + "/', timeout=2).status); break\n"
            + "    except Exception as e:\n"
            + "        print('retry', e); time.sleep(0.2)\n"
            + "else:\n"
            + "    raise SystemExit(1)\n");
    Pod ended = node.awaitEnded(client, Duration.ofSeconds(60));
    String log = kube.pods().inNamespace(ns).withName(client).getLog();
    assertEquals("Succeeded", ended.getStatus().getPhase(), log);
    assertTrue(log.contains("200"), log);

    // From the node (this JVM), by ClusterIP: kube-proxy's rules apply to the node too.
    HttpResponse<String> fromNode =
        HttpClient.newHttpClient()
            .send(
                HttpRequest.newBuilder(URI.create("http://" + clusterIp + "/"))
                    .timeout(Duration.ofSeconds(10))
                    .build(),
                HttpResponse.BodyHandlers.ofString());
    assertEquals(200, fromNode.statusCode());
    assertTrue(server.getMetadata().getName().equals(web));
  }

  @Test
  void aContainerOverItsMemoryLimitIsOomKilledWithExitCode137() {
    String name = TestPlane.uniqueAppId("oom");
    Pod pod =
        hostPodSpec(
            name, Map.of(), "python3", "-c", "b = bytearray(512 * 1024 * 1024); print(len(b))");
    pod.getSpec()
        .getContainers()
        .get(0)
        .setResources(
            new ResourceRequirementsBuilder()
                .withLimits(Map.of("memory", new Quantity("64Mi")))
                .build());
    kube.pods().inNamespace(ns).resource(pod).create();
    Pod ended = node.awaitEnded(name, Duration.ofSeconds(60));
    assertEquals("Failed", ended.getStatus().getPhase());
    assertEquals(137, terminated(ended).getExitCode());
    assertEquals("OOMKilled", terminated(ended).getReason());
  }

  /** The pod's last status before it is removed, seen through a watch. */
  private Pod deleteAndWatchUntilGone(String name, long graceSeconds) throws Exception {
    List<Pod> seen = new CopyOnWriteArrayList<>();
    boolean[] gone = {false};
    try (Watch watch =
        kube.pods()
            .inNamespace(ns)
            .withName(name)
            .watch(
                new Watcher<Pod>() {
                  @Override
                  public void eventReceived(Action action, Pod pod) {
                    seen.add(pod);
                    if (action == Action.DELETED) {
                      gone[0] = true;
                    }
                  }

                  @Override
                  public void onClose(WatcherException cause) {}
                })) {
      long began = System.nanoTime();
      kube.pods().inNamespace(ns).withName(name).withGracePeriod(graceSeconds).delete();
      TestPlane.eventually(
          "pod " + name + " to be removed", Duration.ofSeconds(graceSeconds + 30), () -> gone[0]);
      System.out.printf(
          "pod %s (grace %ds) removed %d ms after the delete%n",
          name, graceSeconds, (System.nanoTime() - began) / 1_000_000);
    }
    return seen.get(seen.size() - 1);
  }

  private void awaitRunning(String name) {
    TestPlane.eventually(
        name + " to run",
        Duration.ofSeconds(60),
        () ->
            "Running"
                .equals(kube.pods().inNamespace(ns).withName(name).get().getStatus().getPhase()));
  }

  @Test
  void aDeletedPodGetsSigtermAndIsRemovedOnceItsProcessIsGone() throws Exception {
    String name = TestPlane.uniqueAppId("graceful");
    hostPod(name, Map.of(), "sleep", "1000");
    awaitRunning(name);
    long began = System.nanoTime();
    Pod last = deleteAndWatchUntilGone(name, 30);
    assertTrue(
        System.nanoTime() - began < Duration.ofSeconds(10).toNanos(),
        "removed once the process exited, not after the 30 s grace period");
    assertEquals(143, terminated(last).getExitCode(), "SIGTERM");
  }

  @Test
  void aPodThatIgnoresSigtermIsKilledAfterItsGracePeriod() throws Exception {
    String name = TestPlane.uniqueAppId("stubborn");
    hostPod(name, Map.of(), "sh", "-c", "trap '' TERM; sleep 1000");
    awaitRunning(name);
    long began = System.nanoTime();
    Pod last = deleteAndWatchUntilGone(name, 2);
    // The agent kills 0.5 s before the end of the grace period (virtual-kubelet removes the
    // object at its end), so that the exit code is seen first.
    assertTrue(System.nanoTime() - began >= Duration.ofMillis(1500).toNanos(), "grace honoured");
    assertEquals(137, terminated(last).getExitCode(), "SIGKILL after the grace period");
  }

  private static long millisToFailConnecting(String ip, int port, int timeoutMillis) {
    long began = System.nanoTime();
    try (java.net.Socket socket = new java.net.Socket()) {
      socket.connect(new java.net.InetSocketAddress(ip, port), timeoutMillis);
      throw new AssertionError("connected to " + ip + ":" + port);
    } catch (java.io.IOException expected) {
      return (System.nanoTime() - began) / 1_000_000;
    }
  }

  private String runningPodIp(String name) {
    awaitRunning(name);
    return kube.pods().inNamespace(ns).withName(name).get().getStatus().getPodIP();
  }

  @Test
  void aStoppedPodAnswersNothingUntilItContinues() throws Exception {
    String name = TestPlane.uniqueAppId("paused");
    hostPod(name, Map.of(), "python3", "-m", "http.server", "8080", "--bind", "0.0.0.0");
    String ip = runningPodIp(name);
    HttpClient http = HttpClient.newHttpClient();
    HttpRequest get =
        HttpRequest.newBuilder(URI.create("http://" + ip + ":8080/"))
            .timeout(Duration.ofSeconds(2))
            .build();
    TestPlane.eventually(
        "the server to listen",
        Duration.ofSeconds(20),
        () -> {
          try {
            return http.send(get, HttpResponse.BodyHandlers.discarding()).statusCode() == 200;
          } catch (Exception e) {
            return false;
          }
        });
    node.signal(name, "STOP");
    org.junit.jupiter.api.Assertions.assertThrows(
        java.net.http.HttpTimeoutException.class,
        () -> http.send(get, HttpResponse.BodyHandlers.discarding()),
        "a hung (SIGSTOPped) pod accepts nothing");
    node.signal(name, "CONT");
    assertEquals(200, http.send(get, HttpResponse.BodyHandlers.discarding()).statusCode());
  }

  @Test
  void trafficToAGonePodsIpIsRefusedFastOnTheBridgeAndDroppedWhenAskedTo() {
    String name = TestPlane.uniqueAppId("gone");
    hostPod(name, Map.of(), "sleep", "1000");
    String ip = runningPodIp(name);
    kube.pods().inNamespace(ns).withName(name).withGracePeriod(0).delete();
    TestPlane.eventually(
        "the pod to be gone",
        Duration.ofSeconds(30),
        () -> kube.pods().inNamespace(ns).withName(name).get() == null);
    // On one bridge a gone IP fails in about 3 s (ARP); a routed network drops it silently.
    long onTheBridge = millisToFailConnecting(ip, 7079, 8_000);
    node.dropTrafficToGonePods(true);
    try {
      long dropped = millisToFailConnecting(ip, 7079, 8_000);
      System.out.printf(
          "connect to a gone pod IP: fails after %d ms on the bridge, %d ms when dropped%n",
          onTheBridge, dropped);
      assertTrue(onTheBridge < 6_000, "no route to host, fast: " + onTheBridge);
      assertTrue(dropped >= 7_500, "dropped: only the connect timeout ends it: " + dropped);
    } finally {
      node.dropTrafficToGonePods(false);
    }
  }
}

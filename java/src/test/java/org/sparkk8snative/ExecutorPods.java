package org.sparkk8snative;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.fabric8.kubernetes.api.model.ContainerStatus;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodStatus;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The test kubelet's driver and executor pods and statuses: the shapes of {@code tests/pods/},
 * which the Rust tests' kubelet reads too, on the test classpath as {@code pods/}.
 */
public final class ExecutorPods {
  private static final KubernetesSerialization KUBE_JSON = new KubernetesSerialization();
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Map<String, String> TEMPLATES = new ConcurrentHashMap<>();

  private ExecutorPods() {}

  /** A driver pod named {@code <appId>-driver} that runs nowhere: what owns executor Services. */
  public static Pod driverPod(String appId) {
    return KUBE_JSON.unmarshal(render("driver-pod.json", Map.of("app", appId)), Pod.class);
  }

  /** An executor pod as Spark builds it, reduced to what Spark's state logic reads. */
  public static Pod executorPod(String appId, long execId) {
    return KUBE_JSON.unmarshal(
        render("executor-pod.json", Map.of("app", appId, "exec", Long.toString(execId))),
        Pod.class);
  }

  /** An executor pod the size Spark 4.x makes it: for figures that grow with the pod's size. */
  public static Pod sparkShapedExecutorPod(String appId, long execId) {
    return KUBE_JSON.unmarshal(
        render("spark-executor-pod.json", Map.of("app", appId, "exec", Long.toString(execId))),
        Pod.class);
  }

  /** The status a kubelet writes for a running Spark-shaped executor: an IP of its own. */
  public static PodStatus sparkShapedRunningStatus(long execId) {
    String ip = "10.244." + (execId / 250) % 250 + "." + (execId % 250 + 2);
    return KUBE_JSON.unmarshal(
        render("spark-executor-running-status.json", Map.of("ip", ip)), PodStatus.class);
  }

  /**
   * The status the kubelet writes for an executor pod in {@code phase}: Pending, Running,
   * Succeeded, Failed, or RunningExited (Running, its container exited); {@code exitCode} is the
   * terminated container's.
   */
  public static PodStatus status(String phase, int exitCode) {
    try {
      JsonNode status = JSON.readTree(render("executor-statuses.json", Map.of())).get(phase);
      if (status == null) {
        throw new IllegalArgumentException("no executor status for phase " + phase);
      }
      JsonNode terminated = status.at("/containerStatuses/0/state/terminated");
      if (terminated instanceof ObjectNode t) {
        t.put("exitCode", exitCode);
      }
      return KUBE_JSON.unmarshal(JSON.writeValueAsString(status), PodStatus.class);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * A container's status as the kubelet writes it for an executor pod in {@code phase} ({@link
   * #status}), for the container {@code name}: a pod with sidecars shows each container so.
   */
  public static ContainerStatus containerStatus(String phase, int exitCode, String name) {
    ContainerStatus container = status(phase, exitCode).getContainerStatuses().get(0);
    container.setName(name);
    container.setImage(name);
    return container;
  }

  /** A template of {@code tests/pods/} with its {@code {{name}}} placeholders replaced. */
  private static String render(String template, Map<String, String> values) {
    String text = TEMPLATES.computeIfAbsent(template, ExecutorPods::read);
    for (Map.Entry<String, String> v : values.entrySet()) {
      text = text.replace("{{" + v.getKey() + "}}", v.getValue());
    }
    return text;
  }

  /** A template's text, read once: the benchmarks render thousands of pods from one. */
  private static String read(String template) {
    try (InputStream in = ExecutorPods.class.getResourceAsStream("/pods/" + template)) {
      if (in == null) {
        throw new IllegalStateException(
            "pods/" + template + " is not on the test classpath (tests/pods/, java/pom.xml)");
      }
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}

package org.sparkk8snative;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodList;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.ConfigBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import io.fabric8.kubernetes.client.dsl.FilterWatchListDeletable;
import io.fabric8.kubernetes.client.dsl.PodResource;
import java.io.File;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import java.util.stream.Stream;
import org.apache.spark.deploy.k8s.Constants;

/**
 * The real local control plane for JVM tests: the one named by {@code
 * -Dspark.k8s.native.test.planeEnv} (started by scripts/test.sh), or one started for this JVM. Also
 * plays the kubelet for executor pods, with Spark's labels.
 */
public final class TestPlane {
  /** The restricted identity's user name ({@code restrictedUser} in tests/localplane/plane.go). */
  public static final String RESTRICTED_USER = "spark-driver";

  private static TestPlane shared;
  private static final AtomicInteger COUNTER = new AtomicInteger();
  private static final AtomicInteger PLANES = new AtomicInteger();

  private final Map<String, String> env;
  private final KubernetesClient admin;
  private final HttpClient http = HttpClient.newHttpClient();

  /**
   * Stops the plane when this JVM started it for one test class only; null for the shared plane.
   */
  private Runnable stopper;

  private TestPlane(Map<String, String> env) {
    this(env, Config.DEFAULT_REQUEST_RETRY_BACKOFFLIMIT);
  }

  private TestPlane(Map<String, String> env, int requestRetries) {
    this.env = env;
    Config config =
        new ConfigBuilder()
            .withMasterUrl(env.get("LOCALPLANE_APISERVER"))
            .withCaCertFile(env.get("LOCALPLANE_CA_FILE"))
            .withOauthToken(read(env.get("LOCALPLANE_ADMIN_TOKEN_FILE")))
            .withNamespace(namespace())
            .withRequestRetryBackoffLimit(requestRetries)
            .build();
    this.admin = new KubernetesClientBuilder().withConfig(config).build();
  }

  /**
   * The same plane, with an admin client that never retries on its own (fabric8 backs off for up to
   * minutes while the apiserver restarts), for callers that retry as they see fit.
   */
  public TestPlane failingFast() {
    return new TestPlane(env, 0);
  }

  public static synchronized TestPlane get() {
    if (shared == null) {
      String file = System.getProperty("spark.k8s.native.test.planeEnv", "");
      shared = new TestPlane(file.isEmpty() ? startOwn("jvm").env : readEnv(Paths.get(file)));
    }
    return shared;
  }

  /**
   * Starts a plane of the caller's own (e.g. {@code "--watch-cache=false"}), in
   * target/localplane-{@code name}-PID-N, as a child process that dies with this JVM; {@link
   * #stop()} stops it, else the JVM's exit does.
   */
  public static TestPlane start(String name, String... localplaneArgs) {
    OwnPlane own = startOwn(name, localplaneArgs);
    TestPlane plane = new TestPlane(own.env);
    plane.stopper = own.stopper;
    return plane;
  }

  /** Stops a plane started by {@link #start}; the shared plane is left alone. */
  public void stop() {
    if (stopper != null) {
      admin.close();
      stopper.run();
    }
  }

  private record OwnPlane(Map<String, String> env, Runnable stopper) {}

  /**
   * Runs {@code localplane run --exit-with-parent} as a child of this JVM, so that the plane dies
   * with the JVM even when the JVM crashes (a {@code localplane start} daemon would outlive it);
   * its directory is removed when it stops, its own log (the directory's name + .log) is kept.
   */
  private static OwnPlane startOwn(String name, String... localplaneArgs) {
    try {
      Path root = Paths.get(System.getProperty("user.dir")).getParent();
      Process build =
          new ProcessBuilder("bash", root.resolve("scripts/localplane-build.sh").toString())
              .redirectError(ProcessBuilder.Redirect.INHERIT)
              .start();
      String bin = new String(build.getInputStream().readAllBytes()).trim();
      if (build.waitFor() != 0) {
        throw new IllegalStateException("scripts/localplane-build.sh failed");
      }
      // A directory (and log) per plane: a test class may start one after another.
      Path dir =
          root.resolve(
              "target/localplane-"
                  + name
                  + "-"
                  + ProcessHandle.current().pid()
                  + "-"
                  + PLANES.incrementAndGet());
      Path log = dir.resolveSibling(dir.getFileName() + ".log");
      deleteRecursively(dir); // left by an earlier JVM of the same pid
      Files.createDirectories(dir);
      List<String> command =
          new ArrayList<>(
              List.of(
                  bin + "/localplane",
                  "run",
                  "--dir",
                  dir.toString(),
                  "--exit-with-parent",
                  "--remove-dir-on-exit"));
      command.addAll(List.of(localplaneArgs));
      long began = System.nanoTime();
      Process plane =
          new ProcessBuilder(command)
              .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")))
              .redirectErrorStream(true)
              .redirectOutput(log.toFile())
              .start();
      AtomicBoolean stopped = new AtomicBoolean();
      Runnable stopper =
          () -> {
            if (stopped.compareAndSet(false, true)) {
              stopChild(plane);
            }
          };
      Path envFile = dir.resolve("plane.env");
      long deadline = began + TimeUnit.SECONDS.toNanos(180);
      while (!Files.exists(envFile)) {
        if (!plane.isAlive()) {
          throw new IllegalStateException(
              "localplane exited ("
                  + plane.exitValue()
                  + ") before it was ready; "
                  + logs(log, dir));
        }
        if (System.nanoTime() > deadline) {
          String logs = logs(log, dir);
          stopper.run();
          throw new IllegalStateException("localplane not ready after 180 s; " + logs);
        }
        Thread.sleep(100);
      }
      // Also stops it on a normal JVM exit, before the JVM is gone (--exit-with-parent is the net).
      Runtime.getRuntime().addShutdownHook(new Thread(stopper));
      System.err.printf(
          "[TestPlane] local plane up in %.1fs at %s%n", (System.nanoTime() - began) / 1e9, dir);
      return new OwnPlane(readEnv(envFile), stopper);
    } catch (IOException | InterruptedException e) {
      throw new IllegalStateException("could not start a local control plane", e);
    }
  }

  /** SIGTERM lets the plane stop its children and remove its directory; SIGKILL if it hangs. */
  private static void stopChild(Process plane) {
    plane.destroy();
    try {
      if (!plane.waitFor(30, TimeUnit.SECONDS)) {
        plane.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
      }
    } catch (InterruptedException e) {
      plane.destroyForcibly();
      Thread.currentThread().interrupt();
    }
  }

  private static void deleteRecursively(Path dir) throws IOException {
    if (Files.exists(dir)) {
      try (Stream<Path> paths = Files.walk(dir)) {
        for (Path p : paths.sorted(Comparator.reverseOrder()).toList()) {
          Files.deleteIfExists(p);
        }
      }
    }
  }

  /** The launcher's log, and the end of the apiserver's (where a failed start says why). */
  private static String logs(Path launcherLog, Path dir) {
    StringBuilder out = new StringBuilder("its log " + launcherLog + ":\n");
    try {
      out.append(Files.readString(launcherLog));
      Path apiserver = dir.resolve("kube-apiserver.log");
      if (Files.exists(apiserver)) {
        List<String> lines = Files.readAllLines(apiserver);
        out.append("the end of ").append(apiserver).append(":\n");
        lines
            .subList(Math.max(0, lines.size() - 30), lines.size())
            .forEach(l -> out.append(l).append('\n'));
      }
    } catch (IOException e) {
      out.append("(unreadable: ").append(e).append(")\n");
    }
    return out.toString();
  }

  private static Map<String, String> readEnv(Path file) {
    Map<String, String> env = new HashMap<>();
    try {
      for (String line : Files.readAllLines(file)) {
        int eq = line.indexOf('=');
        if (eq > 0) {
          env.put(line.substring(0, eq), line.substring(eq + 1));
        }
      }
    } catch (IOException e) {
      throw new IllegalStateException("cannot read " + file, e);
    }
    return env;
  }

  static String read(String file) {
    try {
      return Files.readString(Paths.get(file)).trim();
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }

  public String var(String key) {
    return env.get(key);
  }

  public String namespace() {
    return env.get("LOCALPLANE_NAMESPACE");
  }

  public String apiserverUrl() {
    return env.get("LOCALPLANE_APISERVER");
  }

  public KubernetesClient admin() {
    return admin;
  }

  /**
   * What a driver in client mode would have: master, namespace, CA, the restricted identity's
   * token.
   */
  public Map<String, String> sparkConf(boolean throughProxy) {
    Map<String, String> conf = new HashMap<>();
    String url = throughProxy ? env.get("LOCALPLANE_PROXY") : env.get("LOCALPLANE_APISERVER");
    conf.put("spark.master", "k8s://" + url);
    conf.put("spark.kubernetes.namespace", namespace());
    conf.put("spark.kubernetes.authenticate.caCertFile", env.get("LOCALPLANE_CA_FILE"));
    conf.put(
        "spark.kubernetes.authenticate.oauthTokenFile",
        env.get("LOCALPLANE_RESTRICTED_TOKEN_FILE"));
    return conf;
  }

  /** The Spark configuration of a driver that reaches the HA plane (--ha) through its balancer. */
  public Map<String, String> sparkConfThroughLoadBalancer() {
    Map<String, String> conf = sparkConf(false);
    conf.put("spark.master", "k8s://" + env.get("LOCALPLANE_LOAD_BALANCER"));
    return conf;
  }

  /** Calls the plane's fault controls (see tests/localplane/control.go). */
  public String control(String method, String path) {
    return call("LOCALPLANE_CONTROL", method, path);
  }

  /**
   * Calls a control endpoint of the plane, named by its plane.env key (e.g. the node agent's,
   * LOCALPLANE_NODE_CONTROL), failing unless it answers 200.
   */
  public String call(String endpointKey, String method, String path) {
    try {
      HttpRequest request =
          HttpRequest.newBuilder(URI.create(env.get(endpointKey) + path))
              .method(method, HttpRequest.BodyPublishers.noBody())
              .timeout(Duration.ofSeconds(120))
              .build();
      HttpResponse<String> response = http.send(request, HttpResponse.BodyHandlers.ofString());
      if (response.statusCode() != 200) {
        throw new IllegalStateException(method + " " + path + ": " + response.body());
      }
      return response.body();
    } catch (IOException | InterruptedException e) {
      throw new IllegalStateException(method + " " + path, e);
    }
  }

  public static String uniqueAppId(String tag) {
    return "spark-" + tag + "-" + Long.toHexString(System.nanoTime()) + COUNTER.incrementAndGet();
  }

  public static String podName(String appId, long execId) {
    return appId + "-exec-" + execId;
  }

  /**
   * What a Spark driver on this plane needs (master, namespace, the restricted identity, a local
   * driver address, no UI); callers add what their run is about.
   */
  public org.apache.spark.SparkConf sparkDriverConf(String appName) {
    return new org.apache.spark.SparkConf(false)
        .setMaster("k8s://" + apiserverUrl())
        .setAppName(appName)
        .set("spark.kubernetes.namespace", namespace())
        .set("spark.kubernetes.authenticate.caCertFile", var("LOCALPLANE_CA_FILE"))
        .set(
            "spark.kubernetes.authenticate.oauthTokenFile", var("LOCALPLANE_RESTRICTED_TOKEN_FILE"))
        .set("spark.kubernetes.container.image", "spark:4.0.0")
        .set("spark.driver.host", "127.0.0.1")
        .set("spark.driver.bindAddress", "127.0.0.1")
        .set("spark.ui.enabled", "false");
  }

  /** The executor id Spark labels an executor's pod with. */
  public static String executorId(Pod pod) {
    return pod.getMetadata().getLabels().get(Constants.SPARK_EXECUTOR_ID_LABEL());
  }

  /** The executor pods Spark made for an app, as the apiserver has them now. */
  public List<Pod> executorPods(String appId) {
    return executorPodsOf(appId).list().getItems();
  }

  /** The admin's query of an app's executor pods, by Spark's labels: to list, narrow or watch. */
  public FilterWatchListDeletable<Pod, PodList, PodResource> executorPodsOf(String appId) {
    return admin
        .pods()
        .inNamespace(namespace())
        .withLabel("spark-app-selector", appId)
        .withLabel("spark-role", "executor");
  }

  /**
   * The executor Services made for an app, as the apiserver has them now (a cluster-mode driver's
   * own headless Service is not one).
   */
  public List<Service> executorServices(String appId) {
    return admin
        .services()
        .inNamespace(namespace())
        .withLabel("spark-app-selector", appId)
        .withLabel("spark-role", "executor-service")
        .list()
        .getItems();
  }

  /** The pod of one of the app's executors, by the executor id Spark labels it with. */
  public Pod executorPod(String appId, String execId) {
    return executorPods(appId).stream()
        .filter(p -> execId.equals(executorId(p)))
        .findFirst()
        .orElseThrow(() -> new AssertionError("no pod of executor " + execId));
  }

  /** A driver pod named {@code <appId>-driver}: what owns an app's executor Services. */
  public Pod createDriver(String appId) {
    return admin.pods().inNamespace(namespace()).resource(ExecutorPods.driverPod(appId)).create();
  }

  /** Creates an executor pod of the app, as Spark would ({@link ExecutorPods#executorPod}). */
  public Pod createExecutor(String appId, long execId) {
    return admin
        .pods()
        .inNamespace(namespace())
        .resource(ExecutorPods.executorPod(appId, execId))
        .create();
  }

  /**
   * Sets the pod's phase as the kubelet would ({@link ExecutorPods#status}); {@code exitCode} is
   * used for Failed and Succeeded.
   */
  public Pod setPhase(String podName, String phase, int exitCode) {
    Pod pod = admin.pods().inNamespace(namespace()).withName(podName).get();
    pod.setStatus(ExecutorPods.status(phase, exitCode));
    return admin.pods().inNamespace(namespace()).resource(pod).updateStatus();
  }

  public void deletePod(String podName) {
    admin.pods().inNamespace(namespace()).withName(podName).withGracePeriod(0).delete();
  }

  /** Polls until {@code condition} holds, or fails naming {@code what}. */
  public static void eventually(String what, Duration timeout, BooleanSupplier condition) {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("timed out after " + timeout + " waiting for " + what);
      }
      try {
        Thread.sleep(20);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new AssertionError(e);
      }
    }
  }
}

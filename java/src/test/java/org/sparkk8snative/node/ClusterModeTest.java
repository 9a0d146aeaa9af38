package org.sparkk8snative.node;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.OwnerReference;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.ServiceAccountBuilder;
import io.fabric8.kubernetes.api.model.Volume;
import io.fabric8.kubernetes.api.model.VolumeMount;
import io.fabric8.kubernetes.api.model.rbac.PolicyRule;
import io.fabric8.kubernetes.api.model.rbac.PolicyRuleBuilder;
import io.fabric8.kubernetes.api.model.rbac.RoleBindingBuilder;
import io.fabric8.kubernetes.api.model.rbac.RoleBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import java.io.File;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.apache.spark.SparkConf;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.sparkk8snative.NativeLibrary;
import org.sparkk8snative.TestPlane;
import scala.Tuple2;

/**
 * Spark in cluster mode on the real node: {@code spark-submit --deploy-mode cluster} (a child JVM,
 * as a user runs it) creates the driver pod, the node runs it from Spark's image
 * (tests/localnode/images/spark-entrypoint.sh, role {@code driver}), and the driver, with the
 * native allocator and informer and executor Services, runs {@link ClusterModeJob} on executor pods
 * as its own service account, with the token the node agent mounted through the TokenRequest API.
 * Then: deleting a driver pod that can no longer clean up after itself leaves it to the garbage
 * collector to remove its executor pods and Services, through their owner references. And the ways
 * users install the jar, each in cluster mode: {@code --packages} from a Maven repository as the
 * Spark Operator example (docs/examples/spark-application.yaml) does, the same for the Spark 3.5
 * artifact on Spark 3.5, and the jar baked into the image's jars/ folder.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class ClusterModeTest extends NodeTest {
  private static final long ROWS = 2_000_000;
  private static final int KEYS = 100;
  private static final int EXECUTORS = 2;

  /** What {@link InstallPathJob} counts: the tests of how the jar is installed need the driver. */
  private static final int INSTALL_ELEMENTS = 1_000;

  private static final String PROJECT_VERSION =
      System.getProperty("spark.k8s.native.test.projectVersion");

  /** Driver JVM, two executor JVMs and the job, on 2 cores shared with other tests. */
  private static final Duration DRIVER_TIMEOUT = Duration.ofSeconds(240);

  private static final String SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount";
  private static final String NATIVE_INFORMER_LINE =
      "are tracked by the native informer and lister";
  private static final ObjectMapper JSON = new ObjectMapper();

  // The verbs README.md's Role gives a driver, per resource.
  private static final List<String> POD_VERBS =
      List.of("get", "list", "watch", "create", "delete", "deletecollection", "patch");
  private static final List<String> SERVICE_VERBS =
      Stream.concat(POD_VERBS.stream(), Stream.of("update")).toList();
  private static final List<String> STORE_VERBS =
      List.of("get", "list", "create", "delete", "deletecollection");

  private final KubernetesClient kube = plane.admin();
  private final String ns = plane.namespace();
  private final String serviceAccount = TestPlane.uniqueAppId("cm-driver");
  private final Path workDir = Paths.get("target", "cluster-mode").toAbsolutePath();
  private final List<String> driverPods = new ArrayList<>();
  private Path jobJar;

  /**
   * The driver's identity: a service account of its own with the role README.md gives drivers
   * (pods, Services, ConfigMaps, PVCs), and the jar of {@link ClusterModeJob}, the app's primary
   * resource ({@code local://}: the node's pods see this machine's files, as an image's would be).
   */
  @BeforeAll
  void createTheDriversServiceAccountAndTheJobJar() throws IOException {
    createTheDriversServiceAccount();
    jobJar = jarOfTheJobs(workDir.resolve("cluster-mode-job.jar"));
  }

  /** The service account, a Role with the rules README.md gives drivers, and their binding. */
  private void createTheDriversServiceAccount() {
    kube.serviceAccounts()
        .inNamespace(ns)
        .resource(
            new ServiceAccountBuilder()
                .withNewMetadata()
                .withName(serviceAccount)
                .endMetadata()
                .build())
        .create();
    kube.rbac()
        .roles()
        .inNamespace(ns)
        .resource(
            new RoleBuilder()
                .withNewMetadata()
                .withName(serviceAccount)
                .endMetadata()
                .withRules(
                    rule(List.of("pods"), POD_VERBS),
                    rule(List.of("services"), SERVICE_VERBS),
                    rule(List.of("configmaps", "persistentvolumeclaims"), STORE_VERBS))
                .build())
        .create();
    kube.rbac()
        .roleBindings()
        .inNamespace(ns)
        .resource(
            new RoleBindingBuilder()
                .withNewMetadata()
                .withName(serviceAccount)
                .endMetadata()
                .withNewRoleRef("rbac.authorization.k8s.io", "Role", serviceAccount)
                .addNewSubject()
                .withKind("ServiceAccount")
                .withName(serviceAccount)
                .withNamespace(ns)
                .endSubject()
                .build())
        .create();
  }

  private static PolicyRule rule(List<String> resources, List<String> verbs) {
    return new PolicyRuleBuilder()
        .withApiGroups("")
        .withResources(resources)
        .withVerbs(verbs)
        .build();
  }

  /**
   * A jar of the jobs the drivers run ({@link ClusterModeJob}, {@link InstallPathJob}, {@link
   * ShuffleJob}).
   */
  private static Path jarOfTheJobs(Path jobJar) throws IOException {
    Files.createDirectories(jobJar.getParent());
    Path classes = codeSource(ClusterModeJob.class);
    Path packageDir = classes.resolve(ClusterModeJob.class.getPackageName().replace('.', '/'));
    try (OutputStream out = Files.newOutputStream(jobJar);
        JarOutputStream jar = new JarOutputStream(out);
        Stream<Path> files = Files.list(packageDir)) {
      for (Path file :
          files
              .filter(
                  f ->
                      f.getFileName().toString().startsWith("ClusterModeJob")
                          || f.getFileName().toString().startsWith("InstallPathJob")
                          || f.getFileName().toString().startsWith("ShuffleJob"))
              .toList()) {
        jar.putNextEntry(new JarEntry(classes.relativize(file).toString()));
        jar.write(Files.readAllBytes(file));
        jar.closeEntry();
      }
    }
    return jobJar;
  }

  @AfterAll
  void deleteTheDriversAndTheServiceAccount() {
    for (String pod : driverPods) {
      plane.deletePod(pod);
    }
    kube.rbac().roleBindings().inNamespace(ns).withName(serviceAccount).delete();
    kube.rbac().roles().inNamespace(ns).withName(serviceAccount).delete();
    kube.serviceAccounts().inNamespace(ns).withName(serviceAccount).delete();
  }

  private static Path codeSource(Class<?> type) {
    try {
      return Paths.get(type.getProtectionDomain().getCodeSource().getLocation().toURI());
    } catch (URISyntaxException e) {
      throw new IllegalStateException(e);
    }
  }

  /**
   * A driver pod that spark-submit created: when spark-submit returned (this JVM's clock), and how
   * long it ran.
   */
  private record Submitted(String driverPod, long submittedNanos, long submitMillis) {}

  /**
   * Runs {@code spark-submit --deploy-mode cluster} in a child JVM on Spark's jars, without waiting
   * for the app (the test watches the driver pod). The driver gets this build's classes on its
   * classpath (target/classes: the code under test, where a user would put the jar) and the native
   * library this JVM loaded, by the system property the native layer reads first.
   */
  private Submitted submit(String tag, boolean hold) throws Exception {
    return submit(tag, hold, true);
  }

  /**
   * The same with Spark's own sources when {@code nativeSources} is false: Spark's allocator, no
   * executor Services, and Spark's polling LIST every 5 s (so that it LISTs within the job: the
   * positive control of the LIST count).
   */
  private Submitted submit(String tag, boolean hold, boolean nativeSources) throws Exception {
    String driverPod = TestPlane.uniqueAppId("cm-" + tag) + "-driver";
    Map<String, String> conf = clusterModeConf(driverPod, EXECUTORS, nativeSources);
    if (!nativeSources) {
      conf.put("spark.kubernetes.executor.apiPollingInterval", "5s");
    }
    conf.put("spark.driver.extraClassPath", codeSource(NativeLibrary.class).toString());
    conf.put(
        "spark.driver.extraJavaOptions",
        "-D" + NativeLibrary.PATH_PROPERTY + "=" + nativeLibrary());
    return sparkSubmit(
        driverPod,
        clusterModeArgs("cluster-mode-" + tag, ClusterModeJob.class, conf, jobArgs(ROWS, hold)));
  }

  /**
   * The executors and the job as the client-mode tests shape them (ProcessNode), then what cluster
   * mode adds: the submission's credentials, the driver pod and its account. Nothing of this
   * project's jar or library: each test says how the driver gets them.
   */
  private Map<String, String> clusterModeConf(String driverPod, int executors) {
    return clusterModeConf(driverPod, executors, true);
  }

  private Map<String, String> clusterModeConf(
      String driverPod, int executors, boolean nativeSources) {
    driverPods.add(driverPod);
    SparkConf job =
        ProcessNode.withJob(
            ProcessNode.withNodeExecutors(new SparkConf(false)), executors, nativeSources);
    if (nativeSources) {
      ProcessNode.withExecutorServices(job);
    }
    Map<String, String> conf = new LinkedHashMap<>();
    for (Tuple2<String, String> entry : job.getAll()) {
      conf.put(entry._1(), entry._2());
    }
    conf.put("spark.kubernetes.namespace", ns);
    conf.putAll(submissionCredentials());
    conf.put("spark.kubernetes.authenticate.driver.serviceAccountName", serviceAccount);
    conf.put("spark.kubernetes.driver.pod.name", driverPod);
    conf.put("spark.kubernetes.submission.waitAppCompletion", "false");
    conf.put("spark.driver.memory", "512m");
    conf.put("spark.driver.cores", "1");
    // Two cores run the whole cluster: ask the scheduler for a fraction of one.
    conf.put("spark.kubernetes.driver.request.cores", "250m");
    conf.put("spark.ui.enabled", "false");
    return conf;
  }

  /** How spark-submit reaches the apiserver: the admin's token (the operator has its own). */
  private Map<String, String> submissionCredentials() {
    return Map.of(
        "spark.kubernetes.authenticate.submission.caCertFile", plane.var("LOCALPLANE_CA_FILE"),
        "spark.kubernetes.authenticate.submission.oauthTokenFile",
            plane.var("LOCALPLANE_ADMIN_TOKEN_FILE"));
  }

  /** spark-submit's arguments for a job of the job jar in cluster mode, with {@code conf}. */
  private List<String> clusterModeArgs(
      String name, Class<?> main, Map<String, String> conf, List<String> job) {
    List<String> args =
        new ArrayList<>(
            List.of(
                "--master",
                "k8s://" + plane.apiserverUrl(),
                "--deploy-mode",
                "cluster",
                "--name",
                name,
                "--class",
                main.getName()));
    conf.forEach((key, value) -> args.addAll(List.of("--conf", key + "=" + value)));
    args.addAll(job);
    return args;
  }

  /** The primary resource and the arguments of {@link InstallPathJob}. */
  private List<String> installPathJobArgs() {
    return List.of("local://" + jobJar, String.valueOf(INSTALL_ELEMENTS));
  }

  /** The primary resource and the arguments of {@link ClusterModeJob}. */
  private List<String> jobArgs(long rows, boolean hold) {
    return List.of(
        "local://" + jobJar, String.valueOf(rows), String.valueOf(KEYS), hold ? "hold" : "exit");
  }

  /** Runs spark-submit with {@code args} in a child JVM on Spark's jars, as a user runs it. */
  private Submitted sparkSubmit(String driverPod, List<String> args) throws Exception {
    return sparkSubmit(driverPod, args, Paths.get("target", "spark-node.classpath"));
  }

  /** The same on the Spark whose jars the classpath file {@code spark} lists. */
  private Submitted sparkSubmit(String driverPod, List<String> args, Path spark) throws Exception {
    List<String> command =
        new ArrayList<>(
            List.of(
                Paths.get(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xmx384m",
                "@" + Paths.get("jvm.options").toAbsolutePath(),
                "-cp",
                Files.readString(spark).trim(),
                "org.apache.spark.deploy.SparkSubmit"));
    command.addAll(args);
    Path log = workDir.resolve(driverPod + "-submit.log");
    long began = System.nanoTime();
    Process submit =
        new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
    boolean exited = submit.waitFor(120, TimeUnit.SECONDS);
    if (!exited) {
      submit.destroyForcibly();
    }
    long submitMillis = (System.nanoTime() - began) / 1_000_000;
    assertTrue(
        exited && submit.exitValue() == 0,
        "spark-submit failed; " + log + ":\n" + tail(Files.readString(log), 40));
    return new Submitted(driverPod, System.nanoTime(), submitMillis);
  }

  /** The native library this JVM loads: the one on java.library.path (-Dnative.lib.dir). */
  private static Path nativeLibrary() {
    String file = System.mapLibraryName("spark_k8s_native");
    for (String dir : System.getProperty("java.library.path").split(File.pathSeparator)) {
      if (Files.isRegularFile(Paths.get(dir, file))) {
        return Paths.get(dir, file).toAbsolutePath();
      }
    }
    throw new IllegalStateException(file + " is on no directory of java.library.path");
  }

  private Pod pod(String name) {
    return kube.pods().inNamespace(ns).withName(name).get();
  }

  private String log(String podName) {
    String log = kube.pods().inNamespace(ns).withName(podName).getLog();
    return log == null ? "" : log;
  }

  private static String tail(String text, int lines) {
    List<String> all = text.lines().toList();
    return String.join("\n", all.subList(Math.max(0, all.size() - lines), all.size()));
  }

  private static long millisSince(long nanos) {
    return (System.nanoTime() - nanos) / 1_000_000;
  }

  /** The job's {@code cluster-mode-job: key=value ...} lines, merged (a later value wins). */
  private static Map<String, String> jobFacts(String log) {
    Map<String, String> facts = new HashMap<>();
    log.lines()
        .filter(line -> line.startsWith(ClusterModeJob.PREFIX))
        .forEach(
            line -> {
              for (String pair : line.substring(ClusterModeJob.PREFIX.length()).split(" ")) {
                int eq = pair.indexOf('=');
                facts.put(
                    eq < 0 ? pair : pair.substring(0, eq), eq < 0 ? "" : pair.substring(eq + 1));
              }
            });
    return facts;
  }

  /** When the driver pod first ran, after its submission; fails if it ends first. */
  private long awaitRunning(Submitted run) {
    TestPlane.eventually(
        "driver pod " + run.driverPod() + " to run",
        DRIVER_TIMEOUT,
        () -> {
          Pod pod = pod(run.driverPod());
          String phase = pod == null ? "" : pod.getStatus().getPhase();
          assertFalse(
              "Failed".equals(phase),
              "the driver pod failed to start: " + tail(log(run.driverPod()), 40));
          return "Running".equals(phase) || "Succeeded".equals(phase);
        });
    return millisSince(run.submittedNanos());
  }

  /** What the driver pod's spec says about its identity: its service account and token volume. */
  private void assertTheDriverRunsAsItsServiceAccountWithAProjectedToken(Pod driver) {
    assertEquals(serviceAccount, driver.getSpec().getServiceAccountName());
    VolumeMount mount =
        driver.getSpec().getContainers().get(0).getVolumeMounts().stream()
            .filter(m -> m.getMountPath().equals(SERVICE_ACCOUNT_DIR))
            .findFirst()
            .orElseThrow(() -> new AssertionError("no volume at " + SERVICE_ACCOUNT_DIR));
    Volume volume =
        driver.getSpec().getVolumes().stream()
            .filter(v -> v.getName().equals(mount.getName()))
            .findFirst()
            .orElseThrow();
    assertTrue(
        volume.getProjected() != null
            && volume.getProjected().getSources().stream()
                .anyMatch(source -> source.getServiceAccountToken() != null),
        "a projected service-account token (admission's kube-api-access volume): " + volume);
  }

  /** The apiserver's audit events (LOCALPLANE_AUDIT_LOG), completed requests only. */
  private List<JsonNode> auditEvents() {
    try (Stream<String> lines = Files.lines(Paths.get(plane.var("LOCALPLANE_AUDIT_LOG")))) {
      return lines
          .map(
              line -> {
                try {
                  return JSON.readTree(line);
                } catch (IOException e) {
                  return JSON.createObjectNode();
                }
              })
          .filter(e -> "ResponseComplete".equals(e.path("stage").asText()))
          .toList();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private String serviceAccountUser() {
    return "system:serviceaccount:" + ns + ":" + serviceAccount;
  }

  /** The pod a request's token is bound to (the apiserver records it for projected tokens). */
  private static String boundPod(JsonNode event) {
    return event
        .path("user")
        .path("extra")
        .path("authentication.kubernetes.io/pod-name")
        .path(0)
        .asText();
  }

  /** What one cluster-mode run of {@link ClusterModeJob} showed. */
  private record ClusterRun(
      Submitted submitted,
      Pod ended,
      String log,
      Map<String, String> facts,
      long runningMillis,
      long endedMillis,
      long nativeWatches,
      long snapshotLists,
      long allLists,
      Set<String> boundPods) {
    long registeredMillis() {
      return Long.parseLong(facts.get("after-ms"));
    }
  }

  /** Submits the job in cluster mode, waits for the driver pod to end, and reads what it did. */
  private ClusterRun runInClusterMode(String tag, boolean nativeSources) throws Exception {
    Submitted run = submit(tag, false, nativeSources);
    long runningMillis = awaitRunning(run);
    Pod ended = node.awaitEnded(run.driverPod(), DRIVER_TIMEOUT);
    long endedMillis = millisSince(run.submittedNanos());
    String log = log(run.driverPod());
    assertEquals("Succeeded", ended.getStatus().getPhase(), tail(log, 60));
    Map<String, String> facts = jobFacts(log);
    assertEquals("right", facts.get("answer"), tag + ": " + tail(log, 60));
    assertEquals(String.valueOf(KEYS), facts.get("keys"));
    assertEquals(String.valueOf(ROWS / KEYS), facts.get("rows-per-key"));
    assertEquals("0", facts.get("wrong-keys"));
    assertEquals(String.valueOf(EXECUTORS), facts.get("executors-registered"));
    String appId = facts.get("app-id");
    assertEquals(appId, ended.getMetadata().getLabels().get("spark-app-selector"));
    List<JsonNode> bySa =
        auditEvents().stream()
            .filter(e -> serviceAccountUser().equals(e.path("user").path("username").asText()))
            .filter(e -> "pods".equals(e.path("objectRef").path("resource").asText()))
            .filter(e -> e.path("requestURI").asText().contains(appId))
            .toList();
    long nativeWatches =
        bySa.stream()
            .filter(e -> "watch".equals(e.path("verb").asText()))
            .filter(e -> e.path("userAgent").asText().startsWith("spark-k8s-native"))
            .count();
    long snapshotLists =
        bySa.stream()
            .filter(e -> "list".equals(e.path("verb").asText()))
            .filter(
                e ->
                    e.path("userAgent").asText().startsWith("spark-k8s-native")
                        || e.path("requestURI").asText().contains("spark-exec-inactive"))
            .count();
    long allLists = bySa.stream().filter(e -> "list".equals(e.path("verb").asText())).count();
    Set<String> boundPods =
        bySa.stream().map(ClusterModeTest::boundPod).collect(Collectors.toSet());
    return new ClusterRun(
        run,
        ended,
        log,
        facts,
        runningMillis,
        endedMillis,
        nativeWatches,
        snapshotLists,
        allLists,
        boundPods);
  }

  /**
   * How much later than with Spark's own sources the native ones may have the app's executors
   * registered: a Service is created before each executor pod, and the driver JVM, two executor
   * JVMs and the job share 2 cores (registration took 20-40 s with either source).
   */
  private static final long REGISTRATION_SLACK_MS = 10_000;

  @Test
  void aClusterModeDriverPodRunsTheJobAsItsServiceAccountWithTheNativeInformer() throws Exception {
    ClusterRun legacy = runInClusterMode("legacy", false);
    ClusterRun nativeRun = runInClusterMode("run", true);
    Submitted run = nativeRun.submitted();
    Pod ended = nativeRun.ended();
    String log = nativeRun.log();
    Map<String, String> facts = nativeRun.facts();

    // Spark's own sources, in the same harness: the driver's LISTs are counted (the positive
    // control of the native run's 0), and the app gives the same answer.
    assertTrue(
        legacy.snapshotLists() > 0,
        "the audit log counts the LISTs of Spark's own polling source by the driver's account");
    assertEquals("none", legacy.facts().get("informer-synced"), "Spark's own sources");
    BothSources.noLaterThanLegacy(
        "executors registered, from the SparkSession's start,",
        nativeRun.registeredMillis(),
        legacy.registeredMillis(),
        REGISTRATION_SLACK_MS);

    // The image's entrypoint applies spark.driver.memory (512m) as Spark's launcher does: the
    // JVM reports a little less than -Xmx (one survivor space).
    long maxHeapMb = Long.parseLong(facts.get("max-heap-mb"));
    assertTrue(maxHeapMb > 400 && maxHeapMb <= 512, "the driver's heap: " + maxHeapMb + " MiB");
    assertTrue(log.contains(NATIVE_INFORMER_LINE), "the driver says the native informer is in use");
    assertEquals("1", facts.get("informer-synced"), "the native informer synced in the driver");
    assertEquals(
        String.valueOf(EXECUTORS), facts.get("informer-cache-size"), "its executors, cached");

    // The driver runs as its service account, with a token bound to its pod.
    assertTheDriverRunsAsItsServiceAccountWithAProjectedToken(ended);
    assertEquals(serviceAccountUser(), facts.get("token-subject"));
    assertEquals(run.driverPod(), facts.get("token-pod"), "a token bound to the driver pod");
    assertEquals("true", facts.get("ca-present"));
    assertEquals(ns, facts.get("namespace"));
    long tokenLifetime = Long.parseLong(facts.get("token-lifetime-s"));
    assertTrue(tokenLifetime >= 600, "a TokenRequest token's lifetime: " + tokenLifetime);

    String appId = facts.get("app-id");
    assertTrue(
        nativeRun.nativeWatches() >= 1,
        "the native informer watched as the driver's service account");
    assertEquals(0, nativeRun.snapshotLists(), "no snapshot-source LIST of executor pods");
    assertEquals(0, nativeRun.allLists(), "no LIST of executor pods at all by the driver");
    assertEquals(
        Set.of(run.driverPod()),
        nativeRun.boundPods(),
        "every request with the driver pod's own token");

    // The app is over: Spark deleted its executor pods; what is left of it (its executor
    // Services, its own Service and ConfigMaps) goes with the driver pod.
    TestPlane.eventually(
        "Spark to delete its executor pods on stop",
        Duration.ofSeconds(60),
        () -> plane.executorPods(appId).isEmpty());
    int servicesLeft = plane.executorServices(appId).size();
    String driverUid = ended.getMetadata().getUid();
    long deleted = System.nanoTime();
    plane.deletePod(run.driverPod());
    TestPlane.eventually(
        "what the Succeeded driver pod owned to be garbage-collected",
        Duration.ofSeconds(60),
        () -> ownedBy(driverUid).isEmpty());
    long collectedMillis = millisSince(deleted);

    for (ClusterRun r : List.of(nativeRun, legacy)) {
      System.out.printf(
          "cluster mode, %s: spark-submit %d ms; driver pod Running %d ms after it, Succeeded"
              + " after %d ms; %d executors registered %s ms after the driver's SparkSession"
              + " began; groupBy of %d rows in %s ms; driver's service account: %d native WATCHes"
              + " of executor pods, %d snapshot-source LISTs, %d LISTs in all%n",
          r == nativeRun ? "native sources" : "Spark's own sources",
          r.submitted().submitMillis(),
          r.runningMillis(),
          r.endedMillis(),
          EXECUTORS,
          r.facts().get("after-ms"),
          ROWS,
          r.facts().get("job-ms"),
          r.nativeWatches(),
          r.snapshotLists(),
          r.allLists());
    }
    System.out.printf(
        "cluster mode, native sources: token lifetime %d s; after the app: %d executor Services"
            + " left, garbage-collected %d ms after the driver pod was deleted%n",
        tokenLifetime, servicesLeft, collectedMillis);
  }

  /** Everything in the namespace that names the pod as its owner (pods, Services, ConfigMaps). */
  private List<HasMetadata> ownedBy(String uid) {
    List<HasMetadata> owned = new ArrayList<>();
    owned.addAll(kube.pods().inNamespace(ns).list().getItems());
    owned.addAll(kube.services().inNamespace(ns).list().getItems());
    owned.addAll(kube.configMaps().inNamespace(ns).list().getItems());
    owned.removeIf(
        o -> o.getMetadata().getOwnerReferences().stream().noneMatch(r -> uid.equals(r.getUid())));
    return owned;
  }

  /**
   * Installed as docs/examples/spark-application.yaml installs it: the spark-submit line the Spark
   * Operator builds from that file, with {@code --packages} from a Maven repository (the one
   * scripts/test.sh deployed this build's artifacts to). Spark's Ivy resolves the artifact in the
   * submitting JVM and again in the driver pod, whose spark-submit adds the jar to the class loader
   * the driver runs in: the allocator loads from it with no {@code spark.driver.extraClassPath},
   * and the native library is extracted from it.
   */
  @Test
  void theSparkOperatorExampleInstallsItByPackagesFromAMavenRepository() throws Exception {
    ObjectNode app =
        SparkOperatorSubmission.read(Paths.get("..", "docs", "examples", "spark-application.yaml"));
    String name = TestPlane.uniqueAppId("cm-operator");
    // What is this cluster's and this test's, not the example's.
    ((ObjectNode) app.path("metadata")).put("name", name).put("namespace", ns);
    ObjectNode spec = (ObjectNode) app.path("spec");
    spec.put("image", ProcessNode.SPARK_IMAGE)
        .put("imagePullPolicy", "Never")
        .put("mainClass", InstallPathJob.class.getName())
        .put("mainApplicationFile", installPathJobArgs().get(0));
    ArrayNode arguments = spec.putArray("arguments");
    installPathJobArgs().stream().skip(1).forEach(arguments::add);
    ((ObjectNode) spec.path("deps")).putArray("repositories").add(mavenRepository());
    ((ObjectNode) spec.path("driver"))
        .put("serviceAccount", serviceAccount)
        .put("coreRequest", "250m");
    ((ObjectNode) spec.path("executor")).put("coreRequest", "250m").put("instances", 1);
    ObjectNode sparkConf = (ObjectNode) spec.path("sparkConf");
    submissionCredentials().forEach(sparkConf::put);
    // A cache of this run's own, so that the artifact is resolved from the repository.
    Path ivy = workDir.resolve("ivy-" + name);
    sparkConf.put("spark.jars.ivy", ivy.toString());
    sparkConf.put("spark.ui.enabled", "false");
    String driverPod = name + "-driver";
    driverPods.add(driverPod);

    Submitted run =
        sparkSubmit(
            driverPod,
            SparkOperatorSubmission.sparkSubmitArgs(app, "k8s://" + plane.apiserverUrl()));
    Map<String, String> facts = assertTheJobRanWithTheNativeInformer(run);
    assertResolvedFromTheRepository(run, "spark-k8s-native_2.13", ivy, facts);
    System.out.printf(
        "cluster mode, installed by --packages (the Spark Operator example): classes from %s,"
            + " native library from %s%n",
        facts.get("classes-from"), facts.get("native-from"));
  }

  /**
   * Baked into the image: the driver pod's image has the jar in Spark's jars/ folder, and the job
   * sets nothing of this project but the allocator and its flag.
   */
  @Test
  void bakedIntoTheImagesJarsFolderTheAllocatorNeedsNothingElse() throws Exception {
    String driverPod = TestPlane.uniqueAppId("cm-image") + "-driver";
    Map<String, String> conf = clusterModeConf(driverPod, 1);
    conf.put("spark.kubernetes.driver.container.image", ProcessNode.SPARK_IMAGE_WITH_THE_JAR);
    List<String> args =
        clusterModeArgs("cluster-mode-image", InstallPathJob.class, conf, installPathJobArgs());
    Map<String, String> facts = assertTheJobRanWithTheNativeInformer(sparkSubmit(driverPod, args));
    assertEquals(ProcessNode.IMAGE_JAR.toString(), facts.get("classes-from"));
  }

  /**
   * The Spark 3.5 artifact, {@code spark-k8s-native_2.12}, installed by {@code --packages} from the
   * same Maven repository, on Spark 3.5: its spark-submit (Spark 3.5's jars, which Maven resolved
   * for line-tests/spark-3.5), its Ivy, and a driver and executors of the node's Spark 3.5 image.
   */
  @Test
  void onSpark35TheScala212ArtifactInstallsByPackages() throws Exception {
    Path spark35 = Paths.get("line-tests", "spark-3.5", "target", "spark.classpath");
    assertTrue(
        Files.isRegularFile(spark35),
        spark35 + " is missing: Maven writes it when it builds line-tests/spark-3.5");
    String version =
        Stream.of(Files.readString(spark35).trim().split(File.pathSeparator))
            .map(jar -> Paths.get(jar).getFileName().toString())
            .filter(jar -> jar.startsWith("spark-core_2.12-"))
            .map(jar -> jar.substring("spark-core_2.12-".length(), jar.length() - ".jar".length()))
            .findFirst()
            .orElseThrow(() -> new AssertionError("no spark-core_2.12 in " + spark35));
    String name = TestPlane.uniqueAppId("cm-spark35");
    String driverPod = name + "-driver";
    Map<String, String> conf = clusterModeConf(driverPod, 1);
    conf.put("spark.kubernetes.container.image", "spark-k8s-native/spark:" + version);
    Path ivy = workDir.resolve("ivy-" + name);
    conf.put("spark.jars.ivy", ivy.toString());
    List<String> args = clusterModeArgs(name, InstallPathJob.class, conf, installPathJobArgs());
    args.addAll(
        0,
        List.of(
            "--packages",
            "org.sparkk8snative:spark-k8s-native_2.12:" + PROJECT_VERSION,
            "--repositories",
            mavenRepository()));

    Submitted run = sparkSubmit(driverPod, args, spark35);
    Map<String, String> facts = assertTheJobRanWithTheNativeInformer(run);
    assertResolvedFromTheRepository(run, "spark-k8s-native_2.12", ivy, facts);
    System.out.printf(
        "cluster mode on Spark %s, installed by --packages: classes from %s%n",
        version, facts.get("classes-from"));
  }

  /**
   * Waits for the driver pod of {@code run} to end, and checks that the job succeeded with the
   * native informer and that the library was extracted from a jar; returns the job's facts.
   */
  private Map<String, String> assertTheJobRanWithTheNativeInformer(Submitted run) {
    awaitRunning(run);
    Pod ended = node.awaitEnded(run.driverPod(), DRIVER_TIMEOUT);
    String log = log(run.driverPod());
    assertEquals("Succeeded", ended.getStatus().getPhase(), tail(log, 60));
    Map<String, String> facts = jobFacts(log);
    assertEquals("right", facts.get("answer"), tail(log, 60));
    assertTrue(
        log.contains(NATIVE_INFORMER_LINE),
        "the driver says the native informer is in use:\n" + tail(log, 60));
    String nativeFrom = facts.get("native-from");
    assertTrue(
        nativeFrom.startsWith("jar:/org/sparkk8snative/native/linux-"),
        "the native library extracted from the jar: " + nativeFrom);
    return facts;
  }

  /**
   * That the driver's Ivy resolved {@code artifact} from the repository it was given (the first one
   * given is named repo-1), not from ~/.m2 or another cache, and that the driver's classes came
   * from the jar it fetched into {@code ivy}.
   */
  private void assertResolvedFromTheRepository(
      Submitted run, String artifact, Path ivy, Map<String, String> facts) {
    String log = log(run.driverPod());
    String found = "found org.sparkk8snative#" + artifact + ";" + PROJECT_VERSION + " in repo-1";
    assertTrue(log.contains(found), "the driver's Ivy says '" + found + "':\n" + tail(log, 60));
    String classesFrom = facts.get("classes-from");
    assertTrue(
        classesFrom.startsWith(ivy.toString())
            && classesFrom.endsWith(artifact + "-" + PROJECT_VERSION + ".jar"),
        "the project's classes from the jar Ivy fetched: " + classesFrom);
  }

  /** The Maven repository holding this build's artifacts (scripts/test.sh deploys them). */
  private static String mavenRepository() {
    String url = System.getProperty("spark.k8s.native.test.mavenRepository", "");
    if (url.isEmpty()) {
      throw new IllegalStateException(
          "no Maven repository with this build's artifacts: deploy them (scripts/test.sh does,"
              + " to target/maven-repository) and pass -Dtest.maven.repository=file://...");
    }
    return url;
  }

  @Test
  void deletingTheDriverPodGarbageCollectsItsExecutorPodsAndServices() throws Exception {
    Submitted run = submit("gc", true);
    awaitRunning(run);
    TestPlane.eventually(
        "the driver to hold once its executors registered",
        DRIVER_TIMEOUT,
        () -> {
          Pod pod = pod(run.driverPod());
          assertFalse(
              pod == null || !"Running".equals(pod.getStatus().getPhase()),
              "the driver pod ended: " + tail(log(run.driverPod()), 40));
          return log(run.driverPod()).contains(ClusterModeJob.PREFIX + "holding");
        });
    Map<String, String> facts = jobFacts(log(run.driverPod()));
    assertEquals(String.valueOf(EXECUTORS), facts.get("executors-registered"));
    String appId = facts.get("app-id");
    Pod driver = pod(run.driverPod());
    String driverUid = driver.getMetadata().getUid();

    List<Pod> executors = plane.executorPods(appId);
    List<Service> services = plane.executorServices(appId);
    assertEquals(EXECUTORS, executors.size());
    assertEquals(EXECUTORS, services.size(), "one Service per executor");
    for (HasMetadata each : Stream.concat(executors.stream(), services.stream()).toList()) {
      List<OwnerReference> owners = each.getMetadata().getOwnerReferences();
      assertEquals(1, owners.size(), each.getMetadata().getName());
      assertEquals("Pod", owners.get(0).getKind());
      assertEquals(run.driverPod(), owners.get(0).getName());
      assertEquals(driverUid, owners.get(0).getUid());
    }
    Set<String> dependents = new HashSet<>();
    executors.forEach(p -> dependents.add("pods/" + p.getMetadata().getName()));
    services.forEach(s -> dependents.add("services/" + s.getMetadata().getName()));

    // A driver that can clean up after itself would delete its executors on SIGTERM: a frozen
    // one cannot, so whatever goes now, the garbage collector removed.
    node.signal(run.driverPod(), "STOP");
    long deleted = System.nanoTime();
    plane.deletePod(run.driverPod());
    long[] goneMillis = {-1, -1};
    TestPlane.eventually(
        "the executor pods and Services to be garbage-collected",
        Duration.ofSeconds(120),
        () -> {
          if (goneMillis[0] < 0 && plane.executorPods(appId).isEmpty()) {
            goneMillis[0] = millisSince(deleted);
          }
          if (goneMillis[1] < 0 && plane.executorServices(appId).isEmpty()) {
            goneMillis[1] = millisSince(deleted);
          }
          return goneMillis[0] >= 0 && goneMillis[1] >= 0;
        });
    assertEquals(List.of(), ownedBy(driverUid), "nothing the driver pod owned is left");

    Map<String, Set<String>> deleters = new HashMap<>();
    for (JsonNode e : auditEvents()) {
      String what =
          e.path("objectRef").path("resource").asText()
              + "/"
              + e.path("objectRef").path("name").asText();
      if ("delete".equals(e.path("verb").asText()) && dependents.contains(what)) {
        deleters
            .computeIfAbsent(what, k -> new HashSet<>())
            .add(e.path("user").path("username").asText() + " " + e.path("userAgent").asText());
      }
    }
    for (String dependent : dependents) {
      Set<String> by = deleters.getOrDefault(dependent, Set.of());
      assertTrue(
          by.stream().anyMatch(d -> d.contains("garbage-collector")),
          dependent + " deleted by the garbage collector: " + by);
      assertTrue(
          by.stream().noneMatch(d -> d.startsWith(serviceAccountUser() + " ")),
          dependent + " not deleted by the (frozen) driver: " + by);
    }
    System.out.printf(
        "cluster mode, driver pod deleted (frozen first): its %d executor pods gone %d ms later,"
            + " its %d Services %d ms later, all deleted by the garbage collector (%s)%n",
        executors.size(),
        goneMillis[0],
        services.size(),
        goneMillis[1],
        deleters.values().stream().flatMap(Set::stream).collect(Collectors.toSet()));
  }
}

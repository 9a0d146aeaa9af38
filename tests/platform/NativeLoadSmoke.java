import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.sparkk8snative.InformerHealth;
import org.sparkk8snative.ListerAnswer;
import org.sparkk8snative.NativeInformer;
import org.sparkk8snative.NativeLibrary;

/**
 * The library of this JVM's platform, loaded the way a driver loads it (NativeLibrary extracts the
 * jar's copy for this os and arch), doing a driver's work against the local control plane: an
 * informer syncs the app's executor pods, its health reads Synced, a lister snapshot holds every
 * pod; then an informer against an apiserver that refuses connections reports the error; closing
 * twice leaves no informer open and no runtime thread. Exits non-zero on anything unexpected.
 * scripts/native-smoke.sh runs it in an aarch64 JVM under qemu-user, with the jar on the classpath.
 *
 * <p>Arguments: the plane's plane.env, the app id of the executor pods it holds, their number.
 */
public final class NativeLoadSmoke {
  public static void main(String[] args) throws Exception {
    if (args.length != 3) {
      throw new IllegalArgumentException("usage: NativeLoadSmoke PLANE_ENV APP_ID EXECUTOR_PODS");
    }
    Map<String, String> plane = readEnv(Paths.get(args[0]));
    String appId = args[1];
    int pods = Integer.parseInt(args[2]);

    String platform = NativeLibrary.platform();
    System.out.println("platform " + platform + ": " + NativeLibrary.nativeVersion());
    String from = NativeLibrary.loadedFrom();
    System.out.println("loaded from " + from);
    check(
        from.startsWith("jar:/org/sparkk8snative/native/" + platform + "/"), "not the jar's copy");

    Map<String, String> conf = new HashMap<>();
    conf.put("spark.master", "k8s://" + plane.get("LOCALPLANE_APISERVER"));
    conf.put("spark.kubernetes.namespace", plane.get("LOCALPLANE_NAMESPACE"));
    conf.put("spark.kubernetes.authenticate.caCertFile", plane.get("LOCALPLANE_CA_FILE"));
    conf.put(
        "spark.kubernetes.authenticate.oauthTokenFile",
        plane.get("LOCALPLANE_RESTRICTED_TOKEN_FILE"));
    try (NativeInformer informer = NativeInformer.create(conf, appId)) {
      long began = System.nanoTime();
      informer.start();
      ListerAnswer answer = informer.listerSnapshot(0, 60_000);
      check(answer instanceof ListerAnswer.Ready, "the lister after up to 60 s: " + answer);
      InformerHealth health = informer.health();
      System.out.printf(
          "synced in %d ms: %s%n", (System.nanoTime() - began) / 1_000_000, health);
      check(health.state() == InformerHealth.State.SYNCED, "health is not Synced");
      check(health.cacheSize() == pods, "cache holds " + health.cacheSize() + " pods");
      List<?> entries = ((ListerAnswer.Ready) answer).entries();
      check(entries.size() == pods, "the snapshot holds " + entries.size() + " pods");
      System.out.println("lister snapshot: " + entries.size() + " executor pods");
    }

    Map<String, String> refusing = new HashMap<>(conf);
    refusing.put("spark.master", "k8s://https://127.0.0.1:1");
    NativeInformer informer = NativeInformer.create(refusing, appId);
    informer.start();
    InformerHealth health = informer.health();
    for (int i = 0; i < 100 && health.errors() == 0; i++) {
      Thread.sleep(100);
      health = informer.health();
    }
    System.out.println("health against a refusing apiserver: " + health);
    check(health.errors() > 0, "no error reported for an apiserver that refuses connections");
    informer.close();
    informer.close();
    check(NativeInformer.openInformers() == 0, "informers left open");
    long threads = runtimeThreads();
    for (int i = 0; i < 50 && threads > 0; i++) {
      Thread.sleep(100);
      threads = runtimeThreads();
    }
    check(threads == 0, threads + " native runtime threads left");
    System.out.println("closed twice: no informer open, no runtime thread left");
  }

  private static void check(boolean ok, String what) {
    if (!ok) {
      throw new AssertionError(what);
    }
  }

  private static Map<String, String> readEnv(Path file) throws IOException {
    Map<String, String> env = new HashMap<>();
    for (String line : Files.readAllLines(file)) {
      int eq = line.indexOf('=');
      if (eq > 0) {
        env.put(line.substring(0, eq), line.substring(eq + 1));
      }
    }
    return env;
  }

  /** Threads of the library's runtime (named spark-k8s-rt), which ends with the last informer. */
  private static long runtimeThreads() throws IOException {
    try (Stream<Path> tasks = Files.list(Paths.get("/proc/self/task"))) {
      return tasks
          .filter(
              t -> {
                try {
                  String name = new String(Files.readAllBytes(t.resolve("comm")));
                  return name.trim().equals("spark-k8s-rt");
                } catch (IOException e) {
                  return false; // the thread ended meanwhile
                }
              })
          .count();
    }
  }
}

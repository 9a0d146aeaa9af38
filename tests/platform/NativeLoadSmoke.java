import java.util.HashMap;
import java.util.Map;
import org.sparkk8snative.InformerHealth;
import org.sparkk8snative.NativeInformer;
import org.sparkk8snative.NativeLibrary;

/**
 * Loads the native library the way a driver does (the jar's copy for this JVM's os and arch,
 * through NativeLibrary's loader), then runs an informer against an apiserver that refuses
 * connections: settings parsing, the runtime's threads, the client and the error path, all in
 * native code of this platform. Exits non-zero on anything unexpected. scripts/native-smoke.sh runs
 * it in an aarch64 JVM under qemu-user.
 */
public final class NativeLoadSmoke {
  public static void main(String[] args) throws Exception {
    System.out.println("platform " + NativeLibrary.platform() + ": " + NativeLibrary.nativeVersion());
    System.out.println("loaded from " + NativeLibrary.loadedFrom());
    Map<String, String> conf = new HashMap<>();
    conf.put("spark.master", "k8s://https://127.0.0.1:1");
    conf.put("spark.kubernetes.namespace", "default");
    conf.put("spark.kubernetes.authenticate.driver.oauthToken", "smoke");
    NativeInformer informer = NativeInformer.create(conf, "spark-smoke");
    informer.start();
    InformerHealth health = informer.health();
    for (int i = 0; i < 100 && health.errors() == 0; i++) {
      Thread.sleep(100);
      health = informer.health();
    }
    System.out.println("health against a refusing apiserver: " + health);
    if (health.errors() == 0) {
      throw new AssertionError("no error reported for an apiserver that refuses connections");
    }
    informer.close();
    informer.close();
    if (NativeInformer.openInformers() != 0) {
      throw new AssertionError("informers left open: " + NativeInformer.openInformers());
    }
    System.out.println("closed twice, none left open");
  }
}

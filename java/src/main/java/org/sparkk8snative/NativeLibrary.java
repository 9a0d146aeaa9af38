package org.sparkk8snative;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Finds and loads {@code libspark_k8s_native.so}, once per JVM, the way zstd-jni and lz4-java do:
 * an explicit path first, then {@code java.library.path}, then the copy bundled in this jar for the
 * current os and arch, extracted to a temporary directory under a name that carries its content
 * hash (so two versions never clash and a stale copy is never reused).
 *
 * <p>A native library can be loaded by only one class loader per JVM: keep this jar on the driver's
 * system classpath ({@code spark.driver.extraClassPath} or {@code --jars} in client mode), not in
 * several isolated class loaders.
 */
public final class NativeLibrary {

  /** System property naming the library file to load, bypassing every other place. */
  public static final String PATH_PROPERTY = "spark.kubernetes.native.library.path";

  /** Directory to extract the bundled library to (default: {@code java.io.tmpdir}). */
  public static final String EXTRACT_DIR_PROPERTY = "spark.kubernetes.native.library.extractDir";

  static final String LIBRARY_NAME = "spark_k8s_native";

  private static String loadedFrom;
  private static Throwable failure;

  private NativeLibrary() {}

  /**
   * Loads the library if it is not loaded yet.
   *
   * @throws UnsatisfiedLinkError naming every place that was tried, and why each failed
   */
  public static synchronized void load() {
    if (loadedFrom != null) {
      return;
    }
    if (failure != null) {
      throw linkError(failure.getMessage(), failure);
    }
    List<String> tried = new ArrayList<>();
    try {
      String from = locateAndLoad(tried);
      int speaks = wireVersion();
      if (speaks != Wire.VERSION) {
        throw new UnsatisfiedLinkError(
            "spark-k8s-native: the native library at "
                + from
                + " speaks wire format "
                + speaks
                + ", this jar "
                + Wire.VERSION
                + ": use the library built with this jar");
      }
      loadedFrom = from;
    } catch (UnsatisfiedLinkError e) {
      failure = e;
      throw e;
    }
  }

  /** Where the library was loaded from, or null if it is not loaded. */
  public static synchronized String loadedFrom() {
    return loadedFrom;
  }

  /** Every byte of a stream ({@code InputStream.readAllBytes} is Java 9). */
  private static byte[] readAll(InputStream in) throws IOException {
    java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
    byte[] buffer = new byte[1 << 16];
    for (int n; (n = in.read(buffer)) > 0; ) {
      out.write(buffer, 0, n);
    }
    return out.toByteArray();
  }

  /** The os-arch directory of the bundled library, e.g. {@code linux-x86_64}. */
  public static String platform() {
    String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
    String arch = System.getProperty("os.arch", "").toLowerCase(Locale.ROOT);
    String osPart =
        os.contains("linux") ? "linux" : os.contains("mac") ? "darwin" : os.replace(' ', '_');
    String archPart = arch;
    if (arch.equals("amd64") || arch.equals("x86_64")) {
      archPart = "x86_64";
    } else if (arch.equals("aarch64") || arch.equals("arm64")) {
      archPart = "aarch64";
    }
    return osPart + "-" + archPart;
  }

  /** The native library's version, e.g. {@code spark-k8s-native 0.1.0 (x86_64-..., release)}. */
  public static String nativeVersion() {
    load();
    return version();
  }

  private static native String version();

  /**
   * Bytes the native library holds on its heap now (its pod cache, queues, Kubernetes client and
   * runtime), as counted by its allocator; the JVM's heap and its own native memory are not in it.
   */
  public static long allocatedBytes() {
    load();
    return nativeAllocatedBytes();
  }

  private static native long nativeAllocatedBytes();

  /** The version of the frames the loaded library sends (see {@link Wire}). */
  private static native int wireVersion();

  private static String locateAndLoad(List<String> tried) {
    String explicit = System.getProperty(PATH_PROPERTY);
    if (explicit != null && !explicit.trim().isEmpty()) {
      try {
        System.load(Paths.get(explicit).toAbsolutePath().toString());
        return explicit;
      } catch (UnsatisfiedLinkError e) {
        // An explicit path that fails is an error of its own: do not fall back silently.
        throw linkError(
            "-D" + PATH_PROPERTY + "=" + explicit + " could not be loaded: " + e.getMessage(), e);
      }
    }
    tried.add(PATH_PROPERTY + ": not set");

    try {
      System.loadLibrary(LIBRARY_NAME);
      return "java.library.path";
    } catch (UnsatisfiedLinkError e) {
      tried.add(
          "java.library.path (" + System.getProperty("java.library.path") + "): " + e.getMessage());
    }

    String resource =
        "/org/sparkk8snative/native/" + platform() + "/" + System.mapLibraryName(LIBRARY_NAME);
    try (InputStream in = NativeLibrary.class.getResourceAsStream(resource)) {
      if (in == null) {
        tried.add("bundled " + resource + ": not in this jar (no build for " + platform() + ")");
      } else {
        Path file = extract(readAll(in));
        try {
          System.load(file.toString());
          return "jar:" + resource + " -> " + file;
        } catch (UnsatisfiedLinkError e) {
          tried.add(
              "bundled "
                  + resource
                  + " extracted to "
                  + file
                  + ": "
                  + e.getMessage()
                  + (e.getMessage() != null && e.getMessage().contains("failed to map segment")
                      ? " (is the directory mounted noexec? set -D" + EXTRACT_DIR_PROPERTY + ")"
                      : ""));
        }
      }
    } catch (IOException e) {
      tried.add("bundled " + resource + ": could not extract: " + e);
    }
    throw linkError(
        "spark-k8s-native: could not load the native library for "
            + platform()
            + ". Tried:\n  - "
            + String.join("\n  - ", tried)
            + "\nBuild it with `cargo build --release` and put its directory on java.library.path,"
            + " or set -D"
            + PATH_PROPERTY
            + "=/path/to/"
            + System.mapLibraryName(LIBRARY_NAME)
            + ".",
        null);
  }

  private static Path extract(byte[] bytes) throws IOException {
    String dirName = System.getProperty(EXTRACT_DIR_PROPERTY, System.getProperty("java.io.tmpdir"));
    Path dir = Paths.get(dirName, "spark-k8s-native-" + sha256(bytes).substring(0, 16));
    Files.createDirectories(dir);
    Path file = dir.resolve(System.mapLibraryName(LIBRARY_NAME));
    if (!Files.exists(file) || Files.size(file) != bytes.length) {
      // Write then rename, so that concurrent JVMs never load a half-written file.
      Path tmp = Files.createTempFile(dir, "lib", ".tmp");
      Files.write(tmp, bytes);
      Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    }
    return file;
  }

  private static String sha256(byte[] bytes) {
    try {
      StringBuilder hex = new StringBuilder(64);
      for (byte b : MessageDigest.getInstance("SHA-256").digest(bytes)) {
        hex.append(Character.forDigit((b >> 4) & 0xf, 16)).append(Character.forDigit(b & 0xf, 16));
      }
      return hex.toString();
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  private static UnsatisfiedLinkError linkError(String message, Throwable cause) {
    UnsatisfiedLinkError error = new UnsatisfiedLinkError(message);
    if (cause != null) {
      error.initCause(cause);
    }
    return error;
  }
}

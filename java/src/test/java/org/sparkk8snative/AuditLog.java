package org.sparkk8snative;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.stream.Stream;

/** The plane's apiserver audit log (LOCALPLANE_AUDIT_LOG): who asked for what. */
public final class AuditLog {
  private static final ObjectMapper JSON = new ObjectMapper();

  private AuditLog() {}

  /**
   * Completed LIST requests of an app's executor pods, by user agent prefix and a part of the
   * request URI (Spark's polling source is the one that selects with spark-exec-inactive!=true; its
   * allocator also LISTs, by other selectors, to delete pods, in both modes).
   */
  public static long podLists(
      TestPlane plane, String appId, String userAgentPrefix, String uriPart) {
    try (Stream<String> lines = Files.lines(Paths.get(plane.var("LOCALPLANE_AUDIT_LOG")))) {
      return lines
          .map(AuditLog::parse)
          .filter(e -> "ResponseComplete".equals(e.path("stage").asText()))
          .filter(e -> "list".equals(e.path("verb").asText()))
          .filter(e -> "pods".equals(e.path("objectRef").path("resource").asText()))
          .filter(e -> e.path("requestURI").asText().contains(appId))
          .filter(e -> e.path("requestURI").asText().contains(uriPart))
          .filter(e -> e.path("userAgent").asText().startsWith(userAgentPrefix))
          .count();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * LISTs of an app's executor pods by its snapshot sources: the native ones (their own user agent,
   * any selector) or Spark's polling source (fabric8's, selecting on spark-exec-inactive).
   */
  public static long snapshotSourceLists(TestPlane plane, String appId) {
    return podLists(plane, appId, "spark-k8s-native", "")
        + podLists(plane, appId, "fabric8", "spark-exec-inactive");
  }

  /** WATCH requests of an app's executor pods opened by its snapshot sources (either kind). */
  public static long snapshotSourceWatches(TestPlane plane, String appId) {
    try (Stream<String> lines = Files.lines(Paths.get(plane.var("LOCALPLANE_AUDIT_LOG")))) {
      // A watch logs ResponseStarted when it opens; both kinds select on spark-exec-inactive.
      return lines
          .filter(line -> line.contains(appId) && line.contains("spark-exec-inactive"))
          .map(AuditLog::parse)
          .filter(e -> "ResponseStarted".equals(e.path("stage").asText()))
          .filter(e -> "watch".equals(e.path("verb").asText()))
          .count();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static JsonNode parse(String line) {
    try {
      return JSON.readTree(line);
    } catch (IOException e) {
      return JSON.createObjectNode();
    }
  }
}

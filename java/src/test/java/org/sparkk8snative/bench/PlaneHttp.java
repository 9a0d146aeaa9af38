package org.sparkk8snative.bench;

import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.security.KeyStore;
import java.security.cert.CertificateFactory;
import java.time.Duration;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;
import org.sparkk8snative.TestPlane;

/**
 * Plain HTTPS to the local apiserver, trusting its CA: for what must not go through a Kubernetes
 * client (the floors, the patches, /metrics), so that no client's own cost is in those figures.
 */
final class PlaneHttp {
  private final String base;
  private final String token;
  private final HttpClient http;

  /** As the plane's admin (system:masters). */
  static PlaneHttp asAdmin(TestPlane plane) {
    return of(plane, "LOCALPLANE_ADMIN_TOKEN_FILE");
  }

  /** As the drivers' identity (the restricted user). */
  static PlaneHttp asDriver(TestPlane plane) {
    return of(plane, "LOCALPLANE_RESTRICTED_TOKEN_FILE");
  }

  private static PlaneHttp of(TestPlane plane, String tokenFileKey) {
    return new PlaneHttp(
        plane.apiserverUrl(), plane.var("LOCALPLANE_CA_FILE"), plane.var(tokenFileKey));
  }

  private PlaneHttp(String base, String caFile, String tokenFile) {
    this.base = base;
    try {
      this.token = Files.readString(Paths.get(tokenFile)).trim();
      KeyStore trust = KeyStore.getInstance(KeyStore.getDefaultType());
      trust.load(null, null);
      try (InputStream in = Files.newInputStream(Paths.get(caFile))) {
        trust.setCertificateEntry(
            "plane-ca", CertificateFactory.getInstance("X.509").generateCertificate(in));
      }
      TrustManagerFactory tmf =
          TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
      tmf.init(trust);
      SSLContext tls = SSLContext.getInstance("TLS");
      tls.init(null, tmf.getTrustManagers(), null);
      this.http =
          HttpClient.newBuilder().sslContext(tls).connectTimeout(Duration.ofSeconds(10)).build();
    } catch (Exception e) {
      throw new IllegalStateException("cannot set up HTTPS to " + base, e);
    }
  }

  HttpRequest.Builder request(String path) {
    return HttpRequest.newBuilder(URI.create(base + path))
        .header("Authorization", "Bearer " + token);
  }

  <T> HttpResponse<T> send(HttpRequest request, HttpResponse.BodyHandler<T> body) {
    try {
      HttpResponse<T> response = http.send(request, body);
      if (response.statusCode() / 100 != 2) {
        throw new IllegalStateException(
            request.method() + " " + request.uri() + ": HTTP " + response.statusCode());
      }
      return response;
    } catch (java.io.IOException e) {
      throw new IllegalStateException(request.method() + " " + request.uri(), e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  String get(String path) {
    return send(request(path).GET().build(), HttpResponse.BodyHandlers.ofString()).body();
  }

  /** A JSON merge patch of a pod's status subresource. */
  void patchPodStatus(String namespace, String pod, String statusJson) {
    mergePatch(
        "/api/v1/namespaces/" + namespace + "/pods/" + pod + "/status",
        "{\"status\":" + statusJson + "}");
  }

  /** A JSON merge patch of the object at {@code path}. */
  void mergePatch(String path, String json) {
    HttpRequest patch =
        request(path)
            .header("Content-Type", "application/merge-patch+json")
            .method("PATCH", HttpRequest.BodyPublishers.ofString(json))
            .build();
    send(patch, HttpResponse.BodyHandlers.discarding());
  }

  static String executorSelector(String applicationId) {
    return "spark-app-selector%3D" + applicationId + "%2Cspark-role%3Dexecutor";
  }
}

package org.sparkk8snative;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.sparkk8snative.TestPlane.eventually;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The handle's contract, and bad input from Java: clear exceptions, never a crash. */
class NativeInformerContractTest {
  private final TestPlane plane = TestPlane.get();

  @Test
  void startTwiceThrowsCloseTwiceIsFineAndAnyCallAfterCloseThrows() {
    NativeInformer informer =
        NativeInformer.create(plane.sparkConf(false), TestPlane.uniqueAppId("contract"));
    informer.start();
    IllegalStateException twice = assertThrows(IllegalStateException.class, informer::start);
    assertTrue(twice.getMessage().contains("already started"), twice.getMessage());
    eventually(
        "synced",
        Duration.ofSeconds(30),
        () -> informer.health().state() == InformerHealth.State.SYNCED);
    assertTrue(informer.listerSnapshot(0) instanceof ListerAnswer.Ready);
    informer.stop();
    informer.stop();
    assertEquals(Optional.empty(), informer.pollChanges(10, 10), "a stopped informer: no change");
    long waitBegan = System.nanoTime();
    ListerAnswer whyNot = informer.listerSnapshot(0, 60_000);
    assertTrue(
        whyNot instanceof ListerAnswer.NotReady
            && ((ListerAnswer.NotReady) whyNot).reason().contains("stopped"),
        whyNot.toString());
    assertTrue(
        System.nanoTime() - waitBegan < 5_000_000_000L, "a stopped informer answers at once");
    assertEquals(InformerHealth.State.STOPPED, informer.health().state());
    informer.close();
    informer.close();
    assertTrue(informer.isClosed());
    for (Runnable call :
        List.<Runnable>of(
            informer::start,
            informer::stop,
            informer::health,
            () -> informer.pollChanges(1, 1),
            () -> informer.listerSnapshot(0),
            () -> informer.listerSnapshot(0, 1),
            () -> informer.changesTakenAfter(0))) {
      IllegalStateException closed = assertThrows(IllegalStateException.class, call::run);
      assertTrue(closed.getMessage().contains("is closed"), closed.getMessage());
    }
  }

  @Test
  void closeDuringABlockedPollReturnsPromptly() throws Exception {
    NativeInformer informer =
        NativeInformer.create(plane.sparkConf(false), TestPlane.uniqueAppId("blocked"));
    informer.start();
    CompletableFuture<Optional<List<PodBatch.Entry>>> poll =
        CompletableFuture.supplyAsync(() -> informer.pollChanges(10, 60_000));
    Thread.sleep(300);
    long began = System.nanoTime();
    informer.close();
    assertEquals(
        Optional.empty(), poll.get(10, TimeUnit.SECONDS), "the blocked poll ends: no change");
    assertTrue(System.nanoTime() - began < Duration.ofSeconds(6).toNanos());
  }

  @Test
  void manyThreadsAtOnceNeitherCrashNorLeak() throws Exception {
    int before = NativeInformer.openInformers();
    List<CompletableFuture<Void>> all = new ArrayList<>();
    for (int i = 0; i < 8; i++) {
      all.add(
          CompletableFuture.runAsync(
              () -> {
                try (NativeInformer informer =
                    NativeInformer.create(
                        plane.sparkConf(false), TestPlane.uniqueAppId("threads"))) {
                  informer.start();
                  informer.health();
                  informer.pollChanges(5, 50);
                  informer.listerSnapshot(0);
                }
              }));
    }
    CompletableFuture.allOf(all.toArray(new CompletableFuture[0])).get(60, TimeUnit.SECONDS);
    assertEquals(before, NativeInformer.openInformers());
  }

  /** A setting's value that must be refused, with the key named; {@code what} tells cases apart. */
  private record BadValue(String key, String value, String what) {
    BadValue(String key, String value) {
      this(key, value, "");
    }

    @Override
    public String toString() {
      return key + (what.isEmpty() ? "" : " (" + what + ")");
    }
  }

  @Test
  void badInputIsRefusedWithTheKeyNamed() throws Exception {
    Path unreadable = Files.createTempFile("token", "");
    Files.setPosixFilePermissions(unreadable, PosixFilePermissions.fromString("---------"));
    Path token = Files.createTempFile("token", "");
    Files.writeString(token, "abc");
    Path garbageCa = Files.createTempFile("ca", ".crt");
    Files.writeString(garbageCa, "this is not a certificate");
    Path emptyToken = Files.createTempFile("token", "");
    List<BadValue> cases = new ArrayList<>();
    cases.add(new BadValue("spark.master", "k8s://not a url"));
    cases.add(new BadValue("spark.master", "yarn", "not k8s"));
    // listerPollingInterval is read by the Java lister source from SparkConf, with Spark's own
    // parser.
    cases.add(new BadValue("spark.kubernetes.native.informer.initialListTimeout", "-5s"));
    cases.add(new BadValue("spark.kubernetes.executor.missingPodDetectDelta", "soon"));
    cases.add(
        new BadValue(
            "spark.kubernetes.executor.missingPodDetectDelta", "99999999999999d", "absurd"));
    cases.add(new BadValue("spark.kubernetes.namespace", "Not_A_Namespace"));
    cases.add(new BadValue("spark.kubernetes.namespace", "n".repeat(10_000_000), "huge"));
    cases.add(new BadValue("spark.kubernetes.namespace", "spark\uD800", "lone surrogate"));
    cases.add(new BadValue("spark.kubernetes.trust.certificates", "maybe"));
    boolean root = "root".equals(System.getProperty("user.name"));
    if (!root) { // root reads any file
      cases.add(
          new BadValue("spark.kubernetes.authenticate.oauthTokenFile", unreadable.toString()));
    }
    cases.add(
        new BadValue(
            "spark.kubernetes.authenticate.oauthTokenFile", "/nonexistent/token", "missing"));
    cases.add(
        new BadValue(
            "spark.kubernetes.authenticate.oauthTokenFile", emptyToken.toString(), "empty"));
    cases.add(new BadValue("spark.kubernetes.authenticate.caCertFile", "/nonexistent/ca.crt"));
    cases.add(
        new BadValue("spark.kubernetes.authenticate.caCertFile", garbageCa.toString(), "garbage"));
    for (BadValue c : cases) {
      Map<String, String> conf = plane.sparkConf(false);
      conf.put(c.key(), c.value());
      IllegalArgumentException refused =
          assertThrows(
              IllegalArgumentException.class,
              () -> NativeInformer.create(conf, "spark-app"),
              c.toString());
      String message = refused.getMessage();
      assertTrue(
          message.startsWith(c.key()),
          c + " -> " + message.substring(0, Math.min(200, message.length())));
    }

    Map<String, String> both = plane.sparkConf(false);
    both.put("spark.kubernetes.authenticate.oauthTokenFile", token.toString());
    both.put("spark.kubernetes.authenticate.oauthToken", "secret-token-value");
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class, () -> NativeInformer.create(both, "spark-app"));
    assertTrue(e.getMessage().contains("oauthToken"), e.getMessage());
    assertTrue(!e.getMessage().contains("secret-token-value"), "the token must not be echoed");

    for (String appId :
        new String[] {
          null,
          "",
          " ",
          "-bad",
          "x".repeat(64),
          "caf\u00e9",
          "a\u0000b",
          "a/b",
          "\uD800",
          "x".repeat(5_000_000)
        }) {
      IllegalArgumentException bad =
          assertThrows(
              IllegalArgumentException.class,
              () -> NativeInformer.create(plane.sparkConf(false), appId),
              String.valueOf(appId).substring(0, Math.min(20, String.valueOf(appId).length())));
      assertTrue(bad.getMessage().contains("applicationId"), bad.getMessage());
    }
    Map<String, String> nullValue = plane.sparkConf(false);
    nullValue.put("spark.kubernetes.namespace", null);
    IllegalArgumentException nv =
        assertThrows(
            IllegalArgumentException.class, () -> NativeInformer.create(nullValue, "spark-app"));
    assertTrue(nv.getMessage().contains("spark.kubernetes.namespace"), nv.getMessage());
    assertThrows(NullPointerException.class, () -> NativeInformer.create(null, "spark-app"));

    NativeInformer informer = NativeInformer.create(plane.sparkConf(false), "spark-bad-args");
    try {
      assertThrows(IllegalArgumentException.class, () -> informer.pollChanges(0, 10));
      assertThrows(IllegalArgumentException.class, () -> informer.pollChanges(10, -1));
      assertThrows(IllegalArgumentException.class, () -> informer.listerSnapshot(-1));
      IllegalArgumentException negativeWait =
          assertThrows(IllegalArgumentException.class, () -> informer.listerSnapshot(0, -1));
      assertTrue(negativeWait.getMessage().contains("waitMillis"), negativeWait.getMessage());
      IllegalArgumentException negativeView =
          assertThrows(IllegalArgumentException.class, () -> informer.changesTakenAfter(-1));
      assertTrue(negativeView.getMessage().contains("view"), negativeView.getMessage());
      informer.start();
      // Extreme but legal values are served, not crashed on.
      assertTrue(informer.pollChanges(Integer.MAX_VALUE, 1).isPresent());
      CompletableFuture<Optional<List<PodBatch.Entry>>> forever =
          CompletableFuture.supplyAsync(() -> informer.pollChanges(1, Long.MAX_VALUE));
      Thread.sleep(200);
      informer.stop();
      assertEquals(Optional.empty(), forever.get(10, TimeUnit.SECONDS), "stopped: no change");
    } finally {
      informer.close();
    }
    IllegalStateException stale =
        assertThrows(IllegalStateException.class, () -> NativeBridge.start(987_654_321L));
    assertTrue(stale.getMessage().contains("987654321"), stale.getMessage());
  }
}

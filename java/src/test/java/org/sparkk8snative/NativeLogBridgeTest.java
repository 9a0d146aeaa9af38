package org.sparkk8snative;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.sparkk8snative.TestPlane.eventually;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Predicate;
import org.apache.logging.log4j.Level;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.core.LogEvent;
import org.apache.logging.log4j.core.LoggerContext;
import org.apache.logging.log4j.core.appender.AbstractAppender;
import org.apache.logging.log4j.core.config.Configuration;
import org.apache.logging.log4j.core.config.Configurator;
import org.apache.logging.log4j.core.config.Property;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** A record emitted in Rust reaches the JVM's log4j log with the Rust module's logger and level. */
class NativeLogBridgeTest {
  private final List<LogEvent> events = new CopyOnWriteArrayList<>();
  private final AbstractAppender capture =
      new AbstractAppender("capture", null, null, true, Property.EMPTY_ARRAY) {
        @Override
        public void append(LogEvent event) {
          events.add(event.toImmutable());
        }
      };
  private final LoggerContext context = (LoggerContext) LogManager.getContext(false);
  private final Configuration config = context.getConfiguration();

  @BeforeEach
  void captureLogs() {
    capture.start();
    config.addAppender(capture);
    config.getRootLogger().addAppender(capture, Level.ALL, null);
    Configurator.setLevel(NativeLogBridge.LOGGER_PREFIX, Level.INFO);
    context.updateLoggers();
  }

  @AfterEach
  void stopCapturing() {
    config.getRootLogger().removeAppender("capture");
    context.updateLoggers();
  }

  /** An informer on the shared plane, started, for an app of its own. */
  private static NativeInformer startedInformer(String appPrefix) {
    NativeInformer informer =
        NativeInformer.create(TestPlane.get().sparkConf(false), TestPlane.uniqueAppId(appPrefix));
    informer.start();
    return informer;
  }

  /** Waits up to 10 s for a captured record that {@code record} accepts. */
  private void awaitRecord(String what, Predicate<LogEvent> record) {
    eventually(what, Duration.ofSeconds(10), () -> events.stream().anyMatch(record));
  }

  @Test
  void rustRecordsReachLog4jWithTheirModuleAndLevel() throws InterruptedException {
    try (NativeInformer informer = startedInformer("logs")) {
      awaitRecord(
          "the informer's INFO record in log4j",
          e ->
              e.getLoggerName().equals("org.sparkk8snative.native.spark_k8s_native.informer")
                  && e.getLevel() == Level.INFO
                  && e.getMessage()
                      .getFormattedMessage()
                      .contains("executor pod informer started"));
    }
    // The most verbose level too: no token in any record.
    Configurator.setLevel(NativeLogBridge.LOGGER_PREFIX, Level.TRACE);
    context.updateLoggers();
    Thread.sleep(1_000); // the bridge passes the level to the native side within half a second
    try (NativeInformer informer = startedInformer("trace")) {
      eventually(
          "synced",
          Duration.ofSeconds(30),
          () -> informer.health().state() == InformerHealth.State.SYNCED);
      awaitRecord(
          "DEBUG records at TRACE level",
          e ->
              e.getLoggerName().startsWith("org.sparkk8snative.native")
                  && e.getLevel() == Level.DEBUG);
    }
    Configurator.setLevel(NativeLogBridge.LOGGER_PREFIX, Level.INFO);
    context.updateLoggers();
    String token = TestPlane.read(TestPlane.get().var("LOCALPLANE_RESTRICTED_TOKEN_FILE"));
    assertFalse(
        events.stream().anyMatch(e -> e.getMessage().getFormattedMessage().contains(token)),
        "no token in any log");
    assertTrue(
        events.stream()
            .noneMatch(
                e ->
                    e.getLoggerName().startsWith("org.sparkk8snative.native.kube")
                        && e.getLevel().isLessSpecificThan(Level.INFO)),
        "dependencies log at WARN at most");
  }

  @Test
  void aMistypedKeyIsNamedInAWarningWithTheKeyItProbablyMeant() {
    Map<String, String> conf = TestPlane.get().sparkConf(false);
    conf.put(MISTYPED_KEY, "5s");
    try (NativeInformer informer = NativeInformer.create(conf, TestPlane.uniqueAppId("typo"))) {
      assertTheMistypedKeyIsNamed();
    }
  }

  /** A driver that runs executor Services without the informer is warned as well. */
  @Test
  void aMistypedKeyIsNamedWhenTheDriverRunsServicesAlone() {
    // Creating the Services' handle sends no request: no apiserver is needed.
    Map<String, String> conf =
        Map.of(
            ConfigKeys.MASTER,
            "k8s://https://127.0.0.1:1",
            ConfigKeys.ENABLE_SERVICE,
            "true",
            ConfigKeys.BLOCK_MANAGER_PORT,
            "7079",
            ConfigKeys.DRIVER_POD_NAME,
            "typo-driver",
            MISTYPED_KEY,
            "5s");
    try (NativeExecutorServices services =
        NativeExecutorServices.create(conf, TestPlane.uniqueAppId("typo-services"))) {
      assertTheMistypedKeyIsNamed();
    }
  }

  private static final String MISTYPED_KEY = "spark.kubernetes.native.lister.staleBond";

  private void assertTheMistypedKeyIsNamed() {
    eventually(
        "the warning about the mistyped key",
        Duration.ofSeconds(10),
        () ->
            events.stream()
                .anyMatch(
                    e ->
                        e.getLevel() == Level.WARN
                            && e.getLoggerName().startsWith(NativeLogBridge.LOGGER_PREFIX)
                            && e.getMessage()
                                .getFormattedMessage()
                                .contains(
                                    "unknown key "
                                        + MISTYPED_KEY
                                        + "; did you mean spark.kubernetes.native.lister.staleBound?")));
  }
}

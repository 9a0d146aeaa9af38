package org.sparkk8snative;

import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Forwards the native library's log records to slf4j (the driver's log4j log), from one daemon
 * thread that pulls them: native threads never call into the JVM. A record from Rust module {@code
 * spark_k8s_native::informer} is logged by logger {@code
 * org.sparkk8snative.native.spark_k8s_native.informer}, at the same level. The native level follows
 * the level of logger {@code org.sparkk8snative.native}.
 */
public final class NativeLogBridge {
  /** Parent of every native logger; its level is the native level. */
  public static final String LOGGER_PREFIX = "org.sparkk8snative.native";

  private static final Logger ROOT = LoggerFactory.getLogger(LOGGER_PREFIX);
  private static final ConcurrentHashMap<String, Logger> LOGGERS = new ConcurrentHashMap<>();
  private static Thread thread;

  private NativeLogBridge() {}

  /** Starts the forwarding thread once per JVM. */
  public static synchronized void ensureStarted() {
    if (thread != null) {
      return;
    }
    NativeBridge.setLogLevel(currentLevel());
    thread = new Thread(NativeLogBridge::forward, "spark-k8s-native-log-bridge");
    thread.setDaemon(true);
    thread.start();
  }

  private static void forward() {
    int level = -1;
    while (true) {
      try {
        int wanted = currentLevel();
        if (wanted != level) {
          NativeBridge.setLogLevel(wanted);
          level = wanted;
        }
        String[] records = NativeBridge.pollLogs(512, 500);
        for (int i = 0; i + 2 < records.length; i += 3) {
          log(Integer.parseInt(records[i]), records[i + 1], records[i + 2]);
        }
      } catch (Throwable t) {
        // The bridge must outlive any single bad record.
        ROOT.warn("native log bridge: {}", t.toString());
        try {
          Thread.sleep(1000);
        } catch (InterruptedException e) {
          return;
        }
      }
    }
  }

  static Logger loggerFor(String rustTarget) {
    return LOGGERS.computeIfAbsent(
        rustTarget, t -> LoggerFactory.getLogger(LOGGER_PREFIX + "." + t.replace("::", ".")));
  }

  private static void log(int level, String target, String message) {
    Logger logger = loggerFor(target);
    if (level == 1) {
      logger.error(message);
    } else if (level == 2) {
      logger.warn(message);
    } else if (level == 3) {
      logger.info(message);
    } else if (level == 4) {
      logger.debug(message);
    } else {
      logger.trace(message);
    }
  }

  /** The most verbose level enabled on the native root logger: 0 OFF .. 5 TRACE. */
  private static int currentLevel() {
    if (ROOT.isTraceEnabled()) {
      return 5;
    } else if (ROOT.isDebugEnabled()) {
      return 4;
    } else if (ROOT.isInfoEnabled()) {
      return 3;
    } else if (ROOT.isWarnEnabled()) {
      return 2;
    } else if (ROOT.isErrorEnabled()) {
      return 1;
    }
    return 0;
  }
}

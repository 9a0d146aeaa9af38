package org.sparkk8snative.spark;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.logging.log4j.Level;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.core.LogEvent;
import org.apache.logging.log4j.core.LoggerContext;
import org.apache.logging.log4j.core.appender.AbstractAppender;
import org.apache.logging.log4j.core.config.Configuration;
import org.apache.logging.log4j.core.config.Property;

/**
 * Captures what one class logs through log4j (Spark's slf4j backend), for tests that assert a log
 * line.
 */
public final class LogCapture implements AutoCloseable {
  private final List<LogEvent> events = new CopyOnWriteArrayList<>();
  private final LoggerContext context = (LoggerContext) LogManager.getContext(false);
  private final String logger;
  private final AbstractAppender appender;

  private LogCapture(Class<?> type) {
    logger = type.getName();
    appender =
        new AbstractAppender("capture-" + logger, null, null, true, Property.EMPTY_ARRAY) {
          @Override
          public void append(LogEvent event) {
            events.add(event.toImmutable());
          }
        };
  }

  public static LogCapture of(Class<?> type) {
    return of(type, Level.DEBUG);
  }

  /** Captures what {@code type} logs at {@code level} and above, and sets its logger to that. */
  public static LogCapture of(Class<?> type, Level level) {
    LogCapture capture = new LogCapture(type);
    capture.appender.start();
    Configuration config = capture.context.getConfiguration();
    config.addAppender(capture.appender);
    config.getRootLogger().addAppender(capture.appender, Level.ALL, null);
    org.apache.logging.log4j.core.config.Configurator.setLevel(capture.logger, level);
    capture.context.updateLoggers();
    return capture;
  }

  /** Whether the class logged, at {@code level}, a message containing {@code text}. */
  public boolean logged(Level level, String text) {
    return !messages(level, text).isEmpty();
  }

  /** The messages the class logged at {@code level} containing {@code text}, in order. */
  public List<String> messages(Level level, String text) {
    return events.stream()
        .filter(e -> e.getLoggerName().equals(logger) && e.getLevel() == level)
        .map(e -> e.getMessage().getFormattedMessage())
        .filter(m -> m.contains(text))
        .toList();
  }

  @Override
  public void close() {
    context.getConfiguration().getRootLogger().removeAppender(appender.getName());
    context.updateLoggers();
    appender.stop();
  }
}

package org.sparkk8snative;

import java.lang.ref.Cleaner;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.LongConsumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A native handle owned by one Java object: released once, on {@code close()} or, as a safety net,
 * by a {@link Cleaner} when the owner is collected without being closed (then with a WARN line,
 * since that release runs on the Cleaner's thread, which would drop an exception unseen).
 */
final class NativeHandle {
  private static final Cleaner CLEANER = Cleaner.create();

  private final long id;
  private final AtomicBoolean closed = new AtomicBoolean();
  private final Cleaner.Cleanable cleanable;

  /**
   * @param owner the object whose collection releases the handle (its class names the logger)
   * @param release closes the native handle
   * @param what names the handle in the log line, e.g. {@code "The informer of app-1"}
   */
  NativeHandle(Object owner, long id, LongConsumer release, String what) {
    this.id = id;
    Logger log = LoggerFactory.getLogger(owner.getClass());
    this.cleanable = CLEANER.register(owner, new Release(id, release, what, closed, log));
  }

  long id() {
    return id;
  }

  /** Releases the handle; harmless when called again. A failure goes to the caller. */
  void close() {
    if (closed.compareAndSet(false, true)) {
      cleanable.clean();
    }
  }

  boolean isClosed() {
    return closed.get();
  }

  /** Must not reference the owner, or it would never be collected; it shares only the flag. */
  private static final class Release implements Runnable {
    private final long id;
    private final LongConsumer release;
    private final String what;
    private final AtomicBoolean closed;
    private final Logger log;

    Release(long id, LongConsumer release, String what, AtomicBoolean closed, Logger log) {
      this.id = id;
      this.release = release;
      this.what = what;
      this.closed = closed;
      this.log = log;
    }

    @Override
    public void run() {
      if (closed.get()) {
        release.accept(id);
        return;
      }
      log.warn("{} was not closed: releasing its native handle as it is garbage-collected", what);
      try {
        release.accept(id);
      } catch (RuntimeException e) {
        log.warn("Could not release the native handle of {}", what, e);
      }
    }
  }
}

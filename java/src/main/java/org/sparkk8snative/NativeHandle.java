package org.sparkk8snative;

import java.lang.ref.PhantomReference;
import java.lang.ref.ReferenceQueue;
import java.util.Collections;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.LongConsumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A native handle owned by one Java object: released once, on {@code close()} or, as a safety net,
 * when the owner is collected without being closed (then with a WARN line, since that release runs
 * on the reaper's thread, which would drop an exception unseen). The reaper is what {@code
 * java.lang.ref.Cleaner} does, written out because the Spark 3.5 artifact runs on Java 8.
 */
final class NativeHandle {
  private final long id;
  private final AtomicBoolean closed = new AtomicBoolean();
  private final Reaper.Cleanable cleanable;

  /**
   * @param owner the object whose collection releases the handle (its class names the logger)
   * @param release closes the native handle
   * @param what names the handle in the log line, e.g. {@code "The informer of app-1"}
   */
  NativeHandle(Object owner, long id, LongConsumer release, String what) {
    this.id = id;
    Logger log = LoggerFactory.getLogger(owner.getClass());
    this.cleanable = Reaper.register(owner, new Release(id, release, what, closed, log));
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

  /**
   * Runs an action once, on {@link Cleanable#clean} or after its owner became phantom reachable, on
   * one daemon thread started with the first registration (as {@code Cleaner.create()} does).
   */
  static final class Reaper {
    private static final ReferenceQueue<Object> QUEUE = new ReferenceQueue<>();

    /** Keeps the references themselves reachable until they are cleaned. */
    private static final Set<Cleanable> PENDING =
        Collections.newSetFromMap(new ConcurrentHashMap<Cleanable, Boolean>());

    private static boolean started;

    private Reaper() {}

    static synchronized Cleanable register(Object owner, Runnable action) {
      if (!started) {
        Thread thread = new Thread(Reaper::reap, "spark-k8s-native-handle-reaper");
        thread.setDaemon(true);
        thread.start();
        started = true;
      }
      Cleanable cleanable = new Cleanable(owner, action);
      PENDING.add(cleanable);
      return cleanable;
    }

    private static void reap() {
      while (true) {
        try {
          ((Cleanable) QUEUE.remove()).clean();
        } catch (InterruptedException e) {
          // A daemon thread that lives with the JVM, as the JDK's Cleaner thread does.
        } catch (RuntimeException e) {
          // Release logs its own failures; nothing may stop the reaper.
        }
      }
    }

    static final class Cleanable extends PhantomReference<Object> {
      private final AtomicBoolean done = new AtomicBoolean();
      private final Runnable action;

      private Cleanable(Object owner, Runnable action) {
        super(owner, QUEUE);
        this.action = action;
      }

      /** Runs the action unless it ran; a failure goes to the caller. */
      void clean() {
        if (done.compareAndSet(false, true)) {
          PENDING.remove(this);
          clear();
          action.run();
        }
      }
    }
  }
}

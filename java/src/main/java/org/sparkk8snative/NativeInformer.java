package org.sparkk8snative;

import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * A native executor-pod informer: one list, then one long-lived watch of an app's executor pods,
 * kept in a native cache. {@link #start()} returns at once and never fails because the apiserver is
 * slow or down; {@link #health()} says how it is doing.
 *
 * <p>Thread-safe. Closing twice is harmless; any other call after {@link #close()} throws {@link
 * IllegalStateException}. A forgotten informer is closed when it is collected (see {@link
 * NativeHandle}).
 */
public final class NativeInformer implements AutoCloseable {
  private final NativeHandle nativeHandle;
  private final long handle;
  private final String applicationId;

  private NativeInformer(long handle, String applicationId) {
    this.handle = handle;
    this.applicationId = applicationId;
    this.nativeHandle =
        new NativeHandle(this, handle, NativeBridge::close, "The informer of " + applicationId);
  }

  /**
   * Creates an informer from Spark configuration entries (master, namespace, credentials and the
   * informer keys; see docs/configuration.md). Sends no request yet.
   *
   * @throws IllegalArgumentException naming the key whose value cannot be used
   */
  public static NativeInformer create(Map<String, String> sparkConf, String applicationId) {
    String[] flat = NativeBridge.flatten(sparkConf);
    NativeLogBridge.ensureStarted();
    return new NativeInformer(NativeBridge.create(flat, applicationId), applicationId);
  }

  public String applicationId() {
    return applicationId;
  }

  /** The native handle, for executor Services that share this informer's Service controller. */
  long handleId() {
    return handle;
  }

  /** Starts listing and watching in the background; returns at once. A second start throws. */
  public void start() {
    NativeBridge.start(handle);
  }

  /** Stops listing and watching; idempotent, bounded (5 s). Blocked polls return null. */
  public void stop() {
    NativeBridge.stop(handle);
  }

  /**
   * Waits up to {@code timeoutMillis} for pod changes. Returns an empty list when none came, and
   * nothing once the informer is stopped: no change will come.
   */
  public Optional<List<PodBatch.Entry>> pollChanges(int maxBatch, long timeoutMillis) {
    return Wire.changes(NativeBridge.pollChanges(handle, maxBatch, timeoutMillis));
  }

  /**
   * A full snapshot of the cache for Spark's {@code replaceSnapshot}, with pods whose generation is
   * at most {@code knownView} (the view of the caller's previous snapshot; 0: none) marked {@link
   * PodBatch#UNCHANGED} (no JSON); {@link ListerAnswer.Unchanged} when the cache is still at that
   * view; or {@link ListerAnswer.NotReady} while no snapshot may be taken.
   *
   * <p>While none may be taken it waits up to {@code waitMillis} for that to change: the first list
   * to complete, or, when a quiet watch last proved the cache current longer ago than the stale
   * bound, the watch's next renewal, right after which a snapshot is proven current. A stopped
   * informer answers NotReady at once.
   */
  public ListerAnswer listerSnapshot(long knownView, long waitMillis) {
    return Wire.listerAnswer(NativeBridge.listerSnapshot(handle, knownView, waitMillis));
  }

  /**
   * Whether {@link #pollChanges} has handed out a change newer than the lister snapshot of {@code
   * view}: that change may reach Spark first, so the snapshot must not be handed to Spark after it
   * (Spark's store would go back in time). Asked under the lock the changes are handed on under.
   */
  public boolean changesTakenAfter(long view) {
    return NativeBridge.changesTakenAfter(handle, view);
  }

  /** {@link #listerSnapshot(long, long)} without waiting. */
  public ListerAnswer listerSnapshot(long knownView) {
    return listerSnapshot(knownView, 0);
  }

  public InformerHealth health() {
    return Wire.health(NativeBridge.health(handle));
  }

  /** Stops the informer and releases it; harmless when called again. */
  @Override
  public void close() {
    nativeHandle.close();
  }

  public boolean isClosed() {
    return nativeHandle.isClosed();
  }

  /** Informers created and not yet closed, in this JVM. */
  public static int openInformers() {
    return NativeBridge.openHandles();
  }
}

package org.sparkk8snative;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;
import java.io.ByteArrayInputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * Decodes what the native side sends (see {@code snapshot.rs}): a version byte, the view (the
 * cache generation a lister snapshot shows), a count, then entries of kind, generation, pod name
 * and the pod as JSON. Pods are decoded with Spark's own
 * fabric8 model, lazily, so that a pod the caller already holds is never decoded again.
 */
public final class PodBatch {
  /** A changed pod. */
  public static final byte APPLIED = 0;
  /** A deleted pod (its JSON carries a deletionTimestamp). */
  public static final byte DELETED = 1;
  /** In a lister snapshot: unchanged since the caller's known generation; no JSON. */
  public static final byte UNCHANGED = 2;

  private static final byte FORMAT_VERSION = 2;
  /** The lister's one-byte answer: the cache is exactly as the caller's known generation. */
  private static final byte UNCHANGED_SINCE_KNOWN = 1;
  private static final KubernetesSerialization SERIALIZATION = new KubernetesSerialization();

  /** One entry of a batch. */
  public static final class Entry {
    private final byte kind;
    private final long generation;
    private final String name;
    private final byte[] buffer;
    private final int jsonOffset;
    private final int jsonLength;

    Entry(byte kind, long generation, String name, byte[] buffer, int jsonOffset, int jsonLength) {
      this.kind = kind;
      this.generation = generation;
      this.name = name;
      this.buffer = buffer;
      this.jsonOffset = jsonOffset;
      this.jsonLength = jsonLength;
    }

    public byte kind() {
      return kind;
    }

    /** Strictly increasing per informer: a new value for every change of the pod. */
    public long generation() {
      return generation;
    }

    public String podName() {
      return name;
    }

    /** Decodes the pod; not available for {@link #UNCHANGED} entries. */
    public Pod decodePod() {
      if (kind == UNCHANGED) {
        throw new IllegalStateException("pod " + name + " is unchanged: the snapshot carries no JSON for it");
      }
      try {
        return SERIALIZATION.unmarshal(new ByteArrayInputStream(buffer, jsonOffset, jsonLength), Pod.class);
      } catch (RuntimeException e) {
        throw new IllegalArgumentException("pod " + name + ": undecodable JSON from the native library", e);
      }
    }
  }

  private PodBatch() {}

  /** Decodes a batch; an {@link IllegalArgumentException} if it is malformed. */
  public static List<Entry> decode(byte[] bytes) {
    if (bytes == null || bytes.length == 0) {
      return Collections.emptyList();
    }
    ByteBuffer in = ByteBuffer.wrap(bytes);
    try {
      byte version = in.get();
      if (version != FORMAT_VERSION) {
        throw new IllegalArgumentException("unknown batch format version " + version);
      }
      in.getLong(); // the view: see viewGeneration
      int count = in.getInt();
      List<Entry> entries = new ArrayList<>(count);
      for (int i = 0; i < count; i++) {
        byte kind = in.get();
        long generation = in.getLong();
        int nameLength = Short.toUnsignedInt(in.getShort());
        String name = new String(bytes, in.position(), nameLength, StandardCharsets.UTF_8);
        in.position(in.position() + nameLength);
        int jsonLength = in.getInt();
        int jsonOffset = in.position();
        in.position(jsonOffset + jsonLength);
        entries.add(new Entry(kind, generation, name, bytes, jsonOffset, jsonLength));
      }
      if (in.hasRemaining()) {
        throw new IllegalArgumentException(in.remaining() + " bytes after the last entry");
      }
      return entries;
    } catch (RuntimeException e) {
      throw new IllegalArgumentException("malformed batch from the native library: " + e.getMessage(), e);
    }
  }

  /** The cache generation a lister snapshot shows (0 for change batches). */
  static long viewGeneration(byte[] bytes) {
    if (bytes.length < 9 || bytes[0] != FORMAT_VERSION) {
      throw new IllegalArgumentException("malformed batch from the native library: no view generation");
    }
    return ByteBuffer.wrap(bytes, 1, 8).getLong();
  }

  /** Whether a lister answer means "nothing changed since the known generation". */
  static boolean isUnchangedSinceKnown(byte[] bytes) {
    return bytes != null && bytes.length == 1 && bytes[0] == UNCHANGED_SINCE_KNOWN;
  }

  /** Whether a lister answer means "not ready" (then {@link #notReadyReason} says why). */
  static boolean isNotReady(byte[] bytes) {
    return bytes != null && bytes.length > 0 && bytes[0] == 0;
  }

  static String notReadyReason(byte[] bytes) {
    return new String(bytes, 1, bytes.length - 1, StandardCharsets.UTF_8);
  }
}

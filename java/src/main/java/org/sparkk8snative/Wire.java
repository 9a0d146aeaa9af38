package org.sparkk8snative;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * Decodes the frames the native library sends. The format is described once, in the Rust module
 * {@code src/wire.rs}; {@link NativeLibrary#load()} refuses a library that speaks another {@link
 * #VERSION}. Every frame is big-endian and starts with the version and a tag. Nothing here knows
 * fabric8: pods stay JSON bytes until the Spark glue decodes them.
 */
final class Wire {
  static final int VERSION = 7;

  private static final byte TAG_CHANGES = 1;
  private static final byte TAG_SNAPSHOT = 2;
  private static final byte TAG_UNCHANGED = 3;
  private static final byte TAG_NOT_READY = 4;
  private static final byte TAG_HEALTH = 5;

  private Wire() {}

  /**
   * A CHANGES frame: pod changes for Spark's updatePod; or NOT_READY, which {@code pollChanges}
   * answers once the informer is stopped: empty.
   */
  static Optional<List<PodBatch.Entry>> changes(byte[] frame) {
    return decode(
        frame,
        in -> {
          byte tag = in.get();
          switch (tag) {
            case TAG_CHANGES:
              return Optional.of(entries(in, frame));
            case TAG_NOT_READY:
              in.position(in.limit());
              return Optional.empty();
            default:
              throw new IllegalArgumentException("not pod changes: tag " + tag);
          }
        });
  }

  /** A SNAPSHOT, UNCHANGED or NOT_READY frame: the lister's answer. */
  static ListerAnswer listerAnswer(byte[] frame) {
    return decode(
        frame,
        in -> {
          byte tag = in.get();
          switch (tag) {
            case TAG_SNAPSHOT:
              {
                long view = in.getLong();
                return new ListerAnswer.Ready(entries(in, frame), view, frame.length);
              }
            case TAG_UNCHANGED:
              return new ListerAnswer.Unchanged(in.getLong(), frame.length);
            case TAG_NOT_READY:
              {
                String reason =
                    new String(frame, in.position(), in.remaining(), StandardCharsets.UTF_8);
                in.position(in.limit());
                return new ListerAnswer.NotReady(reason, frame.length);
              }
            default:
              throw new IllegalArgumentException("not a lister answer: tag " + tag);
          }
        });
  }

  /** A HEALTH frame. */
  static InformerHealth health(byte[] frame) {
    return decode(
        frame,
        in -> {
          expect(in, TAG_HEALTH);
          InformerHealth.State state = InformerHealth.State.values()[in.get()];
          boolean hasSynced = in.get() != 0;
          int consecutiveFailures = in.getInt();
          long[] counters = new long[11];
          for (int i = 0; i < counters.length; i++) {
            counters[i] = in.getLong();
          }
          String phase = string(in, frame);
          String description = string(in, frame);
          return new InformerHealth(
              state, hasSynced, consecutiveFailures, counters, phase, description);
        });
  }

  private interface Body<T> {
    T read(ByteBuffer in);
  }

  private static <T> T decode(byte[] frame, Body<T> body) {
    if (frame == null || frame.length < 2) {
      throw new IllegalArgumentException("malformed frame from the native library: too short");
    }
    ByteBuffer in = ByteBuffer.wrap(frame);
    try {
      byte version = in.get();
      if (version != VERSION) {
        throw new IllegalArgumentException(
            "wire format version " + version + ", expected " + VERSION);
      }
      T decoded = body.read(in);
      if (in.hasRemaining()) {
        throw new IllegalArgumentException(in.remaining() + " bytes after the end");
      }
      return decoded;
    } catch (RuntimeException e) {
      throw new IllegalArgumentException(
          "malformed frame from the native library: " + e.getMessage(), e);
    }
  }

  private static void expect(ByteBuffer in, byte tag) {
    byte got = in.get();
    if (got != tag) {
      throw new IllegalArgumentException("tag " + got + ", expected " + tag);
    }
  }

  private static List<PodBatch.Entry> entries(ByteBuffer in, byte[] frame) {
    int count = in.getInt();
    List<PodBatch.Entry> entries = new ArrayList<>(Math.min(count, 1 << 16));
    for (int i = 0; i < count; i++) {
      byte kind = in.get();
      long generation = in.getLong();
      String name = string(in, frame);
      int jsonLength = in.getInt();
      int jsonOffset = in.position();
      in.position(jsonOffset + jsonLength);
      entries.add(new PodBatch.Entry(kind, generation, name, frame, jsonOffset, jsonLength));
    }
    return entries;
  }

  private static String string(ByteBuffer in, byte[] frame) {
    int length = in.getInt();
    String s = new String(frame, in.position(), length, StandardCharsets.UTF_8);
    in.position(in.position() + length);
    return s;
  }
}

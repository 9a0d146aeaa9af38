package org.sparkk8snative;

import java.io.ByteArrayInputStream;
import java.io.InputStream;

/**
 * The pods of a change batch or a lister snapshot (decoded by {@link Wire}), each still JSON: the
 * Spark glue decodes them into Spark's fabric8 model, and only the states it does not hold yet.
 */
public final class PodBatch {
  /** A changed pod. */
  public static final byte APPLIED = 0;

  /** A deleted pod. */
  public static final byte DELETED = 1;

  /** In a lister snapshot: the caller holds this generation of the pod; no JSON. */
  public static final byte UNCHANGED = 2;

  private PodBatch() {}

  /** One pod of a batch. */
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

    /** Names this state of the pod: a new value for every change, unique in the process. */
    public long generation() {
      return generation;
    }

    public String podName() {
      return name;
    }

    /**
     * The pod as JSON (the Kubernetes wire format); not available for {@link #UNCHANGED} entries.
     */
    public InputStream json() {
      if (kind == UNCHANGED) {
        throw new IllegalStateException(
            "pod " + name + " is unchanged: the snapshot carries no JSON for it");
      }
      return new ByteArrayInputStream(buffer, jsonOffset, jsonLength);
    }
  }
}

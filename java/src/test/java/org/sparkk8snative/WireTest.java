package org.sparkk8snative;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** Frames built by hand as src/wire.rs describes them decode to the right answers. */
class WireTest {
  private static byte[] frame(int tag, byte[] body) {
    return ByteBuffer.allocate(2 + body.length)
        .put((byte) Wire.VERSION)
        .put((byte) tag)
        .put(body)
        .array();
  }

  @Test
  void listerAnswersDecodeToTheirType() {
    byte[] reason = "the cache may be stale".getBytes(StandardCharsets.UTF_8);
    byte[] notReady = frame(4, reason);
    assertEquals(
        new ListerAnswer.NotReady("the cache may be stale", notReady.length),
        Wire.listerAnswer(notReady));
    byte[] unchanged = frame(3, ByteBuffer.allocate(8).putLong(42).array());
    assertEquals(new ListerAnswer.Unchanged(42, unchanged.length), Wire.listerAnswer(unchanged));
    byte[] name = "p1".getBytes(StandardCharsets.UTF_8);
    byte[] json = "{}".getBytes(StandardCharsets.UTF_8);
    ByteBuffer body = ByteBuffer.allocate(8 + 4 + 1 + 8 + 4 + name.length + 4 + json.length);
    body.putLong(7)
        .putInt(1)
        .put(PodBatch.APPLIED)
        .putLong(5)
        .putInt(name.length)
        .put(name)
        .putInt(json.length)
        .put(json);
    ListerAnswer.Ready ready = (ListerAnswer.Ready) Wire.listerAnswer(frame(2, body.array()));
    assertEquals(7, ready.view());
    assertEquals("p1", ready.entries().get(0).podName());
    assertEquals(5, ready.entries().get(0).generation());
  }

  @Test
  void pollChangesAnswersChangesOrNothingOnceStopped() {
    assertEquals(
        Optional.of(List.of()), Wire.changes(frame(1, ByteBuffer.allocate(4).putInt(0).array())));
    byte[] stopped = "the informer is stopped".getBytes(StandardCharsets.UTF_8);
    assertEquals(Optional.empty(), Wire.changes(frame(4, stopped)));
    assertThrows(IllegalArgumentException.class, () -> Wire.changes(frame(5, new byte[0])));
  }

  @Test
  void anotherVersionOrTrailingBytesAreRefused() {
    byte[] other = frame(4, new byte[0]);
    other[0] = (byte) (Wire.VERSION + 1);
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> Wire.listerAnswer(other));
    assertTrue(e.getMessage().contains("version"), e.getMessage());
    byte[] trailing = frame(3, ByteBuffer.allocate(9).putLong(1).put((byte) 0).array());
    assertThrows(IllegalArgumentException.class, () -> Wire.listerAnswer(trailing));
  }
}

package org.sparkk8snative.bench;

import java.io.BufferedReader;
import java.io.IOException;
import java.util.function.BiConsumer;

/**
 * How a benchmark and the JVMs it starts talk over the child's stdout: a figure is a line {@code
 * BENCH <key> <value>}, and {@code BENCH READY <phase>} says the child waits for the benchmark
 * (which answers with a line on the child's stdin). Any other line is the child's own output.
 */
final class BenchLines {
  private BenchLines() {}

  /** Prints one figure, or with key {@code READY} the phase the child waits in. */
  static void emit(String key, Object value) {
    System.out.println("BENCH " + key + " " + value);
    System.out.flush();
  }

  /**
   * Reads figures, each to {@code figure}, up to the next {@code READY}: returns its phase, or null
   * at the end of the output.
   */
  static String readUntilReady(BufferedReader out, BiConsumer<String, String> figure)
      throws IOException {
    String line;
    while ((line = out.readLine()) != null) {
      if (!line.startsWith("BENCH ")) {
        continue;
      }
      String[] parts = line.split(" ", 3);
      if (parts[1].equals("READY")) {
        return parts[2];
      }
      figure.accept(parts[1], parts[2]);
    }
    return null;
  }
}

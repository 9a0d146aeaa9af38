package org.sparkk8snative.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * BENCHMARKS.md is made of sections, each between {@code <!-- NAME:start -->} and {@code <!--
 * NAME:end -->} and rewritten by the benchmark that names it; the rest of the file is left alone.
 * (benches/informer.rs does the same for its section, in Rust.)
 */
public final class MarkdownSections {
  private MarkdownSections() {}

  /** Replaces section {@code name} of {@code file} with {@code body}, or appends it. */
  public static void write(Path file, String name, String body) throws IOException {
    String start = "<!-- " + name + ":start -->";
    String end = "<!-- " + name + ":end -->";
    String section = start + "\n" + body + (body.endsWith("\n") ? "" : "\n") + end + "\n";
    String text = Files.exists(file) ? Files.readString(file) : "# Benchmarks\n\n";
    int from = text.indexOf(start);
    int to = text.indexOf(end);
    if (from >= 0 && to > from) {
      int after = Math.min(text.length(), to + end.length() + 1);
      text = text.substring(0, from) + section + text.substring(after);
    } else {
      text = text + (text.endsWith("\n") ? "" : "\n") + section;
    }
    Files.createDirectories(file.toAbsolutePath().getParent());
    Files.writeString(file, text);
  }
}

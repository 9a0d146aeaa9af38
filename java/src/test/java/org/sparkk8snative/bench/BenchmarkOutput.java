package org.sparkk8snative.bench;

import java.io.IOException;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.List;

/**
 * What a benchmark's report writes: its section of BENCHMARKS.md, its README headline, the line it
 * prints, and the figures it lacks. scripts/bench.sh names the files, all under target/; only
 * {@code scripts/bench.sh publish} copies them into the repository.
 */
interface BenchmarkOutput {
  /** Each figure the report should have and lacks; a run that lacks any fails. */
  List<String> missing();

  String headline();

  /** Its section of BENCHMARKS.md. */
  String section();

  /** Its table for the README, from this run's figures. */
  String readmeHeadline();

  /** The names of a report's section of BENCHMARKS.md and of its README table. */
  record Sections(String benchmarks, String readme) {}

  /** Draws a report's chart. */
  interface Chart<R> {
    void write(R report, Path file) throws IOException;
  }

  /**
   * Writes {@code report}'s section, chart and README table, under the names {@code sections}
   * gives, to the files a benchmark's {@code main} was given ({@code args[1]}, {@code args[2]},
   * {@code args[3]}), prints its headline, and exits: 1 if a figure is missing.
   */
  static <R extends BenchmarkOutput> void writeAndExit(
      String tag, Sections sections, R report, Chart<R> chart, String[] args) throws IOException {
    MarkdownSections.write(Paths.get(args[1]), sections.benchmarks(), report.section());
    chart.write(report, Paths.get(args[2]));
    MarkdownSections.write(Paths.get(args[3]), sections.readme(), report.readmeHeadline());
    System.out.println(report.headline());
    List<String> missing = report.missing();
    if (!missing.isEmpty()) {
      System.err.println("[" + tag + "] incomplete run: " + String.join("; ", missing));
      System.exit(1);
    }
    System.exit(0);
  }
}

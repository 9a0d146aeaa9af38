package org.sparkk8snative.bench;

import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Font;
import java.awt.Graphics2D;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;

/**
 * The PNG next to BENCHMARKS.md: patch-to-store latency distributions (CDF) and apiserver requests
 * per driver-hour by verb. Plain Java2D, headless.
 */
final class BenchmarkChart {
  private BenchmarkChart() {}

  static void write(BenchmarkReport report, Path file) throws IOException {
    Charts.writePng(
        file,
        g -> {
          latencies(g, report, 60, 50, 500, 360);
          requests(g, report, 700, 50, 450, 360);
        });
  }

  private static void latencies(Graphics2D g, BenchmarkReport report, int x, int y, int w, int h) {
    double xMax = 0;
    for (String run : SnapshotSourcesBenchmark.RUNS) {
      xMax = Math.max(xMax, BenchmarkReport.percentile(report.latenciesMillis(run), 0.995));
    }
    xMax = xMax <= 0 || Double.isNaN(xMax) ? 1 : xMax * 1.1;
    Charts.frame(g, "Status PATCH -> Spark's store: latency CDF (ms)", x, y, w, h);
    ticks(g, x, y, w, h, xMax, "%.1f", 1.0, "%.0f%%", 100);
    int legendY = y + h - 20 - 18 * SnapshotSourcesBenchmark.RUNS.size();
    for (String run : SnapshotSourcesBenchmark.RUNS) {
      double[] l = report.latenciesMillis(run);
      g.setColor(Charts.color(run));
      g.setStroke(new BasicStroke(2f));
      int px = x;
      int py = y + h;
      for (int i = 0; i < l.length; i++) {
        int nx = x + (int) (Math.min(l[i], xMax) / xMax * w);
        int ny = y + h - (int) ((i + 1) / (double) l.length * h);
        g.drawLine(px, py, nx, py);
        g.drawLine(nx, py, nx, ny);
        px = nx;
        py = ny;
      }
      legendY += 18;
      g.fillRect(x + w - 220, legendY - 10, 14, 4);
      g.setColor(Color.BLACK);
      g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 12));
      g.drawString(
          String.format(
              "%s  p99 %.2f ms",
              run.equals("floor") ? "raw watch" : run, BenchmarkReport.percentile(l, 0.99)),
          x + w - 200,
          legendY - 4);
    }
  }

  private static void requests(Graphics2D g, BenchmarkReport report, int x, int y, int w, int h) {
    List<String> verbs = List.of("LIST", "WATCH", "GET");
    double yMax = 1;
    for (String c : BenchmarkReport.CONTENDERS) {
      for (String verb : verbs) {
        yMax = Math.max(yMax, report.number(c, "requests." + verb + ".perHour"));
      }
    }
    yMax *= 1.15;
    Charts.frame(
        g,
        "Apiserver pod requests per driver-hour (" + report.plan().steadyPods() + " executors)",
        x,
        y,
        w,
        h);
    ticks(g, x, y, w, h, 0, null, yMax, "%.0f", 1);
    int group = w / verbs.size();
    int bar = (group - 30) / BenchmarkReport.CONTENDERS.size();
    g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 11));
    for (int v = 0; v < verbs.size(); v++) {
      int gx = x + v * group + 15;
      for (int c = 0; c < BenchmarkReport.CONTENDERS.size(); c++) {
        String contender = BenchmarkReport.CONTENDERS.get(c);
        double value = report.number(contender, "requests." + verbs.get(v) + ".perHour");
        value = Double.isNaN(value) ? 0 : value;
        int bh = (int) (value / yMax * h);
        g.setColor(Charts.color(contender));
        g.fillRect(gx + c * bar, y + h - bh, bar - 4, bh);
        g.setColor(Color.BLACK);
        g.drawString(String.format("%.0f", value), gx + c * bar, y + h - bh - 3);
      }
      g.setFont(new Font(Font.SANS_SERIF, Font.BOLD, 12));
      g.drawString(verbs.get(v), gx + group / 2 - 25, y + h + 18);
      g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 11));
    }
    // Requests are not all alike: what they cost the apiserver is in the bytes.
    // (Over the GET group, under the legend: GET bars are low or none.)
    int bx = x + w - 200;
    g.setColor(Color.WHITE);
    g.fillRect(bx - 5, y + 62, 195, 65);
    g.setColor(Color.BLACK);
    g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 12));
    g.drawString("bytes served per hour:", bx, y + 76);
    int by = y + 92;
    for (String c : BenchmarkReport.CONTENDERS) {
      g.drawString(c + " " + BenchmarkReport.bytes(report.number(c, "bytes.perHour")), bx, by);
      by += 15;
    }
    int ly = y + 16;
    for (String c : BenchmarkReport.CONTENDERS) {
      g.setColor(Charts.color(c));
      g.fillRect(x + w - 150, ly - 9, 10, 10);
      g.setColor(Color.BLACK);
      g.drawString(c, x + w - 134, ly);
      ly += 16;
    }
  }

  /** Five ticks on each axis with a non-null format. */
  private static void ticks(
      Graphics2D g,
      int x,
      int y,
      int w,
      int h,
      double xMax,
      String xFormat,
      double yMax,
      String yFormat,
      double yScale) {
    g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 11));
    for (int i = 0; i <= 4; i++) {
      if (xFormat != null) {
        int tx = x + i * w / 4;
        g.setColor(new Color(230, 230, 230));
        g.drawLine(tx, y, tx, y + h);
        g.setColor(Color.BLACK);
        g.drawString(String.format(xFormat, xMax * i / 4), tx - 10, y + h + 16);
      }
      int ty = y + h - i * h / 4;
      g.setColor(new Color(230, 230, 230));
      g.drawLine(x, ty, x + w, ty);
      g.setColor(Color.BLACK);
      g.drawString(String.format(yFormat, yMax * yScale * i / 4), x - 45, ty + 4);
    }
  }
}

package org.sparkk8snative.bench;

import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Font;
import java.awt.Graphics2D;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.function.BiFunction;

/**
 * The fleet PNG: how the apiserver's CPU and another client's LIST p99 grow with the number of
 * drivers, one line per contender through the medians, the range of the repetitions as a bar. Plain
 * Java2D, headless.
 */
final class FleetChart {
  private FleetChart() {}

  static void write(FleetReport report, Path file) throws IOException {
    Charts.writePng(
        file,
        g -> {
          panel(
              g,
              report,
              "Apiserver CPU seconds per hour, by number of drivers",
              (c, size) -> report.spread(c, size, r -> r.perHour("apiserver.cpuSeconds")),
              70,
              50);
          panel(
              g,
              report,
              "Another client's pod LIST p99 (ms), by number of drivers",
              (c, size) -> report.spread(c, size, r -> r.get("other.LIST.p99Ms")),
              680,
              50);
        });
  }

  private static void panel(
      Graphics2D g,
      FleetReport report,
      String title,
      BiFunction<String, Integer, Spread> figure,
      int x,
      int y) {
    int w = 460;
    int h = 340;
    List<Integer> sizes = report.plan().drivers();
    double yMax = 0;
    for (String c : FleetBenchmark.CONTENDERS) {
      for (int size : sizes) {
        Spread s = figure.apply(c, size);
        if (s.present()) {
          yMax = Math.max(yMax, s.max());
        }
      }
    }
    yMax = yMax <= 0 ? 1 : yMax * 1.1;
    int xMax = sizes.get(sizes.size() - 1);
    Charts.frame(g, title, x, y, w, h);
    g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 11));
    for (int i = 0; i <= 4; i++) {
      double v = yMax * i / 4;
      int py = y + h - (int) (h * i / 4.0);
      g.setColor(new Color(230, 230, 230));
      g.drawLine(x + 1, py, x + w - 1, py);
      g.setColor(Color.BLACK);
      g.drawString(String.format("%.0f", v), x - 45, py + 4);
    }
    for (int size : sizes) {
      int px = x + (int) ((double) size / xMax * w);
      g.drawString(Integer.toString(size), px - 8, y + h + 16);
    }
    int legendY = y + 20;
    for (String c : FleetBenchmark.CONTENDERS) {
      g.setColor(Charts.color(c));
      g.setStroke(new BasicStroke(2f));
      int prevX = -1;
      int prevY = -1;
      for (int size : sizes) {
        Spread s = figure.apply(c, size);
        if (!s.present()) {
          continue;
        }
        int px = x + (int) ((double) size / xMax * w);
        int py = y + h - (int) (s.median() / yMax * h);
        g.drawLine(px, y + h - (int) (s.min() / yMax * h), px, y + h - (int) (s.max() / yMax * h));
        g.fillOval(px - 3, py - 3, 7, 7);
        if (prevX >= 0) {
          g.drawLine(prevX, prevY, px, py);
        }
        prevX = px;
        prevY = py;
      }
      g.fillRect(x + 12, legendY - 6, 14, 4);
      g.setColor(Color.BLACK);
      g.drawString(FleetReport.LABELS.get(c), x + 32, legendY);
      legendY += 16;
    }
  }
}

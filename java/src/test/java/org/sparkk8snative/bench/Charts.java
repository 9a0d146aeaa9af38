package org.sparkk8snative.bench;

import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Font;
import java.awt.Graphics2D;
import java.awt.RenderingHints;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.function.Consumer;
import javax.imageio.ImageIO;

/** What the benchmarks' PNGs share: the canvas, each contender's colour, a panel's frame. */
final class Charts {
  static final int WIDTH = 1200;
  static final int HEIGHT = 480;

  /** One colour per contender in every chart; the baseline (a floor, or no drivers) is grey. */
  private static final Map<String, Color> COLORS =
      Map.of(
          "floor",
          new Color(120, 120, 120),
          "none",
          new Color(120, 120, 120),
          "legacy",
          new Color(230, 120, 20),
          "fabric8",
          new Color(40, 100, 200),
          "native",
          new Color(30, 160, 60),
          FleetDrivers.NATIVE_LONG_WATCH,
          new Color(150, 60, 170));

  private Charts() {}

  static Color color(String contender) {
    return COLORS.get(contender);
  }

  /** Draws on a white, antialiased canvas (headless) and writes it to {@code file} as PNG. */
  static void writePng(Path file, Consumer<Graphics2D> draw) throws IOException {
    System.setProperty("java.awt.headless", "true");
    BufferedImage image = new BufferedImage(WIDTH, HEIGHT, BufferedImage.TYPE_INT_RGB);
    Graphics2D g = image.createGraphics();
    g.setRenderingHint(RenderingHints.KEY_ANTIALIASING, RenderingHints.VALUE_ANTIALIAS_ON);
    g.setRenderingHint(
        RenderingHints.KEY_TEXT_ANTIALIASING, RenderingHints.VALUE_TEXT_ANTIALIAS_ON);
    g.setColor(Color.WHITE);
    g.fillRect(0, 0, WIDTH, HEIGHT);
    draw.accept(g);
    g.dispose();
    Files.createDirectories(file.toAbsolutePath().getParent());
    ImageIO.write(image, "png", file.toFile());
  }

  /** A panel's border and its title above it. */
  static void frame(Graphics2D g, String title, int x, int y, int w, int h) {
    g.setColor(Color.BLACK);
    g.setStroke(new BasicStroke(1f));
    g.drawRect(x, y, w, h);
    g.setFont(new Font(Font.SANS_SERIF, Font.BOLD, 14));
    g.drawString(title, x, y - 12);
  }
}

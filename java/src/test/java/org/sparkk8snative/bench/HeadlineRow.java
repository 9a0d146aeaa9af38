package org.sparkk8snative.bench;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * One row of a README headline table (legacy, fabric8, native): each contender's median and range
 * over the repetitions. A cell is bold only where that contender's range lies below every other's
 * (lower is better everywhere), so a table claims only the wins its data resolves.
 */
final class HeadlineRow {
  static final List<String> CONTENDERS = List.of("legacy", "fabric8", "native");

  private HeadlineRow() {}

  static String of(String what, Function<String, Spread> figure, Function<Spread, String> cell) {
    Map<String, Spread> spreads = new LinkedHashMap<>();
    CONTENDERS.forEach(c -> spreads.put(c, figure.apply(c)));
    StringBuilder row = new StringBuilder("| ").append(what);
    for (String c : CONTENDERS) {
      String text = cell.apply(spreads.get(c));
      row.append(" | ").append(winsOverEveryOther(c, spreads) ? "**" + text + "**" : text);
    }
    return row.append(" |\n").toString();
  }

  private static boolean winsOverEveryOther(String contender, Map<String, Spread> spreads) {
    Spread mine = spreads.get(contender);
    return spreads.entrySet().stream()
        .filter(e -> !e.getKey().equals(contender))
        .allMatch(e -> mine.against(e.getValue()).equals("win"));
  }
}

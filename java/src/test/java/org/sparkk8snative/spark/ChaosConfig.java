package org.sparkk8snative.spark;

import java.util.List;

/**
 * One configuration of the chaos run: the apiserver's watch cache, the lister's round and stale
 * bound (a round longer than the bound means watches of a round, the default's shape), and a highly
 * available plane or one apiserver behind the fault proxy.
 */
record ChaosConfig(boolean watchCache, long listerIntervalMs, long staleBoundMs, boolean ha) {

  /** Watches last a lister round, longer than the stale bound. */
  boolean longWatches() {
    return listerIntervalMs > staleBoundMs;
  }

  /**
   * The faults this configuration can inject: compaction forces a 410 only without the watch cache;
   * the HA plane's informer goes through its balancer, not the fault proxy.
   */
  List<ChaosFaults.Kind> kinds() {
    if (ha) {
      return List.of(ChaosFaults.Kind.RESTART, ChaosFaults.Kind.LAG, ChaosFaults.Kind.MOVE);
    }
    return watchCache
        ? List.of(ChaosFaults.Kind.RESTART, ChaosFaults.Kind.BLACKHOLE, ChaosFaults.Kind.THROTTLE)
        : List.of(
            ChaosFaults.Kind.RELIST_410,
            ChaosFaults.Kind.RESTART,
            ChaosFaults.Kind.BLACKHOLE,
            ChaosFaults.Kind.THROTTLE);
  }

  @Override
  public String toString() {
    return "watchCache="
        + watchCache
        + " listerInterval="
        + listerIntervalMs
        + "ms staleBound="
        + staleBoundMs
        + "ms"
        + (ha ? " ha" : "");
  }
}

package org.sparkk8snative.spark;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.sparkk8snative.InformerHealth;
import org.sparkk8snative.ListerAnswer;
import org.sparkk8snative.NativeInformer;
import org.sparkk8snative.TestPlane;

/**
 * The chaos run's fault schedule and what each fault must do to the informer: the minimum set of
 * faults of a configuration in a seeded order, then random ones until the run's time is up; each
 * injected on the plane (apiserver restart, forced 410, black hole, 429 burst, on the HA plane a
 * lagging apiserver and balancer moves), waited out until the informer is synced again, and
 * recorded with the relists, resumes and health it caused. The effect checks (a fault costs the
 * relists it must, health shows it, a 429 burst reaches the informer) read those records.
 */
final class ChaosFaults {
  enum Kind {
    RESTART("restarts", 5),
    RELIST_410("relists410", 3),
    BLACKHOLE("blackholes", 3),
    THROTTLE("throttles", 3),
    /**
     * HA: the apiserver the informer is not on is cut from etcd (its watch cache freezes) while
     * pods change, the balancer moves the informer to it (holding or closing its connection), then
     * it is reconnected. (An apiserver frozen under the informer is not among the faults: nothing
     * on its watch shows it, see docs/reliability.md.)
     */
    LAG("lags", 4),
    /** HA: the balancer moves the informer to the other apiserver, holding or closing. */
    MOVE("moves", 3);

    final String label;

    /** How many of this kind the full run injects at least ({@code -Dchaos.each=0}). */
    private final int fullSet;

    Kind(String label, int fullSet) {
      this.label = label;
      this.fullSet = fullSet;
    }

    /**
     * How many of this kind a run injects at least: {@code -Dchaos.each=N} of each kind (2 by
     * default, the size {@code make test} runs, in which every kind still occurs more than once),
     * at most the full set, which {@code -Dchaos.each=0} (as {@code make chaos}) runs.
     */
    int atLeast() {
      return EACH <= 0 ? fullSet : Math.min(EACH, fullSet);
    }
  }

  private static final int EACH = Integer.getInteger("chaos.each", 2);

  /** One injected fault and what the informer did about it. */
  static final class Fault {
    final Kind kind;

    /** Black hole, 429 burst: its length; 410: how long the watch is held while etcd moves on. */
    final long millis;

    long start;
    long end;
    long recovered;
    long relistsBefore;
    long relistsAfter;
    long resumesBefore;
    long resumesAfter;

    /** 429 answers the proxy served during the fault. */
    long throttledServed;

    boolean degraded;

    /** HA faults: where the balancer went (e.g. "to=b&existing=hold"). */
    String detail = "";

    /**
     * A lag: from when the balancer sent the informer to the lagging apiserver to its reconnection.
     */
    long laggingFrom = -1;

    long laggingTo = -1;

    Fault(Kind kind, long millis) {
      this.kind = kind;
      this.millis = millis;
    }

    long relists() {
      return relistsAfter - relistsBefore;
    }

    @Override
    public String toString() {
      return String.format(
          "%-10s %5d ms%s: %s, synced %5d ms after it ended, relists +%d, resumes +%d, 429s served"
              + " %d",
          kind.label,
          end - start,
          detail.isEmpty() ? "" : " " + detail,
          degraded ? "Degraded seen" : "Degraded NOT seen",
          recovered - end,
          relists(),
          resumesAfter - resumesBefore,
          throttledServed);
    }
  }

  /**
   * After the stale bound from the move onto a lagging apiserver, the informer's last proof of its
   * cache is older than the stale bound: from then on until the apiserver is reconnected health
   * must not read Synced, nor the lister serve. This slack covers a step of the informer (its tick)
   * and the handover to Spark on a loaded 2-core machine.
   */
  static final long LAG_PROMISE_SLACK_MS = 1_000;

  /**
   * How soon after a fault ends the informer must be Synced again with the lister ready, the bound
   * docs/reliability.md states: a relist after a restart's 410 (a list of at most a few hundred
   * pods) or a resume after a consistent read, with the backoff's first steps. Measured in a CI run
   * on 2026-12-07: at most 5.1 s in the three single-apiserver configurations, 9.8 s on the HA
   * plane (a restart's relist, and a lag's catching up).
   */
  static final Duration RECOVERY_BOUND = Duration.ofSeconds(20);

  private record Sample(long at, InformerHealth.State state) {}

  private final TestPlane plane;
  private final ChaosConfig config;
  private final NativeInformer informer;
  private final List<Sample> samples = Collections.synchronizedList(new ArrayList<>());
  private final Thread sampler;
  private volatile boolean sampling = true;

  /** The apiserver the HA plane's balancer sends new connections to. */
  private String balancerAt = "a";

  /** Starts sampling the informer's health, which tells whether each fault showed. */
  ChaosFaults(TestPlane plane, ChaosConfig config, NativeInformer informer) {
    this.plane = plane;
    this.config = config;
    this.informer = informer;
    this.sampler = new Thread(this::sample, "chaos-health-sampler");
    sampler.setDaemon(true);
    sampler.start();
  }

  void stop() throws InterruptedException {
    sampling = false;
    sampler.join(5_000);
  }

  /**
   * The minimum set of the configuration's faults in a seeded order, then random ones until {@code
   * seconds} from {@code began} are up.
   */
  List<Fault> run(Random random, long began, int seconds) throws InterruptedException {
    List<Kind> kinds = config.kinds();
    List<Kind> planned = new ArrayList<>();
    for (Kind kind : kinds) {
      planned.addAll(Collections.nCopies(kind.atLeast(), kind));
    }
    Collections.shuffle(planned, random);
    List<Fault> done = new ArrayList<>();
    while (!planned.isEmpty() || System.currentTimeMillis() - began < seconds * 1000L) {
      Kind kind = planned.isEmpty() ? kinds.get(random.nextInt(kinds.size())) : planned.remove(0);
      long staleBoundMs = config.staleBoundMs();
      long millis =
          switch (kind) {
            case RESTART -> 0;
            case RELIST_410 ->
                500 + random.nextInt(500); // held shorter than the stale bound: a pure 410
            case BLACKHOLE -> staleBoundMs + 1_000 + random.nextInt(2_000);
            // Past the stale bound, as a black hole: the informer is silent from the cut on.
            case THROTTLE -> staleBoundMs + 500 + random.nextInt(2_000);
            // How long only the lagging apiserver answers: past the silence bound (the stale bound
            // here), so that even a held connection is given up within the fault, and long enough
            // after the stale bound that health and the lister are checked over seconds of it.
            case LAG -> staleBoundMs + LAG_PROMISE_SLACK_MS + 2_000 + random.nextInt(3_000);
            // Past the silence bound, so that a held connection is given up within the fault.
            case MOVE -> staleBoundMs + 1_000;
          };
      Fault fault = new Fault(kind, millis);
      if (kind == Kind.LAG || kind == Kind.MOVE) {
        fault.detail = haTarget(kind, random);
      }
      fault.relistsBefore = informer.health().relists();
      fault.resumesBefore = informer.health().resumes();
      long throttledBefore = proxyThrottled();
      fault.start = System.currentTimeMillis();
      inject(fault);
      fault.end = System.currentTimeMillis();
      fault.throttledServed = proxyThrottled() - throttledBefore;
      if (kind == Kind.RELIST_410) {
        TestPlane.eventually(
            "the relist after 410 Gone",
            Duration.ofSeconds(60),
            () -> informer.health().relists() > fault.relistsBefore);
      }
      waitSynced(kind.label + " to heal");
      fault.recovered = System.currentTimeMillis();
      fault.relistsAfter = informer.health().relists();
      fault.resumesAfter = informer.health().resumes();
      fault.degraded =
          sampledBetween(fault.start, fault.recovered).contains(InformerHealth.State.DEGRADED);
      done.add(fault);
      Thread.sleep(1_000 + random.nextInt(2_000)); // normal operation between faults
    }
    return done;
  }

  /** Every fault undone: the proxy passes requests, the HA balancer holds nothing. */
  void clear() {
    plane.control("POST", "/proxy/normal");
    if (config.ha()) {
      plane.control("POST", "/ha/release");
    }
  }

  /**
   * Waits until the informer is Synced, has heard from the apiserver within the stale bound, and
   * the lister may snapshot: after a black hole shorter than the silence bound, bytes flow at once
   * but prove the cache only at the watch's clean end (or a relist follows), which belongs to the
   * fault.
   */
  void waitSynced(String what) {
    TestPlane.eventually(
        what + " within " + RECOVERY_BOUND.toSeconds() + " s",
        RECOVERY_BOUND,
        () -> {
          InformerHealth h = informer.health();
          return h.state() == InformerHealth.State.SYNCED
              && h.millisSinceLastActivity() >= 0
              && h.millisSinceLastActivity() < config.staleBoundMs()
              && informer.listerSnapshot(0) instanceof ListerAnswer.Ready;
        });
  }

  // ---- what each fault must do ----

  /**
   * What each fault must cost: never more than one relist (no relist storm); a forced 410 exactly
   * one; with the watch cache, a restart exactly one (the new cache answers 410). A silence (black
   * hole, 429 burst, a restart without the watch cache) resumes the watch from the cache's
   * resourceVersion, and relists only if that answers 410, so at most one. With short watches every
   * black hole and 429 burst outlasts the silence bound: exactly one resume each.
   */
  List<String> relistProblems(List<Fault> faults) {
    List<String> problems = new ArrayList<>();
    for (Fault f : faults) {
      long relists = f.relists();
      boolean exactlyOne =
          switch (f.kind) {
            case RELIST_410 -> true;
            case BLACKHOLE, THROTTLE -> false;
            case RESTART -> config.watchCache() && !config.ha();
            // A held connection costs the relist after its silence; a closed one resumes.
            case LAG, MOVE -> false;
          };
      boolean oneResume =
          !config.longWatches()
              && (f.kind == Kind.BLACKHOLE || f.kind == Kind.THROTTLE)
              && !config.ha();
      long resumes = f.resumesAfter - f.resumesBefore;
      if (relists > 1 || (exactlyOne && relists != 1) || (oneResume && resumes != 1)) {
        problems.add(f.toString());
      }
    }
    return problems;
  }

  /** Faults health did not show though it must (see {@link #mustDegrade}). */
  List<String> unseen(List<Fault> faults) {
    return faults.stream().filter(f -> mustDegrade(f) && !f.degraded).map(Fault::toString).toList();
  }

  /**
   * Lags during which health read Synced while only the lagging apiserver answered: from the move
   * plus the stale bound and slack (the design's promise: the cache unproven past the stale bound
   * is Degraded) to the reconnection. Each sample of the whole window counts, not one Degraded
   * seen.
   */
  List<String> syncedWhileLagging(List<Fault> faults) {
    List<String> problems = new ArrayList<>();
    for (Fault f : faults) {
      if (f.kind != Kind.LAG) {
        continue;
      }
      long from = f.laggingFrom + config.staleBoundMs() + LAG_PROMISE_SLACK_MS;
      List<Long> synced;
      synchronized (samples) {
        synced =
            samples.stream()
                .filter(s -> s.at() >= from && s.at() <= f.laggingTo)
                .filter(s -> s.state() == InformerHealth.State.SYNCED)
                .map(s -> s.at() - f.laggingFrom)
                .toList();
      }
      if (!synced.isEmpty()) {
        problems.add(
            f
                + ": Synced "
                + synced.size()
                + " times between "
                + synced.get(0)
                + " and "
                + synced.get(synced.size() - 1)
                + " ms after the move onto the lagging apiserver (lag "
                + (f.laggingTo - f.laggingFrom)
                + " ms)");
      }
    }
    return problems;
  }

  /** 429 bursts of which the informer was served no 429. */
  static List<String> unthrottled(List<Fault> faults) {
    return faults.stream()
        .filter(f -> f.kind == Kind.THROTTLE && f.throttledServed == 0)
        .map(Fault::toString)
        .toList();
  }

  /**
   * Whether health must show a fault: always with short watches; with long ones a black hole may
   * end before the silence bound, and a quiet watch cannot tell it from quiet.
   */
  private boolean mustDegrade(Fault fault) {
    // On the HA plane a restart of apiserver a goes unseen while the balancer is at b, and a move
    // that closes the connection onto a current apiserver may heal between two samples.
    return !(config.longWatches() && fault.kind == Kind.BLACKHOLE)
        && !(config.ha() && (fault.kind == Kind.RESTART || fault.kind == Kind.MOVE));
  }

  // ---- injection ----

  /**
   * Where the balancer sends the informer, and what it does with the open connection: a move to the
   * apiserver it is not on; a lag to b, the one cut (the churn writes through a).
   */
  private String haTarget(Kind kind, Random random) {
    String existing = random.nextBoolean() ? "hold" : "close";
    String to = kind == Kind.LAG || balancerAt.equals("a") ? "b" : "a";
    return "to=" + to + "&existing=" + existing;
  }

  private void inject(Fault fault) throws InterruptedException {
    switch (fault.kind) {
      case RESTART ->
          plane.control("POST", "/apiserver/restart"); // returns once the apiserver is ready again
      case RELIST_410 -> {
        // Hold the watch while pods change and etcd compacts past its resourceVersion; when it
        // resumes: 410 Gone.
        plane.control("POST", "/proxy/blackhole?seconds=0");
        Thread.sleep(fault.millis);
        plane.control("POST", "/etcd/compact");
        plane.control("POST", "/proxy/cut");
        plane.control("POST", "/proxy/normal");
      }
      case BLACKHOLE -> {
        plane.control("POST", "/proxy/blackhole?seconds=" + fault.millis / 1000.0);
        Thread.sleep(fault.millis);
      }
      case THROTTLE -> {
        // 429 answers only new requests: cut the connections so the informer must come back into
        // them.
        plane.control("POST", "/proxy/throttle?seconds=" + fault.millis / 1000.0);
        plane.control("POST", "/proxy/cut");
        Thread.sleep(fault.millis);
      }
      case LAG -> {
        if (balancerAt.equals("b")) { // the informer follows a first, so that b lags behind it
          moveBalancer("to=a&existing=close");
          waitSynced("the informer on apiserver a before b lags");
        }
        plane.control("POST", "/ha/etcd?apiserver=b&link=cut");
        Thread.sleep(1_000); // the churn moves on without it
        moveBalancer(fault.detail);
        fault.laggingFrom = System.currentTimeMillis();
        Thread.sleep(fault.millis);
        fault.laggingTo = System.currentTimeMillis();
        plane.control("POST", "/ha/etcd?apiserver=b&link=open");
        plane.control("POST", "/ha/release"); // as a balancer resets a dead backend's connections
      }
      case MOVE -> {
        moveBalancer(fault.detail);
        Thread.sleep(fault.millis);
        plane.control("POST", "/ha/release");
      }
    }
  }

  private void moveBalancer(String target) {
    plane.control("POST", "/ha/route?" + target);
    balancerAt = target.substring(3, 4);
  }

  /** 429 answers the fault proxy has served so far. */
  private long proxyThrottled() {
    String stats = plane.control("GET", "/proxy/stats");
    Matcher m = Pattern.compile("\"throttled\":(\\d+)").matcher(stats);
    if (!m.find()) {
      throw new IllegalStateException("no throttled count in the proxy's stats: " + stats);
    }
    return Long.parseLong(m.group(1));
  }

  // ---- health, sampled throughout ----

  private void sample() {
    while (sampling) {
      try {
        samples.add(new Sample(System.currentTimeMillis(), informer.health().state()));
        Thread.sleep(20);
      } catch (IllegalStateException closed) {
        return;
      } catch (InterruptedException e) {
        return;
      }
    }
  }

  private Set<InformerHealth.State> sampledBetween(long from, long to) {
    synchronized (samples) {
      return samples.stream()
          .filter(s -> s.at() >= from && s.at() <= to)
          .map(Sample::state)
          .collect(Collectors.toSet());
    }
  }
}

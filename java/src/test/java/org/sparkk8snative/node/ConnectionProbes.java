package org.sparkk8snative.node;

import java.io.IOException;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/**
 * Connection attempts begun every 50 ms from a moment on, each on its own thread, so that an
 * attempt that hangs (a SYN sent to the pod's address while its network is torn down, before
 * kube-proxy has dropped the endpoint) does not delay the ones begun after it: what a peer sees
 * depends on when its fetch begins, not on when the one before it gave up.
 */
public record ConnectionProbes(List<Long> begunAt, List<Attempt> attempts, long settledAt) {
  private static final int CONNECT_TIMEOUT_MILLIS = 10_000;
  private static final long PACE_MILLIS = 50;
  private static final long STABLE_MILLIS = 2_000;
  private static final long GIVE_UP_MILLIS = 30_000;

  /** How a connection attempt ended, and after how long. */
  public record Attempt(String outcome, long millis) {}

  public static Attempt connect(String host, int port) {
    long began = System.nanoTime();
    String outcome;
    try (Socket socket = new Socket()) {
      socket.connect(new InetSocketAddress(host, port), CONNECT_TIMEOUT_MILLIS);
      outcome = "connected";
    } catch (ConnectException e) {
      outcome = "refused";
    } catch (SocketTimeoutException e) {
      outcome = "timed out";
    } catch (IOException e) {
      outcome = e.getClass().getSimpleName() + ": " + e.getMessage();
    }
    return new Attempt(outcome, (System.nanoTime() - began) / 1_000_000);
  }

  /**
   * Probes until {@code settled} holds and every attempt of the last 2 s since was refused fast, or
   * 30 s have passed. Until the pod's network is gone, its dead process's address refuses by
   * itself; only after that does a refusal prove kube-proxy's. Paced: hundreds of refusals a second
   * would run into the kernel's ICMP rate limit (icmp_msgs_per_sec), and a SYN left without its
   * reject is retried only after 1 s.
   */
  public static ConnectionProbes after(
      long since, Supplier<Attempt> attempt, BooleanSupplier settled) throws InterruptedException {
    ExecutorService threads = Executors.newCachedThreadPool();
    List<Long> begunAt = new ArrayList<>();
    List<Future<Attempt>> pending = new ArrayList<>();
    long settledAt = -1;
    try {
      while (true) {
        begunAt.add(millisSince(since));
        pending.add(threads.submit(attempt::get));
        Thread.sleep(PACE_MILLIS);
        long elapsed = millisSince(since);
        if (settledAt < 0 && settled.getAsBoolean()) {
          settledAt = elapsed;
        }
        if (elapsed > GIVE_UP_MILLIS
            || (settledAt >= 0
                && elapsed - settledAt >= STABLE_MILLIS
                && lastAttemptsRefused(begunAt, pending, elapsed))) {
          break;
        }
      }
      List<Attempt> attempts = new ArrayList<>();
      for (Future<Attempt> each : pending) {
        attempts.add(each.get());
      }
      return new ConnectionProbes(begunAt, attempts, settledAt);
    } catch (ExecutionException e) {
      throw new IllegalStateException("a connection attempt failed to run", e.getCause());
    } finally {
      threads.shutdownNow();
    }
  }

  private static long millisSince(long nanos) {
    return (System.nanoTime() - nanos) / 1_000_000;
  }

  private static boolean lastAttemptsRefused(
      List<Long> begunAt, List<Future<Attempt>> pending, long elapsed) throws InterruptedException {
    for (int i = pending.size() - 1; i >= 0 && begunAt.get(i) >= elapsed - STABLE_MILLIS; i--) {
      Future<Attempt> each = pending.get(i);
      if (!each.isDone() || !refusedFast(getNow(each))) {
        return false;
      }
    }
    return true;
  }

  private static Attempt getNow(Future<Attempt> done) throws InterruptedException {
    try {
      return done.get();
    } catch (ExecutionException e) {
      throw new IllegalStateException("a connection attempt failed to run", e.getCause());
    }
  }

  /** Refused within 200 ms: what "refused at once" means in the node tests. */
  static boolean refusedFast(Attempt attempt) {
    return attempt.outcome().equals("refused") && attempt.millis() < 200;
  }

  int count() {
    return attempts.size();
  }

  /**
   * When, after {@code since}, the attempts began to be refused fast, every one from then on; -1 if
   * the last attempts were not.
   */
  long refusedFromMillis() {
    long from = -1;
    for (int i = attempts.size() - 1; i >= 0 && refusedFast(attempts.get(i)); i--) {
      from = begunAt.get(i);
    }
    return from;
  }

  /** The slowest attempt begun before {@code millis}: what a fetch in that window waited. */
  Attempt slowestBefore(long millis) {
    Attempt slowest = new Attempt("none", -1);
    for (int i = 0; i < attempts.size(); i++) {
      if ((millis < 0 || begunAt.get(i) < millis) && attempts.get(i).millis() > slowest.millis()) {
        slowest = attempts.get(i);
      }
    }
    return slowest;
  }
}

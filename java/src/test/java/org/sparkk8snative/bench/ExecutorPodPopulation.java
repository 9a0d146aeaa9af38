package org.sparkk8snative.bench;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import org.sparkk8snative.ExecutorPods;

/**
 * Running executor pods shaped like the ones Spark 4.x creates (environment, resources, ports,
 * local-dir volume; status as a kubelet reports it: {@link ExecutorPods#sparkShapedExecutorPod}),
 * so that sizes on the wire and in memory are realistic: about 6.5 KB of JSON each as listed,
 * managedFields included.
 */
final class ExecutorPodPopulation {
  private static final int CONCURRENCY = 16;

  private ExecutorPodPopulation() {}

  static void create(KubernetesClient admin, String namespace, String applicationId, int count) {
    ExecutorService pool = Executors.newFixedThreadPool(CONCURRENCY);
    AtomicInteger done = new AtomicInteger();
    try {
      List<Future<?>> work = new ArrayList<>();
      for (int id = 1; id <= count; id++) {
        int execId = id;
        work.add(
            pool.submit(
                () -> {
                  createRunning(admin, namespace, applicationId, execId);
                  int n = done.incrementAndGet();
                  if (n % 2000 == 0) {
                    System.err.printf("  %s: %d / %d pods%n", applicationId, n, count);
                  }
                }));
      }
      for (Future<?> f : work) {
        f.get();
      }
    } catch (Exception e) {
      throw new IllegalStateException("could not create the pods of " + applicationId, e);
    } finally {
      pool.shutdownNow();
    }
  }

  /** One Running executor pod, created (or found) and given its status. */
  static void createRunning(
      KubernetesClient admin, String namespace, String applicationId, long execId) {
    Pod pod = ExecutorPods.sparkShapedExecutorPod(applicationId, execId);
    try {
      pod = admin.pods().inNamespace(namespace).resource(pod).create();
    } catch (KubernetesClientException e) {
      if (e.getCode() != 409) {
        throw e;
      }
      pod = admin.pods().inNamespace(namespace).withName(pod.getMetadata().getName()).get();
    }
    pod.setStatus(ExecutorPods.sparkShapedRunningStatus(execId));
    admin.pods().inNamespace(namespace).resource(pod).updateStatus();
  }
}

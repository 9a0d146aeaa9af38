package org.sparkk8snative.spark;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.sparkk8snative.NativeInformer;
import org.sparkk8snative.PodBatch;

/**
 * The one native informer behind the informer source and the lister source: created and started by
 * the first source to start, closed when the last one stops. Also the one place pods are decoded: a
 * pod state (name and cache generation) is decoded once, by whichever source meets it first, and
 * the other reuses the object (the same one Spark's store holds).
 */
final class SharedNativeInformer {
  private static final Logger LOG = LoggerFactory.getLogger(SharedNativeInformer.class);

  /**
   * Spark's own fabric8 model: the pods handed to Spark are the objects its sources would hand it.
   */
  private static final KubernetesSerialization SERIALIZATION = new KubernetesSerialization();

  private static final class Decoded {
    private final long generation;
    private final Pod pod;

    Decoded(long generation, Pod pod) {
      this.generation = generation;
      this.pod = pod;
    }

    long generation() {
      return generation;
    }

    Pod pod() {
      return pod;
    }
  }

  /**
   * Held while a source hands pods to Spark's store: the informer source around each batch's {@code
   * updatePod} calls, the lister around its check that no change newer than its snapshot has been
   * taken and its {@code replaceSnapshot}. A change taken after that check then reaches Spark after
   * the snapshot, and a snapshot never lands after a newer change: Spark's store never goes back in
   * time.
   */
  private final Object handOver = new Object();

  /** The latest decoded state of each live pod. */
  private final Map<String, Decoded> decoded = new ConcurrentHashMap<>();

  private final Map<String, String> sparkConf;
  private NativeInformer informer;
  private int users;

  SharedNativeInformer(Map<String, String> sparkConf) {
    this.sparkConf = sparkConf;
  }

  synchronized NativeInformer acquire(String applicationId) {
    if (informer == null) {
      NativeInformer created = NativeInformer.create(sparkConf, applicationId);
      try {
        created.start();
      } catch (RuntimeException e) {
        created.close();
        throw e;
      }
      informer = created;
    } else if (!informer.applicationId().equals(applicationId)) {
      throw new IllegalStateException(
          "the native informer runs for application "
              + informer.applicationId()
              + ", not "
              + applicationId);
    } else {
      // The second source of the pair: expected on every start, so debug, not a warning.
      LOG.debug("Native informer already running for {}", applicationId);
    }
    users++;
    return informer;
  }

  synchronized void release() {
    if (users > 0 && --users == 0) {
      informer.close();
      informer = null;
      decoded.clear();
    }
  }

  /** The entry's pod, decoded unless this state of it was decoded before. */
  Pod decode(PodBatch.Entry entry) {
    Decoded known = decoded.get(entry.podName());
    if (known != null && known.generation() == entry.generation()) {
      return known.pod();
    }
    Pod pod;
    try {
      pod = SERIALIZATION.unmarshal(entry.json(), Pod.class);
    } catch (RuntimeException e) {
      throw new IllegalArgumentException(
          "pod " + entry.podName() + ": undecodable JSON from the native library", e);
    }
    if (entry.kind() == PodBatch.DELETED) {
      decoded.remove(entry.podName());
    } else {
      decoded.merge(
          entry.podName(),
          new Decoded(entry.generation(), pod),
          (old, fresh) -> fresh.generation() >= old.generation() ? fresh : old);
    }
    return pod;
  }

  /** The lock both sources hand pods to Spark's store under. */
  Object handOver() {
    return handOver;
  }

  /** The running informer, or null. */
  synchronized NativeInformer current() {
    return informer;
  }
}

package org.sparkk8snative.spark;

import io.fabric8.kubernetes.api.model.Pod;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.sparkk8snative.ListerAnswer;
import org.sparkk8snative.PodBatch;

/**
 * The lister's last snapshot as handed to Spark, its pods by name and the view it showed: what lets
 * a round decode only the pods that changed since, or hand the same list to Spark again when
 * nothing did. Used by the lister's thread only.
 */
final class HeldSnapshot {
  private static final Logger LOG = LoggerFactory.getLogger(HeldSnapshot.class);

  private final Function<PodBatch.Entry, Pod> decode;
  private Map<String, Pod> podsByName = new HashMap<>();
  private scala.collection.immutable.List<Pod> pods;
  private long view;

  HeldSnapshot(Function<PodBatch.Entry, Pod> decode) {
    this.decode = decode;
  }

  /** The view of the snapshot held (0: none); the native lister omits the JSON of what it shows. */
  long view() {
    return view;
  }

  /**
   * Spark's list of the answer's pods, reusing those held, and how many were decoded; null if a pod
   * marked unchanged is not held (should not happen: the next round then asks for every pod).
   */
  Assembled assemble(ListerAnswer answer) {
    if (answer instanceof ListerAnswer.Unchanged) {
      return pods == null
          ? forget()
          : new Assembled(pods, ((ListerAnswer.Unchanged) answer).view(), 0);
    }
    ListerAnswer.Ready ready = (ListerAnswer.Ready) answer;
    List<PodBatch.Entry> entries = ready.entries();
    List<Pod> list = new ArrayList<>(entries.size());
    Map<String, Pod> current = new HashMap<>(entries.size() * 2);
    int decoded = 0;
    for (PodBatch.Entry entry : entries) {
      boolean unchanged = entry.kind() == PodBatch.UNCHANGED;
      Pod pod = unchanged ? podsByName.get(entry.podName()) : decode.apply(entry);
      decoded += unchanged ? 0 : 1;
      if (pod == null) {
        LOG.debug(
            "Lister: pod {} marked unchanged but not held; every pod next round", entry.podName());
        return forget();
      }
      current.put(entry.podName(), pod);
      list.add(pod);
    }
    podsByName = current;
    return new Assembled(ScalaCollections.toScalaList(list), ready.view(), decoded);
  }

  /** Records that Spark now holds this snapshot. */
  void handedOver(Assembled snapshot) {
    pods = snapshot.pods;
    view = snapshot.view;
  }

  private Assembled forget() {
    view = 0;
    return null;
  }

  /** A snapshot ready for Spark: its pods, the view they show, how many were decoded anew. */
  static final class Assembled {
    final scala.collection.immutable.List<Pod> pods;
    final long view;
    final int decodedPods;

    Assembled(scala.collection.immutable.List<Pod> pods, long view, int decodedPods) {
      this.pods = pods;
      this.view = view;
      this.decodedPods = decodedPods;
    }
  }
}

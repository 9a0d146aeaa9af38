package org.sparkk8snative.spark;

import io.fabric8.kubernetes.api.model.Pod;
import org.apache.spark.scheduler.cluster.k8s.ExecutorPodsSnapshot;
import org.apache.spark.scheduler.cluster.k8s.ExecutorPodsSnapshotsStore;
import org.apache.spark.scheduler.cluster.k8s.ExecutorPodsSnapshotsStoreImpl;
import scala.Function1;
import scala.collection.immutable.Seq;
import scala.runtime.BoxedUnit;

/**
 * Spark's real {@code ExecutorPodsSnapshotsStoreImpl} behind the store interface, for the test
 * stores that watch what a source hands to Spark: they override {@code updatePod} and {@code
 * replaceSnapshot} and call these.
 */
public abstract class ForwardingSnapshotsStore implements ExecutorPodsSnapshotsStore {
  private final SparksOwnStore sparks = new SparksOwnStore();
  private final ExecutorPodsSnapshotsStoreImpl spark = sparks.impl;

  @Override
  public void updatePod(Pod pod) {
    spark.updatePod(pod);
  }

  @Override
  public void replaceSnapshot(Seq<Pod> pods) {
    spark.replaceSnapshot(pods);
  }

  @Override
  public void addSubscriber(
      long intervalMillis, Function1<Seq<ExecutorPodsSnapshot>, BoxedUnit> onNewSnapshots) {
    spark.addSubscriber(intervalMillis, onNewSnapshots);
  }

  @Override
  public void notifySubscribers() {
    spark.notifySubscribers();
  }

  @Override
  public void stop() {
    sparks.stop();
  }
}

package org.sparkk8snative.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.sparkk8snative.ExecutorPods;

/**
 * The chaos run's bookkeeping of deletions (no control plane): a full snapshot that holds a pod at
 * the very state an update delivered, deletionTimestamp included, brings nothing back; one that
 * holds it live, or older than its deletion, does.
 */
class RecordingStoreTest {
  private final RecordingStore store = new RecordingStore(() -> null, replacement -> {});

  @AfterEach
  void stop() {
    store.stop();
  }

  private static Pod pod(String resourceVersion, boolean deletionTimestamp) {
    PodBuilder pod =
        new PodBuilder(ExecutorPods.executorPod("app", 1))
            .editMetadata()
            .withResourceVersion(resourceVersion)
            .endMetadata()
            .withNewStatus()
            .withPhase("Running")
            .endStatus();
    if (deletionTimestamp) {
      pod.editMetadata()
          .withDeletionTimestamp("2026-12-07T00:00:00Z")
          .withDeletionGracePeriodSeconds(0L)
          .endMetadata();
    }
    return pod.build();
  }

  /**
   * A pod deleted with grace 0 is written with its deletionTimestamp first (a MODIFIED event), then
   * removed (DELETED at a later version): a snapshot between the two holds that first state.
   */
  @Test
  void aSnapshotOfTheStateItsDeletionWasDeliveredInBringsNothingBack() {
    store.updatePod(pod("10", true));
    store.replaceSnapshot(ScalaCollections.toScalaList(List.of(pod("10", true))));
    assertEquals(List.of(), store.resurrectedBySnapshot());
  }

  @Test
  void aSnapshotOlderThanTheDeletionDeliveredBringsThePodBack() {
    store.updatePod(pod("10", true));
    store.updatePod(pod("11", true));
    store.replaceSnapshot(ScalaCollections.toScalaList(List.of(pod("10", true))));
    assertEquals(1, store.resurrectedBySnapshot().size(), store.resurrectedBySnapshot()::toString);
  }

  @Test
  void aSnapshotHoldingTheDeletedPodLiveBringsItBack() {
    store.updatePod(pod("11", true));
    store.replaceSnapshot(ScalaCollections.toScalaList(List.of(pod("11", false))));
    assertEquals(1, store.resurrectedBySnapshot().size(), store.resurrectedBySnapshot()::toString);
  }
}

//! A pod as the cache holds it and the JVM receives it, and a change to one.
//!
//! Pods are kept as JSON that fabric8's `Pod` deserializes (k8s-openapi and
//! fabric8 both follow the Kubernetes wire format), with `managedFields`
//! stripped: about half of a pod's metadata, and Spark never reads it.

use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use crate::labels;

/// One pod as the cache holds it and the JVM receives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CachedPod {
    pub name: String,
    pub uid: String,
    pub resource_version: String,
    /// This state of the pod: unique in the process, a new value for every
    /// change, so the JVM can skip decoding a pod state it already holds.
    pub generation: u64,
    /// The executor id label (`spark-exec-id`), if any.
    pub exec_id: Option<String>,
    /// Failed or Succeeded and not deleted: a state Spark acts on (it counts an
    /// executor failure and logs the exit code from `PodFailed`), which a later
    /// change of the pod must never coalesce away.
    pub terminal: bool,
    /// The pod as JSON, without managedFields.
    pub json: Arc<[u8]>,
}

/// A change to deliver to Spark's `updatePod`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PodChange {
    Applied(Arc<CachedPod>),
    /// The pod is gone; its JSON carries a deletionTimestamp, which is how
    /// Spark's `ExecutorPodsSnapshot` recognises a deleted pod.
    Deleted(Arc<CachedPod>),
}

impl PodChange {
    pub fn pod(&self) -> &Arc<CachedPod> {
        match self {
            PodChange::Applied(p) | PodChange::Deleted(p) => p,
        }
    }
}

/// Strips what the driver never reads and encodes the pod.
pub fn cached_pod(mut pod: Pod, generation: u64) -> CachedPod {
    // managedFields are about half of a pod's metadata and Spark never reads them.
    pod.metadata.managed_fields = None;
    let meta = &pod.metadata;
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref()).unwrap_or_default();
    CachedPod {
        name: meta.name.clone().unwrap_or_default(),
        uid: meta.uid.clone().unwrap_or_default(),
        resource_version: meta.resource_version.clone().unwrap_or_default(),
        generation,
        exec_id: meta.labels.as_ref().and_then(|l| l.get(labels::EXEC_ID)).cloned(),
        // As Spark's ExecutorPodsSnapshot derives PodFailed / PodSucceeded.
        terminal: meta.deletion_timestamp.is_none()
            && (phase.eq_ignore_ascii_case("failed") || phase.eq_ignore_ascii_case("succeeded")),
        json: serde_json::to_vec(&pod).expect("a Pod always serializes").into(),
    }
}

/// A pod a relist found gone, as deleted: with a deletionTimestamp (now, if
/// its last known state had none), which is how Spark recognises a deleted pod.
pub fn deleted_pod(mut pod: Pod, generation: u64) -> CachedPod {
    if pod.metadata.deletion_timestamp.is_none() {
        pod.metadata.deletion_timestamp = Some(Time(k8s_openapi::jiff::Timestamp::now()));
    }
    cached_pod(pod, generation)
}

/// Decodes the JSON of a cached pod (to re-mark it as deleted).
pub fn decode_pod(json: &[u8]) -> Pod {
    serde_json::from_slice(json).expect("the cache holds only JSON it encoded")
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;
    use serde_json::json;

    pub(crate) fn pod(name: &str, rv: &str) -> Pod {
        serde_json::from_value(json!({
            "metadata": {
                "name": name, "uid": format!("uid-{name}"), "resourceVersion": rv,
                "labels": {"spark-exec-id": "7", "spark-role": "executor"},
            },
            "spec": {"containers": [{"name": "spark-kubernetes-executor", "image": "spark"}]},
            "status": {"phase": "Running"},
        }))
        .unwrap()
    }

    #[test]
    fn managed_fields_are_stripped_and_labels_kept() {
        let mut p = pod("a", "1");
        p.metadata.managed_fields =
            Some(vec![ManagedFieldsEntry { manager: Some("kubectl".into()), ..Default::default() }]);
        let cached = cached_pod(p, 3);
        let text = std::str::from_utf8(&cached.json).unwrap();
        assert!(!text.contains("managedFields"), "{text}");
        assert_eq!(cached.exec_id.as_deref(), Some("7"));
        assert_eq!(decode_pod(&cached.json).metadata.resource_version.as_deref(), Some("1"));
    }

    #[test]
    fn deleted_pods_always_carry_a_deletion_timestamp() {
        let cached = deleted_pod(pod("a", "2"), 1);
        assert!(decode_pod(&cached.json).metadata.deletion_timestamp.is_some());
    }

    #[test]
    fn failed_and_succeeded_pods_are_terminal_until_deleted() {
        let mut failed = pod("a", "3");
        failed.status.as_mut().unwrap().phase = Some("Failed".into());
        assert!(cached_pod(failed.clone(), 1).terminal);
        assert!(!deleted_pod(failed, 2).terminal, "a deleted pod is PodDeleted to Spark");
        assert!(!cached_pod(pod("b", "1"), 3).terminal);
    }
}

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
    /// How Spark classifies this state of the pod (see [`SparkState`]).
    pub spark_state: SparkState,
    /// The pod as JSON, without managedFields.
    pub json: PodJson,
}

/// A pod's JSON as the cache holds it: LZ4-compressed against a
/// [`JsonDictionary`], because the cache keeps every pod for as long as it
/// lives while the JVM asks for a pod's JSON only when it does not hold that
/// state yet. Decompressed straight into the frame that carries it to the JVM.
#[derive(Clone, PartialEq, Eq)]
pub struct PodJson {
    compressed: Box<[u8]>,
    len: usize,
    dictionary: Arc<[u8]>,
}

impl PodJson {
    pub fn new(json: &[u8], dictionary: &JsonDictionary) -> Self {
        let dictionary = dictionary.for_pod(json);
        PodJson {
            compressed: lz4_flex::block::compress_with_dict(json, &dictionary).into(),
            len: json.len(),
            dictionary,
        }
    }

    /// Length of the JSON itself (what the JVM receives).
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes the cache holds for this pod (the dictionary is shared).
    pub fn held_bytes(&self) -> usize {
        self.compressed.len()
    }

    /// Appends the JSON to `out`.
    pub fn append_to(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.resize(start + self.len, 0);
        let written = lz4_flex::block::decompress_into_with_dict(&self.compressed, &mut out[start..], &self.dictionary)
            .expect("the cache holds only JSON it compressed");
        debug_assert_eq!(written, self.len);
    }

    /// The pod (to re-mark it as deleted).
    pub fn decode(&self) -> Pod {
        decode_pod(&self.to_vec())
    }

    pub fn to_vec(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.len);
        self.append_to(&mut out);
        out
    }
}

impl std::fmt::Debug for PodJson {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PodJson({} bytes, {} held)", self.len, self.compressed.len())
    }
}

/// Pod JSON compressed on its own (tests).
impl From<&[u8]> for PodJson {
    fn from(json: &[u8]) -> Self {
        PodJson::new(json, &JsonDictionary::default())
    }
}

/// What a cache's pods are compressed against: the JSON of the first pod it
/// encodes. An app's executor pods are nearly one document (the same
/// environment, volumes, resources and status shape; a name, an id, an IP and
/// times apart), so each pod compresses to about a twentieth against one of
/// them, where LZ4 alone halves it. A pod of another shape only compresses less.
#[derive(Debug, Default)]
pub struct JsonDictionary(once_cell::sync::OnceCell<Arc<[u8]>>);

impl JsonDictionary {
    fn for_pod(&self, json: &[u8]) -> Arc<[u8]> {
        self.0.get_or_init(|| json.into()).clone()
    }
}

/// A state of an executor pod as Spark's `ExecutorPodsSnapshot.toState`
/// classifies it (3.5 to 4.2 alike), which is what its lifecycle manager acts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SparkState {
    Pending,
    Running,
    /// Spark counts an executor failure and logs the exit code.
    Failed,
    /// Spark removes the executor and logs exit code 0.
    Succeeded,
    /// Spark removes the executor as deleted.
    Deleted,
    Terminating,
    Unknown,
}

impl SparkState {
    /// The name of Spark's class for this state (`ExecutorPodState`'s case classes).
    pub fn spark_class_name(self) -> &'static str {
        match self {
            SparkState::Pending => "PodPending",
            SparkState::Running => "PodRunning",
            SparkState::Failed => "PodFailed",
            SparkState::Succeeded => "PodSucceeded",
            SparkState::Deleted => "PodDeleted",
            SparkState::Terminating => "PodTerminating",
            SparkState::Unknown => "PodUnknown",
        }
    }

    /// A state Spark's lifecycle manager removes the executor on, with a reason
    /// of its own (the exit code, or "deleted"): no later state may replace it
    /// before Spark has seen it.
    pub fn acted_on(self) -> bool {
        matches!(self, SparkState::Failed | SparkState::Succeeded | SparkState::Deleted)
    }
}

/// What Spark's classification depends on besides the pod: the driver's
/// `spark.kubernetes.executor.checkAllContainers` and the executor container's
/// name (`spark.kubernetes.executor.podTemplateContainerName`), which Spark's
/// cluster manager hands `ExecutorPodsSnapshot` when the driver starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SparkStateRules {
    pub check_all_containers: bool,
    pub container_name: String,
}

/// Spark's own name for the executor container, when no pod template names it.
pub const DEFAULT_EXECUTOR_CONTAINER_NAME: &str = "spark-kubernetes-executor";

impl std::default::Default for SparkStateRules {
    /// Spark 3.5's defaults (4.0 checks all containers by default).
    fn default() -> Self {
        Self { check_all_containers: false, container_name: DEFAULT_EXECUTOR_CONTAINER_NAME.to_string() }
    }
}

/// How Spark classifies `pod`: `ExecutorPodsSnapshot.toState` and `isDeleted`,
/// rule for rule. A deletionTimestamp makes a pod deleted only outside phases
/// Running and Terminating; a Running pod whose Spark container terminated is
/// Failed (any exit code but 0) or Succeeded, and with `check_all_containers`
/// and restartPolicy Never, Failed if any container exited non-zero.
pub fn spark_state(pod: &Pod, rules: &SparkStateRules) -> SparkState {
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref()).map(str::to_ascii_lowercase);
    let deleted =
        pod.metadata.deletion_timestamp.is_some() && !matches!(phase.as_deref(), Some("running") | Some("terminating"));
    if deleted {
        return SparkState::Deleted;
    }
    match phase.as_deref() {
        Some("pending") => SparkState::Pending,
        Some("running") => {
            let statuses = pod.status.as_ref().and_then(|s| s.container_statuses.as_deref()).unwrap_or_default();
            let exit_code = |c: &k8s_openapi::api::core::v1::ContainerStatus| {
                c.state.as_ref().and_then(|s| s.terminated.as_ref()).map(|t| t.exit_code)
            };
            let never_restarts = pod.spec.as_ref().and_then(|s| s.restart_policy.as_deref()) == Some("Never");
            if rules.check_all_containers
                && never_restarts
                && statuses.iter().any(|c| exit_code(c).is_some_and(|e| e != 0))
            {
                return SparkState::Failed;
            }
            match statuses.iter().find(|c| c.name == rules.container_name).and_then(exit_code) {
                Some(0) => SparkState::Succeeded,
                Some(_) => SparkState::Failed,
                None => SparkState::Running,
            }
        }
        Some("failed") => SparkState::Failed,
        Some("succeeded") => SparkState::Succeeded,
        Some("terminating") => SparkState::Terminating,
        _ => SparkState::Unknown,
    }
}

/// A change to deliver to Spark's `updatePod`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PodChange {
    Applied(Arc<CachedPod>),
    /// The pod is gone. A watch's DELETED event is delivered as the apiserver
    /// sent it, as Spark's own watch does; a pod a relist found gone carries a
    /// deletionTimestamp (see [`deleted_pod`]). Either way Spark classifies it
    /// by its own rules ([`spark_state`]), which read a Running pod as running.
    Deleted(Arc<CachedPod>),
}

impl PodChange {
    pub fn pod(&self) -> &Arc<CachedPod> {
        match self {
            PodChange::Applied(p) | PodChange::Deleted(p) => p,
        }
    }
}

/// Strips what the driver never reads, classifies the pod as Spark does and
/// encodes it.
pub fn cached_pod(mut pod: Pod, generation: u64, rules: &SparkStateRules, dictionary: &JsonDictionary) -> CachedPod {
    // managedFields are about half of a pod's metadata and Spark never reads them.
    pod.metadata.managed_fields = None;
    let meta = &pod.metadata;
    CachedPod {
        name: meta.name.clone().unwrap_or_default(),
        uid: meta.uid.clone().unwrap_or_default(),
        resource_version: meta.resource_version.clone().unwrap_or_default(),
        generation,
        exec_id: meta.labels.as_ref().and_then(|l| l.get(labels::EXEC_ID)).cloned(),
        spark_state: spark_state(&pod, rules),
        json: PodJson::new(&serde_json::to_vec(&pod).expect("a Pod always serializes"), dictionary),
    }
}

/// A pod a relist found gone, in its last known state with a deletionTimestamp
/// (now, if it had none): what a DELETED event after a graceful deletion
/// carries. Spark reads it as deleted unless its phase is Running or
/// Terminating; then, as when Spark's own watch misses a deletion, the next
/// full snapshot, which lacks the pod, removes the executor by missing-pod
/// detection. Its phase is not made up: Spark's exit-code and reason logic
/// reads the pod.
pub fn deleted_pod(mut pod: Pod, generation: u64, rules: &SparkStateRules, dictionary: &JsonDictionary) -> CachedPod {
    if pod.metadata.deletion_timestamp.is_none() {
        pod.metadata.deletion_timestamp = Some(Time(k8s_openapi::jiff::Timestamp::now()));
    }
    cached_pod(pod, generation, rules, dictionary)
}

/// Decodes a pod's JSON as the cache encoded it.
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
        let cached = cached_pod(p, 3, &SparkStateRules::default(), &Default::default());
        let json = cached.json.to_vec();
        let text = std::str::from_utf8(&json).unwrap();
        assert!(!text.contains("managedFields"), "{text}");
        assert_eq!(cached.exec_id.as_deref(), Some("7"));
        assert_eq!(cached.json.decode().metadata.resource_version.as_deref(), Some("1"));
    }

    #[test]
    fn an_apps_pods_are_held_compressed_against_the_first_and_come_back_whole() {
        let shaped = |name: &str| {
            let mut p = pod(name, "1");
            let env: Vec<_> =
                (0..20).map(|i| json!({"name": format!("SPARK_ENV_{i}"), "value": "/opt/spark/conf"})).collect();
            p.spec = Some(
                serde_json::from_value(json!({"containers": [{"name": "spark-kubernetes-executor", "env": env}]}))
                    .unwrap(),
            );
            p
        };
        let dictionary = JsonDictionary::default();
        let rules = SparkStateRules::default();
        let first = cached_pod(shaped("exec-1"), 1, &rules, &dictionary);
        let second = cached_pod(shaped("exec-2"), 2, &rules, &dictionary);
        assert_eq!(second.json.decode().metadata.name.as_deref(), Some("exec-2"));
        assert_eq!(first.json.decode().metadata.name.as_deref(), Some("exec-1"));
        assert!(second.json.held_bytes() * 10 < second.json.len(), "{:?}", second.json);
        let mut frame = b"head".to_vec();
        second.json.append_to(&mut frame);
        assert_eq!(&frame[4..], &serde_json::to_vec(&second.json.decode()).unwrap()[..]);
    }

    #[test]
    fn deleted_pods_always_carry_a_deletion_timestamp() {
        let cached = deleted_pod(pod("a", "2"), 1, &SparkStateRules::default(), &Default::default());
        assert!(cached.json.decode().metadata.deletion_timestamp.is_some());
    }

    fn with_status(phase: &str, containers: serde_json::Value) -> Pod {
        let mut p = pod("a", "3");
        p.status = Some(serde_json::from_value(json!({"phase": phase, "containerStatuses": containers})).unwrap());
        p
    }

    fn terminated(name: &str, exit_code: i32) -> serde_json::Value {
        json!({"name": name, "image": "spark", "imageID": "", "ready": false, "restartCount": 0,
               "state": {"terminated": {"exitCode": exit_code}}})
    }

    #[test]
    fn pods_are_classified_as_sparks_executor_pods_snapshot_does() {
        let rules = SparkStateRules::default();
        let state = |p: &Pod| spark_state(p, &rules);
        assert_eq!(state(&pod("a", "1")), SparkState::Running);
        assert_eq!(state(&with_status("Pending", json!([]))), SparkState::Pending);
        assert_eq!(state(&with_status("Failed", json!([]))), SparkState::Failed);
        assert_eq!(state(&with_status("Succeeded", json!([]))), SparkState::Succeeded);
        assert_eq!(state(&with_status("Unknown", json!([]))), SparkState::Unknown);
        assert_eq!(state(&with_status("Terminating", json!([]))), SparkState::Terminating);
        // Running with the Spark container terminated: the exit code decides.
        let container = DEFAULT_EXECUTOR_CONTAINER_NAME;
        assert_eq!(state(&with_status("Running", json!([terminated(container, 137)]))), SparkState::Failed);
        assert_eq!(state(&with_status("Running", json!([terminated(container, 0)]))), SparkState::Succeeded);
        assert_eq!(state(&with_status("Running", json!([terminated("sidecar", 1)]))), SparkState::Running);
        // A deletionTimestamp deletes a pod only outside Running and Terminating.
        let mut deleted = with_status("Failed", json!([]));
        deleted.metadata.deletion_timestamp = Some(Time(k8s_openapi::jiff::Timestamp::now()));
        assert_eq!(state(&deleted), SparkState::Deleted);
        let mut running = with_status("Running", json!([terminated(container, 143)]));
        running.metadata.deletion_timestamp = deleted.metadata.deletion_timestamp.clone();
        assert_eq!(state(&running), SparkState::Failed, "Running: not deleted to Spark; its container failed");
        assert!([SparkState::Failed, SparkState::Succeeded, SparkState::Deleted].iter().all(|s| s.acted_on()));
        assert!(!SparkState::Running.acted_on() && !SparkState::Pending.acted_on());
    }

    #[test]
    fn with_check_all_containers_a_sidecar_failure_fails_a_pod_that_never_restarts() {
        let all = SparkStateRules { check_all_containers: true, ..SparkStateRules::default() };
        let mut p = with_status("Running", json!([terminated("sidecar", 1)]));
        assert_eq!(spark_state(&p, &all), SparkState::Running, "restartPolicy unset: not Never");
        p.spec.as_mut().unwrap().restart_policy = Some("Never".into());
        assert_eq!(spark_state(&p, &all), SparkState::Failed);
        assert_eq!(spark_state(&p, &SparkStateRules::default()), SparkState::Running);
        let named = SparkStateRules { container_name: "sidecar".into(), ..SparkStateRules::default() };
        assert_eq!(spark_state(&p, &named), SparkState::Failed, "the container the driver names is Spark's");
    }

    #[test]
    fn a_pod_found_gone_is_deleted_to_spark_unless_it_was_running() {
        let rules = SparkStateRules::default();
        assert_eq!(
            deleted_pod(with_status("Pending", json!([])), 1, &rules, &Default::default()).spark_state,
            SparkState::Deleted
        );
        assert_eq!(deleted_pod(pod("b", "1"), 2, &rules, &Default::default()).spark_state, SparkState::Running);
    }
}

//! What crosses to the JVM, and how it is encoded: the one encoder.
//!
//! Pods travel as JSON that fabric8's `Pod` deserializes (k8s-openapi and
//! fabric8 both follow the Kubernetes wire format), with `managedFields`
//! stripped. Many pods travel in one byte array per call, framed big-endian
//! (Java's `ByteBuffer` default):
//!
//! ```text
//! batch := version:u8 (=2) view:u64 count:u32 entry*
//! view  := lister snapshots: the cache generation they show (every change up to
//!          it, none after); change batches: 0
//! entry := kind:u8 generation:u64 name_len:u16 name:utf8 json_len:u32 json
//! kind  := 0 applied | 1 deleted | 2 unchanged (lister only: json_len = 0, the
//!          JVM already holds this generation of the pod)
//! ```
//!
//! The lister answers with a batch; or, when the cache is exactly as the JVM's
//! previous snapshot showed it, the single byte 1 (the JVM reuses that
//! snapshot: nothing is encoded, copied or decoded); or, when not ready, a 0
//! byte and the reason in UTF-8.

use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use crate::labels;

pub const FORMAT_VERSION: u8 = 2;
/// The lister's answer when nothing changed since the JVM's previous snapshot.
pub const UNCHANGED_SINCE_KNOWN: u8 = 1;

/// One pod as the cache holds it and the JVM receives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CachedPod {
    pub name: String,
    pub uid: String,
    pub resource_version: String,
    /// Local, strictly increasing per informer: a new value for every change,
    /// so the JVM can skip decoding a pod it already holds.
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

const APPLIED: u8 = 0;
const DELETED: u8 = 1;
const UNCHANGED: u8 = 2;

/// Encodes changes for the informer source.
pub fn encode_changes(changes: &[PodChange]) -> Vec<u8> {
    let size = changes.iter().map(|c| entry_size(c.pod(), true)).sum::<usize>();
    let mut out = header(0, changes.len(), size);
    for change in changes {
        let kind = if matches!(change, PodChange::Applied(_)) { APPLIED } else { DELETED };
        put_entry(&mut out, kind, change.pod(), true);
    }
    out
}

/// Encodes a full snapshot for the lister source: `pods`, the cache at
/// generation `view`. `known_generation` is the view of the JVM's previous
/// snapshot: a pod at or below it was in that snapshot, so it is sent without
/// JSON; when the cache has not changed since, the answer is one byte.
pub fn encode_snapshot(pods: &[Arc<CachedPod>], known_generation: u64, view: u64) -> Vec<u8> {
    if known_generation != 0 && known_generation == view {
        return vec![UNCHANGED_SINCE_KNOWN];
    }
    let changed = |p: &CachedPod| p.generation > known_generation;
    let size = pods.iter().map(|p| entry_size(p, changed(p))).sum::<usize>();
    let mut out = header(view, pods.len(), size);
    for pod in pods {
        let kind = if changed(pod) { APPLIED } else { UNCHANGED };
        put_entry(&mut out, kind, pod, changed(pod));
    }
    out
}

/// The lister's answer when it is not ready: a 0 byte (never a format
/// version), then the reason in UTF-8.
pub fn encode_not_ready(reason: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(1 + reason.len());
    out.push(0);
    out.extend_from_slice(reason.as_bytes());
    out
}

fn header(view: u64, count: usize, entries_size: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(13 + entries_size);
    out.push(FORMAT_VERSION);
    out.extend_from_slice(&view.to_be_bytes());
    out.extend_from_slice(&(count as u32).to_be_bytes());
    out
}

fn entry_size(pod: &CachedPod, with_json: bool) -> usize {
    1 + 8 + 2 + pod.name.len() + 4 + if with_json { pod.json.len() } else { 0 }
}

fn put_entry(out: &mut Vec<u8>, kind: u8, pod: &CachedPod, with_json: bool) {
    out.push(kind);
    out.extend_from_slice(&pod.generation.to_be_bytes());
    // Pod names are at most 253 bytes.
    out.extend_from_slice(&(pod.name.len() as u16).to_be_bytes());
    out.extend_from_slice(pod.name.as_bytes());
    let json: &[u8] = if with_json { &pod.json } else { &[] };
    out.extend_from_slice(&(json.len() as u32).to_be_bytes());
    out.extend_from_slice(json);
}

/// One decoded entry (the Rust mirror of the Java decoder, for tests and benchmarks).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodedEntry {
    pub kind: u8,
    pub generation: u64,
    pub name: String,
    pub json: Vec<u8>,
}

/// A decoded batch (the Rust mirror of the Java decoder).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodedBatch {
    pub view: u64,
    pub entries: Vec<DecodedEntry>,
}

/// Decodes a batch; `None` if it is malformed.
pub fn decode_batch(bytes: &[u8]) -> Option<DecodedBatch> {
    let mut reader = Reader(bytes);
    if reader.take(1)?[0] != FORMAT_VERSION {
        return None;
    }
    let view = u64::from_be_bytes(reader.take(8)?.try_into().ok()?);
    let count = u32::from_be_bytes(reader.take(4)?.try_into().ok()?) as usize;
    let mut entries = Vec::with_capacity(count.min(1 << 16));
    for _ in 0..count {
        let kind = reader.take(1)?[0];
        let generation = u64::from_be_bytes(reader.take(8)?.try_into().ok()?);
        let name_len = u16::from_be_bytes(reader.take(2)?.try_into().ok()?) as usize;
        let name = String::from_utf8(reader.take(name_len)?.to_vec()).ok()?;
        let json_len = u32::from_be_bytes(reader.take(4)?.try_into().ok()?) as usize;
        let json = reader.take(json_len)?.to_vec();
        entries.push(DecodedEntry { kind, generation, name, json });
    }
    reader.0.is_empty().then_some(DecodedBatch { view, entries })
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let (head, tail) = self.0.split_at_checked(n)?;
        self.0 = tail;
        Some(head)
    }
}

#[cfg(test)]
mod tests {
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
    fn changes_round_trip() {
        let a = Arc::new(cached_pod(pod("a", "1"), 1));
        let b = Arc::new(deleted_pod(pod("b", "2"), 2));
        let bytes = encode_changes(&[PodChange::Applied(a.clone()), PodChange::Deleted(b.clone())]);
        let batch = decode_batch(&bytes).unwrap();
        assert_eq!(batch.view, 0, "a change batch is no view of the cache");
        let entries = batch.entries;
        assert_eq!(entries.len(), 2);
        assert_eq!((entries[0].kind, entries[0].generation, entries[0].name.as_str()), (0, 1, "a"));
        assert_eq!(entries[0].json, a.json.to_vec());
        assert_eq!((entries[1].kind, entries[1].name.as_str()), (1, "b"));
        assert_eq!(decode_pod(&entries[1].json).metadata.uid.as_deref(), Some("uid-b"));
    }

    #[test]
    fn snapshots_omit_pods_the_jvm_already_holds() {
        let pods: Vec<_> = (1..=3).map(|g| Arc::new(cached_pod(pod(&format!("p{g}"), "1"), g))).collect();
        let batch = decode_batch(&encode_snapshot(&pods, 2, 3)).unwrap();
        assert_eq!(batch.view, 3);
        let kinds: Vec<_> = batch.entries.iter().map(|e| (e.kind, e.json.is_empty())).collect();
        assert_eq!(kinds, [(2, true), (2, true), (0, false)]);
        assert!(decode_batch(&encode_snapshot(&[], 0, 0)).unwrap().entries.is_empty());
    }

    #[test]
    fn an_unchanged_cache_is_one_byte() {
        let pods: Vec<_> = (1..=3).map(|g| Arc::new(cached_pod(pod(&format!("p{g}"), "1"), g))).collect();
        assert_eq!(encode_snapshot(&pods, 5, 5), [UNCHANGED_SINCE_KNOWN]);
        // A deletion moves the view past every live pod's generation: still a full answer.
        assert_eq!(decode_batch(&encode_snapshot(&pods, 5, 6)).unwrap().entries.len(), 3);
        // The JVM's first round knows nothing, even of an empty cache.
        assert!(decode_batch(&encode_snapshot(&[], 0, 0)).is_some());
    }

    #[test]
    fn malformed_batches_are_rejected() {
        let bytes = encode_changes(&[PodChange::Applied(Arc::new(cached_pod(pod("a", "1"), 1)))]);
        assert!(decode_batch(&bytes[..bytes.len() - 1]).is_none());
        assert!(decode_batch(&[]).is_none());
        assert!(decode_batch(&[9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]).is_none());
        assert!(decode_batch(&[UNCHANGED_SINCE_KNOWN]).is_none(), "not a batch");
        let mut extra = bytes.clone();
        extra.push(0);
        assert!(decode_batch(&extra).is_none());
    }
}

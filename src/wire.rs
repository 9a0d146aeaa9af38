//! What crosses JNI, and how it is encoded: the one description of the wire
//! format and its one encoder. The Java decoder is `org.sparkk8snative.Wire`;
//! the library and the jar check at load that they speak the same [`VERSION`].
//!
//! Every frame is big-endian (Java's `ByteBuffer` default) and starts with the
//! version and a tag:
//!
//! ```text
//! frame    := version:u8 tag:u8 body
//! CHANGES  (1) count:u32 entry*                  pod changes for Spark's updatePod
//! SNAPSHOT (2) view:u64 count:u32 entry*         the lister's full snapshot
//! UNCHANGED(3) view:u64                          the cache is exactly as the caller's view
//! NOT_READY(4) reason:utf8 (to the end)          no snapshot may be taken now; from pollChanges:
//!                                                no change will come, the informer is stopped
//! HEALTH   (5) state:u8 has_synced:u8 consecutive_failures:u32
//!              cache_size eventsApplied relists errors lists watchConnects
//!              millisSinceEvent millisSinceActivity pendingChanges cacheJsonBytes resumes: i64 each
//!              (-1: never)
//!              phase:str description:str
//! entry    := kind:u8 generation:u64 name:str json_len:u32 json
//! kind     := 0 applied | 1 deleted | 2 unchanged (snapshots only: json_len = 0, the caller
//!             holds this generation of the pod)
//! str      := len:u32 utf8
//! state    := 0 Starting | 1 Synced | 2 Degraded | 3 Stopped
//! ```
//!
//! Two numbers identify what the JVM holds: a pod's *generation* names one
//! state of one pod (see `pod.rs`); a snapshot's *view* names the whole
//! contents of the cache (see `ExecutorPodCache::view`).

use std::sync::Arc;
use std::time::SystemTime;

use crate::informer::health::SyncState;
use crate::informer::HealthReport;
use crate::pod::{CachedPod, PodChange};

/// Bumped with every change to the format, and to a native method's signature
/// (the same check at load keeps a jar from calling a library that takes other arguments).
pub const VERSION: u8 = 7;

pub const TAG_CHANGES: u8 = 1;
pub const TAG_SNAPSHOT: u8 = 2;
pub const TAG_UNCHANGED: u8 = 3;
pub const TAG_NOT_READY: u8 = 4;
pub const TAG_HEALTH: u8 = 5;

pub const APPLIED: u8 = 0;
pub const DELETED: u8 = 1;
pub const UNCHANGED: u8 = 2;

/// Encodes changes for the informer source.
pub fn encode_changes(changes: &[PodChange]) -> Vec<u8> {
    let size = changes.iter().map(|c| entry_size(c.pod(), true)).sum::<usize>();
    let mut out = frame(TAG_CHANGES, 4 + size);
    put_u32(&mut out, changes.len());
    for change in changes {
        let kind = if matches!(change, PodChange::Applied(_)) { APPLIED } else { DELETED };
        put_entry(&mut out, kind, change.pod(), true);
    }
    out
}

/// Encodes a full snapshot for the lister source: `pods`, the cache at `view`.
/// `known_view` is the view of the caller's previous snapshot: a pod whose
/// generation is at or below it was in that snapshot, as it is, so it goes
/// without JSON; when the cache is still at that view, the answer is UNCHANGED.
pub fn encode_snapshot(pods: &[Arc<CachedPod>], known_view: u64, view: u64) -> Vec<u8> {
    if known_view != 0 && known_view == view {
        let mut out = frame(TAG_UNCHANGED, 8);
        out.extend_from_slice(&view.to_be_bytes());
        return out;
    }
    let changed = |p: &CachedPod| p.generation > known_view;
    let size = pods.iter().map(|p| entry_size(p, changed(p))).sum::<usize>();
    let mut out = frame(TAG_SNAPSHOT, 12 + size);
    out.extend_from_slice(&view.to_be_bytes());
    put_u32(&mut out, pods.len());
    for pod in pods {
        let kind = if changed(pod) { APPLIED } else { UNCHANGED };
        put_entry(&mut out, kind, pod, changed(pod));
    }
    out
}

/// The lister's answer when it is not ready.
pub fn encode_not_ready(reason: &str) -> Vec<u8> {
    let mut out = frame(TAG_NOT_READY, reason.len());
    out.extend_from_slice(reason.as_bytes());
    out
}

/// The informer's health at one instant.
pub fn encode_health(h: &HealthReport) -> Vec<u8> {
    let (state, failures) = match &h.state {
        SyncState::Starting => (0u8, 0u32),
        SyncState::Synced => (1, 0),
        SyncState::Degraded { consecutive_failures, .. } => (2, *consecutive_failures),
        SyncState::Stopped => (3, 0),
    };
    let since = |t: Option<SystemTime>| {
        t.map_or(-1, |t| SystemTime::now().duration_since(t).unwrap_or_default().as_millis() as i64)
    };
    let description = h.describe();
    let mut out = frame(TAG_HEALTH, 6 + 88 + 8 + h.phase.len() + description.len());
    out.push(state);
    out.push(h.has_synced as u8);
    out.extend_from_slice(&failures.to_be_bytes());
    for value in [
        h.cache_size as i64,
        h.events_applied as i64,
        h.relists as i64,
        h.errors as i64,
        h.lists as i64,
        h.watch_connects as i64,
        since(h.last_event),
        since(h.last_activity),
        h.pending_changes as i64,
        h.cache_json_bytes as i64,
        h.resumes as i64,
    ] {
        out.extend_from_slice(&value.to_be_bytes());
    }
    put_str(&mut out, h.phase);
    put_str(&mut out, &description);
    out
}

fn frame(tag: u8, body_size: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(2 + body_size);
    out.push(VERSION);
    out.push(tag);
    out
}

fn put_u32(out: &mut Vec<u8>, n: usize) {
    out.extend_from_slice(&(n as u32).to_be_bytes());
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    put_u32(out, s.len());
    out.extend_from_slice(s.as_bytes());
}

fn entry_size(pod: &CachedPod, with_json: bool) -> usize {
    1 + 8 + 4 + pod.name.len() + 4 + if with_json { pod.json.len() } else { 0 }
}

fn put_entry(out: &mut Vec<u8>, kind: u8, pod: &CachedPod, with_json: bool) {
    out.push(kind);
    out.extend_from_slice(&pod.generation.to_be_bytes());
    put_str(out, &pod.name);
    if with_json {
        put_u32(out, pod.json.len());
        pod.json.append_to(out);
    } else {
        put_u32(out, 0);
    }
}

/// One decoded entry (the Rust mirror of the Java decoder, for tests and benchmarks).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodedEntry {
    pub kind: u8,
    pub generation: u64,
    pub name: String,
    pub json: Vec<u8>,
}

/// A decoded lister answer or change batch (the Rust mirror of the Java decoder).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decoded {
    Changes(Vec<DecodedEntry>),
    Snapshot { view: u64, entries: Vec<DecodedEntry> },
    Unchanged { view: u64 },
    NotReady(String),
}

/// Decodes a batch or a lister answer; `None` if it is malformed.
pub fn decode(bytes: &[u8]) -> Option<Decoded> {
    let mut reader = Reader(bytes);
    if reader.u8()? != VERSION {
        return None;
    }
    let decoded = match reader.u8()? {
        TAG_CHANGES => Decoded::Changes(reader.entries()?),
        TAG_SNAPSHOT => {
            let view = reader.u64()?;
            Decoded::Snapshot { view, entries: reader.entries()? }
        }
        TAG_UNCHANGED => Decoded::Unchanged { view: reader.u64()? },
        TAG_NOT_READY => return Some(Decoded::NotReady(String::from_utf8(reader.0.to_vec()).ok()?)),
        _ => return None,
    };
    reader.0.is_empty().then_some(decoded)
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let (head, tail) = self.0.split_at_checked(n)?;
        self.0 = tail;
        Some(head)
    }

    fn u8(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }

    fn u32(&mut self) -> Option<usize> {
        Some(u32::from_be_bytes(self.take(4)?.try_into().ok()?) as usize)
    }

    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_be_bytes(self.take(8)?.try_into().ok()?))
    }

    fn entries(&mut self) -> Option<Vec<DecodedEntry>> {
        let count = self.u32()?;
        let mut entries = Vec::with_capacity(count.min(1 << 16));
        for _ in 0..count {
            let kind = self.u8()?;
            let generation = self.u64()?;
            let name_len = self.u32()?;
            let name = String::from_utf8(self.take(name_len)?.to_vec()).ok()?;
            let json_len = self.u32()?;
            let json = self.take(json_len)?.to_vec();
            entries.push(DecodedEntry { kind, generation, name, json });
        }
        Some(entries)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pod::tests::pod;
    use crate::pod::{cached_pod, decode_pod, deleted_pod};

    fn entries(bytes: &[u8]) -> Vec<DecodedEntry> {
        match decode(bytes).unwrap() {
            Decoded::Changes(e) | Decoded::Snapshot { entries: e, .. } => e,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn changes_round_trip() {
        let a = Arc::new(cached_pod(pod("a", "1"), 1, &Default::default(), &Default::default()));
        let b = Arc::new(deleted_pod(pod("b", "2"), 2, &Default::default(), &Default::default()));
        let bytes = encode_changes(&[PodChange::Applied(a.clone()), PodChange::Deleted(b.clone())]);
        let entries = entries(&bytes);
        assert_eq!(entries.len(), 2);
        assert_eq!((entries[0].kind, entries[0].generation, entries[0].name.as_str()), (APPLIED, 1, "a"));
        assert_eq!(entries[0].json, a.json.to_vec());
        assert_eq!((entries[1].kind, entries[1].name.as_str()), (DELETED, "b"));
        assert_eq!(decode_pod(&entries[1].json).metadata.uid.as_deref(), Some("uid-b"));
    }

    #[test]
    fn snapshots_omit_pods_the_jvm_already_holds() {
        let pods: Vec<_> = (1..=3)
            .map(|g| Arc::new(cached_pod(pod(&format!("p{g}"), "1"), g, &Default::default(), &Default::default())))
            .collect();
        let Some(Decoded::Snapshot { view, entries }) = decode(&encode_snapshot(&pods, 2, 3)) else { panic!() };
        assert_eq!(view, 3);
        let kinds: Vec<_> = entries.iter().map(|e| (e.kind, e.json.is_empty())).collect();
        assert_eq!(kinds, [(UNCHANGED, true), (UNCHANGED, true), (APPLIED, false)]);
        assert!(matches!(decode(&encode_snapshot(&[], 0, 0)), Some(Decoded::Snapshot { .. })));
    }

    #[test]
    fn a_cache_at_the_callers_view_is_unchanged() {
        let pods: Vec<_> = (1..=3)
            .map(|g| Arc::new(cached_pod(pod(&format!("p{g}"), "1"), g, &Default::default(), &Default::default())))
            .collect();
        assert_eq!(decode(&encode_snapshot(&pods, 5, 5)), Some(Decoded::Unchanged { view: 5 }));
        assert_eq!(entries(&encode_snapshot(&pods, 5, 6)).len(), 3);
        // The caller's first round knows nothing, even of an empty cache.
        assert!(matches!(decode(&encode_snapshot(&[], 0, 0)), Some(Decoded::Snapshot { .. })));
    }

    #[test]
    fn not_ready_carries_its_reason() {
        assert_eq!(decode(&encode_not_ready("stale")), Some(Decoded::NotReady("stale".into())));
    }

    #[test]
    fn malformed_frames_are_rejected() {
        let bytes = encode_changes(&[PodChange::Applied(Arc::new(cached_pod(
            pod("a", "1"),
            1,
            &Default::default(),
            &Default::default(),
        )))]);
        assert!(decode(&bytes[..bytes.len() - 1]).is_none());
        assert!(decode(&[]).is_none());
        assert!(decode(&[9, TAG_CHANGES, 0, 0, 0, 0]).is_none(), "another version");
        assert!(decode(&[VERSION, 99]).is_none(), "an unknown tag");
        let mut extra = bytes.clone();
        extra.push(0);
        assert!(decode(&extra).is_none());
    }
}

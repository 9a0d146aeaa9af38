//! The local cache of this app's executor pods: what the lister snapshots and
//! what a relist is compared against.
//!
//! During a (re)list the old contents keep serving; the listed pods are
//! gathered aside and swapped in when the list completes, and the difference
//! becomes changes for Spark, so that nothing that happened while the watch
//! was broken is lost.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;

use crate::pod::{self, CachedPod, JsonDictionary, PodChange, SparkStateRules};

/// Generations are unique in the process, not per cache: a view handed out by one
/// informer can never match another's (a restarted informer starts with a new cache).
static LAST_GENERATION: AtomicU64 = AtomicU64::new(0);

fn next_generation() -> u64 {
    LAST_GENERATION.fetch_add(1, Ordering::Relaxed) + 1
}

#[derive(Debug, Default)]
pub(super) struct ExecutorPodCache {
    live: HashMap<String, Arc<CachedPod>>,
    /// Pods of the list in progress, if any.
    listing: Option<HashMap<String, Arc<CachedPod>>>,
    /// Moves with every change to `live`, relists included (see [`Self::view`]).
    view: u64,
    /// The generation of the newest change handed out (see [`Self::newest_change`]).
    newest_change: u64,
    lists_completed: u64,
    /// How Spark classifies the pods (each entry carries its class).
    rules: SparkStateRules,
    /// What the pods' JSON is compressed against.
    dictionary: JsonDictionary,
}

impl ExecutorPodCache {
    pub(super) fn new(rules: SparkStateRules) -> Self {
        Self { rules, ..Self::default() }
    }

    /// A (re)list begins.
    pub(super) fn begin_list(&mut self) {
        self.listing = Some(HashMap::new());
    }

    /// One pod of the list in progress. During the very first list it is also
    /// a change to deliver at once, as a watch would show an existing pod: the
    /// JVM decodes the pods while the list still streams in, and the lister's
    /// first snapshot reuses them (nothing is served before that list completes).
    /// A relist is compared at its end instead.
    pub(super) fn list_item(&mut self, pod: Pod) -> Option<PodChange> {
        let first = self.lists_completed == 0;
        // A relist's new pods get their generation when they enter the live cache, not
        // now: a snapshot taken meanwhile shows the old contents, and its view must not
        // cover pods it does not hold.
        let entry = self.entry_for(pod, if first { next_generation() } else { 0 });
        self.listing.get_or_insert_with(HashMap::new).insert(entry.name.clone(), entry.clone());
        first.then(|| self.handed_out(PodChange::Applied(entry)))
    }

    /// The list completed: it replaces the cache. Returns what changed, except
    /// after the very first list (its pods went out as they came). Pods found
    /// gone are the only deletions the cache makes up (see [`pod::deleted_pod`]
    /// for what Spark makes of them).
    pub(super) fn complete_list(&mut self) -> Vec<PodChange> {
        let mut listed = self.listing.take().unwrap_or_default();
        let first = self.lists_completed == 0;
        self.lists_completed += 1;
        let mut changes = Vec::new();
        if !first {
            let gone: Vec<Arc<CachedPod>> =
                self.live.iter().filter(|(name, _)| !listed.contains_key(*name)).map(|(_, p)| p.clone()).collect();
            for old in gone {
                let deleted = pod::deleted_pod(old.json.decode(), next_generation(), &self.rules, &self.dictionary);
                changes.push(PodChange::Deleted(Arc::new(deleted)));
            }
            for entry in listed.values_mut() {
                if entry.generation == 0 {
                    *entry = Arc::new(CachedPod { generation: next_generation(), ..CachedPod::clone(entry) });
                    changes.push(PodChange::Applied(entry.clone()));
                }
            }
        }
        self.live = listed;
        // Any relist replaces the cache: the JVM's previous snapshot is never "unchanged" across one.
        self.view = next_generation();
        changes.into_iter().map(|c| self.handed_out(c)).collect()
    }

    /// The list in progress is dropped (rejected as older than the cache): the cache stays as it was.
    pub(super) fn abandon_list(&mut self) {
        self.listing = None;
    }

    /// A watch event added or modified a pod. `None` if the cache already
    /// holds exactly this version (a replayed event).
    pub(super) fn apply(&mut self, pod: Pod) -> Option<PodChange> {
        let entry = self.entry_for(pod, next_generation());
        if self.live.get(&entry.name).is_some_and(|old| Arc::ptr_eq(old, &entry)) {
            return None;
        }
        self.view = entry.generation;
        self.live.insert(entry.name.clone(), entry.clone());
        Some(self.handed_out(PodChange::Applied(entry)))
    }

    /// A watch event deleted a pod (or it left the label selector): delivered
    /// as the apiserver sent it, as Spark's own watch source does.
    pub(super) fn delete(&mut self, pod: Pod) -> PodChange {
        let gone = Arc::new(pod::cached_pod(pod, next_generation(), &self.rules, &self.dictionary));
        self.view = gone.generation;
        self.live.remove(&gone.name);
        self.handed_out(PodChange::Deleted(gone))
    }

    /// Every cached pod, in no particular order.
    pub(super) fn snapshot(&self) -> Vec<Arc<CachedPod>> {
        self.live.values().cloned().collect()
    }

    /// Identifies the live contents: equal views mean exactly the same pods at
    /// the same generations, and every pod with a generation at or below a view
    /// was in the cache, as it is, when that view was taken.
    pub(super) fn view(&self) -> u64 {
        self.view
    }

    /// The generation of the newest change this cache handed out (0: none): a snapshot shows no
    /// change newer, so once the consumer has handed every change up to it to Spark, a snapshot
    /// taken now overtakes none ([`super::changes::PodChangeQueue::handed_on`]).
    pub(super) fn newest_change(&self) -> u64 {
        self.newest_change
    }

    fn handed_out(&mut self, change: PodChange) -> PodChange {
        self.newest_change = self.newest_change.max(change.pod().generation);
        change
    }

    #[cfg(test)]
    pub(super) fn get(&self, name: &str) -> Option<&Arc<CachedPod>> {
        self.live.get(name)
    }

    pub(super) fn len(&self) -> usize {
        self.live.len()
    }

    #[cfg(test)]
    pub(super) fn is_empty(&self) -> bool {
        self.live.is_empty()
    }

    /// Bytes of encoded pods held, compressed (the bulk of the cache's memory).
    pub(super) fn json_bytes(&self) -> usize {
        self.live.values().map(|p| p.json.held_bytes()).sum()
    }

    /// The entry for `pod`: the cached one if it is the same version of the
    /// same pod (keeping its generation), else a new one with `generation`.
    fn entry_for(&self, pod: Pod, generation: u64) -> Arc<CachedPod> {
        let meta = &pod.metadata;
        if let (Some(name), Some(uid), Some(rv)) = (&meta.name, &meta.uid, &meta.resource_version) {
            if let Some(old) = self.live.get(name).filter(|old| &old.uid == uid && &old.resource_version == rv) {
                return old.clone();
            }
        }
        Arc::new(pod::cached_pod(pod, generation, &self.rules, &self.dictionary))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(name: &str, rv: &str, phase: &str) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": name, "uid": format!("uid-{name}"), "resourceVersion": rv},
            "status": {"phase": phase},
        }))
        .unwrap()
    }

    fn names(changes: &[PodChange]) -> Vec<String> {
        let mut v: Vec<_> = changes
            .iter()
            .map(|c| match c {
                PodChange::Applied(p) => format!("+{}@{}", p.name, p.resource_version),
                PodChange::Deleted(p) => format!("-{}", p.name),
            })
            .collect();
        v.sort();
        v
    }

    fn listed(cache: &mut ExecutorPodCache, pods: Vec<Pod>) -> Vec<PodChange> {
        cache.begin_list();
        for p in pods {
            cache.list_item(p);
        }
        cache.complete_list()
    }

    #[test]
    fn the_first_list_delivers_each_pod_as_it_comes_and_nothing_at_its_end() {
        let mut cache = ExecutorPodCache::default();
        cache.begin_list();
        let a = cache.list_item(pod("a", "1", "Running")).expect("delivered at once");
        assert_eq!(names(&[a]), ["+a@1"]);
        assert_eq!(cache.len(), 0, "not serving before the list completes");
        assert!(cache.list_item(pod("b", "2", "Pending")).is_some());
        assert!(cache.complete_list().is_empty());
        assert_eq!(cache.len(), 2);
        // A relist's items are only compared at its end.
        cache.begin_list();
        assert!(cache.list_item(pod("a", "1", "Running")).is_none());
    }

    #[test]
    fn relist_keeps_serving_the_old_cache_then_yields_the_difference() {
        let mut cache = ExecutorPodCache::default();
        listed(&mut cache, vec![pod("a", "1", "Running"), pod("b", "2", "Running"), pod("c", "3", "Running")]);
        let gen_a = cache.get("a").unwrap().generation;
        cache.begin_list();
        cache.list_item(pod("a", "1", "Running"));
        cache.list_item(pod("b", "5", "Failed"));
        cache.list_item(pod("d", "6", "Pending"));
        // Still the old contents until the list completes.
        assert_eq!(cache.len(), 3);
        assert!(cache.get("c").is_some());
        let changes = cache.complete_list();
        assert_eq!(names(&changes), ["+b@5", "+d@6", "-c"]);
        assert_eq!(cache.get("a").unwrap().generation, gen_a, "an unchanged pod keeps its generation");
        let deleted = changes.iter().find(|c| matches!(c, PodChange::Deleted(_))).unwrap();
        assert!(deleted.pod().json.decode().metadata.deletion_timestamp.is_some());
    }

    #[test]
    fn watch_events_update_and_replays_are_dropped() {
        let mut cache = ExecutorPodCache::default();
        listed(&mut cache, vec![]);
        let first = cache.apply(pod("a", "1", "Pending")).unwrap();
        assert!(cache.apply(pod("a", "1", "Pending")).is_none(), "same version again");
        let second = cache.apply(pod("a", "2", "Running")).unwrap();
        assert!(second.pod().generation > first.pod().generation);
        let gone = cache.delete(pod("a", "3", "Running"));
        assert!(matches!(gone, PodChange::Deleted(_)));
        assert!(gone.pod().generation > second.pod().generation);
        assert!(cache.is_empty());
    }
}

//! The informer as one state machine: an enum of phases and one [`InformerMachine::step`]
//! function, the only writer of the pod cache. It is pure (no I/O, time passed in), so every
//! transition is unit-tested without a control plane; the informer task in `mod.rs` feeds it
//! what kube's watcher and the wire show, and carries out the [`Effect`]s it returns.
//!
//! The promise it keeps: a full snapshot is handed out only while the cache is known to be
//! current within the stale bound, because Spark removes every executor missing from a full
//! snapshot. "Current as of T" means every change the apiserver made before T is in the cache:
//!
//! - a completed list makes the cache current as of its completion, and a watch that follows
//!   keeps it current as of the last byte the apiserver sent on it;
//! - while (re)listing, the old cache stays as current as it was when its watch broke, however
//!   busy the wire is: the list's bytes say nothing of the old cache;
//! - bytes prove the cache current only while they follow the last proof within the stale bound:
//!   bytes after a longer quiet spell may be a burst that something held back (a black hole that
//!   ended), whose end nobody announces. Such a watch proves the cache again when it ends cleanly
//!   at its timeout: everything the apiserver wrote on it before its send time plus the timeout
//!   arrived (see `ApiActivity::last_watch_end`), and the next watch follows on from then. So a quiet watch longer than the stale bound proves
//!   the cache at each renewal; a full snapshot needs a proof younger than the stale bound, and
//!   when the last one is older but the watch is within its silence bound, the lister waits for
//!   the next renewal and snapshots right after it ([`NotReady::AwaitingProof`]). Watches may so
//!   be as long as a lister round, renewing once per round;
//! - every proof comes from a *fresh* watch: one that has shown a resourceVersion at least as new
//!   as the cache's (an event or a bookmark; see `listwatch.rs` for why a healthy apiserver always
//!   sends one before the watch's timeout). On a highly available control plane a watch may be
//!   served by a lagging apiserver whose watch cache is older than ours: it accepts the watch and
//!   sends nothing, and its clean end proves nothing. Such an end is a failure (health Degraded)
//!   until a fresh watch follows;
//! - never back in time: relists are consistent reads, which a lagging apiserver cannot answer
//!   ([`InformerMachine::list_request`]), and a list whose resourceVersion is older than the newest
//!   the cache has applied is rejected all the same (the cache stays, the informer lists again
//!   after a backoff);
//! - a silence longer than the silence bound (a watch's length plus a margin: a black hole, a
//!   long outage) ends the watch. The informer then resumes it from the cache's resourceVersion,
//!   as client-go's reflector and Spark's own watch do, so every change the silence hid reaches
//!   Spark as an event (an exit code logged, a failure counted), where a relist would lose the
//!   states in the gap. The resumed watch replays in a burst whose end nobody announces, and on a
//!   highly available control plane it may be served by an apiserver cut from etcd, whose frozen
//!   watch cache looks as new as ours. So before it resumes, the informer makes a consistent read
//!   (a list with `resourceVersion` unset, which needs etcd: a lagging apiserver cannot answer
//!   it), and serves nothing until the watch shows a resourceVersion at least as new as that
//!   read's: then every change made before the read has arrived ([`Phase::Resuming`]). If the
//!   watch does not get there within the proof wait, or cannot resume (410 Gone), the informer
//!   relists, and serves nothing until that list completes;
//! - a watch that breaks (fails, or ends other than cleanly at its timeout after showing itself
//!   fresh: a load balancer closing it, an apiserver restarting) resumes behind the same
//!   consistent read, a `limit=1` LIST made only for its resourceVersion: the new connection may
//!   reach an apiserver cut from etcd at the cache's own resourceVersion, whose bookmarks would
//!   look fresh while it misses every change made since. Meanwhile the cache serves what the
//!   broken watch proved, within the stale bound; a break that proves nothing for longer than the
//!   silence bound is a stale spell. A clean renewal costs no read.
//!
//! Reading (readiness, report) never changes state.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use k8s_openapi::api::core::v1::Pod;

use super::cache::ExecutorPodCache;
use super::health::{NotReady, SyncState};
use super::listwatch::{ListFrom, ListMethod, ListRequest, Requests};
use crate::pod::SparkStateRules;
use crate::pod::{CachedPod, PodChange};
use crate::settings::{self, InitialList};

/// Where the informer is, as the apiserver sees it. Each phase carries what only it has: the list
/// in progress (`listing`, when it began) or the watch request in progress (`watch`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Phase {
    /// Listing for the first time (one attempt after another); the cache is empty and
    /// never served. How the list is made is the machine's `strategy` (Auto falls back to the
    /// watch cache as an explicit transition), which every relist uses too.
    InitialList { listing: Option<Instant> },
    /// Following the apiserver with a watch (resuming from the last resourceVersion after
    /// a disconnect); the cache is current as of the last byte that watch received.
    Watching { since: Instant, watch: Option<CurrentWatch> },
    /// After a stale spell or a broken watch: a consistent read, then the watch resumed from the
    /// cache's resourceVersion, replaying what it missed. The watch proves nothing until it reaches
    /// the read's resourceVersion (module doc); after a stale spell nothing is served till then.
    Resuming { proof: ProofRead, after: ResumeCause, watch: Option<CurrentWatch> },
    /// Listing again: the watch could not resume (410 Gone), or a watch resumed behind a
    /// consistent read did not catch up. The old cache serves only while provably within the
    /// bound, and never after a stale spell.
    Relisting { cause: RelistCause, listing: Option<Instant> },
    /// Stopped for good.
    Stopped,
}

/// Why the informer relists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum RelistCause {
    /// The watch could not resume (410 Gone) after a short gap: the old cache is as current
    /// as before that watch and keeps serving until that is older than the stale bound.
    Gone,
    /// After a stale spell, the resumed watch did not catch up with a consistent read (or could
    /// not resume): the old cache is not served again.
    StaleSpell,
    /// After a broken watch, the resumed watch did not catch up with a consistent read (or could
    /// not resume): the old cache is as current as the watch before the break proved it, and
    /// serves until that is older than the stale bound.
    Break,
}

/// Why a watch resumes behind a consistent read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ResumeCause {
    /// A silence longer than the silence bound: the cache is stale, and nothing is served until
    /// the resumed watch catches up.
    StaleSpell,
    /// The watch failed or ended before its timeout (not a clean renewal): the next connection may
    /// reach another apiserver, one cut from etcd whose frozen watch cache is exactly as new as
    /// ours and so looks fresh (issue 23). The cache keeps what the broken watch proved.
    Break,
}

/// The consistent read that a resumed watch must catch up with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ProofRead {
    /// Not answered yet; `began` is when the current attempt began, if one has.
    Reading { began: Option<Instant> },
    /// Answered: the apiserver's state as of `revision`, read at some moment after `began`.
    Answered { revision: u64, began: Instant, answered: Instant },
}

/// The least time a resumed watch gets to catch up with the consistent read
/// (the stale bound, if longer): a healthy apiserver shows it with its first bookmark, about a
/// second into the short watch that resumes (`listwatch.rs`), so this allows several.
const PROOF_WAIT_MIN: Duration = Duration::from_secs(5);

impl ResumeCause {
    fn describe(self) -> &'static str {
        match self {
            ResumeCause::StaleSpell => "after a stale spell",
            ResumeCause::Break => "after a broken watch",
        }
    }
}

impl Phase {
    pub(super) fn name(&self) -> &'static str {
        match self {
            Phase::InitialList { .. } => "initial list",
            Phase::Watching { .. } => "watching",
            Phase::Resuming { after: ResumeCause::StaleSpell, .. } => "resuming after a stale spell",
            Phase::Resuming { after: ResumeCause::Break, .. } => "resuming after a broken watch",
            Phase::Relisting { cause: RelistCause::Gone, .. } => "relisting after 410 Gone",
            Phase::Relisting { cause: RelistCause::StaleSpell, .. } => "relisting after a stale spell",
            Phase::Relisting { cause: RelistCause::Break, .. } => "relisting after a broken watch",
            Phase::Stopped => "stopped",
        }
    }
}

/// What the informer task saw: one of kube's watcher items, a timer, or a stop.
#[derive(Debug)]
pub(super) enum Input {
    /// A list begins (`Event::Init`).
    ListBegan,
    /// A pod of the list in progress (`Event::InitApply`).
    Listed(Pod),
    /// The list is complete: the apiserver's state as of `resource_version`.
    ListDone {
        resource_version: String,
    },
    /// A watch request was answered (each renewal is one).
    WatchBegan,
    /// The watch added or modified a pod.
    Applied(Pod),
    /// The watch deleted a pod, or it left the label selector.
    Deleted(Pod),
    /// The apiserver's watch cache reached this resourceVersion.
    Bookmark {
        resource_version: String,
    },
    /// The watch response ended; `proves` is the last clean end of a WATCH response at its
    /// timeout (`ApiActivity::last_watch_end`), if any.
    WatchEnded {
        proves: Option<Instant>,
    },
    /// A request or the watch failed; the informer backs off and retries.
    Failed {
        error: String,
        /// The apiserver's status code, if it sent one.
        status: Option<u16>,
        /// "Too large resource version": the apiserver's cache is older than what was asked.
        lagging: bool,
    },
    /// The periodic check (deadlines, silence); `wire` is the last byte of a successful response.
    Tick {
        wire: Option<Instant>,
    },
    Stop,
}

/// What the informer task must do after a step.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Effect {
    /// Hand these changes to Spark and to the subscribers, in this order.
    Deliver(Vec<PodChange>),
    /// A list completed: the whole set of pods, for subscribers that reconcile (Services).
    Listed(Vec<Arc<CachedPod>>),
    /// Drop the requests in flight and list again, as [`InformerMachine::list_request`] says.
    Relist,
}

/// The current run of failures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct FailureRun {
    pub since: SystemTime,
    pub last_error: String,
    pub consecutive: u32,
    /// When the last failure was seen: only a sign of life after it ends the run.
    pub last_at: Instant,
}

/// Timing settings the machine needs.
#[derive(Debug, Clone, Copy)]
pub(super) struct Bounds {
    /// How old the cache may be when a full snapshot is taken.
    pub stale_bound: Duration,
    /// How long a healthy watch may be silent (`InformerSettings::silence_bound`); longer, the
    /// watch is dead and the informer relists.
    pub silence_bound: Duration,
    /// How long a list may take before it is abandoned and retried.
    pub list_timeout: Duration,
    /// Pods per page of a consistent list.
    pub page_size: u32,
}

/// The state machine. See the module doc.
#[derive(Debug)]
pub(super) struct InformerMachine {
    phase: Phase,
    cache: ExecutorPodCache,
    bounds: Bounds,
    /// How lists are made now (Auto may have fallen back to the watch cache).
    strategy: InitialList,
    /// When the last list completed.
    listed_at: Option<Instant>,
    /// The newest resourceVersion the cache holds everything up to (the last list's, then every
    /// event's and bookmark's): no list older than it is applied.
    resource_version: Option<String>,
    /// The last clean end of a fresh WATCH response at its timeout.
    watch_end: Option<Instant>,
    /// The cache holds every change made before this instant (with `Watching`, also every
    /// change before the watch's latest byte; see [`Self::current_as_of`]).
    current_as_of: Option<Instant>,
    failures: Option<FailureRun>,
    errors: u64,
    relists: u64,
    /// Watches resumed after a stale spell (each after a consistent read).
    resumes: u64,
    rejected_lists: u64,
    events_applied: u64,
    last_event: Option<SystemTime>,
    first_sync_logged: bool,
    started: Instant,
}

impl InformerMachine {
    /// `rules`: how Spark classifies the pods, which the change queue keeps from coalescing away.
    pub(super) fn new(strategy: InitialList, bounds: Bounds, rules: SparkStateRules, now: Instant) -> Self {
        Self {
            phase: Phase::InitialList { listing: None },
            cache: ExecutorPodCache::new(rules),
            bounds,
            strategy,
            listed_at: None,
            resource_version: None,
            watch_end: None,
            current_as_of: None,
            failures: None,
            errors: 0,
            relists: 0,
            resumes: 0,
            rejected_lists: 0,
            events_applied: 0,
            last_event: None,
            first_sync_logged: false,
            started: now,
        }
    }

    /// Applies one input seen at `now`; returns what the informer task must do.
    pub(super) fn step(&mut self, input: Input, now: Instant) -> Vec<Effect> {
        if self.phase == Phase::Stopped {
            return Vec::new();
        }
        if let Phase::Resuming { proof, .. } = self.phase {
            match input {
                Input::ListBegan => {
                    self.set_proof(ProofRead::Reading { began: Some(now) });
                    return Vec::new();
                }
                // The read proves a revision; its pods are the cache's business only if it relists.
                Input::Listed(_) => return Vec::new(),
                Input::ListDone { resource_version } => return self.proof_answered(proof, resource_version, now),
                _ => {}
            }
        }
        match input {
            Input::ListBegan => self.list_began(now),
            Input::Listed(pod) => {
                let first_list_item = self.cache.list_item(pod);
                first_list_item.map(|change| vec![Effect::Deliver(vec![change])]).unwrap_or_default()
            }
            Input::ListDone { resource_version } => self.list_done(resource_version, now),
            Input::WatchBegan => {
                // Without etcd revisions to compare, freshness cannot be judged: every watch counts.
                let fresh_at = revision(self.resource_version.as_deref()).is_none().then_some(now);
                if let Some(watch) = self.watch_slot() {
                    *watch = Some(CurrentWatch { began: now, fresh_at });
                }
                Vec::new()
            }
            Input::Applied(pod) => {
                if !self.watched_news(pod.metadata.resource_version.as_deref(), now) {
                    return Vec::new();
                }
                let change = self.cache.apply(pod);
                self.event_applied(now);
                self.caught_up(now);
                change.map(|c| vec![Effect::Deliver(vec![c])]).unwrap_or_default()
            }
            Input::Deleted(pod) => {
                if !self.watched_news(pod.metadata.resource_version.as_deref(), now) {
                    return Vec::new();
                }
                let change = self.cache.delete(pod);
                self.event_applied(now);
                self.caught_up(now);
                vec![Effect::Deliver(vec![change])]
            }
            Input::Bookmark { resource_version } => {
                self.watched_news(Some(&resource_version), now);
                if matches!(self.phase, Phase::Watching { watch: Some(CurrentWatch { fresh_at: Some(_), .. }), .. }) {
                    self.failures = None;
                }
                self.caught_up(now);
                Vec::new()
            }
            Input::WatchEnded { proves } => self.watch_ended(proves, now),
            Input::Failed { error, status, lagging } => {
                let error = if lagging {
                    format!("{error}: this apiserver's watch cache is older than ours (a lagging apiserver)")
                } else {
                    error
                };
                self.failed(error, now);
                self.after_failure(status)
            }
            Input::Tick { wire } => self.tick(wire, now),
            Input::Stop => {
                self.phase = Phase::Stopped;
                Vec::new()
            }
        }
    }

    fn list_began(&mut self, now: Instant) -> Vec<Effect> {
        if let Some(began) = self.listing().filter(|_| self.strategy == InitialList::Auto) {
            // A streaming list whose stream ended before its last initial event, cleanly: the
            // server (or something between) does not carry streaming lists through. After a
            // failure it is a retry.
            let failed_since = self.failures.as_ref().is_some_and(|run| run.last_at >= began);
            if !failed_since {
                return self.fall_back_from_streaming("the stream ended before the initial events did");
            }
        }
        if matches!(self.phase, Phase::Relisting { .. }) {
            tracing::info!("relisting executor pods ({}): {:?}", self.phase.name(), self.list_request().from);
        } else {
            tracing::debug!("listing executor pods ({:?} initial list)", self.strategy);
        }
        match &mut self.phase {
            Phase::InitialList { listing } | Phase::Relisting { listing, .. } => *listing = Some(now),
            // Every relist changes the phase before it lists; a list that began while watching
            // anyway drops the watch as a 410 Gone does, and the cache serves what it proved.
            _ => self.phase = Phase::Relisting { cause: RelistCause::Gone, listing: Some(now) },
        }
        self.cache.begin_list();
        Vec::new()
    }

    fn list_done(&mut self, resource_version: String, now: Instant) -> Vec<Effect> {
        let began = self.take_listing().unwrap_or(now);
        if let Some(ours) = self.older_than_ours(&resource_version) {
            // A lagging apiserver's watch cache (or a list that asked for any state): applying it
            // would make up the deletion of every pod it lacks. The old cache stays as current as
            // it was; the informer lists again (not older than ours) after a backoff.
            self.cache.abandon_list();
            self.rejected_lists += 1;
            self.failed(
                format!(
                    "the apiserver answered a list at resourceVersion {resource_version}, older than the cache's \
                     {ours} (a lagging apiserver's watch cache); rejected, listing again"
                ),
                now,
            );
            return vec![Effect::Relist];
        }
        self.resource_version = Some(resource_version);
        let changes = self.cache.complete_list();
        let pods = self.cache.snapshot();
        // The list holds the apiserver's state as of its resourceVersion; the watch that
        // follows starts there and replays what came since, at once.
        self.current_as_of = Some(now);
        self.listed_at = Some(now);
        self.failures = None;
        // Fresh by the list it just ended until the watch request that follows (after a streaming
        // list as after a list of pages) begins a watch of its own.
        self.phase = Phase::Watching { since: now, watch: Some(CurrentWatch { began: now, fresh_at: Some(now) }) };
        if !self.first_sync_logged {
            self.first_sync_logged = true;
            tracing::info!(
                "executor pod informer synced: {} pods in {:.0} ms ({:.0} ms after start)",
                pods.len(),
                (now - began).as_secs_f64() * 1e3,
                (now - self.started).as_secs_f64() * 1e3,
            );
        } else {
            tracing::info!(
                "executor pod informer relisted: {} pods in {:.0} ms, at resourceVersion {}",
                pods.len(),
                (now - began).as_secs_f64() * 1e3,
                self.resource_version.as_deref().unwrap_or_default()
            );
        }
        let mut effects = Vec::with_capacity(2);
        if !changes.is_empty() {
            effects.push(Effect::Deliver(changes));
        }
        effects.push(Effect::Listed(pods));
        effects
    }

    /// Takes in what a watch item shows of the apiserver's resourceVersion; false if the item is
    /// a replay of what the cache already holds (the one revision a watch resumes before).
    fn watched_news(&mut self, resource_version: Option<&str>, now: Instant) -> bool {
        let (Some(item), Some(ours)) = (revision(resource_version), revision(self.resource_version.as_deref())) else {
            if let Some(rv) = resource_version.filter(|rv| !rv.is_empty()) {
                self.resource_version = Some(rv.to_string());
            }
            return true;
        };
        if item < ours {
            // Older than the cache: only a bookmark of a lagging apiserver could be.
            return false;
        }
        let resuming = self.resuming();
        if let Some(Some(watch)) = self.watch_slot().filter(|w| w.is_some_and(|w| w.fresh_at.is_none())) {
            watch.fresh_at = Some(now);
            // Served as new as the cache: whatever failed before (a lagging apiserver's watch, a
            // refused request) is over. A replay of the last event shows it as well as news does,
            // and the wire alone cannot (its byte came before this moment). After a stale spell
            // only the catch-up with the consistent read does (`caught_up`).
            if !resuming {
                self.failures = None;
            }
        }
        if item == ours {
            return false;
        }
        self.resource_version = resource_version.map(str::to_string);
        true
    }

    /// The cache's resourceVersion, if `listed` is older than it.
    fn older_than_ours(&self, listed: &str) -> Option<String> {
        let ours = self.resource_version.as_deref();
        (revision(Some(listed))? < revision(ours)?).then(|| ours.unwrap_or_default().to_string())
    }

    fn resuming(&self) -> bool {
        matches!(self.phase, Phase::Resuming { .. })
    }

    /// When the list in progress began (while resuming, the consistent read), if one has.
    fn listing(&self) -> Option<Instant> {
        match self.phase {
            Phase::InitialList { listing } | Phase::Relisting { listing, .. } => listing,
            Phase::Resuming { proof: ProofRead::Reading { began }, .. } => began,
            _ => None,
        }
    }

    /// Ends the list in progress of a listing phase; when it began, if one had.
    fn take_listing(&mut self) -> Option<Instant> {
        match &mut self.phase {
            Phase::InitialList { listing } | Phase::Relisting { listing, .. } => listing.take(),
            _ => None,
        }
    }

    /// The watch request in progress, in the phases that follow one.
    fn watch_slot(&mut self) -> Option<&mut Option<CurrentWatch>> {
        match &mut self.phase {
            Phase::Watching { watch, .. } | Phase::Resuming { watch, .. } => Some(watch),
            _ => None,
        }
    }

    /// The state of the consistent read a resuming watch must reach.
    fn set_proof(&mut self, to: ProofRead) {
        if let Phase::Resuming { proof, .. } = &mut self.phase {
            *proof = to;
        }
    }

    /// The consistent read made before a resume answered at `resource_version`; the watch
    /// resumes from the cache's resourceVersion next (`listwatch::prove_then_resume`).
    fn proof_answered(&mut self, proof: ProofRead, resource_version: String, now: Instant) -> Vec<Effect> {
        let began = match proof {
            ProofRead::Reading { began } => began.unwrap_or(now),
            ProofRead::Answered { began, .. } => began,
        };
        let Some(revision) = revision(Some(&resource_version)) else {
            // Without etcd revisions there is nothing to catch up with: relist.
            return self.relist_after_resume(format!(
                "the consistent read answered resourceVersion {resource_version:?}, not a revision to compare"
            ));
        };
        if let Some(ours) = self.older_than_ours(&resource_version) {
            // Cannot be a consistent read: something between answered from an older state.
            self.rejected_lists += 1;
            self.failed(
                format!(
                    "the apiserver answered a consistent read at resourceVersion {resource_version}, older than the \
                     cache's {ours}; rejected, reading again"
                ),
                now,
            );
            self.set_proof(ProofRead::Reading { began: None });
            return vec![Effect::Relist];
        }
        tracing::debug!("consistent read at resourceVersion {resource_version}; resuming the watch to catch up");
        self.set_proof(ProofRead::Answered { revision, began, answered: now });
        self.caught_up(now);
        Vec::new()
    }

    /// While resuming: once the watch has shown the consistent read's resourceVersion (an event or
    /// a bookmark at least as new), every change made before the read has arrived, in order, and
    /// the cache is current as of the read's start.
    fn caught_up(&mut self, now: Instant) {
        let Phase::Resuming { proof: ProofRead::Answered { revision: read, began, answered }, after, watch } =
            self.phase
        else {
            return;
        };
        if revision(self.resource_version.as_deref()).is_none_or(|ours| ours < read) {
            return;
        }
        tracing::info!(
            "executor pod watch resumed {}: caught up with a consistent read at resourceVersion {read} {:.0} ms after \
             it answered, without a relist",
            after.describe(),
            now.saturating_duration_since(answered).as_secs_f64() * 1e3
        );
        self.current_as_of = self.current_as_of.max(Some(began));
        self.failures = None;
        self.phase = Phase::Watching { since: now, watch };
    }

    /// How long a resumed watch gets to catch up with the consistent read.
    fn proof_wait(&self) -> Duration {
        self.bounds.stale_bound.max(PROOF_WAIT_MIN)
    }

    /// The watch resumed behind a consistent read could not resume or catch up: relist. After a
    /// stale spell nothing is served until the list completes; after a break, the old cache keeps
    /// what the broken watch proved.
    fn relist_after_resume(&mut self, why: String) -> Vec<Effect> {
        let (cause, meanwhile) = match self.phase {
            Phase::Resuming { after: ResumeCause::Break, .. } => (RelistCause::Break, ""),
            _ => (RelistCause::StaleSpell, ", and no snapshot until that list completes"),
        };
        tracing::warn!("executor pod informer: {why}; relisting{meanwhile}");
        self.phase = Phase::Relisting { cause, listing: None };
        self.relists += 1;
        vec![Effect::Relist]
    }

    /// A watch response ended. A fresh one that ended cleanly at its timeout proves the cache
    /// current as of `proves`; one that ended so without having shown anything as new as the
    /// cache came from an apiserver whose watch cache is older than ours.
    fn watch_ended(&mut self, proves: Option<Instant>, now: Instant) -> Vec<Effect> {
        let Some(watch) = self.watch_slot().and_then(Option::take) else {
            return Vec::new();
        };
        let clean_end = proves.filter(|at| *at > watch.began);
        let renewal = watch.fresh_at.is_some() && clean_end.is_some();
        match (watch.fresh_at, clean_end) {
            (Some(_), Some(at)) => self.watch_end = self.watch_end.max(Some(at)),
            (None, Some(_)) => {
                let ours = self.resource_version.clone().unwrap_or_default();
                self.failed(
                    format!(
                        "the apiserver ended a watch without a bookmark or event at resourceVersion {ours} or newer \
                         (the cache's): its watch cache is older than ours (a lagging apiserver); the watch proves \
                         nothing until one does"
                    ),
                    now,
                );
            }
            (_, None) => {}
        }
        match self.phase {
            Phase::Watching { .. } if !renewal => self.resume_after_break(),
            _ => Vec::new(),
        }
    }

    fn event_applied(&mut self, now: Instant) {
        self.events_applied += 1;
        self.last_event = Some(SystemTime::now());
        if let Phase::Watching { .. } = self.phase {
            // An event is the freshest sign that the watch follows the apiserver, if it follows
            // the last proof closely (see `watch_as_of`).
            if let WatchAsOf::Current(as_of) = self.watch_as_of(Some(now)) {
                self.current_as_of = self.current_as_of.max(Some(as_of));
            }
            self.failures = None;
        }
    }

    fn failed(&mut self, error: String, now: Instant) {
        tracing::warn!("executor pod informer: {error}; retrying with backoff");
        self.errors += 1;
        self.failures = Some(match self.failures.take() {
            Some(run) => FailureRun { last_error: error, consecutive: run.consecutive + 1, last_at: now, ..run },
            None => FailureRun { since: SystemTime::now(), last_error: error, consecutive: 1, last_at: now },
        });
    }

    fn after_failure(&mut self, status: Option<u16>) -> Vec<Effect> {
        let unsupported = matches!(status, Some(400 | 422 | 501));
        match self.phase {
            Phase::InitialList { .. } if unsupported && self.strategy == InitialList::Auto => {
                self.fall_back_from_streaming("the apiserver refused it")
            }
            Phase::Resuming { after, .. } if status == Some(410) => {
                self.relist_after_resume(format!("the watch cannot resume {} (410 Gone)", after.describe()))
            }
            _ if status == Some(410) => {
                // The resourceVersion cannot be resumed: relist (a consistent read). A watch that
                // could not resume leaves the cache as current as the watches before it proved it
                // (the last tick took their bytes in; a lagging apiserver's proved nothing); the
                // answer that said 410 proves the apiserver alive, not the cache current.
                if let Phase::Watching { .. } = self.phase {
                    self.current_as_of = self.current_as_of(None).or(self.current_as_of);
                    self.phase = Phase::Relisting { cause: RelistCause::Gone, listing: None };
                    self.relists += 1;
                }
                vec![Effect::Relist]
            }
            Phase::Watching { .. } => self.resume_after_break(),
            _ => Vec::new(),
        }
    }

    /// The watch failed, or ended other than as a clean renewal of a fresh watch: the next
    /// connection may reach another apiserver, and one cut from etcd at our resourceVersion would
    /// look fresh (its bookmarks are as new as the cache) while missing every change made since.
    /// So the watch resumes behind a consistent read (one pod's page: only its resourceVersion
    /// counts), which such an apiserver cannot answer, and proves nothing until it reaches it.
    /// Meanwhile the cache keeps what the broken watch proved.
    fn resume_after_break(&mut self) -> Vec<Effect> {
        self.current_as_of = self.current_as_of(None).or(self.current_as_of);
        tracing::info!(
            "executor pod watch broke; resuming it from resourceVersion {} after a consistent read",
            self.resource_version.as_deref().unwrap_or_default()
        );
        self.phase =
            Phase::Resuming { proof: ProofRead::Reading { began: None }, after: ResumeCause::Break, watch: None };
        vec![Effect::Relist]
    }

    /// A break whose resume has not proven the cache current for longer than the silence bound is
    /// a stale spell, as the same silence while watching is (a 429 burst after a cut, an outage).
    /// The read or watch in flight goes on.
    fn break_outlasts_the_silence_bound(&mut self, proof: ProofRead, watch: Option<CurrentWatch>, now: Instant) {
        let known = self.current_as_of.expect("a resuming cache has listed");
        let silent_for = now.saturating_duration_since(known);
        if silent_for > self.bounds.silence_bound {
            let what = "the watch broke and nothing has proven the cache current";
            self.stale_spell(what, silent_for, proof, watch, now);
        }
    }

    /// A silence longer than the silence bound: the cache is stale. Counted and shown; the watch
    /// resumes behind a consistent read (`proof` and `watch`, those in flight if any), and nothing
    /// is served until it catches up.
    fn stale_spell(
        &mut self,
        what: &str,
        silent_for: Duration,
        proof: ProofRead,
        watch: Option<CurrentWatch>,
        now: Instant,
    ) {
        let (silent, bound) = (silent_for.as_secs_f64(), self.bounds.silence_bound.as_secs_f64());
        tracing::warn!(
            "executor pod informer degraded: {what} for {silent:.1}s (a healthy watch is silent {bound:.1}s at most); \
             resuming the watch from resourceVersion {} after a consistent read, and no snapshot until it catches up",
            self.resource_version.as_deref().unwrap_or_default()
        );
        self.failed(format!("{what} for {silent:.1}s (silence bound {bound:.1}s)"), now);
        self.phase = Phase::Resuming { proof, after: ResumeCause::StaleSpell, watch };
        self.resumes += 1;
    }

    fn tick(&mut self, wire: Option<Instant>, now: Instant) -> Vec<Effect> {
        // A sign of life after the last failure ends the run of failures; after a stale
        // spell only the catch-up or the relist's completion does (bytes say nothing of the
        // old cache). While watching, only bytes of a fresh watch count: a watch resumed on a
        // lagging apiserver answers too.
        if let (Some(run), Some(wire)) = (&self.failures, wire) {
            let counts = match self.phase {
                Phase::Watching { watch, .. } => watch.and_then(|w| w.fresh_at).is_some_and(|fresh| wire >= fresh),
                Phase::Resuming { .. }
                | Phase::Relisting { cause: RelistCause::StaleSpell | RelistCause::Break, .. } => false,
                Phase::InitialList { .. } | Phase::Relisting { .. } | Phase::Stopped => true,
            };
            if wire > run.last_at && counts {
                self.failures = None;
            }
        }
        if let Some(began) = self.listing() {
            if now.saturating_duration_since(began) > self.bounds.list_timeout {
                let error = format!(
                    "the list did not complete within {:?} (raise {} if the namespace is large)",
                    self.bounds.list_timeout,
                    settings::keys::INITIAL_LIST_TIMEOUT.name
                );
                self.failed(error, now);
                if self.resuming() {
                    self.set_proof(ProofRead::Reading { began: None });
                    return vec![Effect::Relist];
                }
                self.take_listing();
                if self.strategy == InitialList::Auto {
                    return self.fall_back_from_streaming("it timed out");
                }
                return vec![Effect::Relist];
            }
        }
        if let Phase::Resuming { proof: ProofRead::Answered { revision, answered, .. }, after, .. } = self.phase {
            let wait = self.proof_wait();
            if now.saturating_duration_since(answered) > wait {
                let ours = self.resource_version.clone().unwrap_or_default();
                let why = format!(
                    "the watch resumed {} did not reach the consistent read's resourceVersion {revision} within \
                     {:.1}s (it is at {ours}): the apiserver serving it lags",
                    after.describe(),
                    wait.as_secs_f64()
                );
                self.failed(why.clone(), now);
                return self.relist_after_resume(why);
            }
        }
        if let Phase::Resuming { proof, after: ResumeCause::Break, watch } = self.phase {
            self.break_outlasts_the_silence_bound(proof, watch, now);
            return Vec::new();
        }
        let Phase::Watching { .. } = self.phase else {
            return Vec::new();
        };
        match self.watch_as_of(wire) {
            WatchAsOf::Current(as_of)
                if now.saturating_duration_since(self.alive_as_of(as_of)) <= self.bounds.silence_bound =>
            {
                self.current_as_of = Some(as_of);
                Vec::new()
            }
            WatchAsOf::Current(as_of) | WatchAsOf::ResumedAfterSilence(as_of) => {
                let silent_for = now.saturating_duration_since(self.alive_as_of(as_of));
                let proof = ProofRead::Reading { began: None };
                self.stale_spell("no response from the apiserver", silent_for, proof, None, now);
                vec![Effect::Relist]
            }
        }
    }

    fn fall_back_from_streaming(&mut self, why: &str) -> Vec<Effect> {
        tracing::info!(
            "streaming list unavailable ({why}); listing from the watch cache from now on (set {} to choose)",
            settings::keys::INITIAL_LIST.name
        );
        self.strategy = InitialList::WatchCache;
        self.take_listing();
        vec![Effect::Relist]
    }

    /// How current a watching cache is, given the last byte on the wire. Bytes count only if
    /// they came on this watch and follow the last proof within the stale bound. After a longer
    /// quiet spell, a clean end of the watch at its timeout is the proof, of what it proves (and
    /// bytes that follow it within the stale bound); bytes after a gap longer than the silence
    /// bound are a watch resumed after a stale spell, whose replay may still be arriving (the
    /// next tick relists).
    fn watch_as_of(&self, wire: Option<Instant>) -> WatchAsOf {
        let mut known = self.current_as_of.expect("a watching cache has listed");
        let Phase::Watching { since, watch } = self.phase else {
            return WatchAsOf::Current(known);
        };
        let after = |at: Option<Instant>, since: Instant, known: Instant| at.filter(|t| *t >= since && *t > known);
        if let Some(proven) = after(self.watch_end, since, known) {
            known = proven;
        }
        // Bytes prove only on a watch that has shown it is served as new as the cache.
        let fresh_since = watch.and_then(|w| w.fresh_at);
        match fresh_since.and_then(|fresh| after(wire, fresh.max(since), known)) {
            None => WatchAsOf::Current(known),
            Some(w) if w - known <= self.bounds.stale_bound => WatchAsOf::Current(w),
            // Held back, perhaps: not a proof until the watch ends cleanly.
            Some(w) if w - known.max(since) <= self.bounds.silence_bound => WatchAsOf::Current(known),
            Some(_) => WatchAsOf::ResumedAfterSilence(known),
        }
    }

    /// The latest sign that the watch lives, given how current it proves the cache: that, or the
    /// moment it began to follow the apiserver (a list's end, or a resumed watch's catch-up with a
    /// consistent read, which proves the cache only as of the read's start: a held read may have
    /// begun long before). Silence is measured from here.
    fn alive_as_of(&self, as_of: Instant) -> Instant {
        match self.phase {
            Phase::Watching { since, .. } => as_of.max(since),
            _ => as_of,
        }
    }

    /// How current the cache is now, if it ever listed.
    pub(super) fn current_as_of(&self, wire: Option<Instant>) -> Option<Instant> {
        self.current_as_of?;
        Some(match self.watch_as_of(wire) {
            WatchAsOf::Current(t) | WatchAsOf::ResumedAfterSilence(t) => t,
        })
    }

    /// Whether a full snapshot may be handed to Spark now.
    pub(super) fn readiness(&self, now: Instant, wire: Option<Instant>) -> Result<(), NotReady> {
        match self.phase {
            Phase::Stopped => return Err(NotReady::Stopped),
            Phase::InitialList { .. } => return Err(NotReady::NeverSynced),
            Phase::Resuming { after: ResumeCause::StaleSpell, .. } => return Err(NotReady::Resuming),
            Phase::Relisting { cause: RelistCause::StaleSpell, .. } => return Err(NotReady::Relisting),
            // After a break the cache serves what the broken watch proved, within the stale bound.
            Phase::Watching { .. }
            | Phase::Resuming { after: ResumeCause::Break, .. }
            | Phase::Relisting { cause: RelistCause::Gone | RelistCause::Break, .. } => {}
        }
        if let WatchAsOf::ResumedAfterSilence(known) = self.watch_as_of(wire) {
            return Err(NotReady::Stale { silent_for: now.saturating_duration_since(known) });
        }
        let as_of = self.current_as_of(wire).expect("listed");
        let silent_for = now.saturating_duration_since(as_of);
        if silent_for <= self.bounds.stale_bound {
            return Ok(());
        }
        let watching = matches!(self.phase, Phase::Watching { .. });
        if watching && now.saturating_duration_since(self.alive_as_of(as_of)) <= self.bounds.silence_bound {
            // A quiet healthy watch between renewals: the next one proves the cache again.
            return Err(NotReady::AwaitingProof { proven_ago: silent_for });
        }
        Err(NotReady::Stale { silent_for })
    }

    /// A full snapshot and the cache generation it shows, if ready (checked and taken at once).
    pub(super) fn lister_snapshot(
        &self,
        now: Instant,
        wire: Option<Instant>,
    ) -> Result<(Vec<Arc<CachedPod>>, u64), NotReady> {
        self.readiness(now, wire)?;
        Ok((self.cache.snapshot(), self.cache.view()))
    }

    /// The operator's view of the state now.
    pub(super) fn sync_state(&self, now: Instant, wire: Option<Instant>) -> SyncState {
        if self.phase == Phase::Stopped {
            return SyncState::Stopped;
        }
        if let Some(run) = &self.failures {
            return SyncState::Degraded {
                since: run.since,
                last_error: run.last_error.clone(),
                consecutive_failures: run.consecutive,
            };
        }
        if let Err(NotReady::Stale { silent_for }) = self.readiness(now, wire) {
            // While resuming the apiserver may well answer: what is missing is the proof.
            let what = match self.phase {
                Phase::Resuming { proof: ProofRead::Reading { .. }, .. } => {
                    "the consistent read a resumed watch must reach has not answered; the cache is unproven"
                }
                Phase::Resuming { .. } => {
                    "the resumed watch has not reached the consistent read; the cache is unproven"
                }
                _ => "no response from the apiserver",
            };
            return SyncState::Degraded {
                since: SystemTime::now() - silent_for.saturating_sub(self.bounds.stale_bound),
                last_error: format!(
                    "{what} for {:.1}s (stale bound {:.1}s, silence bound {:.1}s)",
                    silent_for.as_secs_f64(),
                    self.bounds.stale_bound.as_secs_f64(),
                    self.bounds.silence_bound.as_secs_f64()
                ),
                consecutive_failures: 1,
            };
        }
        if self.has_synced() {
            SyncState::Synced
        } else {
            SyncState::Starting
        }
    }

    pub(super) fn phase(&self) -> &Phase {
        &self.phase
    }

    /// In a run of failures (a relist that follows backs off).
    pub(super) fn is_failing(&self) -> bool {
        self.failures.is_some()
    }

    pub(super) fn has_synced(&self) -> bool {
        self.listed_at.is_some()
    }

    /// How lists are made now.
    pub(super) fn strategy(&self) -> InitialList {
        self.strategy
    }

    pub(super) fn cache(&self) -> &ExecutorPodCache {
        &self.cache
    }

    pub(super) fn errors(&self) -> u64 {
        self.errors
    }

    pub(super) fn relists(&self) -> u64 {
        self.relists
    }

    /// Watches resumed after a stale spell.
    pub(super) fn resumes(&self) -> u64 {
        self.resumes
    }

    /// Lists rejected because they were older than the cache.
    pub(super) fn rejected_lists(&self) -> u64 {
        self.rejected_lists
    }

    /// The newest resourceVersion the cache holds everything up to.
    pub(super) fn resource_version(&self) -> Option<&str> {
        self.resource_version.as_deref()
    }

    /// What the next list asks for. The first, as `initialList` says: streamed or whole from any
    /// state the apiserver holds (nothing is older than an empty cache), or a consistent read.
    /// Every relist is a consistent read (`resourceVersion` unset), served from the watch cache
    /// once it has caught up with etcd: the one definite point at which the cache is whole and
    /// current again. A lagging apiserver cannot answer it (it needs etcd), so a relist never goes
    /// back in time. client-go relists "not older than" the last resourceVersion after a
    /// disconnect, but an apiserver catching up answers that as soon as it reaches it, seconds
    /// behind etcd, and the informer would take the list for current (docs/field-notes.md).
    /// Relists are whole lists, not streamed: they are rare, and a streaming list's time is
    /// bounded by the watch's timeout.
    pub(super) fn list_request(&self) -> ListRequest {
        self.list_request_of(self.resource_version.is_some())
    }

    /// The requests to make next: a list (and the watch from its resourceVersion), or, while
    /// resuming, the consistent read and the watch from the cache's.
    pub(super) fn requests(&self) -> Requests {
        match (&self.phase, &self.resource_version) {
            (Phase::Resuming { .. }, Some(rv)) => Requests::ProveThenResume {
                read: ListRequest { method: ListMethod::ProofRead, from: ListFrom::MostRecent },
                resume_from: rv.clone(),
            },
            _ => Requests::List(self.list_request()),
        }
    }

    fn list_request_of(&self, relist: bool) -> ListRequest {
        let method = match self.strategy {
            InitialList::Consistent => ListMethod::Paged(self.bounds.page_size),
            InitialList::Auto | InitialList::Streaming if !relist => ListMethod::Streaming,
            InitialList::Auto | InitialList::Streaming | InitialList::WatchCache => ListMethod::Whole,
        };
        let from = match self.strategy {
            InitialList::Auto | InitialList::Streaming | InitialList::WatchCache if !relist => ListFrom::Any,
            _ => ListFrom::MostRecent,
        };
        ListRequest { method, from }
    }

    pub(super) fn events_applied(&self) -> u64 {
        self.events_applied
    }

    pub(super) fn last_event(&self) -> Option<SystemTime> {
        self.last_event
    }
}

/// The watch request in progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct CurrentWatch {
    began: Instant,
    /// When it first showed a resourceVersion at least as new as the cache's: from then on its
    /// bytes and its clean end prove the cache current.
    fresh_at: Option<Instant>,
}

/// A resourceVersion as an etcd revision, to compare: resourceVersions are opaque to clients in
/// general, but every kube-apiserver's are etcd revisions, and its watch cache compares them so.
fn revision(resource_version: Option<&str>) -> Option<u64> {
    resource_version?.parse().ok()
}

enum WatchAsOf {
    /// The cache is current as of this instant.
    Current(Instant),
    /// Bytes came after a silence longer than the stale bound; the cache is known current
    /// only as of this instant, before the silence.
    ResumedAfterSilence(Instant),
}

#[cfg(test)]
mod tests;

//! The executor-pod informer: one list, then one long-lived watch of this
//! app's executor pods, kept in a local cache; and the lister that snapshots
//! that cache.
//!
//! ```text
//! apiserver --list/watch--> kube watcher --items--> InformerMachine::step --changes--> PodChangeQueue --> JVM
//!      \--bytes--> ApiActivity --last sign of life--/   (owns the cache)  \--changes--> PodSubscribers
//!                                                          ^-- readiness + contents, one lock -- lister_snapshot
//! ```
//!
//! `start` never blocks and never fails because the apiserver is slow or
//! down: every error is retried forever with jittered exponential backoff
//! (0.8 s to 30 s, as client-go), logged and counted, and shows in [`HealthReport`].

mod activity;
mod cache;
pub(crate) mod changes;
pub mod health;
mod listwatch;
mod machine;

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::runtime::utils::Backoff;
use kube::runtime::watcher::DefaultBackoff;
use kube::runtime::WatchStreamExt;
use kube::Api;
use parking_lot::{Condvar, Mutex};
use tokio::sync::watch as signal;

use crate::client::{self, ClientError, SetupError};
use crate::labels::executor_selector;
use crate::pod::{CachedPod, PodChange};
use crate::settings::{self, InformerSettings, InitialList, Settings};
use activity::{ActivityLayer, ApiActivity};
use changes::{PodChangeQueue, QueueClosed};
use health::{NotReady, SyncState};
use listwatch::{Failure, Item, Selector};
use machine::{Bounds, Effect, InformerMachine, Input};

/// How long `stop` waits for the informer task before aborting it.
pub const STOP_BOUND: Duration = Duration::from_secs(5);

/// How often the informer checks its deadlines and the wire's silence.
const TICK: Duration = Duration::from_millis(500);

/// How long one lister call waits for the consumer to hand on the changes its snapshot shows,
/// before it answers not ready (the Java lister then asks again at once).
const HANDED_ON_WAIT: Duration = Duration::from_secs(1);

/// Misuse of the informer's lifecycle.
#[derive(Debug, thiserror::Error)]
pub enum InformerError {
    #[error("the informer is already started; start it once (Spark's sources refuse a second start too)")]
    AlreadyStarted,
    #[error("the informer is stopped; create a new one")]
    Stopped,
}

/// Follows the informer's pod changes, on the informer's task (so it must not
/// block): the executor Service controller is one.
pub trait PodSubscriber: Send + Sync {
    /// Changes, in the order the cache made them.
    fn changed(&self, changes: &[PodChange]);
    /// A (re)list completed: every pod the cache now holds.
    fn listed(&self, pods: &[Arc<CachedPod>]);
    /// The informer stopped; release what the subscriber runs.
    fn stop(&self);
}

/// Health and counters, readable at any time.
#[derive(Debug, Clone)]
pub struct HealthReport {
    pub state: SyncState,
    pub has_synced: bool,
    /// What the informer does now (`watching`, `relisting after 410 Gone`, ...).
    pub phase: &'static str,
    /// LIST requests sent (each page counts, and each consistent read of one pod that a resumed
    /// watch must reach).
    pub lists: u64,
    /// Relists after the first: each follows a 410 Gone, or a stale spell after which the watch
    /// could not resume or catch up.
    pub relists: u64,
    /// Watches resumed after a stale spell (each after a consistent read), without a relist.
    pub resumes: u64,
    /// Lists rejected as older than the cache (a lagging apiserver's).
    pub rejected_lists: u64,
    /// The newest resourceVersion the cache holds everything up to.
    pub resource_version: Option<String>,
    /// WATCH requests sent: the first and every reconnect.
    pub watch_connects: u64,
    pub events_applied: u64,
    pub errors: u64,
    pub last_event: Option<SystemTime>,
    /// Last byte of a successful response (event, bookmark, list page).
    pub last_activity: Option<SystemTime>,
    pub cache_size: usize,
    pub cache_json_bytes: usize,
    pub pending_changes: usize,
    pub coalesced_changes: u64,
    /// How the initial list is done now (Auto may have fallen back).
    pub initial_list: InitialList,
}

impl HealthReport {
    /// In words, for logs and errors.
    pub fn describe(&self) -> String {
        let state = match &self.state {
            SyncState::Degraded { last_error, consecutive_failures, .. } => {
                format!("Degraded ({consecutive_failures} consecutive failures; last: {last_error})")
            }
            other => other.name().to_string(),
        };
        format!(
            "{state} ({}); {} pods cached at resourceVersion {}; {} events, {} relists, {} resumes after a stale \
             spell, {} lists rejected as older than the cache, {} errors, {} LIST and {} WATCH requests",
            self.phase,
            self.cache_size,
            self.resource_version.as_deref().unwrap_or("none"),
            self.events_applied,
            self.relists,
            self.resumes,
            self.rejected_lists,
            self.errors,
            self.lists,
            self.watch_connects
        )
    }
}

/// A lister snapshot: every cached pod, from a cache known to be complete and fresh.
#[derive(Debug, Clone)]
pub struct ListerSnapshot {
    pub pods: Vec<Arc<CachedPod>>,
    /// Identifies these contents (see `ExecutorPodCache::view`): the snapshot
    /// holds every change up to it, none after.
    pub view: u64,
}

/// A snapshot as the lister takes it, before it may be handed to Spark.
enum Snapshot {
    /// Every change it shows has reached Spark's store.
    HandedOn(ListerSnapshot),
    /// It shows changes up to cache generation `newest`, not all handed on yet.
    Ahead { snapshot: ListerSnapshot, newest: u64 },
}

struct Shared {
    app_id: String,
    settings: InformerSettings,
    /// The one writer of the cache is the informer task, through `step`.
    machine: Mutex<InformerMachine>,
    /// Notified after every step (an item, a tick, the stop): a lister waiting for the cache to be
    /// ready looks again.
    stepped: Condvar,
    changes: PodChangeQueue,
    activity: Arc<ApiActivity>,
    subscribers: Mutex<Vec<Arc<dyn PodSubscriber>>>,
}

enum Lifecycle {
    Created,
    Running { task: tokio::task::JoinHandle<()>, stop: signal::Sender<bool> },
    Stopped,
}

/// One app's executor-pod informer. Create it with [`ExecutorPodInformer::connect`],
/// then `start`, read, and `stop`.
pub struct ExecutorPodInformer {
    shared: Arc<Shared>,
    pods: Api<Pod>,
    runtime: tokio::runtime::Handle,
    lifecycle: Mutex<Lifecycle>,
}

/// The kube client the informer reads with, the driver's one: its read timeout
/// allows a quiet watch its whole length, and a layer on it watches the
/// informer's own requests for signs of life. Other parts may send their
/// requests on it too (it shares connections and credentials); they bound
/// their own waits.
#[derive(Clone)]
pub struct InformerClient {
    client: kube::Client,
    activity: Arc<ApiActivity>,
}

impl InformerClient {
    /// Builds the client from Spark's settings; no request is sent yet.
    /// Must run on the tokio runtime that will drive it.
    pub async fn connect(settings: &Settings, app_id: &str) -> Result<Self, SetupError> {
        let activity = Arc::new(ApiActivity::default());
        let config =
            client::kube_config(&settings.client, &client::user_agent(app_id), settings.informer.watch_timeout).await?;
        let client = kube::client::ClientBuilder::try_from(config)
            .map_err(ClientError::from)?
            .with_layer(&ActivityLayer(activity.clone()))
            .build();
        Ok(Self { client, activity })
    }

    /// A handle on the same client, for another part's requests.
    pub fn client(&self) -> kube::Client {
        self.client.clone()
    }
}

impl ExecutorPodInformer {
    /// Validates the app id and builds the client from Spark's settings; no
    /// request is sent yet. Must run on the tokio runtime that will drive the informer.
    pub async fn connect(settings: &Settings, app_id: &str) -> Result<Self, SetupError> {
        settings::validate_app_id(app_id)?;
        let client = InformerClient::connect(settings, app_id).await?;
        Ok(Self::new(client, &settings.client.namespace, app_id, settings.informer.clone()))
    }

    /// An informer over a client built for it; no request is sent yet.
    pub fn new(client: InformerClient, namespace: &str, app_id: &str, settings: InformerSettings) -> Self {
        let bounds = Bounds {
            stale_bound: settings.stale_bound,
            silence_bound: settings.silence_bound(),
            list_timeout: settings.initial_list_timeout,
            page_size: settings.page_size,
        };
        let machine =
            InformerMachine::new(settings.initial_list, bounds, settings.spark_states.clone(), Instant::now());
        Self {
            shared: Arc::new(Shared {
                app_id: app_id.to_string(),
                settings,
                machine: Mutex::new(machine),
                stepped: Condvar::new(),
                changes: PodChangeQueue::default(),
                activity: client.activity,
                subscribers: Mutex::default(),
            }),
            pods: Api::namespaced(client.client, namespace),
            runtime: tokio::runtime::Handle::current(),
            lifecycle: Mutex::new(Lifecycle::Created),
        }
    }

    pub fn app_id(&self) -> &str {
        &self.shared.app_id
    }

    pub fn settings(&self) -> &InformerSettings {
        &self.shared.settings
    }

    /// Adds a subscriber to the pod changes; it is stopped with the informer.
    pub fn subscribe(&self, subscriber: Arc<dyn PodSubscriber>) {
        self.shared.subscribers.lock().push(subscriber);
    }

    /// Starts listing and watching in the background; returns at once.
    pub fn start(&self) -> Result<(), InformerError> {
        let mut lifecycle = self.lifecycle.lock();
        match *lifecycle {
            Lifecycle::Created => {}
            Lifecycle::Running { .. } => return Err(InformerError::AlreadyStarted),
            Lifecycle::Stopped => return Err(InformerError::Stopped),
        }
        let (stop, stopped) = signal::channel(false);
        let task = self.runtime.spawn(run(self.shared.clone(), self.pods.clone(), stopped));
        *lifecycle = Lifecycle::Running { task, stop };
        tracing::info!(
            app_id = %self.shared.app_id,
            selector = %executor_selector(&self.shared.app_id),
            "executor pod informer started"
        );
        Ok(())
    }

    /// Stops the informer and its subscribers; idempotent. Waits at most
    /// [`STOP_BOUND`] for the task to finish, then aborts it. Consumers blocked
    /// in `take_changes` wake.
    pub async fn stop(&self) {
        let previous = std::mem::replace(&mut *self.lifecycle.lock(), Lifecycle::Stopped);
        if let Lifecycle::Running { mut task, stop } = previous {
            let _ = stop.send(true);
            if tokio::time::timeout(STOP_BOUND, &mut task).await.is_err() {
                tracing::warn!("the informer task did not stop within {STOP_BOUND:?}; aborting it");
                task.abort();
                let _ = task.await;
            }
            tracing::info!(app_id = %self.shared.app_id, "executor pod informer stopped");
        }
        let subscribers = std::mem::take(&mut *self.shared.subscribers.lock());
        for subscriber in subscribers {
            subscriber.stop();
        }
        self.shared.step(Input::Stop);
        self.shared.changes.close();
    }

    /// Health and counters now. Reading changes nothing.
    pub fn health(&self) -> HealthReport {
        let shared = &self.shared;
        let wire = shared.activity.last_success();
        let machine = shared.machine.lock();
        let cache = machine.cache();
        HealthReport {
            state: machine.sync_state(Instant::now(), wire),
            has_synced: machine.has_synced(),
            phase: machine.phase().name(),
            lists: shared.activity.lists(),
            relists: machine.relists(),
            resumes: machine.resumes(),
            rejected_lists: machine.rejected_lists(),
            resource_version: machine.resource_version().map(str::to_string),
            watch_connects: shared.activity.watches(),
            events_applied: machine.events_applied(),
            errors: machine.errors(),
            last_event: machine.last_event(),
            last_activity: wire.map(to_system_time),
            cache_size: cache.len(),
            cache_json_bytes: cache.json_bytes(),
            pending_changes: shared.changes.len(),
            coalesced_changes: shared.changes.coalesced(),
            initial_list: machine.strategy(),
        }
    }

    /// Blocks up to `timeout` for pod changes; an empty batch when none came.
    /// Call from a thread outside the runtime (the JVM's).
    pub fn take_changes(&self, max: usize, timeout: Duration) -> Result<Vec<PodChange>, QueueClosed> {
        self.shared.changes.take(max, timeout)
    }

    /// A full snapshot of the cache, or why none may be taken now (never an
    /// empty or partial list from an unsynced or stale cache). Readiness and
    /// contents are read at once, under the lock the informer writes under.
    ///
    /// Nor one that shows a change the consumer of [`Self::take_changes`] has not handed to
    /// Spark yet (module `changes`): it waits up to [`HANDED_ON_WAIT`] for the consumer to hand on
    /// what the snapshot shows, then hands a newer one if nothing newer waits, else that one
    /// (it may then lag a change taken meanwhile, never lead one; the JVM hands Spark no snapshot
    /// that a change taken meanwhile overtook: [`Self::changes_taken_after`]).
    /// Blocks the calling thread: call it from outside the runtime.
    pub fn lister_snapshot(&self) -> Result<ListerSnapshot, NotReady> {
        let deadline = Instant::now() + HANDED_ON_WAIT;
        let (taken, newest) = match self.snapshot_now()? {
            Snapshot::HandedOn(snapshot) => return Ok(snapshot),
            Snapshot::Ahead { snapshot, newest } => (snapshot, newest),
        };
        self.shared.changes.await_handed_on(newest, deadline).map_err(|changes| NotReady::Undelivered { changes })?;
        Ok(match self.snapshot_now()? {
            Snapshot::HandedOn(snapshot) => snapshot,
            Snapshot::Ahead { .. } => taken,
        })
    }

    /// A snapshot now, and whether the consumer has handed on every change it shows. Checked
    /// under the machine's lock, so no change is made between the check and the snapshot.
    fn snapshot_now(&self) -> Result<Snapshot, NotReady> {
        let wire = self.shared.activity.last_success();
        let machine = self.shared.machine.lock();
        let (pods, view) = machine.lister_snapshot(Instant::now(), wire)?;
        let newest = machine.cache().newest_change();
        let snapshot = ListerSnapshot { pods, view };
        Ok(if self.shared.changes.handed_on(newest) {
            Snapshot::HandedOn(snapshot)
        } else {
            Snapshot::Ahead { snapshot, newest }
        })
    }

    /// Whether the consumer of [`Self::take_changes`] has taken a change newer than the lister
    /// snapshot of `view` (every change it shows is at or below its view): such a change may
    /// reach Spark first, and the snapshot after it would take Spark's store back in time, so
    /// the caller asks for a newer one instead. Checked by the JVM under the lock it hands changes
    /// on under, so a change taken after the check reaches Spark after the snapshot.
    pub fn changes_taken_after(&self, view: u64) -> bool {
        self.shared.changes.taken_after(view)
    }

    /// The lister's round in one call: [`Self::lister_snapshot`] once the lister is ready, waiting
    /// up to `wait` for that ([`Self::await_lister_ready`]); else why it is not.
    pub fn lister_snapshot_within(&self, wait: Duration) -> Result<ListerSnapshot, NotReady> {
        self.await_lister_ready(wait)?;
        self.lister_snapshot()
    }

    /// Waits up to `wait` for the lister to be ready: the first list to complete, or, when a quiet
    /// watch longer than the stale bound last proved the cache current too long ago, its next
    /// renewal (a snapshot taken right after it is proven current). Within one tick of readiness
    /// it returns; blocks the calling thread, so call it from outside the runtime (the JVM's
    /// lister thread).
    pub fn await_lister_ready(&self, wait: Duration) -> Result<(), NotReady> {
        let deadline = Instant::now() + wait;
        let mut machine = self.shared.machine.lock();
        loop {
            let wire = self.shared.activity.last_success();
            match machine.readiness(Instant::now(), wire) {
                Ok(()) => return Ok(()),
                Err(NotReady::Stopped) => return Err(NotReady::Stopped),
                Err(_) if Instant::now() < deadline => {
                    // Every step notifies, and the informer steps at least once per tick.
                    let _ = self.shared.stepped.wait_until(&mut machine, deadline);
                }
                Err(not_ready) => return Err(not_ready),
            }
        }
    }
}

fn to_system_time(at: Instant) -> SystemTime {
    SystemTime::now() - Instant::now().saturating_duration_since(at)
}

/// What one item of the list/watch means to the state machine.
fn input_of(item: Result<Item, Failure>, activity: &ApiActivity) -> Input {
    match item {
        Ok(Item::ListBegan) => Input::ListBegan,
        Ok(Item::Listed(pod)) => Input::Listed(pod),
        Ok(Item::ListDone { resource_version }) => Input::ListDone { resource_version },
        Ok(Item::WatchBegan) => Input::WatchBegan,
        Ok(Item::Applied(pod)) => Input::Applied(pod),
        Ok(Item::Deleted(pod)) => Input::Deleted(pod),
        Ok(Item::Bookmark { resource_version }) => Input::Bookmark { resource_version },
        // The response body has ended, so the layer has recorded a clean end, if it was one.
        Ok(Item::WatchEnded) => Input::WatchEnded { proves: activity.last_watch_end() },
        Err(failure) => Input::Failed { error: failure.error, status: failure.status, lagging: failure.lagging },
    }
}

/// The informer task: drives the list and watch requests, feeds the state machine, and
/// carries out its effects (delivery to Spark and subscribers, relists).
async fn run(shared: Arc<Shared>, pods: Api<Pod>, mut stop: signal::Receiver<bool>) {
    let settings = shared.settings.clone();
    let selector = Selector {
        labels: executor_selector(&shared.app_id),
        watch_timeout: settings.watch_timeout.as_secs() as u32,
        list_timeout: settings.initial_list_timeout.as_secs_f64().ceil() as u32,
    };
    // Backs off between lists that the machine ends after a failure (a list rejected as older
    // than the cache, 410 Gone, a list timeout); failures within one list/watch back off in it.
    let mut relist_backoff = DefaultBackoff::default();
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut resync_tick = (!settings.informer_resync_interval.is_zero()).then(|| {
        let mut tick = tokio::time::interval(settings.informer_resync_interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tick
    });

    'watcher: loop {
        let (requests, failing) = {
            let machine = shared.machine.lock();
            (machine.requests(), machine.is_failing())
        };
        let delay = if failing {
            relist_backoff.next().unwrap_or(Duration::from_secs(30))
        } else {
            relist_backoff.reset();
            Duration::ZERO
        };
        tracing::debug!("requesting executor pods: {requests:?} in {delay:?}");
        let requests = listwatch::list_watch(pods.clone(), selector.clone(), requests).default_backoff();
        let mut events =
            futures::stream::once(tokio::time::sleep(delay)).filter_map(|()| async { None }).chain(requests).boxed();
        loop {
            let input = tokio::select! {
                _ = stop.changed() => break 'watcher,
                _ = tick.tick() => Input::Tick { wire: shared.activity.last_success() },
                _ = async { resync_tick.as_mut().unwrap().tick().await }, if resync_tick.is_some() => {
                    resync(&shared);
                    continue;
                }
                item = events.next() => match item {
                    Some(item) => input_of(item, &shared.activity),
                    // Ends only when the watch cannot resume (410), which the machine relists for.
                    None => continue 'watcher,
                },
            };
            let effects = shared.step(input);
            // A completed list ends the run the backoff is for: the next fault's relist goes at
            // once, as the first did (kube's backoff would otherwise reset only after 120 s).
            if effects.iter().any(|e| matches!(e, Effect::Listed(_))) {
                relist_backoff.reset();
            }
            if carry_out(&shared, effects) {
                continue 'watcher;
            }
        }
    }
    shared.step(Input::Stop);
    shared.changes.close();
}

impl Shared {
    /// One step of the state machine; wakes the listers waiting for readiness.
    fn step(&self, input: Input) -> Vec<Effect> {
        let effects = self.machine.lock().step(input, Instant::now());
        self.stepped.notify_all();
        effects
    }
}

/// Carries out the effects of one step; true if the watcher must be replaced (a relist).
fn carry_out(shared: &Shared, effects: Vec<Effect>) -> bool {
    let mut relist = false;
    for effect in effects {
        match effect {
            Effect::Deliver(changes) => {
                for subscriber in shared.subscribers.lock().iter() {
                    subscriber.changed(&changes);
                }
                for change in changes {
                    shared.changes.push(change);
                }
            }
            Effect::Listed(pods) => {
                for subscriber in shared.subscribers.lock().iter() {
                    subscriber.listed(&pods);
                }
            }
            Effect::Relist => relist = true,
        }
    }
    relist
}

/// Replays cached pods whose current version was not delivered: an unchanged
/// pod produces no event, so a resync costs nothing when nothing changed.
fn resync(shared: &Shared) {
    let pods = shared.machine.lock().cache().snapshot();
    let mut replayed = 0;
    for pod in pods {
        if !shared.changes.was_delivered(&pod.name, &pod.resource_version) {
            shared.changes.push(PodChange::Applied(pod));
            replayed += 1;
        }
    }
    tracing::debug!(app_id = %shared.app_id, "resync replayed {replayed} pods");
}

//! The executor-pod informer: one list, then one long-lived watch of this
//! app's executor pods, kept in a local cache; and the lister that snapshots
//! that cache.
//!
//! ```text
//! apiserver --list/watch--> kube watcher --events--> ExecutorPodCache --changes--> PodChangeQueue --> JVM
//!      \--bytes--> ApiActivity --signs of life--> Health <--readiness-- lister_snapshot
//! ```
//!
//! `start` never blocks and never fails because the apiserver is slow or
//! down: every error is retried forever with jittered exponential backoff
//! (0.8 s to 30 s, as client-go), logged and counted, and shows in [`Health`].

pub mod activity;
pub mod cache;
pub mod changes;
pub mod health;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::runtime::watcher::{self, Event};
use kube::runtime::WatchStreamExt;
use kube::Api;
use parking_lot::Mutex;
use tokio::sync::watch as signal;

use crate::client::{self, ClientError};
use crate::services::{ExecutorServices, ServiceController, ServiceWork};
use crate::settings::{self, InformerSettings, InitialList, Settings, SettingsError};
use crate::snapshot::{CachedPod, PodChange};
use activity::{ActivityLayer, ApiActivity};
use cache::ExecutorPodCache;
use changes::{PodChangeQueue, QueueClosed};
use health::{Health, NotReady, Observation, SyncState};

/// How long `stop` waits for the informer task before aborting it.
pub const STOP_BOUND: Duration = Duration::from_secs(5);

/// Spark's executor pod labels (Constants.scala).
pub const APP_LABEL: &str = "spark-app-selector";
pub const ROLE_LABEL: &str = "spark-role";
pub const INACTIVE_LABEL: &str = "spark-exec-inactive";

/// The label selector of an app's active executor pods, as Spark's own
/// sources select them.
pub fn executor_selector(app_id: &str) -> String {
    format!("{APP_LABEL}={app_id},{ROLE_LABEL}=executor,{INACTIVE_LABEL}!=true")
}

#[derive(Debug, thiserror::Error)]
pub enum InformerError {
    #[error(transparent)]
    Settings(#[from] SettingsError),
    #[error(transparent)]
    Client(#[from] ClientError),
    #[error("the informer is already started; start it once (Spark's sources refuse a second start too)")]
    AlreadyStarted,
    #[error("the informer is stopped; create a new one")]
    Stopped,
}

/// Health and counters, readable at any time.
#[derive(Debug, Clone)]
pub struct HealthReport {
    pub state: SyncState,
    pub has_synced: bool,
    /// LIST requests sent (each page counts).
    pub lists: u64,
    /// Relists after the first: each follows a 410 Gone or a failed list.
    pub relists: u64,
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
    /// Executor Services, when enabled.
    pub services: Option<ServiceHealth>,
}

/// How the executor Services are doing (their failures never stop the informer).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceHealth {
    pub created: u64,
    pub repaired: u64,
    pub deleted: u64,
    pub errors: u64,
    pub last_error: Option<String>,
    /// Most requests for Services in flight at once so far.
    pub peak_in_flight: u64,
}

/// A lister snapshot: every cached pod, from a cache known to be complete and fresh.
#[derive(Debug, Clone)]
pub struct ListerSnapshot {
    pub pods: Vec<Arc<CachedPod>>,
    /// The cache's generation: the snapshot holds every change up to it.
    pub generation: u64,
}

struct Shared {
    app_id: String,
    settings: InformerSettings,
    cache: Mutex<ExecutorPodCache>,
    health: Mutex<Health>,
    changes: PodChangeQueue,
    activity: Arc<ApiActivity>,
    relists: AtomicU64,
    events_applied: AtomicU64,
    last_event: Mutex<Option<SystemTime>>,
    initial_list: Mutex<InitialList>,
    services: Option<(Arc<ExecutorServices>, Duration)>,
    service_controller: Mutex<Option<ServiceController>>,
}

impl Shared {
    fn service_work(&self, work: ServiceWork) {
        if let Some(controller) = self.service_controller.lock().as_ref() {
            controller.send(work);
        }
    }

    /// Tells the Service controller about changes the cache produced.
    fn services_for(&self, changes: &[PodChange]) {
        for change in changes {
            if let Some(exec_id) = change.pod().exec_id.clone() {
                self.service_work(match change {
                    PodChange::Applied(_) => ServiceWork::Ensure(exec_id),
                    PodChange::Deleted(_) => ServiceWork::Gone(exec_id),
                });
            }
        }
    }
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

impl ExecutorPodInformer {
    /// Builds the client from Spark's settings; no request is sent yet.
    /// Must run on the tokio runtime that will drive the informer.
    pub async fn connect(settings: &Settings, app_id: &str) -> Result<Self, InformerError> {
        settings::validate_app_id(app_id)?;
        let activity = Arc::new(ApiActivity::default());
        let config =
            client::kube_config(&settings.client, &client::user_agent(app_id), settings.informer.watch_timeout).await?;
        // Service requests use a client of their own: their answers say nothing of the watch.
        let services = match &settings.services {
            Some(s) => {
                let client = kube::Client::try_from(config.clone()).map_err(ClientError::from)?;
                let services = ExecutorServices::new(
                    client,
                    &settings.client.namespace,
                    app_id,
                    &s.driver_pod_name,
                    s.block_manager_port,
                    s.max_concurrent_requests,
                );
                Some((Arc::new(services), s.delete_after))
            }
            None => None,
        };
        let client = kube::client::ClientBuilder::try_from(config)
            .map_err(ClientError::from)?
            .with_layer(&ActivityLayer(activity.clone()))
            .build();
        for (key, likely) in &settings.unknown_keys {
            match likely {
                Some(k) => tracing::warn!("unknown key {key}; did you mean {k}?"),
                None => tracing::warn!("unknown key {key}; it is ignored"),
            }
        }
        Ok(Self::build(client, activity, &settings.client.namespace, app_id, settings.informer.clone(), services))
    }

    /// An informer over an existing client; `activity` must be fed by an
    /// [`ActivityLayer`] on that client.
    pub fn with_client(
        client: kube::Client,
        activity: Arc<ApiActivity>,
        namespace: &str,
        app_id: &str,
        settings: InformerSettings,
    ) -> Self {
        Self::build(client, activity, namespace, app_id, settings, None)
    }

    fn build(
        client: kube::Client,
        activity: Arc<ApiActivity>,
        namespace: &str,
        app_id: &str,
        settings: InformerSettings,
        services: Option<(Arc<ExecutorServices>, Duration)>,
    ) -> Self {
        let initial_list = settings.initial_list;
        Self {
            shared: Arc::new(Shared {
                app_id: app_id.to_string(),
                settings,
                cache: Mutex::default(),
                health: Mutex::default(),
                changes: PodChangeQueue::default(),
                activity,
                relists: AtomicU64::new(0),
                events_applied: AtomicU64::new(0),
                last_event: Mutex::new(None),
                initial_list: Mutex::new(initial_list),
                services,
                service_controller: Mutex::new(None),
            }),
            pods: Api::namespaced(client, namespace),
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

    /// Starts listing and watching in the background; returns at once.
    pub fn start(&self) -> Result<(), InformerError> {
        let mut lifecycle = self.lifecycle.lock();
        match *lifecycle {
            Lifecycle::Created => {}
            Lifecycle::Running { .. } => return Err(InformerError::AlreadyStarted),
            Lifecycle::Stopped => return Err(InformerError::Stopped),
        }
        if let Some((services, delete_after)) = &self.shared.services {
            let _entered = self.runtime.enter();
            *self.shared.service_controller.lock() = Some(ServiceController::spawn(services.clone(), *delete_after));
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

    /// Stops the informer; idempotent. Waits at most [`STOP_BOUND`] for the
    /// task to finish, then aborts it. Consumers blocked in `take_changes` wake.
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
        let controller = self.shared.service_controller.lock().take();
        if let Some(controller) = controller {
            controller.stop().await;
        }
        self.shared.health.lock().step(Observation::Stopped, Instant::now());
        self.shared.changes.close();
    }

    /// Health and counters now.
    pub fn health(&self) -> HealthReport {
        let shared = &self.shared;
        let (state, has_synced, errors) = {
            let mut health = shared.health.lock();
            feed_activity(&mut health, &shared.activity);
            health.check_silence(Instant::now(), shared.settings.stale_bound);
            (health.state().clone(), health.has_synced(), health.errors())
        };
        let (cache_size, cache_json_bytes) = {
            let cache = shared.cache.lock();
            (cache.len(), cache.json_bytes())
        };
        HealthReport {
            state,
            has_synced,
            lists: shared.activity.lists(),
            relists: shared.relists.load(Ordering::Relaxed),
            watch_connects: shared.activity.watches(),
            events_applied: shared.events_applied.load(Ordering::Relaxed),
            errors,
            last_event: *shared.last_event.lock(),
            last_activity: shared.activity.last_success().map(to_system_time),
            cache_size,
            cache_json_bytes,
            pending_changes: shared.changes.len(),
            coalesced_changes: shared.changes.coalesced(),
            initial_list: *shared.initial_list.lock(),
            services: shared.services.as_ref().map(|(services, _)| {
                let c = &services.counters;
                ServiceHealth {
                    created: c.created.load(Ordering::Relaxed),
                    repaired: c.repaired.load(Ordering::Relaxed),
                    deleted: c.deleted.load(Ordering::Relaxed),
                    errors: c.errors.load(Ordering::Relaxed),
                    last_error: c.last_error.lock().clone(),
                    peak_in_flight: c.peak_in_flight.load(Ordering::Relaxed),
                }
            }),
        }
    }

    /// Blocks up to `timeout` for pod changes; an empty batch when none came.
    /// Call from a thread outside the runtime (the JVM's).
    pub fn take_changes(&self, max: usize, timeout: Duration) -> Result<Vec<PodChange>, QueueClosed> {
        self.shared.changes.take(max, timeout)
    }

    /// A full snapshot of the cache, or why none may be taken now (never an
    /// empty or partial list from an unsynced or stale cache).
    pub fn lister_snapshot(&self) -> Result<ListerSnapshot, NotReady> {
        {
            let mut health = self.shared.health.lock();
            feed_activity(&mut health, &self.shared.activity);
            health.readiness(Instant::now(), self.shared.settings.stale_bound)?;
        }
        let cache = self.shared.cache.lock();
        Ok(ListerSnapshot { pods: cache.snapshot(), generation: cache.generation() })
    }
}

fn to_system_time(at: Instant) -> SystemTime {
    SystemTime::now() - Instant::now().saturating_duration_since(at)
}

fn feed_activity(health: &mut Health, activity: &ApiActivity) {
    if let Some(at) = activity.last_success() {
        health.step(Observation::Alive(at), Instant::now());
    }
}

/// The kube watcher configuration for an initial-list strategy.
fn watcher_config(settings: &InformerSettings, selector: &str, strategy: InitialList) -> watcher::Config {
    let config = watcher::Config::default().labels(selector).timeout(settings.watch_timeout.as_secs() as u32);
    match strategy {
        InitialList::Auto | InitialList::Streaming => config.streaming_lists(),
        // The watch cache serves resourceVersion=0 and ignores limits; kube drops
        // resourceVersion=0 when a page size is set, so set none.
        InitialList::WatchCache => watcher::Config { page_size: None, ..config.any_semantic() },
        InitialList::Consistent => config.page_size(settings.page_size),
    }
}

/// Whether an error during a streaming initial list means the server does not
/// support it (WatchList off or too old), rather than a passing failure.
fn streaming_unsupported(error: &watcher::Error) -> bool {
    matches!(status_code(error), Some(400 | 422 | 501))
}

/// The apiserver's status code of a watch error, in the response or in the stream.
fn status_code(error: &watcher::Error) -> Option<u16> {
    match error {
        watcher::Error::WatchStartFailed(kube::Error::Api(s)) | watcher::Error::WatchFailed(kube::Error::Api(s)) => {
            Some(s.code)
        }
        watcher::Error::WatchError(s) => Some(s.code),
        _ => None,
    }
}

/// The error and its causes, on one line.
fn describe(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// The informer task.
async fn run(shared: Arc<Shared>, pods: Api<Pod>, mut stop: signal::Receiver<bool>) {
    let settings = shared.settings.clone();
    let selector = executor_selector(&shared.app_id);
    let mut health_tick = tokio::time::interval(Duration::from_millis(500));
    health_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut resync_tick = (!settings.informer_resync_interval.is_zero()).then(|| {
        let mut tick = tokio::time::interval(settings.informer_resync_interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tick
    });
    let started = Instant::now();
    let mut first_sync_logged = false;

    'watcher: loop {
        let strategy = *shared.initial_list.lock();
        let streaming = matches!(strategy, InitialList::Auto | InitialList::Streaming);
        let mut events =
            watcher::watcher(pods.clone(), watcher_config(&settings, &selector, strategy)).default_backoff().boxed();
        // Set while a (re)list is in progress: the list has no timeout of its own.
        let mut list_deadline: Option<tokio::time::Instant> = None;
        let mut list_began = Instant::now();
        // Whether this watcher completed a list: a streaming list fails before it starts when unsupported.
        let mut listed_here = false;

        loop {
            let deadline = list_deadline;
            tokio::select! {
                _ = stop.changed() => break 'watcher,
                _ = health_tick.tick() => {
                    let mut health = shared.health.lock();
                    feed_activity(&mut health, &shared.activity);
                    let was = health.state().name();
                    health.check_silence(Instant::now(), settings.stale_bound);
                    if was != "Degraded" {
                        if let SyncState::Degraded { last_error, .. } = health.state() {
                            tracing::warn!(app_id = %shared.app_id, "executor pod informer degraded: {last_error}");
                        }
                    }
                }
                _ = async { resync_tick.as_mut().unwrap().tick().await }, if resync_tick.is_some() => {
                    resync(&shared);
                }
                _ = async { tokio::time::sleep_until(deadline.unwrap()).await }, if deadline.is_some() => {
                    let error = format!(
                        "the initial list did not complete within {:?} (raise {} if the namespace is large)",
                        settings.initial_list_timeout,
                        settings::keys::INITIAL_LIST_TIMEOUT
                    );
                    fail(&shared, error);
                    if strategy == InitialList::Auto && streaming {
                        fall_back_from_streaming(&shared, "it timed out");
                    }
                    continue 'watcher;
                }
                event = events.next() => match event {
                    Some(Ok(Event::Init)) => {
                        if list_deadline.is_some() && strategy == InitialList::Auto {
                            // A streaming list that ended before its last initial event.
                            fall_back_from_streaming(&shared, "the stream ended before the initial events did");
                            continue 'watcher;
                        }
                        if shared.health.lock().has_synced() {
                            shared.relists.fetch_add(1, Ordering::Relaxed);
                            tracing::info!(app_id = %shared.app_id, "relisting executor pods");
                        }
                        tracing::debug!(app_id = %shared.app_id, "listing executor pods ({strategy:?} initial list)");
                        shared.cache.lock().begin_list();
                        shared.health.lock().step(Observation::ListStarted, Instant::now());
                        list_deadline = Some(tokio::time::Instant::now() + settings.initial_list_timeout);
                        list_began = Instant::now();
                    }
                    Some(Ok(Event::InitApply(pod))) => {
                        let first_list_item = shared.cache.lock().list_item(pod);
                        if let Some(change) = first_list_item {
                            shared.changes.push(change);
                        }
                    }
                    Some(Ok(Event::InitDone)) => {
                        list_deadline = None;
                        listed_here = true;
                        let (changes, size, exec_ids) = {
                            let mut cache = shared.cache.lock();
                            let changes = cache.complete_list();
                            let exec_ids: Vec<String> = cache.snapshot().iter().filter_map(|p| p.exec_id.clone()).collect();
                            (changes, cache.len(), exec_ids)
                        };
                        shared.services_for(&changes);
                        shared.service_work(ServiceWork::Resync(exec_ids));
                        for change in changes {
                            shared.changes.push(change);
                        }
                        shared.health.lock().step(Observation::ListCompleted, Instant::now());
                        if !first_sync_logged {
                            first_sync_logged = true;
                            tracing::info!(
                                app_id = %shared.app_id,
                                "executor pod informer synced: {size} pods in {:.0} ms ({:.0} ms after start)",
                                list_began.elapsed().as_secs_f64() * 1e3,
                                started.elapsed().as_secs_f64() * 1e3,
                            );
                        } else {
                            tracing::info!(app_id = %shared.app_id, "executor pod informer relisted: {size} pods");
                        }
                    }
                    Some(Ok(Event::Apply(pod))) => {
                        let change = shared.cache.lock().apply(pod);
                        if let Some(change) = change {
                            shared.services_for(std::slice::from_ref(&change));
                            shared.changes.push(change);
                        }
                        applied(&shared);
                    }
                    Some(Ok(Event::Delete(pod))) => {
                        let change = shared.cache.lock().delete(pod);
                        shared.services_for(std::slice::from_ref(&change));
                        shared.changes.push(change);
                        applied(&shared);
                    }
                    Some(Err(error)) => {
                        let unsupported = strategy == InitialList::Auto && !listed_here && streaming_unsupported(&error);
                        fail(&shared, describe(&error));
                        if status_code(&error) == Some(410) {
                            let as_of = shared.activity.last_success_before_watch();
                            shared.health.lock().step(Observation::Behind(as_of), Instant::now());
                        }
                        if unsupported {
                            fall_back_from_streaming(&shared, &describe(&error));
                            continue 'watcher;
                        }
                    }
                    // The watcher never ends; if it did, start a new one.
                    None => continue 'watcher,
                },
            }
        }
    }
    shared.health.lock().step(Observation::Stopped, Instant::now());
    shared.changes.close();
}

fn applied(shared: &Shared) {
    shared.events_applied.fetch_add(1, Ordering::Relaxed);
    *shared.last_event.lock() = Some(SystemTime::now());
    shared.health.lock().step(Observation::EventApplied, Instant::now());
}

fn fail(shared: &Shared, error: String) {
    tracing::warn!(app_id = %shared.app_id, "executor pod informer: {error}; retrying with backoff");
    shared.health.lock().step(Observation::Failed(error), Instant::now());
}

fn fall_back_from_streaming(shared: &Shared, why: &str) {
    tracing::info!(
        app_id = %shared.app_id,
        "streaming list unavailable ({why}); listing from the watch cache from now on (set {} to choose)",
        settings::keys::INITIAL_LIST
    );
    *shared.initial_list.lock() = InitialList::WatchCache;
}

/// Replays cached pods whose current version was not delivered (review
/// comment 7: an unchanged pod produces no event).
fn resync(shared: &Shared) {
    let pods = shared.cache.lock().snapshot();
    let mut replayed = 0;
    for pod in pods {
        if !shared.changes.was_delivered(&pod.name, &pod.resource_version) {
            shared.changes.push(PodChange::Applied(pod));
            replayed += 1;
        }
    }
    tracing::debug!(app_id = %shared.app_id, "resync replayed {replayed} pods");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selector_matches_sparks_own_sources() {
        assert_eq!(
            executor_selector("spark-123"),
            "spark-app-selector=spark-123,spark-role=executor,spark-exec-inactive!=true"
        );
    }
}

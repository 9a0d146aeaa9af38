//! The Service controller of one app: it decides when an executor's Service
//! is ensured and when it is deleted, fed by whoever sees the pods.
//!
//! One table says, per executor, what is wanted (its pod exists, or has been
//! gone since some instant) and whether someone is reconciling it. As
//! client-go's work queue never hands one key to two workers at once, one
//! executor is reconciled by one task at a time: an ensure and a delete of the
//! same Service never overlap, so a delete always sees what the last ensure
//! left on the apiserver, however long that ensure was retried (a 429 burst,
//! an apiserver restart). A change that arrives during a pass makes the pass
//! go round again on what is wanted now.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::Notify;
use tokio::time::Instant;

use super::{retry_backoff, Ensured, ExecutorServices, ServiceError, ServiceHealth};
use crate::client::SetupError;
use crate::informer::PodSubscriber;
use crate::pod::{CachedPod, PodChange};
use crate::settings::ServiceSettings;

/// Work for the Service controller, from whoever sees the pods (the informer,
/// or, with it off, the Java side reading Spark's snapshots).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServiceWork {
    /// An executor pod exists (added or changed).
    Ensure(String),
    /// An executor pod is gone.
    Gone(String),
    /// A (re)list completed: these executor pods exist.
    Resync(Vec<String>),
}

/// The one Service controller of an app. It ensures a Service for every
/// executor pod it is told of (no watch or list of its own), and, with a
/// cool-down, deletes the Service of an executor whose pod has been gone that
/// long. The informer feeds it as a [`PodSubscriber`]; with the informer off,
/// the Java side does (`ensure_now` before it creates a pod, `Gone` for pods
/// Spark's snapshots show deleted). Either way one table of executors, so an
/// executor's Service is requested once.
pub struct ServiceController {
    services: Arc<ExecutorServices>,
    executors: Arc<Executors>,
    /// Executors claimed for a pass, for the controller's task to reconcile.
    claimed: tokio::sync::mpsc::UnboundedSender<String>,
    task: tokio::task::JoinHandle<()>,
    stopped: AtomicBool,
}

impl ServiceController {
    /// The Service controller of one app from Spark's settings, with a client
    /// of its own, once the apiserver said the driver may manage Services
    /// ([`ExecutorServices::check_access`]). Subscribed to no informer; must
    /// run on the runtime that will drive it.
    pub async fn connect(settings: &crate::settings::Settings, app_id: &str) -> Result<Self, SetupError> {
        let services = ExecutorServices::connect(settings, app_id).await?;
        Self::start(services, settings.services()?).await
    }

    /// Asks the apiserver whether the driver may manage the Services, then
    /// spawns the controller on the current runtime, with the cool-down `settings` give.
    pub async fn start(services: ExecutorServices, settings: &ServiceSettings) -> Result<Self, SetupError> {
        services.check_access().await?;
        Ok(Self::spawn(Arc::new(services), settings.delete_after))
    }

    /// Spawns the controller on the current runtime. `delete_after` zero:
    /// Services live as long as the driver (the garbage collector removes them).
    pub fn spawn(services: Arc<ExecutorServices>, delete_after: Duration) -> Self {
        let (claimed, queue) = tokio::sync::mpsc::unbounded_channel();
        let executors = Arc::<Executors>::default();
        let task = tokio::spawn(run_controller(services.clone(), executors.clone(), queue, delete_after));
        Self { services, executors, claimed, task, stopped: AtomicBool::new(false) }
    }

    /// Records what the work says at once; the executors it leaves wanting a
    /// request are reconciled by the controller's task.
    pub fn send(&self, work: ServiceWork) {
        let now = Instant::now();
        let claimed: Vec<String> = match work {
            ServiceWork::Ensure(id) => self.executors.present(&id).map(|_| id).into_iter().collect(),
            ServiceWork::Gone(id) => self.executors.gone(&id, now).then_some(id).into_iter().collect(),
            ServiceWork::Resync(ids) => ids.into_iter().filter(|id| self.executors.present(id).is_some()).collect(),
        };
        for id in claimed {
            self.reconcile_later(id);
        }
    }

    fn reconcile_later(&self, id: String) {
        // Fails only once stopped, when nothing is reconciled any more.
        let _ = self.claimed.send(id);
    }

    /// Ensures the executor's Service now and returns what was done, for a
    /// caller that must know before it goes on (the Java side, before it
    /// creates the executor's pod). The executor is claimed for this pass
    /// first, so the informer's event for that pod meanwhile sends no second
    /// request. A failure is returned, not retried here: the pod's next event
    /// or resync tries again. If a pass of the controller's own holds the
    /// executor, this ensure runs beside it (ensures are idempotent) and that
    /// pass, not this one, decides what the executor has.
    pub async fn ensure_now(&self, exec_id: &str) -> Result<Ensured, ServiceError> {
        if self.stopped.load(Ordering::Relaxed) {
            return Err(ServiceError::Stopped { app_id: self.services.app_id().to_string() });
        }
        let claimed = self.executors.present(exec_id);
        let outcome = self.services.ensure(exec_id).await;
        if let Some(generation) = claimed {
            let pass = if outcome.is_ok() { Pass::Ensured } else { Pass::Failed };
            if !self.executors.finish(exec_id, generation, pass) {
                // Gone meanwhile: the controller's task takes the executor from here.
                self.reconcile_later(exec_id.to_string());
            }
        }
        outcome
    }

    /// How the Services are doing.
    pub fn health(&self) -> ServiceHealth {
        self.services.counters.health()
    }

    /// Stops the controller and every request it has in flight (tasks on the
    /// runtime, aborted at once); `ensure_now` refuses from then on.
    pub fn stop(&self) {
        self.stopped.store(true, Ordering::Relaxed);
        self.task.abort();
    }
}

impl PodSubscriber for ServiceController {
    fn changed(&self, changes: &[PodChange]) {
        for change in changes {
            if let Some(exec_id) = change.pod().exec_id.clone() {
                self.send(match change {
                    PodChange::Applied(_) => ServiceWork::Ensure(exec_id),
                    PodChange::Deleted(_) => ServiceWork::Gone(exec_id),
                });
            }
        }
    }

    fn listed(&self, pods: &[Arc<CachedPod>]) {
        self.send(ServiceWork::Resync(pods.iter().filter_map(|p| p.exec_id.clone()).collect()));
    }

    fn stop(&self) {
        ServiceController::stop(self);
    }
}

/// What the controller knows of one executor.
struct Executor {
    /// `None`: the pod exists, so its Service should. `Some`: the pod has been
    /// gone since then; its Service goes once the cool-down has passed.
    gone_since: Option<Instant>,
    /// An ensure succeeded since the pod was last seen: nothing to request.
    ensured: bool,
    /// Bumped whenever the pod turns gone or back: a pass begun before is out of date.
    generation: u64,
    /// A pass holds the executor (the controller's task, or `ensure_now`).
    reconciling: bool,
    /// Wakes a pass waiting out the cool-down when the pod comes back.
    back: Arc<Notify>,
}

impl Executor {
    fn new() -> Self {
        Self { gone_since: None, ensured: false, generation: 0, reconciling: false, back: Arc::default() }
    }

    /// Takes the executor for a pass if it needs one and none holds it.
    fn claim(&mut self) -> Option<u64> {
        let satisfied = self.gone_since.is_none() && self.ensured;
        if self.reconciling || satisfied {
            return None;
        }
        self.reconciling = true;
        Some(self.generation)
    }
}

/// How a pass ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pass {
    /// The Service is in place.
    Ensured,
    /// The Service is gone, or is kept as long as the driver: the executor is forgotten.
    Forgotten,
    /// Nothing was requested, or every retry failed: the next event tries again.
    Failed,
}

/// Every executor the controller knows that has a pod or a Service to delete,
/// by executor id. A deleted Service's executor is forgotten, so the table
/// holds the live executors and those in their cool-down.
#[derive(Default)]
struct Executors(Mutex<HashMap<String, Executor>>);

/// What a pass works from.
struct Wanted {
    gone_since: Option<Instant>,
    ensured: bool,
    generation: u64,
    back: Arc<Notify>,
}

impl Executors {
    /// The executor's pod exists. `Some(generation)`: the caller holds the
    /// executor for a pass and must end it with [`Executors::finish`].
    fn present(&self, id: &str) -> Option<u64> {
        let mut all = self.0.lock();
        let executor = all.entry(id.to_string()).or_insert_with(Executor::new);
        if executor.gone_since.take().is_some() {
            executor.generation += 1;
            executor.ensured = false;
            executor.back.notify_one();
        }
        executor.claim()
    }

    /// The executor's pod is gone (the first time it is said counts). True:
    /// the caller holds the executor for a pass.
    fn gone(&self, id: &str, now: Instant) -> bool {
        let mut all = self.0.lock();
        let executor = all.entry(id.to_string()).or_insert_with(Executor::new);
        if executor.gone_since.is_none() {
            executor.gone_since = Some(now);
            executor.generation += 1;
        }
        executor.claim().is_some()
    }

    fn wanted(&self, id: &str) -> Option<Wanted> {
        self.0.lock().get(id).map(|e| Wanted {
            gone_since: e.gone_since,
            ensured: e.ensured,
            generation: e.generation,
            back: e.back.clone(),
        })
    }

    fn is_current(&self, id: &str, generation: u64) -> bool {
        self.0.lock().get(id).is_some_and(|e| e.generation == generation)
    }

    /// Ends a pass begun at `generation`. True: the executor is released (or
    /// forgotten). False: it changed during the pass, which the holder must
    /// run again on what is wanted now.
    fn finish(&self, id: &str, generation: u64, pass: Pass) -> bool {
        let mut all = self.0.lock();
        let Some(executor) = all.get_mut(id) else { return true };
        if executor.generation != generation {
            return false;
        }
        match pass {
            Pass::Forgotten => {
                all.remove(id);
            }
            Pass::Ensured => {
                executor.ensured = true;
                executor.reconciling = false;
            }
            Pass::Failed => executor.reconciling = false,
        }
        true
    }
}

/// A failed ensure or delete (after its own retries of transient errors) is
/// tried again this many times, with [`retry_backoff`] (about 2 minutes in all):
/// a 403 right after an apiserver restart, before its RBAC is loaded, or an
/// apiserver that is down for a while, must not leave an executor without its
/// Service, or a gone executor with one, until some later event.
const RETRIES: u32 = 8;

/// Runs `attempt` until it succeeds, at most `RETRIES` more times, while `wanted`.
async fn persist<F, Fut>(mut attempt: F, wanted: impl Fn() -> bool) -> bool
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let mut backoff = retry_backoff();
    for retry in 0..=RETRIES {
        if attempt().await {
            return true;
        }
        if retry == RETRIES {
            break;
        }
        tokio::time::sleep(backoff.next().expect("the backoff never ends")).await;
        if !wanted() {
            break;
        }
    }
    false
}

async fn run_controller(
    services: Arc<ExecutorServices>,
    executors: Arc<Executors>,
    mut claimed: tokio::sync::mpsc::UnboundedReceiver<String>,
    delete_after: Duration,
) {
    // Dropped with this task when the controller stops: every pass is aborted.
    let mut passes = tokio::task::JoinSet::new();
    while let Some(id) = claimed.recv().await {
        while passes.try_join_next().is_some() {}
        passes.spawn(reconcile(id, services.clone(), executors.clone(), delete_after));
    }
}

/// Reconciles one claimed executor until what it has is what is wanted, or
/// every retry failed, then releases it.
async fn reconcile(id: String, services: Arc<ExecutorServices>, executors: Arc<Executors>, delete_after: Duration) {
    loop {
        let Some(wanted) = executors.wanted(&id) else { return };
        let current = || executors.is_current(&id, wanted.generation);
        let pass = match wanted.gone_since {
            None if wanted.ensured => Pass::Ensured,
            None => {
                let ensure = || async { services.ensure(&id).await.is_ok() };
                if persist(ensure, current).await {
                    Pass::Ensured
                } else {
                    Pass::Failed
                }
            }
            Some(_) if delete_after.is_zero() => Pass::Forgotten,
            Some(since) => {
                let deadline = since + delete_after;
                // A wake-up left from an earlier pass is not the pod coming back: check.
                while current() && Instant::now() < deadline {
                    tokio::select! {
                        _ = tokio::time::sleep_until(deadline) => {}
                        _ = wanted.back.notified() => {}
                    }
                }
                let delete = || async { services.delete(&id).await.is_ok() };
                if current() && persist(delete, current).await {
                    Pass::Forgotten
                } else {
                    Pass::Failed
                }
            }
        };
        if executors.finish(&id, wanted.generation, pass) {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_executor_is_claimed_once_and_not_again_once_ensured() {
        let executors = Executors::default();
        let generation = executors.present("1").expect("a new executor needs its Service");
        assert_eq!(executors.present("1"), None, "held by the first pass");
        assert!(executors.finish("1", generation, Pass::Ensured));
        assert_eq!(executors.present("1"), None, "ensured: nothing to request");
    }

    #[test]
    fn a_failed_ensure_is_tried_again_on_the_next_event() {
        let executors = Executors::default();
        let generation = executors.present("1").unwrap();
        assert!(executors.finish("1", generation, Pass::Failed));
        assert!(executors.present("1").is_some());
    }

    /// The race the chaos run found: the pod goes while its ensure is still
    /// retrying. The ensure's pass must not end; it goes round and deletes.
    #[test]
    fn gone_during_an_ensure_sends_the_same_pass_round_to_delete() {
        let executors = Executors::default();
        let generation = executors.present("1").unwrap();
        let now = Instant::now();
        assert!(!executors.gone("1", now), "no second pass beside the one ensuring");
        assert!(!executors.finish("1", generation, Pass::Ensured), "out of date: go round");
        let wanted = executors.wanted("1").unwrap();
        assert_eq!(wanted.gone_since, Some(now));
        assert!(executors.finish("1", wanted.generation, Pass::Forgotten));
        assert!(executors.wanted("1").is_none(), "a deleted Service's executor is forgotten");
    }

    #[test]
    fn back_during_the_cool_down_wakes_the_pass_and_wants_the_service_again() {
        let executors = Executors::default();
        let generation = executors.present("1").unwrap();
        assert!(executors.finish("1", generation, Pass::Ensured));
        let now = Instant::now();
        assert!(executors.gone("1", now), "a gone executor needs a pass to delete");
        let gone = executors.wanted("1").unwrap();
        assert!(!executors.gone("1", now + Duration::from_secs(1)), "said again: the first time counts");
        assert_eq!(executors.wanted("1").unwrap().gone_since, Some(now));
        assert_eq!(executors.present("1"), None, "held by the pass waiting out the cool-down");
        assert!(!executors.is_current("1", gone.generation), "the waiting pass sees it is out of date");
        let back = executors.wanted("1").unwrap();
        assert!(back.gone_since.is_none() && !back.ensured, "wanted again, and ensured anew");
        assert!(!executors.finish("1", gone.generation, Pass::Failed));
        assert!(executors.finish("1", back.generation, Pass::Ensured));
    }

    #[test]
    fn an_executor_never_seen_is_still_deleted_when_said_gone() {
        let executors = Executors::default();
        assert!(executors.gone("7", Instant::now()), "its Service may exist from before a restart");
    }
}

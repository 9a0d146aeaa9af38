//! The lister never hands Spark an old snapshot after an outage that ends in a
//! relist, on the configuration real clusters run: the apiserver's watch cache
//! on (so an apiserver restart costs a 410 and a relist), a slow link (so that
//! relist takes seconds), pods created while the informer could not see them.
//!
//! The JVM's side of the lister protocol is played here as the Java source
//! plays it: it passes back the view of its previous snapshot, reuses that
//! snapshot when told "unchanged", and reuses pods it holds when told a pod is
//! unchanged. Every full snapshot it would hand to Spark is recorded and checked
//! against Spark's rule: an executor missing from a full snapshot is removed
//! once it is older than `missingPodDetectDelta` (twice the stale bound).
//!
//! Run many times by hand: `cargo test --release --test planes lister_after_outage:: -- --test-threads=1`
//! with `LISTER_OUTAGE_RUNS=20`.

use crate::support;

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams};
use parking_lot::Mutex;
use spark_k8s_native::informer::health::SyncState;
use spark_k8s_native::informer::ExecutorPodInformer;
use spark_k8s_native::labels::executor_selector;
use spark_k8s_native::settings::{InitialList, Settings};
use spark_k8s_native::wire::{self, encode_snapshot, Decoded};
use support::kubelet;
use support::{eventually, unique_app_id, Identity, LocalPlane, PlaneOptions, Route};

/// Executor pods of the app before the outage.
const PODS: u64 = 1000;
/// Executor pods created at the apiserver while the informer is cut off.
const BORN_IN_OUTAGE: u64 = 30;
/// How long the initial list takes through the slow link (the relist as long).
const LIST_SECONDS: u64 = 4;

/// A full snapshot as the JVM would hand it to Spark.
struct Handed {
    at: Instant,
    pods: HashSet<String>,
    /// The informer was relisting when this snapshot was taken.
    during_relist: bool,
}

/// The JVM's side of the lister protocol, polling every 100 ms on a thread of its own.
struct SparkSide {
    handed: Arc<Mutex<Vec<Handed>>>,
    running: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl SparkSide {
    fn start(informer: Arc<ExecutorPodInformer>) -> Self {
        let handed: Arc<Mutex<Vec<Handed>>> = Arc::default();
        let running = Arc::new(AtomicBool::new(true));
        let thread = {
            let (handed, running) = (handed.clone(), running.clone());
            std::thread::spawn(move || {
                let mut known = 0u64;
                let mut held: HashMap<String, u64> = HashMap::new();
                let mut last: HashSet<String> = HashSet::new();
                while running.load(Ordering::Relaxed) {
                    let during_relist = informer.health().phase.starts_with("relisting");
                    // As the Java source does: wait for readiness, then snapshot.
                    let ready = informer.await_lister_ready(Duration::from_millis(500));
                    if let Ok(snapshot) = ready.and_then(|()| informer.lister_snapshot()) {
                        let answer = encode_snapshot(&snapshot.pods, known, snapshot.view);
                        let pods = match wire::decode(&answer).expect("a well-formed answer") {
                            Decoded::Unchanged { .. } => Some(last.clone()),
                            Decoded::Snapshot { entries, .. } => {
                                let mut now_held = HashMap::new();
                                let mut complete = true;
                                for entry in &entries {
                                    // "unchanged, you hold it": the JVM must hold it.
                                    if entry.kind == wire::UNCHANGED && !held.contains_key(&entry.name) {
                                        complete = false;
                                    }
                                    now_held.insert(entry.name.clone(), entry.generation);
                                }
                                complete.then(|| {
                                    held = now_held;
                                    held.keys().cloned().collect()
                                })
                            }
                            other => panic!("not a lister answer: {other:?}"),
                        };
                        match pods {
                            Some(pods) => {
                                known = snapshot.view;
                                last = pods.clone();
                                handed.lock().push(Handed { at: Instant::now(), pods, during_relist });
                            }
                            // As the Java source does: ask for every pod next round.
                            None => known = 0,
                        }
                    }
                    std::thread::sleep(Duration::from_millis(100));
                }
            })
        };
        Self { handed, running, thread: Some(thread) }
    }

    fn latest(&self) -> Option<usize> {
        self.handed.lock().last().map(|h| h.pods.len())
    }

    fn stop(mut self) -> Vec<Handed> {
        self.running.store(false, Ordering::Relaxed);
        self.thread.take().unwrap().join().unwrap();
        std::mem::take(&mut *self.handed.lock())
    }
}

struct Outage {
    plane: LocalPlane,
    informer: Arc<ExecutorPodInformer>,
    pods: Api<Pod>,
    app: String,
    stale_bound: Duration,
}

/// A plane with the watch cache on, `PODS` executors, a link slow enough that
/// listing them takes `LIST_SECONDS`, and a synced informer behind it.
async fn slow_link_informer(missing_pod_detect_delta: &str, more_conf: &[(&str, &str)]) -> Outage {
    let plane = LocalPlane::start_with(PlaneOptions { watch_cache: true, ..Default::default() });
    let app = unique_app_id("outage");
    let pods = plane.admin_pods();
    kubelet::create_executors(&pods, &app, 0..PODS, 16).await.unwrap();
    let selector = executor_selector(&app);
    let list_bytes =
        serde_json::to_vec(&pods.list(&ListParams::default().labels(&selector)).await.unwrap()).unwrap().len() as u64;
    plane.proxy_bandwidth(list_bytes / LIST_SECONDS);
    let mut conf = plane.spark_conf(Identity::Restricted, Route::Proxy);
    conf.insert("spark.kubernetes.executor.missingPodDetectDelta".into(), missing_pod_detect_delta.into());
    conf.extend(more_conf.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    let settings = Settings::from_spark_conf(&conf).unwrap();
    let stale_bound = settings.informer.stale_bound;
    let informer = Arc::new(ExecutorPodInformer::connect(&settings, &app).await.unwrap());
    let began = Instant::now();
    informer.start().unwrap();
    eventually("the first sync through the slow link", Duration::from_secs(60), || async {
        (informer.health().state == SyncState::Synced).then_some(())
    })
    .await;
    eprintln!("[outage] {PODS} pods ({list_bytes} bytes) synced in {:?} through the slow link", began.elapsed());
    let health = informer.health();
    // `auto` falls back to watch-cache lists for good when a streaming list ends early.
    assert_eq!(health.initial_list, InitialList::Auto, "the streaming list completed: {health:?}");
    assert_eq!(health.lists, 0, "no LIST: the first list streamed {health:?}");
    Outage { plane, informer, pods, app, stale_bound }
}

impl Outage {
    /// Cuts the informer off for `hole`; meanwhile restarts the apiserver (etcd
    /// keeps its data) and creates `BORN_IN_OUTAGE` executors at the apiserver.
    /// Returns when each was created.
    async fn run(&self, hole: Duration) -> HashMap<String, Instant> {
        let began = Instant::now();
        self.plane.proxy_blackhole(Duration::ZERO);
        self.plane.restart_apiserver();
        let mut born = HashMap::new();
        for id in PODS..PODS + BORN_IN_OUTAGE {
            kubelet::create_executor(&self.pods, &self.app, id).await.unwrap();
            born.insert(kubelet::executor_pod_name(&self.app, id), Instant::now());
        }
        tokio::time::sleep(hole.saturating_sub(began.elapsed())).await;
        self.plane.proxy_normal();
        eprintln!("[outage] informer cut off for {:?}; apiserver restarted", began.elapsed());
        born
    }
}

/// Spark's rule, checked on every full snapshot handed after the outage began: no
/// snapshot lacks a pod older than the stale bound (half of missingPodDetectDelta).
fn assert_no_old_pod_missing(handed: &[Handed], born: &HashMap<String, Instant>, stale_bound: Duration) {
    for (i, snapshot) in handed.iter().enumerate() {
        for (name, created) in born {
            let age = snapshot.at.saturating_duration_since(*created);
            assert!(
                age <= stale_bound || snapshot.pods.contains(name),
                "full snapshot {i} of {} ({} pods) lacks {name}, created {age:?} before it (stale bound {stale_bound:?})",
                handed.len(),
                snapshot.pods.len()
            );
        }
    }
}

fn runs() -> usize {
    std::env::var("LISTER_OUTAGE_RUNS").ok().and_then(|v| v.parse().ok()).unwrap_or(1)
}

/// What Spark received around one outage.
struct Observed {
    /// Full snapshots handed from the outage's start on.
    after: Vec<Handed>,
    /// The index in `after` of the first one with every pod.
    first_full: usize,
    relists: u64,
}

/// Runs the outage on a slow-link informer with the JVM's side of the lister
/// running, then checks what holds in every case: no snapshot lacks a pod older
/// than the stale bound, and from the first one with every pod on, all have every pod.
async fn observe_outage(missing_pod_detect_delta: &str, hole: Duration) -> Observed {
    let outage = slow_link_informer(missing_pod_detect_delta, &[]).await;
    let spark = SparkSide::start(outage.informer.clone());
    eventually("a first full snapshot", Duration::from_secs(10), || async {
        (spark.latest() == Some(PODS as usize)).then_some(())
    })
    .await;
    let outage_began = Instant::now();
    let born = outage.run(hole).await;
    let total = (PODS + BORN_IN_OUTAGE) as usize;
    eventually("a full snapshot with every pod", Duration::from_secs(60), || async {
        (spark.latest() == Some(total)).then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let handed = spark.stop();
    let relists = outage.informer.health().relists;
    outage.informer.stop().await;
    let after: Vec<Handed> = handed.into_iter().filter(|h| h.at >= outage_began).collect();
    assert_no_old_pod_missing(&after, &born, outage.stale_bound);
    let first_full = after.iter().position(|h| h.pods.len() == total).unwrap();
    assert!(after[first_full..].iter().all(|h| h.pods.len() == total), "a later snapshot lost pods");
    Observed { after, first_full, relists }
}

/// A streaming list that takes longer than a watch (about `LIST_SECONDS` through the slow link,
/// watches of 3 s) completes as one: the apiserver ends a watch at its `timeoutSeconds`, initial
/// events sent or not, so the streaming request carries the list's bound, not a watch's (with a
/// watch's, `auto` gave up on streaming for good and the first sync took twice as long).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streaming_list_longer_than_a_watch_completes_as_one() {
    let watch = [("spark.kubernetes.native.informer.watchTimeout", "3s")];
    let outage = slow_link_informer("30s", &watch).await;
    // The list's own watch renews at 3 s as usual once the list is done.
    let connects = outage.informer.health().watch_connects;
    eventually("two watch renewals", Duration::from_secs(20), || async {
        (outage.informer.health().watch_connects >= connects + 2).then_some(())
    })
    .await;
    let health = outage.informer.health();
    assert_eq!((health.relists, health.lists, &health.state), (0, 0, &SyncState::Synced), "{health:?}");
    outage.informer.stop().await;
}

/// Defect 1: the outage outlasts the stale bound. The old cache must not serve
/// while the relist runs, and the first snapshot after it has every pod.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_an_outage_longer_than_the_stale_bound_no_snapshot_lacks_a_pod_born_in_it() {
    for run in 1..=runs() {
        // Stale bound 3 s; the hole lasts 8 s; the relist then takes about LIST_SECONDS.
        let seen = observe_outage("6s", Duration::from_secs(8)).await;
        let total = (PODS + BORN_IN_OUTAGE) as usize;
        assert!(!seen.after.iter().any(|h| h.during_relist && h.pods.len() < total), "the old cache served");
        assert!(seen.relists >= 1, "relists {}", seen.relists);
        eprintln!(
            "[outage] run {run}: {} full snapshots after the outage began, {} of them before the relist \
             completed (all with the pre-outage pods), relists {}",
            seen.after.len(),
            seen.first_full,
            seen.relists
        );
    }
}

/// Defect 2: a short outage (within the stale bound) ends in a 410 and a relist
/// that takes seconds, during which the old cache may serve; once it completes,
/// every snapshot has the new pods (an "unchanged" answer never survives a relist).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_relist_during_which_the_old_cache_served_every_snapshot_has_the_new_pods() {
    for run in 1..=runs() {
        // Stale bound 15 s: the old cache may serve through the whole relist.
        let seen = observe_outage("30s", Duration::from_secs(1)).await;
        let during_relist = seen.after.iter().filter(|h| h.during_relist).count();
        assert!(during_relist > 0, "the old cache must have served during the relist (the case this test is for)");
        assert_eq!(seen.relists, 1, "the restart's 410 costs one relist");
        eprintln!(
            "[outage] run {run}: {} full snapshots after the outage began, {} from the old cache \
             ({during_relist} while the relist ran), then {} with every pod",
            seen.after.len(),
            seen.first_full,
            seen.after.len() - seen.first_full
        );
    }
}

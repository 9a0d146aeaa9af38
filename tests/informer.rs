//! The informer and lister against a real control plane: sync, changes in
//! order, restarts, 410, black holes, RBAC, scale, stop.

use crate::support;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams};
use parking_lot::Mutex;
use spark_k8s_native::informer::health::{NotReady, SyncState};
use spark_k8s_native::informer::{ExecutorPodInformer, HealthReport};
use spark_k8s_native::labels::executor_selector;
use spark_k8s_native::pod::{PodChange, SparkState};
use spark_k8s_native::settings::{InitialList, Settings};
use support::kubelet::{self, PodPhase};
use support::{eventually, unique_app_id, Identity, LocalPlane, PlaneOptions, Route};

async fn informer(
    plane: &LocalPlane,
    identity: Identity,
    route: Route,
    app: &str,
    extra: &[(&str, &str)],
) -> Arc<ExecutorPodInformer> {
    let mut conf = plane.spark_conf(identity, route);
    for (k, v) in extra {
        conf.insert(k.to_string(), v.to_string());
    }
    let settings = Settings::from_spark_conf(&conf).unwrap();
    Arc::new(ExecutorPodInformer::connect(&settings, app).await.unwrap())
}

async fn wait_for(
    informer: &ExecutorPodInformer,
    what: &str,
    timeout: Duration,
    ok: impl Fn(&HealthReport) -> bool,
) -> HealthReport {
    eventually(what, timeout, || async {
        let h = informer.health();
        ok(&h).then_some(h)
    })
    .await
}

/// A new app of the plane with executors `0..n` already created, and the admin's pods.
async fn app_with_executors(plane: &LocalPlane, prefix: &str, n: u64) -> (String, Api<Pod>) {
    let app = unique_app_id(prefix);
    let pods = plane.admin_pods();
    kubelet::create_executors(&pods, &app, 0..n, n as usize).await.unwrap();
    (app, pods)
}

/// The driver's informer of an app (restricted identity, direct route, default settings), started
/// and synced.
async fn synced_informer(plane: &LocalPlane, app: &str) -> Arc<ExecutorPodInformer> {
    let informer = informer(plane, Identity::Restricted, Route::Direct, app, &[]).await;
    informer.start().unwrap();
    wait_synced(&informer).await;
    informer
}

async fn wait_synced(informer: &ExecutorPodInformer) -> HealthReport {
    wait_for(informer, "Synced", Duration::from_secs(60), |h| h.state == SyncState::Synced).await
}

/// What a consumer received, per pod: (resourceVersion, phase or "deleted") in order.
#[derive(Default)]
struct Received {
    by_pod: HashMap<String, Vec<(u64, String)>>,
    batches: usize,
}

/// Drains the informer's changes on a thread of its own, as the JVM does.
fn consume(informer: Arc<ExecutorPodInformer>) -> (Arc<Mutex<Received>>, std::thread::JoinHandle<()>) {
    let received = Arc::new(Mutex::new(Received::default()));
    let sink = received.clone();
    let handle = std::thread::spawn(move || {
        while let Ok(batch) = informer.take_changes(256, Duration::from_millis(200)) {
            let mut r = sink.lock();
            if !batch.is_empty() {
                r.batches += 1;
            }
            for change in batch {
                let pod = change.pod().json.decode();
                let rv: u64 = change.pod().resource_version.parse().unwrap();
                let state = match change {
                    PodChange::Deleted(_) => "deleted".to_string(),
                    PodChange::Applied(_) => pod.status.and_then(|s| s.phase).unwrap_or_default(),
                };
                r.by_pod.entry(change.pod().name.clone()).or_default().push((rv, state));
            }
        }
    });
    (received, handle)
}

fn last_state(received: &Mutex<Received>, name: &str) -> Option<String> {
    received.lock().by_pod.get(name).and_then(|v| v.last()).map(|(_, s)| s.clone())
}

/// Every state the consumer received for `name`, in order.
fn states_of(received: &Mutex<Received>, name: &str) -> Vec<String> {
    received.lock().by_pod.get(name).map(|v| v.iter().map(|(_, s)| s.clone()).collect()).unwrap_or_default()
}

async fn apiserver_truth(pods: &Api<Pod>, app: &str) -> HashMap<String, String> {
    let list = pods.list(&ListParams::default().labels(&executor_selector(app))).await.unwrap();
    list.items.into_iter().map(|p| (p.metadata.name.unwrap(), p.metadata.resource_version.unwrap())).collect()
}

fn cache_view(informer: &ExecutorPodInformer) -> HashMap<String, String> {
    // A quiet watch may be between the renewals that prove it: wait for one, as the Java lister does.
    tokio::task::block_in_place(|| informer.await_lister_ready(informer.settings().silence_bound()))
        .expect("lister ready");
    let snapshot = informer.lister_snapshot().expect("lister ready");
    snapshot.pods.iter().map(|p| (p.name.clone(), p.resource_version.clone())).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_change_arrives_in_order_and_the_cache_equals_a_list() {
    let plane = LocalPlane::shared();
    let app = unique_app_id("order");
    let pods = plane.admin_pods();
    // One pod exists before start: the first snapshot, not an event, carries it.
    kubelet::create_executor(&pods, &app, 0).await.unwrap();
    let informer = synced_informer(plane, &app).await;
    assert_eq!(cache_view(&informer).len(), 1);
    let (received, consumer) = consume(informer.clone());

    for id in 1..=5 {
        kubelet::create_executor(&pods, &app, id).await.unwrap();
    }
    for id in 1..=5 {
        let name = kubelet::executor_pod_name(&app, id);
        kubelet::set_phase(&pods, &name, PodPhase::Running).await.unwrap();
        let end = if id % 2 == 0 { PodPhase::Succeeded } else { PodPhase::Failed(id as i32) };
        kubelet::set_phase(&pods, &name, end).await.unwrap();
    }
    kubelet::delete_pod(&pods, &kubelet::executor_pod_name(&app, 5)).await.unwrap();
    // Leaving the selector is a deletion too, as with Spark's own sources.
    kubelet::set_label(&pods, &kubelet::executor_pod_name(&app, 4), "spark-exec-inactive", Some("true")).await.unwrap();

    let name = |id| kubelet::executor_pod_name(&app, id);
    eventually("the last change of every pod", Duration::from_secs(20), || async {
        (last_state(&received, &name(5)).as_deref() == Some("deleted")
            && last_state(&received, &name(4)).as_deref() == Some("deleted")
            && last_state(&received, &name(3)).as_deref() == Some("Failed"))
        .then_some(())
    })
    .await;
    {
        let r = received.lock();
        for id in 1..=5 {
            let seen = &r.by_pod[&name(id)];
            let rvs: Vec<u64> = seen.iter().map(|(rv, _)| *rv).collect();
            assert!(rvs.windows(2).all(|w| w[0] < w[1]), "pod {id}: versions out of order {seen:?}");
            let states: Vec<&str> = seen.iter().map(|(_, s)| s.as_str()).collect();
            let position = |s: &str| states.iter().position(|x| *x == s);
            if let (Some(run), Some(end)) =
                (position("Running"), position(if id % 2 == 0 { "Succeeded" } else { "Failed" }))
            {
                assert!(run < end, "pod {id}: {states:?}");
            }
        }
    }
    assert_eq!(cache_view(&informer), apiserver_truth(&pods, &app).await);
    let health = informer.health();
    assert_eq!(health.relists, 0);
    assert!(health.events_applied >= 15, "{health:?}");
    informer.stop().await;
    consumer.join().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn start_against_a_down_apiserver_returns_at_once_and_syncs_when_it_comes_up() {
    let plane = LocalPlane::start_with(PlaneOptions::default());
    let app = unique_app_id("down");
    plane.stop_apiserver();
    let informer = informer(&plane, Identity::Restricted, Route::Direct, &app, &[]).await;
    let began = Instant::now();
    informer.start().unwrap();
    assert!(began.elapsed() < Duration::from_millis(100), "start blocked for {:?}", began.elapsed());
    let health = wait_for(&informer, "Degraded", Duration::from_secs(20), |h| h.state.name() == "Degraded").await;
    match &health.state {
        SyncState::Degraded { last_error, consecutive_failures, .. } => {
            assert!(last_error.contains("onnect"), "the cause must show: {last_error}");
            assert!(*consecutive_failures >= 1);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(informer.lister_snapshot().unwrap_err(), NotReady::NeverSynced);
    plane.start_apiserver();
    let health = wait_for(&informer, "Synced after the apiserver came up", Duration::from_secs(60), |h| {
        h.state == SyncState::Synced
    })
    .await;
    assert!(health.errors >= 1);
    assert!(informer.lister_snapshot().is_ok());
    informer.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_apiserver_restart_resumes_the_watch_without_relisting() {
    // Served by etcd, a watch resumes from its resourceVersion across a restart.
    let plane = LocalPlane::start_with(PlaneOptions { watch_cache: false, ..Default::default() });
    let app = unique_app_id("restart");
    let informer = synced_informer(&plane, &app).await;
    let (received, consumer) = consume(informer.clone());
    let connects_before = informer.health().watch_connects;
    plane.restart_apiserver();
    let pods = plane.admin_pods();
    kubelet::create_executor(&pods, &app, 1).await.unwrap();
    let name = kubelet::executor_pod_name(&app, 1);
    eventually("the pod created after the restart", Duration::from_secs(30), || async {
        last_state(&received, &name).map(|_| ())
    })
    .await;
    let health = informer.health();
    assert_eq!(health.relists, 0, "{health:?}");
    // The restart broke the watch: it resumed behind a consistent read of one pod (the connection
    // may have reached an apiserver cut from etcd, on an HA plane), one LIST per attempt.
    assert!((1..=health.errors + 1).contains(&health.lists), "only the resume's read LISTs: {health:?}");
    assert!(health.watch_connects > connects_before, "{health:?}");
    informer.stop().await;
    consumer.join().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_watch_cache_an_apiserver_restart_costs_exactly_one_relist() {
    let plane = LocalPlane::start_with(PlaneOptions::default());
    let (app, pods) = app_with_executors(&plane, "restartcache", 3).await;
    let informer = synced_informer(&plane, &app).await;
    plane.restart_apiserver();
    kubelet::create_executor(&pods, &app, 3).await.unwrap();
    eventually("the pod created after the restart in the cache", Duration::from_secs(30), || async {
        (informer.lister_snapshot().map(|s| s.pods.len()).unwrap_or(0) == 4).then_some(())
    })
    .await;
    let health = informer.health();
    assert_eq!(health.relists, 1, "{health:?}");
    assert_eq!(cache_view(&informer), apiserver_truth(&pods, &app).await);
    informer.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forced_410_relists_once_and_the_lister_keeps_serving_meanwhile() {
    let plane = LocalPlane::start_with(PlaneOptions { watch_cache: false, ..Default::default() });
    let (app, pods) = app_with_executors(&plane, "gone", 10).await;
    let informer = informer(&plane, Identity::Restricted, Route::Proxy, &app, &[]).await;
    informer.start().unwrap();
    wait_synced(&informer).await;
    let (received, consumer) = consume(informer.clone());

    // Watch the lister throughout: it must never be unready or lose a pod.
    let watching = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let lister_check = {
        let (informer, watching) = (informer.clone(), watching.clone());
        std::thread::spawn(move || {
            let mut rounds = 0;
            while watching.load(std::sync::atomic::Ordering::Relaxed) {
                let snapshot = informer.lister_snapshot().expect("the lister must keep serving during the relist");
                assert!(snapshot.pods.len() >= 10, "a partial snapshot: {}", snapshot.pods.len());
                rounds += 1;
                std::thread::sleep(Duration::from_millis(5));
            }
            rounds
        })
    };

    // Hold the watch, change pods and compact etcd behind its back, then let it resume from its old version.
    plane.proxy_blackhole(Duration::ZERO);
    kubelet::create_executor(&pods, &app, 10).await.unwrap();
    kubelet::set_phase(&pods, &kubelet::executor_pod_name(&app, 0), PodPhase::Running).await.unwrap();
    kubelet::delete_pod(&pods, &kubelet::executor_pod_name(&app, 1)).await.unwrap();
    plane.compact_etcd();
    plane.proxy_cut();
    plane.proxy_normal();

    eventually("the relist", Duration::from_secs(30), || async { (informer.health().relists == 1).then_some(()) })
        .await;
    eventually("the changes made during the hold", Duration::from_secs(10), || async {
        (last_state(&received, &kubelet::executor_pod_name(&app, 1)).as_deref() == Some("deleted")
            && last_state(&received, &kubelet::executor_pod_name(&app, 0)).as_deref() == Some("Running")
            && last_state(&received, &kubelet::executor_pod_name(&app, 10)).is_some())
        .then_some(())
    })
    .await;
    watching.store(false, std::sync::atomic::Ordering::Relaxed);
    assert!(lister_check.join().expect("lister check") > 10);
    assert_eq!(cache_view(&informer), apiserver_truth(&pods, &app).await);
    // The relist makes up the deletion of the one pod it did not find, and of no live pod: Spark
    // would count a live executor delivered as deleted as lost, even if its next state followed.
    let deleted = kubelet::executor_pod_name(&app, 1);
    for (name, states) in received.lock().by_pod.iter().filter(|(name, _)| **name != deleted) {
        let states: Vec<&str> = states.iter().map(|(_, s)| s.as_str()).collect();
        assert!(!states.contains(&"deleted"), "live pod {name} delivered as deleted: {states:?}");
    }
    let health = informer.health();
    assert_eq!(health.relists, 1, "exactly one relist: {health:?}");
    informer.stop().await;
    consumer.join().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_black_hole_longer_than_the_stale_bound_makes_the_lister_unready_then_recovers_without_loss() {
    let plane = LocalPlane::start_with(PlaneOptions::default());
    let (app, pods) = app_with_executors(&plane, "hole", 3).await;
    // Stale bound 4.5s (half of a 9s missingPodDetectDelta); watches end every 3s (the shortest).
    let informer = informer(
        &plane,
        Identity::Restricted,
        Route::Proxy,
        &app,
        &[
            ("spark.kubernetes.executor.missingPodDetectDelta", "9s"),
            ("spark.kubernetes.executor.listerPollingInterval", "2s"),
        ],
    )
    .await;
    assert_eq!(informer.settings().stale_bound, Duration::from_millis(4500));
    assert_eq!(informer.settings().watch_timeout, Duration::from_secs(3));
    informer.start().unwrap();
    wait_synced(&informer).await;
    let (received, consumer) = consume(informer.clone());

    // A healthy but idle watch stays ready well past the stale bound.
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert!(informer.lister_snapshot().is_ok(), "an idle healthy watch must not look stale: {:?}", informer.health());

    plane.proxy_blackhole(Duration::from_secs(10));
    let held = Instant::now();
    kubelet::create_executor(&pods, &app, 3).await.unwrap();
    kubelet::set_phase(&pods, &kubelet::executor_pod_name(&app, 0), PodPhase::Failed(143)).await.unwrap();
    // A pod created and deleted during the hole: only a watch that resumes shows it to Spark.
    let fleeting = kubelet::executor_pod_name(&app, 4);
    kubelet::create_executor(&pods, &app, 4).await.unwrap();
    kubelet::set_phase(&pods, &fleeting, PodPhase::Failed(1)).await.unwrap();
    kubelet::delete_pod(&pods, &fleeting).await.unwrap();
    // Stale at the bound; then, at the next tick, the informer drops the watch and resumes it
    // after a consistent read.
    let refused = eventually("the lister to refuse a stale cache", Duration::from_secs(10), || async {
        match informer.lister_snapshot() {
            Err(reason @ (NotReady::Stale { .. } | NotReady::Resuming)) => Some(reason),
            _ => None,
        }
    })
    .await;
    assert!(held.elapsed() < Duration::from_secs(7), "stale only after {:?}: {refused}", held.elapsed());
    eventually("the resume that follows a stale spell", Duration::from_secs(5), || async {
        (informer.health().phase == "resuming after a stale spell").then_some(())
    })
    .await;
    assert_eq!(informer.health().state.name(), "Degraded");
    assert_eq!(informer.lister_snapshot().unwrap_err(), NotReady::Resuming, "the old cache never serves again");

    let first_after =
        eventually("ready again after the hole", Duration::from_secs(40), || async { informer.lister_snapshot().ok() })
            .await;
    // Served again only once the watch caught up: with what happened during the hole.
    let created_during_the_hole = kubelet::executor_pod_name(&app, 3);
    assert!(
        first_after.pods.iter().any(|p| p.name == created_during_the_hole),
        "the first snapshot after the hole lacks {created_during_the_hole}"
    );
    let health = informer.health();
    assert_eq!((health.relists, health.resumes), (0, 1), "one resume per stale spell, no relist: {health:?}");
    // Every state of the hole reached the consumer, the fleeting pod's failure among them.
    eventually("no lost change", Duration::from_secs(20), || async {
        (last_state(&received, &kubelet::executor_pod_name(&app, 0)).as_deref() == Some("Failed")
            && last_state(&received, &kubelet::executor_pod_name(&app, 3)).is_some()
            && last_state(&received, &fleeting).as_deref() == Some("deleted"))
        .then_some(())
    })
    .await;
    assert!(
        states_of(&received, &fleeting).iter().any(|s| s == "Failed"),
        "the failure of a pod created and deleted during the hole was lost: {:?}",
        states_of(&received, &fleeting)
    );
    assert_eq!(cache_view(&informer), apiserver_truth(&pods, &app).await);
    assert_eq!(informer.health().state, SyncState::Synced);
    informer.stop().await;
    consumer.join().unwrap();
}

/// Watches longer than the stale bound (the default: one per lister round) on the apiserver:
/// a quiet watch proves the cache only at its renewals, the lister waits for one and snapshots
/// right after it, and the informer stays healthy with one WATCH per watch timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quiet_watch_longer_than_the_stale_bound_proves_the_cache_at_each_renewal() {
    let plane = LocalPlane::shared();
    let (app, pods) = app_with_executors(plane, "proof", 3).await;
    // Stale bound 5 s, watches of 6 s (the lister's interval): silence bound 7.67 s. A renewal
    // must come within the silence bound or the informer degrades, as it must; the 1.67 s between
    // a watch's end and that bound is what a renewal may take on 2 cores shared with other tests'
    // planes (with 0.67 s, stale bound 2 s and watches of 5 s, one took 6.1 s).
    let informer = informer(
        plane,
        Identity::Restricted,
        Route::Direct,
        &app,
        &[
            ("spark.kubernetes.executor.missingPodDetectDelta", "10s"),
            ("spark.kubernetes.executor.listerPollingInterval", "6s"),
        ],
    )
    .await;
    let settings = informer.settings().clone();
    assert_eq!((settings.stale_bound, settings.watch_timeout), (Duration::from_secs(5), Duration::from_secs(6)));
    informer.start().unwrap();
    wait_synced(&informer).await;
    let began = Instant::now();
    let watches_before = informer.health().watch_connects;

    let (mut awaiting, mut ready) = (0, 0);
    while began.elapsed() < Duration::from_secs(20) {
        match informer.lister_snapshot() {
            Ok(snapshot) => {
                assert_eq!(snapshot.pods.len(), 3);
                ready += 1;
            }
            Err(NotReady::AwaitingProof { proven_ago }) => {
                assert!(proven_ago <= settings.silence_bound(), "{proven_ago:?}");
                awaiting += 1;
                // As the Java lister does: wait for the next proof, then snapshot right after it.
                let waited = Instant::now();
                tokio::task::block_in_place(|| informer.await_lister_ready(Duration::from_secs(10)))
                    .expect("the renewal proves the cache");
                // At most one watch: the renewal proves the cache. The margin is the apiserver's
                // answer and this process's scheduling with other tests' planes on the same cores.
                assert!(waited.elapsed() < settings.watch_timeout + Duration::from_secs(2), "{:?}", waited.elapsed());
                let proven = informer.health().last_activity.unwrap().elapsed().unwrap();
                assert!(proven < Duration::from_secs(1), "the snapshot follows the proof: {proven:?}");
                assert_eq!(informer.lister_snapshot().expect("right after the renewal").pods.len(), 3);
            }
            Err(other) => panic!("a healthy quiet watch is never {other:?}: {:?}", informer.health()),
        }
        assert_eq!(informer.health().state, SyncState::Synced, "a quiet watch is healthy");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(awaiting > 0 && ready > 0, "awaiting {awaiting}, ready {ready}");
    let health = informer.health();
    let watches = health.watch_connects - watches_before;
    assert!((3..=5).contains(&watches), "one WATCH per 6 s watch in 20 s, not {watches}: {health:?}");
    assert_eq!(health.relists, 0);
    // A change still reaches the cache at once.
    kubelet::set_phase(&pods, &kubelet::executor_pod_name(&app, 1), PodPhase::Failed(143)).await.unwrap();
    eventually("the change", Duration::from_secs(5), || async {
        (cache_view(&informer) == apiserver_truth(&pods, &app).await).then_some(())
    })
    .await;
    informer.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_restricted_identity_works_in_its_namespace_and_a_forbidden_one_shows_403() {
    let plane = LocalPlane::shared();
    let app = unique_app_id("rbac");
    for identity in [Identity::Restricted, Identity::RestrictedClientCert] {
        let informer = informer(plane, identity, Route::Direct, &app, &[]).await;
        informer.start().unwrap();
        wait_synced(&informer).await;
        informer.stop().await;
    }
    let forbidden = plane.var("LOCALPLANE_FORBIDDEN_NAMESPACE");
    let informer =
        informer(plane, Identity::Restricted, Route::Direct, &app, &[("spark.kubernetes.namespace", forbidden)]).await;
    informer.start().unwrap();
    let health =
        wait_for(&informer, "Degraded with the cause", Duration::from_secs(20), |h| h.state.name() == "Degraded").await;
    let SyncState::Degraded { last_error, .. } = &health.state else { unreachable!() };
    assert!(last_error.contains("403") || last_error.contains("forbidden"), "{last_error}");
    assert_eq!(informer.lister_snapshot().unwrap_err(), NotReady::NeverSynced);
    informer.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_is_bounded_while_syncing_while_degraded_and_twice() {
    let plane = LocalPlane::shared();
    // Degraded: nothing listens on this port.
    let mut conf = plane.spark_conf(Identity::Restricted, Route::Direct);
    conf.insert("spark.master".into(), "k8s://https://127.0.0.1:1".into());
    let degraded =
        Arc::new(ExecutorPodInformer::connect(&Settings::from_spark_conf(&conf).unwrap(), "spark-stop").await.unwrap());
    degraded.start().unwrap();
    wait_for(&degraded, "Degraded", Duration::from_secs(10), |h| h.state.name() == "Degraded").await;
    // A consumer blocked in take_changes wakes on stop.
    let blocked = {
        let degraded = degraded.clone();
        std::thread::spawn(move || degraded.take_changes(1, Duration::from_secs(60)).is_err())
    };
    let began = Instant::now();
    degraded.stop().await;
    degraded.stop().await;
    assert!(began.elapsed() < Duration::from_secs(6), "{:?}", began.elapsed());
    assert!(blocked.join().unwrap(), "take_changes must fail once stopped");
    assert_eq!(degraded.health().state, SyncState::Stopped);
    assert!(degraded.start().is_err(), "a stopped informer does not start again");

    // Stopped right after start, while syncing.
    let app = unique_app_id("stop");
    let syncing = informer(plane, Identity::Restricted, Route::Direct, &app, &[]).await;
    syncing.start().unwrap();
    assert!(syncing.start().is_err(), "a second start is an error");
    let began = Instant::now();
    syncing.stop().await;
    assert!(began.elapsed() < Duration::from_secs(6));
}

#[test]
fn stop_leaves_no_task_behind() {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let plane = LocalPlane::shared();
    let app = unique_app_id("tasks");
    runtime.block_on(async {
        let baseline = tokio::runtime::Handle::current().metrics().num_alive_tasks();
        let informer = synced_informer(plane, &app).await;
        assert!(tokio::runtime::Handle::current().metrics().num_alive_tasks() > baseline);
        informer.stop().await;
        drop(informer);
        eventually("every task of the informer and its client to end", Duration::from_secs(10), || async {
            (tokio::runtime::Handle::current().metrics().num_alive_tasks() == baseline).then_some(())
        })
        .await;
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_consumer_still_sees_every_failure_before_its_deletion() {
    // Spark counts an executor failure and logs its exit code from PodFailed only: a
    // consumer that falls behind must not get Failed-then-deleted as a bare deletion.
    let plane = LocalPlane::shared();
    let app = unique_app_id("stall");
    let pods = plane.admin_pods();
    let informer = synced_informer(plane, &app).await;
    kubelet::create_executors(&pods, &app, 0..4, 4).await.unwrap();
    // Executor 4 is deleted as Spark deletes a running executor: on a node, so the deletion is
    // graceful and the pod stays, Running with a deletionTimestamp, until its kubelet reports the
    // container's exit (137: still Running, PodFailed to Spark), then phase Failed (PodDeleted to
    // Spark: deleted outside Running), then removes it.
    let mut scheduled = kubelet::executor_pod(&app, 4);
    scheduled.spec.as_mut().unwrap().node_name = Some("node-of-a-stalled-consumer".into());
    pods.create(&Default::default(), &scheduled).await.unwrap();
    // The consumer stalls while each pod runs, fails (or succeeds) and is deleted.
    for id in 0..4 {
        let name = kubelet::executor_pod_name(&app, id);
        kubelet::set_phase(&pods, &name, PodPhase::Running).await.unwrap();
        let end = if id == 3 { PodPhase::Succeeded } else { PodPhase::Failed(137) };
        kubelet::set_phase(&pods, &name, end).await.unwrap();
        kubelet::delete_pod(&pods, &name).await.unwrap();
    }
    let deleted_while_running = kubelet::executor_pod_name(&app, 4);
    kubelet::set_phase(&pods, &deleted_while_running, PodPhase::Running).await.unwrap();
    pods.delete(&deleted_while_running, &kube::api::DeleteParams::default().grace_period(30)).await.unwrap();
    kubelet::set_phase(&pods, &deleted_while_running, PodPhase::RunningExited(137)).await.unwrap();
    kubelet::set_phase(&pods, &deleted_while_running, PodPhase::Failed(137)).await.unwrap();
    kubelet::delete_pod(&pods, &deleted_while_running).await.unwrap();
    // Four events for each of the first four, six for the fifth (its deletion is one).
    let removed = |h: &HealthReport| h.events_applied >= 22 && h.cache_size == 0;
    wait_for(&informer, "every event applied", Duration::from_secs(20), removed).await;
    let mut seen: HashMap<String, Vec<SparkState>> = HashMap::new();
    while let Ok(batch) = informer.take_changes(100, Duration::from_millis(500)) {
        if batch.is_empty() {
            break;
        }
        for change in batch {
            seen.entry(change.pod().name.clone()).or_default().push(change.pod().spark_state);
        }
    }
    // What Spark's lifecycle manager acts on, each once per run: from Spark's own watch, which
    // hands every event to the store, these are the end state and then the deletion.
    let acted_on = |states: &[SparkState]| {
        let mut acted: Vec<SparkState> = states.iter().copied().filter(|s| s.acted_on()).collect();
        acted.dedup();
        acted
    };
    for id in 0..5 {
        let end = if id == 3 { SparkState::Succeeded } else { SparkState::Failed };
        let states = &seen[&kubelet::executor_pod_name(&app, id)];
        assert_eq!(acted_on(states), [end, SparkState::Deleted], "executor {id}: {states:?}");
    }
    assert!(informer.health().coalesced_changes > 0, "the consumer did fall behind");
    informer.stop().await;
}

/// The second difference the differential harness found (docs/reliability.md): while Spark's store
/// was slow to take changes, a full snapshot from the cache, which already lacked a deleted pod,
/// reached Spark before that pod's queued `PodFailed`, and Spark removed the executor as missing
/// (exit code -1). A full snapshot now waits until the consumer has handed on every change it shows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_snapshot_never_overtakes_a_change_the_consumer_has_not_handed_on() {
    let plane = LocalPlane::shared();
    let app = unique_app_id("overtake");
    let pods = plane.admin_pods();
    let informer = synced_informer(plane, &app).await;
    kubelet::create_executors(&pods, &app, 0..3, 3).await.unwrap();
    wait_for(&informer, "three pods", Duration::from_secs(20), |h| h.cache_size == 3).await;
    let take_all = || {
        let mut taken = Vec::new();
        while let Ok(batch) = informer.take_changes(100, Duration::from_millis(300)) {
            if batch.is_empty() {
                break;
            }
            taken.extend(batch);
        }
        taken
    };
    // The consumer takes everything, hands it on (it came back and found nothing), then stalls.
    let taken = tokio::task::block_in_place(take_all);
    assert!(taken.len() >= 3, "{taken:?}");
    let victim = kubelet::executor_pod_name(&app, 0);
    kubelet::set_phase(&pods, &victim, PodPhase::Failed(137)).await.unwrap();
    kubelet::delete_pod(&pods, &victim).await.unwrap();
    wait_for(&informer, "the victim gone from the cache", Duration::from_secs(20), |h| h.cache_size == 2).await;
    let stalled = tokio::task::block_in_place(|| informer.lister_snapshot()).map(|s| s.pods.len());
    assert_eq!(stalled, Err(NotReady::Undelivered { changes: 2 }), "the victim's PodFailed and deletion wait");
    // The consumer hands on the victim's failure, then its deletion, and comes back.
    let states: Vec<SparkState> = tokio::task::block_in_place(take_all).iter().map(|c| c.pod().spark_state).collect();
    assert_eq!(states, [SparkState::Failed, SparkState::Deleted]);
    let after = tokio::task::block_in_place(|| informer.lister_snapshot()).expect("handed on: ready");
    assert_eq!(after.pods.len(), 2);
    informer.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resync_replays_nothing_for_unchanged_pods() {
    let plane = LocalPlane::shared();
    let app = unique_app_id("resync");
    let pods = plane.admin_pods();
    let informer = informer(
        plane,
        Identity::Restricted,
        Route::Direct,
        &app,
        &[("spark.kubernetes.executor.informerResyncInterval", "300ms")],
    )
    .await;
    informer.start().unwrap();
    wait_synced(&informer).await;
    kubelet::create_executors(&pods, &app, 0..5, 5).await.unwrap();
    let mut delivered = 0;
    while delivered < 5 {
        delivered += informer.take_changes(100, Duration::from_secs(5)).unwrap().len();
    }
    // Several resync rounds pass: nothing changed, so nothing is replayed.
    let replayed = informer.take_changes(100, Duration::from_millis(1500)).unwrap();
    assert!(replayed.is_empty(), "{} unchanged pods replayed", replayed.len());
    informer.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_initial_list_strategy_syncs_and_auto_falls_back_without_watchlist() {
    let plane = LocalPlane::start_with(PlaneOptions {
        apiserver_args: vec!["--feature-gates=WatchList=false".into()],
        ..Default::default()
    });
    let (app, _) = app_with_executors(&plane, "lists", 7).await;
    for (mode, expected) in [
        ("watchCache", InitialList::WatchCache),
        ("consistent", InitialList::Consistent),
        ("auto", InitialList::WatchCache),
    ] {
        let informer = informer(
            &plane,
            Identity::Restricted,
            Route::Direct,
            &app,
            &[
                ("spark.kubernetes.native.informer.initialList", mode),
                ("spark.kubernetes.native.informer.pageSize", "3"),
            ],
        )
        .await;
        informer.start().unwrap();
        let health = wait_synced(&informer).await;
        assert_eq!(health.initial_list, expected, "{mode}");
        assert_eq!(cache_view(&informer).len(), 7, "{mode}");
        if mode == "consistent" {
            assert_eq!(health.lists, 3, "7 pods in pages of 3");
        }
        informer.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streaming_lists_sync_where_the_server_supports_them() {
    let plane = LocalPlane::shared();
    let (app, _) = app_with_executors(plane, "stream", 4).await;
    let informer = informer(plane, Identity::Restricted, Route::Direct, &app, &[]).await;
    informer.start().unwrap();
    let health = wait_synced(&informer).await;
    assert_eq!(health.initial_list, InitialList::Auto);
    assert_eq!(health.lists, 0, "a streaming list sends no LIST");
    assert_eq!(cache_view(&informer).len(), 4);
    informer.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_thousand_pods_sync_and_memory_per_pod_is_reported() {
    let plane = LocalPlane::start_with(PlaneOptions::default());
    let app = unique_app_id("scale");
    let pods = plane.admin_pods();
    let began = Instant::now();
    kubelet::create_executors(&pods, &app, 0..5000, 64).await.unwrap();
    eprintln!("created 5000 pods in {:.1}s", began.elapsed().as_secs_f64());
    let informer = informer(&plane, Identity::Restricted, Route::Direct, &app, &[]).await;
    let began = Instant::now();
    informer.start().unwrap();
    let health = wait_synced(&informer).await;
    let synced_in = began.elapsed();
    assert_eq!(health.cache_size, 5000);
    eprintln!(
        "synced 5000 pods in {:.0} ms; cache: {} bytes of JSON, {} bytes per pod",
        synced_in.as_secs_f64() * 1e3,
        health.cache_json_bytes,
        health.cache_json_bytes / 5000
    );
    assert!(health.cache_json_bytes / 5000 < 4096, "{health:?}");
    informer.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_ca_is_a_clear_error_and_trust_certificates_is_the_only_way_around() {
    let plane = LocalPlane::shared();
    let app = unique_app_id("tls");
    // A certificate the plane's CA signed is not the CA: the apiserver's chain does not verify.
    let wrong_ca = plane.var("LOCALPLANE_CLIENT_CERT_FILE").to_string();
    let refusing = informer(
        plane,
        Identity::Restricted,
        Route::Direct,
        &app,
        &[("spark.kubernetes.authenticate.caCertFile", &wrong_ca)],
    )
    .await;
    refusing.start().unwrap();
    let health = wait_for(&refusing, "Degraded", Duration::from_secs(20), |h| h.state.name() == "Degraded").await;
    let SyncState::Degraded { last_error, .. } = &health.state else { unreachable!() };
    assert!(last_error.to_lowercase().contains("certificate"), "the cause must name the certificate: {last_error}");
    assert_eq!(refusing.lister_snapshot().unwrap_err(), NotReady::NeverSynced);
    refusing.stop().await;

    let trust = [
        ("spark.kubernetes.authenticate.caCertFile", wrong_ca.as_str()),
        ("spark.kubernetes.trust.certificates", "true"),
    ];
    let trusting = informer(plane, Identity::Restricted, Route::Direct, &app, &trust).await;
    trusting.start().unwrap();
    wait_synced(&trusting).await;
    trusting.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rewritten_token_file_is_picked_up_without_a_restart() {
    let plane = LocalPlane::shared();
    let app = unique_app_id("rotate");
    // The token file the driver reads; rotated below to the pods-only identity's token.
    let token_file = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{app}.token"));
    std::fs::copy(plane.var("LOCALPLANE_RESTRICTED_TOKEN_FILE"), &token_file).unwrap();
    let informer = informer(
        plane,
        Identity::Restricted,
        Route::Direct,
        &app,
        &[("spark.kubernetes.authenticate.oauthTokenFile", token_file.to_str().unwrap())],
    )
    .await;
    informer.start().unwrap();
    wait_synced(&informer).await;
    let users_of_app = || {
        std::fs::read_to_string(plane.var("LOCALPLANE_AUDIT_LOG"))
            .unwrap()
            .lines()
            .filter(|l| l.contains(&app))
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter_map(|e| e["user"]["username"].as_str().map(str::to_string))
            .collect::<std::collections::HashSet<String>>()
    };
    assert!(users_of_app().contains("spark-driver"));
    // Atomically, as the kubelet swaps a projected token: a copy over the file could be read
    // half written, and the request that read it refused (a run here once saw Degraded just after).
    let rotated = token_file.with_extension("rotated");
    std::fs::copy(plane.var("LOCALPLANE_PODS_ONLY_TOKEN_FILE"), &rotated).unwrap();
    std::fs::rename(&rotated, &token_file).unwrap();
    // kube re-reads a token file at least once a minute; watches reconnect every 10 s.
    eventually("requests with the rotated token", Duration::from_secs(120), || async {
        users_of_app().contains("spark-driver-pods-only").then_some(())
    })
    .await;
    assert_eq!(informer.health().state, SyncState::Synced);
    informer.stop().await;
}

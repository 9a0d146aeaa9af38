//! Proves the local control plane is a real Kubernetes: watches, RBAC, 410
//! after compaction, persistence across apiserver restarts, the garbage
//! collector, and the proxy's faults.

use crate::support;

use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{Pod, Service};
use kube::api::{Api, ListParams, PostParams, WatchEvent, WatchParams};
use serde_json::json;
use support::kubelet::{self, PodPhase};
use support::{eventually, unique_app_id, Identity, LocalPlane, PlaneOptions, Route};

fn phase(pod: &Pod) -> Option<String> {
    pod.status.as_ref().and_then(|s| s.phase.clone())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_sees_every_change_of_a_pod_the_test_kubelet_drives() {
    let plane = LocalPlane::shared();
    let pods = plane.admin_pods();
    let app = unique_app_id("watch");
    let name = kubelet::executor_pod_name(&app, 1);
    let list = pods.list(&ListParams::default().labels(&format!("spark-app-selector={app}"))).await.unwrap();
    let rv = list.metadata.resource_version.unwrap();
    let params = WatchParams::default().labels(&format!("spark-app-selector={app}")).timeout(30);
    let mut stream = pods.watch(&params, &rv).await.unwrap().boxed();

    kubelet::create_executor(&pods, &app, 1).await.unwrap();
    for p in [PodPhase::Pending, PodPhase::Running, PodPhase::Failed(137)] {
        kubelet::set_phase(&pods, &name, p).await.unwrap();
    }
    kubelet::delete_pod(&pods, &name).await.unwrap();

    let mut seen: Vec<String> = Vec::new();
    loop {
        let step = match stream.try_next().await.unwrap().expect("watch ended early") {
            WatchEvent::Added(p) => format!("added:{}", phase(&p).unwrap_or_default()),
            WatchEvent::Modified(p) => format!("modified:{}", phase(&p).unwrap()),
            WatchEvent::Deleted(_) => "deleted".into(),
            WatchEvent::Bookmark(_) => continue,
            WatchEvent::Error(e) => panic!("watch error {e:?}"),
        };
        let done = step == "deleted";
        // Deleting sets deletionTimestamp first (one more "modified"): keep changes of phase.
        if seen.last() != Some(&step) {
            seen.push(step);
        }
        if done {
            break;
        }
    }
    // The apiserver defaults a new pod's phase to Pending.
    assert_eq!(seen, ["added:Pending", "modified:Pending", "modified:Running", "modified:Failed", "deleted"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restricted_identity_is_forbidden_outside_its_namespace() {
    let plane = LocalPlane::shared();
    let forbidden = plane.var("LOCALPLANE_FORBIDDEN_NAMESPACE");
    for identity in [Identity::Restricted, Identity::RestrictedClientCert] {
        let client = plane.client(identity, Route::Direct);
        let own: Api<Pod> = Api::namespaced(client.clone(), plane.namespace());
        own.list(&ListParams::default()).await.unwrap_or_else(|e| panic!("{identity:?} in its namespace: {e}"));
        let other: Api<Pod> = Api::namespaced(client, forbidden);
        match other.list(&ListParams::default()).await {
            Err(kube::Error::Api(status)) => {
                assert_eq!(status.code, 403, "{identity:?}: {status:?}")
            }
            other => {
                panic!("{identity:?} listing pods in {forbidden}: expected 403, got {other:?}")
            }
        }
    }
    let admin: Api<Pod> = Api::namespaced(plane.admin(), forbidden);
    admin.list(&ListParams::default()).await.expect("admin lists everywhere");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_from_a_compacted_resource_version_gets_410() {
    // Without the watch cache, watches are served by etcd, whose compaction is what 410 means.
    let plane = LocalPlane::start_with(PlaneOptions { watch_cache: false, ..Default::default() });
    let pods = plane.admin_pods();
    let app = unique_app_id("gone");
    let created = kubelet::create_executor(&pods, &app, 1).await.unwrap();
    let old_rv = created.metadata.resource_version.unwrap();
    for p in [PodPhase::Running, PodPhase::Succeeded] {
        kubelet::set_phase(&pods, &created.metadata.name.clone().unwrap(), p).await.unwrap();
    }
    plane.compact_etcd();

    let params = WatchParams::default().timeout(10);
    let outcome = match pods.watch(&params, &old_rv).await {
        Err(kube::Error::Api(status)) => status.code,
        Ok(stream) => match stream.boxed().try_next().await.unwrap() {
            Some(WatchEvent::Error(status)) => status.code,
            other => panic!("expected a 410 error event, got {other:?}"),
        },
        Err(e) => panic!("{e}"),
    };
    assert_eq!(outcome, 410);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pods_survive_an_apiserver_restart() {
    let plane = LocalPlane::start_with(PlaneOptions::default());
    let app = unique_app_id("restart");
    {
        let pods = plane.admin_pods();
        kubelet::create_executors(&pods, &app, 1..6, 5).await.unwrap();
    }
    plane.restart_apiserver();
    let pods = plane.admin_pods();
    let list = pods.list(&ListParams::default().labels(&format!("spark-app-selector={app}"))).await.unwrap();
    assert_eq!(list.items.len(), 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_collector_deletes_a_service_owned_by_a_deleted_pod() {
    let plane = LocalPlane::shared();
    let client = plane.admin();
    let pods: Api<Pod> = Api::namespaced(client.clone(), plane.namespace());
    let services: Api<Service> = Api::namespaced(client, plane.namespace());
    let app = unique_app_id("gc");
    let owner = kubelet::create_executor(&pods, &app, 0).await.unwrap();
    let svc_name = format!("svc-{app}");
    let service: Service = serde_json::from_value(json!({
        "metadata": {
            "name": svc_name,
            "ownerReferences": [{
                "apiVersion": "v1", "kind": "Pod", "controller": true,
                "name": owner.metadata.name, "uid": owner.metadata.uid,
            }],
        },
        "spec": {"selector": {"spark-app-selector": app}, "ports": [{"name": "p", "port": 7079}]},
    }))
    .unwrap();
    services.create(&PostParams::default(), &service).await.unwrap();
    kubelet::delete_pod(&pods, owner.metadata.name.as_deref().unwrap()).await.unwrap();
    eventually("the garbage collector to delete the owned Service", Duration::from_secs(60), || async {
        services.get_opt(&svc_name).await.unwrap().is_none().then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proxy_injects_429_black_hole_and_cut() {
    let plane = LocalPlane::start_with(PlaneOptions::default());
    let mut config = plane.config(Identity::Restricted, Route::Proxy);
    config.read_timeout = Some(Duration::from_secs(2));
    // kube retries 429 by itself (honouring Retry-After); this test wants to see it.
    config.default_retry = false;
    let pods: Api<Pod> = Api::namespaced(kube::Client::try_from(config).unwrap(), plane.namespace());
    pods.list(&ListParams::default()).await.expect("through the proxy");

    plane.proxy_throttle(Duration::from_secs(30));
    match pods.list(&ListParams::default()).await {
        Err(kube::Error::Api(status)) => assert_eq!(status.code, 429),
        other => panic!("expected 429, got {other:?}; proxy: {}", plane.control("GET", "/proxy/stats")),
    }
    plane.proxy_normal();

    plane.proxy_blackhole(Duration::ZERO);
    let held = tokio::time::timeout(Duration::from_secs(5), pods.list(&ListParams::default())).await;
    assert!(!matches!(held, Ok(Ok(_))), "a black-holed request must not succeed: {held:?}");
    plane.proxy_normal();
    pods.list(&ListParams::default()).await.expect("after the black hole");

    let mut stream = pods.watch(&WatchParams::default().timeout(60), "0").await.unwrap().boxed();
    plane.proxy_cut();
    let ended = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            match stream.next().await {
                None | Some(Err(_)) => return,
                Some(Ok(_)) => {}
            }
        }
    })
    .await;
    assert!(ended.is_ok(), "a cut must end the open watch");
}

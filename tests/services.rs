//! Executor Services (SPARK-52505) against a real control plane, with the
//! controller-manager's garbage collector.

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Pod, Service};
use kube::api::{Api, ListParams, PostParams};
use serde_json::json;
use spark_k8s_native::driver::ExecutorTracking;
use spark_k8s_native::informer::health::SyncState;
use spark_k8s_native::informer::ExecutorPodInformer;
use spark_k8s_native::services::{self, Ensured, ExecutorServices, ServiceController};
use spark_k8s_native::settings::Settings;
use support::kubelet;
use support::{eventually, unique_app_id, Identity, LocalPlane, PlaneOptions, Route};

const PORT: u16 = 7079;

async fn create_driver(pods: &Api<Pod>, app: &str) -> Pod {
    let driver: Pod = serde_json::from_value(json!({
        "metadata": {"name": format!("{app}-driver"), "labels": {"spark-app-selector": app, "spark-role": "driver"}},
        "spec": {"automountServiceAccountToken": false, "containers": [{"name": "spark-kubernetes-driver", "image": "spark:4.0.0"}]},
    }))
    .unwrap();
    pods.create(&PostParams::default(), &driver).await.unwrap()
}

/// The informer with the Service controller subscribed to it, as the driver runs them.
async fn informer(
    plane: &LocalPlane,
    identity: Identity,
    app: &str,
    extra: &[(&str, &str)],
) -> (Arc<ExecutorPodInformer>, Arc<ServiceController>) {
    let mut conf = plane.spark_conf(identity, Route::Direct);
    conf.insert("spark.kubernetes.executor.enableService".into(), "true".into());
    conf.insert("spark.blockManager.port".into(), PORT.to_string());
    conf.insert("spark.kubernetes.driver.pod.name".into(), format!("{app}-driver"));
    for (k, v) in extra {
        conf.insert(k.to_string(), v.to_string());
    }
    let tracking = ExecutorTracking::connect(&Settings::from_spark_conf(&conf).unwrap(), app).await.unwrap();
    (Arc::new(tracking.informer), tracking.services.expect("Services are on"))
}

async fn app_services(services: &Api<Service>, app: &str) -> Vec<Service> {
    let selector = format!("spark-app-selector={app},spark-role=executor-service");
    services.list(&ListParams::default().labels(&selector)).await.unwrap().items
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_executor_pod_gets_its_service_owned_by_the_driver() {
    let plane = LocalPlane::shared();
    let app = unique_app_id("svc");
    let pods: Api<Pod> = Api::namespaced(plane.admin(), plane.namespace());
    let svcs: Api<Service> = Api::namespaced(plane.admin(), plane.namespace());
    let driver = create_driver(&pods, &app).await;
    kubelet::create_executor(&pods, &app, 1).await.unwrap(); // before start: ensured at the first sync
    let (informer, services) = informer(plane, Identity::Restricted, &app, &[]).await;
    informer.start().unwrap();
    let mut lags = Vec::new();
    for id in 2..=6 {
        kubelet::create_executor(&pods, &app, id).await.unwrap();
        let created = Instant::now();
        let name = services::service_name(&app, &id.to_string());
        eventually("the executor's Service", Duration::from_secs(20), || async {
            svcs.get_opt(&name).await.unwrap().map(|_| ())
        })
        .await;
        lags.push(created.elapsed());
    }
    lags.sort();
    eprintln!("pod created -> Service visible: p50 {:?}, max {:?}", lags[lags.len() / 2], lags.last().unwrap());
    eventually("6 Services", Duration::from_secs(20), || async {
        (app_services(&svcs, &app).await.len() == 6).then_some(())
    })
    .await;
    for svc in app_services(&svcs, &app).await {
        let owner = &svc.metadata.owner_references.as_ref().unwrap()[0];
        assert_eq!((owner.kind.as_str(), owner.uid.as_str()), ("Pod", driver.metadata.uid.as_deref().unwrap()));
        let spec = svc.spec.unwrap();
        let exec = svc.metadata.labels.as_ref().unwrap()["spark-exec-id"].clone();
        assert_eq!(spec.selector.unwrap()["spark-exec-id"], exec);
        let port = &spec.ports.unwrap()[0];
        assert_eq!((port.name.as_deref(), port.port), (Some("spark-block-manager"), PORT as i32));
    }
    let health = services.health();
    assert_eq!((health.created, health.errors), (6, 0), "{health:?}");

    // The driver pod goes: the garbage collector removes every Service of the app.
    informer.stop().await;
    kubelet::delete_pod(&pods, &format!("{app}-driver")).await.unwrap();
    eventually("the garbage collector to delete the app's Services", Duration::from_secs(60), || async {
        app_services(&svcs, &app).await.is_empty().then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ensure_is_idempotent_and_repairs_a_service_edited_by_hand() {
    let plane = LocalPlane::shared();
    let app = unique_app_id("ensure");
    let pods: Api<Pod> = Api::namespaced(plane.admin(), plane.namespace());
    let svcs: Api<Service> = Api::namespaced(plane.admin(), plane.namespace());
    create_driver(&pods, &app).await;
    let executor_services = ExecutorServices::new(
        plane.client(Identity::Restricted, Route::Direct),
        plane.namespace(),
        &app,
        &format!("{app}-driver"),
        PORT,
        4,
    );
    assert_eq!(executor_services.ensure("1").await.unwrap(), Ensured::Created);
    assert_eq!(executor_services.ensure("1").await.unwrap(), Ensured::Unchanged);
    assert_eq!(app_services(&svcs, &app).await.len(), 1);

    let name = services::service_name(&app, "1");
    let mut edited = svcs.get(&name).await.unwrap();
    edited.spec.as_mut().unwrap().ports.as_mut().unwrap()[0].port = 9999;
    svcs.replace(&name, &PostParams::default(), &edited).await.unwrap();
    assert_eq!(executor_services.ensure("1").await.unwrap(), Ensured::Repaired);
    let repaired = svcs.get(&name).await.unwrap();
    assert_eq!(repaired.spec.unwrap().ports.unwrap()[0].port, PORT as i32);
    assert_eq!(app_services(&svcs, &app).await.len(), 1);

    executor_services.delete("1").await.unwrap();
    executor_services.delete("1").await.unwrap(); // already gone: fine
    assert!(app_services(&svcs, &app).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_300_executors_gets_300_services_within_the_request_bound() {
    let plane = LocalPlane::start_with(PlaneOptions::default());
    let app = unique_app_id("burst");
    let pods: Api<Pod> = Api::namespaced(plane.admin(), plane.namespace());
    let svcs: Api<Service> = Api::namespaced(plane.admin(), plane.namespace());
    create_driver(&pods, &app).await;
    let (informer, services) =
        informer(&plane, Identity::Restricted, &app, &[("spark.kubernetes.native.service.maxConcurrentRequests", "8")])
            .await;
    informer.start().unwrap();
    let began = Instant::now();
    kubelet::create_executors(&pods, &app, 1..301, 32).await.unwrap();
    eventually("300 Services", Duration::from_secs(120), || async {
        (app_services(&svcs, &app).await.len() == 300).then_some(())
    })
    .await;
    let health = services.health();
    eprintln!(
        "300 executors -> 300 Services in {:.1}s; peak requests in flight {}",
        began.elapsed().as_secs_f64(),
        health.peak_in_flight
    );
    assert_eq!(health.created, 300, "{health:?}");
    assert!(health.peak_in_flight <= 8, "{health:?}");
    informer.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_cool_down_a_service_goes_after_its_pod_and_without_one_it_stays() {
    let plane = LocalPlane::shared();
    let pods: Api<Pod> = Api::namespaced(plane.admin(), plane.namespace());
    let svcs: Api<Service> = Api::namespaced(plane.admin(), plane.namespace());
    for (delete_after, kept) in [("2s", false), ("0s", true)] {
        let app = unique_app_id("cool");
        create_driver(&pods, &app).await;
        let (informer, _services) = informer(
            plane,
            Identity::Restricted,
            &app,
            &[("spark.kubernetes.native.service.deleteAfter", delete_after)],
        )
        .await;
        informer.start().unwrap();
        kubelet::create_executor(&pods, &app, 1).await.unwrap();
        let name = services::service_name(&app, "1");
        eventually("the Service", Duration::from_secs(20), || async { svcs.get_opt(&name).await.unwrap().map(|_| ()) })
            .await;
        kubelet::delete_pod(&pods, &kubelet::executor_pod_name(&app, 1)).await.unwrap();
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert!(svcs.get_opt(&name).await.unwrap().is_some(), "{delete_after}: not before the cool-down");
        if kept {
            tokio::time::sleep(Duration::from_secs(4)).await;
            assert!(
                svcs.get_opt(&name).await.unwrap().is_some(),
                "without a cool-down the Service lives with the driver"
            );
        } else {
            eventually("the Service to go after the cool-down", Duration::from_secs(15), || async {
                svcs.get_opt(&name).await.unwrap().is_none().then_some(())
            })
            .await;
        }
        informer.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_rights_on_services_the_error_shows_and_the_informer_keeps_working() {
    let plane = LocalPlane::shared();
    let app = unique_app_id("nosvc");
    let pods: Api<Pod> = Api::namespaced(plane.admin(), plane.namespace());
    create_driver(&pods, &app).await;
    let (informer, services) = informer(plane, Identity::PodsOnly, &app, &[]).await;
    informer.start().unwrap();
    // Created once the informer follows the watch, so that it arrives as a change.
    eventually("Synced", Duration::from_secs(30), || async {
        (informer.health().state == SyncState::Synced).then_some(())
    })
    .await;
    kubelet::create_executor(&pods, &app, 1).await.unwrap();
    eventually("the Service error in health", Duration::from_secs(30), || async {
        Some(services.health()).filter(|s| s.errors > 0)
    })
    .await;
    let health = informer.health();
    let last_error = services.health().last_error.unwrap();
    assert!(last_error.contains("403") || last_error.contains("forbidden"), "{last_error}");
    assert_eq!(health.state, SyncState::Synced, "the informer is unaffected: {health:?}");
    let changes = informer.take_changes(10, Duration::from_secs(10)).unwrap();
    assert!(!changes.is_empty(), "changes still flow");
    informer.stop().await;
}

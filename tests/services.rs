//! Executor Services (SPARK-52505) against a real control plane, with the
//! controller-manager's garbage collector.

use crate::support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::{Pod, Service, ServiceAccount};
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use kube::api::{Api, ListParams, PostParams};
use serde_json::json;
use spark_k8s_native::client::SetupError;
use spark_k8s_native::driver::ExecutorTracking;
use spark_k8s_native::informer::health::SyncState;
use spark_k8s_native::informer::ExecutorPodInformer;
use spark_k8s_native::services::{self, Ensured, ExecutorServices, ServiceController, ServiceError, ServiceWork};
use spark_k8s_native::settings::Settings;
use support::kubelet;
use support::{eventually, unique_app_id, Identity, LocalPlane, PlaneOptions, Route};

const PORT: u16 = 7079;

/// An app of a plane with its driver pod made (what owns its executor Services), and the admin's
/// pods and Services.
struct DriverApp {
    app: String,
    pods: Api<Pod>,
    svcs: Api<Service>,
    driver: Pod,
}

impl DriverApp {
    async fn create(plane: &LocalPlane, prefix: &str) -> Self {
        let app = unique_app_id(prefix);
        let pods = plane.admin_pods();
        let driver = create_driver(&pods, &app).await;
        DriverApp { app, pods, svcs: plane.admin_services(), driver }
    }
}

async fn create_driver(pods: &Api<Pod>, app: &str) -> Pod {
    pods.create(&PostParams::default(), &kubelet::driver_pod(app)).await.unwrap()
}

/// A driver's settings with Services on, as `identity`.
fn services_settings(plane: &LocalPlane, identity: Identity, app: &str, extra: &[(&str, &str)]) -> Settings {
    services_settings_via(plane, identity, Route::Direct, app, extra)
}

fn services_settings_via(
    plane: &LocalPlane,
    identity: Identity,
    route: Route,
    app: &str,
    extra: &[(&str, &str)],
) -> Settings {
    let mut conf = plane.spark_conf(identity, route);
    conf.insert("spark.kubernetes.executor.enableService".into(), "true".into());
    conf.insert("spark.blockManager.port".into(), PORT.to_string());
    conf.insert("spark.kubernetes.driver.pod.name".into(), format!("{app}-driver"));
    for (k, v) in extra {
        conf.insert(k.to_string(), v.to_string());
    }
    Settings::from_spark_conf(&conf).unwrap()
}

/// The informer with the Service controller subscribed to it, as the driver runs them.
async fn informer(
    plane: &LocalPlane,
    identity: Identity,
    app: &str,
    extra: &[(&str, &str)],
) -> (Arc<ExecutorPodInformer>, Arc<ServiceController>) {
    let tracking = ExecutorTracking::connect(&services_settings(plane, identity, app, extra), app).await.unwrap();
    (Arc::new(tracking.informer), tracking.services.expect("Services are on"))
}

/// The app's executor Services as the driver manages them: its restricted identity, 4 requests at once.
fn driver_services(plane: &LocalPlane, app: &str) -> ExecutorServices {
    ExecutorServices::new(
        plane.client(Identity::Restricted, Route::Direct),
        plane.namespace(),
        app,
        &format!("{app}-driver"),
        PORT,
        4,
    )
}

async fn app_services(services: &Api<Service>, app: &str) -> Vec<Service> {
    let selector = format!("spark-app-selector={app},spark-role=executor-service");
    services.list(&ListParams::default().labels(&selector)).await.unwrap().items
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_executor_pod_gets_its_service_owned_by_the_driver() {
    let plane = LocalPlane::shared();
    let DriverApp { app, pods, svcs, driver } = DriverApp::create(plane, "svc").await;
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
    // Counted once the controller has read each CREATE's answer, which may
    // come after the apiserver shows the Service.
    eventually("6 Services, counted", Duration::from_secs(20), || async {
        (services.health().created >= 6 && app_services(&svcs, &app).await.len() == 6).then_some(())
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
    let DriverApp { app, svcs, .. } = DriverApp::create(plane, "ensure").await;
    let executor_services = driver_services(plane, &app);
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
    let DriverApp { app, pods, svcs, .. } = DriverApp::create(&plane, "burst").await;
    let (informer, services) =
        informer(&plane, Identity::Restricted, &app, &[("spark.kubernetes.native.service.maxConcurrentRequests", "8")])
            .await;
    informer.start().unwrap();
    let began = Instant::now();
    kubelet::create_executors(&pods, &app, 1..301, 32).await.unwrap();
    eventually("300 Services, counted", Duration::from_secs(120), || async {
        (services.health().created >= 300 && app_services(&svcs, &app).await.len() == 300).then_some(())
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
    let pods = plane.admin_pods();
    let svcs = plane.admin_services();
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

/// The start-up check's error, from the informer path and the path without an informer.
async fn start_up_error(settings: &Settings, app: &str) -> String {
    let from_informer = match ExecutorTracking::connect(settings, app).await {
        Err(SetupError::Access(e)) => e.to_string(),
        Err(other) => panic!("expected the access check to fail, got {other}"),
        Ok(_) => panic!("expected the access check to fail"),
    };
    let without_informer = match ServiceController::connect(settings, app).await {
        Err(SetupError::Access(e)) => e.to_string(),
        Err(other) => panic!("expected the access check to fail, got {other}"),
        Ok(_) => panic!("expected the access check to fail"),
    };
    assert_eq!(from_informer, without_informer);
    from_informer
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_rights_on_services_driver_start_up_fails_naming_the_fix() {
    let plane = LocalPlane::shared();
    let app = unique_app_id("nosvc");
    let message = start_up_error(&services_settings(plane, Identity::PodsOnly, &app, &[]), &app).await;
    eprintln!("{message}");
    let namespace = plane.namespace();
    assert!(
        message.contains(&format!("may not get, create and delete services in namespace {namespace}")),
        "{message}"
    );
    assert!(message.contains("Grant them to the driver's service account"), "{message}");
    assert!(message.contains("spark.kubernetes.executor.enableService=false"), "{message}");
    // With the rights, start-up goes on.
    let settings = services_settings(plane, Identity::Restricted, &app, &[]);
    ExecutorTracking::connect(&settings, &app).await.unwrap().services.unwrap().stop();
}

/// A service account of its own, bound to `rules` in the plane's namespace, and a token for it.
async fn service_account_token(plane: &LocalPlane, name: &str, rules: serde_json::Value) -> String {
    let namespace = plane.namespace();
    let post = PostParams::default();
    let accounts: Api<ServiceAccount> = Api::namespaced(plane.admin(), namespace);
    let account = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
    accounts.create(&post, &account).await.unwrap();
    let roles: Api<Role> = Api::namespaced(plane.admin(), namespace);
    roles
        .create(&post, &serde_json::from_value(json!({"metadata": {"name": name}, "rules": rules})).unwrap())
        .await
        .unwrap();
    let bindings: Api<RoleBinding> = Api::namespaced(plane.admin(), namespace);
    let binding = json!({
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": namespace}],
    });
    bindings.create(&post, &serde_json::from_value(binding).unwrap()).await.unwrap();
    let request = TokenRequest {
        spec: Some(TokenRequestSpec { expiration_seconds: Some(3600), ..Default::default() }),
        ..Default::default()
    };
    let token = accounts.create_token_request(name, &post, &request).await.unwrap();
    token.status.and_then(|s| s.token).expect("a token")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_account_that_may_only_get_services_is_told_which_verbs_it_lacks() {
    let plane = LocalPlane::shared();
    let app = unique_app_id("getonly");
    let account = format!("{app}-driver");
    let rules = json!([
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]},
        {"apiGroups": [""], "resources": ["services"], "verbs": ["get", "list"]},
    ]);
    let token = service_account_token(plane, &account, rules).await;
    let mut conf = plane.spark_conf(Identity::PodsOnly, Route::Direct);
    conf.remove("spark.kubernetes.authenticate.oauthTokenFile");
    conf.insert("spark.kubernetes.authenticate.oauthToken".into(), token);
    conf.insert("spark.kubernetes.executor.enableService".into(), "true".into());
    conf.insert("spark.blockManager.port".into(), PORT.to_string());
    conf.insert("spark.kubernetes.driver.pod.name".into(), format!("{app}-driver"));
    let settings = Settings::from_spark_conf(&conf).unwrap();
    // RBAC follows new bindings within moments; until then every verb is denied.
    let wanted = format!("may not create and delete services in namespace {}", plane.namespace());
    let mut message = String::new();
    for _ in 0..50 {
        message = start_up_error(&settings, &app).await;
        if message.contains(&wanted) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    eprintln!("{message}");
    assert!(message.contains(&wanted), "{message}");
    assert!(message.contains("Grant them to the driver's service account"), "{message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rights_taken_away_after_start_up_show_as_errors_and_the_informer_keeps_working() {
    let plane = LocalPlane::shared();
    let app = unique_app_id("revoked");
    let pods = plane.admin_pods();
    create_driver(&pods, &app).await;
    // Past the start-up check (as if the rights were revoked after it): built by hand.
    let settings = services_settings(plane, Identity::PodsOnly, &app, &[]);
    let informer = ExecutorPodInformer::connect(&settings, &app).await.unwrap();
    let executor_services = Arc::new(ExecutorServices::connect(&settings, &app).await.unwrap());
    let services = Arc::new(ServiceController::spawn(executor_services, Duration::ZERO));
    informer.subscribe(services.clone());
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

/// A Service of an executor's name as a Spark that ships its own would make it:
/// its own labels, its own port, no `managed-by` of ours.
async fn create_foreign_service(svcs: &Api<Service>, app: &str, exec_id: &str) -> Service {
    let service = json!({
        "metadata": {
            "name": services::service_name(app, exec_id),
            "labels": {"spark-app-selector": app, "spark-exec-id": exec_id, "spark-role": "executor"},
        },
        "spec": {
            "selector": {"spark-app-selector": app, "spark-exec-id": exec_id},
            "ports": [{"name": "spark-block-manager", "port": 7078, "targetPort": 7078}],
        },
    });
    svcs.create(&PostParams::default(), &serde_json::from_value(service).unwrap()).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_of_our_name_that_another_tool_made_is_never_repaired_or_deleted() {
    spark_k8s_native::jni::logs::install();
    let plane = LocalPlane::shared();
    let DriverApp { app, svcs, .. } = DriverApp::create(plane, "foreign").await;
    let theirs = create_foreign_service(&svcs, &app, "1").await;
    create_foreign_service(&svcs, &app, "2").await;
    let executor_services = Arc::new(driver_services(plane, &app));
    assert_eq!(executor_services.ensure("1").await.unwrap(), Ensured::Foreign);
    assert_eq!(executor_services.ensure("1").await.unwrap(), Ensured::Foreign, "and again");
    executor_services.delete("1").await.unwrap();
    let after = svcs.get(&theirs.metadata.name.clone().unwrap()).await.unwrap();
    assert_eq!(after.metadata.resource_version, theirs.metadata.resource_version, "untouched");
    assert_eq!(after.spec.unwrap().ports.unwrap()[0].port, 7078);

    // Through the controller, with a cool-down: ensured synchronously, then gone.
    let controller = ServiceController::spawn(executor_services.clone(), Duration::from_millis(500));
    assert_eq!(controller.ensure_now("2").await.unwrap(), Ensured::Foreign);
    assert_eq!(controller.ensure_now("3").await.unwrap(), Ensured::Created, "no foreign one: ours");
    controller.send(ServiceWork::Gone("2".into()));
    controller.send(ServiceWork::Gone("3".into()));
    let ours = services::service_name(&app, "3");
    eventually("our Service to go after the cool-down", Duration::from_secs(15), || async {
        svcs.get_opt(&ours).await.unwrap().is_none().then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(svcs.get_opt(&services::service_name(&app, "2")).await.unwrap().is_some(), "theirs stays");
    let health = controller.health();
    assert_eq!((health.foreign, health.created, health.deleted, health.errors), (3, 1, 1, 0), "{health:?}");
    controller.stop();

    let logged: Vec<_> = spark_k8s_native::jni::logs::take(10_000, Duration::ZERO)
        .into_iter()
        .filter(|r| r.message.contains(&app) && r.message.contains("not made by spark-k8s-native"))
        .collect();
    assert_eq!(logged.len(), 1, "once per app: {logged:?}");
    assert_eq!(logged[0].level, 3, "INFO");
    for exec_id in ["1", "2"] {
        svcs.delete(&services::service_name(&app, exec_id), &Default::default()).await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ensure_now_is_synchronous_and_the_informer_sends_no_second_request_for_that_pod() {
    let plane = LocalPlane::shared();
    let DriverApp { app, pods, svcs, .. } = DriverApp::create(plane, "now").await;
    let (informer, services) = informer(plane, Identity::Restricted, &app, &[]).await;
    informer.start().unwrap();
    eventually("Synced", Duration::from_secs(30), || async {
        (informer.health().state == SyncState::Synced).then_some(())
    })
    .await;
    // What the Java feature step does before the pod exists.
    assert_eq!(services.ensure_now("1").await.unwrap(), Ensured::Created);
    assert!(svcs.get_opt(&services::service_name(&app, "1")).await.unwrap().is_some(), "there when it returns");
    let requests = services.health().requests;
    kubelet::create_executor(&pods, &app, 1).await.unwrap();
    let changes = informer.take_changes(10, Duration::from_secs(10)).unwrap();
    assert!(!changes.is_empty(), "the informer saw the pod");
    tokio::time::sleep(Duration::from_secs(1)).await;
    let health = services.health();
    assert_eq!(health.requests, requests, "the informer's event for the pod sent nothing: {health:?}");
    assert_eq!((health.created, health.errors), (1, 0), "{health:?}");
    // An executor the informer saw first is ensured again, idempotently.
    kubelet::create_executor(&pods, &app, 2).await.unwrap();
    let second = services::service_name(&app, "2");
    eventually("the informer's Service", Duration::from_secs(20), || async {
        svcs.get_opt(&second).await.unwrap().map(|_| ())
    })
    .await;
    assert_eq!(services.ensure_now("2").await.unwrap(), Ensured::Unchanged);

    // Once the informer stops, so does its controller: nothing is ensured behind its back.
    informer.stop().await;
    match services.ensure_now("3").await {
        Err(e @ ServiceError::Stopped { .. }) => assert!(e.to_string().contains(&app), "{e}"),
        other => panic!("expected Stopped, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_an_informer_gone_executors_reported_by_the_caller_lose_their_service_after_the_cool_down() {
    let plane = LocalPlane::shared();
    let DriverApp { app, svcs, .. } = DriverApp::create(plane, "gone").await;
    let settings =
        services_settings(plane, Identity::Restricted, &app, &[("spark.kubernetes.native.service.deleteAfter", "1s")]);
    let controller = ServiceController::connect(&settings, &app).await.unwrap();
    for id in ["1", "2"] {
        assert_eq!(controller.ensure_now(id).await.unwrap(), Ensured::Created);
    }
    controller.send(ServiceWork::Gone("1".into()));
    let gone = services::service_name(&app, "1");
    // The apiserver shows the Service gone before the controller has read the
    // DELETE's answer and counted it, so wait for both (CI once read the health
    // in between: deleted 0).
    eventually("the gone executor's Service to go and be counted", Duration::from_secs(15), || async {
        let counted = controller.health().deleted > 0;
        (counted && svcs.get_opt(&gone).await.unwrap().is_none()).then_some(())
    })
    .await;
    assert!(svcs.get_opt(&services::service_name(&app, "2")).await.unwrap().is_some(), "the live one stays");
    let health = controller.health();
    assert_eq!((health.created, health.deleted, health.errors), (2, 1, 0), "{health:?}");
    controller.stop();
}

/// The race a chaos run found: the executor's pod goes while the create of its
/// Service is still retrying a 429 burst, and the cool-down ends before that
/// create lands. Whenever it lands, the Service goes after the cool-down: the
/// ensure and the delete of one executor never overlap. (This test alone uses
/// the proxy of the shared plane, so the burst reaches no other test.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_executor_gone_while_its_service_is_still_being_created_loses_it_once_created() {
    let plane = LocalPlane::shared();
    let DriverApp { app, svcs, .. } = DriverApp::create(plane, "race").await;
    let cool_down = [("spark.kubernetes.native.service.deleteAfter", "1s")];
    let settings = services_settings_via(plane, Identity::Restricted, Route::Proxy, &app, &cool_down);
    let controller = ServiceController::connect(&settings, &app).await.unwrap();
    plane.proxy_throttle(Duration::from_secs(4));
    controller.send(ServiceWork::Ensure("1".into()));
    // Gone once the ensure is under way (sent together, the pass would start
    // from "gone" and never create).
    eventually("the ensure's first attempt", Duration::from_secs(10), || async {
        (controller.health().requests > 0).then_some(())
    })
    .await;
    controller.send(ServiceWork::Gone("1".into()));
    let name = services::service_name(&app, "1");
    let health = eventually("the Service created after the burst, then deleted", Duration::from_secs(40), || async {
        let health = controller.health();
        (health.created == 1 && health.deleted == 1).then_some(health)
    })
    .await;
    assert!(svcs.get_opt(&name).await.unwrap().is_none(), "no Service left: {health:?}");
    assert!(plane.proxy_stats()["throttled"].as_u64().unwrap() > 0, "the burst was answered 429");
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(svcs.get_opt(&name).await.unwrap().is_none(), "and none made again");
    controller.stop();
}

/// The driver runs one client, the informer's, whose read timeout lets a watch
/// stay quiet its whole length (here two minutes). The Services' requests on it
/// must not wait that long: an attempt the apiserver never answers is abandoned
/// after the request timeout and the response slack, and tried again; it lands
/// once traffic flows. (A plane of its own: the black hole must reach no other test.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_the_drivers_one_client_an_unanswered_service_request_is_tried_again_after_the_request_timeout() {
    let plane = LocalPlane::start_with(PlaneOptions::default());
    let app = unique_app_id("unanswered");
    let pods = plane.admin_pods();
    create_driver(&pods, &app).await;
    let timeouts =
        [("spark.kubernetes.driver.requestTimeout", "1000"), ("spark.kubernetes.native.informer.watchTimeout", "120s")];
    let settings = services_settings_via(&plane, Identity::Restricted, Route::Proxy, &app, &timeouts);
    let tracking = ExecutorTracking::connect(&settings, &app).await.unwrap();
    let controller = tracking.services.clone().expect("Services are on");
    let before = controller.health().requests;

    plane.proxy_blackhole(Duration::ZERO);
    let began = Instant::now();
    let ensuring = tokio::spawn({
        let controller = controller.clone();
        async move { controller.ensure_now("1").await }
    });
    eventually("the unanswered attempt to be abandoned and tried again", Duration::from_secs(20), || async {
        (controller.health().requests >= before + 2).then_some(())
    })
    .await;
    let abandoned_after = began.elapsed();
    // 1 s request timeout + 5 s slack; a read timeout of the watch's length would be 125 s.
    assert!(abandoned_after >= Duration::from_secs(6), "abandoned before its deadline: {abandoned_after:?}");

    plane.proxy_normal();
    let ensured = tokio::time::timeout(Duration::from_secs(30), ensuring)
        .await
        .expect("the ensure to finish once traffic flows")
        .unwrap();
    assert_eq!(ensured.unwrap(), Ensured::Created);
    controller.stop();
}

//! Executor Services (SPARK-52505): one ClusterIP Service per executor,
//! selecting that executor's pod and exposing its block manager's fixed port,
//! owned by the driver pod. Peers reach the block manager through the Service;
//! once the executor is gone the Service has no endpoint and a connection is
//! refused at once, instead of waiting out a 2-minute connect timeout.
//!
//! The spec builder is pure; [`ExecutorServices`] ensures and deletes them,
//! idempotently, with bounded concurrency and retries; [`ServiceController`]
//! is the one per app that decides when, fed by whoever sees the pods.
//!
//! Only Services labelled `app.kubernetes.io/managed-by=spark-k8s-native` are
//! ours. SPARK-52505 was never merged and its names could land upstream: a
//! Spark that ships its own executor Services of the same names must find them
//! neither repaired nor deleted by us.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::authorization::v1::{ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec};
use k8s_openapi::api::core::v1::{Pod, Service, ServicePort, ServiceSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::api::{Api, DeleteParams, PostParams, Preconditions};
use parking_lot::Mutex;
use tokio::sync::{OnceCell, Semaphore};

use crate::client::{AccessDenied, SetupError};
use crate::labels;
use crate::settings::SettingsError;

mod controller;
pub use controller::{ServiceController, ServiceWork};

/// The one port of an executor Service.
pub const BLOCK_MANAGER_PORT_NAME: &str = "spark-block-manager";
/// `spark-role` of executor Services, so an operator finds them all:
/// `kubectl get svc -l spark-app-selector=<app>,spark-role=executor-service`.
pub const SERVICE_ROLE: &str = "executor-service";
pub const MANAGED_BY_LABEL: &str = "app.kubernetes.io/managed-by";
pub const MANAGED_BY: &str = "spark-k8s-native";

const MAX_NAME: usize = 63;

/// The Service name of an executor: `svc-<appId>-exec-<execId>`, always a
/// valid DNS-1035 label (lower case, at most 63 characters, starting with a
/// letter). A long or odd app id is shortened deterministically: the executor
/// id is kept whole, and a hash of the app id keeps names of different apps apart.
pub fn service_name(app_id: &str, exec_id: &str) -> String {
    let app = dns_part(app_id);
    let exec = dns_part(exec_id);
    let plain = format!("svc-{app}-exec-{exec}");
    if plain.len() <= MAX_NAME && app == app_id && exec == exec_id {
        return plain;
    }
    let hash = format!("{:08x}", fnv1a(app_id.as_bytes()) as u32);
    let fixed = "svc-".len() + 1 + hash.len() + "-exec-".len() + exec.len();
    let room = MAX_NAME.saturating_sub(fixed);
    let app = app[..app.len().min(room)].trim_end_matches('-');
    let name = if app.is_empty() { format!("svc-{hash}-exec-{exec}") } else { format!("svc-{app}-{hash}-exec-{exec}") };
    name[..name.len().min(MAX_NAME)].trim_end_matches('-').to_string()
}

/// Lower case, every character outside `[a-z0-9-]` replaced by `-`, runs of `-` folded.
fn dns_part(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        let c = c.to_ascii_lowercase();
        let c = if c.is_ascii_lowercase() || c.is_ascii_digit() { c } else { '-' };
        if !(c == '-' && out.ends_with('-')) {
            out.push(c);
        }
    }
    out.trim_matches('-').to_string()
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf29ce484222325u64, |h, b| (h ^ *b as u64).wrapping_mul(0x100000001b3))
}

/// The Service of one executor, exactly as it should be.
pub fn executor_service(app_id: &str, exec_id: &str, port: u16, owner: &OwnerReference) -> Service {
    let labels = BTreeMap::from([
        (labels::APP.to_string(), app_id.to_string()),
        (labels::ROLE.to_string(), SERVICE_ROLE.to_string()),
        (labels::EXEC_ID.to_string(), exec_id.to_string()),
        (MANAGED_BY_LABEL.to_string(), MANAGED_BY.to_string()),
    ]);
    let selector = BTreeMap::from([
        (labels::APP.to_string(), app_id.to_string()),
        (labels::EXEC_ID.to_string(), exec_id.to_string()),
    ]);
    Service {
        metadata: ObjectMeta {
            name: Some(service_name(app_id, exec_id)),
            labels: Some(labels),
            owner_references: Some(vec![owner.clone()]),
            ..Default::default()
        },
        spec: Some(ServiceSpec {
            type_: Some("ClusterIP".into()),
            selector: Some(selector),
            ports: Some(vec![ServicePort {
                name: Some(BLOCK_MANAGER_PORT_NAME.into()),
                protocol: Some("TCP".into()),
                port: port as i32,
                target_port: Some(IntOrString::Int(port as i32)),
                ..Default::default()
            }]),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// The owner reference to the driver pod: the Service outlives its executor
/// and is garbage-collected with the driver.
pub fn driver_owner(driver: &Pod) -> Option<OwnerReference> {
    Some(OwnerReference {
        api_version: "v1".into(),
        kind: "Pod".into(),
        name: driver.metadata.name.clone()?,
        uid: driver.metadata.uid.clone()?,
        controller: Some(true),
        block_owner_deletion: None,
    })
}

/// Whether we made this Service. One we did not make (another tool, or a
/// Spark that ships its own executor Services) is never repaired or deleted.
pub fn is_ours(service: &Service) -> bool {
    service.metadata.labels.as_ref().and_then(|l| l.get(MANAGED_BY_LABEL)).map(String::as_str) == Some(MANAGED_BY)
}

/// Whether an existing Service differs from the wanted one in what matters:
/// labels, owner, selector, type and ports.
pub fn differs(existing: &Service, wanted: &Service) -> bool {
    let (e, w) = (existing.spec.clone().unwrap_or_default(), wanted.spec.clone().unwrap_or_default());
    let labels_missing = wanted.metadata.labels.as_ref().is_some_and(|want| {
        let have = existing.metadata.labels.clone().unwrap_or_default();
        want.iter().any(|(k, v)| have.get(k) != Some(v))
    });
    let ports = |s: &ServiceSpec| -> Vec<(Option<String>, i32, Option<IntOrString>)> {
        s.ports.clone().unwrap_or_default().into_iter().map(|p| (p.name, p.port, p.target_port)).collect()
    };
    labels_missing
        || existing.metadata.owner_references != wanted.metadata.owner_references
        || e.selector != w.selector
        || e.type_.as_deref().unwrap_or("ClusterIP") != w.type_.as_deref().unwrap_or("ClusterIP")
        || ports(&e) != ports(&w)
}

/// What `ensure` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ensured {
    Created,
    /// It existed as wanted.
    Unchanged,
    /// It existed but differed (edited by hand); it was replaced.
    Repaired,
    /// A Service of that name exists that we did not make: left as it is.
    Foreign,
}

#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    #[error("driver pod {name}: {source}")]
    DriverPod { name: String, source: kube::Error },
    #[error("service {name}: {source}")]
    Api { name: String, source: kube::Error },
    /// The app's Service controller was stopped (its informer stopped or closed).
    #[error("the executor Services of {app_id} are stopped")]
    Stopped { app_id: String },
}

impl ServiceError {
    /// The apiserver's answer (HTTP status, reason such as `Forbidden`), if it sent one.
    pub fn api_status(&self) -> Option<&kube::core::Status> {
        match self {
            ServiceError::DriverPod { source: kube::Error::Api(s), .. }
            | ServiceError::Api { source: kube::Error::Api(s), .. } => Some(s.as_ref()),
            _ => None,
        }
    }
}

/// Counters of the executor Services of one app.
#[derive(Debug, Default)]
pub struct ServiceCounters {
    pub created: AtomicU64,
    pub repaired: AtomicU64,
    /// Services of our names that another tool made, found by `ensure` and left alone.
    pub foreign: AtomicU64,
    pub deleted: AtomicU64,
    pub errors: AtomicU64,
    /// Requests sent for Services (every attempt), so a test can see that none was.
    pub requests: AtomicU64,
    pub in_flight: AtomicU64,
    pub peak_in_flight: AtomicU64,
    pub last_error: Mutex<Option<String>>,
}

/// How the executor Services are doing (their failures never stop the informer).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceHealth {
    pub created: u64,
    pub repaired: u64,
    /// Services of our names that another tool made, left alone.
    pub foreign: u64,
    pub deleted: u64,
    pub errors: u64,
    pub last_error: Option<String>,
    /// Requests sent for Services so far (every attempt).
    pub requests: u64,
    /// Most requests for Services in flight at once so far.
    pub peak_in_flight: u64,
}

impl ServiceCounters {
    pub fn health(&self) -> ServiceHealth {
        ServiceHealth {
            created: self.created.load(Ordering::Relaxed),
            repaired: self.repaired.load(Ordering::Relaxed),
            foreign: self.foreign.load(Ordering::Relaxed),
            deleted: self.deleted.load(Ordering::Relaxed),
            errors: self.errors.load(Ordering::Relaxed),
            last_error: self.last_error.lock().clone(),
            requests: self.requests.load(Ordering::Relaxed),
            peak_in_flight: self.peak_in_flight.load(Ordering::Relaxed),
        }
    }
}

/// Ensures and deletes the executor Services of one app.
pub struct ExecutorServices {
    client: kube::Client,
    namespace: String,
    services: Api<Service>,
    pods: Api<Pod>,
    app_id: String,
    driver_pod: String,
    port: u16,
    owner: OnceCell<OwnerReference>,
    requests: Semaphore,
    /// Set once the first foreign Service was logged: one line per app says it all.
    foreign_logged: AtomicBool,
    pub counters: Arc<ServiceCounters>,
}

/// Retries of a transient failure (429, 5xx, connection) before giving up.
const ATTEMPTS: u32 = 6;

impl ExecutorServices {
    /// `concurrency` bounds the requests in flight, so that a burst of
    /// hundreds of executors does not flood the apiserver.
    pub fn new(
        client: kube::Client,
        namespace: &str,
        app_id: &str,
        driver_pod: &str,
        port: u16,
        concurrency: usize,
    ) -> Self {
        Self {
            services: Api::namespaced(client.clone(), namespace),
            pods: Api::namespaced(client.clone(), namespace),
            client,
            namespace: namespace.to_string(),
            app_id: app_id.to_string(),
            driver_pod: driver_pod.to_string(),
            port,
            owner: OnceCell::new(),
            requests: Semaphore::new(concurrency.max(1)),
            foreign_logged: AtomicBool::new(false),
            counters: Arc::default(),
        }
    }

    pub fn app_id(&self) -> &str {
        &self.app_id
    }

    /// Executor Services from Spark's settings, with a client of their own.
    /// Must run on the runtime that will drive the requests.
    pub async fn connect(settings: &crate::settings::Settings, app_id: &str) -> Result<Self, SetupError> {
        crate::settings::validate_app_id(app_id)?;
        let service_settings = settings.services.as_ref().ok_or_else(|| {
            let key = crate::settings::keys::ENABLE_SERVICE;
            SettingsError::new(key.name, "false", "must be true to manage executor Services")
        })?;
        let config = crate::client::kube_config(
            &settings.client,
            &crate::client::user_agent(app_id),
            // No watch: a response quiet for longer than the request timeout is a dead connection.
            Duration::ZERO,
        )
        .await?;
        let client = kube::Client::try_from(config).map_err(crate::client::ClientError::from)?;
        Ok(Self::new(
            client,
            &settings.client.namespace,
            app_id,
            &service_settings.driver_pod_name,
            service_settings.block_manager_port,
            service_settings.max_concurrent_requests,
        ))
    }

    /// The owner reference to the driver pod, looked up once.
    async fn owner(&self) -> Result<&OwnerReference, ServiceError> {
        self.owner
            .get_or_try_init(|| async {
                let driver = self
                    .retrying(|| self.pods.get(&self.driver_pod))
                    .await
                    .map_err(|source| ServiceError::DriverPod { name: self.driver_pod.clone(), source })?;
                Ok(driver_owner(&driver).expect("a pod from the apiserver has a name and a uid"))
            })
            .await
    }

    /// Creates the executor's Service; if one exists but differs, replaces it.
    pub async fn ensure(&self, exec_id: &str) -> Result<Ensured, ServiceError> {
        let outcome = self.ensure_once(exec_id).await;
        if let Err(e) = &outcome {
            self.failed("ensuring", exec_id, e);
        }
        outcome
    }

    fn failed(&self, doing: &str, exec_id: &str, error: &ServiceError) {
        self.counters.errors.fetch_add(1, Ordering::Relaxed);
        *self.counters.last_error.lock() = Some(error.to_string());
        tracing::warn!(app_id = %self.app_id, "{doing} the service of executor {exec_id}: {error}");
    }

    async fn ensure_once(&self, exec_id: &str) -> Result<Ensured, ServiceError> {
        let wanted = executor_service(&self.app_id, exec_id, self.port, self.owner().await?);
        let name = wanted.metadata.name.clone().expect("named");
        let api_error = |source| ServiceError::Api { name: name.clone(), source };
        let post = PostParams::default();
        match self.retrying(|| self.services.create(&post, &wanted)).await {
            Ok(_) => {
                self.counters.created.fetch_add(1, Ordering::Relaxed);
                tracing::debug!(app_id = %self.app_id, "created service {name}");
                return Ok(Ensured::Created);
            }
            Err(kube::Error::Api(s)) if s.code == 409 => {}
            Err(e) => return Err(api_error(e)),
        }
        let existing = self.retrying(|| self.services.get(&name)).await.map_err(api_error)?;
        if !is_ours(&existing) {
            self.found_foreign(&name, &existing);
            return Ok(Ensured::Foreign);
        }
        if !differs(&existing, &wanted) {
            return Ok(Ensured::Unchanged);
        }
        // Replace rather than patch: clusterIP and other server-set fields stay, the rest is ours.
        let mut replacement = existing.clone();
        replacement.metadata.labels = wanted.metadata.labels.clone();
        replacement.metadata.owner_references = wanted.metadata.owner_references.clone();
        let spec = replacement.spec.get_or_insert_with(Default::default);
        let want = wanted.spec.clone().expect("built with a spec");
        spec.selector = want.selector;
        spec.ports = want.ports;
        spec.type_ = want.type_;
        self.retrying(|| self.services.replace(&name, &post, &replacement)).await.map_err(api_error)?;
        self.counters.repaired.fetch_add(1, Ordering::Relaxed);
        tracing::info!(app_id = %self.app_id, "repaired service {name}, which differed from its spec");
        Ok(Ensured::Repaired)
    }

    fn found_foreign(&self, name: &str, existing: &Service) {
        self.counters.foreign.fetch_add(1, Ordering::Relaxed);
        let managed_by = existing.metadata.labels.as_ref().and_then(|l| l.get(MANAGED_BY_LABEL));
        if self.foreign_logged.swap(true, Ordering::Relaxed) {
            tracing::debug!(app_id = %self.app_id, "service {name} is not ours ({MANAGED_BY_LABEL}={managed_by:?}): left alone");
        } else {
            tracing::info!(
                app_id = %self.app_id,
                "service {name} exists and was not made by spark-k8s-native ({MANAGED_BY_LABEL}={managed_by:?}, \
                 perhaps a Spark that ships its own executor Services): executor Services of this name are left to \
                 whoever made them, never repaired or deleted (counted as foreign; logged once per app)"
            );
        }
    }

    /// Deletes the executor's Service if it is ours; a missing one is fine, and
    /// one that another tool made is left alone (no error).
    pub async fn delete(&self, exec_id: &str) -> Result<(), ServiceError> {
        let name = service_name(&self.app_id, exec_id);
        let fail = |source| {
            let error = ServiceError::Api { name: name.clone(), source };
            self.failed("deleting", exec_id, &error);
            error
        };
        let existing = match self.retrying(|| self.services.get_opt(&name)).await {
            Ok(Some(existing)) => existing,
            Ok(None) => return Ok(()),
            Err(source) => return Err(fail(source)),
        };
        if !is_ours(&existing) {
            tracing::debug!(app_id = %self.app_id, "service {name} is not ours: not deleted");
            return Ok(());
        }
        // Only the object just seen as ours: if it was replaced meanwhile (by
        // whoever makes foreign ones), the uid differs and the apiserver refuses.
        let params = DeleteParams {
            preconditions: Some(Preconditions { uid: existing.metadata.uid.clone(), resource_version: None }),
            ..DeleteParams::default()
        };
        match self.retrying(|| self.services.delete(&name, &params)).await {
            Ok(_) => {
                self.counters.deleted.fetch_add(1, Ordering::Relaxed);
                Ok(())
            }
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
            Err(kube::Error::Api(s)) if s.code == 409 => {
                tracing::debug!(app_id = %self.app_id, "service {name} was replaced before its delete: not deleted");
                Ok(())
            }
            Err(source) => Err(fail(source)),
        }
    }

    /// Asks the apiserver (SelfSubjectAccessReviews) whether the driver may do
    /// what Services need: get, create and delete services in the namespace.
    /// Driver start-up calls it, so that a missing right fails there, once,
    /// naming the fix, instead of as a 403 per executor later. When the review
    /// itself cannot be made (an apiserver that does not serve it, a 403 on it,
    /// no connection), it logs a WARN and returns Ok: start-up is not blocked
    /// on a question nobody could answer, and a real denial still shows per
    /// request later.
    pub async fn check_access(&self) -> Result<(), AccessDenied> {
        let reviews: Api<SelfSubjectAccessReview> = Api::all(self.client.clone());
        let ask = |verb: &'static str| {
            let review = SelfSubjectAccessReview {
                spec: SelfSubjectAccessReviewSpec {
                    resource_attributes: Some(ResourceAttributes {
                        namespace: Some(self.namespace.clone()),
                        verb: Some(verb.to_string()),
                        group: Some(String::new()),
                        resource: Some("services".into()),
                        ..Default::default()
                    }),
                    ..Default::default()
                },
                ..Default::default()
            };
            let reviews = reviews.clone();
            async move { (verb, reviews.create(&PostParams::default(), &review).await) }
        };
        let answers = futures::future::join_all(SERVICE_VERBS.iter().map(|verb| ask(verb))).await;
        let mut denied = Vec::new();
        let mut undecided = Vec::new();
        for (verb, answer) in answers {
            match answer.map(|review| review.status.unwrap_or_default()) {
                Ok(status) if status.allowed => {}
                Ok(status) => denied.push((verb, status.reason.filter(|r| !r.is_empty()))),
                Err(e) => undecided.push(format!("{verb}: {e}")),
            }
        }
        if !undecided.is_empty() {
            tracing::warn!(
                app_id = %self.app_id,
                "could not ask the apiserver whether the driver may get, create and delete services in namespace {} \
                 ({}); going on: a missing right will show as failed Service requests",
                self.namespace,
                undecided.join("; ")
            );
        }
        if denied.is_empty() {
            return Ok(());
        }
        Err(AccessDenied {
            namespace: self.namespace.clone(),
            verbs: denied.iter().map(|(verb, _)| *verb).collect(),
            reasons: denied.into_iter().filter_map(|(_, reason)| reason).collect(),
        })
    }

    /// Runs one request, within the concurrency bound, retrying transient
    /// failures with the informer's backoff.
    async fn retrying<T, F, Fut>(&self, mut request: F) -> Result<T, kube::Error>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<T, kube::Error>>,
    {
        let mut backoff = retry_backoff();
        for attempt in 1.. {
            let result = {
                let _permit = self.requests.acquire().await.expect("never closed");
                self.counters.requests.fetch_add(1, Ordering::Relaxed);
                let now = self.counters.in_flight.fetch_add(1, Ordering::Relaxed) + 1;
                self.counters.peak_in_flight.fetch_max(now, Ordering::Relaxed);
                let result = request().await;
                self.counters.in_flight.fetch_sub(1, Ordering::Relaxed);
                result
            };
            match result {
                Err(e) if attempt < ATTEMPTS && transient(&e) => {
                    tokio::time::sleep(retry_delay(&e, &mut backoff)).await;
                }
                other => return other,
            }
        }
        unreachable!("the loop returns")
    }
}

/// What executor Services need, and what driver start-up checks.
const SERVICE_VERBS: [&str; 3] = ["get", "create", "delete"];

/// How long to wait before retrying a transient failure: the time the
/// apiserver asked for (`retryAfterSeconds` of a 429 from API Priority and
/// Fairness or the max-in-flight filter), as client-go waits its `Retry-After`,
/// else the next step of the backoff. Backing off past what the apiserver asked
/// kept a gone executor's Service up to 25 s after a 1 s throttle ended.
fn retry_delay(error: &kube::Error, backoff: &mut impl Iterator<Item = Duration>) -> Duration {
    let asked = match error {
        kube::Error::Api(s) => s.details.as_ref().map_or(0, |d| d.retry_after_seconds),
        _ => 0,
    };
    if asked > 0 {
        Duration::from_secs(asked.into()).min(RETRY_AFTER_CAP)
    } else {
        backoff.next().expect("the backoff never ends")
    }
}

/// The longest wait a `retryAfterSeconds` may ask for: the backoff's own cap.
const RETRY_AFTER_CAP: Duration = Duration::from_secs(30);

fn transient(error: &kube::Error) -> bool {
    match error {
        kube::Error::Api(s) => s.code == 429 || s.code >= 500,
        kube::Error::HyperError(_) | kube::Error::Service(_) => true,
        _ => false,
    }
}

/// The one retry policy of Service writes: the informer's (kube's watcher
/// backoff, as client-go's: 0.8 s doubling to 30 s, jittered).
fn retry_backoff() -> kube::runtime::watcher::DefaultBackoff {
    kube::runtime::watcher::DefaultBackoff::default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn valid_dns_1035(name: &str) -> bool {
        name.len() <= 63
            && name.starts_with(|c: char| c.is_ascii_lowercase())
            && name.ends_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
            && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    }

    fn owner() -> OwnerReference {
        OwnerReference {
            api_version: "v1".into(),
            kind: "Pod".into(),
            name: "driver".into(),
            uid: "uid-1".into(),
            controller: Some(true),
            block_owner_deletion: None,
        }
    }

    fn throttled(retry_after_seconds: Option<u32>) -> kube::Error {
        let mut status = serde_json::json!({"code": 429, "reason": "TooManyRequests"});
        if let Some(seconds) = retry_after_seconds {
            status["details"] = serde_json::json!({"retryAfterSeconds": seconds});
        }
        kube::Error::Api(Box::new(serde_json::from_value(status).unwrap()))
    }

    #[test]
    fn a_throttled_write_waits_what_the_apiserver_asked_not_the_grown_backoff() {
        let mut backoff = [Duration::from_secs(12), Duration::from_secs(25)].into_iter();
        assert_eq!(retry_delay(&throttled(Some(1)), &mut backoff), Duration::from_secs(1));
        assert_eq!(retry_delay(&throttled(Some(600)), &mut backoff), RETRY_AFTER_CAP, "capped");
        assert_eq!(retry_delay(&throttled(None), &mut backoff), Duration::from_secs(12), "no ask: the backoff");
        assert_eq!(retry_delay(&throttled(Some(0)), &mut backoff), Duration::from_secs(25));
    }

    #[test]
    fn short_app_ids_give_the_pull_requests_name() {
        assert_eq!(service_name("spark-1234abcd", "7"), "svc-spark-1234abcd-exec-7");
    }

    #[test]
    fn long_and_odd_app_ids_give_valid_unique_names_that_keep_the_executor_id() {
        let long = format!("spark-{}", "a1b2c3d4".repeat(8));
        let apps = [long.as_str(), "Spark_App.With.Dots", "spark-application-1700000000000", "x", "9starts-with-digit"];
        let mut seen = std::collections::HashSet::new();
        for app in apps {
            for exec in ["1", "42", "123456"] {
                let name = service_name(app, exec);
                assert!(valid_dns_1035(&name), "{app}/{exec} -> {name}");
                assert!(name.ends_with(&format!("-exec-{exec}")), "{name}");
                assert!(seen.insert(name.clone()), "duplicate {name}");
                assert_eq!(service_name(app, exec), name, "deterministic");
            }
        }
        // Two long app ids that share their first 40 characters still differ.
        let a = service_name(&format!("{long}-a"), "1");
        let b = service_name(&format!("{long}-b"), "1");
        assert_ne!(a, b);
    }

    #[test]
    fn the_spec_selects_the_executor_and_exposes_the_block_manager_port() {
        let svc = executor_service("spark-app", "3", 7079, &owner());
        let spec = svc.spec.as_ref().unwrap();
        assert_eq!(svc.metadata.name.as_deref(), Some("svc-spark-app-exec-3"));
        assert_eq!(spec.type_.as_deref(), Some("ClusterIP"));
        let selector = spec.selector.as_ref().unwrap();
        assert_eq!(selector.len(), 2);
        assert_eq!(selector["spark-app-selector"], "spark-app");
        assert_eq!(selector["spark-exec-id"], "3");
        let ports = spec.ports.as_ref().unwrap();
        assert_eq!(ports.len(), 1);
        assert_eq!(ports[0].name.as_deref(), Some("spark-block-manager"));
        assert_eq!(ports[0].port, 7079);
        assert_eq!(ports[0].target_port, Some(IntOrString::Int(7079)));
        assert_eq!(svc.metadata.owner_references.as_ref().unwrap(), &vec![owner()]);
        let labels = svc.metadata.labels.as_ref().unwrap();
        assert_eq!(labels["spark-role"], "executor-service");
        assert_eq!(labels["spark-app-selector"], "spark-app");
    }

    #[test]
    fn differences_that_matter_are_detected() {
        let wanted = executor_service("spark-app", "3", 7079, &owner());
        let mut same = wanted.clone();
        same.spec.as_mut().unwrap().cluster_ip = Some("10.96.0.12".into());
        assert!(!differs(&same, &wanted), "server-set fields do not count");
        let mut port = wanted.clone();
        port.spec.as_mut().unwrap().ports.as_mut().unwrap()[0].port = 9999;
        assert!(differs(&port, &wanted));
        let mut selector = wanted.clone();
        selector.spec.as_mut().unwrap().selector.as_mut().unwrap().insert("spark-exec-id".into(), "4".into());
        assert!(differs(&selector, &wanted));
        let mut orphan = wanted.clone();
        orphan.metadata.owner_references = None;
        assert!(differs(&orphan, &wanted));
    }

    #[test]
    fn only_services_labelled_as_ours_are_ours() {
        let ours = executor_service("spark-app", "3", 7079, &owner());
        assert!(is_ours(&ours));
        let mut sparks = ours.clone();
        sparks.metadata.labels.as_mut().unwrap().remove(MANAGED_BY_LABEL);
        assert!(!is_ours(&sparks), "a Spark that ships its own Services labels them its own way");
        let mut other = ours.clone();
        other.metadata.labels.as_mut().unwrap().insert(MANAGED_BY_LABEL.into(), "spark".into());
        assert!(!is_ours(&other));
        let mut unlabelled = ours;
        unlabelled.metadata.labels = None;
        assert!(!is_ours(&unlabelled));
    }

    #[test]
    fn access_denied_names_the_verbs_the_namespace_and_the_fix() {
        let denied = |verbs: Vec<&'static str>| AccessDenied { namespace: "jobs".into(), verbs, reasons: vec![] };
        let all = denied(vec!["get", "create", "delete"]).to_string();
        assert!(all.contains("may not get, create and delete services in namespace jobs"), "{all}");
        assert!(all.contains("Grant them to the driver's service account"), "{all}");
        assert!(all.contains("spark.kubernetes.executor.enableService=false"), "{all}");
        let one = denied(vec!["delete"]).to_string();
        assert!(one.contains("may not delete services in namespace jobs"), "{one}");
        let two = AccessDenied { reasons: vec!["no RBAC policy matched".into()], ..denied(vec!["create", "delete"]) };
        let two = two.to_string();
        assert!(two.contains("may not create and delete services"), "{two}");
        assert!(two.contains("the authorizer said: no RBAC policy matched"), "{two}");
    }

    /// A client whose apiserver answers every SelfSubjectAccessReview with `answer(verb)`:
    /// `Ok(allowed)`, or `Err(http status)` for a review that cannot be made.
    fn reviewing_client(answer: fn(&str) -> Result<bool, u16>) -> kube::Client {
        let service = tower::service_fn(move |request: http::Request<kube::client::Body>| async move {
            assert!(request.uri().path().ends_with("/selfsubjectaccessreviews"), "{}", request.uri());
            let review: serde_json::Value = serde_json::from_slice(&body_bytes(request.into_body()).await).unwrap();
            let verb = review["spec"]["resourceAttributes"]["verb"].as_str().unwrap().to_string();
            assert_eq!(review["spec"]["resourceAttributes"]["resource"], "services");
            assert_eq!(review["spec"]["resourceAttributes"]["namespace"], "jobs");
            let (status, body) = match answer(&verb) {
                Ok(allowed) => {
                    let mut review = review.clone();
                    review["status"] =
                        serde_json::json!({"allowed": allowed, "reason": if allowed { "" } else { "RBAC: no" }});
                    (201, review)
                }
                Err(code) => (
                    code,
                    serde_json::json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code,
                        "reason": "NotFound", "message": "the server could not find the requested resource"}),
                ),
            };
            let response = http::Response::builder()
                .status(status)
                .header("content-type", "application/json")
                .body(kube::client::Body::from(serde_json::to_vec(&body).unwrap()))
                .unwrap();
            Ok::<_, std::convert::Infallible>(response)
        });
        kube::Client::new(service, "jobs")
    }

    /// The bytes of a request body (no body-utilities dependency for one test).
    async fn body_bytes(mut body: kube::client::Body) -> Vec<u8> {
        use http_body::Body as _;
        let mut out = Vec::new();
        while let Some(frame) = std::future::poll_fn(|cx| std::pin::Pin::new(&mut body).poll_frame(cx)).await {
            if let Ok(data) = frame.unwrap().into_data() {
                out.extend_from_slice(&data);
            }
        }
        out
    }

    fn reviewed(answer: fn(&str) -> Result<bool, u16>) -> Result<(), AccessDenied> {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(async {
            ExecutorServices::new(reviewing_client(answer), "jobs", "spark-app", "driver", 7079, 4).check_access().await
        })
    }

    #[test]
    fn the_access_check_fails_naming_each_denied_verb() {
        assert_eq!(reviewed(|_| Ok(true)), Ok(()));
        let e = reviewed(|verb| Ok(verb == "get")).unwrap_err();
        assert_eq!(e.verbs, vec!["create", "delete"]);
        assert_eq!(e.namespace, "jobs");
        assert_eq!(e.reasons, vec!["RBAC: no", "RBAC: no"]);
        assert_eq!(reviewed(|_| Ok(false)).unwrap_err().verbs, vec!["get", "create", "delete"]);
    }

    #[test]
    fn an_access_review_that_cannot_be_made_does_not_block_start_up() {
        assert_eq!(reviewed(|_| Err(404)), Ok(()), "an apiserver that does not serve the reviews");
        assert_eq!(reviewed(|_| Err(403)), Ok(()), "an identity that may not ask");
        // A denial that could be read still counts, even if another review failed.
        assert_eq!(
            reviewed(|verb| if verb == "get" { Err(500) } else { Ok(verb != "delete") }).unwrap_err().verbs,
            vec!["delete"]
        );
    }
}

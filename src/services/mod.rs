//! Executor Services (SPARK-52505): one ClusterIP Service per executor,
//! selecting that executor's pod and exposing its block manager's fixed port,
//! owned by the driver pod. Peers reach the block manager through the Service;
//! once the executor is gone the Service has no endpoint and a connection is
//! refused at once, instead of waiting out a 2-minute connect timeout.
//!
//! The spec builder (`spec`) is pure; [`ExecutorServices`] ensures and deletes
//! them, idempotently, with bounded concurrency and the retries of `retry`, and
//! asks at start-up whether it may (`access`); [`ServiceController`] is the one
//! per app that decides when, fed by whoever sees the pods.
//!
//! Only Services labelled `app.kubernetes.io/managed-by=spark-k8s-native` are
//! ours. SPARK-52505 was never merged and its names could land upstream: a
//! Spark that ships its own executor Services of the same names must find them
//! neither repaired nor deleted by us.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Pod, Service};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, DeleteParams, PostParams, Preconditions};
use tokio::sync::{OnceCell, Semaphore};

use crate::client::SetupError;
use crate::settings::ServiceSettings;

mod access;
mod controller;
mod counters;
mod retry;
mod spec;

pub use controller::{ServiceController, ServiceWork};
pub use counters::{ServiceCounters, ServiceHealth};
use retry::{retry_backoff, retry_delay, transient, ATTEMPTS};
pub use spec::service_name;
use spec::{differs, driver_owner, executor_service, is_ours, MANAGED_BY_LABEL};

/// How long one attempt of a request may take: the request timeout, and the
/// slack every response of the driver's client gets.
fn attempt_deadline(request_timeout: Duration) -> Duration {
    request_timeout + crate::client::RESPONSE_SLACK
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
    /// The longest one attempt of a request may take (the client's own read
    /// timeout may allow a quiet watch far longer).
    attempt_deadline: Duration,
    pub counters: Arc<ServiceCounters>,
}

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
            attempt_deadline: attempt_deadline(crate::settings::default_request_timeout()),
            counters: Arc::default(),
        }
    }

    pub fn app_id(&self) -> &str {
        &self.app_id
    }

    /// Executor Services from Spark's settings, over `client`, which may be the
    /// driver's one client (the informer's): each attempt of a request is bounded
    /// here, as a client built for a long quiet watch would wait its whole length.
    pub fn from_settings(
        client: kube::Client,
        client_settings: &crate::settings::ClientSettings,
        service_settings: &ServiceSettings,
        app_id: &str,
    ) -> Self {
        let services = Self::new(
            client,
            &client_settings.namespace,
            app_id,
            &service_settings.driver_pod_name,
            service_settings.block_manager_port,
            service_settings.max_concurrent_requests,
        );
        services.with_attempt_deadline(attempt_deadline(client_settings.request_timeout))
    }

    /// Executor Services from Spark's settings, with a client of their own: for
    /// a driver without an informer. Must run on the runtime that will drive the requests.
    pub async fn connect(settings: &crate::settings::Settings, app_id: &str) -> Result<Self, SetupError> {
        crate::settings::validate_app_id(app_id)?;
        let service_settings = settings.services()?;
        let config = crate::client::kube_config(
            &settings.client,
            &crate::client::user_agent(app_id),
            // No watch: a response quiet for longer than the request timeout is a dead connection.
            Duration::ZERO,
        )
        .await?;
        let client = kube::Client::try_from(config).map_err(crate::client::ClientError::from)?;
        Ok(Self::from_settings(client, &settings.client, service_settings, app_id))
    }

    /// How long one attempt of a request may take before it is abandoned as a
    /// dead connection and retried.
    pub fn with_attempt_deadline(mut self, deadline: Duration) -> Self {
        self.attempt_deadline = deadline;
        self
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
                let result = tokio::time::timeout(self.attempt_deadline, request())
                    .await
                    .unwrap_or_else(|elapsed| Err(kube::Error::Service(Box::new(elapsed))));
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

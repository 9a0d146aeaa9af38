//! What a Spark driver runs for one app: the executor pod informer and, when
//! executor Services are on, the Service controller subscribed to it. The
//! informer knows nothing of Services; this is where the two meet.

use std::sync::Arc;

use crate::client::SetupError;
use crate::informer::ExecutorPodInformer;
use crate::services::ServiceController;
use crate::settings::Settings;

/// The informer, and the Service controller that follows it, if any.
pub struct ExecutorTracking {
    pub informer: ExecutorPodInformer,
    /// Set when `spark.kubernetes.executor.enableService` is on; stopped with the informer.
    pub services: Option<Arc<ServiceController>>,
}

impl ExecutorTracking {
    /// Builds both from Spark's settings. No pod is listed or watched yet;
    /// with Services on, the apiserver is asked whether the driver may manage
    /// them, so that a missing right fails driver start-up, naming the fix.
    /// Must run on the tokio runtime that will drive them.
    pub async fn connect(settings: &Settings, app_id: &str) -> Result<Self, SetupError> {
        // Two clients, on purpose: the informer's reads allow a quiet watch its whole length, the
        // Services' treat a response quiet past the request timeout as a dead connection, and
        // kube sets the read timeout per client. Sharing one would not save a connection either:
        // HTTP/1.1 holds one for the watch, so the Services' requests need another in any case.
        let informer = ExecutorPodInformer::connect(settings, app_id).await?;
        let services = match &settings.services {
            Some(_) => {
                let controller = Arc::new(ServiceController::connect(settings, app_id).await?);
                informer.subscribe(controller.clone());
                Some(controller)
            }
            None => None,
        };
        Ok(Self { informer, services })
    }
}

//! What a Spark driver runs for one app: the executor pod informer and, when
//! executor Services are on, the Service controller subscribed to it. The
//! informer knows nothing of Services; this is where the two meet.

use std::sync::Arc;

use crate::client::SetupError;
use crate::informer::ExecutorPodInformer;
use crate::services::{ExecutorServices, ServiceController};
use crate::settings::Settings;

/// The informer, and the Service controller that follows it, if any.
pub struct ExecutorTracking {
    pub informer: ExecutorPodInformer,
    /// Set when `spark.kubernetes.executor.enableService` is on; stopped with the informer.
    pub services: Option<Arc<ServiceController>>,
}

impl ExecutorTracking {
    /// Builds both from Spark's settings; no request is sent yet. Must run on
    /// the tokio runtime that will drive them.
    pub async fn connect(settings: &Settings, app_id: &str) -> Result<Self, SetupError> {
        let informer = ExecutorPodInformer::connect(settings, app_id).await?;
        let services = match &settings.services {
            Some(service_settings) => {
                let services = Arc::new(ExecutorServices::connect(settings, app_id).await?);
                let controller = Arc::new(ServiceController::spawn(services, service_settings.delete_after));
                informer.subscribe(controller.clone());
                Some(controller)
            }
            None => None,
        };
        Ok(Self { informer, services })
    }
}

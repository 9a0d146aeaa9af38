//! What a Spark driver runs for one app: the executor pod informer and, when
//! executor Services are on, the Service controller subscribed to it. The
//! informer knows nothing of Services; this is where the two meet.

use std::sync::Arc;

use crate::client::SetupError;
use crate::informer::{ExecutorPodInformer, InformerClient};
use crate::services::{ExecutorServices, ServiceController};
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
        // One app-id check and one client per driver: the informer's. The Services' requests
        // share its connections and credentials, and bound each attempt themselves, since its
        // read timeout allows a quiet watch its whole length.
        crate::settings::validate_app_id(app_id)?;
        let client = InformerClient::connect(settings, app_id).await?;
        let services = match &settings.services {
            Some(service_settings) => {
                let services =
                    ExecutorServices::from_settings(client.client(), &settings.client, service_settings, app_id);
                Some(Arc::new(ServiceController::start(services, service_settings).await?))
            }
            None => None,
        };
        let informer = ExecutorPodInformer::new(client, &settings.client.namespace, app_id, settings.informer.clone());
        if let Some(controller) = &services {
            informer.subscribe(controller.clone());
        }
        Ok(Self { informer, services })
    }
}

//! A kube client from Spark's settings, as Spark's `SparkKubernetesClientFactory`
//! builds its fabric8 client: start from the kubeconfig (or, in cluster mode,
//! the pod's service account), then apply Spark's keys on top.

use std::path::Path;
use std::time::Duration;

use crate::settings::ClientSettings;

/// The pod's service-account files, Spark's defaults in cluster mode.
const SERVICE_ACCOUNT_TOKEN: &str = "/var/run/secrets/kubernetes.io/serviceaccount/token";
const SERVICE_ACCOUNT_CA: &str = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt";

/// How much longer than its timeout a response may take to arrive before the
/// connection is taken for dead.
pub const RESPONSE_SLACK: Duration = Duration::from_secs(5);

/// Why a part that talks to the apiserver (the informer, the executor
/// Services) could not be set up: a setting that cannot be used, a client
/// that cannot be built from good settings, or rights the driver lacks.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error(transparent)]
    Settings(#[from] crate::settings::SettingsError),
    #[error(transparent)]
    Client(#[from] ClientError),
    #[error(transparent)]
    Access(#[from] AccessDenied),
}

/// The driver may not do on services what executor Services need.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{enable}=true, but the driver may not {verbs} services in namespace {namespace} (asked the apiserver with a \
     SelfSubjectAccessReview{why}): executor Services need get, create and delete on services. Grant them to the \
     driver's service account (a Role and RoleBinding in {namespace}), or set {enable}=false",
    enable = crate::settings::keys::ENABLE_SERVICE.name,
    verbs = self.verbs_text(),
    why = self.reasons_text(),
)]
pub struct AccessDenied {
    pub namespace: String,
    /// The verbs denied, in the order get, create, delete.
    pub verbs: Vec<&'static str>,
    /// The authorizer's reasons, when it gave any.
    pub reasons: Vec<String>,
}

impl AccessDenied {
    /// `get`, `create and delete`, `get, create and delete`.
    fn verbs_text(&self) -> String {
        match self.verbs.split_last() {
            None => String::new(),
            Some((last, [])) => last.to_string(),
            Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        }
    }

    fn reasons_text(&self) -> String {
        if self.reasons.is_empty() {
            String::new()
        } else {
            format!("; the authorizer said: {}", self.reasons.join("; "))
        }
    }
}

/// Why no client could be built.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("kubeconfig: {0}")]
    Kubeconfig(String),
    #[error("kube client: {0}")]
    Build(#[from] kube::Error),
}

/// The user agent of every request: names the library, its version and the
/// app, so that an operator can attribute requests in the apiserver's audit log.
pub fn user_agent(app_id: &str) -> String {
    format!("spark-k8s-native/{} (app {app_id})", env!("CARGO_PKG_VERSION"))
}

/// The kube configuration: kubeconfig or service account, then Spark's keys.
///
/// `longest_quiet_response` is the longest time a healthy response may send
/// nothing (a watch between bookmarks); the read timeout is set above it.
pub async fn kube_config(
    settings: &ClientSettings,
    user_agent: &str,
    longest_quiet_response: Duration,
) -> Result<kube::Config, ClientError> {
    let master = settings.master_url.parse().expect("validated by settings");
    let mut config = if settings.cluster_mode {
        let mut config = kube::Config::new(master);
        if Path::new(SERVICE_ACCOUNT_TOKEN).exists() {
            config.auth_info.token_file = Some(SERVICE_ACCOUNT_TOKEN.to_string());
        }
        if Path::new(SERVICE_ACCOUNT_CA).exists() {
            config.root_cert_file = Some(SERVICE_ACCOUNT_CA.into());
        }
        config
    } else {
        let options = kube::config::KubeConfigOptions { context: settings.context.clone(), ..Default::default() };
        match kube::Config::from_kubeconfig(&options).await {
            Ok(mut config) => {
                config.cluster_url = master;
                config
            }
            // No kubeconfig is fine (Spark's keys carry everything); a broken one, or a
            // context asked for but absent, is not.
            Err(e) if settings.context.is_none() && no_kubeconfig() => {
                tracing::debug!("no kubeconfig ({e}); using Spark's keys only");
                kube::Config::new(master)
            }
            Err(e) => return Err(ClientError::Kubeconfig(e.to_string())),
        }
    };
    config.default_namespace = settings.namespace.clone();
    let auth = &settings.auth;
    if let Some(token) = &auth.oauth_token {
        config.auth_info = Default::default();
        config.auth_info.token = Some(token.clone().into());
    } else if let Some(file) = &auth.oauth_token_file {
        config.auth_info = Default::default();
        // kube re-reads the file at least once a minute, so rotated tokens are picked up.
        config.auth_info.token_file = Some(file.display().to_string());
    }
    if let (Some(cert), Some(key)) = (&auth.client_cert_file, &auth.client_key_file) {
        config.auth_info.client_certificate = Some(cert.display().to_string());
        config.auth_info.client_key = Some(key.display().to_string());
        config.auth_info.client_certificate_data = None;
        config.auth_info.client_key_data = None;
    }
    if let Some(ca) = &auth.ca_cert_file {
        config.root_cert = None;
        config.root_cert_file = Some(ca.clone());
    }
    config.accept_invalid_certs = settings.trust_certificates;
    config.connect_timeout = Some(settings.connection_timeout);
    config.read_timeout = Some(settings.request_timeout.max(longest_quiet_response) + RESPONSE_SLACK);
    config.write_timeout = Some(settings.request_timeout);
    // The informer retries every failure itself, with backoff, counting and
    // logging each; kube's own retry would hide 429s and wait up to 1000 s.
    config.default_retry = false;
    config.headers.push((http::header::USER_AGENT, user_agent.parse().expect("ASCII user agent")));
    Ok(config)
}

fn no_kubeconfig() -> bool {
    match std::env::var_os("KUBECONFIG") {
        Some(paths) => std::env::split_paths(&paths).all(|p| !p.exists()),
        None => std::env::home_dir().is_none_or(|home| !home.join(".kube/config").exists()),
    }
}

//! Spark configuration keys -> validated settings.
//!
//! The JNI layer passes `SparkConf` entries as they are (a flat map of
//! strings). Every key is described once, in [`keys`] (name, default, meaning,
//! since); this module parses them with those defaults, and `docs/configuration.md`
//! and the Java constants class are generated from the same table. Every error
//! names the key and the value.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

pub mod keys;
mod render;

use keys::{Key, Valid};

use crate::pod::SparkStateRules;

pub use render::{configuration_md, java_config_keys};

/// A key whose value is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{key}={value:?}: {reason}")]
pub struct SettingsError {
    pub key: String,
    pub value: String,
    pub reason: String,
}

impl SettingsError {
    pub fn new(key: &str, value: &str, reason: impl Into<String>) -> Self {
        // A huge value would make a huge message; its start says enough.
        const SHOWN: usize = 200;
        let value = match value.char_indices().nth(SHOWN) {
            Some((cut, _)) => format!("{}... ({} characters)", &value[..cut], value.chars().count()),
            None => value.to_string(),
        };
        Self { key: key.to_string(), value, reason: reason.into() }
    }
}

/// How the informer does its initial list (and every relist after 410 Gone).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InitialList {
    /// A streaming list (`sendInitialEvents`) when the server supports it,
    /// else a list served from the watch cache.
    Auto,
    /// Always a streaming list (WatchList, Kubernetes 1.34+ by default).
    Streaming,
    /// `resourceVersion=0`: served from the apiserver's watch cache, unpaginated
    /// (the cache ignores limits), as client-go's reflector does.
    WatchCache,
    /// A quorum read from etcd, paginated by `pageSize`.
    Consistent,
}

/// Credentials and trust, as Spark's client factory takes them.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct AuthSettings {
    pub oauth_token: Option<String>,
    pub oauth_token_file: Option<PathBuf>,
    pub ca_cert_file: Option<PathBuf>,
    pub client_key_file: Option<PathBuf>,
    pub client_cert_file: Option<PathBuf>,
}

// Never print the token.
impl std::fmt::Debug for AuthSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthSettings")
            .field("oauth_token", &self.oauth_token.as_ref().map(|_| "<redacted>"))
            .field("oauth_token_file", &self.oauth_token_file)
            .field("ca_cert_file", &self.ca_cert_file)
            .field("client_key_file", &self.client_key_file)
            .field("client_cert_file", &self.client_cert_file)
            .finish()
    }
}

/// Spark's default request timeout (`spark.kubernetes.driver.requestTimeout`), as the key table
/// gives it: for whatever is built without Spark's settings.
pub fn default_request_timeout() -> Duration {
    Conf(&HashMap::new()).duration(&keys::REQUEST_TIMEOUT).expect("the key table's default parses")
}

/// Where the apiserver is and how to talk to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientSettings {
    /// `spark.kubernetes.submitInDriver`: the driver runs in a pod (cluster mode).
    pub cluster_mode: bool,
    /// `spark.master` minus `k8s://` in client mode; `spark.kubernetes.driver.master` in cluster mode.
    pub master_url: String,
    pub namespace: String,
    /// kubeconfig context to start from (`spark.kubernetes.context`).
    pub context: Option<String>,
    pub auth: AuthSettings,
    pub trust_certificates: bool,
    pub request_timeout: Duration,
    pub connection_timeout: Duration,
}

/// How the informer and the lister behave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InformerSettings {
    /// Zero: no resync.
    pub informer_resync_interval: Duration,
    /// The lister takes a full snapshot only from a cache proven current within this.
    pub stale_bound: Duration,
    /// Server-side timeout of each watch request; a healthy watch shows a sign
    /// of life (bookmark or reconnect) at least this often.
    pub watch_timeout: Duration,
    /// How often the lister replaces Spark's snapshot (`listerPollingInterval`).
    pub lister_polling_interval: Duration,
    pub initial_list: InitialList,
    pub page_size: u32,
    pub initial_list_timeout: Duration,
    /// How the driver's Spark classifies executor pods.
    pub spark_states: SparkStateRules,
}

impl InformerSettings {
    /// How long the apiserver may be silent on a healthy watch: one watch's length (it may end
    /// with nothing to say) plus a third of the stale bound for the reconnect, and never less than
    /// the stale bound. Silence past it means the watch is dead (a black hole, an outage): the
    /// informer relists. With watches of two thirds of the stale bound it is the stale bound.
    pub fn silence_bound(&self) -> Duration {
        (self.watch_timeout + self.stale_bound / 3).max(self.stale_bound)
    }
}

/// Executor Services (SPARK-52505), when `spark.kubernetes.executor.enableService=true`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceSettings {
    /// `spark.blockManager.port`: the fixed port every Service exposes.
    pub block_manager_port: u16,
    /// `spark.kubernetes.driver.pod.name`: the owner of every Service.
    pub driver_pod_name: String,
    /// Delete an executor's Service this long after its pod is gone (300 s by
    /// default, as SPARK-52505's branch); zero: keep it as long as the driver.
    pub delete_after: Duration,
    /// Requests for Services in flight at most.
    pub max_concurrent_requests: usize,
    /// The name executors advertise (the Java feature step writes it into the pod).
    pub advertised_name: AdvertisedName,
}

/// `spark.kubernetes.native.service.advertisedName`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AdvertisedName {
    /// The Service's name: resolves within the executors' namespace.
    Short,
    /// `<service>.<namespace>.svc`: resolves from every pod of the cluster.
    Namespaced,
}

/// Everything the native side reads from `SparkConf`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    pub client: ClientSettings,
    pub informer: InformerSettings,
    pub services: Option<ServiceSettings>,
    /// Keys under `spark.kubernetes.native.` that are not ours, with the key they probably meant.
    pub unknown_keys: Vec<(String, Option<&'static str>)>,
}

impl Settings {
    /// Parses Spark's keys. Keys not listed here are ignored (SparkConf holds many).
    pub fn from_spark_conf(conf: &HashMap<String, String>) -> Result<Settings, SettingsError> {
        let conf = Conf(conf);
        let cluster_mode = conf.bool(&keys::SUBMIT_IN_DRIVER)?;
        let (master_url, auth_prefix) = if cluster_mode {
            let url = conf.value(&keys::DRIVER_MASTER);
            (validate_url(keys::DRIVER_MASTER.name, url)?, keys::CLUSTER_MODE_AUTH_PREFIX)
        } else {
            let master_key = keys::MASTER.name;
            let master = conf.get(master_key).ok_or_else(|| {
                SettingsError::new(master_key, "", "required: the k8s://https://host:port master URL")
            })?;
            let url = master.strip_prefix("k8s://").ok_or_else(|| {
                SettingsError::new(master_key, master, "must start with k8s:// (e.g. k8s://https://host:6443)")
            })?;
            // Spark accepts k8s://host:port and means https.
            let url = if url.contains("://") { url.to_string() } else { format!("https://{url}") };
            (validate_url(master_key, &url)?, keys::CLIENT_MODE_AUTH_PREFIX)
        };
        let auth_key = |name: &str| format!("{auth_prefix}.{name}");
        let auth = AuthSettings {
            oauth_token: conf.non_empty(&auth_key(keys::OAUTH_TOKEN))?.map(str::to_string),
            oauth_token_file: conf.file_with(&auth_key(keys::OAUTH_TOKEN_FILE), |text| {
                (!text.trim().is_empty()).then_some(()).ok_or("is empty: no token in it")
            })?,
            ca_cert_file: conf.file_with(&auth_key(keys::CA_CERT_FILE), pem("CERTIFICATE"))?,
            client_key_file: conf.file_with(&auth_key(keys::CLIENT_KEY_FILE), pem("PRIVATE KEY"))?,
            client_cert_file: conf.file_with(&auth_key(keys::CLIENT_CERT_FILE), pem("CERTIFICATE"))?,
        };
        if auth.oauth_token.is_some() && auth.oauth_token_file.is_some() {
            return Err(SettingsError::new(
                &auth_key(keys::OAUTH_TOKEN_FILE),
                conf.get(&auth_key(keys::OAUTH_TOKEN_FILE)).unwrap_or_default(),
                format!("cannot be set together with {}", auth_key(keys::OAUTH_TOKEN)),
            ));
        }
        if auth.client_cert_file.is_some() != auth.client_key_file.is_some() {
            let (set, missing) = if auth.client_cert_file.is_some() {
                (keys::CLIENT_CERT_FILE, keys::CLIENT_KEY_FILE)
            } else {
                (keys::CLIENT_KEY_FILE, keys::CLIENT_CERT_FILE)
            };
            return Err(SettingsError::new(
                &auth_key(set),
                conf.get(&auth_key(set)).unwrap_or_default(),
                format!("needs {} as well", auth_key(missing)),
            ));
        }
        let namespace = conf.value(&keys::NAMESPACE);
        validate_dns_label(keys::NAMESPACE.name, namespace)?;
        let client = ClientSettings {
            cluster_mode,
            master_url,
            namespace: namespace.to_string(),
            context: conf.non_empty(keys::CONTEXT.name)?.map(str::to_string),
            auth,
            trust_certificates: conf.bool(&keys::TRUST_CERTIFICATES)?,
            // Spark's timeouts are integers of milliseconds.
            request_timeout: conf.duration(&keys::REQUEST_TIMEOUT)?,
            connection_timeout: conf.duration(&keys::CONNECTION_TIMEOUT)?,
        };

        let missing_pod_detect_delta = conf.duration(&keys::MISSING_POD_DETECT_DELTA)?;
        let stale_bound = conf.duration_or(&keys::STALE_BOUND, missing_pod_detect_delta / 2)?;
        let lister_polling_interval = conf.duration(&keys::LISTER_POLLING_INTERVAL)?;
        // Renewals at two thirds of the stale bound keep an idle cache proven current at all times;
        // the lister needs a proof only once per round, and takes its snapshot right after one
        // (see `InformerSettings::silence_bound`), so watches as long as its interval prove enough
        // with fewer WATCH requests.
        // Within the key's range: the apiserver's bookmark, which shows a watch served as new as the
        // cache (`informer::listwatch`), comes 2 s before the watch's end, and none to a shorter watch.
        let default_watch_timeout = keys::WATCH_TIMEOUT.valid.clamp((stale_bound * 2 / 3).max(lister_polling_interval));
        let watch_timeout = conf.duration_or(&keys::WATCH_TIMEOUT, default_watch_timeout)?;
        let informer = InformerSettings {
            informer_resync_interval: conf.duration(&keys::INFORMER_RESYNC_INTERVAL)?,
            stale_bound,
            watch_timeout,
            lister_polling_interval,
            initial_list: match conf.word(&keys::INITIAL_LIST)? {
                "streaming" => InitialList::Streaming,
                "watchCache" => InitialList::WatchCache,
                "consistent" => InitialList::Consistent,
                _ => InitialList::Auto,
            },
            page_size: conf.count(&keys::PAGE_SIZE)?,
            initial_list_timeout: conf.duration(&keys::INITIAL_LIST_TIMEOUT)?,
            spark_states: spark_state_rules(&conf)?,
        };
        let services = if conf.bool(&keys::ENABLE_SERVICE)? {
            let (enable, port_key, driver_key) =
                (keys::ENABLE_SERVICE.name, keys::BLOCK_MANAGER_PORT.name, keys::DRIVER_POD_NAME.name);
            let why = format!("required when {enable}=true: every executor Service exposes this fixed port");
            let port = match conf.get(port_key).map(str::trim) {
                None => return Err(SettingsError::new(port_key, "", why)),
                Some(v) => match v.parse::<u16>() {
                    Ok(p) if p >= 1024 => p,
                    _ => return Err(SettingsError::new(port_key, v, block_manager_port_rule(enable))),
                },
            };
            let driver_pod_name = conf.non_empty(driver_key)?.ok_or_else(|| {
                SettingsError::new(
                    driver_key,
                    "",
                    format!("required when {enable}=true: the driver pod owns every executor Service"),
                )
            })?;
            Some(ServiceSettings {
                block_manager_port: port,
                driver_pod_name: driver_pod_name.to_string(),
                delete_after: conf.duration(&keys::SERVICE_DELETE_AFTER)?,
                max_concurrent_requests: conf.count(&keys::SERVICE_MAX_CONCURRENT_REQUESTS)? as usize,
                advertised_name: match conf.word(&keys::SERVICE_ADVERTISED_NAME)? {
                    "namespaced" => AdvertisedName::Namespaced,
                    _ => AdvertisedName::Short,
                },
            })
        } else {
            None
        };
        let unknown_keys = conf
            .0
            .keys()
            .filter(|k| k.starts_with(keys::NATIVE_PREFIX) && !keys::native_keys().any(|n| n == k.as_str()))
            .filter(|k| !k.starts_with("spark.kubernetes.native.library."))
            .map(|k| (k.clone(), closest_key(k)))
            .collect();
        Ok(Settings { client, informer, services, unknown_keys })
    }
}

impl Settings {
    /// The executor Services' settings, or the error a caller that needs them gives when
    /// `spark.kubernetes.executor.enableService` is off.
    pub fn services(&self) -> Result<&ServiceSettings, SettingsError> {
        self.services.as_ref().ok_or_else(|| {
            SettingsError::new(keys::ENABLE_SERVICE.name, "false", "must be true to manage executor Services")
        })
    }

    /// Logs each unknown key under `spark.kubernetes.native.` at WARN, with the key it most likely
    /// meant. Called once per native handle a driver creates, whichever parts it runs.
    pub fn warn_unknown_keys(&self) {
        for (key, likely) in &self.unknown_keys {
            match likely {
                Some(k) => tracing::warn!("unknown key {key}; did you mean {k}?"),
                None => tracing::warn!("unknown key {key}; it is ignored"),
            }
        }
    }
}

/// How the driver's Spark classifies executor pods, from its SparkConf.
pub fn spark_state_rules_from_spark_conf(conf: &HashMap<String, String>) -> Result<SparkStateRules, SettingsError> {
    spark_state_rules(&Conf(conf))
}

fn spark_state_rules(conf: &Conf) -> Result<SparkStateRules, SettingsError> {
    Ok(SparkStateRules {
        // The Java side sets it from Spark's own entry, whose default differs by line.
        check_all_containers: match conf.get(keys::CHECK_ALL_CONTAINERS.name) {
            Some(_) => conf.bool(&keys::CHECK_ALL_CONTAINERS)?,
            None => SparkStateRules::default().check_all_containers,
        },
        container_name: conf
            .non_empty(keys::EXECUTOR_CONTAINER_NAME.name)?
            .unwrap_or(crate::pod::DEFAULT_EXECUTOR_CONTAINER_NAME)
            .to_string(),
    })
}

/// Why a block manager port is refused with Services on. Spark's own check
/// takes 0 too, so the message says why this one is narrower.
fn block_manager_port_rule(enable_key: &str) -> String {
    format!(
        "must be a port from 1024 to 65535 when {enable_key}=true. Spark itself accepts 0 or 1024 to 65535, \
         but 0 makes each executor pick a random free port when it starts, while its Service is created before \
         the executor runs and must name the one fixed port it forwards to"
    )
}

/// Read access with Spark's syntax and errors that name the key.
struct Conf<'a>(&'a HashMap<String, String>);

impl<'a> Conf<'a> {
    fn get(&self, key: &str) -> Option<&'a str> {
        self.0.get(key).map(String::as_str)
    }

    fn non_empty(&self, key: &str) -> Result<Option<&'a str>, SettingsError> {
        match self.get(key) {
            Some(v) if v.trim().is_empty() => Err(SettingsError::new(key, v, "is empty; remove it or give a value")),
            other => Ok(other.map(str::trim)),
        }
    }

    /// A readable file whose text `check` accepts.
    fn file_with(
        &self,
        key: &str,
        check: impl Fn(&str) -> Result<(), &'static str>,
    ) -> Result<Option<PathBuf>, SettingsError> {
        let Some(path) = self.non_empty(key)? else { return Ok(None) };
        match std::fs::metadata(path) {
            Ok(m) if m.is_file() => match std::fs::read(path) {
                Ok(bytes) => {
                    check(&String::from_utf8_lossy(&bytes)).map_err(|reason| SettingsError::new(key, path, reason))?;
                    Ok(Some(PathBuf::from(path)))
                }
                Err(e) => Err(SettingsError::new(key, path, format!("cannot be read: {e}"))),
            },
            Ok(_) => Err(SettingsError::new(key, path, "is not a file")),
            Err(e) => Err(SettingsError::new(key, path, format!("cannot be read: {e}"))),
        }
    }

    /// The key's value, or its default from the table.
    fn value(&self, key: &Key) -> &'a str {
        self.get(key.name).unwrap_or_else(|| key.default.value().expect("a key read with its default has one"))
    }

    fn bool(&self, key: &Key) -> Result<bool, SettingsError> {
        let v = self.value(key);
        match v.trim().to_ascii_lowercase().as_str() {
            "true" => Ok(true),
            "false" => Ok(false),
            _ => Err(SettingsError::new(key.name, v, "must be true or false")),
        }
    }

    /// A duration, checked as its key says.
    fn duration(&self, key: &Key) -> Result<Duration, SettingsError> {
        let v = self.value(key);
        parse_spark_duration(v)
            .and_then(|d| key.valid.check_duration(d))
            .map_err(|reason| SettingsError::new(key.name, v, reason))
    }

    /// A duration whose default derives from other keys; checked as its key says.
    fn duration_or(&self, key: &Key, default: Duration) -> Result<Duration, SettingsError> {
        match self.get(key.name) {
            None => key.valid.check_duration(default).map_err(|reason| SettingsError::new(key.name, "", reason)),
            Some(_) => self.duration(key),
        }
    }

    /// A whole number, checked as its key says.
    fn count(&self, key: &Key) -> Result<u32, SettingsError> {
        let v = self.value(key);
        match v.trim().parse::<u32>() {
            Ok(0) if key.valid == Valid::Positive => {
                Err(SettingsError::new(key.name, v, "must be a whole number greater than zero"))
            }
            Ok(n) => Ok(n),
            Err(_) => Err(SettingsError::new(key.name, v, "must be a whole number")),
        }
    }

    /// One of the words its key allows.
    fn word(&self, key: &Key) -> Result<&'a str, SettingsError> {
        let v = self.value(key).trim();
        match key.valid {
            Valid::OneOf(words) if !words.contains(&v) => {
                Err(SettingsError::new(key.name, v, format!("must be one of {}", words.join(", "))))
            }
            _ => Ok(v),
        }
    }
}

/// A check that a file holds a PEM block whose label ends with `label`
/// (`CERTIFICATE`, or `PRIVATE KEY` for any key type).
fn pem(label: &'static str) -> impl Fn(&str) -> Result<(), &'static str> {
    move |text| {
        let found =
            text.lines().any(|l| l.starts_with("-----BEGIN ") && l.trim_end().ends_with(&format!("{label}-----")));
        if found {
            Ok(())
        } else if label == "CERTIFICATE" {
            Err("holds no PEM certificate (-----BEGIN CERTIFICATE-----)")
        } else {
            Err("holds no PEM private key (-----BEGIN ... PRIVATE KEY-----)")
        }
    }
}

/// Parses a duration the way Spark's `JavaUtils.timeStringAs` does: a whole
/// number with an optional unit (`us`, `ms`, `s`, `m`/`min`, `h`, `d`); a bare
/// number is milliseconds, as for Spark's interval keys.
pub fn parse_spark_duration(value: &str) -> Result<Duration, String> {
    let v = value.trim().to_ascii_lowercase();
    if v.is_empty() {
        return Err("is empty; expected a duration such as 30s, 500ms or 2min".into());
    }
    if v.starts_with('-') {
        return Err("must not be negative".into());
    }
    let split = v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len());
    let (number, unit) = v.split_at(split);
    let n: u64 = number.parse().map_err(|_| format!("{value:?} is not a duration such as 30s, 500ms or 2min"))?;
    let per_unit = |nanos: u64| -> Result<Duration, String> {
        n.checked_mul(nanos)
            .filter(|total| *total <= 365 * 24 * 3600 * 1_000_000_000)
            .map(Duration::from_nanos)
            .ok_or_else(|| "is longer than a year".to_string())
    };
    match unit.trim() {
        "us" => per_unit(1_000),
        "" | "ms" => per_unit(1_000_000),
        "s" => per_unit(1_000_000_000),
        "m" | "min" => per_unit(60 * 1_000_000_000),
        "h" => per_unit(3600 * 1_000_000_000),
        "d" => per_unit(24 * 3600 * 1_000_000_000),
        other => Err(format!("unknown unit {other:?}; use us, ms, s, m or min, h, d")),
    }
}

fn validate_url(key: &str, url: &str) -> Result<String, SettingsError> {
    let parsed: http::Uri = url.parse().map_err(|e| SettingsError::new(key, url, format!("is not a URL: {e}")))?;
    match parsed.scheme_str() {
        Some("https") | Some("http") => {}
        _ => return Err(SettingsError::new(key, url, "must be an http(s):// URL")),
    }
    if parsed.host().is_none_or(str::is_empty) {
        return Err(SettingsError::new(key, url, "has no host"));
    }
    Ok(url.trim_end_matches('/').to_string())
}

fn validate_dns_label(key: &str, value: &str) -> Result<(), SettingsError> {
    let ok = !value.is_empty()
        && value.len() <= 63
        && value.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !value.starts_with('-')
        && !value.ends_with('-');
    if ok {
        Ok(())
    } else {
        Err(SettingsError::new(key, value, "must be a DNS-1123 label (lower case letters, digits, '-', at most 63)"))
    }
}

/// Validates a Spark application id as a label value (it is the value of
/// `spark-app-selector`).
pub fn validate_app_id(app_id: &str) -> Result<(), SettingsError> {
    const KEY: &str = "applicationId";
    if app_id.trim().is_empty() {
        return Err(SettingsError::new(KEY, app_id, "is empty"));
    }
    let valid = app_id.len() <= 63
        && app_id.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        && app_id.as_bytes().first().is_some_and(u8::is_ascii_alphanumeric)
        && app_id.as_bytes().last().is_some_and(u8::is_ascii_alphanumeric);
    if valid {
        Ok(())
    } else {
        Err(SettingsError::new(
            KEY,
            app_id,
            "is not a valid label value (at most 63 of A-Z a-z 0-9 - _ ., starting and ending with a letter or digit)",
        ))
    }
}

/// The key of ours closest to a mistyped one, if it is close enough.
fn closest_key(key: &str) -> Option<&'static str> {
    keys::native_keys()
        .map(|k| (edit_distance(&key.to_ascii_lowercase(), &k.to_ascii_lowercase()), k))
        .filter(|(d, _)| *d <= 3)
        .min()
        .map(|(_, k)| k)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = if ca == *cb { prev } else { 1 + prev.min(row[j]).min(row[j + 1]) };
            prev = cur;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conf(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        let mut m: HashMap<String, String> = [(keys::MASTER.name, "k8s://https://127.0.0.1:6443")]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        for (k, v) in pairs {
            m.insert(k.to_string(), v.to_string());
        }
        m
    }

    fn err(pairs: &[(&str, &str)]) -> SettingsError {
        Settings::from_spark_conf(&conf(pairs)).expect_err("should be rejected")
    }

    #[test]
    fn defaults_follow_spark_and_the_informer_pull_request() {
        let s = Settings::from_spark_conf(&conf(&[])).unwrap();
        assert_eq!(s.client.master_url, "https://127.0.0.1:6443");
        assert_eq!(s.client.namespace, "default");
        assert!(!s.client.trust_certificates);
        assert_eq!(s.client.request_timeout, Duration::from_secs(10));
        assert_eq!(s.informer.informer_resync_interval, Duration::ZERO);
        assert_eq!(s.informer.stale_bound, Duration::from_secs(15));
        assert_eq!(s.informer.lister_polling_interval, Duration::from_secs(30));
        assert_eq!(s.informer.watch_timeout, Duration::from_secs(30));
        assert_eq!(s.informer.silence_bound(), Duration::from_secs(35));
        assert_eq!(s.informer.initial_list, InitialList::Auto);
    }

    #[test]
    fn the_default_request_timeout_outside_settings_is_the_tables() {
        let s = Settings::from_spark_conf(&conf(&[])).unwrap();
        assert_eq!(default_request_timeout(), s.client.request_timeout);
    }

    #[test]
    fn asking_for_services_that_are_off_names_the_key_that_turns_them_on() {
        let s = Settings::from_spark_conf(&conf(&[])).unwrap();
        let e = s.services().expect_err("Services are off by default");
        assert_eq!(e.key, keys::ENABLE_SERVICE.name, "{e}");
    }

    #[test]
    fn stale_bound_defaults_to_half_the_missing_pod_detect_delta() {
        let s = Settings::from_spark_conf(&conf(&[(keys::MISSING_POD_DETECT_DELTA.name, "2min")])).unwrap();
        assert_eq!(s.informer.stale_bound, Duration::from_secs(60));
        assert_eq!(s.informer.watch_timeout, Duration::from_secs(40));
        assert_eq!(s.informer.silence_bound(), Duration::from_secs(60));
    }

    #[test]
    fn watches_last_the_lister_polling_interval_or_two_thirds_of_the_stale_bound_whichever_is_longer() {
        let watch = |pairs: &[(&str, &str)]| Settings::from_spark_conf(&conf(pairs)).unwrap().informer.watch_timeout;
        assert_eq!(watch(&[(keys::LISTER_POLLING_INTERVAL.name, "100ms")]), Duration::from_secs(10));
        assert_eq!(watch(&[(keys::LISTER_POLLING_INTERVAL.name, "1min")]), Duration::from_secs(60));
        assert_eq!(watch(&[(keys::LISTER_POLLING_INTERVAL.name, "10min")]), Duration::from_secs(290));
        assert_eq!(
            watch(&[(keys::LISTER_POLLING_INTERVAL.name, "100ms"), (keys::STALE_BOUND.name, "600ms")]),
            Duration::from_secs(3),
            "no watch shorter than the apiserver's bookmark needs"
        );
        assert_eq!(watch(&[(keys::WATCH_TIMEOUT.name, "5s")]), Duration::from_secs(5));
        let short = err(&[(keys::WATCH_TIMEOUT.name, "2s")]);
        assert!(short.to_string().contains("between 3s and 290s"), "{short}");
        let err = err(&[(keys::LISTER_POLLING_INTERVAL.name, "0s")]);
        assert!(err.to_string().contains(keys::LISTER_POLLING_INTERVAL.name), "{err}");
    }

    #[test]
    fn every_word_a_key_allows_is_read_as_its_own_choice() {
        let initial_list = |word: &str| {
            Settings::from_spark_conf(&conf(&[(keys::INITIAL_LIST.name, word)])).unwrap().informer.initial_list
        };
        let advertised_name = |word: &str| {
            let services = [
                (keys::ENABLE_SERVICE.name, "true"),
                (keys::BLOCK_MANAGER_PORT.name, "7079"),
                (keys::DRIVER_POD_NAME.name, "driver"),
                (keys::SERVICE_ADVERTISED_NAME.name, word),
            ];
            Settings::from_spark_conf(&conf(&services)).unwrap().services.unwrap().advertised_name
        };
        let Valid::OneOf(lists) = keys::INITIAL_LIST.valid else { panic!("initialList takes words") };
        let read: std::collections::HashSet<String> = lists.iter().map(|w| format!("{:?}", initial_list(w))).collect();
        assert_eq!(read.len(), lists.len(), "{lists:?} -> {read:?}");
        let Valid::OneOf(names) = keys::SERVICE_ADVERTISED_NAME.valid else { panic!("advertisedName takes words") };
        let read: std::collections::HashSet<String> =
            names.iter().map(|w| format!("{:?}", advertised_name(w))).collect();
        assert_eq!(read.len(), names.len(), "{names:?} -> {read:?}");
    }

    #[test]
    fn client_mode_takes_spark_master_and_client_auth_keys() {
        let token = std::env::temp_dir().join("spark-k8s-native-settings-token");
        std::fs::write(&token, "t").unwrap();
        let s = Settings::from_spark_conf(&conf(&[
            (keys::MASTER.name, "k8s://10.0.0.1:443"),
            ("spark.kubernetes.authenticate.oauthTokenFile", token.to_str().unwrap()),
            (keys::NAMESPACE.name, "spark-jobs"),
        ]))
        .unwrap();
        assert_eq!(s.client.master_url, "https://10.0.0.1:443");
        assert_eq!(s.client.auth.oauth_token_file.as_deref(), Some(token.as_path()));
        assert_eq!(s.client.namespace, "spark-jobs");
    }

    #[test]
    fn cluster_mode_takes_the_driver_master_and_mounted_auth_keys() {
        let s = Settings::from_spark_conf(&conf(&[
            (keys::SUBMIT_IN_DRIVER.name, "true"),
            ("spark.kubernetes.authenticate.driver.mounted.oauthToken", "secret"),
            ("spark.kubernetes.authenticate.oauthToken", "ignored-in-cluster-mode"),
        ]))
        .unwrap();
        assert_eq!(s.client.master_url, keys::DRIVER_MASTER.default.value().unwrap());
        assert_eq!(s.client.auth.oauth_token.as_deref(), Some("secret"));
        assert!(!format!("{:?}", s).contains("secret"), "the token must never be printed");
    }

    #[test]
    fn every_bad_value_names_its_key() {
        let cases: Vec<(Vec<(&str, &str)>, &str)> = vec![
            (vec![(keys::MASTER.name, "local[2]")], keys::MASTER.name),
            (vec![(keys::MASTER.name, "k8s://")], keys::MASTER.name),
            (vec![(keys::MASTER.name, "k8s://ftp://host")], keys::MASTER.name),
            (
                vec![(keys::SUBMIT_IN_DRIVER.name, "true"), (keys::DRIVER_MASTER.name, "not a url")],
                keys::DRIVER_MASTER.name,
            ),
            (vec![(keys::NAMESPACE.name, "Bad_Namespace")], keys::NAMESPACE.name),
            (vec![(keys::NAMESPACE.name, "")], keys::NAMESPACE.name),
            (vec![(keys::TRUST_CERTIFICATES.name, "yes")], keys::TRUST_CERTIFICATES.name),
            (vec![(keys::MISSING_POD_DETECT_DELTA.name, "-5s")], keys::MISSING_POD_DETECT_DELTA.name),
            (vec![(keys::MISSING_POD_DETECT_DELTA.name, "0")], keys::MISSING_POD_DETECT_DELTA.name),
            (vec![(keys::INITIAL_LIST_TIMEOUT.name, "30 parsecs")], keys::INITIAL_LIST_TIMEOUT.name),
            (vec![(keys::INFORMER_RESYNC_INTERVAL.name, "abc")], keys::INFORMER_RESYNC_INTERVAL.name),
            (vec![(keys::MISSING_POD_DETECT_DELTA.name, "99999999999d")], keys::MISSING_POD_DETECT_DELTA.name),
            (vec![(keys::REQUEST_TIMEOUT.name, "")], keys::REQUEST_TIMEOUT.name),
            (vec![(keys::WATCH_TIMEOUT.name, "10min")], keys::WATCH_TIMEOUT.name),
            (vec![(keys::INITIAL_LIST.name, "fast")], keys::INITIAL_LIST.name),
            (vec![(keys::PAGE_SIZE.name, "0")], keys::PAGE_SIZE.name),
            (vec![("spark.kubernetes.authenticate.oauthToken", "  ")], "spark.kubernetes.authenticate.oauthToken"),
            (
                vec![("spark.kubernetes.authenticate.caCertFile", "/nonexistent/ca.crt")],
                "spark.kubernetes.authenticate.caCertFile",
            ),
            (
                vec![("spark.kubernetes.authenticate.clientCertFile", "/")],
                "spark.kubernetes.authenticate.clientCertFile",
            ),
        ];
        for (pairs, key) in cases {
            let e = err(&pairs);
            assert_eq!(e.key, key, "{pairs:?} -> {e}");
            assert!(e.to_string().starts_with(key), "{e}");
        }
        let e = Settings::from_spark_conf(&HashMap::new()).unwrap_err();
        assert_eq!(e.key, keys::MASTER.name);
    }

    #[test]
    fn executor_services_need_the_block_manager_port_and_the_driver_pod() {
        assert_eq!(Settings::from_spark_conf(&conf(&[])).unwrap().services, None);
        let e = err(&[(keys::ENABLE_SERVICE.name, "true"), (keys::DRIVER_POD_NAME.name, "driver")]);
        assert_eq!(e.key, keys::BLOCK_MANAGER_PORT.name);
        assert!(e.reason.contains(keys::ENABLE_SERVICE.name), "{e}");
        let e = err(&[
            (keys::ENABLE_SERVICE.name, "true"),
            (keys::DRIVER_POD_NAME.name, "driver"),
            (keys::BLOCK_MANAGER_PORT.name, "0"),
        ]);
        assert_eq!(e.key, keys::BLOCK_MANAGER_PORT.name);
        let e = err(&[(keys::ENABLE_SERVICE.name, "true"), (keys::BLOCK_MANAGER_PORT.name, "7079")]);
        assert_eq!(e.key, keys::DRIVER_POD_NAME.name);
        let s = Settings::from_spark_conf(&conf(&[
            (keys::ENABLE_SERVICE.name, "true"),
            (keys::BLOCK_MANAGER_PORT.name, "7079"),
            (keys::DRIVER_POD_NAME.name, "driver"),
            (keys::SERVICE_DELETE_AFTER.name, "2min"),
        ]))
        .unwrap();
        let services = s.services.unwrap();
        assert_eq!(services.block_manager_port, 7079);
        assert_eq!(services.delete_after, Duration::from_secs(120));
        assert_eq!(services.max_concurrent_requests, 10);
        let s = Settings::from_spark_conf(&conf(&[
            (keys::ENABLE_SERVICE.name, "true"),
            (keys::BLOCK_MANAGER_PORT.name, "7079"),
            (keys::DRIVER_POD_NAME.name, "driver"),
        ]))
        .unwrap();
        let services = s.services.unwrap();
        assert_eq!(services.delete_after, Duration::from_secs(300), "SPARK-52505's cool-down");
        assert_eq!(services.advertised_name, AdvertisedName::Short);
    }

    #[test]
    fn executors_advertise_the_short_or_the_namespaced_name() {
        let with_style = |style: &str| {
            Settings::from_spark_conf(&conf(&[
                (keys::ENABLE_SERVICE.name, "true"),
                (keys::BLOCK_MANAGER_PORT.name, "7079"),
                (keys::DRIVER_POD_NAME.name, "driver"),
                (keys::SERVICE_ADVERTISED_NAME.name, style),
            ]))
        };
        assert_eq!(with_style("namespaced").unwrap().services.unwrap().advertised_name, AdvertisedName::Namespaced);
        assert_eq!(with_style(" short ").unwrap().services.unwrap().advertised_name, AdvertisedName::Short);
        let e = with_style("fqdn").unwrap_err();
        assert_eq!(e.key, keys::SERVICE_ADVERTISED_NAME.name);
        assert!(e.reason.contains("one of short, namespaced"), "{e}");
    }

    #[test]
    fn with_services_the_block_manager_port_is_a_fixed_port_from_1024() {
        let with_port = |port: &str| {
            Settings::from_spark_conf(&conf(&[
                (keys::ENABLE_SERVICE.name, "true"),
                (keys::DRIVER_POD_NAME.name, "driver"),
                (keys::BLOCK_MANAGER_PORT.name, port),
            ]))
        };
        for bad in ["0", "1", "80", "1023", "65536", "-1", "7079.5", "abc", ""] {
            let e = with_port(bad).expect_err(bad);
            assert_eq!(e.key, keys::BLOCK_MANAGER_PORT.name, "{bad:?}: {e}");
            assert!(e.reason.contains("1024 to 65535"), "{bad:?}: {e}");
            assert!(e.reason.contains("Spark itself accepts 0"), "Spark's rule: {e}");
            assert!(e.reason.contains("random"), "why 0 does not work: {e}");
        }
        for (good, port) in [("1024", 1024), (" 7079 ", 7079), ("65535", 65535)] {
            assert_eq!(with_port(good).unwrap().services.unwrap().block_manager_port, port, "{good:?}");
        }
        // Without Services Spark's random port is none of our business.
        let s = Settings::from_spark_conf(&conf(&[(keys::BLOCK_MANAGER_PORT.name, "0")])).unwrap();
        assert_eq!(s.services, None);
    }

    #[test]
    fn token_and_token_file_together_are_refused() {
        let token = std::env::temp_dir().join("spark-k8s-native-settings-token2");
        std::fs::write(&token, "t").unwrap();
        let e = err(&[
            ("spark.kubernetes.authenticate.oauthToken", "abc"),
            ("spark.kubernetes.authenticate.oauthTokenFile", token.to_str().unwrap()),
        ]);
        assert_eq!(e.key, "spark.kubernetes.authenticate.oauthTokenFile");
        assert!(e.reason.contains("oauthToken"), "{e}");
        assert!(!e.to_string().contains("abc"), "the token must not appear in the error: {e}");
    }

    #[test]
    fn client_cert_without_key_is_refused() {
        let cert = std::env::temp_dir().join("spark-k8s-native-settings-cert");
        std::fs::write(&cert, "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n").unwrap();
        let e = err(&[("spark.kubernetes.authenticate.clientCertFile", cert.to_str().unwrap())]);
        assert!(e.reason.contains("clientKeyFile"), "{e}");
    }

    #[test]
    fn credential_files_must_hold_what_their_key_says() {
        let dir = std::env::temp_dir();
        let garbage = dir.join("spark-k8s-native-settings-garbage");
        std::fs::write(&garbage, "not a certificate").unwrap();
        let empty = dir.join("spark-k8s-native-settings-empty");
        std::fs::write(&empty, "  \n").unwrap();
        for (key, file) in [
            ("spark.kubernetes.authenticate.caCertFile", &garbage),
            ("spark.kubernetes.authenticate.oauthTokenFile", &empty),
        ] {
            let e = err(&[(key, file.to_str().unwrap())]);
            assert_eq!(e.key, key, "{e}");
        }
        let e = err(&[
            ("spark.kubernetes.authenticate.clientCertFile", garbage.to_str().unwrap()),
            ("spark.kubernetes.authenticate.clientKeyFile", garbage.to_str().unwrap()),
        ]);
        assert!(e.key.ends_with("File"), "{e}");
    }

    #[test]
    fn huge_values_are_shortened_in_errors() {
        let e = err(&[(keys::NAMESPACE.name, &"n".repeat(100_000))]);
        assert!(e.to_string().len() < 500, "{}", e.to_string().len());
        assert!(e.value.ends_with("(100000 characters)"), "{}", e.value);
    }

    #[test]
    fn spark_durations() {
        let ok = |s: &str| parse_spark_duration(s).unwrap();
        assert_eq!(ok("30s"), Duration::from_secs(30));
        assert_eq!(ok("500ms"), Duration::from_millis(500));
        assert_eq!(ok("500"), Duration::from_millis(500));
        assert_eq!(ok("2min"), Duration::from_secs(120));
        assert_eq!(ok("2m"), Duration::from_secs(120));
        assert_eq!(ok(" 1h "), Duration::from_secs(3600));
        assert_eq!(ok("1d"), Duration::from_secs(86400));
        assert_eq!(ok("250us"), Duration::from_micros(250));
        assert_eq!(ok("0s"), Duration::ZERO);
        for bad in ["", "-1s", "1.5s", "s", "10 years", "18446744073709551615d"] {
            assert!(parse_spark_duration(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn app_ids_must_be_label_values() {
        assert!(validate_app_id("spark-0123456789abcdef").is_ok());
        assert!(validate_app_id("app_1.x").is_ok());
        for bad in ["", " ", "-spark", "spark-", "has space", &"a".repeat(64), "caf\u{e9}"] {
            let e = validate_app_id(bad).unwrap_err();
            assert_eq!(e.key, "applicationId", "{bad:?}");
        }
    }

    #[test]
    fn mistyped_native_keys_are_reported_with_the_likely_key() {
        let s = Settings::from_spark_conf(&conf(&[
            ("spark.kubernetes.native.lister.stalebound", "10s"),
            ("spark.kubernetes.native.library.path", "/x.so"),
        ]))
        .unwrap();
        assert_eq!(
            s.unknown_keys,
            vec![("spark.kubernetes.native.lister.stalebound".to_string(), Some(keys::STALE_BOUND.name))]
        );
    }
}

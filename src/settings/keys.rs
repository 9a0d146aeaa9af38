//! Every configuration key the native side reads or documents, described once,
//! as Spark's `ConfigBuilder` describes its own: name, default, meaning, since.
//! The parser takes its defaults from here; `docs/configuration.md` and the Java
//! constants class `org.sparkk8snative.ConfigKeys` are generated from this table
//! (`UPDATE_GENERATED=1 cargo test --lib generated` rewrites them; a test fails
//! when they differ from it).

use std::time::Duration;

/// One key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Key {
    pub name: &'static str,
    /// The name of its constant in the Java class.
    pub java: &'static str,
    pub default: Default,
    pub meaning: &'static str,
    /// What a value must be, beyond its type.
    pub valid: Valid,
    /// Our version, or, for a key of Spark's, the version its `ConfigBuilder`
    /// gives (`.version("3.4.0")`), written as Spark's docs write it.
    pub since: &'static str,
    pub section: Section,
}

/// A key's default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Default {
    /// A value in Spark's syntax, parsed like a value that was set.
    Value(&'static str),
    /// No single value (derived from another key, or set by Spark); described in words.
    Described(&'static str),
}

impl Default {
    /// The default value, if it is one.
    pub fn value(&self) -> Option<&'static str> {
        match self {
            Default::Value(v) => Some(v),
            Default::Described(_) => None,
        }
    }
}

/// What a key's value must be beyond its type, kept on the key as Spark's
/// `ConfigBuilder.checkValue` keeps its check on the entry: the parser applies it
/// and the docs state it, from this one place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Valid {
    /// Any value of the key's type.
    Any,
    /// A duration or a count greater than zero.
    Positive,
    /// A duration from `min` to `max`, for the reason given.
    Within { min: Duration, max: Duration, why: &'static str },
    /// One of these words.
    OneOf(&'static [&'static str]),
}

impl Valid {
    /// The duration if the check accepts it, else why not.
    pub fn check_duration(&self, value: Duration) -> Result<Duration, String> {
        match *self {
            Valid::Positive if value.is_zero() => Err("must be greater than zero".into()),
            Valid::Within { min, max, why } if value < min || value > max => {
                Err(format!("must be between {} and {} ({why})", seconds(min), seconds(max)))
            }
            _ => Ok(value),
        }
    }

    /// A derived default brought within the key's range.
    pub fn clamp(&self, value: Duration) -> Duration {
        match *self {
            Valid::Within { min, max, .. } => value.clamp(min, max),
            _ => value,
        }
    }

    /// How the docs state the check; empty when there is none beyond the type.
    pub fn described(&self) -> String {
        match *self {
            Valid::Any => String::new(),
            Valid::Positive => "Greater than zero.".into(),
            Valid::Within { min, max, .. } => format!("From {} to {}.", seconds(min), seconds(max)),
            Valid::OneOf(words) => {
                let words: Vec<String> = words.iter().map(|w| format!("`{w}`")).collect();
                format!("One of {}.", words.join(", "))
            }
        }
    }
}

fn seconds(d: Duration) -> String {
    format!("{}s", d.as_secs())
}

/// Where a key is documented.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Section {
    InformerAndLister,
    ExecutorServices,
    PluggingIntoSpark,
    ConnectingToTheApiserver,
}

const V0_1: &str = "0.1.0";

pub const ENABLE_INFORMER: Key = Key {
    name: "spark.kubernetes.executor.enableInformer",
    java: "ENABLE_INFORMER",
    default: Default::Value("false"),
    meaning: "Track executor pods with the native informer (one LIST, then one long-lived WATCH kept in a local \
              cache) and lister (full snapshots read from that cache), instead of Spark's watch plus 30 s polling \
              LIST. The two pairs are mutually exclusive. The driver's service account needs `list` and `watch` on \
              pods.",
    valid: Valid::Any,
    since: V0_1,
    section: Section::InformerAndLister,
};

pub const LISTER_POLLING_INTERVAL: Key = Key {
    name: "spark.kubernetes.executor.listerPollingInterval",
    java: "LISTER_POLLING_INTERVAL",
    default: Default::Value("30s"),
    meaning: "How often the lister replaces Spark's snapshot with the cache's contents (no apiserver request). A \
              round is skipped, not faked, while the cache is unsynced or stale.",
    valid: Valid::Positive,
    since: V0_1,
    section: Section::InformerAndLister,
};

pub const INFORMER_RESYNC_INTERVAL: Key = Key {
    name: "spark.kubernetes.executor.informerResyncInterval",
    java: "INFORMER_RESYNC_INTERVAL",
    default: Default::Value("0s"),
    meaning: "When positive, how often cached pods are replayed as updates; a pod whose resourceVersion was already \
              delivered is not replayed. `0s` turns resync off. Never a request to the apiserver.",
    valid: Valid::Any,
    since: V0_1,
    section: Section::InformerAndLister,
};

pub const MISSING_POD_DETECT_DELTA: Key = Key {
    name: "spark.kubernetes.executor.missingPodDetectDelta",
    java: "MISSING_POD_DETECT_DELTA",
    default: Default::Value("30s"),
    meaning: "Spark's own key: how long an executor must have been registered before its absence from a full \
              snapshot removes it. The stale bound defaults to half of it.",
    valid: Valid::Positive,
    since: "3.1.1",
    section: Section::InformerAndLister,
};

pub const CHECK_ALL_CONTAINERS: Key = Key {
    name: "spark.kubernetes.executor.checkAllContainers",
    java: "CHECK_ALL_CONTAINERS",
    default: Default::Described("Spark's: `false` on 3.5, `true` from 4.0"),
    meaning: "Spark's own key: whether a Running executor pod with any container exited non-zero counts as \
              failed. The informer classifies pods as Spark does, with the driver's value of this key, so that no \
              state Spark removes an executor on (failed, succeeded, deleted) is coalesced away.",
    valid: Valid::Any,
    since: "3.1.0",
    section: Section::InformerAndLister,
};

pub const EXECUTOR_CONTAINER_NAME: Key = Key {
    name: "spark.kubernetes.executor.podTemplateContainerName",
    java: "EXECUTOR_CONTAINER_NAME",
    default: Default::Described("`spark-kubernetes-executor`, Spark's executor container"),
    meaning: "Spark's own key: the executor container of a pod template. A Running pod whose executor container \
              terminated is failed or succeeded to Spark, and to the informer alike.",
    valid: Valid::Any,
    since: "3.0.0",
    section: Section::InformerAndLister,
};

pub const STALE_BOUND: Key = Key {
    name: "spark.kubernetes.native.lister.staleBound",
    java: "STALE_BOUND",
    default: Default::Described("half of `missingPodDetectDelta`"),
    meaning: "How old the cache may be when the lister takes a full snapshot: the cache must have been proven \
              current (an event, bookmark or list page following the last proof closely, or a watch ending cleanly) \
              within this. A quiet watch longer than it proves the cache at each renewal, and the lister's round \
              waits for the next one. After a silence longer than a watch's length plus a third of this bound, the \
              informer resumes its watch after a consistent read, and the lister answers not ready until the watch \
              has caught up with that read (or, if it cannot within this bound, at least 5 s, until a relist \
              completes). A snapshot from a stale \
              cache would make Spark remove executors that started during the outage. Keep it below \
              `missingPodDetectDelta`.",
    valid: Valid::Positive,
    since: V0_1,
    section: Section::InformerAndLister,
};

pub const WATCH_TIMEOUT: Key = Key {
    name: "spark.kubernetes.native.informer.watchTimeout",
    java: "WATCH_TIMEOUT",
    default: Default::Described(
        "`listerPollingInterval` or two thirds of the stale bound, whichever is longer (30 s by default)",
    ),
    meaning: "Server-side timeout of each watch request. A healthy watch ends and resumes from its resourceVersion \
              this often (served from the watch cache: no LIST, no etcd read); its clean end proves the cache \
              current, so one renewal per lister round is all the lister needs. Shorter watches detect a dead \
              connection sooner (after the watch's length plus a third of the stale bound) and cost one WATCH \
              request each. At least 3 s: the apiserver's bookmark 2 s before a watch's end shows that the \
              apiserver serving it is as new as the cache (on a highly available control plane one may lag).",
    valid: Valid::Within {
        min: Duration::from_secs(3),
        max: Duration::from_secs(290),
        why: "the apiserver's bookmark, which proves a watch current, comes 2 s before its end",
    },
    since: V0_1,
    section: Section::InformerAndLister,
};

pub const INITIAL_LIST: Key = Key {
    name: "spark.kubernetes.native.informer.initialList",
    java: "INITIAL_LIST",
    default: Default::Value("auto"),
    meaning: "How the first list (and every relist) is done: `auto` (a streaming list, `sendInitialEvents`, where \
              the server supports it, else `watchCache`), `streaming`, `watchCache` (`resourceVersion=0`, served \
              from the apiserver's watch cache, unpaginated as the cache ignores limits; client-go's reflector does \
              the same), `consistent` (a quorum read from etcd, paginated).",
    valid: Valid::OneOf(&["auto", "streaming", "watchCache", "consistent"]),
    since: V0_1,
    section: Section::InformerAndLister,
};

pub const PAGE_SIZE: Key = Key {
    name: "spark.kubernetes.native.informer.pageSize",
    java: "PAGE_SIZE",
    default: Default::Value("500"),
    meaning: "Page size of `consistent` lists.",
    valid: Valid::Positive,
    since: V0_1,
    section: Section::InformerAndLister,
};

pub const INITIAL_LIST_TIMEOUT: Key = Key {
    name: "spark.kubernetes.native.informer.initialListTimeout",
    java: "INITIAL_LIST_TIMEOUT",
    default: Default::Value("60s"),
    meaning: "A (re)list that has not completed by then is abandoned and retried with backoff (and `auto` falls \
              back from streaming). Also a streaming list's `timeoutSeconds`: the apiserver ends a watch at its \
              timeout, initial events sent or not.",
    valid: Valid::Positive,
    since: V0_1,
    section: Section::InformerAndLister,
};

pub const ENABLE_SERVICE: Key = Key {
    name: "spark.kubernetes.executor.enableService",
    java: "ENABLE_SERVICE",
    default: Default::Value("false"),
    meaning: "Create one ClusterIP Service per executor (`svc-<appId>-exec-<execId>`, selecting \
              `spark-app-selector` and `spark-exec-id`, one port `spark-block-manager`), owned by the driver pod, and \
              make each executor advertise its Service's name for its block manager: peers of a gone executor are \
              then refused at once instead of waiting out a 2-minute connect timeout. Needs \
              `spark.blockManager.port` and `spark.kubernetes.driver.pod.name`; driver start-up fails naming the \
              missing key. The driver's service account needs `get`, `create`, `delete`, `patch` (and `update`) on \
              services; driver start-up asks the apiserver (SelfSubjectAccessReview) for `get`, `create` and \
              `delete` and fails naming the verbs it lacks. A Service of the same name that another tool made (no \
              `app.kubernetes.io/managed-by=spark-k8s-native` label, e.g. a Spark that ships its own) is left alone: \
              never repaired, never deleted.",
    valid: Valid::Any,
    since: V0_1,
    section: Section::ExecutorServices,
};

pub const BLOCK_MANAGER_PORT: Key = Key {
    name: "spark.blockManager.port",
    java: "BLOCK_MANAGER_PORT",
    default: Default::Described("(Spark: random)"),
    meaning: "Spark's own key; required with Services: the port every Service exposes (port = targetPort). Spark \
              takes 0 (a random port) or 1024 to 65535; with Services only 1024 to 65535, since a Service is made \
              before its executor and must name a fixed port.",
    valid: Valid::Any,
    since: "1.1.0",
    section: Section::ExecutorServices,
};

pub const DRIVER_POD_NAME: Key = Key {
    name: "spark.kubernetes.driver.pod.name",
    java: "DRIVER_POD_NAME",
    default: Default::Described("(set by spark-submit in cluster mode)"),
    meaning: "Spark's own key; the owner of every executor Service, so they are garbage-collected with the driver.",
    valid: Valid::Any,
    since: "2.3.0",
    section: Section::ExecutorServices,
};

pub const SERVICE_DELETE_AFTER: Key = Key {
    name: "spark.kubernetes.native.service.deleteAfter",
    java: "SERVICE_DELETE_AFTER",
    default: Default::Value("300s"),
    meaning: "Delete an executor's Service this long after its pod is gone, as SPARK-52505's own branch did (300 s \
              after the executor): long enough for peers that still fetch from it to be refused fast, short enough \
              that a long driver with dynamic allocation does not pile up thousands of Services. `0s`: keep every \
              Service as long as the driver (the garbage collector removes them with it).",
    valid: Valid::Any,
    since: V0_1,
    section: Section::ExecutorServices,
};

pub const SERVICE_ADVERTISED_NAME: Key = Key {
    name: "spark.kubernetes.native.service.advertisedName",
    java: "SERVICE_ADVERTISED_NAME",
    default: Default::Value("short"),
    meaning: "The name an executor advertises for its block manager. `short`: the Service's name, \
              `svc-<appId>-exec-<execId>`, which resolves from every pod of the executors' namespace (its peers, \
              a driver pod there). `namespaced`: `<service>.<namespace>.svc`, which resolves from every pod of the \
              cluster, for a client-mode driver whose process runs in another namespace (its pod, the Services' \
              owner, is in the executors' namespace, as Spark requires); inside the executor's pod a host alias \
              maps that name to 0.0.0.0, so the executor binds to all its addresses. A driver outside the cluster \
              cannot reach ClusterIP Services at all: leave Services off there.",
    valid: Valid::OneOf(&["short", "namespaced"]),
    since: V0_1,
    section: Section::ExecutorServices,
};

pub const SERVICE_MAX_CONCURRENT_REQUESTS: Key = Key {
    name: "spark.kubernetes.native.service.maxConcurrentRequests",
    java: "SERVICE_MAX_CONCURRENT_REQUESTS",
    default: Default::Value("10"),
    meaning: "Requests for Services in flight at most, so that a burst of hundreds of executors does not flood the \
              apiserver. Transient failures (429, 5xx, connection) are retried with backoff, or after the time a 429 asks for.",
    valid: Valid::Positive,
    since: V0_1,
    section: Section::ExecutorServices,
};

pub const PODS_ALLOCATOR: Key = Key {
    name: "spark.kubernetes.allocation.pods.allocator",
    java: "PODS_ALLOCATOR",
    default: Default::Value("direct"),
    meaning: "Spark's own key. Set it to `org.sparkk8snative.spark.NativeExecutorPodsAllocator` to let \
              `spark.kubernetes.executor.enableInformer` take effect on unmodified Spark 3.5 and 4.x. The class is Spark's \
              allocator plus the native sources.",
    valid: Valid::Any,
    since: "3.3.0",
    section: Section::PluggingIntoSpark,
};

pub const ENABLE_API_WATCHER: Key = Key {
    name: "spark.kubernetes.executor.enableApiWatcher",
    java: "ENABLE_API_WATCHER",
    default: Default::Value("true"),
    meaning: "Spark's internal switch of its legacy watch source. With `enableInformer=true` the allocator sets it \
              to `false` (with a warning if it was set to `true`): the two pairs never run together.",
    valid: Valid::Any,
    since: "3.4.0",
    section: Section::PluggingIntoSpark,
};

pub const ENABLE_API_POLLING: Key = Key {
    name: "spark.kubernetes.executor.enableApiPolling",
    java: "ENABLE_API_POLLING",
    default: Default::Value("true"),
    meaning: "Spark's internal switch of its legacy polling source (a LIST every \
              `spark.kubernetes.executor.apiPollingInterval`). With `enableInformer=true` the allocator sets it to \
              `false`, as above.",
    valid: Valid::Any,
    since: "3.4.0",
    section: Section::PluggingIntoSpark,
};

pub const EXECUTOR_FEATURE_STEPS: Key = Key {
    name: "spark.kubernetes.executor.pod.featureSteps",
    java: "EXECUTOR_FEATURE_STEPS",
    default: Default::Described("(none)"),
    meaning: "Spark's own key. With Services on, the allocator appends \
              `org.sparkk8snative.spark.ExecutorServiceFeatureStep`, which makes each executor advertise its \
              Service's name.",
    valid: Valid::Any,
    since: "3.2.0",
    section: Section::PluggingIntoSpark,
};

pub const MASTER: Key = Key {
    name: "spark.master",
    java: "MASTER",
    default: Default::Described("(required in client mode)"),
    meaning: "`k8s://https://host:port`; `k8s://host:port` means https.",
    valid: Valid::Any,
    since: "0.9.0",
    section: Section::ConnectingToTheApiserver,
};

pub const DRIVER_MASTER: Key = Key {
    name: "spark.kubernetes.driver.master",
    java: "DRIVER_MASTER",
    default: Default::Value("https://kubernetes.default.svc"),
    meaning: "The apiserver in cluster mode (`spark.kubernetes.submitInDriver=true`).",
    valid: Valid::Any,
    since: "3.0.0",
    section: Section::ConnectingToTheApiserver,
};

pub const SUBMIT_IN_DRIVER: Key = Key {
    name: "spark.kubernetes.submitInDriver",
    java: "SUBMIT_IN_DRIVER",
    default: Default::Value("false"),
    meaning: "Set by spark-submit in cluster mode: the driver runs in a pod, and its credentials are the mounted \
              ones.",
    valid: Valid::Any,
    since: "2.4.0",
    section: Section::ConnectingToTheApiserver,
};

pub const NAMESPACE: Key = Key {
    name: "spark.kubernetes.namespace",
    java: "NAMESPACE",
    default: Default::Value("default"),
    meaning: "Namespace of the executor pods.",
    valid: Valid::Any,
    since: "2.3.0",
    section: Section::ConnectingToTheApiserver,
};

pub const CONTEXT: Key = Key {
    name: "spark.kubernetes.context",
    java: "CONTEXT",
    default: Default::Described("(the kubeconfig's current context)"),
    meaning: "The kubeconfig context to start from in client mode.",
    valid: Valid::Any,
    since: "3.0.0",
    section: Section::ConnectingToTheApiserver,
};

/// Client-mode credentials: `spark.kubernetes.authenticate.<name>`; in cluster
/// mode the same names under [`CLUSTER_MODE_AUTH_PREFIX`].
pub const CLIENT_MODE_AUTH_PREFIX: &str = "spark.kubernetes.authenticate";
/// Credentials mounted in the driver pod (cluster mode).
pub const CLUSTER_MODE_AUTH_PREFIX: &str = "spark.kubernetes.authenticate.driver.mounted";
pub const OAUTH_TOKEN: &str = "oauthToken";
pub const OAUTH_TOKEN_FILE: &str = "oauthTokenFile";
pub const CA_CERT_FILE: &str = "caCertFile";
pub const CLIENT_KEY_FILE: &str = "clientKeyFile";
pub const CLIENT_CERT_FILE: &str = "clientCertFile";

pub const CREDENTIALS: Key = Key {
    name: "spark.kubernetes.authenticate.{oauthToken, oauthTokenFile, caCertFile, clientKeyFile, clientCertFile}",
    java: "",
    default: Default::Described("unset"),
    meaning: "Client-mode credentials; in cluster mode the same names under \
              `spark.kubernetes.authenticate.driver.mounted.`. `oauthToken` and `oauthTokenFile` exclude each other; \
              a client certificate needs its key. A token file is re-read at least once a minute, so rotated \
              service-account tokens are picked up. Tokens never appear in logs or errors.",
    valid: Valid::Any,
    since: "2.4.0",
    section: Section::ConnectingToTheApiserver,
};

pub const TRUST_CERTIFICATES: Key = Key {
    name: "spark.kubernetes.trust.certificates",
    java: "TRUST_CERTIFICATES",
    default: Default::Value("false"),
    meaning: "Skip TLS verification. The only way to do so: a wrong CA is otherwise an error.",
    valid: Valid::Any,
    since: "3.2.0",
    section: Section::ConnectingToTheApiserver,
};

pub const REQUEST_TIMEOUT: Key = Key {
    name: "spark.kubernetes.driver.requestTimeout",
    java: "REQUEST_TIMEOUT",
    default: Default::Value("10000"),
    meaning: "Request timeout, in milliseconds (Spark's syntax also takes a unit).",
    valid: Valid::Positive,
    since: "3.0.0",
    section: Section::ConnectingToTheApiserver,
};

pub const CONNECTION_TIMEOUT: Key = Key {
    name: "spark.kubernetes.driver.connectionTimeout",
    java: "CONNECTION_TIMEOUT",
    default: Default::Value("10000"),
    meaning: "Connection timeout, in milliseconds (Spark's syntax also takes a unit).",
    valid: Valid::Positive,
    since: "3.0.0",
    section: Section::ConnectingToTheApiserver,
};

/// Every key, in the order the docs show them.
pub const ALL: &[Key] = &[
    ENABLE_INFORMER,
    LISTER_POLLING_INTERVAL,
    INFORMER_RESYNC_INTERVAL,
    MISSING_POD_DETECT_DELTA,
    CHECK_ALL_CONTAINERS,
    EXECUTOR_CONTAINER_NAME,
    STALE_BOUND,
    WATCH_TIMEOUT,
    INITIAL_LIST,
    PAGE_SIZE,
    INITIAL_LIST_TIMEOUT,
    ENABLE_SERVICE,
    BLOCK_MANAGER_PORT,
    DRIVER_POD_NAME,
    SERVICE_DELETE_AFTER,
    SERVICE_ADVERTISED_NAME,
    SERVICE_MAX_CONCURRENT_REQUESTS,
    PODS_ALLOCATOR,
    ENABLE_API_WATCHER,
    ENABLE_API_POLLING,
    EXECUTOR_FEATURE_STEPS,
    MASTER,
    DRIVER_MASTER,
    SUBMIT_IN_DRIVER,
    NAMESPACE,
    CONTEXT,
    CREDENTIALS,
    TRUST_CERTIFICATES,
    REQUEST_TIMEOUT,
    CONNECTION_TIMEOUT,
];

/// Our own keys live under this prefix; an unknown one there is named in a warning.
pub const NATIVE_PREFIX: &str = "spark.kubernetes.native.";

/// Keys of ours, for the typo check.
pub fn native_keys() -> impl Iterator<Item = &'static str> {
    ALL.iter().map(|k| k.name).filter(|n| n.starts_with(NATIVE_PREFIX))
}

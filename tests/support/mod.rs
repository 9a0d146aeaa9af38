//! The real local control plane for integration tests, and helpers that play
//! the kubelet. Shared by every test binary with `mod support;`.
//!
//! A test either uses [`LocalPlane::shared`] (one plane per test process,
//! tests isolated by app id) or, when it injects faults that would disturb
//! others, starts its own with [`LocalPlane::start_with`].
#![allow(dead_code)] // the benchmark uses a part of it

pub mod kubelet;

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// How a plane is started; the defaults are those of a real cluster.
#[derive(Clone, Debug)]
pub struct PlaneOptions {
    /// The apiserver's watch cache. Off, pods are listed and watched straight
    /// from etcd, so that a restart resumes from etcd's history and a
    /// compaction produces 410 Gone.
    pub watch_cache: bool,
    /// apiserver `--min-request-timeout`: watches end after 1x to 2x this.
    pub min_request_timeout_secs: u32,
    /// Extra kube-apiserver flags, e.g. `--feature-gates=WatchList=false`.
    pub apiserver_args: Vec<String>,
    /// A highly available plane: a second apiserver on the same etcd, each on a link to etcd
    /// that can be cut, behind a load balancer ([`Route::LoadBalancer`]).
    pub ha: bool,
}

impl Default for PlaneOptions {
    fn default() -> Self {
        Self { watch_cache: true, min_request_timeout_secs: 1800, apiserver_args: Vec::new(), ha: false }
    }
}

/// One of the HA plane's two apiservers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Apiserver {
    A,
    B,
}

impl Apiserver {
    fn name(self) -> &'static str {
        match self {
            Apiserver::A => "a",
            Apiserver::B => "b",
        }
    }
}

/// What the HA plane's load balancer does with its open connections when it moves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Existing {
    /// Left open and silent, as a balancer whose backend went away may leave them.
    Hold,
    /// Closed.
    Close,
}

/// Who a client authenticates as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Identity {
    /// `system:masters`.
    Admin,
    /// Only what a Spark driver needs, in namespace `spark` (token).
    Restricted,
    /// Like `Restricted` but without any right on Services.
    PodsOnly,
    /// The restricted user, authenticated by client certificate.
    RestrictedClientCert,
}

/// Where a client connects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Route {
    Direct,
    /// Through the fault-injecting proxy (token identities only: it terminates TLS).
    Proxy,
    /// Through the HA plane's TCP load balancer (to apiserver a unless moved).
    LoadBalancer,
}

/// A running plane: etcd, kube-apiserver, kube-controller-manager, fault proxy.
pub struct LocalPlane {
    env: HashMap<String, String>,
    child: Option<Child>,
}

impl LocalPlane {
    /// The plane shared by every test of this process (started on first use),
    /// or the one named by `LOCALPLANE_ENV_FILE` (a `plane.env` of a plane
    /// started with `make plane-up`).
    pub fn shared() -> &'static LocalPlane {
        static SHARED: OnceLock<LocalPlane> = OnceLock::new();
        SHARED.get_or_init(|| match std::env::var("LOCALPLANE_ENV_FILE") {
            Ok(file) => LocalPlane { env: read_env(Path::new(&file)), child: None },
            Err(_) => LocalPlane::start_with(PlaneOptions::default()),
        })
    }

    /// A plane of this test's own, stopped (and its data removed) on drop.
    pub fn start_with(options: PlaneOptions) -> LocalPlane {
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        let bin = bin_dir();
        let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("localplane");
        std::fs::create_dir_all(&root).unwrap();
        let dir = root.join(format!("{}-{}", std::process::id(), COUNTER.fetch_add(1, Ordering::SeqCst)));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let log = std::fs::File::create(dir.with_extension("log")).unwrap();
        let began = Instant::now();
        let mut child = Command::new(bin.join("localplane"))
            .arg("run")
            .arg(format!("--dir={}", dir.display()))
            .arg(format!("--bin={}", bin.display()))
            .arg(format!("--watch-cache={}", options.watch_cache))
            .arg(format!("--min-request-timeout={}", options.min_request_timeout_secs))
            .args(options.apiserver_args.iter().map(|a| format!("--apiserver-arg={a}")))
            .args(options.ha.then_some("--ha"))
            .args(["--exit-with-parent", "--remove-dir-on-exit"])
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("spawn localplane");
        let env_file = dir.join("plane.env");
        while !env_file.exists() {
            if let Some(status) = child.try_wait().unwrap() {
                let log = std::fs::read_to_string(dir.with_extension("log")).unwrap_or_default();
                panic!("localplane exited ({status}) before it was ready:\n{log}");
            }
            assert!(began.elapsed() < Duration::from_secs(180), "localplane not ready after 180s");
            std::thread::sleep(Duration::from_millis(100));
        }
        eprintln!("[support] local plane up in {:.1}s at {}", began.elapsed().as_secs_f64(), dir.display());
        LocalPlane { env: read_env(&env_file), child: Some(child) }
    }

    /// A `LOCALPLANE_*` value from `plane.env`.
    pub fn var(&self, key: &str) -> &str {
        self.env.get(key).unwrap_or_else(|| panic!("plane.env has no {key}"))
    }

    pub fn apiserver_url(&self) -> &str {
        self.var("LOCALPLANE_APISERVER")
    }

    pub fn proxy_url(&self) -> &str {
        self.var("LOCALPLANE_PROXY")
    }

    /// The namespace the restricted identity may use.
    pub fn namespace(&self) -> &str {
        self.var("LOCALPLANE_NAMESPACE")
    }

    fn url(&self, route: Route) -> &str {
        match route {
            Route::Direct => self.apiserver_url(),
            Route::Proxy => self.proxy_url(),
            Route::LoadBalancer => self.var("LOCALPLANE_LOAD_BALANCER"),
        }
    }

    /// The URL of one of the HA plane's apiservers, reached directly.
    pub fn apiserver(&self, which: Apiserver) -> &str {
        match which {
            Apiserver::A => self.apiserver_url(),
            Apiserver::B => self.var("LOCALPLANE_APISERVER_B"),
        }
    }

    /// A kube client configuration for `identity` over `route`.
    pub fn config(&self, identity: Identity, route: Route) -> kube::Config {
        let url = self.url(route);
        let mut config = kube::Config::new(url.parse().unwrap());
        config.default_namespace = self.namespace().to_string();
        config.root_cert_file = Some(self.var("LOCALPLANE_CA_FILE").into());
        let token_file = |key: &str| Some(self.var(key).to_string());
        match identity {
            Identity::Admin => config.auth_info.token_file = token_file("LOCALPLANE_ADMIN_TOKEN_FILE"),
            Identity::Restricted => config.auth_info.token_file = token_file("LOCALPLANE_RESTRICTED_TOKEN_FILE"),
            Identity::PodsOnly => config.auth_info.token_file = token_file("LOCALPLANE_PODS_ONLY_TOKEN_FILE"),
            Identity::RestrictedClientCert => {
                assert_eq!(route, Route::Direct, "the proxy terminates TLS: client certificates cannot pass it");
                config.auth_info.client_certificate = Some(self.var("LOCALPLANE_CLIENT_CERT_FILE").into());
                config.auth_info.client_key = Some(self.var("LOCALPLANE_CLIENT_KEY_FILE").into());
            }
        }
        config
    }

    /// A kube client (must be called inside a tokio runtime).
    pub fn client(&self, identity: Identity, route: Route) -> kube::Client {
        kube::Client::try_from(self.config(identity, route)).expect("kube client")
    }

    pub fn admin(&self) -> kube::Client {
        self.client(Identity::Admin, Route::Direct)
    }

    /// The test namespace's pods, as the admin: what the tests drive as the kubelet and the API would.
    pub fn admin_pods(&self) -> kube::Api<k8s_openapi::api::core::v1::Pod> {
        kube::Api::namespaced(self.admin(), self.namespace())
    }

    /// The test namespace's Services, as the admin.
    pub fn admin_services(&self) -> kube::Api<k8s_openapi::api::core::v1::Service> {
        kube::Api::namespaced(self.admin(), self.namespace())
    }

    /// The Spark configuration a driver would have for this plane: master,
    /// namespace, CA and the identity's credentials (client mode keys).
    pub fn spark_conf(&self, identity: Identity, route: Route) -> HashMap<String, String> {
        let url = self.url(route);
        let auth = |name: &str| format!("spark.kubernetes.authenticate.{name}");
        let mut conf = HashMap::from([
            ("spark.master".to_string(), format!("k8s://{url}")),
            ("spark.kubernetes.namespace".to_string(), self.namespace().to_string()),
            (auth("caCertFile"), self.var("LOCALPLANE_CA_FILE").to_string()),
        ]);
        let token_file = match identity {
            Identity::Admin => Some("LOCALPLANE_ADMIN_TOKEN_FILE"),
            Identity::Restricted => Some("LOCALPLANE_RESTRICTED_TOKEN_FILE"),
            Identity::PodsOnly => Some("LOCALPLANE_PODS_ONLY_TOKEN_FILE"),
            Identity::RestrictedClientCert => None,
        };
        match token_file {
            Some(key) => {
                conf.insert(auth("oauthTokenFile"), self.var(key).to_string());
            }
            None => {
                conf.insert(auth("clientCertFile"), self.var("LOCALPLANE_CLIENT_CERT_FILE").to_string());
                conf.insert(auth("clientKeyFile"), self.var("LOCALPLANE_CLIENT_KEY_FILE").to_string());
            }
        }
        conf
    }

    /// Stops the apiserver (etcd keeps running) until [`Self::start_apiserver`].
    pub fn stop_apiserver(&self) {
        self.control("POST", "/apiserver/stop");
    }

    pub fn start_apiserver(&self) {
        self.control("POST", "/apiserver/start");
    }

    /// Calls the plane's control endpoint (see tests/localplane/control.go).
    pub fn control(&self, method: &str, path: &str) -> serde_json::Value {
        let addr = self.var("LOCALPLANE_CONTROL").trim_start_matches("http://").to_string();
        let mut stream = TcpStream::connect(&addr).expect("connect to localplane control");
        write!(stream, "{method} {path} HTTP/1.0\r\nHost: {addr}\r\nContent-Length: 0\r\n\r\n").unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        let (head, body) = response.split_once("\r\n\r\n").expect("HTTP response");
        assert!(head.starts_with("HTTP/1.0 200") || head.starts_with("HTTP/1.1 200"), "{method} {path}: {response}");
        serde_json::from_str(body).unwrap_or(serde_json::Value::Null)
    }

    /// Stops and starts the apiserver (etcd keeps its data); returns once ready.
    pub fn restart_apiserver(&self) {
        self.control("POST", "/apiserver/restart");
    }

    /// Compacts etcd to its current revision; returns that revision.
    pub fn compact_etcd(&self) -> i64 {
        self.control("POST", "/etcd/compact")["revision"].as_i64().unwrap()
    }

    pub fn proxy_cut(&self) {
        self.control("POST", "/proxy/cut");
    }

    /// Holds all proxied traffic for `d` (zero: until [`Self::proxy_normal`]).
    pub fn proxy_blackhole(&self, d: Duration) {
        self.control("POST", &format!("/proxy/blackhole?seconds={}", d.as_secs_f64()));
    }

    /// Answers 429 to every proxied request for `d`.
    pub fn proxy_throttle(&self, d: Duration) {
        self.control("POST", &format!("/proxy/throttle?seconds={}", d.as_secs_f64()));
    }

    pub fn proxy_delay(&self, d: Duration) {
        self.control("POST", &format!("/proxy/delay?ms={}", d.as_millis()));
    }

    pub fn proxy_normal(&self) {
        self.control("POST", "/proxy/normal");
    }

    /// Shares `bytes_per_second` among all proxied responses, as a slow link
    /// does (0: unlimited); unlike faults it outlives [`Self::proxy_normal`].
    pub fn proxy_bandwidth(&self, bytes_per_second: u64) {
        self.control("POST", &format!("/proxy/bandwidth?bytesPerSecond={bytes_per_second}"));
    }

    /// Cuts an HA plane's apiserver from etcd (its watch cache freezes; consistent reads hang).
    pub fn cut_from_etcd(&self, which: Apiserver) {
        self.control("POST", &format!("/ha/etcd?apiserver={}&link=cut", which.name()));
    }

    pub fn reconnect_to_etcd(&self, which: Apiserver) {
        self.control("POST", &format!("/ha/etcd?apiserver={}&link=open", which.name()));
    }

    /// Moves the HA plane's load balancer: new connections go to `to`, open ones are held or closed.
    pub fn route_to(&self, to: Apiserver, existing: Existing) {
        let existing = match existing {
            Existing::Hold => "hold",
            Existing::Close => "close",
        };
        self.control("POST", &format!("/ha/route?to={}&existing={existing}", to.name()));
    }

    /// Closes the connections the load balancer holds.
    pub fn release_held(&self) {
        self.control("POST", "/ha/release");
    }

    pub fn ha_stats(&self) -> serde_json::Value {
        self.control("GET", "/ha/stats")
    }

    /// The proxy's counters: requests, throttled (429s served), cuts, ...
    pub fn proxy_stats(&self) -> serde_json::Value {
        self.control("GET", "/proxy/stats")
    }
}

impl Drop for LocalPlane {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            // SIGTERM lets it stop its children and remove its directory.
            let _ = Command::new("kill").arg(child.id().to_string()).status();
            let deadline = Instant::now() + Duration::from_secs(15);
            while child.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn read_env(file: &Path) -> HashMap<String, String> {
    std::fs::read_to_string(file)
        .unwrap_or_else(|e| panic!("read {}: {e}", file.display()))
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Where the plane's binaries are: `LOCALPLANE_BIN`, or built (once, cached)
/// by scripts/localplane-build.sh.
pub fn bin_dir() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        if let Ok(dir) = std::env::var("LOCALPLANE_BIN") {
            return PathBuf::from(dir);
        }
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/localplane-build.sh");
        let out = Command::new("bash").arg(&script).stderr(Stdio::inherit()).output().expect("run localplane-build.sh");
        assert!(out.status.success(), "{} failed", script.display());
        PathBuf::from(String::from_utf8(out.stdout).unwrap().trim())
    })
    .clone()
}

/// An app id unique to this test run, shaped like Spark's (`spark-<hex>`).
pub fn unique_app_id(tag: &str) -> String {
    static COUNTER: AtomicUsize = AtomicUsize::new(0);
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
    format!("spark-{tag}-{:x}{:x}{}", std::process::id(), nanos, COUNTER.fetch_add(1, Ordering::SeqCst))
}

/// Polls `check` until it returns `Some`, or panics after `timeout` naming `what`.
pub async fn eventually<T, F, Fut>(what: &str, timeout: Duration, check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    eventually_explained(what, timeout, check, String::new).await
}

/// [`eventually`], with `explain()`'s account of the state at the deadline in the panic.
pub async fn eventually_explained<T, F, Fut>(
    what: &str,
    timeout: Duration,
    mut check: F,
    explain: impl Fn() -> String,
) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = check().await {
            return v;
        }
        if Instant::now() >= deadline {
            let state = explain();
            let state = if state.is_empty() { state } else { format!(": {state}") };
            panic!("timed out after {timeout:?} waiting for {what}{state}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// With `TEST_LOG=1`, the library's logs (INFO and above; `TEST_LOG=debug`: DEBUG too) go to
/// stderr with the time since the first, to read by hand what the informer did in a failing
/// run (`--nocapture`). Without it, nothing is installed.
pub fn log_to_stderr_if_asked() {
    use tracing::field::{Field, Visit};
    use tracing_subscriber::layer::{Context, Layer, SubscriberExt};

    struct StderrLayer {
        start: Instant,
        debug: bool,
    }
    struct Line(String);
    impl Visit for Line {
        fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
            use std::fmt::Write;
            let _ = if field.name() == "message" {
                write!(self.0, " {value:?}")
            } else {
                write!(self.0, " {}={value:?}", field.name())
            };
        }
    }
    impl<S: tracing::Subscriber> Layer<S> for StderrLayer {
        fn enabled(&self, metadata: &tracing::Metadata<'_>, _: Context<'_, S>) -> bool {
            let max = if self.debug { tracing::Level::DEBUG } else { tracing::Level::INFO };
            metadata.target().starts_with("spark_k8s_native") && *metadata.level() <= max
        }
        fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
            let mut line =
                Line(format!("[log {:8.3}s {}]", self.start.elapsed().as_secs_f64(), event.metadata().level()));
            event.record(&mut line);
            eprintln!("{}", line.0);
        }
    }
    let Ok(asked) = std::env::var("TEST_LOG") else { return };
    let layer = StderrLayer { start: Instant::now(), debug: asked == "debug" };
    let _ = tracing::subscriber::set_global_default(tracing_subscriber::registry().with(layer));
}

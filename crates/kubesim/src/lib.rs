//! # ctop-kubesim: a Kubernetes API server in a library
//!
//! kubesim serves the real Kubernetes REST and watch protocol on loopback from memory.
//! Unmodified `kubectl` and kube-rs talk to it; `ctop dev` runs operators on it and every
//! end-to-end test uses it as its cluster.
//!
//! Start here: [`KubeSim::start`] with a [`Config`] gives a running server, its address
//! and a kubeconfig; [`KubeSim::faults`] injects failures. That, and the few types they
//! take and give, is the whole public API: everything else is private. Tests that stand
//! up their own admission webhooks can also use [`WebhookCaller`] (kubesim's client of
//! webhooks) and [`ServingCert`] / [`TlsListener`] (a self-issued TLS listener).
//!
//! A kubesim can also be an *overlay* ([`Config::overlay`]): a mirror copies a live
//! cluster's objects into it with [`KubeSim::import`], an operator's writes land in it,
//! and [`KubeSim::request_writes`] tells what they were (the `overlay` module).
//!
//! The modules, top down (each arrow runs one way: a module only uses those below it):
//! `server` (HTTP routing, content negotiation, watch streams, the reviews, and the wire
//! forms: `proto` request bodies, `table` and `printer_columns` for `kubectl get`,
//! `openapi`), `auth` (who a request is, `authn`; what it may do, `authz` (RBAC); `tls`),
//! `api` (what each verb does to an object: the admission chain, `admission`; objects
//! between the version they are stored in and the version of a request, `convert`, and CRD
//! conversion webhooks, `conversion`; `webhook`, the client side of both), `merge` (the
//! pure rules that turn a write into an object: `ssa` server-side apply and managedFields,
//! `smp` strategic merge patch, `shape` and `crd_shape` list and map types), `kinds` (the
//! `registry` of served resources, the `builtin` kinds' schemas and Go decoding, the
//! `meta`data rules, label `selector`s) and `store` (one global resourceVersion, tables, the
//! watch history). Beside the API run the `controllers` a cluster has (`gc` with
//! `cleanup`: garbage collection, namespace and CRD termination; `workloads`: nodes,
//! scheduler, kubelet and the workload controllers; `service_ip`): they subscribe to the
//! API's changes and act through it; the API never calls them. CRD schemas
//! (the checks when a CRD is written, and pruning, defaulting, validation and CEL rules on
//! every custom-resource write) are the `ctop_schema` crate's, shared with `ctop
//! manifests`. Where kubesim differs from a real API server is listed in the crate's
//! README.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use axum::serve::ListenerExt as _;
use parking_lot::Mutex;
use tokio::sync::{mpsc, oneshot};

use crate::api::Api;

mod api;
mod auth;
pub mod clock;
mod controllers;
mod error;
mod faults;
mod kinds;
mod merge;
mod overlay;
mod server;
mod store;

pub use api::admission::{Attributes as AdmissionAttributes, Caller as WebhookCaller, Operation};
pub use api::{ImportEvent, Imported};
pub use auth::tls::{ClientCert, ClosingTls, ServingCert, TlsError, TlsListener};
pub use controllers::workloads::{PodStage, StageOutcome, WorkloadConfig};
pub use error::ApiError;
pub use faults::{EXEMPT_HEADER as FAULT_EXEMPT_HEADER, FaultRule, Faults};
pub use store::{REQUEST_WRITES_KEPT, RequestWrite, WriteCause, WriteEvent};

/// The Kubernetes version kubesim reports (`/version`).
pub const KUBERNETES_VERSION: (&str, &str) = ("1", "33");

/// How to run a kubesim server.
#[derive(Clone, Debug)]
pub struct Config {
    /// Where to listen; port 0 picks a free port.
    pub addr: SocketAddr,
    /// Authenticate every request and decide with RBAC. The kubeconfig then carries an
    /// admin token (`system:masters`); ServiceAccount tokens come from the TokenRequest API
    /// (`kubectl create token`), client certificates from [`KubeSim::client_cert`]. A
    /// request without credentials is `system:anonymous`; one whose token or certificate
    /// fails is `401 Unauthorized`.
    pub authz: bool,
    /// The admin token; generated when `None`.
    pub admin_token: Option<String>,
    /// How many changes are kept for watches to resume from before they get `410 Expired`.
    pub watch_history: usize,
    /// About how many bytes of replaced and deleted object versions the watch history may
    /// keep alive (live objects do not count); older changes are dropped beyond it, so
    /// watches resuming from before them get `410 Expired`. The newest change is always
    /// kept.
    pub watch_history_bytes: usize,
    /// How often watches that allow bookmarks get one.
    pub bookmark_interval: Duration,
    /// Serve HTTPS with a self-issued CA (the kubeconfig carries the CA). Off serves plain
    /// HTTP; note that kubectl then sends no credentials, so `authz` needs TLS.
    pub tls: bool,
    /// Run workloads like a cluster (nodes, Deployments → ReplicaSets → Pods that become
    /// Ready, Service IPs and EndpointSlices, each namespace's ServiceAccount); `None` is a
    /// bare API server. Ignored by an overlay.
    pub workloads: Option<WorkloadConfig>,
    /// With workloads on, start like a fresh kind cluster: the control plane's mirror Pods
    /// (etcd, kube-apiserver, kube-controller-manager, kube-scheduler) on the first node,
    /// which gets the control-plane role label, CoreDNS (a Deployment of 2 and the
    /// `kube-dns` Service), kube-proxy and kindnet (DaemonSets) in `kube-system`, and
    /// local-path-provisioner in `local-path-storage`: objects with their usual labels,
    /// owner references and Ready status, nothing behind them. On by default; ignored
    /// without workloads.
    pub system_pods: bool,
    /// Be an overlay of a live cluster: its objects come in through [`KubeSim::import`],
    /// no workload controllers run (whatever `workloads` says) and no Service gets a
    /// cluster IP, the garbage collector takes an absent owner for gone only when it was
    /// deleted here, and the writes of requests are logged ([`KubeSim::request_writes`]).
    pub overlay: bool,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            authz: false,
            admin_token: None,
            watch_history: store::HistoryLimits::default().events,
            watch_history_bytes: store::HistoryLimits::default().bytes,
            bookmark_interval: Duration::from_secs(10),
            tls: true,
            workloads: None,
            system_pods: true,
            overlay: false,
        }
    }
}

/// Why kubesim could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The address could not be bound (in use, or not a local address).
    #[error("cannot listen on {addr} (pick another port, or port 0 for a free one)")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// The OS error.
        source: std::io::Error,
    },
    /// Seeding the built-in objects failed (a bug in kubesim).
    #[error("cannot seed built-in object: {0}")]
    Seed(ApiError),
    /// The serving certificate could not be made.
    #[error(transparent)]
    Tls(#[from] auth::tls::TlsError),
}

/// A running kubesim. Dropping it stops the server.
#[derive(Debug)]
pub struct KubeSim {
    addr: SocketAddr,
    api: Arc<Api>,
    server: Arc<server::Server>,
    admin_token: String,
    cert: Option<auth::tls::ServingCert>,
    shutdown: Mutex<Option<oneshot::Sender<()>>>,
}

impl KubeSim {
    /// Bind, seed the built-in objects and serve in the background on the current Tokio
    /// runtime.
    pub async fn start(config: Config) -> Result<Self, StartError> {
        // The built-in kinds' schemas are made once per process, off the first request's path.
        tokio::task::spawn_blocking(|| {
            kinds::builtin::catalog();
        });
        let listener = tokio::net::TcpListener::bind(config.addr)
            .await
            .map_err(|source| StartError::Bind { addr: config.addr, source })?;
        let addr = listener.local_addr().map_err(|source| StartError::Bind { addr: config.addr, source })?;
        let (cleanup_tx, cleanup_rx) = mpsc::unbounded_channel();
        let history =
            store::HistoryLimits { events: config.watch_history, bytes: config.watch_history_bytes };
        let api = Arc::new(Api::new(history, cleanup_tx, config.overlay));
        tokio::spawn(controllers::gc::run(Arc::downgrade(&api), cleanup_rx));
        api.bootstrap().await.map_err(StartError::Seed)?;
        for obj in auth::authz::bootstrap_objects() {
            api.seed(obj).await.map_err(StartError::Seed)?;
        }
        // The kubeconfig always carries a token: without credentials kubectl prompts for a
        // password on an https server. Credentials are only checked with `authz`; TokenReview
        // knows them either way.
        let admin_token = config
            .admin_token
            .clone()
            .unwrap_or_else(|| format!("kubesim-admin.{}", kinds::meta::new_uid().replace('-', "")));
        let cert = if config.tls { Some(auth::tls::ServingCert::issue(&serving_hosts(addr))?) } else { None };
        let client_ca = cert.as_ref().map(auth::tls::ServingCert::client_verifier).transpose()?;
        let authn = auth::authn::Authenticator::new(client_ca.clone());
        authn.add_static_token(&admin_token, ADMIN_USER, &[auth::authz::PRIVILEGED_GROUP]);
        let server = Arc::new(server::Server {
            api: api.clone(),
            faults: Arc::new(Faults::default()),
            authn,
            authz: config.authz,
            address: addr.to_string(),
            bookmark_interval: config.bookmark_interval,
            version: KUBERNETES_VERSION,
            stats: server::RequestStats::default(),
        });
        let app = axum::Router::new().fallback(server::handle).with_state(server.clone());
        let (tx, rx) = oneshot::channel::<()>();
        let faults = server.faults.clone();
        let stop = async move {
            let _ = rx.await;
            faults.drop_watches();
        };
        match (&cert, client_ca) {
            (Some(cert), Some(client_ca)) => {
                // Client certificates are asked for, never required (Go's
                // `tls.RequestClientCert`): token clients connect as before.
                let acceptor = cert.acceptor_with(Arc::new(auth::authn::RequestClientCert(client_ca)))?;
                let tls_listener = auth::tls::TlsListener::new(listener, acceptor)
                    .map_err(|source| StartError::Bind { addr: config.addr, source })?;
                let app = app.into_make_service_with_connect_info::<server::PeerCerts>();
                tokio::spawn(async move {
                    if let Err(e) = axum::serve(tls_listener, app).with_graceful_shutdown(stop).await {
                        tracing::error!(error = %e, "kubesim server stopped");
                    }
                });
            }
            _ => {
                let listener = listener.tap_io(|tcp| {
                    // Small watch events must not wait for Nagle's algorithm.
                    let _ = tcp.set_nodelay(true);
                });
                tokio::spawn(async move {
                    if let Err(e) = axum::serve(listener, app).with_graceful_shutdown(stop).await {
                        tracing::error!(error = %e, "kubesim server stopped");
                    }
                });
            }
        }
        if config.overlay && config.workloads.is_some() {
            tracing::info!("kubesim is an overlay: the workload controllers do not run");
        }
        if let Some(workloads) = config.workloads.clone().filter(|_| !config.overlay) {
            let ca = cert.as_ref().map(|c| c.ca_pem.clone());
            controllers::workloads::start(&api, workloads, config.system_pods, ca, server.faults.clone())
                .await
                .map_err(StartError::Seed)?;
        }
        tracing::info!(%addr, authz = config.authz, tls = config.tls, overlay = config.overlay, "kubesim serving");
        Ok(Self { addr, api, server, admin_token, cert, shutdown: Mutex::new(Some(tx)) })
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `https://127.0.0.1:PORT` (or `http://` when TLS is off).
    pub fn url(&self) -> String {
        let scheme = if self.cert.is_some() { "https" } else { "http" };
        format!("{scheme}://{}", self.addr)
    }

    /// The CA certificate (PEM) that signed the serving certificate, when TLS is on.
    pub fn ca_pem(&self) -> Option<&str> {
        self.cert.as_ref().map(|c| c.ca_pem.as_str())
    }

    /// What the watch history keeps alive now: `(changes, estimated bytes)` (see
    /// [`Config::watch_history_bytes`]).
    pub fn history_usage(&self) -> (usize, usize) {
        self.api.store.history_usage()
    }

    /// The resourceVersion of the latest change to any object: it moves on every write
    /// (an import's too), so a test can tell a quiet cluster from a busy one without a
    /// request. `GET /kubesim/stats` reports it as `resourceVersion`.
    pub fn resource_version(&self) -> u64 {
        self.api.store.latest_rv()
    }

    /// A receiver that wakes on every change to any object (several changes at once may
    /// wake it once): a test can note when the cluster was last written.
    pub fn changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.api.store.subscribe_latest()
    }

    /// Route admission webhooks that name a Service to a local address:
    /// `"namespace/name"` → `"host:port"` (there is no cluster network here).
    pub fn set_webhook_services(&self, hosts: std::collections::HashMap<String, String>) {
        self.api.set_webhook_services(hosts);
    }

    /// Fault injection.
    pub fn faults(&self) -> &Faults {
        &self.server.faults
    }

    /// The admin bearer token (checked only when authorization is on).
    pub fn admin_token(&self) -> &str {
        &self.admin_token
    }

    /// Accept the bearer token `token` as `user` in `groups`, like a line of
    /// kube-apiserver's token file: the user also gets `system:authenticated`, as every
    /// authenticated user does. Checked on requests when authorization is on; a
    /// TokenReview knows it either way.
    pub fn add_token(&self, token: &str, user: &str, groups: &[&str]) {
        self.server.authn.add_static_token(token, user, groups);
    }

    /// A client certificate for `user` in `groups` (at most one: its O), signed by kubesim's
    /// CA, which authenticates as that user when authorization is on (kube-apiserver's x509
    /// authenticator: CN the user, O the groups, plus `system:authenticated`). `None` when
    /// TLS is off.
    pub fn client_cert(&self, user: &str, groups: &[&str]) -> Option<Result<ClientCert, TlsError>> {
        self.cert.as_ref().map(|c| c.client_cert(user, groups))
    }

    /// A kubeconfig that points at this server (admin credentials when authorization is on).
    pub fn kubeconfig(&self) -> String {
        kubeconfig_yaml(&self.url(), self.ca_pem(), Some(&self.admin_token), "default")
    }

    /// A kubeconfig whose user is the administrator by client certificate, as kind's is
    /// (CN `kubesim-admin`, O `system:masters`): no token at all. `None` when TLS is off.
    pub fn kubeconfig_with_client_cert(&self) -> Option<Result<String, TlsError>> {
        let cert = self.client_cert(ADMIN_USER, &[auth::authz::PRIVILEGED_GROUP])?;
        Some(cert.map(|c| kubeconfig_yaml_with_client_cert(&self.url(), self.ca_pem(), &c, "default")))
    }

    /// Write [`KubeSim::kubeconfig`] to `path` (atomically: written next to it, then renamed).
    pub fn write_kubeconfig(&self, path: &Path) -> std::io::Result<()> {
        let tmp = path.with_extension("kubesim-tmp");
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(&tmp, self.kubeconfig())?;
        std::fs::rename(&tmp, path)
    }

    /// Stop serving; open watches end.
    pub fn shutdown(&self) {
        if let Some(tx) = self.shutdown.lock().take() {
            let _ = tx.send(());
        }
    }
}

impl Drop for KubeSim {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// The administrator's user name (its token and client certificate authenticate as it).
const ADMIN_USER: &str = "kubesim-admin";

/// The names the serving certificate is for: loopback, and the address listened on.
fn serving_hosts(addr: SocketAddr) -> Vec<String> {
    let mut hosts = vec!["localhost".to_owned(), "127.0.0.1".to_owned(), "::1".to_owned()];
    let ip = addr.ip().to_string();
    if !hosts.contains(&ip) && !addr.ip().is_unspecified() {
        hosts.push(ip);
    }
    hosts
}

/// A kubeconfig for `server`, trusting `ca_pem` when given, whose user authenticates with
/// the client certificate `cert` (`client-certificate-data` and `client-key-data`).
pub fn kubeconfig_yaml_with_client_cert(
    server: &str,
    ca_pem: Option<&str>,
    cert: &ClientCert,
    namespace: &str,
) -> String {
    use base64::Engine as _;
    let b64 = |pem: &str| base64::engine::general_purpose::STANDARD.encode(pem);
    let user = format!(
        "  user:\n    client-certificate-data: {}\n    client-key-data: {}\n",
        b64(&cert.cert_pem),
        b64(&cert.key_pem)
    );
    kubeconfig_with_user(server, ca_pem, &user, namespace)
}

/// A kubeconfig for `server`, trusting `ca_pem` when given, with an optional bearer token.
pub fn kubeconfig_yaml(server: &str, ca_pem: Option<&str>, token: Option<&str>, namespace: &str) -> String {
    let user = match token {
        Some(t) => format!("  user:\n    token: {t}\n"),
        None => "  user: {}\n".to_owned(),
    };
    kubeconfig_with_user(server, ca_pem, &user, namespace)
}

fn kubeconfig_with_user(server: &str, ca_pem: Option<&str>, user: &str, namespace: &str) -> String {
    use base64::Engine as _;
    let ca = ca_pem
        .map(|pem| {
            format!(
                "    certificate-authority-data: {}\n",
                base64::engine::general_purpose::STANDARD.encode(pem)
            )
        })
        .unwrap_or_default();
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: kubesim\n  cluster:\n    server: {server}\n{ca}contexts:\n- name: kubesim\n  context:\n    cluster: kubesim\n    user: kubesim\n    namespace: {namespace}\ncurrent-context: kubesim\nusers:\n- name: kubesim\n{user}preferences: {{}}\n"
    )
}

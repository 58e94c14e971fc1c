//! A TLS HTTP/1.1 client for the webhook server (tests and the benchmark share it), a
//! way to start the server on a free loopback port, and short ways to write the
//! [`AdmissionOutcome`] a Rust handler returns.
#![allow(dead_code, clippy::unwrap_used)]

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use ctop_core::AdmissionOutcome;
use ctop_webhook::{
    Admission, AdmissionScript, ConnectionLimits, Route, SelfIssued, ServerConfig, TlsSource,
};
use http_body_util::{BodyExt as _, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use rustls_pki_types::pem::PemObject as _;
use rustls_pki_types::{CertificateDer, ServerName};

/// A `validate` answer: allowed.
pub fn allowed() -> AdmissionOutcome {
    AdmissionOutcome { allowed: true, ..AdmissionOutcome::default() }
}

/// A `validate` answer: allowed, with `warnings`.
pub fn allowed_with(warnings: &[&str]) -> AdmissionOutcome {
    AdmissionOutcome { warnings: warnings.iter().map(|&w| w.to_owned()).collect(), ..allowed() }
}

/// A `validate` answer: denied with `message`.
pub fn denied(message: impl Into<String>) -> AdmissionOutcome {
    AdmissionOutcome { allowed: false, message: Some(message.into()), ..AdmissionOutcome::default() }
}

/// A `mutate` answer: store `object`.
pub fn mutated(object: serde_json::Value) -> AdmissionOutcome {
    AdmissionOutcome { object: Some(object), ..allowed() }
}

/// A rustls client configuration trusting only `ca_pem`.
pub fn client_config(ca_pem: &str) -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
        roots.add(cert.unwrap()).unwrap();
    }
    Arc::new(
        rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth(),
    )
}

/// A TLS connection to `addr` (verified as 127.0.0.1), for speaking HTTP by hand.
pub async fn connect_tls(
    addr: SocketAddr,
    config: Arc<rustls::ClientConfig>,
) -> Result<tokio_rustls::client::TlsStream<tokio::net::TcpStream>, String> {
    let tcp = tokio::net::TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
    tcp.set_nodelay(true).map_err(|e| e.to_string())?;
    let name = ServerName::try_from("127.0.0.1").unwrap();
    tokio_rustls::TlsConnector::from(config).connect(name, tcp).await.map_err(|e| e.to_string())
}

/// An HTTP/1.1 connection over TLS to `addr` (verified as 127.0.0.1).
pub async fn connect(
    addr: SocketAddr,
    config: Arc<rustls::ClientConfig>,
) -> Result<SendRequest<Full<Bytes>>, String> {
    let tls = connect_tls(addr, config).await?;
    let (sender, conn) =
        hyper::client::conn::http1::handshake(TokioIo::new(tls)).await.map_err(|e| e.to_string())?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(sender)
}

/// POST `body` to `path`; the status and the body of the answer.
pub async fn post(sender: &mut SendRequest<Full<Bytes>>, path: &str, body: Vec<u8>) -> (u16, Vec<u8>) {
    sender.ready().await.unwrap();
    let req = http::Request::post(path)
        .header("host", "127.0.0.1")
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body)))
        .unwrap();
    let resp = sender.send_request(req).await.unwrap();
    let status = resp.status().as_u16();
    let bytes = resp.into_body().collect().await.unwrap().to_bytes().to_vec();
    (status, bytes)
}

/// Serve `routes` with `script` on a free loopback port and a fresh self-issued certificate;
/// the address and the CA to trust.
pub async fn start(
    script: impl AdmissionScript,
    routes: &[Route],
    config: ServerConfig,
) -> (SocketAddr, String) {
    let issued = SelfIssued::issue(&["127.0.0.1".to_owned()]).unwrap();
    let ca = issued.ca_pem.clone();
    let addr = start_with(script, routes, config, &TlsSource::SelfIssued(issued)).await;
    (addr, ca)
}

/// Serve with `tls` on a free loopback port.
pub async fn start_with(
    script: impl AdmissionScript,
    routes: &[Route],
    config: ServerConfig,
    tls: &TlsSource,
) -> SocketAddr {
    let app = Admission::new(Arc::new(script), routes, config).router();
    let bound = ctop_webhook::bind("127.0.0.1:0".parse().unwrap(), tls, app).await.unwrap();
    let addr = bound.local_addr().unwrap();
    tokio::spawn(bound.run(std::future::pending()));
    addr
}

/// [`start`] within `limits`.
pub async fn start_with_limits(
    script: impl AdmissionScript,
    routes: &[Route],
    config: ServerConfig,
    limits: ConnectionLimits,
) -> (SocketAddr, String) {
    let issued = SelfIssued::issue(&["127.0.0.1".to_owned()]).unwrap();
    let ca = issued.ca_pem.clone();
    let app = Admission::new(Arc::new(script), routes, config).router();
    let bound = ctop_webhook::bind_with_limits(
        "127.0.0.1:0".parse().unwrap(),
        &TlsSource::SelfIssued(issued),
        app,
        limits,
    )
    .await
    .unwrap();
    let addr = bound.local_addr().unwrap();
    tokio::spawn(bound.run(std::future::pending()));
    (addr, ca)
}

/// The routes of an operator with one `Widget` controller that validates and mutates.
pub fn widget_routes() -> Vec<Route> {
    let spec: ctop_core::OperatorSpec = serde_json::from_value(serde_json::json!({
        "resources": [{"apiVersion": "demo.ctop.dev/v1", "group": "demo.ctop.dev", "version": "v1",
            "kind": "Widget", "plural": "widgets", "singular": "widget", "scope": "Namespaced",
            "schema": {"type": "object"}}],
        "controllers": [{"index": 0, "name": "widget", "for": {"apiVersion": "demo.ctop.dev/v1", "kind": "Widget"},
            "handlers": ["validate", "mutate"]}],
    }))
    .unwrap();
    ctop_webhook::routes(&spec)
}

/// An operator whose Widget has two versions, `v2` (the hub, stored) and `v1`, so that it
/// converts, and one controller with `handlers`.
pub fn converting_spec(handlers: &[&str]) -> ctop_core::OperatorSpec {
    serde_json::from_value(serde_json::json!({
        "resources": [{"apiVersion": "demo.ctop.dev/v2", "group": "demo.ctop.dev", "version": "v2",
            "kind": "Widget", "plural": "widgets", "singular": "widget", "scope": "Namespaced",
            "schema": {"type": "object"},
            "versions": [
                {"name": "v2", "served": true, "storage": true, "schema": {"type": "object"}},
                {"name": "v1", "served": true, "storage": false, "schema": {"type": "object"}}]}],
        "controllers": [{"index": 0, "name": "widget", "for": {"apiVersion": "demo.ctop.dev/v2", "kind": "Widget"},
            "handlers": handlers}],
    }))
    .unwrap()
}

/// [`converting_spec`] with the one version `v2`: nothing to convert.
pub fn single_version_spec(handlers: &[&str]) -> ctop_core::OperatorSpec {
    let mut spec = converting_spec(handlers);
    spec.resources[0].versions.clear();
    spec
}

/// The name of the CRD of [`widget_crd`].
pub const WIDGET_CRD: &str = "widgets.demo.ctop.dev";

/// The CRD of a Widget with versions `v2` (stored) and `v1`, converted as `conversion`
/// (its `spec.conversion`) says.
pub fn widget_crd(
    conversion: serde_json::Value,
) -> k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition {
    let schema = serde_json::json!({"openAPIV3Schema": {"type": "object", "properties": {
        "spec": {"type": "object", "properties": {"color": {"type": "string"}}}}}});
    serde_json::from_value(serde_json::json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": WIDGET_CRD},
        "spec": {"group": "demo.ctop.dev", "scope": "Namespaced",
            "names": {"kind": "Widget", "plural": "widgets", "singular": "widget", "listKind": "WidgetList"},
            "versions": [
                {"name": "v2", "served": true, "storage": true, "schema": schema},
                {"name": "v1", "served": true, "storage": false, "schema": schema}],
            "conversion": conversion},
    }))
    .unwrap()
}

/// A Widget with `color`.
pub fn widget(color: &str) -> serde_json::Value {
    serde_json::json!({"apiVersion": "demo.ctop.dev/v1", "kind": "Widget",
        "metadata": {"name": "w", "namespace": "default"}, "spec": {"color": color}})
}

/// How a slow client holds a connection.
#[derive(Clone, Copy, Debug)]
pub enum Slow {
    /// TLS connected, sending one byte of a request head (that never ends) every period.
    Trickle(std::time::Duration),
    /// TCP connected, sending the first byte of a TLS record and no more (a client that
    /// sends nothing at all is not even seen when the listen backlog overflows: the kernel
    /// drops it and the client does not know).
    Silent,
}

/// What the slow clients of [`SlowClients::spawn`] have seen so far.
#[derive(Clone, Copy, Debug, Default)]
pub struct SlowCounts {
    /// Connections open now (TLS finished for [`Slow::Trickle`], TCP for [`Slow::Silent`]).
    pub open: usize,
    /// Clients that have had a connection open at least once.
    pub ever: usize,
    /// Connections the server closed.
    pub closed: usize,
}

/// Clients holding connections as slowly as [`Slow`] says; each opens a new connection as
/// soon as the server closes its last one, so that `n` are always open or opening.
pub struct SlowClients {
    counts: tokio::sync::watch::Receiver<SlowCounts>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Drop for SlowClients {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

impl SlowClients {
    pub fn spawn(addr: SocketAddr, config: Arc<rustls::ClientConfig>, n: usize, how: Slow) -> Self {
        let (tx, counts) = tokio::sync::watch::channel(SlowCounts::default());
        let tx = Arc::new(tx);
        let tasks = (0..n)
            .map(|_| {
                let (tx, config) = (tx.clone(), config.clone());
                tokio::spawn(async move {
                    let mut first = true;
                    loop {
                        let opened = match how {
                            Slow::Trickle(every) => match connect_tls(addr, config.clone()).await {
                                Ok(tls) => Some(Held::Tls(Box::new(tls), every)),
                                Err(_) => None,
                            },
                            Slow::Silent => tokio::net::TcpStream::connect(addr).await.ok().map(Held::Tcp),
                        };
                        let Some(held) = opened else {
                            // The server refused the handshake (a shed during it): try again.
                            tx.send_modify(|c| c.closed += 1);
                            continue;
                        };
                        tx.send_modify(|c| {
                            c.open += 1;
                            c.ever += usize::from(first);
                        });
                        first = false;
                        held.hold().await;
                        tx.send_modify(|c| {
                            c.open -= 1;
                            c.closed += 1;
                        });
                    }
                })
            })
            .collect();
        Self { counts, tasks }
    }

    pub fn counts(&self) -> SlowCounts {
        *self.counts.borrow()
    }

    /// Wait until the counts satisfy `f`.
    pub async fn wait_for(&self, f: impl FnMut(&SlowCounts) -> bool) -> SlowCounts {
        *self.counts.clone().wait_for(f).await.unwrap()
    }
}

enum Held {
    Tls(Box<tokio_rustls::client::TlsStream<tokio::net::TcpStream>>, std::time::Duration),
    Tcp(tokio::net::TcpStream),
}

impl Held {
    /// Hold the connection until the server closes it.
    async fn hold(self) {
        use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
        let mut buf = [0u8; 512];
        match self {
            Held::Tcp(mut tcp) => {
                // A TLS handshake record starts; the read ends when the server closes.
                if tcp.write_all(&[0x16]).await.is_ok() {
                    let _ = tcp.read(&mut buf).await;
                }
            }
            Held::Tls(tls, every) => {
                let head = format!(
                    "POST /validate/demo.ctop.dev/v1/widgets HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: {}\r\n\r\n",
                    "a".repeat(4096)
                );
                let (mut rd, mut wr) = tokio::io::split(*tls);
                let mut tick = tokio::time::interval(every);
                for byte in head.as_bytes().chunks(1) {
                    tokio::select! {
                        _ = rd.read(&mut buf) => return,
                        _ = tick.tick() => if wr.write_all(byte).await.is_err() { return },
                    }
                }
                let _ = rd.read(&mut buf).await;
            }
        }
    }
}

/// A client of `sim`, as its admin.
pub async fn client(sim: &ctop_kubesim::KubeSim) -> kube::Client {
    let kc = kube::config::Kubeconfig::from_yaml(&sim.kubeconfig()).expect("kubeconfig parses");
    let cfg = kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
        .await
        .expect("kubeconfig loads");
    kube::Client::try_from(cfg).expect("client")
}

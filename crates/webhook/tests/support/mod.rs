//! A TLS HTTP/1.1 client for the webhook server (tests and the benchmark share it), and a
//! way to start the server on a free loopback port.
#![allow(dead_code, clippy::unwrap_used)]

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use ctop_webhook::{Admission, AdmissionScript, Route, SelfIssued, ServerConfig, TlsSource};
use http_body_util::{BodyExt as _, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use rustls_pki_types::pem::PemObject as _;
use rustls_pki_types::{CertificateDer, ServerName};

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

/// An HTTP/1.1 connection over TLS to `addr` (verified as 127.0.0.1).
pub async fn connect(
    addr: SocketAddr,
    config: Arc<rustls::ClientConfig>,
) -> Result<SendRequest<Full<Bytes>>, String> {
    let tcp = tokio::net::TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
    tcp.set_nodelay(true).map_err(|e| e.to_string())?;
    let name = ServerName::try_from("127.0.0.1").unwrap();
    let tls = tokio_rustls::TlsConnector::from(config).connect(name, tcp).await.map_err(|e| e.to_string())?;
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

/// The routes of an operator with one `Widget` controller that validates and mutates.
pub fn widget_routes() -> Vec<Route> {
    let spec: ctop_webhook::core::OperatorSpec = serde_json::from_value(serde_json::json!({
        "resources": [{"apiVersion": "demo.ctop.dev/v1", "group": "demo.ctop.dev", "version": "v1",
            "kind": "Widget", "plural": "widgets", "singular": "widget", "scope": "Namespaced",
            "schema": {"type": "object"}}],
        "controllers": [{"index": 0, "name": "widget", "for": {"apiVersion": "demo.ctop.dev/v1", "kind": "Widget"},
            "handlers": ["validate", "mutate"]}],
    }))
    .unwrap();
    ctop_webhook::routes(&spec)
}

/// A Widget with `color`.
pub fn widget(color: &str) -> serde_json::Value {
    serde_json::json!({"apiVersion": "demo.ctop.dev/v1", "kind": "Widget",
        "metadata": {"name": "w", "namespace": "default"}, "spec": {"color": color}})
}

//! A webhook server for unit tests: HTTPS on loopback with certificates from a test CA,
//! answering every POST with a handler and logging what it received.

#![allow(clippy::unwrap_used)]

use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
use rustls_pki_types::PrivateKeyDer;
use serde_json::Value;
use tokio::net::TcpListener;

/// A test CA: its PEM and an issuer to sign server certificates.
pub(crate) struct Ca {
    pub(crate) pem: String,
    pub(crate) issuer: Issuer<'static, KeyPair>,
}

pub(crate) fn ca(cn: &str) -> Ca {
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, cn);
    let key = KeyPair::generate().unwrap();
    let pem = params.self_signed(&key).unwrap().pem();
    Ca { pem, issuer: Issuer::new(params, key) }
}

pub(crate) fn server_tls(ca: &Ca, names: &[&str], expired: bool) -> Arc<rustls::ServerConfig> {
    let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    let mut params = CertificateParams::new(names).unwrap();
    if expired {
        params.not_before = rcgen::date_time_ymd(2000, 1, 1);
        params.not_after = rcgen::date_time_ymd(2001, 1, 1);
    }
    let key = KeyPair::generate().unwrap();
    let cert = params.signed_by(&key, &ca.issuer).unwrap();
    let key = PrivateKeyDer::Pkcs8(key.serialize_der().into());
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![cert.der().clone()], key)
        .unwrap();
    Arc::new(config)
}

pub(crate) type Handler = Arc<dyn Fn(&Value) -> (u16, Value) + Send + Sync>;

/// What a test server received: request URI, Host header, body.
#[derive(Clone, Debug)]
pub(crate) struct Seen {
    pub(crate) uri: String,
    pub(crate) host: String,
    pub(crate) body: Value,
}

#[derive(Clone, Default)]
pub(crate) struct Log(Arc<Mutex<Vec<Seen>>>);

impl Log {
    pub(crate) fn all(&self) -> Vec<Seen> {
        self.0.lock().unwrap().clone()
    }
    pub(crate) fn count(&self) -> usize {
        self.0.lock().unwrap().len()
    }
}

/// Starts an HTTPS webhook server on 127.0.0.1:0; returns its port and request log.
pub(crate) async fn serve(tls: Arc<rustls::ServerConfig>, delay: Duration, handler: Handler) -> (u16, Log) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let log = Log::default();
    let log2 = log.clone();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let acceptor = tokio_rustls::TlsAcceptor::from(tls.clone());
            let (log, handler) = (log2.clone(), handler.clone());
            tokio::spawn(async move {
                let Ok(stream) = acceptor.accept(tcp).await else {
                    return;
                };
                let service = service_fn(move |req: http::Request<Incoming>| {
                    let (log, handler) = (log.clone(), handler.clone());
                    async move {
                        let uri = req.uri().to_string();
                        let host = req.headers()[http::header::HOST].to_str().unwrap().to_string();
                        let bytes = req.into_body().collect().await.unwrap().to_bytes();
                        let body: Value = serde_json::from_slice(&bytes).unwrap();
                        log.0.lock().unwrap().push(Seen { uri, host, body: body.clone() });
                        tokio::time::sleep(delay).await;
                        let (code, out) = handler(&body);
                        let response = http::Response::builder()
                            .status(code)
                            .header("content-type", "application/json")
                            .body(Full::new(Bytes::from(out.to_string())))
                            .unwrap();
                        Ok::<_, Infallible>(response)
                    }
                });
                let io = hyper_util::rt::TokioIo::new(stream);
                let _ = hyper::server::conn::http1::Builder::new().serve_connection(io, service).await;
            });
        }
    });
    (port, log)
}

//! The client side of a call to a webhook, shared by admission ([`crate::api::admission`]) and
//! custom resource conversion (`crate::api::conversion`), which the API server both makes with
//! the client manager of `k8s.io/apiserver/pkg/util/webhook` (`client.go`): where a
//! `clientConfig` leads (`url`, or a `service` that kubesim maps to a loopback address), TLS
//! verified against its `caBundle` (`verify.rs`), one JSON POST under a deadline with the
//! `User-Agent` `kube-apiserver-admission` (the default authentication resolver's,
//! `authentication.go`), and errors worded like Go's `net/http`, `crypto/tls` and client-go's
//! REST client (`transport.rs`).

mod transport;
mod verify;

#[cfg(test)]
pub(crate) mod test_server;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use bytes::Bytes;
use rustls_pki_types::{CertificateDer, ServerName};
use serde_json::Value;

use crate::kinds::meta::str_at;

#[cfg(test)]
pub(crate) use transport::{clean_path, join_host_port, resolve_loopback, rfc3339, split_host_port};
use transport::{clean_path as clean, join_host_port as join, resolve_loopback as loopback, root_store};

/// How to reach one webhook.
pub(crate) struct Target {
    /// `host:port` as in the URL and `Host` header.
    authority: String,
    /// The address to dial, or the dial error.
    dial: Result<SocketAddr, String>,
    server_name: ServerName<'static>,
    /// The URL's path (the service's `path`), cleaned like Go's `path.Join`.
    path: String,
    /// The `caBundle`'s certificates (empty: none was given).
    roots: Vec<CertificateDer<'static>>,
}

/// A webhook's answer: the HTTP status, whether the body is `text/plain`, and the body.
pub(crate) struct Answer {
    pub(crate) code: u16,
    pub(crate) is_text: bool,
    pub(crate) body: Bytes,
}

impl Target {
    /// Where `client_config` (a `clientConfig` of an admission webhook or of a CRD's
    /// conversion webhook) leads; services resolve through `service_hosts`
    /// (`"namespace/name"` → `"host:port"`).
    pub(crate) fn new(
        client_config: &Value,
        service_hosts: &HashMap<String, String>,
    ) -> Result<Self, String> {
        let cc = client_config;
        let ca = BASE64
            .decode(str_at(cc, "caBundle"))
            .map_err(|e| format!("unable to load root certificates: {e}"))?;
        let roots = root_store(&ca)?;
        if let Some(url) = cc.get("url").and_then(Value::as_str) {
            let rest = url.strip_prefix("https://").ok_or("'https' is the only allowed URL scheme")?;
            let rest = rest.split(['?', '#']).next().unwrap_or_default();
            let (authority, path) = rest.find('/').map_or((rest, ""), |i| rest.split_at(i));
            let (host, port) = transport::split_host_port(authority)?;
            let port = port.unwrap_or(443);
            let server_name = ServerName::try_from(host.to_string()).map_err(|e| e.to_string())?;
            return Ok(Target {
                authority: join(host, port),
                dial: loopback(host, port),
                server_name,
                path: clean(path),
                roots,
            });
        }
        let svc = cc.get("service").ok_or("no url or service in clientConfig")?;
        let (ns, name) = (str_at(svc, "namespace"), str_at(svc, "name"));
        let port = svc.get("port").and_then(Value::as_u64).unwrap_or(443);
        let host = format!("{name}.{ns}.svc");
        let dial = match service_hosts.get(&format!("{ns}/{name}")) {
            Some(addr) => transport::split_host_port(addr).and_then(|(h, p)| loopback(h, p.unwrap_or(443))),
            None => Err(format!("service {name:?} not found")),
        };
        Ok(Target {
            authority: format!("{host}:{port}"),
            dial,
            server_name: ServerName::try_from(host).map_err(|e| e.to_string())?,
            path: clean(str_at(svc, "path")),
            roots,
        })
    }

    /// POSTs `body` (JSON) to the webhook with client-go's `?timeout=` parameter, giving up
    /// after `timeout` (zero: never). A failure reads like Go's `*url.Error`:
    /// `Post "https://host:port/path?timeout=10s": <why>`.
    pub(crate) async fn post(&self, timeout: Duration, body: String) -> Result<Answer, String> {
        let mut path = self.path.clone();
        if !timeout.is_zero() {
            path = format!("{path}?timeout={}", go_duration(timeout));
        }
        let url = format!("https://{}{path}", self.authority);
        let exchange = transport::post(self, &path, body);
        let result = if timeout.is_zero() {
            exchange.await
        } else {
            tokio::time::timeout(timeout, exchange)
                .await
                .unwrap_or_else(|_| Err("context deadline exceeded".into()))
        };
        result
            .map(|(code, is_text, body)| Answer { code, is_text, body })
            .map_err(|e| format!("Post {url:?}: {e}"))
    }
}

/// The error the Go REST client makes of a non-2xx answer (`NewGenericServerResponse`).
pub(crate) fn unexpected_status(code: u16, is_text: bool, body: &[u8]) -> String {
    if let Ok(status) = serde_json::from_slice::<Value>(body)
        && str_at(&status, "kind") == "Status"
        && str_at(&status, "status") == "Failure"
    {
        return str_at(&status, "message").to_string();
    }
    let server = if is_text {
        String::from_utf8_lossy(&body[..body.len().min(2048)]).trim().to_string()
    } else {
        "unknown".to_string()
    };
    match code {
        409 => "the server reported a conflict".into(),
        404 => "the server could not find the requested resource".into(),
        400 => "the server rejected our request for an unknown reason".into(),
        401 => "the server has asked for the client to provide credentials".into(),
        403 => server,
        405 => "the server does not allow this method on the requested resource".into(),
        422 => "the server rejected our request due to an error in our request".into(),
        429 => "the server has received too many requests and has asked us to try again later".into(),
        503 => "the server is currently unable to handle the request".into(),
        504 => "the server was unable to return a response in the time allotted, but may still be processing the request".into(),
        500.. => format!("an error on the server ({server:?}) has prevented the request from succeeding"),
        _ => format!("the server responded with the status code {code} but did not return more information"),
    }
}

/// Go's `time.Duration.String()` for whole seconds, rounded up like the dispatcher does.
pub(crate) fn go_duration(d: Duration) -> String {
    let secs = d.as_secs() + u64::from(d.subsec_nanos() > 0);
    match (secs / 3600, secs / 60 % 60, secs % 60) {
        (0, 0, s) => format!("{s}s"),
        (0, m, s) => format!("{m}m{s}s"),
        (h, m, s) => format!("{h}h{m}m{s}s"),
    }
}

/// Whether `pem` (a decoded `caBundle`) loads as trust roots, as `ValidateCABundle` checks
/// it (`util/webhook/validation.go`, client-go's `rootCertPool`); the error in their words.
pub(crate) fn check_ca_bundle(pem: &[u8]) -> Result<(), String> {
    root_store(pem).map(drop)
}

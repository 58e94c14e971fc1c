//! Asks a running operator for an object's reconcile history: `GET /api/objects` finds the
//! controller of the object's kind, `GET /api/history` answers its reconciles.

use std::time::Duration;

use anyhow::Context as _;
use ctop_controller::inspect::Overview;
use ctop_controller::inspect::api::HistoryAnswer;
use http_body_util::{BodyExt as _, Empty};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use kube::api::ApiResource;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::History;

/// How long the operator may take to answer: it is local (or port-forwarded), and the
/// trace is printed without it when it does not answer.
const TIMEOUT: Duration = Duration::from_secs(3);

/// The history of `object` (of `resource`) from the operator at `base`, or why there is
/// none, in words for the reader.
pub(super) async fn history(base: &str, resource: &ApiResource, object: &Value) -> History {
    let found = async {
        let overview: Overview = get(base, "/api/objects").await?;
        let (namespace, name) = super::identity(object);
        let controller = overview
            .controllers
            .iter()
            .find(|c| c.kind == resource.kind && ctop_core::group_of(&c.api_version) == resource.group)
            .or_else(|| overview.controllers.iter().find(|c| c.kind == resource.kind))
            .with_context(|| format!("the operator at {base} has no controller of {}", resource.kind))?;
        let mut query = form_urlencoded::Serializer::new(String::new());
        query.append_pair("controller", &controller.name).append_pair("name", &name);
        if let Some(ns) = namespace {
            query.append_pair("namespace", &ns);
        }
        get::<HistoryAnswer>(base, &format!("/api/history?{}", query.finish())).await
    };
    match tokio::time::timeout(TIMEOUT, found).await {
        Ok(Ok(answer)) => Ok(answer),
        Ok(Err(e)) => Err(format!("{e:#}")),
        Err(_) => Err(format!("the operator at {base} did not answer within {}s", TIMEOUT.as_secs())),
    }
}

/// `GET base+path` over HTTP/1.1, its JSON body read as `T`.
async fn get<T: DeserializeOwned>(base: &str, path: &str) -> anyhow::Result<T> {
    let uri: hyper::Uri = format!("{}{path}", base.trim_end_matches('/'))
        .parse()
        .with_context(|| format!("--operator {base:?} is not a URL like http://127.0.0.1:8081"))?;
    anyhow::ensure!(
        uri.scheme_str() == Some("http"),
        "--operator {base:?}: only http:// is served (the health port has no TLS)"
    );
    let host = uri.host().context("--operator has no host")?.to_owned();
    let port = uri.port_u16().unwrap_or(80);
    let stream = tokio::net::TcpStream::connect((host.as_str(), port))
        .await
        .with_context(|| format!("no operator at {base} (start one, or pass --operator URL)"))?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .with_context(|| format!("cannot talk HTTP to {base}"))?;
    tokio::spawn(conn);
    let request = hyper::Request::get(uri.path_and_query().map_or("/", |p| p.as_str()))
        .header(hyper::header::HOST, format!("{host}:{port}"))
        .body(Empty::<Bytes>::new())
        .context("cannot build the request")?;
    let response = sender.send_request(request).await.with_context(|| format!("GET {path} failed"))?;
    let status = response.status();
    let body = response.into_body().collect().await.with_context(|| format!("GET {path} failed"))?.to_bytes();
    if !status.is_success() {
        let message = serde_json::from_slice::<Value>(&body)
            .ok()
            .and_then(|v| v["message"].as_str().map(str::to_owned))
            .unwrap_or_else(|| String::from_utf8_lossy(&body).into_owned());
        anyhow::bail!("the operator answered {status}: {message}");
    }
    serde_json::from_slice(&body).with_context(|| format!("GET {path}: the answer is not what ctop serves"))
}

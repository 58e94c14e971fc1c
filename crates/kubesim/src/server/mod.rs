//! HTTP: the entry point of every request ([`handle`]) and its routing. Start there; the
//! modules below are one concern each:
//!
//! - `path`: what a request addresses (route, query, verb);
//! - `wire`: bodies in, negotiated answers and error `Status` bodies out;
//! - `auth`: authentication, authorization and the TokenRequest endpoint;
//! - `reviews`: the token and access reviews;
//! - `resource`: the verbs on a resource and its subresources;
//! - `list` and `watch`: the two reads that return many objects.

mod auth;
mod list;
pub(crate) mod openapi;
mod path;
pub(crate) mod printer_columns;
pub(crate) mod proto;
mod resource;
mod reviews;
pub(crate) mod table;
mod watch;
mod wire;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use parking_lot::Mutex;
use serde_json::{Value, json};

use self::auth::{authenticate, authorize};
use self::path::{Query, ResPath, Route, parse_query, parse_route, verb_of};
use self::resource::resource;
use self::wire::{error_response, json_response, read_body};
use crate::api::Api;
use crate::auth::authz::Attributes;
use crate::error::ApiError;
use crate::faults::Faults;

/// Shared state of the HTTP server.
pub struct Server {
    /// The API logic.
    pub api: Arc<Api>,
    /// Fault injection.
    pub faults: Arc<Faults>,
    /// Client certificates and bearer tokens → users (TokenReview answers from them
    /// whether or not `authz` is on).
    pub authn: crate::auth::authn::Authenticator,
    /// Whether requests are authenticated and authorized with RBAC.
    pub authz: bool,
    /// `host:port` clients use.
    pub address: String,
    /// How often watches get a BOOKMARK.
    pub bookmark_interval: Duration,
    /// Reported by `/version`.
    pub version: (&'static str, &'static str),
    /// Resource requests served, by verb and resource (`GET /kubesim/stats`).
    pub stats: RequestStats,
}

/// Counts of resource requests by client (`User-Agent`, `-` when absent) and
/// `"<verb> <resource>[/<subresource>]"` (server-side apply counts as `apply`), served at
/// `GET /kubesim/stats` and reset by `DELETE /kubesim/stats`; benchmarks read it to report
/// API requests per reconcile. The answer also carries the store's latest
/// `resourceVersion` (a number), which moves on every change: a test outside the process
/// reads it to tell that nothing was written.
#[derive(Debug, Default)]
pub struct RequestStats {
    counts: Mutex<BTreeMap<String, BTreeMap<String, u64>>>,
}

impl RequestStats {
    fn record(&self, agent: &str, verb: &str, p: &ResPath) {
        let key = match &p.sub {
            Some(sub) => format!("{verb} {}/{sub}", p.resource),
            None => format!("{verb} {}", p.resource),
        };
        *self.counts.lock().entry(agent.to_owned()).or_default().entry(key).or_default() += 1;
    }

    /// The counts so far: `{"total": n, "clients": {agent: {"total": n, "requests": {..}}}}`.
    pub fn snapshot(&self) -> Value {
        let counts = self.counts.lock();
        let mut clients = serde_json::Map::new();
        let mut total = 0;
        for (agent, requests) in counts.iter() {
            let n = requests.values().sum::<u64>();
            total += n;
            clients.insert(agent.clone(), json!({"total": n, "requests": requests}));
        }
        json!({"total": total, "clients": clients})
    }

    /// Forget every count.
    pub fn reset(&self) {
        self.counts.lock().clear();
    }
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server").field("address", &self.address).finish_non_exhaustive()
    }
}

/// The certificates a TLS client presented, leaf first: the `ConnectInfo` of kubesim's
/// connections (empty over plain HTTP).
#[derive(Clone, Debug, Default)]
pub struct PeerCerts(pub Option<Arc<[rustls::pki_types::CertificateDer<'static>]>>);

impl axum::extract::connect_info::Connected<axum::serve::IncomingStream<'_, crate::auth::tls::TlsListener>>
    for PeerCerts
{
    fn connect_info(stream: axum::serve::IncomingStream<'_, crate::auth::tls::TlsListener>) -> Self {
        PeerCerts(stream.io().peer_certificates().map(Arc::from))
    }
}

/// The entry point for every request.
pub async fn handle(State(srv): State<Arc<Server>>, req: Request) -> Response {
    let peer = req
        .extensions()
        .get::<axum::extract::ConnectInfo<PeerCerts>>()
        .map(|c| c.0.clone())
        .unwrap_or_default();
    let method = req.method().clone();
    let path = req.uri().path().to_owned();
    let query = parse_query(req.uri().query());
    let headers = req.headers().clone();
    let started = std::time::Instant::now();
    // The whole request body is read before any answer, even an early error: a response
    // sent while the client is still writing makes the server close the connection, and a
    // client that reuses it sees "broken pipe" (kubectl does, on POSTs answered with 404).
    let body = match read_body(req.into_body()).await {
        Ok(bytes) => Body::from(bytes),
        Err(e) => return error_response(&e),
    };
    let response = match route(&srv, &method, &path, &query, &headers, &peer, body).await {
        Ok(r) => r,
        Err(e) => error_response(&e),
    };
    tracing::debug!(%method, path, status = response.status().as_u16(), elapsed_us = started.elapsed().as_micros() as u64, "request");
    response
}

async fn route(
    srv: &Arc<Server>,
    method: &Method,
    path: &str,
    query: &Query,
    headers: &HeaderMap,
    peer: &PeerCerts,
    body: Body,
) -> Result<Response, ApiError> {
    let route = parse_route(path).ok_or_else(ApiError::no_route)?;
    let user = authenticate(srv, headers, peer)?;
    let res = match route {
        Route::Resource(p) => {
            let apply = headers
                .get(header::CONTENT_TYPE)
                .is_some_and(|v| v.as_bytes().starts_with(b"application/apply-patch"));
            let verb = if apply && *method == Method::PATCH { "apply" } else { verb_of(method, &p, query) };
            let agent = headers.get(header::USER_AGENT).and_then(|v| v.to_str().ok()).unwrap_or("-");
            srv.stats.record(agent, verb, &p);
            return resource(srv, method, p, query, headers, body, user.as_ref()).await;
        }
        Route::Stats => {
            authorize(srv, user.as_ref(), &Attributes::non_resource(&method.as_str().to_lowercase(), path))?;
            let answer = || {
                let mut stats = srv.stats.snapshot();
                stats["resourceVersion"] = json!(srv.api.store.latest_rv());
                json_response(200, &stats)
            };
            return match *method {
                Method::GET => Ok(answer()),
                Method::DELETE => {
                    srv.stats.reset();
                    Ok(answer())
                }
                _ => Err(ApiError::method_not_allowed(method.as_str())),
            };
        }
        Route::Faults(rest) => {
            authorize(srv, user.as_ref(), &Attributes::non_resource(&method.as_str().to_lowercase(), path))?;
            return faults(srv, method, &rest, body).await;
        }
        other => other,
    };
    if method != Method::GET {
        return Err(ApiError::method_not_allowed(method.as_str()));
    }
    authorize(srv, user.as_ref(), &Attributes::non_resource("get", path))?;
    let doc = match res {
        Route::Version => json!({
            "major": srv.version.0, "minor": srv.version.1,
            "gitVersion": format!("v{}.{}.0-kubesim", srv.version.0, srv.version.1),
            "gitCommit": "kubesim", "gitTreeState": "clean", "buildDate": "2026-01-01T00:00:00Z",
            "goVersion": "kubesim", "compiler": "rustc", "platform": "linux/amd64",
        }),
        Route::Health => {
            return Ok((StatusCode::OK, [(header::CONTENT_TYPE, "text/plain")], "ok").into_response());
        }
        Route::Api => srv.api.registry.api_versions(&srv.address),
        Route::Apis => srv.api.registry.api_group_list(),
        Route::Group(g) => srv.api.registry.api_group(&g).ok_or_else(ApiError::no_route)?,
        Route::GroupVersion(g, v) => {
            srv.api.registry.api_resource_list(&g, &v).ok_or_else(ApiError::no_route)?
        }
        Route::OpenApiV2 => {
            let doc = openapi::v2::document(&srv.api.registry);
            // client-go asks for protobuf only (discovery_client.go, openAPIV2mimePb); a
            // browser or curl gets JSON. The answer names the type without the `@` that
            // Go's mime parser refuses, as kube-openapi's handler does
            // (pkg/handler/handler.go: subTypeProtobufDeprecated → subTypeProtobuf).
            let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()).unwrap_or_default();
            if accept.contains("protobuf") {
                let bytes = openapi::gnostic::encode(&doc);
                let mime = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";
                return Ok((StatusCode::OK, [(header::CONTENT_TYPE, mime)], bytes).into_response());
            }
            doc
        }
        Route::OpenApiV3 => openapi::index(&srv.api.registry),
        Route::OpenApiV3Doc(gv) => {
            openapi::document(&srv.api.registry, &gv).ok_or_else(ApiError::no_route)?
        }
        Route::Resource(_) | Route::Faults(_) | Route::Stats => return Err(ApiError::no_route()),
    };
    Ok(json_response(200, &doc))
}

async fn faults(srv: &Server, method: &Method, rest: &[String], body: Body) -> Result<Response, ApiError> {
    match (method, rest.first().map(String::as_str)) {
        (&Method::GET, None) => Ok(json_response(200, &json!(srv.faults.rules()))),
        (&Method::POST, None) => {
            let bytes = read_body(body).await?;
            let rule = serde_json::from_slice(&bytes)
                .map_err(|e| ApiError::bad_request(format!("fault rule: {e}")))?;
            srv.faults.add(rule);
            Ok(json_response(201, &json!(srv.faults.rules())))
        }
        (&Method::GET, Some("pod-stages")) => {
            let stages: Vec<String> = srv.faults.pod_stages().into_iter().map(|s| s.text).collect();
            Ok(json_response(200, &json!(stages)))
        }
        (&Method::PUT, Some("pod-stages")) => {
            let bytes = read_body(body).await?;
            let texts: Vec<String> = serde_json::from_slice(&bytes).map_err(|e| {
                ApiError::bad_request(format!(
                    "pod stages: expected a list of \"SELECTOR:ACTION\" strings: {e}"
                ))
            })?;
            let stages = texts
                .iter()
                .map(|t| t.parse::<crate::PodStage>())
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| ApiError::bad_request(format!("pod stages: {e}")))?;
            srv.faults.set_pod_stages(stages);
            Ok(json_response(200, &json!(texts)))
        }
        (&Method::POST, Some("drop-watches")) => {
            srv.faults.drop_watches();
            Ok(json_response(200, &json!({})))
        }
        (&Method::DELETE, None) => {
            srv.faults.clear();
            Ok(json_response(200, &json!([])))
        }
        _ => Err(ApiError::no_route()),
    }
}

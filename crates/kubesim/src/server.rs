//! HTTP: routing of Kubernetes REST paths, query parameters, content negotiation
//! (JSON, `Table`, `PartialObjectMetadata`), authentication and authorization, fault
//! injection, and the chunked watch stream.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use futures::StreamExt as _;
use http_body_util::BodyExt as _;
use parking_lot::Mutex;
use serde_json::{Value, json};

use crate::api::{Api, DeleteOpts, Deleted, FieldValidation, PatchKind, WriteOpts};
use crate::authz::{self, Attributes, User};
use crate::convert;
use crate::error::ApiError;
use crate::faults::Faults;
use crate::openapi;
use crate::registry::ResourceType;
use crate::selector::{FieldSelector, LabelSelector};
use crate::store::{Change, EventKind};
use crate::table::{self, Include};

/// The largest request body accepted: the real server's `MaxRequestBodyBytes`, 3 MiB.
const MAX_BODY: usize = 3 * 1024 * 1024;

/// How many changes a watcher reads from the history at a time.
const WATCH_BATCH: usize = 64;

/// Shared state of the HTTP server.
pub struct Server {
    /// The API logic.
    pub api: Arc<Api>,
    /// Fault injection.
    pub faults: Arc<Faults>,
    /// Bearer tokens → users; `None` when authorization is off.
    pub tokens: Option<Mutex<HashMap<String, User>>>,
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
/// API requests per reconcile.
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

/// A parsed resource path.
#[derive(Debug, Default, Clone)]
struct ResPath {
    group: String,
    version: String,
    namespace: Option<String>,
    resource: String,
    name: Option<String>,
    sub: Option<String>,
}

enum Route {
    Version,
    Health,
    Api,
    Apis,
    Group(String),
    GroupVersion(String, String),
    OpenApiV2,
    OpenApiV3,
    OpenApiV3Doc(String),
    Faults(Vec<String>),
    Stats,
    Resource(ResPath),
}

fn parse_route(path: &str) -> Option<Route> {
    let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let owned = |s: &[&str]| s.iter().map(|x| (*x).to_owned()).collect::<Vec<_>>();
    Some(match segs.as_slice() {
        ["version"] => Route::Version,
        ["healthz" | "livez" | "readyz", ..] => Route::Health,
        ["api"] => Route::Api,
        ["apis"] => Route::Apis,
        ["apis", g] => Route::Group((*g).to_owned()),
        ["api", "v1"] => Route::GroupVersion(String::new(), "v1".into()),
        ["apis", g, v] => Route::GroupVersion((*g).to_owned(), (*v).to_owned()),
        ["openapi", "v2"] => Route::OpenApiV2,
        ["openapi", "v3"] => Route::OpenApiV3,
        ["openapi", "v3", rest @ ..] => Route::OpenApiV3Doc(rest.join("/")),
        ["kubesim", "faults", rest @ ..] => Route::Faults(owned(rest)),
        ["kubesim", "stats"] => Route::Stats,
        ["api", "v1", rest @ ..] => Route::Resource(parse_rest(String::new(), "v1".into(), rest)?),
        ["apis", g, v, rest @ ..] => Route::Resource(parse_rest((*g).to_owned(), (*v).to_owned(), rest)?),
        _ => return None,
    })
}

fn parse_rest(group: String, version: String, rest: &[&str]) -> Option<ResPath> {
    let s = |x: &str| Some(x.to_owned());
    let mut p = ResPath { group, version, ..ResPath::default() };
    match rest {
        ["namespaces", ns, "status" | "finalize"] if p.group.is_empty() => {
            p.resource = "namespaces".into();
            p.name = s(ns);
            p.sub = s(rest[2]);
        }
        ["namespaces", ns, res, tail @ ..] => {
            p.namespace = s(ns);
            p.resource = (*res).to_owned();
            match tail {
                [] => {}
                [name] => p.name = s(name),
                [name, sub] => {
                    p.name = s(name);
                    p.sub = s(sub);
                }
                _ => return None,
            }
        }
        [res] => p.resource = (*res).to_owned(),
        [res, name] => {
            p.resource = (*res).to_owned();
            p.name = s(name);
        }
        [res, name, sub] => {
            p.resource = (*res).to_owned();
            p.name = s(name);
            p.sub = s(sub);
        }
        _ => return None,
    }
    Some(p)
}

fn json_response(code: u16, body: &Value) -> Response {
    let bytes = serde_json::to_vec(body).unwrap_or_default();
    let status = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (status, [(header::CONTENT_TYPE, "application/json")], bytes).into_response()
}

fn error_response(e: &ApiError) -> Response {
    let status = StatusCode::from_u16(e.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut r = (status, [(header::CONTENT_TYPE, "application/json")], e.to_status_bytes()).into_response();
    if let Some(s) = e.retry_after
        && let Ok(v) = HeaderValue::from_str(&s.to_string())
    {
        r.headers_mut().insert(header::RETRY_AFTER, v);
    }
    r
}

fn with_warnings(mut r: Response, warnings: &[String]) -> Response {
    for w in warnings {
        let escaped = w.replace('\\', "\\\\").replace('"', "\\\"");
        if let Ok(v) = HeaderValue::from_str(&format!("299 - \"{escaped}\"")) {
            r.headers_mut().append(header::WARNING, v);
        }
    }
    r
}

/// What the client asked the answer to look like.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shape {
    Full,
    Table,
    Partial,
}

fn negotiate(headers: &HeaderMap) -> Result<Shape, ApiError> {
    let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()).unwrap_or("");
    if accept.is_empty() {
        return Ok(Shape::Full);
    }
    let mut json_ok = false;
    for part in accept.split(',') {
        let part = part.trim();
        let media = part.split(';').next().unwrap_or("").trim();
        if !matches!(media, "application/json" | "*/*" | "application/*" | "application/yaml") {
            continue;
        }
        json_ok = true;
        let params: HashMap<&str, &str> =
            part.split(';').skip(1).filter_map(|p| p.trim().split_once('=')).collect();
        match (params.get("as"), params.get("g"), params.get("v")) {
            (Some(&"Table"), Some(&"meta.k8s.io"), Some(&("v1" | "v1beta1"))) => return Ok(Shape::Table),
            (
                Some(&("PartialObjectMetadata" | "PartialObjectMetadataList")),
                Some(&"meta.k8s.io"),
                Some(&("v1" | "v1beta1")),
            ) => {
                return Ok(Shape::Partial);
            }
            (Some(_), _, _) => {}
            (None, _, _) => return Ok(Shape::Full),
        }
    }
    if json_ok { Ok(Shape::Full) } else { Err(ApiError::not_acceptable(accept)) }
}

type Query = HashMap<String, String>;

fn parse_query(q: Option<&str>) -> Query {
    let mut out = HashMap::new();
    for (k, v) in form_urlencoded::parse(q.unwrap_or("").as_bytes()) {
        if !k.is_empty() {
            out.insert(k.into_owned(), v.into_owned());
        }
    }
    out
}

fn truthy(q: &Query, k: &str) -> bool {
    q.get(k).is_some_and(|v| v == "true" || v == "1")
}

/// The entry point for every request.
pub async fn handle(State(srv): State<Arc<Server>>, req: Request) -> Response {
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
    let response = match route(&srv, &method, &path, &query, &headers, body).await {
        Ok(r) => r,
        Err(e) => error_response(&e),
    };
    tracing::debug!(%method, path, status = response.status().as_u16(), elapsed_us = started.elapsed().as_micros() as u64, "request");
    response
}

/// The whole request body, or 413 when it is over [`MAX_BODY`].
async fn read_body(body: Body) -> Result<Bytes, ApiError> {
    let limited = http_body_util::Limited::new(body, MAX_BODY);
    match limited.collect().await {
        Ok(c) => Ok(c.to_bytes()),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => {
            Err(ApiError::request_entity_too_large(MAX_BODY))
        }
        Err(e) => {
            tracing::debug!(error = %e, "reading a request body failed");
            Err(ApiError::bad_request(format!("error reading the request body: {e}")))
        }
    }
}

fn parse_json(bytes: &[u8], content_type: &str) -> Result<Value, ApiError> {
    if bytes.is_empty() {
        return Ok(Value::Null);
    }
    if content_type.starts_with(crate::proto::CONTENT_TYPE) {
        return crate::proto::decode(bytes).map_err(|e| match e {
            crate::proto::ProtoError::UnsupportedKind { .. } => ApiError::unsupported_media_type(),
            other => ApiError::bad_request(format!("error decoding protobuf: {other}")),
        });
    }
    let media = content_type.split(';').next().unwrap_or("").trim();
    if media.ends_with("yaml") {
        return parse_yaml(bytes);
    }
    if !(media.is_empty() || media.ends_with("json") || media == "*/*") {
        return Err(ApiError::unsupported_media_type());
    }
    serde_json::from_slice(bytes).map_err(|e| ApiError::bad_request(format!("error decoding JSON: {e}")))
}

/// A YAML body (`application/yaml`, `application/apply-patch+yaml`). One that is JSON, as
/// kubectl's and kube-rs's are, is read as JSON: YAML reads it the same, several times more
/// slowly. Anything else is one YAML document read with YAML 1.2 scalars, as serde_yaml_ng did
/// here before: `yes`, `on` and `0755` stay strings, a repeated key keeps its last value,
/// `<<` is an ordinary key, `.nan` and `.inf` become null, nesting is limited to 128.
fn parse_yaml(bytes: &[u8]) -> Result<Value, ApiError> {
    if let Ok(v) = serde_json::from_slice::<Value>(bytes) {
        return Ok(v);
    }
    // The body limit bounds the work; the default node cap (250 000) could refuse a body
    // under it.
    let options = ctop_core::yaml::options(Some(MAX_BODY));
    serde_saphyr::from_slice_with_options(bytes, options)
        .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))
}

fn authenticate(srv: &Server, headers: &HeaderMap) -> Result<Option<User>, ApiError> {
    let Some(tokens) = &srv.tokens else { return Ok(None) };
    let auth = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok());
    match auth.and_then(|a| a.strip_prefix("Bearer ")) {
        None => Ok(Some(User::anonymous())),
        Some(t) => tokens.lock().get(t.trim()).cloned().map(Some).ok_or_else(ApiError::unauthorized),
    }
}

fn authorize(srv: &Server, user: Option<&User>, attrs: &Attributes) -> Result<(), ApiError> {
    let Some(user) = user else { return Ok(()) };
    let d = authz::decide(user, attrs, srv.api.as_ref());
    if d.allowed {
        return Ok(());
    }
    let body = if d.reason.is_empty() {
        authz::forbidden_status(user, attrs)
    } else {
        authz::forbidden_status_with_reason(user, attrs, &d.reason)
    };
    tracing::info!(
        user = user.name,
        verb = attrs.verb,
        resource = attrs.resource,
        namespace = attrs.namespace,
        "forbidden"
    );
    Err(ApiError::from(crate::error::ErrorFields {
        code: 403,
        reason: "Forbidden",
        message: body["message"].as_str().unwrap_or_default().to_owned(),
        name: body.pointer("/details/name").and_then(Value::as_str).map(str::to_owned),
        group: body.pointer("/details/group").and_then(Value::as_str).map(str::to_owned),
        kind: body.pointer("/details/kind").and_then(Value::as_str).map(str::to_owned),
        causes: Vec::new(),
        retry_after: None,
    }))
}

fn verb_of(method: &Method, p: &ResPath, query: &Query) -> &'static str {
    match (method, &p.name) {
        (&Method::GET, None) if truthy(query, "watch") => "watch",
        (&Method::GET, Some(_)) if truthy(query, "watch") => "watch",
        (&Method::GET, None) => "list",
        (&Method::GET, Some(_)) => "get",
        (&Method::POST, _) => "create",
        (&Method::PUT, _) => "update",
        (&Method::PATCH, _) => "patch",
        (&Method::DELETE, None) => "deletecollection",
        (&Method::DELETE, Some(_)) => "delete",
        _ => "unknown",
    }
}

async fn route(
    srv: &Arc<Server>,
    method: &Method,
    path: &str,
    query: &Query,
    headers: &HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let route = parse_route(path).ok_or_else(ApiError::no_route)?;
    let user = authenticate(srv, headers)?;
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
            return match *method {
                Method::GET => Ok(json_response(200, &srv.stats.snapshot())),
                Method::DELETE => {
                    srv.stats.reset();
                    Ok(json_response(200, &srv.stats.snapshot()))
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
        Route::OpenApiV2 => return Err(ApiError::no_route()),
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

fn user_info(user: Option<&User>) -> crate::admission::UserInfo {
    match user {
        Some(u) => crate::admission::UserInfo {
            username: u.name.clone(),
            uid: String::new(),
            groups: u.groups.clone(),
        },
        None => crate::admission::UserInfo {
            username: "kubesim-admin".into(),
            uid: String::new(),
            groups: vec!["system:masters".into(), "system:authenticated".into()],
        },
    }
}

fn write_opts(query: &Query, headers: &HeaderMap, user: Option<&User>) -> Result<WriteOpts, ApiError> {
    let field_validation = match query.get("fieldValidation").map(String::as_str) {
        None | Some("" | "Warn") => FieldValidation::Warn,
        Some("Strict") => FieldValidation::Strict,
        Some("Ignore") => FieldValidation::Ignore,
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "fieldValidation parameter unsupported: {other}. Supported values: Ignore, Warn, Strict"
            )));
        }
    };
    let dry_run = match query.get("dryRun").map(String::as_str) {
        None | Some("") => false,
        Some("All") => true,
        Some(other) => return Err(ApiError::bad_request(format!("Invalid dryRun value: {other:?}"))),
    };
    Ok(WriteOpts {
        field_manager: query.get("fieldManager").filter(|s| !s.is_empty()).cloned(),
        user_agent: headers
            .get(header::USER_AGENT)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned(),
        dry_run,
        field_validation,
        force: truthy(query, "force"),
        user: user_info(user),
        authz_user: user.cloned(),
    })
}

#[allow(clippy::too_many_arguments)]
async fn resource(
    srv: &Arc<Server>,
    method: &Method,
    p: ResPath,
    query: &Query,
    headers: &HeaderMap,
    body: Body,
    user: Option<&User>,
) -> Result<Response, ApiError> {
    let rt = srv.api.registry.get(&p.group, &p.version, &p.resource).ok_or_else(ApiError::no_route)?;
    if p.namespace.is_some() && !rt.namespaced {
        return Err(ApiError::no_route());
    }
    // A namespace addressed by name is "in" itself for authorization.
    let ns = p.namespace.clone().unwrap_or_default();
    let verb = verb_of(method, &p, query);
    let mut attrs = Attributes::resource(verb, &p.group, &p.resource);
    let auth_ns = if rt.kind == "Namespace" && rt.group.is_empty() {
        p.name.clone().unwrap_or_default()
    } else {
        ns.clone()
    };
    attrs = attrs.in_namespace(&auth_ns);
    if let Some(name) = &p.name {
        attrs = attrs.named(name);
    } else if let Some(name) = query
        .get("fieldSelector")
        .and_then(|f| FieldSelector::parse(f, &rt.kind).ok())
        .and_then(|f| f.pinned_name().map(str::to_owned))
        && (verb == "list" || verb == "watch")
    {
        attrs = attrs.named(&name);
    }
    if let Some(sub) = &p.sub {
        attrs = attrs.with_subresource(sub);
    }
    authorize(srv, user, &attrs)?;
    let content_type =
        headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
    let is_apply = content_type.starts_with("application/apply-patch");
    let injected = srv.faults.check(verb, is_apply, &p.resource);
    if !injected.delay.is_zero() {
        tokio::time::sleep(injected.delay).await;
    }
    if let Some(code) = injected.fail {
        tracing::info!(verb, resource = p.resource, code, "injected fault");
        return Err(ApiError::with_code(code));
    }
    let shape = negotiate(headers)?;
    let api = &srv.api;
    match (method, p.name.as_deref(), p.sub.as_deref()) {
        (&Method::GET, None, None) if truthy(query, "watch") => {
            watch(srv, &rt, p.namespace.as_deref(), query, shape).await
        }
        (&Method::GET, None, None) => list(api, &rt, p.namespace.as_deref(), query, shape),
        (&Method::GET, Some(name), None | Some("status")) => {
            let obj = api.get(&rt, &ns, name)?;
            Ok(json_response(200, &render_one(&rt, obj, shape, query)))
        }
        (&Method::GET, Some(name), Some("scale")) if rt.scale.is_some() => {
            Ok(json_response(200, &scale_of(&rt, &api.get(&rt, &ns, name)?)))
        }
        (&Method::POST, None, None) if rt.is_review() => {
            let body = parse_json(&read_body(body).await?, &content_type)?;
            Ok(json_response(201, &review(srv, &rt, user, body)))
        }
        (_, _, _) if rt.is_review() => Err(ApiError::method_not_allowed(method.as_str())),
        (&Method::POST, None, None) => {
            let opts = write_opts(query, headers, user)?;
            let body = parse_json(&read_body(body).await?, &content_type)?;
            let w = api.create(&rt, &ns, body, &opts).await?;
            Ok(with_warnings(json_response(w.code, &w.object), &w.warnings))
        }
        (&Method::POST, Some(name), Some("token")) if rt.kind == "ServiceAccount" => {
            token_request(srv, &rt, &ns, name, &content_type, body).await
        }
        (&Method::PUT, Some(name), Some("finalize")) if rt.kind == "Namespace" => {
            let body = parse_json(&read_body(body).await?, &content_type)?;
            let w = api.finalize_namespace(name, &body)?;
            Ok(json_response(w.code, &w.object))
        }
        (&Method::PUT, Some(name), sub @ (None | Some("status"))) => {
            if sub.is_some() && !rt.status {
                return Err(ApiError::no_route());
            }
            let opts = write_opts(query, headers, user)?;
            let body = parse_json(&read_body(body).await?, &content_type)?;
            let w = api.replace(&rt, &ns, name, sub, body, &opts).await?;
            Ok(with_warnings(json_response(w.code, &w.object), &w.warnings))
        }
        (&Method::PUT | &Method::PATCH, Some(name), Some("scale")) if rt.scale.is_some() => {
            let bytes = read_body(body).await?;
            scale_write(api, &rt, &ns, name, method, &content_type, &bytes, query, headers, user).await
        }
        (&Method::PATCH, Some(name), sub @ (None | Some("status"))) => {
            if sub.is_some() && !rt.status {
                return Err(ApiError::no_route());
            }
            let kind = match content_type.split(';').next().unwrap_or("").trim() {
                "application/merge-patch+json" => PatchKind::Merge,
                "application/json-patch+json" => PatchKind::Json,
                "application/strategic-merge-patch+json" => PatchKind::Strategic,
                "application/apply-patch+yaml" | "application/apply-patch+cbor" => PatchKind::Apply,
                _ => return Err(ApiError::unsupported_patch_type()),
            };
            let opts = write_opts(query, headers, user)?;
            if kind != PatchKind::Apply && query.contains_key("force") {
                return Err(ApiError::bad_request("force may not be set for non-apply patch"));
            }
            let body = parse_json(&read_body(body).await?, &content_type)?;
            let w = api.patch(&rt, &ns, name, sub, kind, &body, &opts).await?;
            Ok(with_warnings(json_response(w.code, &w.object), &w.warnings))
        }
        (&Method::DELETE, Some(name), None) => {
            let bytes = read_body(body).await?;
            let body = parse_json(&bytes, &content_type)?;
            let mut opts = DeleteOpts::from_body(&body);
            opts.user = user_info(user);
            if let Some(pp) = query.get("propagationPolicy") {
                opts.propagation = Some(pp.clone());
            }
            if query.get("dryRun").is_some_and(|d| d == "All") {
                opts.dry_run = true;
            }
            if let Some(pp) = &opts.propagation
                && !matches!(pp.as_str(), "Background" | "Foreground" | "Orphan")
            {
                return Err(ApiError::invalid_field(
                    rt.gr(),
                    "DeleteOptions",
                    "",
                    "FieldValueNotSupported",
                    "propagationPolicy",
                    &format!(
                        "Unsupported value: {:?}: supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\"",
                        pp
                    ),
                ));
            }
            match api.delete(&rt, &ns, name, &opts).await? {
                Deleted::Pending(obj) => Ok(json_response(200, &obj)),
                Deleted::Gone(obj) => Ok(json_response(200, &obj)),
            }
        }
        (&Method::DELETE, None, None) => {
            let bytes = read_body(body).await?;
            let mut opts = DeleteOpts::from_body(&parse_json(&bytes, &content_type)?);
            opts.user = user_info(user);
            let (items, _) = select(api, &rt, p.namespace.as_deref(), query)?;
            for o in items {
                let n = o.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
                let ons = o.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or_default();
                match api.delete(&rt, ons, n, &opts).await {
                    Ok(_) => {}
                    Err(e) if e.code == 404 => {}
                    Err(e) => return Err(e),
                }
            }
            Ok(json_response(
                200,
                &json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": {"group": rt.group, "kind": rt.plural}}),
            ))
        }
        (&Method::GET | &Method::PUT | &Method::PATCH | &Method::POST | &Method::DELETE, _, _) => {
            Err(ApiError::no_route())
        }
        _ => Err(ApiError::method_not_allowed(method.as_str())),
    }
}

fn render_one(rt: &ResourceType, obj: Value, shape: Shape, query: &Query) -> Value {
    match shape {
        Shape::Full => obj,
        Shape::Partial => table::partial(&obj),
        Shape::Table => table::table(rt, &[obj], json!({}), include(query)),
    }
}

fn include(query: &Query) -> Include {
    match query.get("includeObject").map(String::as_str) {
        Some("None") => Include::None,
        Some("Object") => Include::Object,
        _ => Include::Metadata,
    }
}

/// The objects a list or deletecollection selects, in the served version, and the RV.
fn select(
    api: &Api,
    rt: &ResourceType,
    ns: Option<&str>,
    query: &Query,
) -> Result<(Vec<Value>, u64), ApiError> {
    let labels = LabelSelector::parse(query.get("labelSelector").map_or("", String::as_str))
        .map_err(|e| ApiError::bad_request(e.to_string()))?;
    let fields = FieldSelector::parse(query.get("fieldSelector").map_or("", String::as_str), &rt.kind)
        .map_err(|e| ApiError::bad_request(e.to_string()))?;
    let (rv, table) = api.store.snapshot(&rt.store, false);
    let items = table
        .iter()
        .filter(|((n, _), _)| ns.is_none_or(|ns| n == ns))
        .map(|(_, o)| convert::to_served(rt, o))
        .filter(|o| labels.matches(o.pointer("/metadata/labels")) && fields.matches(o))
        .collect();
    Ok((items, rv))
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Continue {
    rv: u64,
    start: (String, String),
}

fn list(
    api: &Api,
    rt: &ResourceType,
    ns: Option<&str>,
    query: &Query,
    shape: Shape,
) -> Result<Response, ApiError> {
    let labels = LabelSelector::parse(query.get("labelSelector").map_or("", String::as_str))
        .map_err(|e| ApiError::bad_request(e.to_string()))?;
    let fields = FieldSelector::parse(query.get("fieldSelector").map_or("", String::as_str), &rt.kind)
        .map_err(|e| ApiError::bad_request(e.to_string()))?;
    let limit: usize = match query.get("limit") {
        None => 0,
        Some(l) => l.parse().map_err(|_| ApiError::bad_request(format!("invalid limit: {l:?}")))?,
    };
    if let Some(rv) = query.get("resourceVersion").filter(|s| !s.is_empty())
        && rv.parse::<u64>().is_err()
    {
        return Err(ApiError::invalid_field(
            rt.gr(),
            "",
            "",
            "FieldValueInvalid",
            "resourceVersion",
            &format!("Invalid value: {rv:?}: must be a valid resource version"),
        ));
    }
    let (rv, table, start) = match query.get("continue").filter(|c| !c.is_empty()) {
        Some(token) => {
            let c: Continue = base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(token)
                .ok()
                .and_then(|b| serde_json::from_slice(&b).ok())
                .ok_or_else(|| ApiError::bad_request("continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)"))?;
            let table = api.store.remembered(&rt.store, c.rv).ok_or_else(|| {
                ApiError::expired("The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.")
            })?;
            (c.rv, table, Some(c.start))
        }
        None => {
            let (rv, table) = api.store.snapshot(&rt.store, limit > 0);
            (rv, table, None)
        }
    };
    type Entries<'a> = Box<dyn Iterator<Item = (&'a (String, String), &'a Arc<Value>)> + 'a>;
    let iter: Entries<'_> = match &start {
        Some(s) => Box::new(table.range(s.clone()..)),
        None => Box::new(table.iter()),
    };
    let mut items = Vec::new();
    let mut next = None;
    for (k, o) in iter {
        if ns.is_some_and(|ns| k.0 != ns) {
            continue;
        }
        let served = convert::to_served(rt, o);
        if !(labels.matches(served.pointer("/metadata/labels")) && fields.matches(&served)) {
            continue;
        }
        if limit > 0 && items.len() == limit {
            next = Some(k.clone());
            break;
        }
        items.push(served);
    }
    let mut meta = json!({"resourceVersion": rv.to_string()});
    if let Some(start) = next {
        let token = serde_json::to_vec(&Continue { rv, start }).unwrap_or_default();
        meta["continue"] = json!(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(token));
    }
    let body = match shape {
        Shape::Table => table::table(rt, &items, meta, include(query)),
        Shape::Partial => json!({
            "kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1", "metadata": meta,
            "items": items.iter().map(table::partial).collect::<Vec<_>>(),
        }),
        Shape::Full => {
            json!({"kind": format!("{}List", rt.kind), "apiVersion": rt.api_version(), "metadata": meta, "items": items})
        }
    };
    Ok(json_response(200, &body))
}

fn scale_of(rt: &ResourceType, obj: &Value) -> Value {
    let Some(s) = &rt.scale else { return json!({}) };
    json!({
        "kind": "Scale", "apiVersion": "autoscaling/v1",
        "metadata": {
            "name": obj.pointer("/metadata/name"), "namespace": obj.pointer("/metadata/namespace"),
            "uid": obj.pointer("/metadata/uid"), "resourceVersion": obj.pointer("/metadata/resourceVersion"),
            "creationTimestamp": obj.pointer("/metadata/creationTimestamp"),
        },
        "spec": {"replicas": obj.pointer(&s.spec_replicas).cloned().unwrap_or(json!(0))},
        "status": {
            "replicas": obj.pointer(&s.status_replicas).cloned().unwrap_or(json!(0)),
            "selector": s.label_selector.as_deref().and_then(|p| obj.pointer(p)).map(format_selector),
        },
    })
}

/// A selector as `metav1.FormatLabelSelector` prints it: a string selector as is, a
/// `LabelSelector` object as `a=b,c in (d,e),!f`.
fn format_selector(sel: &Value) -> Value {
    if sel.is_string() {
        return sel.clone();
    }
    let mut parts: Vec<String> = sel
        .get("matchLabels")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
        .collect();
    for e in sel.get("matchExpressions").and_then(Value::as_array).into_iter().flatten() {
        let key = e["key"].as_str().unwrap_or_default();
        let mut values: Vec<&str> =
            e["values"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
        values.sort_unstable();
        parts.push(match e["operator"].as_str().unwrap_or_default() {
            "In" => format!("{key} in ({})", values.join(",")),
            "NotIn" => format!("{key} notin ({})", values.join(",")),
            "Exists" => key.to_owned(),
            _ => format!("!{key}"),
        });
    }
    json!(parts.join(","))
}

#[allow(clippy::too_many_arguments)]
async fn scale_write(
    api: &Api,
    rt: &ResourceType,
    ns: &str,
    name: &str,
    method: &Method,
    content_type: &str,
    bytes: &[u8],
    query: &Query,
    headers: &HeaderMap,
    user: Option<&User>,
) -> Result<Response, ApiError> {
    let Some(s) = &rt.scale else { return Err(ApiError::no_route()) };
    let body = parse_json(bytes, content_type)?;
    let current = scale_of(rt, &api.get(rt, ns, name)?);
    let scale = if method == Method::PUT {
        body
    } else {
        let mut doc = current.clone();
        json_patch::merge(&mut doc, &body);
        doc
    };
    let replicas = scale.pointer("/spec/replicas").cloned().unwrap_or(json!(0));
    let mut patch = json!({});
    let segs: Vec<&str> = s.spec_replicas.split('/').filter(|x| !x.is_empty()).collect();
    let mut cur = &mut patch;
    for (i, seg) in segs.iter().enumerate() {
        if i + 1 == segs.len() {
            cur[*seg] = replicas.clone();
        } else {
            cur = &mut cur[*seg];
        }
    }
    if let Some(rv) = scale.pointer("/metadata/resourceVersion") {
        patch["metadata"] = json!({"resourceVersion": rv});
    }
    let opts = write_opts(query, headers, user)?;
    let w = api.patch(rt, ns, name, Some("scale"), PatchKind::Merge, &patch, &opts).await?;
    Ok(json_response(200, &scale_of(rt, &w.object)))
}

async fn token_request(
    srv: &Server,
    rt: &ResourceType,
    ns: &str,
    name: &str,
    content_type: &str,
    body: Body,
) -> Result<Response, ApiError> {
    srv.api.get(rt, ns, name)?;
    let bytes = read_body(body).await?;
    let req = parse_json(&bytes, content_type)?;
    let token = format!("kubesim-sa.{}", crate::meta::new_uid().replace('-', ""));
    if let Some(tokens) = &srv.tokens {
        tokens.lock().insert(token.clone(), User::service_account(ns, name));
    }
    let expiration = req.pointer("/spec/expirationSeconds").and_then(Value::as_i64).unwrap_or(3600);
    let expires = jiff::Timestamp::now()
        .checked_add(jiff::SignedDuration::from_secs(expiration))
        .map(|t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_default();
    Ok(json_response(
        201,
        &json!({
            "kind": "TokenRequest", "apiVersion": "authentication.k8s.io/v1",
            "metadata": {"name": name, "namespace": ns, "creationTimestamp": null},
            "spec": {"audiences": req.pointer("/spec/audiences").cloned().unwrap_or(json!(["https://kubernetes.default.svc"])), "expirationSeconds": expiration,
                     "boundObjectRef": null},
            "status": {"token": token, "expirationTimestamp": expires},
        }),
    ))
}

/// Answer a SelfSubjectAccessReview or SelfSubjectReview for `user` (`None`: authorization
/// is off and everyone is an administrator).
fn review(srv: &Server, rt: &ResourceType, user: Option<&User>, mut body: Value) -> Value {
    let admin = User::new("kubesim-admin", &["system:masters", "system:authenticated"]);
    let user = user.unwrap_or(&admin);
    body["apiVersion"] = json!(rt.api_version());
    body["kind"] = json!(rt.kind);
    if rt.kind == "SelfSubjectReview" {
        body["status"] = json!({"userInfo": {"username": user.name, "groups": user.groups}});
        return body;
    }
    let spec = body.get("spec").cloned().unwrap_or_default();
    let s = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or_default().to_owned();
    let attrs = match (spec.get("resourceAttributes"), spec.get("nonResourceAttributes")) {
        (Some(r), _) => {
            let mut a = Attributes::resource(&s(r, "verb"), &s(r, "group"), &s(r, "resource"))
                .in_namespace(&s(r, "namespace"));
            if !s(r, "name").is_empty() {
                a = a.named(&s(r, "name"));
            }
            if !s(r, "subresource").is_empty() {
                a = a.with_subresource(&s(r, "subresource"));
            }
            a
        }
        (None, Some(n)) => Attributes::non_resource(&s(n, "verb"), &s(n, "path")),
        (None, None) => Attributes::non_resource("", ""),
    };
    let decision = if srv.tokens.is_some() {
        authz::decide(user, &attrs, srv.api.as_ref())
    } else {
        authz::Decision { allowed: true, reason: String::new() }
    };
    let mut status = json!({"allowed": decision.allowed});
    if !decision.reason.is_empty() {
        status["reason"] = json!(decision.reason);
    }
    body["status"] = status;
    body
}

/// One line of a watch stream.
fn event_line(kind: &str, object: &Value) -> Bytes {
    let mut line = serde_json::to_vec(&json!({"type": kind, "object": object})).unwrap_or_default();
    line.push(b'\n');
    Bytes::from(line)
}

async fn watch(
    srv: &Arc<Server>,
    rt: &Arc<ResourceType>,
    ns: Option<&str>,
    query: &Query,
    shape: Shape,
) -> Result<Response, ApiError> {
    let labels = LabelSelector::parse(query.get("labelSelector").map_or("", String::as_str))
        .map_err(|e| ApiError::bad_request(e.to_string()))?;
    let fields = FieldSelector::parse(query.get("fieldSelector").map_or("", String::as_str), &rt.kind)
        .map_err(|e| ApiError::bad_request(e.to_string()))?;
    let bookmarks = truthy(query, "allowWatchBookmarks");
    let send_initial = truthy(query, "sendInitialEvents");
    let rv_param = query.get("resourceVersion").filter(|s| !s.is_empty()).cloned();
    if send_initial && query.get("resourceVersionMatch").map(String::as_str) != Some("NotOlderThan") {
        return Err(ApiError::invalid_field(
            rt.gr(),
            "ListOptions",
            "",
            "FieldValueForbidden",
            "sendInitialEvents",
            "Forbidden: sendInitialEvents is forbidden for watch unless resourceVersionMatch is set to NotOlderThan",
        ));
    }
    let from = match rv_param.as_deref() {
        None | Some("0") => None,
        Some(rv) => {
            let n = rv.parse::<u64>().map_err(|_| {
                ApiError::invalid_field(
                    rt.gr(),
                    "",
                    "",
                    "FieldValueInvalid",
                    "resourceVersion",
                    &format!("Invalid value: {rv:?}: must be a valid resource version"),
                )
            })?;
            if send_initial { None } else { Some(n) }
        }
    };
    let timeout = query
        .get("timeoutSeconds")
        .and_then(|t| t.parse::<u64>().ok())
        .map_or(Duration::from_secs(1800), Duration::from_secs);
    let start = srv.api.store.watch(&rt.store, from);
    let ns = ns.map(str::to_owned);
    let rt = rt.clone();
    let include_q = include(query);
    let matches = move |o: &Value| -> bool {
        ns.as_deref().is_none_or(|n| o.pointer("/metadata/namespace").and_then(Value::as_str) == Some(n))
            && labels.matches(o.pointer("/metadata/labels"))
            && fields.matches(o)
    };
    let render = {
        let rt = rt.clone();
        move |o: &Value| -> Value {
            let served = convert::to_served(&rt, o);
            match shape {
                Shape::Full => served,
                Shape::Partial => table::partial(&served),
                Shape::Table => table::table(&rt, &[served], json!({}), include_q),
            }
        }
    };
    let (tx, rx) = tokio::sync::mpsc::channel::<Bytes>(256);
    let start = match start {
        Ok(s) => s,
        Err(oldest) => {
            let status = ApiError::expired(format!(
                "too old resource version: {} ({})",
                from.unwrap_or(0),
                oldest.saturating_sub(1)
            ))
            .to_status();
            let line = event_line("ERROR", &status);
            return Ok(stream_response(futures::stream::iter([line])));
        }
    };
    let mut epoch = srv.faults.watch_epoch();
    epoch.borrow_and_update();
    let interval = srv.bookmark_interval;
    let kind_name = rt.kind.clone();
    let api_version = rt.api_version();
    // Weak: an open watch must not keep a stopped server's objects alive.
    let api = Arc::downgrade(&srv.api);
    tokio::spawn(async move {
        let bookmark = |rv: u64, initial_end: bool| {
            let mut meta = json!({"resourceVersion": rv.to_string()});
            if initial_end {
                meta["annotations"] = json!({"k8s.io/initial-events-end": "true"});
            }
            event_line("BOOKMARK", &json!({"kind": kind_name, "apiVersion": api_version, "metadata": meta}))
        };
        for o in &start.initial {
            if matches(o) && tx.send(event_line("ADDED", &render(o))).await.is_err() {
                return;
            }
        }
        if send_initial && bookmarks && tx.send(bookmark(start.rv, true)).await.is_err() {
            return;
        }
        let send_change = async |c: &Change, tx: &tokio::sync::mpsc::Sender<Bytes>| -> bool {
            let now = matches(&c.object);
            let before = c.old.as_deref().is_some_and(&matches);
            let kind = match (c.kind, before, now) {
                (EventKind::Added, _, true) => Some("ADDED"),
                (EventKind::Modified, true, true) => Some("MODIFIED"),
                (EventKind::Modified, false, true) => Some("ADDED"),
                (EventKind::Modified, true, false) => Some("DELETED"),
                (EventKind::Deleted, _, true) => Some("DELETED"),
                _ => None,
            };
            match kind {
                Some(k) => tx.send(event_line(k, &render(&c.object))).await.is_ok(),
                None => true,
            }
        };
        // Everything up to `seen` has been sent. Changes are read from the history, a
        // batch at a time, whenever the store commits one.
        let mut seen = start.from;
        let mut live = start.rx;
        let deadline = tokio::time::sleep(timeout);
        tokio::pin!(deadline);
        let mut ticker = tokio::time::interval(interval);
        ticker.tick().await;
        loop {
            loop {
                let batch = match api
                    .upgrade()
                    .map(|api| api.store.changes_after(&rt.store, seen, WATCH_BATCH))
                {
                    None => return,
                    Some(Ok(b)) => b,
                    Some(Err(oldest)) => {
                        // Too slow: close, as the real watch cache does; the client resumes
                        // (and gets 410 Expired if it must relist).
                        tracing::debug!(resource = %rt.plural, seen, oldest, "watcher fell behind the history: closed");
                        return;
                    }
                };
                for c in &batch.changes {
                    if !send_change(c, &tx).await {
                        return;
                    }
                }
                seen = batch.next;
                if !batch.more {
                    break;
                }
                if epoch.has_changed().unwrap_or(true) {
                    return;
                }
            }
            tokio::select! {
                () = &mut deadline => return,
                _ = epoch.changed() => return,
                _ = ticker.tick(), if bookmarks => {
                    if tx.send(bookmark(seen, false)).await.is_err() { return; }
                }
                changed = live.changed() => if changed.is_err() { return },
                () = tx.closed() => return,
            }
        }
    });
    Ok(stream_response(tokio_stream::wrappers::ReceiverStream::new(rx)))
}

fn stream_response<S>(stream: S) -> Response
where
    S: futures::Stream<Item = Bytes> + Send + 'static,
{
    let body = Body::from_stream(stream.map(Ok::<_, std::convert::Infallible>));
    let mut r = Response::new(body);
    r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache, private"));
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_parse_like_the_api_server() {
        let Some(Route::Resource(p)) = parse_route("/apis/apps/v1/namespaces/ns/deployments/web/status")
        else {
            panic!("resource")
        };
        assert_eq!(
            (
                p.group.as_str(),
                p.namespace.as_deref(),
                p.resource.as_str(),
                p.name.as_deref(),
                p.sub.as_deref()
            ),
            ("apps", Some("ns"), "deployments", Some("web"), Some("status"))
        );
        let Some(Route::Resource(p)) = parse_route("/api/v1/namespaces/ns") else { panic!("resource") };
        assert_eq!(
            (p.resource.as_str(), p.name.as_deref(), p.namespace.as_deref()),
            ("namespaces", Some("ns"), None)
        );
        let Some(Route::Resource(p)) = parse_route("/api/v1/namespaces/ns/finalize") else {
            panic!("resource")
        };
        assert_eq!(p.sub.as_deref(), Some("finalize"));
        let Some(Route::Resource(p)) = parse_route("/api/v1/namespaces/ns/configmaps") else {
            panic!("resource")
        };
        assert_eq!((p.resource.as_str(), p.namespace.as_deref()), ("configmaps", Some("ns")));
        assert!(matches!(parse_route("/apis/apps"), Some(Route::Group(g)) if g == "apps"));
        assert!(parse_route("/nope").is_none());
    }

    #[test]
    fn yaml_bodies_read_as_before() {
        let yaml = |text: &str| parse_json(text.as_bytes(), "application/yaml");
        let body = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  \
                    on: yes\n  mode: 0755\n  big: 1_000\n  n: 3\n  t: true\n  empty:\n  \
                    text: |\n    line\n";
        assert_eq!(
            yaml(body).expect("parses"),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {
                "on": "yes", "mode": "0755", "big": "1_000", "n": 3, "t": true, "empty": null, "text": "line\n"}})
        );
        // A repeated key keeps the last value; `<<` is an ordinary key; non-finite is null.
        assert_eq!(yaml("a: 1\na: 2\n").expect("parses"), json!({"a": 2}));
        assert_eq!(
            yaml("b: &b {x: 1}\nd:\n  <<: *b\n").expect("parses"),
            json!({"b": {"x": 1}, "d": {"<<": {"x": 1}}})
        );
        assert_eq!(yaml("a: .nan\n").expect("parses"), json!({"a": null}));
        // JSON (what kube-rs sends for server-side apply) reads as JSON.
        let apply = json!({"apiVersion": "v1", "kind": "Secret", "stringData": {"k": "yes"}});
        assert_eq!(
            parse_json(apply.to_string().as_bytes(), "application/apply-patch+yaml").expect("parses"),
            apply
        );
        assert_eq!(yaml("# only a comment\n").expect("parses"), Value::Null);
        // One document only, and errors are one line.
        for bad in ["a: 1\n---\nb: 2\n", "a: [1, 2\nb: x\n"] {
            let message = yaml(bad).expect_err(bad).to_string();
            assert!(message.contains("error decoding YAML"), "{message}");
            assert!(!message.contains('\n'), "{message}");
        }
    }

    #[tokio::test]
    async fn an_oversized_body_gets_413_stating_the_limit() {
        let exact = read_body(Body::from(vec![b'x'; MAX_BODY])).await.expect("the limit itself is accepted");
        assert_eq!(exact.len(), MAX_BODY);
        let err = read_body(Body::from(vec![b'x'; MAX_BODY + 1])).await.expect_err("one byte over");
        let response = error_response(&err);
        assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
        let body = response.into_body().collect().await.expect("body").to_bytes();
        let status: Value = serde_json::from_slice(&body).expect("a Status");
        assert_eq!(
            status,
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                   "message": "Request entity too large: limit is 3145728",
                   "reason": "RequestEntityTooLarge", "code": 413})
        );
    }

    #[test]
    fn accept_negotiation() {
        let mut h = HeaderMap::new();
        h.insert(header::ACCEPT, HeaderValue::from_static("application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"));
        assert_eq!(negotiate(&h).ok(), Some(Shape::Table));
        h.insert(
            header::ACCEPT,
            HeaderValue::from_static("application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"),
        );
        assert_eq!(negotiate(&h).ok(), Some(Shape::Partial));
        h.insert(header::ACCEPT, HeaderValue::from_static("application/vnd.kubernetes.protobuf"));
        assert!(negotiate(&h).is_err());
        h.insert(header::ACCEPT, HeaderValue::from_static("application/vnd.kubernetes.protobuf, */*"));
        assert_eq!(negotiate(&h).ok(), Some(Shape::Full));
    }
}

//! The HTTPS server: [`router`] builds the axum routes of a script, [`serve`] runs them
//! behind TLS until a shutdown future resolves.
//!
//! Per request: the body is bounded ([`ServerConfig::max_body`], a 413 stating the limit
//! beyond, worded like the API server's), the review is
//! checked (400 with the reason when malformed), then the handler runs on the blocking pool
//! once one of [`ServerConfig::concurrency`] slots is free, within [`ServerConfig::timeout`]
//! (waiting for a slot included). A handler that throws, breaks a script limit, or is late
//! is answered per [`FailurePolicy`]; the server itself never stops over it.
//!
//! Conversions ([`CONVERSION_PATH`], when the script converts) go the same way, in the same
//! slots: a conversion that fails, is late, finds every slot busy or returns another number
//! of objects than it was sent is answered (HTTP 200) as a `Failure` with its message, which
//! the API server shows; each review runs in a `conversion_review` tracing span with its
//! `uid`, `desired_api_version` and number of `objects`.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use bytes::Bytes;
use ctop_core::{AdmissionOutcome, OperatorSpec};
use serde_json::{Value, json};
use tokio::net::{TcpListener, TcpSocket};
use tokio::sync::Semaphore;
use tracing::Instrument as _;

use crate::CONVERSION_PATH;
use crate::conn::ConnectionLimits;
use crate::conversion::{ConversionScript, converts};
use crate::conversion_review;
use crate::listener::TlsListener;
use crate::review::{self, Answer};
use crate::routes::{HandlerKind, Route};
use crate::script::{AdmissionCall, AdmissionScript, HookError};
use crate::tls::{CertStore, TlsError, TlsSource};

/// What the server answers when a handler fails (throws, breaks a limit, or is late).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FailurePolicy {
    /// Deny the request with a 500 naming the failure (the safe default, like the API
    /// server's own default).
    #[default]
    Fail,
    /// Allow the request unchanged, with a warning naming the failure.
    Ignore,
}

impl FailurePolicy {
    /// `Fail` or `Ignore`, as in a webhook configuration's `failurePolicy`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            FailurePolicy::Fail => "Fail",
            FailurePolicy::Ignore => "Ignore",
        }
    }
}

impl std::str::FromStr for FailurePolicy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "Fail" | "fail" => Ok(Self::Fail),
            "Ignore" | "ignore" => Ok(Self::Ignore),
            _ => Err(format!("failure policy {s:?} is neither Fail nor Ignore")),
        }
    }
}

/// Bounds and policy of the server.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// Largest request body in bytes (default 3 MiB, the API server's own request limit).
    pub max_body: usize,
    /// Handler calls running at once (default 8).
    pub concurrency: usize,
    /// Longest a request may wait for a slot plus run its handler (default 10 s, the
    /// default `timeoutSeconds` of a webhook).
    pub timeout: Duration,
    /// What a failed handler answers.
    pub failure_policy: FailurePolicy,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            max_body: 3 * 1024 * 1024,
            concurrency: 8,
            timeout: Duration::from_secs(10),
            failure_policy: FailurePolicy::Fail,
        }
    }
}

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The port could not be bound (in use, or privileged).
    #[error("cannot listen on {addr} (pick another port)")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The certificate could not be loaded.
    #[error(transparent)]
    Tls(#[from] TlsError),
    /// The server stopped with an I/O error.
    #[error("the webhook server failed")]
    Io(#[from] std::io::Error),
}

/// The admission endpoints of one script: build with [`Admission::new`], serve
/// [`Admission::router`], and swap in a reloaded script with [`Admission::replace`].
#[derive(Clone)]
pub struct Admission {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Admission {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Admission").field("config", &self.shared.config).finish_non_exhaustive()
    }
}

struct Shared {
    current: RwLock<Current>,
    slots: Arc<Semaphore>,
    config: ServerConfig,
}

struct Current {
    script: Arc<dyn AdmissionScript>,
    routes: HashMap<String, Arc<Route>>,
    /// What answers on [`CONVERSION_PATH`], when the script converts.
    conversion: Option<Arc<dyn ConversionScript>>,
}

/// What a request's path leads to.
enum Target {
    Admission(Arc<Route>, Arc<dyn AdmissionScript>),
    Conversion(Arc<dyn ConversionScript>),
}

impl Admission {
    /// Serve `routes` with `script`. Nothing answers on [`CONVERSION_PATH`] until
    /// [`set_conversion`](Self::set_conversion) is called with a spec that converts.
    pub fn new(script: Arc<dyn AdmissionScript>, routes: &[Route], config: ServerConfig) -> Self {
        let current = Current { script, routes: index(routes), conversion: None };
        Self {
            shared: Arc::new(Shared {
                current: RwLock::new(current),
                slots: Arc::new(Semaphore::new(config.concurrency.max(1))),
                config,
            }),
        }
    }

    /// From the next request on, serve `routes` with `script` (requests in flight finish
    /// with the previous script). The conversion is left as it is: a reload calls
    /// [`set_conversion`](Self::set_conversion) too.
    pub fn replace(&self, script: Arc<dyn AdmissionScript>, routes: &[Route]) {
        let mut current = self.current();
        current.script = script;
        current.routes = index(routes);
    }

    /// From the next request on, answer `ConversionReview`s on [`CONVERSION_PATH`] with
    /// `script` when `spec` has resources to convert ([`converts`]); when it has none,
    /// [`CONVERSION_PATH`] is a 404 (requests in flight finish with the previous script).
    /// Call it after [`new`](Self::new) and after every [`replace`](Self::replace) of a
    /// reloaded script. Conversions share the admission handlers' slots, deadline and body
    /// limit ([`ServerConfig`]); the [`FailurePolicy`] does not apply to them: a failed
    /// conversion is always answered as a `Failure` with its message.
    pub fn set_conversion(&self, script: Arc<dyn ConversionScript>, spec: &OperatorSpec) {
        self.current().conversion = converts(spec).then_some(script);
    }

    fn current(&self) -> std::sync::RwLockWriteGuard<'_, Current> {
        self.shared.current.write().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The axum app: `POST` on each route's path and on [`CONVERSION_PATH`] when the script
    /// converts, `GET /healthz`, 404 elsewhere.
    pub fn router(&self) -> Router {
        let max_body = self.shared.config.max_body;
        Router::new()
            .route("/healthz", get(|| async { "ok" }))
            .fallback(
                move |State(shared): State<Arc<Shared>>,
                      method: Method,
                      uri: Uri,
                      body: Result<Bytes, BytesRejection>| async move {
                    let path = uri.path();
                    let found = {
                        let current =
                            shared.current.read().unwrap_or_else(std::sync::PoisonError::into_inner);
                        if path == CONVERSION_PATH {
                            current.conversion.clone().map(Target::Conversion)
                        } else {
                            current.routes.get(path).map(|r| Target::Admission(r.clone(), current.script.clone()))
                        }
                    };
                    match found {
                        None if path == CONVERSION_PATH => (
                            StatusCode::NOT_FOUND,
                            format!("no conversion at {path}: the script declares no resource with several versions\n"),
                        )
                            .into_response(),
                        None => (StatusCode::NOT_FOUND, format!("no admission handler at {path}\n")).into_response(),
                        Some(_) if method != Method::POST => {
                            (StatusCode::METHOD_NOT_ALLOWED, "reviews are POSTed\n").into_response()
                        }
                        Some(target) => match (body, target) {
                            (Ok(body), Target::Admission(route, script)) => {
                                admit(&shared, script, &route, &body).await
                            }
                            (Ok(body), Target::Conversion(script)) => convert(&shared, script, &body).await,
                            (Err(e), _) if e.status() == StatusCode::PAYLOAD_TOO_LARGE => too_large(max_body, path),
                            (Err(e), _) => e.into_response(),
                        },
                    }
                },
            )
            .layer(DefaultBodyLimit::max(max_body))
            .with_state(self.shared.clone())
    }
}

/// The API server's words for a body over the limit (`Request entity too large: limit is
/// 3145728`), so that the caller learns the limit.
fn too_large(max_body: usize, path: &str) -> Response {
    tracing::info!(path, limit = max_body, "review body over the limit");
    (StatusCode::PAYLOAD_TOO_LARGE, format!("Request entity too large: limit is {max_body}\n"))
        .into_response()
}

fn index(routes: &[Route]) -> HashMap<String, Arc<Route>> {
    routes.iter().map(|r| (r.path.clone(), Arc::new(r.clone()))).collect()
}

/// The axum router serving `routes` with `script` (an [`Admission`] that is never replaced).
pub fn router(script: Arc<dyn AdmissionScript>, routes: &[Route], config: ServerConfig) -> Router {
    Admission::new(script, routes, config).router()
}

async fn admit(shared: &Shared, script: Arc<dyn AdmissionScript>, route: &Route, body: &[u8]) -> Response {
    let started = Instant::now();
    let request = match review::parse(body) {
        Ok(r) => r,
        Err(e) => {
            let e = ctop_core::Chain(&e);
            tracing::info!(path = route.path, error = %e, "malformed admission review");
            return (StatusCode::BAD_REQUEST, format!("malformed AdmissionReview: {e}\n")).into_response();
        }
    };
    let answer = if request.object.is_null() {
        // DELETE and CONNECT carry no object; the handlers speak about objects being written.
        Answer::allow()
    } else {
        match call(shared, script, route, &request).await {
            Ok(answer) => answer,
            Err(e) => {
                tracing::warn!(handler = route.handler.as_str(), controller = route.controller_name,
                    uid = request.uid, error = %e, policy = shared.config.failure_policy.as_str(),
                    "admission handler failed");
                let message =
                    format!("{} handler of {} failed: {e}", route.handler.as_str(), route.controller_name);
                match shared.config.failure_policy {
                    FailurePolicy::Fail => Answer::deny(message, 500),
                    FailurePolicy::Ignore => Answer { warnings: vec![message], ..Answer::allow() },
                }
            }
        }
    };
    tracing::debug!(
        handler = route.handler.as_str(),
        controller = route.controller_name,
        uid = request.uid,
        operation = request.operation,
        allowed = answer.allowed,
        patched = answer.patch.is_some(),
        took_us = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX),
        "admission answered"
    );
    axum::Json(answer.into_review(&request.uid)).into_response()
}

async fn call(
    shared: &Shared,
    script: Arc<dyn AdmissionScript>,
    route: &Route,
    request: &review::Request,
) -> Result<Answer, HookError> {
    let (handler, controller) = (route.handler, route.controller);
    let (object, old_object, raw) = (request.object.clone(), request.old_object.clone(), request.raw.clone());
    let outcome = blocking(shared, handler.as_str(), move || {
        script.call(&AdmissionCall {
            handler,
            controller,
            object: &object,
            old_object: old_object.as_ref(),
            request: &raw,
        })
    })
    .await?;
    match handler {
        HandlerKind::Validate => Ok(validation(outcome)),
        HandlerKind::Mutate => mutation(&request.object, outcome),
    }
}

/// Run `f`, a call into the script, on the blocking pool once one of the server's slots is
/// free, within the server's deadline (the wait for a slot included). Admission handlers and
/// conversions share the slots and the deadline.
async fn blocking<T: Send + 'static>(
    shared: &Shared,
    handler: &'static str,
    f: impl FnOnce() -> Result<T, HookError> + Send + 'static,
) -> Result<T, HookError> {
    let timeout = shared.config.timeout;
    let deadline = tokio::time::Instant::now() + timeout;
    let permit = tokio::time::timeout_at(deadline, shared.slots.clone().acquire_owned())
        .await
        .map_err(|_| HookError::Busy { limit: shared.config.concurrency, after: timeout })?
        .map_err(|_| HookError::Failed("the server is shutting down".into()))?;
    let task = tokio::task::spawn_blocking(move || {
        // The slot is held until the script returns, even when the client gave up: a late
        // call still occupies a runtime.
        let _permit = permit;
        f()
    });
    match tokio::time::timeout_at(deadline, task).await {
        Err(_) => Err(HookError::Timeout { handler, after: timeout }),
        Ok(Err(join)) => Err(HookError::Failed(format!("the {handler} handler panicked: {join}"))),
        Ok(Ok(result)) => result,
    }
}

/// Answer a ConversionReview: the script's converted objects, or a `Failure` with its
/// message (HTTP 200, so that the API server shows the message); 400 when the body is no
/// ConversionReview.
async fn convert(shared: &Shared, script: Arc<dyn ConversionScript>, body: &[u8]) -> Response {
    let started = Instant::now();
    let request = match conversion_review::parse(body) {
        Ok(r) => r,
        Err(e) => {
            let e = ctop_core::Chain(&e);
            tracing::info!(path = CONVERSION_PATH, error = %e, "malformed conversion review");
            return (StatusCode::BAD_REQUEST, format!("malformed ConversionReview: {e}\n")).into_response();
        }
    };
    let span = tracing::info_span!(
        "conversion_review",
        uid = request.uid,
        desired_api_version = request.desired_api_version,
        objects = request.objects.len(),
    );
    async {
        let converted = conversion(shared, script, &request).await;
        if let Err(e) = &converted {
            tracing::warn!(error = %e, "conversion failed");
        }
        tracing::debug!(
            ok = converted.is_ok(),
            took_us = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX),
            "conversion answered"
        );
        axum::Json(request.answer(converted.map_err(|e| e.to_string()))).into_response()
    }
    .instrument(span)
    .await
}

/// The script's conversion of the request's objects, checked to be one object per object.
async fn conversion(
    shared: &Shared,
    script: Arc<dyn ConversionScript>,
    request: &conversion_review::Request,
) -> Result<Vec<Value>, HookError> {
    let sent = request.objects.len();
    if sent == 0 {
        // Nothing to convert: the script is not called (the API server does not send such
        // reviews, but an empty list converts to an empty list).
        return Ok(Vec::new());
    }
    let (desired, objects) = (request.desired_api_version.clone(), request.objects.clone());
    let converted = blocking(shared, "convert", move || script.convert(&desired, &objects)).await?;
    if converted.len() != sent {
        return Err(HookError::Failed(format!(
            "the conversion returned {} objects for the {sent} it was sent",
            converted.len()
        )));
    }
    if let Some((i, other)) = converted.iter().enumerate().find(|(_, o)| !o.is_object()) {
        return Err(HookError::Failed(format!(
            "the conversion returned a non-object for object {i}: {}",
            short(other)
        )));
    }
    Ok(converted)
}

/// A `validate` answer: allowed with its warnings, or denied (403) with its message.
fn validation(outcome: AdmissionOutcome) -> Answer {
    let AdmissionOutcome { allowed, message, warnings, object: _ } = outcome;
    if allowed {
        return Answer { warnings, ..Answer::allow() };
    }
    let message = message.unwrap_or_else(|| "denied by the operator".to_owned());
    Answer { warnings, ..Answer::deny(message, 403) }
}

/// A `mutate` answer: allowed, with the JSONPatch from `before` to the returned object.
fn mutation(before: &Value, outcome: AdmissionOutcome) -> Result<Answer, HookError> {
    let AdmissionOutcome { object, warnings, allowed: _, message: _ } = outcome;
    let after = match object {
        Some(o @ Value::Object(_)) => o,
        Some(Value::Null) | None => return Ok(Answer::allow()),
        Some(other) => {
            return Err(HookError::Failed(format!("mutate returned a non-object: {}", short(&other))));
        }
    };
    Ok(Answer { patch: review::patch(before, &after), warnings, ..Answer::allow() })
}

fn short(v: &Value) -> String {
    let mut s = v.to_string();
    if s.len() > 200 {
        let mut end = 200;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
        s.push('…');
    }
    s
}

/// A bound webhook server, ready to [`run`](Bound::run).
#[derive(Debug)]
pub struct Bound {
    listener: TlsListener,
    app: Router,
}

impl Bound {
    /// The address it listens on (useful with port 0).
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        Ok(self.listener.local_addr())
    }

    /// Serve until `shutdown` resolves, then finish in-flight requests.
    pub async fn run(self, shutdown: impl Future<Output = ()> + Send + 'static) -> Result<(), ServeError> {
        crate::serving::serve(self.listener, self.app, shutdown).await;
        Ok(())
    }
}

/// Bind `addr` with the certificate of `tls` (file sources start reloading now) and the
/// default [`ConnectionLimits`]; call [`Bound::run`] to serve. Must be called inside a
/// tokio runtime.
pub async fn bind(addr: SocketAddr, tls: &TlsSource, app: Router) -> Result<Bound, ServeError> {
    bind_with_limits(addr, tls, app, ConnectionLimits::default()).await
}

/// [`bind`] with explicit connection limits.
pub async fn bind_with_limits(
    addr: SocketAddr,
    tls: &TlsSource,
    app: Router,
    limits: ConnectionLimits,
) -> Result<Bound, ServeError> {
    let store = CertStore::new(tls)?;
    let acceptor = store.acceptor()?;
    let tcp = listen(addr).map_err(|source| ServeError::Bind { addr, source })?;
    let listener = TlsListener::with_limits(tcp, acceptor, limits)?;
    tracing::info!(addr = %listener.local_addr(), max_connections = limits.max_connections,
        header_read_timeout_ms = millis(limits.header_read_timeout),
        request_read_timeout_ms = millis(limits.request_read_timeout), "admission webhook server listening");
    Ok(Bound { listener, app })
}

/// Clients beyond the connection limit wait in the listen backlog, so it is as long as the
/// kernel allows (`net.core.somaxconn` caps it, as for Go's servers), not std's 128: a full
/// backlog drops the handshakes of new clients, who then retry only a second or more later.
const BACKLOG: u32 = 65_535;

fn listen(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let socket = if addr.is_ipv4() { TcpSocket::new_v4()? } else { TcpSocket::new_v6()? };
    #[cfg(unix)]
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(BACKLOG)
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// [`bind`] then [`Bound::run`].
pub async fn serve(
    addr: SocketAddr,
    tls: &TlsSource,
    app: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    bind(addr, tls, app).await?.run(shutdown).await
}

/// A body the tests and benchmark share: an AdmissionReview for `object`.
#[must_use]
pub fn review_for(uid: &str, operation: &str, object: &Value, old_object: Option<&Value>) -> Value {
    json!({"apiVersion": review::API_VERSION, "kind": "AdmissionReview",
        "request": {"uid": uid, "operation": operation, "object": object, "oldObject": old_object}})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_validation_answers_with_its_message_and_warnings() {
        let allowed = AdmissionOutcome {
            allowed: true,
            message: Some("a note".into()),
            warnings: vec!["w".into()],
            object: None,
        };
        assert_eq!(validation(allowed), Answer { warnings: vec!["w".into()], ..Answer::allow() });
        let denied = AdmissionOutcome { message: Some("no red".into()), ..AdmissionOutcome::default() };
        assert_eq!(validation(denied), Answer::deny("no red", 403));
        let silent = AdmissionOutcome::default();
        assert_eq!(validation(silent), Answer::deny("denied by the operator", 403));
    }

    #[test]
    fn a_mutation_answers_with_a_patch_or_fails_on_a_non_object() {
        let before = json!({"metadata": {}});
        let after = json!({"metadata": {"labels": {"a": "b"}}});
        let mutated = AdmissionOutcome {
            allowed: true,
            warnings: vec!["w".into()],
            object: Some(after.clone()),
            ..AdmissionOutcome::default()
        };
        let answer = mutation(&before, mutated).expect("a patch");
        assert_eq!(answer.warnings, ["w"]);
        assert_eq!(answer.patch, review::patch(&before, &after));
        assert!(answer.allowed && answer.patch.is_some());
        let unchanged = AdmissionOutcome { allowed: true, ..AdmissionOutcome::default() };
        assert_eq!(mutation(&before, unchanged).expect("no object"), Answer::allow());
        // `allowed` is not read for a mutation: the object decides.
        let same = AdmissionOutcome { object: Some(before.clone()), ..AdmissionOutcome::default() };
        assert_eq!(mutation(&before, same).expect("no change"), Answer::allow());
        let bad = AdmissionOutcome { object: Some(json!("text")), ..AdmissionOutcome::default() };
        let e = mutation(&before, bad).expect_err("a non-object");
        assert_eq!(e.to_string(), r#"mutate returned a non-object: "text""#);
    }
}

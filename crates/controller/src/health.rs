//! Health, readiness, per-controller status and Prometheus metrics.
//!
//! Two shared handles, both cheap to clone:
//!
//! - [`Health`] holds one [`ControllerStatus`] per controller: whether it started, whether
//!   its caches are synced, the last [`MAX_ERRORS`] errors with timestamps, and the `Ready`
//!   condition derived from them as in the Δ-controller `ControllerStatus` spec
//!   (`True/Ready`, `False/NotReady`, `Unknown/ReconciliationFailed`).
//! - [`Metrics`] is a `prometheus-client` registry rendered in the Prometheus text format
//!   0.0.4, under controller-runtime's metric names, labels and buckets plus ctop's own
//!   `ctop_*` series (it lives in the `metrics` module and is re-exported here).
//!
//! [`serve`] exposes both over HTTP (axum): `/healthz`, `/readyz`, `/status` and `/metrics`.
//! [`health_router`] and [`metrics_router`] split them for separate health and metrics ports.

use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::SystemTime;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use parking_lot::Mutex;
use serde::Serialize;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

pub use crate::metrics::{
    METRICS_CONTENT_TYPE, Metrics, RECONCILE_TIME_BUCKETS, ReconcileResult, SCRIPT_BUCKETS,
    WORKQUEUE_BUCKETS, WorkToken,
};

/// How many errors each controller keeps in `lastErrors`.
pub const MAX_ERRORS: usize = 10;

/// Errors of [`serve`].
#[derive(Debug, thiserror::Error)]
pub enum HealthError {
    /// The listening socket could not be bound.
    #[error("cannot listen on {addr}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// The underlying error.
        source: std::io::Error,
    },
}

// ---------------------------------------------------------------------------------------
// Health
// ---------------------------------------------------------------------------------------

/// One recorded error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorRecord {
    /// When it was recorded.
    pub at: SystemTime,
    /// The message.
    pub message: String,
}

impl ErrorRecord {
    /// `"<RFC 3339 time> <message>"`, the form used in `lastErrors`.
    pub fn display(&self) -> String {
        format!("{} {}", rfc3339(self.at), self.message)
    }
}

/// A `metav1.Condition`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    /// Always `Ready` here.
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    /// `Ready`, `NotReady` or `ReconciliationFailed`.
    pub reason: String,
    /// Human-readable detail.
    pub message: String,
    /// RFC 3339 time the status last changed.
    pub last_transition_time: String,
}

/// The state of one controller.
#[derive(Debug, Clone)]
pub struct ControllerStatus {
    /// The controller's name.
    pub name: String,
    /// The controller started (its configuration is valid and it is running).
    pub ready: bool,
    /// Its informer caches are synced.
    pub caches_synced: bool,
    /// A critical error that stopped it (invalid configuration, failed start).
    pub fatal: Option<String>,
    /// The latest reconcile failed and none succeeded since.
    pub failing: bool,
    /// The last [`MAX_ERRORS`] errors, oldest first.
    pub last_errors: VecDeque<ErrorRecord>,
    /// Reconciles that succeeded, and how many of them skipped the handler because
    /// nothing it read had changed since its last run.
    pub reconciled: u64,
    /// See `reconciled`.
    pub skipped: u64,
    condition: (&'static str, &'static str),
    message: String,
    transition: SystemTime,
}

impl ControllerStatus {
    fn new(name: &str) -> Self {
        let mut s = ControllerStatus {
            name: name.to_owned(),
            ready: false,
            caches_synced: false,
            fatal: None,
            failing: false,
            last_errors: VecDeque::with_capacity(MAX_ERRORS),
            reconciled: 0,
            skipped: 0,
            condition: ("", ""),
            message: String::new(),
            transition: SystemTime::now(),
        };
        s.refresh();
        s
    }

    fn push_error(&mut self, message: String) {
        if self.last_errors.len() == MAX_ERRORS {
            self.last_errors.pop_front();
        }
        self.last_errors.push_back(ErrorRecord { at: SystemTime::now(), message });
    }

    /// Recompute the `Ready` condition; `lastTransitionTime` moves only when status or
    /// reason change.
    fn refresh(&mut self) {
        let newest = || self.last_errors.back().map(|e| e.message.clone()).unwrap_or_default();
        let (cond, message) = if let Some(fatal) = &self.fatal {
            (("False", "NotReady"), fatal.clone())
        } else if !self.ready {
            (("False", "NotReady"), "controller not started".to_owned())
        } else if !self.caches_synced {
            (("False", "NotReady"), "caches not synced".to_owned())
        } else if self.failing {
            (("Unknown", "ReconciliationFailed"), newest())
        } else {
            (("True", "Ready"), "controller is running".to_owned())
        };
        if cond != self.condition {
            self.condition = cond;
            self.transition = SystemTime::now();
        }
        self.message = message;
    }

    /// The `Ready` condition.
    pub fn ready_condition(&self) -> Condition {
        Condition {
            type_: "Ready".to_owned(),
            status: self.condition.0.to_owned(),
            reason: self.condition.1.to_owned(),
            message: self.message.clone(),
            last_transition_time: rfc3339(self.transition),
        }
    }

    fn to_json(&self) -> StatusJson {
        StatusJson {
            name: self.name.clone(),
            ready: self.ready,
            caches_synced: self.caches_synced,
            conditions: vec![self.ready_condition()],
            last_errors: self.last_errors.iter().map(ErrorRecord::display).collect(),
            reconciled: self.reconciled,
            skipped: self.skipped,
        }
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct StatusJson {
    name: String,
    ready: bool,
    caches_synced: bool,
    reconciled: u64,
    skipped: u64,
    conditions: Vec<Condition>,
    last_errors: Vec<String>,
}

/// The health and metrics registries of several runs in one process, served once by their
/// owner: `ctop run --operators` runs one controller per Operator object on one health and
/// one metrics server (see [`crate::RunOptions::shared`]). Cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct Shared {
    /// The controllers' health, `/healthz`, `/readyz` and `/status` (with its inspector).
    pub health: Health,
    /// The metrics, labelled by controller as always.
    pub metrics: Metrics,
}

/// Per-controller health, shared between the controllers and the HTTP server.
#[derive(Debug, Clone, Default)]
pub struct Health {
    inner: Arc<Mutex<BTreeMap<String, ControllerStatus>>>,
    sharding: Arc<Mutex<Option<crate::shard::members::ShardingStatus>>>,
    migrations: Arc<Mutex<BTreeMap<String, crate::migrate::MigrationStatus>>>,
    inspector: crate::inspect::Inspector,
}

impl Health {
    /// No controllers yet: `/readyz` answers 503 until one is registered and synced.
    pub fn new() -> Self {
        Self::default()
    }

    fn with<R>(&self, controller: &str, f: impl FnOnce(&mut ControllerStatus) -> R) -> R {
        let mut map = self.inner.lock();
        let status = map.entry(controller.to_owned()).or_insert_with(|| ControllerStatus::new(controller));
        let r = f(status);
        status.refresh();
        r
    }

    /// No controllers yet, showing them in `inspector` (see `RunOptions::inspector`).
    pub fn with_inspector(inspector: crate::inspect::Inspector) -> Self {
        Self { inspector, ..Self::default() }
    }

    /// What the controllers show about their objects (see `inspect`).
    pub fn inspector(&self) -> &crate::inspect::Inspector {
        &self.inspector
    }

    /// Register a controller (not started, caches not synced). Idempotent.
    pub fn register(&self, controller: &str) {
        self.with(controller, |_| ());
    }

    /// Forget a controller that stopped for good (another of the process's runs goes on):
    /// it no longer counts for `/readyz` nor shows in `/status`.
    pub fn forget(&self, controller: &str) {
        self.inner.lock().remove(controller);
    }

    /// Mark the controller started (or stopped).
    pub fn set_ready(&self, controller: &str, ready: bool) {
        self.with(controller, |s| s.ready = ready);
    }

    /// Mark the controller's caches synced (or not, e.g. after a restart of its watches).
    pub fn set_caches_synced(&self, controller: &str, synced: bool) {
        self.with(controller, |s| s.caches_synced = synced);
    }

    /// A critical error: the controller cannot run (`False/NotReady`).
    pub fn set_fatal(&self, controller: &str, message: impl Into<String>) {
        let message = message.into();
        self.with(controller, |s| {
            s.fatal = Some(message.clone());
            s.ready = false;
            s.push_error(message);
        });
    }

    /// A transient reconcile error (`Unknown/ReconciliationFailed` until the next success).
    pub fn record_error(&self, controller: &str, message: impl Into<String>) {
        let message = message.into();
        self.with(controller, |s| {
            s.failing = true;
            s.push_error(message);
        });
    }

    /// A successful reconcile: the condition returns to `True/Ready` (errors stay listed).
    /// `skipped`: the handler was not called, its last outcome standing (see
    /// [`ControllerStatus::skipped`]).
    pub fn record_success(&self, controller: &str, skipped: bool) {
        self.with(controller, |s| {
            s.failing = false;
            s.reconciled += 1;
            s.skipped += u64::from(skipped);
        });
    }

    /// The ring of a sharded run as this replica sees it (served on `/status`).
    pub fn set_sharding(&self, status: crate::shard::members::ShardingStatus) {
        *self.sharding.lock() = Some(status);
    }

    /// The ring of a sharded run, once known.
    pub fn sharding(&self) -> Option<crate::shard::members::ShardingStatus> {
        self.sharding.lock().clone()
    }

    /// Where the storage migration of a resource stands (`ctop run --migrate-storage`).
    pub fn set_migration(&self, status: crate::migrate::MigrationStatus) {
        self.migrations.lock().insert(status.resource.clone(), status);
    }

    /// The storage migration of the resource `<plural>.<group>`, once started.
    pub fn migration(&self, resource: &str) -> Option<crate::migrate::MigrationStatus> {
        self.migrations.lock().get(resource).cloned()
    }

    /// A snapshot of one controller.
    pub fn status(&self, controller: &str) -> Option<ControllerStatus> {
        self.inner.lock().get(controller).cloned()
    }

    /// Names of registered controllers whose caches are not synced.
    pub fn unsynced(&self) -> Vec<String> {
        let map = self.inner.lock();
        map.values().filter(|s| !s.caches_synced).map(|s| s.name.clone()).collect()
    }

    /// Ready when at least one controller is registered and all have synced caches.
    pub fn is_ready(&self) -> bool {
        let map = self.inner.lock();
        !map.is_empty() && map.values().all(|s| s.caches_synced)
    }

    /// The `/status` document: `{"controllers": [{name, ready, cachesSynced, conditions,
    /// lastErrors}]}`, controllers sorted by name, `lastErrors` oldest first; a sharded run
    /// adds `"sharding": {ring, member, sharder, members: [{name, holder, objects,
    /// renewTime, leaseDurationSeconds, live, fenced}]}`; a run that migrates storage adds
    /// `"storageMigrations": [{resource, phase, to, storedVersions, migrated, message}]`.
    pub fn status_json(&self) -> serde_json::Value {
        let controllers: Vec<StatusJson> =
            self.inner.lock().values().map(ControllerStatus::to_json).collect();
        let mut doc = serde_json::json!({ "controllers": controllers });
        if let Some(s) = self.sharding() {
            doc["sharding"] = serde_json::json!(s);
        }
        let migrations: Vec<_> = self.migrations.lock().values().cloned().collect();
        if !migrations.is_empty() {
            doc["storageMigrations"] = serde_json::json!(migrations);
        }
        doc
    }
}

/// RFC 3339 UTC with second precision (`metav1.Time`).
fn rfc3339(t: SystemTime) -> String {
    chrono::DateTime::<chrono::Utc>::from(t).to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// RFC 3339 UTC with millisecond precision (the reconcile history's times).
pub(crate) fn rfc3339_millis(t: SystemTime) -> String {
    chrono::DateTime::<chrono::Utc>::from(t).to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

// ---------------------------------------------------------------------------------------
// HTTP
// ---------------------------------------------------------------------------------------

async fn healthz() -> &'static str {
    "ok"
}

async fn readyz(State(health): State<Health>) -> Response {
    if health.is_ready() {
        return (StatusCode::OK, "ok").into_response();
    }
    let unsynced = health.unsynced();
    let body = if unsynced.is_empty() {
        "not ready: no controllers registered\n".to_owned()
    } else {
        format!("not ready: caches not synced: {}\n", unsynced.join(", "))
    };
    (StatusCode::SERVICE_UNAVAILABLE, body).into_response()
}

async fn status(State(health): State<Health>) -> Response {
    axum::Json(health.status_json()).into_response()
}

async fn metrics(State(metrics): State<Metrics>) -> Response {
    ([(header::CONTENT_TYPE, METRICS_CONTENT_TYPE)], metrics.render()).into_response()
}

/// `/healthz`, `/readyz`, `/status`, and the inspector's `/api/objects` and `/api/history`
/// (see `inspect::api`).
pub fn health_router(health: Health) -> Router {
    let inspector = crate::inspect::api::history_router(health.inspector.clone());
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/status", get(status))
        .with_state(health)
        .merge(inspector)
}

/// `/metrics`.
pub fn metrics_router(metrics_: Metrics) -> Router {
    Router::new().route("/metrics", get(metrics)).with_state(metrics_)
}

/// All four endpoints on one router.
pub fn router(health: Health, metrics: Metrics) -> Router {
    health_router(health).merge(metrics_router(metrics))
}

/// Serve `router` on `addr` (port 0 picks a free one) until the task is aborted.
pub async fn serve_router(
    addr: SocketAddr,
    router: Router,
) -> Result<(SocketAddr, JoinHandle<()>), HealthError> {
    let listener = TcpListener::bind(addr).await.map_err(|source| HealthError::Bind { addr, source })?;
    let local = listener.local_addr().map_err(|source| HealthError::Bind { addr, source })?;
    let handle = tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, router).await {
            tracing::error!(error = %e, "health server stopped");
        }
    });
    Ok((local, handle))
}

/// Serve `/healthz`, `/readyz`, `/status` and `/metrics` on `addr`; returns the bound
/// address and the server task (abort it to stop).
pub async fn serve(
    addr: SocketAddr,
    health: Health,
    metrics: Metrics,
) -> Result<(SocketAddr, JoinHandle<()>), HealthError> {
    serve_router(addr, router(health, metrics)).await
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use std::time::UNIX_EPOCH;

    #[test]
    fn rfc3339_known_dates() {
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00Z");
        let t = UNIX_EPOCH + Duration::from_secs(1_709_210_096); // leap year, Feb 29
        assert_eq!(rfc3339(t), "2024-02-29T12:34:56Z");
    }

    #[test]
    fn condition_follows_state() {
        let h = Health::new();
        h.register("a");
        let c = || h.status("a").map(|s| s.ready_condition());
        assert_eq!(c().map(|c| c.reason), Some("NotReady".into()));
        h.set_ready("a", true);
        h.set_caches_synced("a", true);
        assert_eq!(c().map(|c| (c.status, c.reason)), Some(("True".into(), "Ready".into())));
        h.record_error("a", "boom");
        let cond = c().expect("registered");
        assert_eq!((cond.status.as_str(), cond.reason.as_str()), ("Unknown", "ReconciliationFailed"));
        assert_eq!(cond.message, "boom");
        h.record_success("a", false);
        assert_eq!(c().map(|c| c.status), Some("True".into()));
        h.set_fatal("a", "bad pipeline");
        assert_eq!(c().map(|c| (c.status, c.reason)), Some(("False".into(), "NotReady".into())));
    }
}

//! Health, readiness, per-controller status and Prometheus metrics.
//!
//! Two shared handles, both cheap to clone:
//!
//! - [`Health`] holds one [`ControllerStatus`] per controller: whether it started, whether
//!   its caches are synced, the last [`MAX_ERRORS`] errors with timestamps, and the `Ready`
//!   condition derived from them as in the Δ-controller `ControllerStatus` spec
//!   (`True/Ready`, `False/NotReady`, `Unknown/ReconciliationFailed`).
//! - [`Metrics`] is a small registry rendered in the Prometheus text format 0.0.4 (written
//!   by hand, no client library), under controller-runtime's metric names and labels plus
//!   ctop's own `ctop_*` series.
//!
//! [`serve`] exposes both over HTTP (axum): `/healthz`, `/readyz`, `/status` and `/metrics`.
//! [`health_router`] and [`metrics_router`] split them for separate health and metrics ports.

use std::collections::{BTreeMap, VecDeque};
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use parking_lot::Mutex;
use serde::Serialize;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// How many errors each controller keeps in `lastErrors`.
pub const MAX_ERRORS: usize = 10;

/// Content type of `/metrics`.
pub const METRICS_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Buckets of `controller_runtime_reconcile_time_seconds`, as in controller-runtime.
pub const RECONCILE_TIME_BUCKETS: &[f64] = &[
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.25,
    1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 15.0, 20.0, 25.0, 30.0, 40.0,
    50.0, 60.0,
];

/// Buckets of the `workqueue_*_duration_seconds` histograms: controller-runtime's
/// `ExponentialBuckets(10e-9, 10, 12)`.
pub const WORKQUEUE_BUCKETS: &[f64] =
    &[1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0, 1000.0];

/// Buckets of `ctop_script_duration_seconds` (script handlers are usually sub-millisecond).
pub const SCRIPT_BUCKETS: &[f64] = &[
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
    30.0,
];

/// Errors of [`serve`].
#[derive(Debug, thiserror::Error)]
pub enum HealthError {
    /// The listening socket could not be bound.
    #[error("cannot listen on {addr}: {source}")]
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
        }
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct StatusJson {
    name: String,
    ready: bool,
    caches_synced: bool,
    conditions: Vec<Condition>,
    last_errors: Vec<String>,
}

/// Per-controller health, shared between the controllers and the HTTP server.
#[derive(Debug, Clone, Default)]
pub struct Health {
    inner: Arc<Mutex<BTreeMap<String, ControllerStatus>>>,
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

    /// Register a controller (not started, caches not synced). Idempotent.
    pub fn register(&self, controller: &str) {
        self.with(controller, |_| ());
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
    pub fn record_success(&self, controller: &str) {
        self.with(controller, |s| s.failing = false);
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
    /// lastErrors}]}`, controllers sorted by name, `lastErrors` oldest first.
    pub fn status_json(&self) -> serde_json::Value {
        let map = self.inner.lock();
        let controllers: Vec<StatusJson> = map.values().map(ControllerStatus::to_json).collect();
        serde_json::json!({ "controllers": controllers })
    }
}

// ---------------------------------------------------------------------------------------
// Metrics
// ---------------------------------------------------------------------------------------

/// The `result` label of `controller_runtime_reconcile_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReconcileResult {
    /// Done, nothing requeued.
    Success,
    /// Failed (also counts `controller_runtime_reconcile_errors_total`).
    Error,
    /// Requeued immediately (with rate limiting).
    Requeue,
    /// Requeued after a fixed delay.
    RequeueAfter,
}

impl ReconcileResult {
    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            ReconcileResult::Success => "success",
            ReconcileResult::Error => "error",
            ReconcileResult::Requeue => "requeue",
            ReconcileResult::RequeueAfter => "requeue_after",
        }
    }

    const ALL: [ReconcileResult; 4] = [
        ReconcileResult::Success,
        ReconcileResult::Error,
        ReconcileResult::Requeue,
        ReconcileResult::RequeueAfter,
    ];
}

type Labels = Vec<(&'static str, String)>;

#[derive(Debug, Clone)]
struct Histogram {
    buckets: &'static [f64],
    counts: Vec<u64>,
    sum: f64,
    count: u64,
}

impl Histogram {
    fn new(buckets: &'static [f64]) -> Self {
        Histogram { buckets, counts: vec![0; buckets.len()], sum: 0.0, count: 0 }
    }

    fn observe(&mut self, v: f64) {
        if let Some(i) = self.buckets.iter().position(|b| v <= *b) {
            self.counts[i] += 1;
        }
        self.sum += v;
        self.count += 1;
    }
}

#[derive(Debug)]
enum Values {
    Counter(BTreeMap<Labels, f64>),
    Gauge(BTreeMap<Labels, f64>),
    Histogram(&'static [f64], BTreeMap<Labels, Histogram>),
}

#[derive(Debug)]
struct Family {
    name: &'static str,
    help: &'static str,
    values: Values,
}

/// Metric names, in the order `/metrics` lists them.
mod names {
    pub const RECONCILE_TOTAL: &str = "controller_runtime_reconcile_total";
    pub const RECONCILE_ERRORS: &str = "controller_runtime_reconcile_errors_total";
    pub const RECONCILE_TIME: &str = "controller_runtime_reconcile_time_seconds";
    pub const ACTIVE_WORKERS: &str = "controller_runtime_active_workers";
    pub const MAX_CONCURRENT: &str = "controller_runtime_max_concurrent_reconciles";
    pub const WQ_DEPTH: &str = "workqueue_depth";
    pub const WQ_ADDS: &str = "workqueue_adds_total";
    pub const WQ_RETRIES: &str = "workqueue_retries_total";
    pub const WQ_QUEUE_DURATION: &str = "workqueue_queue_duration_seconds";
    pub const WQ_WORK_DURATION: &str = "workqueue_work_duration_seconds";
    pub const SCRIPT_DURATION: &str = "ctop_script_duration_seconds";
    pub const APPLIES: &str = "ctop_applies_total";
    pub const APPLIES_SKIPPED: &str = "ctop_applies_skipped_total";
    pub const PRUNES: &str = "ctop_prunes_total";
    pub const LEADER: &str = "leader_election_master_status";
}

/// The metrics registry, shared between the controllers and the HTTP server.
#[derive(Debug, Clone)]
pub struct Metrics {
    inner: Arc<Mutex<Vec<Family>>>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

fn counter(name: &'static str, help: &'static str) -> Family {
    Family { name, help, values: Values::Counter(BTreeMap::new()) }
}

fn gauge(name: &'static str, help: &'static str) -> Family {
    Family { name, help, values: Values::Gauge(BTreeMap::new()) }
}

fn histogram(name: &'static str, help: &'static str, buckets: &'static [f64]) -> Family {
    Family { name, help, values: Values::Histogram(buckets, BTreeMap::new()) }
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

impl Metrics {
    /// An empty registry with every family declared.
    pub fn new() -> Self {
        use names::*;
        let families = vec![
            counter(RECONCILE_TOTAL, "Total number of reconciliations per controller"),
            counter(RECONCILE_ERRORS, "Total number of reconciliation errors per controller"),
            histogram(
                RECONCILE_TIME,
                "Length of time per reconciliation per controller",
                RECONCILE_TIME_BUCKETS,
            ),
            gauge(ACTIVE_WORKERS, "Number of currently used workers per controller"),
            gauge(MAX_CONCURRENT, "Maximum number of concurrent reconciles per controller"),
            gauge(WQ_DEPTH, "Current depth of workqueue"),
            counter(WQ_ADDS, "Total number of adds handled by workqueue"),
            counter(WQ_RETRIES, "Total number of retries handled by workqueue"),
            histogram(
                WQ_QUEUE_DURATION,
                "How long in seconds an item stays in workqueue before being requested",
                WORKQUEUE_BUCKETS,
            ),
            histogram(
                WQ_WORK_DURATION,
                "How long in seconds processing an item from workqueue takes",
                WORKQUEUE_BUCKETS,
            ),
            histogram(
                SCRIPT_DURATION,
                "Time spent in script handlers per controller and handler",
                SCRIPT_BUCKETS,
            ),
            counter(APPLIES, "Server-side applies of children per controller"),
            counter(
                APPLIES_SKIPPED,
                "Applies skipped because the desired child and the live object were unchanged",
            ),
            counter(PRUNES, "Children pruned per controller"),
            gauge(LEADER, "1 while this replica holds the leader Lease named by `name`, else 0"),
        ];
        Metrics { inner: Arc::new(Mutex::new(families)) }
    }

    fn family<R>(&self, name: &str, f: impl FnOnce(&mut Values) -> R) -> R {
        let mut families = self.inner.lock();
        let family = families
            .iter_mut()
            .find(|fam| fam.name == name)
            .unwrap_or_else(|| unreachable!("metric family {name} is declared in Metrics::new"));
        f(&mut family.values)
    }

    fn add(&self, name: &str, labels: Labels, v: f64) {
        self.family(name, |values| match values {
            Values::Counter(m) | Values::Gauge(m) => *m.entry(labels).or_insert(0.0) += v,
            Values::Histogram(..) => {}
        });
    }

    fn set(&self, name: &str, labels: Labels, v: f64) {
        self.family(name, |values| {
            if let Values::Gauge(m) = values {
                m.insert(labels, v);
            }
        });
    }

    fn observe(&self, name: &str, labels: Labels, v: f64) {
        self.family(name, |values| {
            if let Values::Histogram(buckets, m) = values {
                m.entry(labels).or_insert_with(|| Histogram::new(buckets)).observe(v);
            }
        });
    }

    /// Declare a controller: its counters start at 0 (every `result`), its histogram
    /// exists, and `max_concurrent_reconciles` is set.
    pub fn register_controller(&self, controller: &str, max_concurrent_reconciles: usize) {
        use names::*;
        let c = || vec![("controller", controller.to_owned())];
        for r in ReconcileResult::ALL {
            self.add(
                RECONCILE_TOTAL,
                vec![("controller", controller.to_owned()), ("result", r.as_str().to_owned())],
                0.0,
            );
        }
        self.add(RECONCILE_ERRORS, c(), 0.0);
        self.family(RECONCILE_TIME, |values| {
            if let Values::Histogram(buckets, m) = values {
                m.entry(c()).or_insert_with(|| Histogram::new(buckets));
            }
        });
        self.add(ACTIVE_WORKERS, c(), 0.0);
        self.set(MAX_CONCURRENT, c(), max_concurrent_reconciles as f64);
        for name in [APPLIES, APPLIES_SKIPPED, PRUNES] {
            self.add(name, c(), 0.0);
        }
        let n = || vec![("name", controller.to_owned())];
        self.set(WQ_DEPTH, n(), 0.0);
        self.add(WQ_ADDS, n(), 0.0);
        self.add(WQ_RETRIES, n(), 0.0);
    }

    /// One finished reconcile: `reconcile_total{result}`, `reconcile_errors_total` on
    /// error, and `reconcile_time_seconds`.
    pub fn record_reconcile(&self, controller: &str, result: ReconcileResult, took: Duration) {
        use names::*;
        self.add(
            RECONCILE_TOTAL,
            vec![("controller", controller.to_owned()), ("result", result.as_str().to_owned())],
            1.0,
        );
        if result == ReconcileResult::Error {
            self.add(RECONCILE_ERRORS, vec![("controller", controller.to_owned())], 1.0);
        }
        self.observe(RECONCILE_TIME, vec![("controller", controller.to_owned())], secs(took));
    }

    /// Whether this replica leads on the Lease `lease` (controller-runtime's
    /// `leader_election_master_status`).
    pub fn set_leader(&self, lease: &str, leading: bool) {
        self.set(names::LEADER, vec![("name", lease.to_owned())], if leading { 1.0 } else { 0.0 });
    }

    /// A worker picked up an item (`+1`) or finished (`-1`).
    pub fn add_active_workers(&self, controller: &str, delta: i64) {
        self.add(names::ACTIVE_WORKERS, vec![("controller", controller.to_owned())], delta as f64);
    }

    /// Current number of items waiting in the controller's queue.
    pub fn set_queue_depth(&self, queue: &str, depth: usize) {
        self.set(names::WQ_DEPTH, vec![("name", queue.to_owned())], depth as f64);
    }

    /// An item was added to the queue.
    pub fn queue_add(&self, queue: &str) {
        self.add(names::WQ_ADDS, vec![("name", queue.to_owned())], 1.0);
    }

    /// An item was re-added with backoff.
    pub fn queue_retry(&self, queue: &str) {
        self.add(names::WQ_RETRIES, vec![("name", queue.to_owned())], 1.0);
    }

    /// How long an item waited in the queue before a worker took it.
    pub fn observe_queue_duration(&self, queue: &str, waited: Duration) {
        self.observe(names::WQ_QUEUE_DURATION, vec![("name", queue.to_owned())], secs(waited));
    }

    /// How long a worker spent on an item.
    pub fn observe_work_duration(&self, queue: &str, took: Duration) {
        self.observe(names::WQ_WORK_DURATION, vec![("name", queue.to_owned())], secs(took));
    }

    /// Time spent in one script handler call (`reconcile`, `finalize`, a mapper, ...).
    pub fn observe_script(&self, controller: &str, handler: &str, took: Duration) {
        self.observe(
            names::SCRIPT_DURATION,
            vec![("controller", controller.to_owned()), ("handler", handler.to_owned())],
            secs(took),
        );
    }

    /// `n` children applied.
    pub fn applies(&self, controller: &str, n: u64) {
        self.add(names::APPLIES, vec![("controller", controller.to_owned())], n as f64);
    }

    /// `n` applies skipped as unchanged.
    pub fn applies_skipped(&self, controller: &str, n: u64) {
        self.add(names::APPLIES_SKIPPED, vec![("controller", controller.to_owned())], n as f64);
    }

    /// `n` children pruned.
    pub fn prunes(&self, controller: &str, n: u64) {
        self.add(names::PRUNES, vec![("controller", controller.to_owned())], n as f64);
    }

    /// The Prometheus text exposition (format 0.0.4).
    pub fn render(&self) -> String {
        let families = self.inner.lock();
        let mut out = String::new();
        for fam in families.iter() {
            let kind = match fam.values {
                Values::Counter(_) => "counter",
                Values::Gauge(_) => "gauge",
                Values::Histogram(..) => "histogram",
            };
            let _ = writeln!(out, "# HELP {} {}", fam.name, escape_help(fam.help));
            let _ = writeln!(out, "# TYPE {} {kind}", fam.name);
            match &fam.values {
                Values::Counter(m) | Values::Gauge(m) => {
                    for (labels, v) in m {
                        sample(&mut out, fam.name, "", labels, None, *v);
                    }
                }
                Values::Histogram(_, m) => {
                    for (labels, h) in m {
                        let mut cumulative = 0;
                        for (b, c) in h.buckets.iter().zip(&h.counts) {
                            cumulative += c;
                            sample(
                                &mut out,
                                fam.name,
                                "_bucket",
                                labels,
                                Some(&fmt_f64(*b)),
                                cumulative as f64,
                            );
                        }
                        sample(&mut out, fam.name, "_bucket", labels, Some("+Inf"), h.count as f64);
                        sample(&mut out, fam.name, "_sum", labels, None, h.sum);
                        sample(&mut out, fam.name, "_count", labels, None, h.count as f64);
                    }
                }
            }
        }
        out
    }
}

fn sample(out: &mut String, name: &str, suffix: &str, labels: &Labels, le: Option<&str>, v: f64) {
    out.push_str(name);
    out.push_str(suffix);
    if !labels.is_empty() || le.is_some() {
        out.push('{');
        let mut first = true;
        let le = le.map(|le| ("le", le.to_owned()));
        for (k, val) in labels.iter().chain(le.as_ref()) {
            if !first {
                out.push(',');
            }
            first = false;
            let _ = write!(out, "{k}=\"{}\"", escape_label(val));
        }
        out.push('}');
    }
    let _ = writeln!(out, " {}", fmt_f64(v));
}

fn fmt_f64(v: f64) -> String {
    if v.is_nan() {
        "NaN".to_owned()
    } else if v == f64::INFINITY {
        "+Inf".to_owned()
    } else if v == f64::NEG_INFINITY {
        "-Inf".to_owned()
    } else {
        format!("{v}")
    }
}

fn escape_label(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

fn escape_help(v: &str) -> String {
    v.replace('\\', "\\\\").replace('\n', "\\n")
}

/// RFC 3339 UTC with second precision (`metav1.Time`).
fn rfc3339(t: SystemTime) -> String {
    let secs = t.duration_since(UNIX_EPOCH).map(|d| d.as_secs() as i64).unwrap_or(0);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z", rem / 3600, rem % 3600 / 60, rem % 60)
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

/// `/healthz`, `/readyz` and `/status`.
pub fn health_router(health: Health) -> Router {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/status", get(status))
        .with_state(health)
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
    use super::*;

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
        h.record_success("a");
        assert_eq!(c().map(|c| c.status), Some("True".into()));
        h.set_fatal("a", "bad pipeline");
        assert_eq!(c().map(|c| (c.status, c.reason)), Some(("False".into(), "NotReady".into())));
    }
}

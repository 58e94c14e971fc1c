//! Prometheus metrics under controller-runtime's names, labels and buckets, plus ctop's own
//! `ctop_*` series.
//!
//! [`Metrics`] wraps a [`prometheus_client`] registry (the Prometheus project's Rust client)
//! and renders it in the Prometheus text format 0.0.4, the format controller-runtime serves
//! by default. Counters are registered without their `_total` suffix, which the encoder
//! appends, so the exposed names are exactly those in `mod names`.
//!
//! Two workqueue gauges describe work in progress rather than finished work, so they are
//! computed when scraped: a worker holds a [`WorkToken`] from [`Metrics::work_started`]
//! while it processes an item, and `workqueue_unfinished_work_seconds` /
//! `workqueue_longest_running_processor_seconds` sum and maximise the elapsed time of the
//! tokens alive at that moment.

mod shard;

pub(crate) use shard::ShardMetrics;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric, prometheus_text};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::{Family, MetricConstructor};
use prometheus_client::metrics::gauge::{ConstGauge, Gauge};
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

/// Content type of `/metrics`: the Prometheus text format 0.0.4.
pub const METRICS_CONTENT_TYPE: &str = prometheus_text::CONTENT_TYPE;

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

/// Exposed metric names, in the order `/metrics` lists them.
mod names {
    pub const RECONCILE_TOTAL: &str = "controller_runtime_reconcile_total";
    pub const RECONCILE_ERRORS: &str = "controller_runtime_reconcile_errors_total";
    pub const TERMINAL_ERRORS: &str = "controller_runtime_terminal_reconcile_errors_total";
    pub const PANICS: &str = "controller_runtime_reconcile_panics_total";
    pub const TIMEOUTS: &str = "controller_runtime_reconcile_timeouts_total";
    pub const RECONCILE_TIME: &str = "controller_runtime_reconcile_time_seconds";
    pub const ACTIVE_WORKERS: &str = "controller_runtime_active_workers";
    pub const MAX_CONCURRENT: &str = "controller_runtime_max_concurrent_reconciles";
    pub const WQ_DEPTH: &str = "workqueue_depth";
    pub const WQ_ADDS: &str = "workqueue_adds_total";
    pub const WQ_RETRIES: &str = "workqueue_retries_total";
    pub const WQ_QUEUE_DURATION: &str = "workqueue_queue_duration_seconds";
    pub const WQ_WORK_DURATION: &str = "workqueue_work_duration_seconds";
    pub const SCRIPT_DURATION: &str = "ctop_script_duration_seconds";
    pub const SCRIPT_CALLS: &str = "ctop_script_calls_total";
    pub const APPLIES: &str = "ctop_applies_total";
    pub const APPLIES_SKIPPED: &str = "ctop_applies_skipped_total";
    pub const RECONCILE_SKIPPED: &str = "ctop_reconcile_skipped_total";
    pub const PRUNES: &str = "ctop_prunes_total";
    pub const REMEMBERED: &str = "ctop_remembered_objects";
    pub const LEADER: &str = "leader_election_master_status";
    pub const WQ_UNFINISHED: &str = "workqueue_unfinished_work_seconds";
    pub const WQ_LONGEST: &str = "workqueue_longest_running_processor_seconds";
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ControllerLabels {
    controller: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResultLabels {
    controller: String,
    result: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ScriptLabels {
    controller: String,
    handler: String,
}

/// A script call's labels and where it ran: `inline`, `blocking` or `restarted`.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ScriptPathLabels {
    controller: String,
    handler: String,
    path: &'static str,
}

/// `controller` and `memory`: which of a controller's per-object memories.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct MemoryLabels {
    controller: String,
    memory: &'static str,
}

/// `name`: a workqueue's name, or a leader Lease's.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct NameLabels {
    name: String,
}

fn controller(controller: &str) -> ControllerLabels {
    ControllerLabels { controller: controller.to_owned() }
}

fn named(name: &str) -> NameLabels {
    NameLabels { name: name.to_owned() }
}

fn reconcile_histogram() -> Histogram {
    Histogram::new(RECONCILE_TIME_BUCKETS.iter().copied())
}

fn workqueue_histogram() -> Histogram {
    Histogram::new(WORKQUEUE_BUCKETS.iter().copied())
}

fn script_histogram() -> Histogram {
    Histogram::new(SCRIPT_BUCKETS.iter().copied())
}

/// Create the series `labels` of `family` at 0 (a no-op when it exists).
fn declare<S, M, C>(family: &Family<S, M, C>, labels: &S)
where
    S: Clone + std::hash::Hash + Eq,
    C: MetricConstructor<M>,
{
    drop(family.get_or_create(labels));
}

/// A gauge value from a count that cannot be negative.
fn gauge_value(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

// ---------------------------------------------------------------------------------------
// Work in progress
// ---------------------------------------------------------------------------------------

/// The items workers are processing, per queue: when each started.
#[derive(Debug, Default)]
struct InFlight {
    next_id: AtomicU64,
    queues: Mutex<BTreeMap<String, HashMap<u64, Instant>>>,
}

impl InFlight {
    /// Make `queue`'s gauges exist (at 0) before any work.
    fn declare(&self, queue: &str) {
        self.queues.lock().entry(queue.to_owned()).or_default();
    }

    /// Per queue, sorted by name: its in-flight work at `now`.
    fn snapshot(&self, now: Instant) -> Vec<QueueWork> {
        let queues = self.queues.lock();
        queues
            .iter()
            .map(|(queue, items)| {
                let mut row = QueueWork { queue: queue.clone(), unfinished: 0.0, longest: 0.0 };
                for started in items.values() {
                    let secs = now.saturating_duration_since(*started).as_secs_f64();
                    row.unfinished += secs;
                    row.longest = row.longest.max(secs);
                }
                row
            })
            .collect()
    }
}

/// One queue's work in progress at a scrape.
#[derive(Debug, Clone, PartialEq)]
struct QueueWork {
    queue: String,
    /// Sum of the in-flight items' elapsed seconds (`workqueue_unfinished_work_seconds`).
    unfinished: f64,
    /// The longest elapsed time among them (`workqueue_longest_running_processor_seconds`).
    longest: f64,
}

/// One gauge family with a series per queue.
fn encode_queue_gauge(
    encoder: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    rows: &[QueueWork],
    value: impl Fn(&QueueWork) -> f64,
) -> Result<(), std::fmt::Error> {
    let mut family = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
    for row in rows {
        let labels = named(&row.queue);
        ConstGauge::new(value(row)).encode(family.encode_family(&labels)?)?;
    }
    Ok(())
}

impl Collector for InFlight {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        let rows = self.snapshot(Instant::now());
        if rows.is_empty() {
            return Ok(());
        }
        // client-go's help texts.
        encode_queue_gauge(
            &mut encoder,
            names::WQ_UNFINISHED,
            "How many seconds of work has been done that is in progress and hasn't been observed by \
             work_duration. Large values indicate stuck threads. One can deduce the number of stuck \
             threads by observing the rate at which this increases.",
            &rows,
            |row| row.unfinished,
        )?;
        encode_queue_gauge(
            &mut encoder,
            names::WQ_LONGEST,
            "How many seconds has the longest running processor for workqueue been running.",
            &rows,
            |row| row.longest,
        )
    }
}

/// One item a worker is processing, counted by `workqueue_unfinished_work_seconds` and
/// `workqueue_longest_running_processor_seconds` until it is finished or dropped.
///
/// Dropping it is enough (so a reconcile cancelled mid-way stops counting too);
/// [`WorkToken::finish`] says so at the call site.
#[derive(Debug)]
#[must_use = "the work counts as in progress only while the token lives"]
pub struct WorkToken {
    in_flight: Arc<InFlight>,
    queue: String,
    id: u64,
}

impl WorkToken {
    /// The work is done: it leaves the in-progress gauges.
    pub fn finish(self) {}
}

impl Drop for WorkToken {
    fn drop(&mut self) {
        if let Some(items) = self.in_flight.queues.lock().get_mut(&self.queue) {
            items.remove(&self.id);
        }
    }
}

// ---------------------------------------------------------------------------------------
// The registry
// ---------------------------------------------------------------------------------------

/// The metrics registry, shared between the controllers and the HTTP server (cheap to
/// clone).
#[derive(Debug, Clone)]
pub struct Metrics {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    registry: Registry,
    reconcile_total: Family<ResultLabels, Counter>,
    reconcile_errors: Family<ControllerLabels, Counter>,
    terminal_errors: Family<ControllerLabels, Counter>,
    panics: Family<ControllerLabels, Counter>,
    timeouts: Family<ControllerLabels, Counter>,
    reconcile_time: Family<ControllerLabels, Histogram>,
    active_workers: Family<ControllerLabels, Gauge>,
    max_concurrent: Family<ControllerLabels, Gauge>,
    wq_depth: Family<NameLabels, Gauge>,
    wq_adds: Family<NameLabels, Counter>,
    wq_retries: Family<NameLabels, Counter>,
    wq_queue_duration: Family<NameLabels, Histogram>,
    wq_work_duration: Family<NameLabels, Histogram>,
    script_duration: Family<ScriptLabels, Histogram>,
    script_calls: Family<ScriptPathLabels, Counter>,
    applies: Family<ControllerLabels, Counter>,
    applies_skipped: Family<ControllerLabels, Counter>,
    reconcile_skipped: Family<ControllerLabels, Counter>,
    prunes: Family<ControllerLabels, Counter>,
    remembered: Family<MemoryLabels, Gauge>,
    leader: Family<NameLabels, Gauge>,
    shard: ShardMetrics,
    in_flight: Arc<InFlight>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

/// Register a counter under its exposed name: the encoder appends `_total`, so it is
/// registered without it (else it would be exposed as `..._total_total`).
fn register_counter<S>(registry: &mut Registry, name: &str, help: &str, family: &Family<S, Counter>)
where
    S: Clone + std::hash::Hash + Eq + EncodeLabelSet + std::fmt::Debug + Send + Sync + 'static,
{
    let base = name.strip_suffix("_total").unwrap_or(name);
    registry.register(base, help, family.clone());
}

impl Metrics {
    /// A registry with every family declared and no series yet.
    pub fn new() -> Self {
        use names::*;
        let mut inner = Inner {
            registry: Registry::default(),
            reconcile_total: Family::default(),
            reconcile_errors: Family::default(),
            terminal_errors: Family::default(),
            panics: Family::default(),
            timeouts: Family::default(),
            reconcile_time: Family::new_with_constructor(reconcile_histogram),
            active_workers: Family::default(),
            max_concurrent: Family::default(),
            wq_depth: Family::default(),
            wq_adds: Family::default(),
            wq_retries: Family::default(),
            wq_queue_duration: Family::new_with_constructor(workqueue_histogram),
            wq_work_duration: Family::new_with_constructor(workqueue_histogram),
            script_duration: Family::new_with_constructor(script_histogram),
            script_calls: Family::default(),
            applies: Family::default(),
            applies_skipped: Family::default(),
            reconcile_skipped: Family::default(),
            prunes: Family::default(),
            remembered: Family::default(),
            leader: Family::default(),
            shard: ShardMetrics::default(),
            in_flight: Arc::default(),
        };
        let r = &mut inner.registry;
        register_counter(
            r,
            RECONCILE_TOTAL,
            "Total number of reconciliations per controller",
            &inner.reconcile_total,
        );
        register_counter(
            r,
            RECONCILE_ERRORS,
            "Total number of reconciliation errors per controller",
            &inner.reconcile_errors,
        );
        register_counter(
            r,
            TERMINAL_ERRORS,
            "Total number of terminal reconciliation errors per controller",
            &inner.terminal_errors,
        );
        register_counter(r, PANICS, "Total number of reconciliation panics per controller", &inner.panics);
        register_counter(
            r,
            TIMEOUTS,
            "Total number of reconciliation timeouts per controller",
            &inner.timeouts,
        );
        r.register(
            RECONCILE_TIME,
            "Length of time per reconciliation per controller",
            inner.reconcile_time.clone(),
        );
        r.register(
            ACTIVE_WORKERS,
            "Number of currently used workers per controller",
            inner.active_workers.clone(),
        );
        r.register(
            MAX_CONCURRENT,
            "Maximum number of concurrent reconciles per controller",
            inner.max_concurrent.clone(),
        );
        r.register(WQ_DEPTH, "Current depth of workqueue", inner.wq_depth.clone());
        register_counter(r, WQ_ADDS, "Total number of adds handled by workqueue", &inner.wq_adds);
        register_counter(r, WQ_RETRIES, "Total number of retries handled by workqueue", &inner.wq_retries);
        r.register(
            WQ_QUEUE_DURATION,
            "How long in seconds an item stays in workqueue before being requested",
            inner.wq_queue_duration.clone(),
        );
        r.register(
            WQ_WORK_DURATION,
            "How long in seconds processing an item from workqueue takes",
            inner.wq_work_duration.clone(),
        );
        r.register(
            SCRIPT_DURATION,
            "Time spent in script handlers per controller and handler",
            inner.script_duration.clone(),
        );
        register_counter(
            r,
            SCRIPT_CALLS,
            "Script handler calls per controller, handler and where they ran: `inline` on the async worker, `blocking` on a blocking thread, `restarted` on a blocking thread after overrunning the inline budget",
            &inner.script_calls,
        );
        register_counter(r, APPLIES, "Server-side applies of children per controller", &inner.applies);
        register_counter(
            r,
            APPLIES_SKIPPED,
            "Applies skipped because the desired child and the live object were unchanged",
            &inner.applies_skipped,
        );
        register_counter(
            r,
            RECONCILE_SKIPPED,
            "Reconciles that did not call the handler because nothing it read had changed since its last deterministic run (also counted in controller_runtime_reconcile_total)",
            &inner.reconcile_skipped,
        );
        register_counter(r, PRUNES, "Children pruned per controller", &inner.prunes);
        r.register(
            REMEMBERED,
            "Objects a controller remembers something of, per memory: `objects` (its own per-object state), `applied` (the applier's last applies, by owner), `status` (the status writer's last writes); each falls back as objects are deleted",
            inner.remembered.clone(),
        );
        r.register(
            LEADER,
            "1 while this replica holds the leader Lease named by `name`, else 0",
            inner.leader.clone(),
        );
        inner.shard.register(r);
        // Collectors are encoded after the registered families, so these come last.
        r.register_collector(Box::new(Arc::clone(&inner.in_flight)));
        Metrics { inner: Arc::new(inner) }
    }

    /// Declare a controller and its queue: its counters start at 0 (every `result`), its
    /// histograms and gauges exist, and `max_concurrent_reconciles` is set, as
    /// controller-runtime initialises them.
    pub fn register_controller(&self, controller_name: &str, max_concurrent_reconciles: usize) {
        let m = &self.inner;
        let c = controller(controller_name);
        for r in ReconcileResult::ALL {
            declare(
                &m.reconcile_total,
                &ResultLabels { controller: controller_name.to_owned(), result: r.as_str() },
            );
        }
        for family in [
            &m.reconcile_errors,
            &m.terminal_errors,
            &m.panics,
            &m.timeouts,
            &m.applies,
            &m.applies_skipped,
            &m.reconcile_skipped,
            &m.prunes,
        ] {
            declare(family, &c);
        }
        declare(&m.reconcile_time, &c);
        declare(&m.active_workers, &c);
        m.max_concurrent.get_or_create(&c).set(gauge_value(max_concurrent_reconciles));
        let n = named(controller_name);
        declare(&m.wq_depth, &n);
        declare(&m.wq_adds, &n);
        declare(&m.wq_retries, &n);
        declare(&m.wq_queue_duration, &n);
        declare(&m.wq_work_duration, &n);
        m.in_flight.declare(controller_name);
    }

    /// One finished reconcile: `reconcile_total{result}`, `reconcile_errors_total` on
    /// error, and `reconcile_time_seconds`.
    pub fn record_reconcile(&self, controller_name: &str, result: ReconcileResult, took: Duration) {
        let m = &self.inner;
        m.reconcile_total
            .get_or_create(&ResultLabels { controller: controller_name.to_owned(), result: result.as_str() })
            .inc();
        let c = controller(controller_name);
        if result == ReconcileResult::Error {
            m.reconcile_errors.get_or_create(&c).inc();
        }
        m.reconcile_time.get_or_create(&c).observe(took.as_secs_f64());
    }

    /// A reconcile failed in a way retrying cannot fix (not retried).
    pub fn terminal_error(&self, controller_name: &str) {
        self.inner.terminal_errors.get_or_create(&controller(controller_name)).inc();
    }

    /// A reconcile's handler broke its runtime (out of memory, an engine crash): the
    /// analog of a panic in a Go reconciler.
    pub fn panic(&self, controller_name: &str) {
        self.inner.panics.get_or_create(&controller(controller_name)).inc();
    }

    /// A reconcile's handler ran past its deadline.
    pub fn timeout(&self, controller_name: &str) {
        self.inner.timeouts.get_or_create(&controller(controller_name)).inc();
    }

    /// Whether this replica leads on the Lease `lease` (controller-runtime's
    /// `leader_election_master_status`).
    pub fn set_leader(&self, lease: &str, leading: bool) {
        self.inner.leader.get_or_create(&named(lease)).set(i64::from(leading));
    }

    /// The gauge of `ctop_remembered_objects{controller, memory}`; `memory` is `objects`,
    /// `applied` or `status`.
    pub(crate) fn remembered(&self, controller_name: &str, memory: &'static str) -> Gauge {
        self.inner
            .remembered
            .get_or_create(&MemoryLabels { controller: controller_name.to_owned(), memory })
            .clone()
    }

    /// The metrics of a sharded run (`ctop_shard_*`).
    pub(crate) fn shard(&self) -> ShardMetrics {
        self.inner.shard.clone()
    }

    /// A worker picked up an item (`+1`) or finished (`-1`).
    pub fn add_active_workers(&self, controller_name: &str, delta: i64) {
        self.inner.active_workers.get_or_create(&controller(controller_name)).inc_by(delta);
    }

    /// Current number of items waiting in the controller's queue.
    pub fn set_queue_depth(&self, queue: &str, depth: usize) {
        self.inner.wq_depth.get_or_create(&named(queue)).set(gauge_value(depth));
    }

    /// An item was added to the queue.
    pub fn queue_add(&self, queue: &str) {
        self.inner.wq_adds.get_or_create(&named(queue)).inc();
    }

    /// An item was re-added with backoff.
    pub fn queue_retry(&self, queue: &str) {
        self.inner.wq_retries.get_or_create(&named(queue)).inc();
    }

    /// How long an item waited in the queue before a worker took it.
    pub fn observe_queue_duration(&self, queue: &str, waited: Duration) {
        self.inner.wq_queue_duration.get_or_create(&named(queue)).observe(waited.as_secs_f64());
    }

    /// How long a worker spent on an item.
    pub fn observe_work_duration(&self, queue: &str, took: Duration) {
        self.inner.wq_work_duration.get_or_create(&named(queue)).observe(took.as_secs_f64());
    }

    /// A worker started on an item of `queue`: until the returned token is finished or
    /// dropped, the item counts in `workqueue_unfinished_work_seconds{name}` and
    /// `workqueue_longest_running_processor_seconds{name}`, computed at each scrape.
    pub fn work_started(&self, queue: &str) -> WorkToken {
        let in_flight = Arc::clone(&self.inner.in_flight);
        let id = in_flight.next_id.fetch_add(1, Ordering::Relaxed);
        in_flight.queues.lock().entry(queue.to_owned()).or_default().insert(id, Instant::now());
        WorkToken { in_flight, queue: queue.to_owned(), id }
    }

    /// Time spent in one script handler call (`reconcile`, `finalize`, a mapper, ...).
    pub fn observe_script(&self, controller_name: &str, handler: &str, took: Duration) {
        self.inner
            .script_duration
            .get_or_create(&ScriptLabels {
                controller: controller_name.to_owned(),
                handler: handler.to_owned(),
            })
            .observe(took.as_secs_f64());
    }

    /// One script handler call that ran where `path` says.
    pub fn script_call(&self, controller_name: &str, handler: &str, path: ctop_core::CallPath) {
        self.inner
            .script_calls
            .get_or_create(&ScriptPathLabels {
                controller: controller_name.to_owned(),
                handler: handler.to_owned(),
                path: path.as_str(),
            })
            .inc();
    }

    /// `n` children applied.
    pub fn applies(&self, controller_name: &str, n: u64) {
        self.inner.applies.get_or_create(&controller(controller_name)).inc_by(n);
    }

    /// `n` applies skipped as unchanged.
    pub fn applies_skipped(&self, controller_name: &str, n: u64) {
        self.inner.applies_skipped.get_or_create(&controller(controller_name)).inc_by(n);
    }

    /// A reconcile skipped: its handler's last outcome stands.
    pub fn reconcile_skipped(&self, controller_name: &str) {
        self.inner.reconcile_skipped.get_or_create(&controller(controller_name)).inc();
    }

    /// `n` children pruned.
    pub fn prunes(&self, controller_name: &str, n: u64) {
        self.inner.prunes.get_or_create(&controller(controller_name)).inc_by(n);
    }

    /// The Prometheus text exposition (format 0.0.4, [`METRICS_CONTENT_TYPE`]). Families
    /// without a series yet (no script handler timed, no Lease) are left out, as
    /// client_golang does.
    pub fn render(&self) -> String {
        let mut out = String::new();
        // Writing to a `String` cannot fail; an error here would come from the encoder.
        if let Err(e) = prometheus_text::encode(&mut out, &self.inner.registry) {
            tracing::error!(error = %e, "cannot encode the metrics");
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_flight_sums_and_maximises_elapsed_time() {
        let f = InFlight::default();
        let now = Instant::now();
        let earlier = |ms| now.checked_sub(Duration::from_millis(ms)).unwrap_or(now);
        f.declare("idle");
        f.queues.lock().entry("busy".into()).or_default().extend([(1, earlier(300)), (2, earlier(100))]);
        let rows = f.snapshot(now);
        let queues: Vec<&str> = rows.iter().map(|r| r.queue.as_str()).collect();
        assert_eq!(queues, ["busy", "idle"]);
        assert!((rows[0].unfinished - 0.4).abs() < 1e-9, "{:?}", rows[0]);
        assert!((rows[0].longest - 0.3).abs() < 1e-9, "{:?}", rows[0]);
        assert_eq!((rows[1].unfinished, rows[1].longest), (0.0, 0.0));
    }

    #[test]
    fn tokens_leave_when_finished_or_dropped() {
        let m = Metrics::new();
        let a = m.work_started("q");
        let b = m.work_started("q");
        assert_eq!(m.inner.in_flight.queues.lock().get("q").map(HashMap::len), Some(2));
        a.finish();
        drop(b);
        assert_eq!(m.inner.in_flight.queues.lock().get("q").map(HashMap::len), Some(0));
    }
}

//! The health server over real HTTP on 127.0.0.1: `/readyz` follows cache sync, `/status`
//! keeps the newest 10 errors, `/metrics` uses controller-runtime's names and labels and is
//! valid Prometheus text exposition (checked by the small parser at the end).

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::time::Duration;

use ctop_controller::health::{
    Health, MAX_ERRORS, METRICS_CONTENT_TYPE, Metrics, RECONCILE_TIME_BUCKETS, ReconcileResult,
    SCRIPT_BUCKETS, WORKQUEUE_BUCKETS, serve,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

struct Reply {
    status: u16,
    headers: String,
    body: String,
}

/// A one-shot HTTP/1.1 GET over a raw socket.
async fn get(addr: SocketAddr, path: &str) -> Reply {
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.expect("write request");
    let mut raw = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut raw))
        .await
        .expect("response within 10s")
        .expect("read response");
    let text = String::from_utf8(raw).expect("utf-8 response");
    let (head, body) = text.split_once("\r\n\r\n").expect("header/body separator");
    let status = head.split(' ').nth(1).and_then(|s| s.parse().ok()).expect("status code");
    Reply { status, headers: head.to_ascii_lowercase(), body: body.to_owned() }
}

async fn start() -> (SocketAddr, Health, Metrics, tokio::task::JoinHandle<()>) {
    let health = Health::new();
    let metrics = Metrics::new();
    let addr = "127.0.0.1:0".parse().expect("addr");
    let (addr, handle) = serve(addr, health.clone(), metrics.clone()).await.expect("serve");
    (addr, health, metrics, handle)
}

#[tokio::test]
async fn healthz_always_ok_and_readyz_flips_when_caches_sync() {
    let (addr, health, _metrics, server) = start().await;

    assert_eq!(get(addr, "/healthz").await.status, 200);
    // Nothing registered yet: not ready.
    assert_eq!(get(addr, "/readyz").await.status, 503);

    health.register("apps");
    health.register("jobs");
    health.set_ready("apps", true);
    health.set_ready("jobs", true);
    health.set_caches_synced("apps", true);
    let r = get(addr, "/readyz").await;
    assert_eq!(r.status, 503);
    assert!(r.body.contains("jobs"), "names the unsynced one: {}", r.body);
    assert!(!r.body.contains("apps"), "only the unsynced one: {}", r.body);

    health.set_caches_synced("jobs", true);
    assert_eq!(get(addr, "/readyz").await.status, 200);
    assert_eq!(get(addr, "/healthz").await.status, 200);

    let status: serde_json::Value = serde_json::from_str(&get(addr, "/status").await.body).expect("json");
    let ready = &status["controllers"][0]["conditions"][0];
    assert_eq!(status["controllers"][0]["name"], "apps");
    assert_eq!(ready["type"], "Ready");
    assert_eq!(ready["status"], "True");
    assert_eq!(ready["reason"], "Ready");
    assert!(ready["lastTransitionTime"].as_str().is_some_and(|t| t.ends_with('Z')));

    // A watch restart drops readiness again.
    health.set_caches_synced("apps", false);
    assert_eq!(get(addr, "/readyz").await.status, 503);
    server.abort();
}

#[tokio::test]
async fn status_keeps_newest_ten_errors_and_reports_reconciliation_failed() {
    let (addr, health, _metrics, server) = start().await;
    health.register("apps");
    health.set_ready("apps", true);
    health.set_caches_synced("apps", true);
    for i in 0..13 {
        health.record_error("apps", format!("error {i}"));
    }

    let reply = get(addr, "/status").await;
    assert_eq!(reply.status, 200);
    assert!(reply.headers.contains("application/json"), "{}", reply.headers);
    let status: serde_json::Value = serde_json::from_str(&reply.body).expect("json");
    let ctrl = &status["controllers"][0];
    assert_eq!(ctrl["name"], "apps");
    let errors = ctrl["lastErrors"].as_array().expect("lastErrors array");
    assert_eq!(errors.len(), MAX_ERRORS);
    for (k, e) in errors.iter().enumerate() {
        let e = e.as_str().expect("string");
        // Oldest first: errors 3..=12 survive; each carries an RFC 3339 timestamp.
        assert!(e.ends_with(&format!(" error {}", k + 3)), "{e}");
        assert!(e.as_bytes()[4] == b'-' && e.contains('T'), "timestamped: {e}");
    }
    let cond = &ctrl["conditions"][0];
    assert_eq!(cond["status"], "Unknown");
    assert_eq!(cond["reason"], "ReconciliationFailed");
    assert_eq!(cond["message"], "error 12");

    // A success clears the condition but keeps the history.
    health.record_success("apps", false);
    let status: serde_json::Value = serde_json::from_str(&get(addr, "/status").await.body).expect("json");
    assert_eq!(status["controllers"][0]["conditions"][0]["status"], "True");
    assert_eq!(status["controllers"][0]["lastErrors"].as_array().map(Vec::len), Some(MAX_ERRORS));

    // A critical error makes it NotReady.
    health.set_fatal("apps", "invalid pipeline");
    let status: serde_json::Value = serde_json::from_str(&get(addr, "/status").await.body).expect("json");
    let cond = &status["controllers"][0]["conditions"][0];
    assert_eq!(cond["status"], "False");
    assert_eq!(cond["reason"], "NotReady");
    assert_eq!(cond["message"], "invalid pipeline");
    server.abort();
}

fn has_line(body: &str, line: &str) -> bool {
    body.lines().any(|l| l == line)
}

#[tokio::test]
async fn metrics_use_controller_runtime_names_labels_and_buckets() {
    let (addr, _health, metrics, server) = start().await;
    metrics.register_controller("apps", 4);
    metrics.record_reconcile("apps", ReconcileResult::Success, Duration::from_millis(30));
    metrics.record_reconcile("apps", ReconcileResult::Error, Duration::from_millis(200));
    metrics.record_reconcile("apps", ReconcileResult::RequeueAfter, Duration::from_secs(2));
    metrics.add_active_workers("apps", 2);
    metrics.add_active_workers("apps", -1);
    metrics.queue_add("apps");
    metrics.queue_add("apps");
    metrics.queue_retry("apps");
    metrics.set_queue_depth("apps", 1);
    metrics.observe_queue_duration("apps", Duration::from_micros(5));
    metrics.observe_work_duration("apps", Duration::from_millis(3));
    metrics.observe_script("apps", "reconcile", Duration::from_micros(700));
    metrics.script_call("apps", "reconcile", ctop_core::CallPath::Inline);
    metrics.applies("apps", 3);
    metrics.applies_skipped("apps", 2);
    metrics.prunes("apps", 1);
    metrics.set_leader("ctop-leader", true);

    let reply = get(addr, "/metrics").await;
    assert_eq!(reply.status, 200);
    assert!(reply.headers.contains(&format!("content-type: {METRICS_CONTENT_TYPE}")), "{}", reply.headers);
    assert_eq!(METRICS_CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8");
    let body = reply.body;
    // Exactly as controller-runtime (client_golang) writes them, `le` in Go's `%g` form.
    for line in [
        "# TYPE controller_runtime_reconcile_total counter",
        r#"controller_runtime_reconcile_total{controller="apps",result="success"} 1"#,
        r#"controller_runtime_reconcile_total{controller="apps",result="error"} 1"#,
        r#"controller_runtime_reconcile_total{controller="apps",result="requeue"} 0"#,
        r#"controller_runtime_reconcile_total{controller="apps",result="requeue_after"} 1"#,
        "# TYPE controller_runtime_reconcile_errors_total counter",
        r#"controller_runtime_reconcile_errors_total{controller="apps"} 1"#,
        "# TYPE controller_runtime_reconcile_time_seconds histogram",
        r#"controller_runtime_reconcile_time_seconds_bucket{controller="apps",le="0.025"} 0"#,
        r#"controller_runtime_reconcile_time_seconds_bucket{controller="apps",le="0.05"} 1"#,
        r#"controller_runtime_reconcile_time_seconds_bucket{controller="apps",le="0.2"} 2"#,
        r#"controller_runtime_reconcile_time_seconds_bucket{controller="apps",le="2"} 3"#,
        r#"controller_runtime_reconcile_time_seconds_bucket{controller="apps",le="60"} 3"#,
        r#"controller_runtime_reconcile_time_seconds_bucket{controller="apps",le="+Inf"} 3"#,
        r#"controller_runtime_reconcile_time_seconds_sum{controller="apps"} 2.23"#,
        r#"controller_runtime_reconcile_time_seconds_count{controller="apps"} 3"#,
        "# TYPE controller_runtime_active_workers gauge",
        r#"controller_runtime_active_workers{controller="apps"} 1"#,
        "# TYPE controller_runtime_max_concurrent_reconciles gauge",
        r#"controller_runtime_max_concurrent_reconciles{controller="apps"} 4"#,
        "# TYPE workqueue_depth gauge",
        r#"workqueue_depth{name="apps"} 1"#,
        "# TYPE workqueue_adds_total counter",
        r#"workqueue_adds_total{name="apps"} 2"#,
        "# TYPE workqueue_retries_total counter",
        r#"workqueue_retries_total{name="apps"} 1"#,
        "# TYPE workqueue_queue_duration_seconds histogram",
        r#"workqueue_queue_duration_seconds_bucket{name="apps",le="1e-06"} 0"#,
        r#"workqueue_queue_duration_seconds_bucket{name="apps",le="1e-05"} 1"#,
        r#"workqueue_queue_duration_seconds_count{name="apps"} 1"#,
        "# TYPE workqueue_work_duration_seconds histogram",
        r#"workqueue_work_duration_seconds_bucket{name="apps",le="0.001"} 0"#,
        r#"workqueue_work_duration_seconds_bucket{name="apps",le="0.01"} 1"#,
        "# TYPE workqueue_unfinished_work_seconds gauge",
        "# TYPE workqueue_longest_running_processor_seconds gauge",
        "# TYPE ctop_script_duration_seconds histogram",
        r#"ctop_script_duration_seconds_bucket{controller="apps",handler="reconcile",le="0.001"} 1"#,
        r#"ctop_script_duration_seconds_count{controller="apps",handler="reconcile"} 1"#,
        "# TYPE ctop_script_calls_total counter",
        r#"ctop_script_calls_total{controller="apps",handler="reconcile",path="inline"} 1"#,
        "# TYPE ctop_applies_total counter",
        r#"ctop_applies_total{controller="apps"} 3"#,
        r#"ctop_applies_skipped_total{controller="apps"} 2"#,
        r#"ctop_prunes_total{controller="apps"} 1"#,
        "# TYPE leader_election_master_status gauge",
        r#"leader_election_master_status{name="ctop-leader"} 1"#,
    ] {
        assert!(has_line(&body, line), "missing {line:?} in\n{body}");
    }

    // Every bucket of controller-runtime's layouts is exposed, plus +Inf.
    let exposition = exposition::parse(&body);
    let buckets = |name: &str| exposition.samples.iter().filter(|s| s.name == name).count();
    assert_eq!(RECONCILE_TIME_BUCKETS.len(), 40);
    assert_eq!(buckets("controller_runtime_reconcile_time_seconds_bucket"), RECONCILE_TIME_BUCKETS.len() + 1);
    assert_eq!(WORKQUEUE_BUCKETS.len(), 12);
    assert_eq!(buckets("workqueue_work_duration_seconds_bucket"), WORKQUEUE_BUCKETS.len() + 1);
    assert_eq!(buckets("workqueue_queue_duration_seconds_bucket"), WORKQUEUE_BUCKETS.len() + 1);
    assert_eq!(buckets("ctop_script_duration_seconds_bucket"), SCRIPT_BUCKETS.len() + 1);
    server.abort();
}

/// Every family controller-runtime exposes for a controller and its queue, by type.
const CONTROLLER_FAMILIES: &[(&str, &str, &str)] = &[
    ("controller_runtime_reconcile_total", "counter", "controller"),
    ("controller_runtime_reconcile_errors_total", "counter", "controller"),
    ("controller_runtime_terminal_reconcile_errors_total", "counter", "controller"),
    ("controller_runtime_reconcile_panics_total", "counter", "controller"),
    ("controller_runtime_reconcile_timeouts_total", "counter", "controller"),
    ("controller_runtime_reconcile_time_seconds", "histogram", "controller"),
    ("controller_runtime_active_workers", "gauge", "controller"),
    ("controller_runtime_max_concurrent_reconciles", "gauge", "controller"),
    ("workqueue_depth", "gauge", "name"),
    ("workqueue_adds_total", "counter", "name"),
    ("workqueue_retries_total", "counter", "name"),
    ("workqueue_queue_duration_seconds", "histogram", "name"),
    ("workqueue_work_duration_seconds", "histogram", "name"),
    ("workqueue_unfinished_work_seconds", "gauge", "name"),
    ("workqueue_longest_running_processor_seconds", "gauge", "name"),
    ("ctop_applies_total", "counter", "controller"),
    ("ctop_applies_skipped_total", "counter", "controller"),
    ("ctop_reconcile_skipped_total", "counter", "controller"),
    ("ctop_prunes_total", "counter", "controller"),
];

#[test]
fn every_family_starts_at_zero_when_a_controller_registers() {
    let metrics = Metrics::new();
    metrics.register_controller("apps", 3);
    let e = exposition::parse(&metrics.render());
    for (family, kind, label) in CONTROLLER_FAMILIES {
        assert_eq!(e.types.get(*family).map(String::as_str), Some(*kind), "TYPE of {family}");
        let sample = match *kind {
            "histogram" => format!("{family}_count"),
            _ => (*family).to_owned(),
        };
        let series: Vec<_> = e.samples.iter().filter(|s| s.name == sample).collect();
        assert!(!series.is_empty(), "{family} has a series");
        for s in series {
            assert_eq!(s.label(label), Some("apps"), "{s:?}");
            let want = if *family == "controller_runtime_max_concurrent_reconciles" { 3.0 } else { 0.0 };
            assert_eq!(s.value, want, "{s:?}");
        }
    }
    // One `reconcile_total` per result, each at 0.
    let results: BTreeSet<_> = e
        .samples
        .iter()
        .filter(|s| s.name == "controller_runtime_reconcile_total")
        .filter_map(|s| s.label("result"))
        .collect();
    assert_eq!(results, BTreeSet::from(["error", "requeue", "requeue_after", "success"]));

    // The script and leader series have labels known only once used (a handler, a Lease).
    assert!(!e.types.contains_key("ctop_script_duration_seconds"));
    assert!(!e.types.contains_key("leader_election_master_status"));
    metrics.observe_script("apps", "finalize", Duration::from_millis(1));
    metrics.set_leader("ctop-leader", false);
    let e = exposition::parse(&metrics.render());
    assert_eq!(e.types.get("ctop_script_duration_seconds").map(String::as_str), Some("histogram"));
    assert_eq!(
        e.value("ctop_script_duration_seconds_count", &[("controller", "apps"), ("handler", "finalize")]),
        Some(1.0)
    );
    assert_eq!(e.types.get("leader_election_master_status").map(String::as_str), Some("gauge"));
    assert_eq!(e.value("leader_election_master_status", &[("name", "ctop-leader")]), Some(0.0));
}

#[test]
fn requeue_after_counts_as_requeue_after_not_success() {
    let metrics = Metrics::new();
    metrics.register_controller("apps", 1);
    metrics.record_reconcile("apps", ReconcileResult::RequeueAfter, Duration::from_millis(1));
    metrics.record_reconcile("apps", ReconcileResult::RequeueAfter, Duration::from_millis(1));
    metrics.record_reconcile("apps", ReconcileResult::Requeue, Duration::from_millis(1));
    let e = exposition::parse(&metrics.render());
    let total =
        |result| e.value("controller_runtime_reconcile_total", &[("controller", "apps"), ("result", result)]);
    assert_eq!(total("requeue_after"), Some(2.0));
    assert_eq!(total("requeue"), Some(1.0));
    assert_eq!(total("success"), Some(0.0));
    assert_eq!(total("error"), Some(0.0));
    assert_eq!(e.value("controller_runtime_reconcile_errors_total", &[("controller", "apps")]), Some(0.0));
    assert_eq!(
        e.value("controller_runtime_reconcile_time_seconds_count", &[("controller", "apps")]),
        Some(3.0)
    );
}

#[test]
fn terminal_panic_and_timeout_counters() {
    let metrics = Metrics::new();
    metrics.register_controller("apps", 1);
    metrics.register_controller("jobs", 1);
    metrics.terminal_error("apps");
    metrics.terminal_error("apps");
    metrics.panic("apps");
    metrics.timeout("jobs");
    let e = exposition::parse(&metrics.render());
    let c = |name, controller| e.value(name, &[("controller", controller)]);
    assert_eq!(c("controller_runtime_terminal_reconcile_errors_total", "apps"), Some(2.0));
    assert_eq!(c("controller_runtime_terminal_reconcile_errors_total", "jobs"), Some(0.0));
    assert_eq!(c("controller_runtime_reconcile_panics_total", "apps"), Some(1.0));
    assert_eq!(c("controller_runtime_reconcile_panics_total", "jobs"), Some(0.0));
    assert_eq!(c("controller_runtime_reconcile_timeouts_total", "apps"), Some(0.0));
    assert_eq!(c("controller_runtime_reconcile_timeouts_total", "jobs"), Some(1.0));
    // None of these is a reconcile by itself.
    assert_eq!(c("controller_runtime_reconcile_errors_total", "apps"), Some(0.0));
}

#[tokio::test]
async fn work_in_progress_shows_in_unfinished_and_longest_running_until_finished() {
    let (addr, _health, metrics, server) = start().await;
    metrics.register_controller("apps", 2);
    metrics.register_controller("jobs", 1);
    let gauges = |body: &str, queue: &str| {
        let e = exposition::parse(body);
        let unfinished =
            e.value("workqueue_unfinished_work_seconds", &[("name", queue)]).expect("unfinished");
        let longest =
            e.value("workqueue_longest_running_processor_seconds", &[("name", queue)]).expect("longest");
        (unfinished, longest)
    };
    assert_eq!(gauges(&get(addr, "/metrics").await.body, "apps"), (0.0, 0.0));

    let first = metrics.work_started("apps");
    tokio::time::sleep(Duration::from_millis(30)).await;
    let second = metrics.work_started("apps");
    tokio::time::sleep(Duration::from_millis(10)).await;

    let body = get(addr, "/metrics").await.body;
    let (unfinished, longest) = gauges(&body, "apps");
    assert!(longest >= 0.04, "the first item has run 40ms: {longest}");
    assert!(unfinished >= longest + 0.01, "both items count: {unfinished} vs {longest}");
    assert_eq!(gauges(&body, "jobs"), (0.0, 0.0), "other queues are idle");

    // Computed at scrape time: they grow while the work runs.
    tokio::time::sleep(Duration::from_millis(20)).await;
    let (later, longer) = gauges(&get(addr, "/metrics").await.body, "apps");
    assert!(later > unfinished && longer > longest, "{later} > {unfinished}, {longer} > {longest}");

    first.finish();
    let (unfinished, longest) = gauges(&metrics.render(), "apps");
    assert!(unfinished > 0.0 && unfinished < later, "only the second item is left: {unfinished}");
    assert!((unfinished - longest).abs() < 1e-9, "{unfinished} vs {longest}");

    drop(second);
    assert_eq!(gauges(&get(addr, "/metrics").await.body, "apps"), (0.0, 0.0));
    server.abort();
}

#[tokio::test]
async fn exposition_is_valid_and_names_are_not_doubled() {
    let (addr, _health, metrics, server) = start().await;
    metrics.register_controller("apps", 4);
    metrics.register_controller("jobs", 1);
    metrics.record_reconcile("jobs", ReconcileResult::Error, Duration::from_millis(7));
    metrics.observe_script("apps", "reconcile", Duration::from_micros(90));
    metrics.set_leader("ctop-leader", true);
    let _busy = metrics.work_started("jobs");
    let body = get(addr, "/metrics").await.body;

    // `parse` checks the grammar, TYPE before samples, contiguous families, unique series
    // and cumulative histogram buckets.
    let e = exposition::parse(&body);
    assert!(!body.contains("_total_total"), "{body}");
    assert!(!body.contains("# EOF"), "no OpenMetrics terminator in the 0.0.4 format");
    for (name, kind) in &e.types {
        if kind == "counter" {
            assert!(name.ends_with("_total"), "counter {name} keeps controller-runtime's name");
        }
    }
    let families: BTreeSet<&str> = e.types.keys().map(String::as_str).collect();
    for (family, ..) in CONTROLLER_FAMILIES {
        assert!(families.contains(family), "{family} missing");
    }
    assert_eq!(families.len(), CONTROLLER_FAMILIES.len() + 2, "plus script and leader: {families:?}");
    server.abort();
}

#[tokio::test]
async fn label_values_are_escaped() {
    let (addr, _health, metrics, server) = start().await;
    metrics.applies("we\"ird\\na\nme", 1);
    let body = get(addr, "/metrics").await.body;
    assert!(has_line(&body, r#"ctop_applies_total{controller="we\"ird\\na\nme"} 1"#), "{body}");
    let e = exposition::parse(&body);
    assert_eq!(e.value("ctop_applies_total", &[("controller", "we\"ird\\na\nme")]), Some(1.0));
    server.abort();
}

#[test]
fn the_exposition_reader_rejects_what_a_scraper_would() {
    let ok = "# HELP a_total A.\n# TYPE a_total counter\na_total{x=\"1\"} 2\n";
    exposition::parse(ok);
    let histogram = |inf: u32| {
        format!(
            "# TYPE h histogram\nh_bucket{{le=\"1\"}} 2\nh_bucket{{le=\"+Inf\"}} {inf}\nh_sum 1.5\nh_count 2\n"
        )
    };
    exposition::parse(&histogram(2));
    for bad in [
        "a_total 1\n".to_owned(),                                              // no TYPE
        "# TYPE a counter\na{x=\"\\q\"} 1\n".to_owned(),                       // bad escape
        "# TYPE a counter\na{x=\"1} 1\n".to_owned(),                           // unterminated
        "# TYPE a gauge\na one\n".to_owned(),                                  // value
        "# TYPE a gauge\n# TYPE a gauge\na 1\n".to_owned(),                    // TYPE twice
        "# TYPE a gauge\n# TYPE b gauge\na 1\nb 1\na{x=\"2\"} 1\n".to_owned(), // not contiguous
        "# TYPE a gauge\na 1\na 2\n".to_owned(),                               // series twice
        "# TYPE a gauge\na 1\n# EOF\n".to_owned(),                             // OpenMetrics only
        histogram(1),                                                          // +Inf below a bucket
    ] {
        let caught = std::panic::catch_unwind(|| exposition::parse(&bad));
        assert!(caught.is_err(), "accepted {bad:?}");
    }
}

/// A strict reader of the Prometheus text format 0.0.4, enough to reject what a scraper
/// would: it panics with the offending line.
mod exposition {
    use super::{BTreeMap, BTreeSet};

    /// A series' labels, in the order written.
    pub type Labels = Vec<(String, String)>;

    /// One sample line.
    #[derive(Debug)]
    pub struct Sample {
        pub name: String,
        pub labels: Labels,
        pub value: f64,
    }

    impl Sample {
        pub fn label(&self, key: &str) -> Option<&str> {
            self.labels.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
        }
    }

    /// A parsed exposition.
    #[derive(Debug, Default)]
    pub struct Exposition {
        /// Family name to its `# TYPE`.
        pub types: BTreeMap<String, String>,
        pub samples: Vec<Sample>,
    }

    impl Exposition {
        /// The value of the series `name` with exactly `labels` (in any order).
        pub fn value(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
            let want: BTreeSet<(&str, &str)> = labels.iter().copied().collect();
            self.samples
                .iter()
                .find(|s| {
                    s.name == name
                        && s.labels.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect::<BTreeSet<_>>()
                            == want
                })
                .map(|s| s.value)
        }
    }

    fn is_metric_name(s: &str) -> bool {
        let mut chars = s.chars();
        chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
    }

    fn is_label_name(s: &str) -> bool {
        let mut chars = s.chars();
        chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
    }

    fn parse_value(s: &str) -> Option<f64> {
        match s {
            "+Inf" => Some(f64::INFINITY),
            "-Inf" => Some(f64::NEG_INFINITY),
            "NaN" => Some(f64::NAN),
            _ => s.parse().ok(),
        }
    }

    /// `{k="v",...}` at the start of `s`: the labels and the rest of `s`.
    fn parse_labels(s: &str, line: &str) -> (Labels, String) {
        let mut labels = Vec::new();
        let mut rest = s.strip_prefix('{').unwrap_or_else(|| panic!("labels open with {{: {line}"));
        loop {
            if let Some(after) = rest.strip_prefix('}') {
                return (labels, after.to_owned());
            }
            let (key, after) = rest.split_once("=\"").unwrap_or_else(|| panic!("label key: {line}"));
            assert!(is_label_name(key), "label name {key:?}: {line}");
            let mut value = String::new();
            let mut chars = after.char_indices();
            let end = loop {
                match chars.next() {
                    Some((_, '\\')) => match chars.next() {
                        Some((_, '\\')) => value.push('\\'),
                        Some((_, '"')) => value.push('"'),
                        Some((_, 'n')) => value.push('\n'),
                        other => panic!("bad escape {other:?}: {line}"),
                    },
                    Some((i, '"')) => break i,
                    Some((_, '\n')) | None => panic!("unterminated label value: {line}"),
                    Some((_, c)) => value.push(c),
                }
            };
            assert!(!labels.iter().any(|(k, _)| k == key), "label {key} twice: {line}");
            labels.push((key.to_owned(), value));
            rest = &after[end + 1..];
            if let Some(after) = rest.strip_prefix(',') {
                rest = after;
            } else {
                assert!(rest.starts_with('}'), "labels close with }}: {line}");
            }
        }
    }

    /// The family a sample belongs to, given the family's type.
    fn family_of<'a>(name: &'a str, types: &BTreeMap<String, String>) -> &'a str {
        for suffix in ["_bucket", "_sum", "_count"] {
            if let Some(base) = name.strip_suffix(suffix)
                && types.get(base).is_some_and(|t| t == "histogram")
            {
                return base;
            }
        }
        name
    }

    /// Parse `body`, panicking on anything a Prometheus scraper would reject.
    pub fn parse(body: &str) -> Exposition {
        assert!(body.is_empty() || body.ends_with('\n'), "ends with a newline");
        let mut e = Exposition::default();
        let mut helps = BTreeSet::new();
        let mut done = BTreeSet::new(); // families whose samples are over
        let mut current: Option<String> = None;
        let mut series = BTreeSet::new();
        for line in body.lines() {
            if let Some(comment) = line.strip_prefix("# ") {
                let mut parts = comment.splitn(3, ' ');
                let (keyword, name) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
                assert!(is_metric_name(name), "metric name {name:?}: {line}");
                match keyword {
                    "HELP" => {
                        let text = parts.next().unwrap_or("");
                        // Only `\\` and `\n` are escapes in HELP.
                        let rest = text.replace("\\\\", "").replace("\\n", "");
                        assert!(!rest.contains('\\'), "HELP escapes: {line}");
                        assert!(helps.insert(name.to_owned()), "HELP twice: {line}");
                    }
                    "TYPE" => {
                        let kind = parts.next().unwrap_or("");
                        assert!(
                            ["counter", "gauge", "histogram", "summary", "untyped"].contains(&kind),
                            "type {kind:?}: {line}"
                        );
                        assert!(!e.types.contains_key(name), "TYPE twice: {line}");
                        e.types.insert(name.to_owned(), kind.to_owned());
                    }
                    _ => panic!("unexpected comment: {line}"),
                }
                continue;
            }
            assert!(!line.starts_with('#'), "comment without a space: {line}");
            let name_end = line.find(['{', ' ']).unwrap_or_else(|| panic!("no value: {line}"));
            let name = &line[..name_end];
            assert!(is_metric_name(name), "metric name {name:?}: {line}");
            let (labels, rest) = if line[name_end..].starts_with('{') {
                parse_labels(&line[name_end..], line)
            } else {
                (Vec::new(), line[name_end..].to_owned())
            };
            let mut fields =
                rest.strip_prefix(' ').unwrap_or_else(|| panic!("space before the value: {line}")).split(' ');
            let value = fields.next().and_then(parse_value).unwrap_or_else(|| panic!("value: {line}"));
            if let Some(ts) = fields.next() {
                assert!(ts.parse::<i64>().is_ok(), "timestamp: {line}");
            }
            assert!(fields.next().is_none(), "trailing fields: {line}");

            let family = family_of(name, &e.types).to_owned();
            let kind = e.types.get(&family).unwrap_or_else(|| panic!("sample before its TYPE: {line}"));
            assert!(kind != "histogram" || name != family, "histogram sample without suffix: {line}");
            if current.as_deref() != Some(family.as_str()) {
                assert!(done.insert(family.clone()), "family {family} is not contiguous: {line}");
                current = Some(family.clone());
            }
            if kind == "counter" {
                assert!(value >= 0.0, "negative counter: {line}");
            }
            if name.ends_with("_bucket") && kind == "histogram" {
                assert!(labels.iter().any(|(k, _)| k == "le"), "bucket without le: {line}");
            }
            let mut key: Vec<_> = labels.clone();
            key.sort();
            assert!(series.insert((name.to_owned(), key)), "series twice: {line}");
            e.samples.push(Sample { name: name.to_owned(), labels, value });
        }
        check_histograms(&e);
        e
    }

    /// Buckets rise with `le`, and `+Inf` equals `_count`.
    fn check_histograms(e: &Exposition) {
        for (family, _) in e.types.iter().filter(|(_, t)| *t == "histogram") {
            let bucket = format!("{family}_bucket");
            let mut by_series: BTreeMap<Labels, Vec<(f64, f64)>> = BTreeMap::new();
            for s in e.samples.iter().filter(|s| s.name == bucket) {
                let rest: Vec<_> = s.labels.iter().filter(|(k, _)| k != "le").cloned().collect();
                let le = s.label("le").and_then(parse_value).unwrap_or_else(|| panic!("le of {s:?}"));
                by_series.entry(rest).or_default().push((le, s.value));
            }
            for (labels, mut buckets) in by_series {
                buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
                assert!(buckets.windows(2).all(|w| w[0].1 <= w[1].1), "{family}{labels:?} not cumulative");
                let last = buckets.last().copied().unwrap_or_default();
                assert_eq!(last.0, f64::INFINITY, "{family}{labels:?} has a +Inf bucket");
                let pairs: Vec<(&str, &str)> = labels.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
                assert_eq!(e.value(&format!("{family}_count"), &pairs), Some(last.1), "{family}{labels:?}");
                assert!(e.value(&format!("{family}_sum"), &pairs).is_some(), "{family}{labels:?} _sum");
            }
        }
    }
}

//! The health server over real HTTP on 127.0.0.1: `/readyz` follows cache sync, `/status`
//! keeps the newest 10 errors, `/metrics` uses controller-runtime's names and labels.

use std::net::SocketAddr;
use std::time::Duration;

use ctop_runtime::health::{
    Health, MAX_ERRORS, METRICS_CONTENT_TYPE, Metrics, RECONCILE_TIME_BUCKETS, ReconcileResult,
    WORKQUEUE_BUCKETS, serve,
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
    health.record_success("apps");
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
    metrics.applies("apps", 3);
    metrics.applies_skipped("apps", 2);
    metrics.prunes("apps", 1);

    let reply = get(addr, "/metrics").await;
    assert_eq!(reply.status, 200);
    assert!(reply.headers.contains(&format!("content-type: {METRICS_CONTENT_TYPE}")), "{}", reply.headers);
    let body = reply.body;
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
        r#"workqueue_queue_duration_seconds_bucket{name="apps",le="0.00001"} 1"#,
        r#"workqueue_queue_duration_seconds_count{name="apps"} 1"#,
        "# TYPE workqueue_work_duration_seconds histogram",
        r#"workqueue_work_duration_seconds_bucket{name="apps",le="0.001"} 0"#,
        r#"workqueue_work_duration_seconds_bucket{name="apps",le="0.01"} 1"#,
        "# TYPE ctop_script_duration_seconds histogram",
        r#"ctop_script_duration_seconds_bucket{controller="apps",handler="reconcile",le="0.001"} 1"#,
        r#"ctop_script_duration_seconds_count{controller="apps",handler="reconcile"} 1"#,
        r#"ctop_applies_total{controller="apps"} 3"#,
        r#"ctop_applies_skipped_total{controller="apps"} 2"#,
        r#"ctop_prunes_total{controller="apps"} 1"#,
    ] {
        assert!(has_line(&body, line), "missing {line:?} in\n{body}");
    }

    // Every bucket of controller-runtime's layouts is exposed, plus +Inf.
    let reconcile_buckets =
        body.lines().filter(|l| l.starts_with("controller_runtime_reconcile_time_seconds_bucket{")).count();
    assert_eq!(reconcile_buckets, RECONCILE_TIME_BUCKETS.len() + 1);
    assert_eq!(RECONCILE_TIME_BUCKETS.len(), 40);
    let work_buckets =
        body.lines().filter(|l| l.starts_with("workqueue_work_duration_seconds_bucket{")).count();
    assert_eq!(work_buckets, WORKQUEUE_BUCKETS.len() + 1);

    // Every sample line is `name{labels} value` with a parseable value.
    for l in body.lines().filter(|l| !l.starts_with('#')) {
        let value = l.rsplit(' ').next().expect("value");
        assert!(value.parse::<f64>().is_ok() || value == "+Inf", "bad sample {l}");
    }
    server.abort();
}

#[tokio::test]
async fn label_values_are_escaped() {
    let (addr, _health, metrics, server) = start().await;
    metrics.applies("we\"ird\\na\nme", 1);
    let body = get(addr, "/metrics").await.body;
    assert!(has_line(&body, r#"ctop_applies_total{controller="we\"ird\\na\nme"} 1"#), "{body}");
    server.abort();
}

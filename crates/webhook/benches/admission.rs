//! Admission throughput and latency over TLS on loopback.
//!
//! `cargo bench -p ctop-webhook --bench admission` starts the server in process with a Rust
//! handler (the server's own cost: TLS, HTTP, review parsing, JSONPatch) and drives it with
//! `CTOP_BENCH_CONNECTIONS` keep-alive connections (default 8) sending `CTOP_BENCH_REQUESTS`
//! reviews in total (default 20000), first to the validate route, then to the mutate route.
//!
//! To measure a real script instead (QuickJS included), start `ctop webhook serve DIR
//! --port 9443 --ca-bundle-out /tmp/ca.pem` and set `CTOP_BENCH_URL=https://127.0.0.1:9443`,
//! `CTOP_BENCH_CA=/tmp/ca.pem` and `CTOP_BENCH_PATH=/validate/<group>/<version>/<plural>`
//! (the object sent is a `demo.ctop.dev/v1` Widget with `spec.color: blue`).
#![allow(clippy::print_stdout, clippy::unwrap_used, missing_docs)]

#[path = "../tests/support/mod.rs"]
mod support;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use ctop_core::AdmissionOutcome;
use ctop_webhook::{AdmissionCall, FailurePolicy, HandlerKind, HookError, ServerConfig, review_for};
use serde_json::json;

fn handler(call: &AdmissionCall<'_>) -> Result<AdmissionOutcome, HookError> {
    Ok(match call.handler {
        HandlerKind::Validate if call.object["spec"]["color"] == "red" => support::denied("no red"),
        HandlerKind::Validate => support::allowed(),
        HandlerKind::Mutate => {
            let mut o = call.object.clone();
            o["metadata"]["labels"] = json!({"team": "core"});
            support::mutated(o)
        }
    })
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

struct Report {
    requests: usize,
    took: Duration,
    latencies: Vec<Duration>,
}

async fn drive(addr: SocketAddr, ca: &str, path: &str, connections: usize, requests: usize) -> Report {
    let config = support::client_config(ca);
    let per = requests.div_ceil(connections);
    let body = serde_json::to_vec(&review_for("bench", "CREATE", &support::widget("blue"), None)).unwrap();
    // One warm-up request per connection: handshakes are not what is measured.
    let mut senders = Vec::new();
    for _ in 0..connections {
        let mut s = support::connect(addr, config.clone()).await.unwrap();
        let (status, _) = support::post(&mut s, path, body.clone()).await;
        assert_eq!(status, 200, "the warm-up request failed");
        senders.push(s);
    }
    let started = Instant::now();
    let tasks: Vec<_> = senders
        .into_iter()
        .map(|mut s| {
            let (body, path) = (body.clone(), path.to_owned());
            tokio::spawn(async move {
                let mut lat = Vec::with_capacity(per);
                for _ in 0..per {
                    let t = Instant::now();
                    let (status, _) = support::post(&mut s, &path, body.clone()).await;
                    assert_eq!(status, 200);
                    lat.push(t.elapsed());
                }
                lat
            })
        })
        .collect();
    let mut latencies = Vec::new();
    for t in tasks {
        latencies.extend(t.await.unwrap());
    }
    Report { requests: latencies.len(), took: started.elapsed(), latencies }
}

fn print(name: &str, mut r: Report, connections: usize) {
    r.latencies.sort();
    let pct = |p: f64| {
        let i = ((r.latencies.len() as f64 * p).ceil() as usize).clamp(1, r.latencies.len()) - 1;
        r.latencies[i]
    };
    println!(
        "{name:<28} {:>7} requests, {connections} connections: {:>9.0} req/s  p50 {:>8.3} ms  p99 {:>8.3} ms  max {:>8.3} ms",
        r.requests,
        r.requests as f64 / r.took.as_secs_f64(),
        pct(0.50).as_secs_f64() * 1e3,
        pct(0.99).as_secs_f64() * 1e3,
        pct(1.0).as_secs_f64() * 1e3,
    );
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let connections = env_usize("CTOP_BENCH_CONNECTIONS", 8).max(1);
        let requests = env_usize("CTOP_BENCH_REQUESTS", 20_000).max(connections);
        if let Ok(url) = std::env::var("CTOP_BENCH_URL") {
            let addr: SocketAddr = url.trim_start_matches("https://").trim_end_matches('/').parse().unwrap();
            let ca = std::fs::read_to_string(std::env::var("CTOP_BENCH_CA").expect("CTOP_BENCH_CA")).unwrap();
            let path = std::env::var("CTOP_BENCH_PATH").expect("CTOP_BENCH_PATH");
            let r = drive(addr, &ca, &path, connections, requests).await;
            print(&path, r, connections);
            return;
        }
        let config = ServerConfig {
            concurrency: connections,
            failure_policy: FailurePolicy::Fail,
            ..ServerConfig::default()
        };
        let (addr, ca) = support::start(handler, &support::widget_routes(), config).await;
        for path in ["/validate/demo.ctop.dev/v1/widgets", "/mutate/demo.ctop.dev/v1/widgets"] {
            let r = drive(addr, &ca, path, connections, requests).await;
            print(path.split('/').nth(1).unwrap_or(path), r, connections);
        }
    });
}

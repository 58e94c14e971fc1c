//! Latency of valid reviews while slow clients (a slowloris) hold the server.
//!
//! `cargo bench -p ctop-webhook --bench slowloris` starts the server in process with the
//! default [`ServerConfig`] and [`ConnectionLimits`](ctop_webhook::ConnectionLimits) (1024
//! connections) and measures reviews in three situations, each against a fresh server:
//! - no slow clients (the baseline);
//! - `CTOP_BENCH_SLOW` (default 1100) clients connected over TLS, each sending one byte of a
//!   request head that never ends every 5 s;
//! - as many clients connected over TCP that send the first byte of a TLS handshake and stop.
//!
//! Slow clients open a new connection as soon as the server closes theirs, so that there are
//! always that many open or opening: the attacker the server has to live with, not one that
//! goes away once shed. Reviews are measured two ways: `CTOP_BENCH_REVIEWS` (default 2000)
//! one after the other on a keep-alive connection opened before the slow clients, and
//! `CTOP_BENCH_NEW_CONNECTIONS` (default 100) each on a new connection (handshake included),
//! which is what an API server does once its idle connections are gone.
//!
//! Slow clients, valid client and server share this process and its cores; the process needs
//! about two file descriptors per slow client (`ulimit -n 4096` is plenty for 1100).
#![allow(clippy::print_stdout, clippy::unwrap_used, missing_docs)]

#[path = "../tests/support/mod.rs"]
mod support;

use std::time::{Duration, Instant};

use ctop_core::AdmissionOutcome;
use ctop_webhook::{AdmissionCall, HookError, ServerConfig, review_for};
use support::{Slow, SlowClients};

const VALIDATE: &str = "/validate/demo.ctop.dev/v1/widgets";

fn handler(call: &AdmissionCall<'_>) -> Result<AdmissionOutcome, HookError> {
    Ok(if call.object["spec"]["color"] == "red" { support::denied("no red") } else { support::allowed() })
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

struct Row {
    slow: String,
    client: &'static str,
    latencies: Vec<Duration>,
    shed: Option<usize>,
}

fn pct(sorted: &[Duration], p: f64) -> f64 {
    let i = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i].as_secs_f64() * 1e3
}

async fn scenario(slow: Option<(usize, Slow)>, reviews: usize, fresh: usize, rows: &mut Vec<Row>) {
    let (addr, ca) = support::start(handler, &support::widget_routes(), ServerConfig::default()).await;
    let tls = support::client_config(&ca);
    let body = serde_json::to_vec(&review_for("bench", "CREATE", &support::widget("blue"), None)).unwrap();
    let mut kept = support::connect(addr, tls.clone()).await.unwrap();
    assert_eq!(support::post(&mut kept, VALIDATE, body.clone()).await.0, 200);

    let name = match slow {
        None => "none".to_owned(),
        Some((n, Slow::Trickle(every))) => format!("{n} TLS, 1 head byte / {}s", every.as_secs()),
        Some((n, Slow::Silent)) => format!("{n} TCP, 1st TLS byte only"),
    };
    let clients = slow.map(|(n, how)| {
        let clients = SlowClients::spawn(addr, tls.clone(), n, how);
        (n, clients)
    });
    if let Some((n, clients)) = &clients {
        let n = *n;
        let started = Instant::now();
        // Full, and shedding: every slow client got in once (TLS), or all are connected and
        // those beyond the slots have been shed once (TCP).
        let full = clients
            .wait_for(|c| match slow {
                Some((_, Slow::Silent)) => c.open == n && c.closed >= n.saturating_sub(1024),
                _ => c.ever == n,
            })
            .await;
        println!("# {name}: server full after {:.1} s ({full:?})", started.elapsed().as_secs_f64());
    }

    let shed_before = clients.as_ref().map(|(_, c)| c.counts().closed);
    let mut latencies = Vec::with_capacity(reviews);
    for _ in 0..reviews {
        let t = Instant::now();
        let (status, _) = support::post(&mut kept, VALIDATE, body.clone()).await;
        assert_eq!(status, 200);
        latencies.push(t.elapsed());
    }
    let shed = clients.as_ref().map(|(_, c)| c.counts().closed);
    rows.push(Row {
        slow: name.clone(),
        client: "keep-alive",
        latencies,
        shed: shed.zip(shed_before).map(|(a, b)| a - b),
    });

    let mut latencies = Vec::with_capacity(fresh);
    for _ in 0..fresh {
        let t = Instant::now();
        let mut c = support::connect(addr, tls.clone()).await.unwrap();
        let (status, _) = support::post(&mut c, VALIDATE, body.clone()).await;
        assert_eq!(status, 200);
        latencies.push(t.elapsed());
    }
    let shed_after = clients.as_ref().map(|(_, c)| c.counts().closed);
    rows.push(Row {
        slow: name,
        client: "new connection",
        latencies,
        shed: shed_after.zip(shed).map(|(a, b)| a - b),
    });
    if let Some((_, clients)) = &clients {
        let open = clients.counts().open;
        assert!(open > 0, "the slow clients no longer hold connections");
    }
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let n = env_usize("CTOP_BENCH_SLOW", 1100);
        let reviews = env_usize("CTOP_BENCH_REVIEWS", 2000).max(1);
        let fresh = env_usize("CTOP_BENCH_NEW_CONNECTIONS", 100).max(1);
        let mut rows = Vec::new();
        scenario(None, reviews, fresh, &mut rows).await;
        scenario(Some((n, Slow::Trickle(Duration::from_secs(5)))), reviews, fresh, &mut rows).await;
        scenario(Some((n, Slow::Silent)), reviews, fresh, &mut rows).await;

        println!();
        println!(
            "| slow clients | valid client | reviews | p50 ms | p99 ms | max ms | slow conns shed meanwhile |"
        );
        println!("|---|---|---|---|---|---|---|");
        for mut r in rows {
            r.latencies.sort();
            println!(
                "| {} | {} | {} | {:.2} | {:.2} | {:.2} | {} |",
                r.slow,
                r.client,
                r.latencies.len(),
                pct(&r.latencies, 0.50),
                pct(&r.latencies, 0.99),
                pct(&r.latencies, 1.0),
                r.shed.map_or_else(|| "-".to_owned(), |s| s.to_string()),
            );
        }
    });
}

//! kubesim's own throughput and latency, so that later benchmarks can show the operator,
//! not the API server, is what they measure.
//!
//! Run: `cargo bench -p ctop-kubesim --bench kubesim` (add `-- --quick` for a short run).
//! Prints a Markdown table:
//! - server-side applies/s that create objects, and that change nothing (no-op applies),
//!   with 1 and 16 concurrent clients;
//! - watch fan-out: the delay from a write's response to its event at each of N watchers
//!   (p50/p99), for N = 1, 10 and 100.
//!
//! Each figure is measured twice in one run, side by side: with the workload controllers
//! off and on (they see every write, so they must not slow the API down).
//!
//! `-- --soak` creates 1,000 Deployments of 10 replicas on a kubesim running workloads and
//! prints the time until all 10,000 Pods are available and the resident set then and 30 s
//! later (`-- --soak --quick`: 100 Deployments).
//!
//! `-- --history-rss` instead measures memory alone (run it on its own, so that nothing
//! else raised the peak): one ConfigMap of ~100 KB is updated 10,000 times with small
//! merge patches, and the process's peak and current resident set (`VmHWM`, `VmRSS`
//! from `/proc/self/status`, Linux only) are printed. That is what the watch history
//! costs when one large object changes often.
#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use ctop_kubesim::{Config, KubeSim};
use futures::{StreamExt as _, TryStreamExt as _};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Client;
use kube::api::{Api, Patch, PatchParams, WatchEvent, WatchParams};
use serde_json::json;

async fn client(sim: &KubeSim) -> Client {
    let kc = kube::config::Kubeconfig::from_yaml(&sim.kubeconfig()).unwrap();
    let cfg = kube::Config::from_custom_kubeconfig(kc, &Default::default()).await.unwrap();
    Client::try_from(cfg).unwrap()
}

fn cm(name: &str, value: u64) -> serde_json::Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": {"bench": "yes"}},
           "data": {"value": value.to_string(), "payload": "x".repeat(256)}})
}

/// `total` applies spread over `clients` concurrent tasks; returns applies/s.
async fn applies(api: &Api<ConfigMap>, total: usize, clients: usize, prefix: &str, value: u64) -> f64 {
    let start = Instant::now();
    let per = total / clients;
    let mut tasks = Vec::new();
    for c in 0..clients {
        let api = api.clone();
        let prefix = prefix.to_owned();
        tasks.push(tokio::spawn(async move {
            let pp = PatchParams::apply("bench");
            for i in 0..per {
                let name = format!("{prefix}-{c}-{i}");
                api.patch(&name, &pp, &Patch::Apply(cm(&name, value))).await.unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    (per * clients) as f64 / start.elapsed().as_secs_f64()
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx]
}

/// Returns (p50, p99, deliveries) of write-response → event delays across `watchers`.
async fn fanout(client: &Client, watchers: usize, writes: usize) -> (Duration, Duration, usize) {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let base = Instant::now();
    let sent: Arc<parking_lot::Mutex<Vec<Option<Duration>>>> =
        Arc::new(parking_lot::Mutex::new(vec![None; writes]));
    let delays = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let rv = api.list_metadata(&Default::default()).await.unwrap().metadata.resource_version.unwrap();
    let mut tasks = Vec::new();
    let ready = Arc::new(tokio::sync::Barrier::new(watchers + 1));
    for _ in 0..watchers {
        let api = api.clone();
        let sent = sent.clone();
        let delays = delays.clone();
        let rv = rv.clone();
        let ready = ready.clone();
        tasks.push(tokio::spawn(async move {
            let mut stream =
                api.watch(&WatchParams::default().labels("fanout=yes"), &rv).await.unwrap().boxed();
            ready.wait().await;
            let mut seen = 0;
            while seen < writes {
                let Some(WatchEvent::Added(o)) = stream.try_next().await.unwrap() else { continue };
                let at = base.elapsed();
                let i: usize = o.data.unwrap()["i"].parse().unwrap();
                // The write's response may not have been recorded yet: wait for it.
                let t0 = loop {
                    if let Some(t) = sent.lock()[i] {
                        break t;
                    }
                    tokio::task::yield_now().await;
                };
                delays.lock().push(at.saturating_sub(t0));
                seen += 1;
            }
        }));
    }
    ready.wait().await;
    let pp = PatchParams::apply("bench");
    for i in 0..writes {
        let name = format!("fan-{watchers}-{i}");
        let obj = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": {"fanout": "yes"}}, "data": {"i": i.to_string()}});
        let before = base.elapsed();
        api.patch(&name, &pp, &Patch::Apply(obj)).await.unwrap();
        sent.lock()[i] = Some(before);
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    for t in tasks {
        t.await.unwrap();
    }
    let cleanup = Api::<ConfigMap>::namespaced(client.clone(), "default");
    cleanup
        .delete_collection(&Default::default(), &kube::api::ListParams::default().labels("fanout=yes"))
        .await
        .unwrap();
    let mut d = delays.lock().clone();
    d.sort();
    (percentile(&d, 0.5), percentile(&d, 0.99), d.len())
}

/// A `/proc/self/status` figure in MiB (`None` off Linux).
fn proc_status_mib(field: &str) -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

/// One ~100 KB ConfigMap (100 keys of 1 KiB) updated `updates` times; prints peak RSS.
async fn history_rss(updates: usize) {
    let sim = KubeSim::start(Config::default()).await.unwrap();
    let client = client(&sim).await;
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    let data: serde_json::Map<String, serde_json::Value> =
        (0..100).map(|k| (format!("k{k:03}"), json!("x".repeat(1024)))).collect();
    let big = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "big"}, "data": data});
    let size = serde_json::to_vec(&big).unwrap().len();
    api.create(&Default::default(), &serde_json::from_value(big).unwrap()).await.unwrap();
    let before = proc_status_mib("VmHWM:").unwrap_or(0.0);
    let start = Instant::now();
    for i in 0..updates {
        let patch = json!({"data": {"i": i.to_string()}});
        api.patch("big", &PatchParams::default(), &Patch::Merge(patch)).await.unwrap();
    }
    let elapsed = start.elapsed();
    println!("| kubesim figure | value |");
    println!("|---|---|");
    println!("| object size (JSON) | {size} bytes |");
    println!("| updates (merge patches) | {updates} in {:.1} s |", elapsed.as_secs_f64());
    println!("| peak RSS before the updates | {before:.0} MiB |");
    println!("| peak RSS after the updates | {:.0} MiB |", proc_status_mib("VmHWM:").unwrap_or(0.0));
    println!("| RSS at the end | {:.0} MiB |", proc_status_mib("VmRSS:").unwrap_or(0.0));
    let (kept, bytes) = sim.history_usage();
    println!("| watch history kept | {kept} changes, {:.1} MiB |", bytes as f64 / (1024.0 * 1024.0));
}

/// The throughput and fan-out figures of one kubesim, with or without the workload
/// controllers (which see every write).
async fn figures(workloads: bool, scale: usize) -> Vec<(String, String)> {
    let workloads = workloads.then(ctop_kubesim::WorkloadConfig::default);
    let sim =
        KubeSim::start(Config { watch_history: 100_000, workloads, ..Config::default() }).await.unwrap();
    let client = client(&sim).await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    // Warm up connections and code paths.
    applies(&api, 200, 4, "warm", 0).await;
    let mut rows = Vec::new();
    for clients in [1, 16] {
        let n = 1000 * scale;
        let created = applies(&api, n, clients, &format!("c{clients}"), 1).await;
        let noop = applies(&api, n, clients, &format!("c{clients}"), 1).await;
        let changed = applies(&api, n, clients, &format!("c{clients}"), 2).await;
        rows.push((format!("SSA creates/s, {clients} client(s), {n} objects"), format!("{created:.0}")));
        rows.push((format!("SSA updates/s (value changed), {clients} client(s)"), format!("{changed:.0}")));
        rows.push((format!("SSA no-op applies/s, {clients} client(s)"), format!("{noop:.0}")));
    }
    for watchers in [1, 10, 100] {
        let (p50, p99, n) = fanout(&client, watchers, 100 * scale).await;
        rows.push((
            format!("watch fan-out to {watchers} watcher(s), write response → event ({n} deliveries)"),
            format!("p50 {:.0} µs, p99 {:.0} µs", p50.as_secs_f64() * 1e6, p99.as_secs_f64() * 1e6),
        ));
    }
    let objects = Api::<ConfigMap>::all(client.clone()).list(&Default::default()).await.unwrap().items.len();
    rows.push(("ConfigMaps stored at the end".to_owned(), objects.to_string()));
    rows
}

/// `deployments` Deployments of `replicas` Pods each on a kubesim running workloads: the time
/// until every Pod is available, and the resident set then and `settle` later (it should
/// stay flat once nothing changes).
async fn soak(deployments: usize, replicas: usize, settle: Duration) {
    use k8s_openapi::api::apps::v1::Deployment;
    let workloads = ctop_kubesim::WorkloadConfig {
        nodes: 100,
        pod_start: Duration::from_millis(10),
        ..ctop_kubesim::WorkloadConfig::default()
    };
    let sim =
        KubeSim::start(Config { watch_history: 10_000, workloads: Some(workloads), ..Config::default() })
            .await
            .unwrap();
    let client = client(&sim).await;
    let api: Api<Deployment> = Api::namespaced(client, "default");
    // Read over HTTP like any client; the list is small next to what the server holds.
    let available = async || -> usize {
        let list = api.list(&Default::default()).await.unwrap();
        list.items.iter().filter_map(|d| d.status.as_ref()?.available_replicas).map(|n| n as usize).sum()
    };
    let before = proc_status_mib("VmRSS:").unwrap_or(0.0);
    let start = Instant::now();
    let mut tasks = Vec::new();
    for t in 0..16 {
        let api = api.clone();
        tasks.push(tokio::spawn(async move {
            for i in (t..deployments).step_by(16) {
                let name = format!("d{i}");
                let d = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
                    "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                        "template": {"metadata": {"labels": {"app": name}},
                            "spec": {"containers": [{"name": "c", "image": "nginx:1"}]}}}});
                api.create(&Default::default(), &serde_json::from_value(d).unwrap()).await.unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let want = deployments * replicas;
    loop {
        let now = available().await;
        if now >= want {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(900),
            "{now} of {want} Pods available after 15 minutes"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let converged = start.elapsed();
    let at_converge = proc_status_mib("VmRSS:").unwrap_or(0.0);
    tokio::time::sleep(settle).await;
    let after = proc_status_mib("VmRSS:").unwrap_or(0.0);
    println!("| kubesim soak figure | value |");
    println!("|---|---|");
    println!("| Deployments × replicas | {deployments} × {replicas} = {want} Pods |");
    println!("| create → every Pod available | {:.1} s |", converged.as_secs_f64());
    println!("| RSS before | {before:.0} MiB |");
    println!("| RSS when converged | {at_converge:.0} MiB |");
    println!("| RSS {:.0} s later | {after:.0} MiB |", settle.as_secs_f64());
    println!("| peak RSS | {:.0} MiB |", proc_status_mib("VmHWM:").unwrap_or(0.0));
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    if std::env::args().any(|a| a == "--history-rss") {
        history_rss(10_000).await;
        return;
    }
    if std::env::args().any(|a| a == "--soak") {
        let quick = std::env::args().any(|a| a == "--quick");
        let (deployments, settle) = if quick { (100, 5) } else { (1000, 30) };
        soak(deployments, 10, Duration::from_secs(settle)).await;
        return;
    }
    let quick = std::env::args().any(|a| a == "--quick");
    let scale = if quick { 1 } else { 5 };
    // One after the other in this run, so that the two columns compare.
    let off = figures(false, scale).await;
    let on = figures(true, scale).await;
    println!("| kubesim figure | workload controllers off | on |");
    println!("|---|---|---|");
    for ((name, a), (_, b)) in off.iter().zip(&on) {
        println!("| {name} | {a} | {b} |");
    }
}

//! Memory benchmark (dhat) of what ctop keeps per operator and per object: the VM pool and
//! the allocations of one reconcile as the cache grows (`observed` is handed to every
//! reconcile). Printed as Markdown tables. The controller's caches have their own:
//! `cargo bench -p ctop-controller --bench cache`.
//!
//! `cargo bench -p ctop-runtime --bench memory`. dhat counts the Rust heap only; QuickJS
//! allocates through the C allocator, so the VM pool also gets a resident-set delta from
//! `/proc/self/status` (noisy, but it sees both).

#![allow(clippy::print_stdout, clippy::unwrap_used)]

use std::path::Path;

use ctop_runtime::{Limits, Script};
use serde_json::json;

#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

fn heap() -> dhat::HeapStats {
    dhat::HeapStats::get()
}

fn rss_kb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0)
}

#[path = "../../../bench/fixtures/deployment.rs"]
#[allow(dead_code)]
mod fixture;
use fixture::deployment;

fn main() {
    let _profiler = dhat::Profiler::builder().testing().build();
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/webapp");

    println!("## VM pool (examples/webapp)\n");
    println!("| workers | Rust heap held (KiB) | RSS delta (KiB) |");
    println!("|---|---|---|");
    let mut scripts = Vec::new();
    for workers in [1, 4] {
        let (h0, r0) = (heap().curr_bytes, rss_kb());
        let script = Script::from_dir(&example, "operator.ct", workers, Limits::default()).unwrap();
        println!("| {workers} | {:.0} | {:.0} |", (heap().curr_bytes - h0) as f64 / 1024.0, rss_kb() - r0);
        scripts.push(script);
    }
    let script = scripts.pop().unwrap();
    drop(scripts);

    println!("\n## One warm reconcile as `observed` grows (every cached object of the namespace)\n");
    println!(
        "| cached children | input JSON (KiB) | Rust bytes allocated per reconcile (KiB) | µs per reconcile (under dhat) |"
    );
    println!("|---|---|---|---|");
    let cr = json!({"apiVersion": "apps.example.com/v1", "kind": "WebApp",
        "metadata": {"name": "app-00000", "namespace": "default", "uid": "u-0", "generation": 1},
        "spec": {"image": "nginx:1.27", "replicas": 2, "port": 80}});
    for n in [0, 100, 1000] {
        let observed = json!({"apps/v1/Deployment": (0..n).map(deployment).collect::<Vec<_>>(),
            "v1/Service": [], "v1/Secret": []});
        let input = json!({"object": cr, "observed": observed, "env": {}, "values": {}}).to_string();
        script.dispatch("reconcile", 0, &input).unwrap();
        let rounds = 20;
        let total0 = heap().total_bytes;
        let t = std::time::Instant::now();
        for _ in 0..rounds {
            script.dispatch("reconcile", 0, &input).unwrap();
        }
        let us = t.elapsed().as_secs_f64() * 1e6 / rounds as f64;
        let per = (heap().total_bytes - total0) as f64 / rounds as f64 / 1024.0;
        println!("| {n} | {:.0} | {per:.0} | {us:.0} |", input.len() as f64 / 1024.0);
    }
}

//! `ctop-bench-declarative`: the cost of a two-source declarative join (`ctop-declarative`,
//! Δ-controller's pipeline language), with the equality index and without it.
//!
//! ```sh
//! cargo build --release -p ctop-bench --bin ctop-bench-declarative
//! target/release/ctop-bench-declarative --sizes 1000,10000
//! ```
//!
//! The pipeline joins N Pods to N Services (Pod `i` carries the label `svc: svc-i`) and
//! projects each pair into a view object. It is run twice per size: **indexed**, the join
//! condition an `@eq` of two plain paths, which the pipeline serves from a hash index on
//! each side; **scan**, the same condition with one side wrapped in `@concat` (the same
//! value for a string), which no index serves, so every event is joined against every
//! object of the other source, as Δ-controller's nested loop joins every event.
//!
//! Each (mode, size) runs in a child process of its own, so that its peak RSS (`VmHWM`)
//! is its own. The child feeds the Services, then the Pods (the load, 2N `Added` events),
//! then updates that change the view (alternately a Pod's `status.podIP` and a Service's
//! `spec.clusterIP`), and reports wall time and the CPU time of its thread
//! (`/proc/thread-self/schedstat`) for each phase.

#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::process::Command;
use std::time::Instant;

use anyhow::{Context as _, bail};
use ctop_declarative::{Delta, DeltaType, Pipeline};
use serde_json::{Value, json};

#[derive(Debug, clap::Parser)]
struct Opts {
    /// Objects per source.
    #[arg(long, value_delimiter = ',', default_value = "1000,10000")]
    sizes: Vec<usize>,
    /// Updates timed with the index.
    #[arg(long, default_value_t = 4000)]
    updates: usize,
    /// Updates timed without the index (each costs O(N)).
    #[arg(long, default_value_t = 400)]
    scan_updates: usize,
    /// Internal: run one measurement (`indexed` or `scan`) and print it as JSON.
    #[arg(long, hide = true, num_args = 2, value_names = ["MODE", "N"])]
    child: Option<Vec<String>>,
}

/// The join and the projection; `indexed: false` hides the equality from the index.
fn pipeline_spec(indexed: bool) -> Value {
    let service_name = if indexed {
        json!("$.Service.metadata.name")
    } else {
        json!({"@concat": ["$.Service.metadata.name"]})
    };
    json!([
        {"@join": {"@and": [
            {"@eq": [service_name, "$.Pod.metadata.labels.svc"]},
            {"@eq": ["$.Service.metadata.namespace", "$.Pod.metadata.namespace"]},
        ]}},
        {"@project": {
            "metadata": {"name": "$.Pod.metadata.name", "namespace": "$.Pod.metadata.namespace"},
            "spec": {
                "service": "$.Service.metadata.name",
                "clusterIP": "$.Service.spec.clusterIP",
                "ports": "$.Service.spec.ports",
                "podIP": "$.Pod.status.podIP",
                "node": "$.Pod.spec.nodeName",
            },
        }},
    ])
}

/// An address unique to object `i` and update `round`, so that every update changes the view.
fn ip(i: usize, round: usize) -> String {
    format!("fd00::{round:x}:{i:x}")
}

fn service(i: usize, round: usize) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": format!("svc-{i}"), "namespace": "default", "labels": {"app": format!("app-{i}")}},
        "spec": {
            "clusterIP": ip(i, round),
            "selector": {"app": format!("app-{i}")},
            "ports": [{"name": "http", "port": 80, "protocol": "TCP", "targetPort": 8080}],
            "type": "ClusterIP",
        },
    })
}

fn pod(i: usize, round: usize) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": format!("pod-{i}"), "namespace": "default",
                     "labels": {"app": format!("app-{i}"), "svc": format!("svc-{i}")}},
        "spec": {"nodeName": format!("node-{}", i % 50),
                 "containers": [{"name": "web", "image": "nginx:1.27", "ports": [{"containerPort": 8080}]}]},
        "status": {"phase": "Running", "podIP": ip(i, round)},
    })
}

/// CPU time of this thread so far, in nanoseconds.
fn thread_cpu_ns() -> anyhow::Result<u64> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").context("reading schedstat")?;
    let first = text.split_whitespace().next().context("empty schedstat")?;
    Ok(first.parse()?)
}

/// The peak resident set of this process, in KiB.
fn peak_rss_kib() -> anyhow::Result<u64> {
    let status = std::fs::read_to_string("/proc/self/status").context("reading /proc/self/status")?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).context("no VmHWM")?;
    Ok(line.split_whitespace().nth(1).context("VmHWM has no value")?.parse()?)
}

/// Feeds events and times them: (events, wall seconds, CPU ns, target deltas).
fn timed(
    p: &mut Pipeline,
    events: impl Iterator<Item = (&'static str, Delta)>,
) -> anyhow::Result<(usize, f64, u64, usize)> {
    let (start, cpu0) = (Instant::now(), thread_cpu_ns()?);
    let (mut n, mut outputs) = (0, 0);
    for (source, delta) in events {
        outputs += p.evaluate(source, delta)?.len();
        n += 1;
    }
    Ok((n, start.elapsed().as_secs_f64(), thread_cpu_ns()? - cpu0, outputs))
}

/// One measurement, in this process.
fn child(mode: &str, n: usize, updates: usize) -> anyhow::Result<Value> {
    let indexed = match mode {
        "indexed" => true,
        "scan" => false,
        other => bail!("unknown mode {other:?}"),
    };
    let mut p = Pipeline::new(&pipeline_spec(indexed), &["Pod", "Service"])?
        .with_target("view.example.com/v1", "PodService");
    let added = |object| Delta { kind: DeltaType::Added, object };
    let load =
        (0..n).map(|i| ("Service", added(service(i, 0)))).chain((0..n).map(|i| ("Pod", added(pod(i, 0)))));
    let (load_events, load_secs, load_cpu, load_out) = timed(&mut p, load)?;
    if load_out != n {
        bail!("the load made {load_out} target objects, expected {n}");
    }
    // Spread the updates over the objects; each changes one view object.
    let stride = (n / updates.max(1)).max(1);
    let upd = (0..updates).map(|k| {
        let i = (k * stride) % n;
        let object = if k % 2 == 0 { pod(i, k + 1) } else { service(i, k + 1) };
        (if k % 2 == 0 { "Pod" } else { "Service" }, Delta { kind: DeltaType::Updated, object })
    });
    let (upd_events, upd_secs, upd_cpu, upd_out) = timed(&mut p, upd)?;
    if upd_out != updates {
        bail!("{updates} updates made {upd_out} target deltas, expected one each");
    }
    Ok(json!({
        "mode": mode, "n": n,
        "load_events": load_events, "load_secs": load_secs, "load_cpu_ns": load_cpu,
        "update_events": upd_events, "update_secs": upd_secs, "update_cpu_ns": upd_cpu, "update_outputs": upd_out,
        "peak_rss_kib": peak_rss_kib()?,
    }))
}

fn main() -> anyhow::Result<()> {
    let opts = <Opts as clap::Parser>::parse();
    if let Some(args) = &opts.child {
        let [mode, n] = args.as_slice() else { bail!("--child MODE N") };
        let n: usize = n.parse().context("N")?;
        let updates = if mode == "scan" { opts.scan_updates } else { opts.updates };
        println!("{}", child(mode, n, updates)?);
        return Ok(());
    }
    let exe = std::env::current_exe()?;
    let mut rows = Vec::new();
    for &n in &opts.sizes {
        for mode in ["indexed", "scan"] {
            eprintln!("running {mode} at {n} objects per source ...");
            let out = Command::new(&exe)
                .args(["--child", mode, &n.to_string()])
                .args([
                    "--updates",
                    &opts.updates.to_string(),
                    "--scan-updates",
                    &opts.scan_updates.to_string(),
                ])
                .output()?;
            if !out.status.success() {
                bail!("{mode} at {n}: {}", String::from_utf8_lossy(&out.stderr));
            }
            rows.push(serde_json::from_slice::<Value>(&out.stdout).context("the child's report")?);
        }
    }
    println!(
        "| objects per source | join | load events/s | load CPU µs/event | update events/s | update CPU µs/event | peak RSS MiB |"
    );
    println!("|---:|---|---:|---:|---:|---:|---:|");
    for r in &rows {
        let f = |k: &str| r[k].as_f64().unwrap_or(f64::NAN);
        println!(
            "| {} | {} | {:.0} | {:.1} | {:.0} | {:.1} | {:.1} |",
            r["n"],
            r["mode"].as_str().unwrap_or_default(),
            f("load_events") / f("load_secs"),
            f("load_cpu_ns") / f("load_events") / 1e3,
            f("update_events") / f("update_secs"),
            f("update_cpu_ns") / f("update_events") / 1e3,
            f("peak_rss_kib") / 1024.0,
        );
    }
    println!();
    println!("raw: {}", serde_json::to_string(&rows)?);
    Ok(())
}

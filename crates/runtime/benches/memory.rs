//! Memory benchmark (dhat) of what ctop keeps per operator and per object: the VM pool,
//! the reflector caches the controller fills, and the allocations of one reconcile as the
//! cache grows (`observed` is handed to every reconcile). Printed as Markdown tables.
//!
//! `cargo bench -p ctop-runtime --bench memory`. dhat counts the Rust heap only; QuickJS
//! allocates through the C allocator, so the VM pool also gets a resident-set delta from
//! `/proc/self/status` (noisy, but it sees both).

#![allow(clippy::print_stdout, clippy::unwrap_used)]

use std::path::Path;

use ctop_runtime::{Limits, Script};
use kube::api::DynamicObject;
use kube::runtime::reflector::store::Writer;
use kube::runtime::watcher;
use serde_json::{Value, json};

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

/// A Deployment as the API server returns it to ctop's watch: the webapp example's child,
/// server-filled fields and the managedFields of one server-side apply.
fn deployment(i: usize) -> Value {
    let name = format!("app-{i:05}");
    let labels = json!({"app.kubernetes.io/name": name, "app.kubernetes.io/part-of": "webapp",
        "applyset.kubernetes.io/part-of": "applyset-8d5XO_cKRKzbUPOKQxNgtkOPqozif5L3BEQ5k8tMX5Q-v1"});
    let owner_key = format!("k:{{\"uid\":\"425936e6-6135-4f16-b265-{i:012}\"}}");
    let container = json!({".": {}, "f:image": {}, "f:name": {},
        "f:env": {"k:{\"name\":\"TOKEN\"}": {".": {}, "f:name": {}, "f:valueFrom": {"f:secretKeyRef": {}}}},
        "f:ports": {"k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}}}});
    let fields = json!({
        "f:metadata": {
            "f:labels": {"f:app.kubernetes.io/name": {}, "f:app.kubernetes.io/part-of": {},
                "f:applyset.kubernetes.io/part-of": {}},
            "f:ownerReferences": {owner_key: {}},
        },
        "f:spec": {"f:replicas": {}, "f:selector": {}, "f:template": {
            "f:metadata": {"f:labels": {"f:app.kubernetes.io/name": {}, "f:app.kubernetes.io/part-of": {}}},
            "f:spec": {"f:containers": {"k:{\"name\":\"web\"}": container}},
        }},
    });
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {
            "name": name, "namespace": "default", "uid": format!("8fb37071-200b-41de-833e-{i:012}"),
            "resourceVersion": format!("{}", 1000 + i), "generation": 1,
            "creationTimestamp": "2026-11-22T04:29:26Z", "labels": labels,
            "ownerReferences": [{"apiVersion": "apps.example.com/v1", "kind": "WebApp", "name": name,
                "uid": format!("425936e6-6135-4f16-b265-{i:012}"), "controller": true, "blockOwnerDeletion": true}],
            "managedFields": [{
                "apiVersion": "apps/v1", "fieldsType": "FieldsV1", "manager": "ctop", "operation": "Apply",
                "time": "2026-11-22T04:29:26Z", "fieldsV1": fields,
            }],
        },
        "spec": {
            "replicas": 2, "selector": {"matchLabels": {"app.kubernetes.io/name": name, "app.kubernetes.io/part-of": "webapp"}},
            "template": {"metadata": {"labels": {"app.kubernetes.io/name": name, "app.kubernetes.io/part-of": "webapp"}},
                "spec": {"containers": [{"name": "web", "image": "nginx:1.27",
                    "ports": [{"containerPort": 80, "protocol": "TCP"}],
                    "env": [{"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": format!("{name}-token"), "key": "token"}}}]}]}},
        },
    })
}

fn strip_managed_fields(mut v: Value) -> Value {
    if let Some(m) = v["metadata"].as_object_mut() {
        m.remove("managedFields");
    }
    v
}

/// Bytes a reflector store holds per object, for `n` objects made by `make`.
fn cache_bytes_per_object(n: usize, make: impl Fn(usize) -> Value) -> (f64, f64) {
    let json_len =
        (0..n).map(|i| strip_managed_fields(make(i)).to_string().len()).sum::<usize>() as f64 / n as f64;
    let before = heap().curr_bytes;
    let mut writer: Writer<DynamicObject> =
        Writer::new(kube::api::ApiResource::erase::<k8s_openapi::api::apps::v1::Deployment>(&()));
    writer.apply_watcher_event(&watcher::Event::Init);
    for i in 0..n {
        let o: DynamicObject = serde_json::from_value(make(i)).unwrap();
        writer.apply_watcher_event(&watcher::Event::InitApply(o));
    }
    writer.apply_watcher_event(&watcher::Event::InitDone);
    let reader = writer.as_reader();
    let held = heap().curr_bytes.saturating_sub(before) as f64 / n as f64;
    assert_eq!(reader.state().len(), n);
    drop(writer);
    (held, json_len)
}

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

    println!("\n## Reflector cache, bytes held per cached Deployment\n");
    println!("| cached as | objects | bytes/object | JSON bytes (managedFields stripped) | ratio |");
    println!("|---|---|---|---|---|");
    for (what, strip) in [("received (with managedFields)", false), ("managedFields stripped", true)] {
        let n = 1000;
        let (held, json_len) = cache_bytes_per_object(n, |i| {
            if strip { strip_managed_fields(deployment(i)) } else { deployment(i) }
        });
        println!("| {what} | {n} | {held:.0} | {json_len:.0} | {:.2}× |", held / json_len);
    }

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

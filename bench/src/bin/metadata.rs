//! `ctop-bench-metadata`: what an operator that reads every Pod of a cluster costs with
//! `.reads(Pod)` and with `.reads(Pod, { metadataOnly: true })`.
//!
//! ```sh
//! cargo build --release -p ctop -p ctop-bench
//! target/release/ctop-bench-metadata --pods 10000     # --modes full,metadata --out bench/results-metadata
//! ```
//!
//! Each mode gets a fresh `ctop sim --plain-http --no-workloads` holding N Pods shaped like
//! a Deployment's (two containers with probes, env and resources, an owner reference, and
//! a Running status with conditions and container statuses, about 3.5 KB of JSON each).
//! The operator (`OPERATOR` below) reads Pods and `.watches()` them, mapping every Pod
//! event to its one `Census`, whose reconcile looks at a sample of Pods by name and at a
//! marker Pod, and writes what it saw into the status. Per mode:
//!
//! 1. **sync**: `ctop run` starts; from its start until the Census's status is written
//!    (the reconcile runs once the Pod cache holds the whole list). The controller's RSS,
//!    peak RSS and CPU seconds then.
//! 2. **churn**: every Pod's labels change (a merge patch each, 32 in flight), then the
//!    marker Pod is created; the churn ends when the status names the marker (one watch
//!    delivers the events in order, so the cache has had every change before it). The CPU
//!    seconds of the phase, and RSS and peak RSS after it.

#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::bail;
use ctop_bench::procs::{free_port, proc_usage, reconciles, spawn};
use ctop_bench::sim::{self, NAMESPACE};
use futures::{StreamExt as _, TryStreamExt as _};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

#[derive(Debug, clap::Parser)]
struct Opts {
    /// Pods in the cluster.
    #[arg(long, default_value_t = 10_000)]
    pods: usize,
    /// Pods the reconcile reads by name (spread over all of them).
    #[arg(long, default_value_t = 100)]
    sample: usize,
    /// `full` (`.reads(Pod)`) and `metadata` (`.reads(Pod, { metadataOnly: true })`).
    #[arg(long, value_delimiter = ',', default_value = "full,metadata")]
    modes: Vec<String>,
    /// The ctop binary [default: `ctop` beside this program, else target/release/ctop].
    #[arg(long, default_value_os_t = ctop_bench::implementation::beside_me("ctop"), hide_default_value = true)]
    ctop: PathBuf,
    /// Where the logs, the operators and `results.md` go.
    #[arg(long, default_value = "target/bench-metadata")]
    out: PathBuf,
    /// Longest wait of each phase, in seconds.
    #[arg(long, default_value_t = 600)]
    timeout_secs: u64,
}

/// The operator, `{READS}` replaced by the mode's `.reads(...)` options.
const OPERATOR: &str = r#"
import { resource, z, operator, getObserved, setStatus, Pod } from "ctop";

const census = resource("bench.ctop.dev/v1", "Census", {
  plural: "censuses",
  spec: { sample: z.number().int().default(100), pods: z.number().int().default(10000) },
  status: { labelled: z.number().optional(), found: z.number().optional(), marker: z.string().optional() },
});

operator(census)
  .reads(Pod{READS})
  .watches(Pod, () => "census")
  .reconcile((c) => {
    const step = Math.max(1, Math.floor(c.spec.pods / c.spec.sample));
    let found = 0;
    let labelled = 0;
    for (let i = 0; i < c.spec.pods; i += step) {
      const p = getObserved(Pod, podName(i));
      if (p) found++;
      if (p?.metadata.labels?.churn === "1") labelled++;
    }
    const marker = getObserved(Pod, "marker");
    setStatus(c, { found, labelled, marker: marker ? `seen ${Object.keys(marker).sort().join(",")}` : "absent" });
  });

function podName(i: number): string {
  return `shop-7d9f8b6c5d-${String(i).padStart(6, "0")}`;
}
"#;

fn pod_name(i: usize) -> String {
    format!("shop-7d9f8b6c5d-{i:06}")
}

/// A Pod as a ReplicaSet of a Deployment would have it.
fn pod(name: &str) -> Value {
    let env: Vec<Value> = ["DB_HOST", "DB_PORT", "CACHE_URL", "LOG_LEVEL", "REGION", "FEATURE_FLAGS"]
        .iter()
        .map(|k| json!({"name": k, "value": format!("{}-value-{name}", k.to_lowercase())}))
        .collect();
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": name, "namespace": NAMESPACE,
            "labels": {"app": "shop", "tier": "web", "pod-template-hash": "7d9f8b6c5d", "version": "v1"},
            "annotations": {"prometheus.io/scrape": "true", "prometheus.io/port": "9090",
                            "kubectl.kubernetes.io/restartedAt": "2026-11-29T10:00:00Z"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "shop-7d9f8b6c5d",
                                 "uid": "5c0a8d3e-1111-4222-8333-944455556666", "controller": true,
                                 "blockOwnerDeletion": true}],
        },
        "spec": {
            "nodeName": "node-3",
            "containers": [
                {"name": "app", "image": "registry.example.com/shop/web:1.27.3",
                 "ports": [{"containerPort": 8080, "name": "http", "protocol": "TCP"}],
                 "env": env,
                 "resources": {"requests": {"cpu": "250m", "memory": "256Mi"}, "limits": {"cpu": "1", "memory": "512Mi"}},
                 "livenessProbe": {"httpGet": {"path": "/healthz", "port": 8080}, "periodSeconds": 10, "failureThreshold": 3},
                 "readinessProbe": {"httpGet": {"path": "/ready", "port": 8080}, "periodSeconds": 5},
                 "volumeMounts": [{"name": "config", "mountPath": "/etc/shop", "readOnly": true}]},
                {"name": "proxy", "image": "registry.example.com/mesh/proxy:2.4.1",
                 "args": ["--port=15001", "--admin-port=15000", "--log-level=warn"],
                 "ports": [{"containerPort": 15001, "name": "proxy", "protocol": "TCP"}],
                 "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"memory": "128Mi"}}},
            ],
            "volumes": [{"name": "config", "configMap": {"name": "shop-config"}}],
        },
    })
}

/// The status a kubelet would have written of a running [`pod`].
fn running_status(i: usize) -> Value {
    let at = "2026-11-29T10:00:05Z";
    let condition =
        |t: &str| json!({"type": t, "status": "True", "lastProbeTime": null, "lastTransitionTime": at});
    let container = |name: &str, image: &str| {
        json!({"name": name, "image": image, "imageID": format!("{image}@sha256:{}", "ab".repeat(32)),
               "containerID": format!("containerd://{}", "0f".repeat(32)), "ready": true, "restartCount": 0,
               "started": true, "state": {"running": {"startedAt": at}}})
    };
    let ip = format!("10.244.{}.{}", i / 250, i % 250 + 2);
    let conditions = ["PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled"]
        .map(condition);
    json!({"status": {
        "phase": "Running",
        "conditions": conditions,
        "hostIP": "10.0.0.3", "hostIPs": [{"ip": "10.0.0.3"}], "podIP": ip, "podIPs": [{"ip": ip}],
        "startTime": at, "qosClass": "Burstable",
        "containerStatuses": [container("app", "registry.example.com/shop/web:1.27.3"),
                              container("proxy", "registry.example.com/mesh/proxy:2.4.1")],
    }})
}

/// What one mode measured.
struct Run {
    mode: String,
    pods: usize,
    sync_s: f64,
    sync_cpu: f64,
    sync_rss: f64,
    sync_hwm: f64,
    churn_s: f64,
    churn_cpu: f64,
    churn_rss: f64,
    churn_hwm: f64,
    reconciles: u64,
}

fn census_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("bench.ctop.dev", "v1", "Census"), "censuses")
}

/// Poll the Census's status until `done` holds (or the timeout passes: an error).
async fn wait_status(
    api: &Api<DynamicObject>,
    timeout: Duration,
    what: &str,
    done: impl Fn(&Value) -> bool,
) -> anyhow::Result<()> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Ok(c) = api.get("census").await
            && done(&c.data["status"])
        {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("timed out waiting for {what}");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn run_mode(opts: &Opts, mode: &str) -> anyhow::Result<Run> {
    let reads = match mode {
        "full" => "",
        "metadata" => ", { metadataOnly: true }",
        other => bail!("unknown mode {other:?} (full, metadata)"),
    };
    let dir = opts.out.join(mode);
    std::fs::create_dir_all(&dir)?;
    let operator = dir.join("operator");
    std::fs::create_dir_all(&operator)?;
    std::fs::write(operator.join("operator.ct"), OPERATOR.replace("{READS}", reads))?;
    let timeout = Duration::from_secs(opts.timeout_secs);

    let sim = sim::start(&opts.ctop, &dir, opts.pods, None).await?;
    let client = sim.client.clone();
    // The Census CRD, as `ctop manifests` prints it.
    sim::install_crd(&opts.ctop, &operator, &client, "censuses.bench.ctop.dev").await?;

    eprintln!("[{mode}] creating {} Pods", opts.pods);
    let pods: Api<Pod> = Api::namespaced(client.clone(), NAMESPACE);
    let started = Instant::now();
    futures::stream::iter(0..opts.pods)
        .map(|i| {
            let pods = pods.clone();
            async move {
                let name = pod_name(i);
                pods.create(&PostParams::default(), &serde_json::from_value(pod(&name))?).await?;
                pods.patch_status(&name, &PatchParams::default(), &Patch::Merge(running_status(i))).await?;
                anyhow::Ok(())
            }
        })
        .buffer_unordered(32)
        .try_collect::<Vec<()>>()
        .await?;
    eprintln!("[{mode}] {} Pods in {:.1}s", opts.pods, started.elapsed().as_secs_f64());
    let censuses: Api<DynamicObject> = Api::namespaced_with(client.clone(), NAMESPACE, &census_resource());
    let mut census = DynamicObject::new("census", &census_resource()).within(NAMESPACE);
    census.data = json!({"spec": {"sample": opts.sample, "pods": opts.pods}});
    censuses.create(&PostParams::default(), &census).await?;

    // 1. sync
    let port = free_port()?;
    let start = Instant::now();
    let controller = spawn(
        Command::new(&opts.ctop)
            .arg("run")
            .arg(&operator)
            .arg("--kubeconfig")
            .arg(&sim.kubeconfig)
            .args(["--leader-elect=false", "--health-port", "0", "--metrics-port", &port.to_string()])
            .env("CTOP_LOG", "warn"),
        &dir.join("ctop.log"),
    )?;
    // The Pods the reconcile looks at: every `step`-th, as the script counts them.
    let expected = opts.pods.div_ceil((opts.pods / opts.sample.max(1)).max(1));
    let sample_found = move |s: &Value| s["found"].as_u64() == Some(expected as u64);
    wait_status(&censuses, timeout, "the first reconcile", sample_found).await?;
    let sync_s = start.elapsed().as_secs_f64();
    let (sync_cpu, sync_rss, sync_hwm) = proc_usage(controller.pid());
    eprintln!(
        "[{mode}] synced in {sync_s:.1}s: {sync_rss:.1} MB RSS, {sync_hwm:.1} MB peak, {sync_cpu:.2} CPU s"
    );

    // 2. churn
    let start = Instant::now();
    futures::stream::iter(0..opts.pods)
        .map(|i| {
            let pods = pods.clone();
            async move {
                let label = json!({"metadata": {"labels": {"churn": "1"}}});
                pods.patch(&pod_name(i), &PatchParams::default(), &Patch::Merge(label)).await?;
                anyhow::Ok(())
            }
        })
        .buffer_unordered(32)
        .try_collect::<Vec<()>>()
        .await?;
    pods.create(&PostParams::default(), &serde_json::from_value(pod("marker"))?).await?;
    let marker_seen = |s: &Value| s["marker"].as_str().is_some_and(|m| m.starts_with("seen"));
    wait_status(&censuses, timeout, "the marker Pod", marker_seen).await?;
    let churn_s = start.elapsed().as_secs_f64();
    let (cpu, churn_rss, churn_hwm) = proc_usage(controller.pid());
    let status = censuses.get("census").await?.data["status"].clone();
    eprintln!(
        "[{mode}] churn in {churn_s:.1}s: {churn_rss:.1} MB RSS, {churn_hwm:.1} MB peak; status {status}"
    );
    let labelled = status["labelled"].as_u64().unwrap_or(0);
    if labelled as usize != expected {
        bail!("the reconcile saw {labelled} of the {expected} sampled Pods labelled");
    }
    Ok(Run {
        mode: mode.to_owned(),
        pods: opts.pods,
        sync_s,
        sync_cpu,
        sync_rss,
        sync_hwm,
        churn_s,
        churn_cpu: cpu - sync_cpu,
        churn_rss,
        churn_hwm,
        reconciles: reconciles(port).await,
    })
}

fn report(runs: &[Run]) -> String {
    let mut md = String::from(
        "| reads | Pods | sync s | CPU s at sync | RSS MB at sync | peak RSS MB at sync | churn s | churn CPU s | RSS MB after churn | peak RSS MB | reconciles |\n\
         |---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for r in runs {
        let _ = writeln!(
            md,
            "| {} | {} | {:.1} | {:.2} | {:.1} | {:.1} | {:.1} | {:.2} | {:.1} | {:.1} | {} |",
            r.mode,
            r.pods,
            r.sync_s,
            r.sync_cpu,
            r.sync_rss,
            r.sync_hwm,
            r.churn_s,
            r.churn_cpu,
            r.churn_rss,
            r.churn_hwm,
            r.reconciles
        );
    }
    md
}

fn check_binary(ctop: &Path) -> anyhow::Result<()> {
    if !ctop.exists() {
        bail!("{} does not exist: cargo build --release -p ctop", ctop.display());
    }
    Ok(())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let opts = <Opts as clap::Parser>::parse();
    check_binary(&opts.ctop)?;
    std::fs::create_dir_all(&opts.out)?;
    let mut runs = Vec::new();
    for mode in &opts.modes {
        runs.push(run_mode(&opts, mode).await?);
    }
    let md = report(&runs);
    std::fs::write(opts.out.join("results.md"), &md)?;
    println!("{md}");
    Ok(())
}

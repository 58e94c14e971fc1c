//! `ctop-bench-neighbour`: how long good custom resources take to converge while hostile
//! neighbours loop until their deadline, against the same operator with no neighbour.
//!
//! ```sh
//! cargo build --release -p ctop -p ctop-bench
//! target/release/ctop-bench-neighbour            # --good 20 --timeout 3s --concurrency 4
//! ```
//!
//! Each scenario gets a fresh `ctop sim` and `ctop run` of the runtime's hostile golden
//! script (`crates/runtime/tests/golden/hostile`) with `--reconcile-timeout`, a probe Bomb
//! to know the operator is serving, then: the looping Bombs (`mode: loop`, each holds a
//! script runtime for the whole deadline, then backs off and comes again), and once their
//! first calls are running, the good Bombs (`mode: none`) all at once. A good Bomb's latency
//! is its create → its `status.phase: Done` seen by the driver's watch.

#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use futures::StreamExt as _;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, PostParams};
use kube::runtime::{WatchStreamExt as _, watcher};
use kube::{Client, ResourceExt as _};
use parking_lot::Mutex;
use serde_json::json;

#[derive(Debug, clap::Parser)]
struct Opts {
    /// Good Bombs per scenario.
    #[arg(long, default_value_t = 20)]
    good: usize,
    /// `ctop run --reconcile-timeout`.
    #[arg(long, default_value = "3s")]
    timeout: String,
    /// `ctop run --concurrency` (script runtimes).
    #[arg(long, default_value_t = 4)]
    concurrency: usize,
    /// Looping neighbours of each scenario.
    #[arg(long, value_delimiter = ',', default_value = "0,1,3,4")]
    loops: Vec<usize>,
    /// The ctop binary [default: `ctop` beside this program, else target/release/ctop].
    #[arg(long, default_value_os_t = ctop_bench::implementation::beside_me("ctop"), hide_default_value = true)]
    ctop: PathBuf,
    /// Where the processes' logs go.
    #[arg(long, default_value = "target/bench-neighbour")]
    out: PathBuf,
}

/// Kills the process when dropped.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn spawn(cmd: &mut Command, log: &Path) -> anyhow::Result<Proc> {
    let file = std::fs::File::create(log)?;
    let child = cmd.stdin(Stdio::null()).stdout(file.try_clone()?).stderr(file).spawn()?;
    Ok(Proc(child))
}

fn bomb(name: &str, mode: &str) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "hostile.example.com/v1", "kind": "Bomb",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"mode": mode, "count": 0}
    }))
    .unwrap_or_else(|e| unreachable!("a literal Bomb deserializes: {e}"))
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// One scenario: the good Bombs' latencies in ms, sorted.
async fn scenario(opts: &Opts, loops: usize) -> anyhow::Result<Vec<f64>> {
    let dir = opts.out.join(format!("loops-{loops}"));
    std::fs::create_dir_all(&dir)?;
    let kubeconfig = dir.join("kubeconfig");
    let _ = std::fs::remove_file(&kubeconfig);
    let _sim = spawn(
        Command::new(&opts.ctop)
            .args(["sim", "--plain-http", "--no-workloads", "--addr", "127.0.0.1:0", "--kubeconfig"])
            .arg(&kubeconfig),
        &dir.join("sim.log"),
    )?;
    let started = Instant::now();
    while !kubeconfig.exists() {
        if started.elapsed() > Duration::from_secs(20) {
            bail!("ctop sim did not start");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../crates/runtime/tests/golden/hostile");
    let _run = spawn(
        Command::new(&opts.ctop)
            .arg("run")
            .arg(&script)
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args(["--install-crds", "--leader-elect=false", "--health-port", "0", "--metrics-port", "0"])
            .args(["--reconcile-timeout", &opts.timeout, "--concurrency", &opts.concurrency.to_string()])
            .env("CTOP_LOG", "warn"),
        &dir.join("ctop.log"),
    )?;
    let kc = kube::config::Kubeconfig::read_from(&kubeconfig)?;
    let config =
        kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default()).await?;
    let client = Client::try_from(config)?;
    let gvk = GroupVersionKind::gvk("hostile.example.com", "v1", "Bomb");
    let ar = ApiResource::from_gvk_with_plural(&gvk, "bombs");
    let api: Api<DynamicObject> = Api::namespaced_with(client, "default", &ar);

    // Done times, from the driver's watch.
    let done: Arc<Mutex<HashMap<String, Instant>>> = Arc::default();
    let seen = done.clone();
    let watch =
        tokio::spawn(watcher(api.clone(), watcher::Config::default()).applied_objects().for_each(move |o| {
            if let Ok(o) = o
                && o.data["status"]["phase"] == "Done"
            {
                seen.lock().entry(o.name_any()).or_insert_with(Instant::now);
            }
            std::future::ready(())
        }));
    let wait = |name: String, within: Duration| {
        let done = done.clone();
        async move {
            let until = Instant::now() + within;
            while !done.lock().contains_key(&name) {
                if Instant::now() > until {
                    bail!("{name} did not converge within {within:?}");
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            Ok(())
        }
    };
    // The operator is up once a probe converges (the CRD may take a moment to be served).
    let until = Instant::now() + Duration::from_secs(30);
    while api.create(&PostParams::default(), &bomb("probe", "none")).await.is_err() {
        if Instant::now() > until {
            bail!("the Bomb CRD is never served");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    wait("probe".into(), Duration::from_secs(30)).await?;

    for i in 0..loops {
        api.create(&PostParams::default(), &bomb(&format!("loop-{i}"), "loop")).await?;
    }
    if loops > 0 {
        // Their first calls are running (each holds a runtime until the deadline).
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let mut created = HashMap::new();
    let creates = futures::future::join_all((0..opts.good).map(|i| {
        let api = api.clone();
        async move {
            let name = format!("good-{i}");
            let at = Instant::now();
            api.create(&PostParams::default(), &bomb(&name, "none")).await.map(|_| (name, at))
        }
    }))
    .await;
    for c in creates {
        let (name, at) = c.context("create a good Bomb")?;
        created.insert(name, at);
    }
    for name in created.keys() {
        wait(name.clone(), Duration::from_secs(120)).await?;
    }
    watch.abort();
    let done = done.lock();
    let mut ms: Vec<f64> =
        created.iter().map(|(n, at)| done[n].saturating_duration_since(*at).as_secs_f64() * 1000.0).collect();
    ms.sort_by(f64::total_cmp);
    Ok(ms)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let opts = <Opts as clap::Parser>::parse();
    println!(
        "Good Bombs converging beside looping ones: {} good, --reconcile-timeout {}, --concurrency {}",
        opts.good, opts.timeout, opts.concurrency
    );
    println!();
    println!("| looping neighbours | good p50 ms | good p99 ms | good max ms |");
    println!("|---|---|---|---|");
    for &loops in &opts.loops {
        let ms = scenario(&opts, loops).await.with_context(|| format!("the scenario with {loops} loops"))?;
        println!(
            "| {loops} | {:.0} | {:.0} | {:.0} |",
            percentile(&ms, 50.0),
            percentile(&ms, 99.0),
            ms.last().copied().unwrap_or(f64::NAN)
        );
    }
    Ok(())
}

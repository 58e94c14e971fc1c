//! `ctop-bench`: one workload, the same kubesim, three implementations one after another.
//!
//! Start at [`main`]: for each size and implementation, [`run_one`] starts a fresh
//! `ctop sim --plain-http` process, installs the WebApp CRD, starts the implementation as
//! its own child process (so `/proc/<pid>` CPU time and peak RSS are its own), and drives
//! the phases: cold start (a probe CR created before the process starts), create N CRs at
//! once, steady state with a short resync, a burst of spec updates, deletion of everything.
//! The driver watches the children and the CRs' status with kube-rs watchers and
//! timestamps what it sees; the implementation's API requests come from kubesim's
//! `/kubesim/stats` (the driver names itself with its own `User-Agent`), its reconcile
//! count from its `/metrics`. [`report`] writes `results.md`, `results.json` and
//! `chart.png`. The kubesim, the watches and the process helpers are the crate's library
//! (`src/lib.rs`), which `ctop-bench-sharding` shares.

// A console tool: progress goes to stderr.
#![allow(clippy::print_stderr)]

mod report;
mod rounds;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use ctop_bench::implementation;
use ctop_bench::procs::{self, Proc, free_port, proc_usage, reconciles, scrape, spawn};
use ctop_bench::seen::{Seen, wait_for, watch_workload};
use ctop_bench::sim::{self, IMAGE_1, IMAGE_2, example_copy, webapp};
use futures::{StreamExt as _, TryStreamExt as _};
use kube::Client;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use parking_lot::Mutex;
use serde_json::{Value, json};

/// `--pin`: the CPU of kubesim and the driver, and that of the implementation under test.
const SIM_CPU: &str = "0";
const IMPL_CPU: &str = "1";

/// Command-line options.
#[derive(Debug, Clone, clap::Parser)]
#[command(about = "Benchmark ctop against a native kube-rs controller and kopf on kubesim")]
pub struct Opts {
    /// Numbers of CRs, comma separated.
    #[arg(long, default_value = "100,1000", value_delimiter = ',')]
    sizes: Vec<usize>,
    /// Implementations to run, comma separated (ctop, native, kopf).
    #[arg(long, default_value = "ctop,native,kopf", value_delimiter = ',')]
    impls: Vec<String>,
    /// Resync period of every implementation (ctop: the script's `every`).
    #[arg(long, default_value = "500ms")]
    every: String,
    /// Seconds of steady state measured after convergence.
    #[arg(long, default_value_t = 10)]
    steady_secs: u64,
    /// Seconds a phase may take before the implementation is declared not converged.
    #[arg(long, default_value_t = 300)]
    timeout_secs: u64,
    /// Where results.md, results.json and chart.png go.
    #[arg(long, default_value = "bench/results")]
    out: PathBuf,
    /// The ctop binary [default: `ctop` beside this program, else target/release/ctop].
    #[arg(long, default_value_os_t = implementation::beside_me("ctop"), hide_default_value = true)]
    ctop: PathBuf,
    /// The ctop binary that runs kubesim for every implementation [default: --ctop]. Give one
    /// binary here when comparing two builds of ctop, so both meet the same API server.
    #[arg(long)]
    sim: Option<PathBuf>,
    /// The native controller binary [default: `webapp-native` beside this program, else
    /// target/release/webapp-native].
    #[arg(long, default_value_os_t = implementation::beside_me("webapp-native"), hide_default_value = true)]
    native: PathBuf,
    /// The kopf executable (from the venv bench/ci.sh sets up).
    #[arg(long, default_value = "bench/.venv/bin/kopf")]
    kopf: PathBuf,
    /// The WebApp example ctop runs (its `every(...)` is replaced by --every).
    #[arg(long, default_value = "examples/webapp")]
    example: PathBuf,
    /// The kopf operator.
    #[arg(long, default_value = "bench/kopf/webapp.py")]
    kopf_script: PathBuf,
    /// Results (results.json) of earlier runs to show next to this one's (e.g. a slow
    /// implementation measured once, or each size of a scale curve), comma-separated.
    #[arg(long, value_delimiter = ',')]
    merge: Vec<PathBuf>,
    /// Run nothing: write the report and chart of the `--merge`d results only.
    #[arg(long)]
    report_only: bool,
    /// Exit non-zero when an implementation does not converge in a phase.
    #[arg(long)]
    require_convergence: bool,
    /// Pin the processes to CPUs: kubesim and this driver to the first, the implementation
    /// under test to the second (`taskset`; needs two CPUs). The implementation then meets
    /// the API server as in a cluster, on a CPU of its own, and its CPU seconds stop swinging
    /// with where the scheduler put it (bench/README.md, "Pinned").
    #[arg(long)]
    pin: bool,
    /// Run every implementation this many times at each size, in turn (ctop, native, kopf,
    /// ctop, ...), and report each figure's median over the rounds.
    #[arg(long, default_value_t = 1)]
    rounds: usize,
}

impl Opts {
    fn programs(&self) -> implementation::Programs {
        implementation::Programs {
            ctop: self.ctop.clone(),
            native: self.native.clone(),
            kopf: self.kopf.clone(),
            kopf_script: self.kopf_script.clone(),
        }
    }
}

/// Everything measured for one implementation at one size.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Run {
    /// `ctop`, `native` or `kopf`.
    pub implementation: String,
    /// Number of CRs.
    pub size: usize,
    /// Every phase converged.
    pub converged: bool,
    /// What failed, if something did.
    pub failure: Option<String>,
    /// Process start → the probe CR's status written.
    pub cold_start_s: f64,
    /// First create → last CR with all children and status.
    pub create_converge_s: f64,
    /// Create response → children and status seen, per CR: p50.
    pub latency_p50_ms: f64,
    /// Same, p99.
    pub latency_p99_ms: f64,
    /// Reconciles counted during the create phase.
    pub create_reconciles: u64,
    /// The implementation's API requests during the create phase (watches and lists included).
    pub create_requests: u64,
    /// `create_requests / create_reconciles`.
    pub requests_per_reconcile: f64,
    /// Reconciles per second in steady state (resync only).
    pub noop_per_s: f64,
    /// Reconciles per CPU second in steady state.
    pub noop_per_cpu_s: f64,
    /// API writes during the steady window.
    pub steady_writes: u64,
    /// First spec update → last Deployment with the new image.
    pub update_converge_s: f64,
    /// Reconciles the update burst caused (until the count stays still for a second: the
    /// echoes of its own status and children writes included).
    #[serde(default)]
    pub update_reconciles: u64,
    /// The implementation's API requests during the update burst.
    #[serde(default)]
    pub update_requests: u64,
    /// CPU seconds the implementation spent on the update burst.
    #[serde(default)]
    pub update_cpu_s: f64,
    /// First delete → every CR and child gone.
    pub delete_converge_s: f64,
    /// User + system CPU seconds of the whole run.
    pub cpu_s: f64,
    /// Resident set size once idle with the probe CR only.
    pub base_rss_mb: f64,
    /// `VmHWM` at the end.
    pub peak_rss_mb: f64,
    /// (RSS after the create phase − base RSS) / N.
    pub rss_per_cr_kb: f64,
    /// ctop only: mean time in the script per reconcile call (steady state, warm).
    pub script_mean_us: Option<f64>,
    /// ctop only: p50 of the script time (from the histogram buckets).
    pub script_p50_us: Option<f64>,
    /// ctop only: the percentage of `reconcile` calls since the start that ran on the async
    /// worker rather than a blocking thread (`ctop_script_calls_total`).
    #[serde(default)]
    pub script_inline_pct: Option<f64>,
    /// How many runs each figure is the median of (`--rounds`).
    #[serde(default = "one")]
    pub rounds: usize,
    /// The implementation ran on a CPU of its own, kubesim and the driver on another (`--pin`).
    #[serde(default)]
    pub pinned: bool,
}

fn one() -> usize {
    1
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let opts = <Opts as clap::Parser>::parse();
    if !opts.report_only {
        opts.programs().check(&opts.impls, opts.sim.as_deref())?;
    }
    std::fs::create_dir_all(&opts.out)?;
    if opts.pin {
        let cpus = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
        if cpus < 2 {
            bail!("--pin needs two CPUs (this process may use {cpus}); run without --pin");
        }
        procs::pin_self(SIM_CPU)?;
    }
    let mut runs: Vec<Run> = Vec::new();
    for path in &opts.merge {
        let earlier: Vec<Run> = serde_json::from_slice(&std::fs::read(path)?)?;
        for run in earlier {
            runs.retain(|r| !(r.implementation == run.implementation && r.size == run.size));
            runs.push(run);
        }
    }
    let order = |r: &Run| implementation::NAMES.iter().position(|i| *i == r.implementation);
    if opts.report_only {
        runs.sort_by_key(|r| (r.size, order(r)));
        report::write(&opts.out, &runs, &opts.every)?;
        eprintln!("results: {}", opts.out.join("results.md").display());
        return Ok(());
    }
    let rounds = opts.rounds.max(1);
    for &size in &opts.sizes {
        let mut measured: HashMap<String, Vec<Run>> = HashMap::new();
        for round in 1..=rounds {
            for imp in &opts.impls {
                let of = if rounds > 1 { format!(", round {round} of {rounds}") } else { String::new() };
                eprintln!("==> {imp}: {size} CRs{of}");
                let run = match run_one(&opts, imp, size).await {
                    Ok(r) => r,
                    Err(e) => Run {
                        implementation: imp.clone(),
                        size,
                        pinned: opts.pin,
                        failure: Some(format!("{e:#}")),
                        ..Run::default()
                    },
                };
                eprintln!("    {}", report::summary(&run));
                let runs_of = measured.entry(imp.clone()).or_default();
                runs_of.push(run);
                let Some(run) = rounds::median(runs_of) else { continue };
                runs.retain(|r| !(r.implementation == run.implementation && r.size == run.size));
                runs.push(run);
                runs.sort_by_key(|r| (r.size, order(r)));
                report::write(&opts.out, &runs, &opts.every)?;
            }
        }
    }
    eprintln!("results: {}", opts.out.join("results.md").display());
    let failed: Vec<_> =
        runs.iter().filter(|r| !r.converged && opts.impls.contains(&r.implementation)).collect();
    if opts.require_convergence && !failed.is_empty() {
        for r in failed {
            eprintln!(
                "not converged: {} at {}: {}",
                r.implementation,
                r.size,
                r.failure.as_deref().unwrap_or("")
            );
        }
        bail!("an implementation did not converge");
    }
    Ok(())
}

/// The implementation's requests (everything but the driver's), by `"verb resource"`.
async fn impl_requests(client: &Client) -> anyhow::Result<HashMap<String, u64>> {
    let req = http::Request::get("/kubesim/stats").body(Vec::new())?;
    let stats: Value = client.request(req).await?;
    let mut out = HashMap::new();
    for (agent, c) in stats["clients"].as_object().into_iter().flatten() {
        if agent == sim::DRIVER_AGENT {
            continue;
        }
        for (k, v) in c["requests"].as_object().into_iter().flatten() {
            *out.entry(k.clone()).or_default() += v.as_u64().unwrap_or(0);
        }
    }
    Ok(out)
}

fn writes(requests: &HashMap<String, u64>) -> u64 {
    requests
        .iter()
        .filter(|(k, _)| {
            ["apply ", "patch ", "create ", "update ", "delete"].iter().any(|w| k.starts_with(w))
        })
        .map(|(_, v)| v)
        .sum()
}

/// Run one implementation at one size.
async fn run_one(opts: &Opts, imp: &str, size: usize) -> anyhow::Result<Run> {
    let tmp = std::env::temp_dir().join(format!("ctop-bench-{}-{imp}-{size}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp)?;
    // kubesim runs from a copy of its binary, so that what it runs is not in the page
    // cache of the binary under test when that starts (see `procs::uncache`).
    let sim_binary = tmp.join("kubesim");
    std::fs::copy(opts.sim.as_ref().unwrap_or(&opts.ctop), &sim_binary)
        .with_context(|| format!("cannot copy the kubesim binary to {}", sim_binary.display()))?;
    let kubesim = sim::start(&sim_binary, &tmp, size, opts.pin.then_some(SIM_CPU)).await;
    // A running program keeps its file: the copy goes now, however the run ends.
    let _ = std::fs::remove_file(&sim_binary);
    let kubesim = kubesim?;
    let (kubeconfig, client) = (kubesim.kubeconfig.clone(), kubesim.client.clone());

    // The CRD, from `ctop manifests` of the example.
    let example = example_copy(&opts.example, &tmp, "5m")?;
    let webapps = sim::install_webapp_crd(&opts.ctop, &example, &client).await?;
    webapps.create(&PostParams::default(), &webapp("probe", IMAGE_1)).await?;

    let every_s = implementation::parse_duration(&opts.every)?.as_secs_f64();
    let programs = opts.programs();
    let start = |every: &str, log: &str| -> anyhow::Result<(Proc, u16)> {
        let port = free_port()?;
        let example = example_copy(&opts.example, &tmp, every)?;
        let launch =
            implementation::Launch { example: &example, kubeconfig: &kubeconfig, every, metrics_port: port };
        let mut cmd = implementation::command(imp, &programs, &launch)?;
        if opts.pin {
            cmd = procs::pinned(&cmd, IMPL_CPU);
        }
        Ok((spawn(&mut cmd, &tmp.join(format!("{imp}-{log}.log")))?, port))
    };
    // Process A: the example's own period (5m), for cold start, create and update. Its
    // binary starts with none of its pages cached, as in a new pod (see `procs::uncache`).
    // A file system without the advice only makes the base RSS read a little high.
    if let Some(Err(e)) = programs.binary(imp).map(procs::uncache) {
        tracing::warn!(error = format!("{e:#}"), "base RSS may count pages cached by earlier runs");
    }
    let started = Instant::now();
    let (proc, port) = start("5m", "work")?;
    let pid = proc.child.id();
    let mut run = Run { implementation: imp.into(), size, pinned: opts.pin, ..Run::default() };
    let timeout = Duration::from_secs(opts.timeout_secs);

    // Cold start: the probe's status.
    loop {
        if let Ok(p) = webapps.get("probe").await
            && p.data["status"]["phase"].is_string()
        {
            break;
        }
        if started.elapsed() > Duration::from_secs(60) {
            bail!("no first reconcile within 60 s (see {})", tmp.join(format!("{imp}-work.log")).display());
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    run.cold_start_s = started.elapsed().as_secs_f64();
    tokio::time::sleep(Duration::from_secs(2)).await;
    run.base_rss_mb = proc_usage(pid).1;

    let seen = Arc::new(Mutex::new(Seen::default()));
    let watchers = watch_workload(&client, &webapps, &seen);
    tokio::time::sleep(Duration::from_millis(300)).await;

    // Create.
    let reset = http::Request::delete("/kubesim/stats").body(Vec::new())?;
    let _: Value = client.request(reset).await?;
    let r0 = reconciles(port).await;
    let names: Vec<String> = (0..size).map(|i| format!("app-{i:05}")).collect();
    let t_create = Instant::now();
    let created = sim::create_all(&webapps, &names).await?;
    let ok = wait_for(timeout, || seen.lock().all_done(&names)).await;
    let fail = |run: &mut Run, what: &str| {
        run.failure.get_or_insert_with(|| format!("{what} did not converge within {} s", opts.timeout_secs));
    };
    let c = seen.lock().convergence(&created, t_create, timeout.as_secs_f64());
    run.latency_p50_ms = c.latency_p50_ms;
    run.latency_p99_ms = c.latency_p99_ms;
    run.create_converge_s = c.converge_s;
    if !ok {
        fail(&mut run, "create");
    }
    run.create_reconciles = reconciles(port).await.saturating_sub(r0);
    let create_requests = impl_requests(&client).await?;
    tracing::info!(implementation = imp, size, requests = ?create_requests, "the create phase's requests");
    run.create_requests = create_requests.values().sum();
    run.requests_per_reconcile = run.create_requests as f64 / run.create_reconciles.max(1) as f64;
    run.rss_per_cr_kb = (proc_usage(pid).1 - run.base_rss_mb).max(0.0) * 1024.0 / size as f64;

    // A burst of spec updates.
    let reset = http::Request::delete("/kubesim/stats").body(Vec::new())?;
    let _: Value = client.request(reset).await?;
    let (update_cpu0, _, _) = proc_usage(pid);
    let update_r0 = reconciles(port).await;
    let t_update = Instant::now();
    futures::stream::iter(names.iter().cloned())
        .map(|name| {
            let api = webapps.clone();
            async move {
                let patch = json!({"spec": {"image": IMAGE_2}});
                api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch)).await.map(drop)
            }
        })
        .buffer_unordered(32)
        .try_collect::<Vec<_>>()
        .await?;
    let ok = wait_for(timeout, || {
        let s = seen.lock();
        names.iter().all(|n| s.deploy_image2.contains_key(n))
    })
    .await;
    run.update_converge_s = {
        let s = seen.lock();
        names
            .iter()
            .filter_map(|n| s.deploy_image2.get(n))
            .max()
            .map_or(timeout.as_secs_f64(), |t| t.saturating_duration_since(t_update).as_secs_f64())
    };
    if !ok {
        fail(&mut run, "update");
    }
    // The work one change causes: wait until the reconciles stop (a second without one).
    let mut last = reconciles(port).await;
    let quiet_since = Instant::now();
    loop {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let now = reconciles(port).await;
        if now == last || quiet_since.elapsed() > Duration::from_secs(30) {
            break;
        }
        last = now;
    }
    run.update_reconciles = last.saturating_sub(update_r0);
    let update_requests = impl_requests(&client).await?;
    tracing::info!(implementation = imp, size, requests = ?update_requests, "the update burst's requests");
    run.update_requests = update_requests.values().sum();
    run.update_cpu_s = proc_usage(pid).0 - update_cpu0;

    // Process B: the same implementation restarted with the short resync period; once it
    // has been through every CR (all no-ops: everything converged), count its resyncs.
    let (cpu_a, _, hwm_a) = proc_usage(pid);
    drop(proc);
    let (proc, port) = start(&opts.every, "steady")?;
    let pid = proc.child.id();
    let n = size as u64 + 1;
    let t_first = Instant::now();
    while reconciles(port).await < n && t_first.elapsed() < timeout {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // A restarted implementation may re-apply what it no longer remembers: wait until its
    // writes stop (two resync periods without one) before counting.
    let quiet = Duration::from_secs_f64((every_s * 2.0).max(2.0));
    let mut last = writes(&impl_requests(&client).await?);
    loop {
        tokio::time::sleep(quiet).await;
        let now = writes(&impl_requests(&client).await?);
        if now == last || t_first.elapsed() > timeout {
            break;
        }
        last = now;
    }
    let w0 = writes(&impl_requests(&client).await?);
    let (c0, _, _) = proc_usage(pid);
    let r0 = reconciles(port).await;
    let t0 = Instant::now();
    tokio::time::sleep(Duration::from_secs(opts.steady_secs)).await;
    let r1 = reconciles(port).await;
    let (c1, _, _) = proc_usage(pid);
    let window = t0.elapsed().as_secs_f64();
    run.steady_writes = writes(&impl_requests(&client).await?).saturating_sub(w0);
    run.noop_per_s = r1.saturating_sub(r0) as f64 / window;
    run.noop_per_cpu_s = r1.saturating_sub(r0) as f64 / (c1 - c0).max(0.01);
    if imp == "ctop"
        && let Some(text) = scrape(port).await
    {
        let (mean, p50) = report::script_times(&text);
        run.script_mean_us = mean;
        run.script_p50_us = p50;
        run.script_inline_pct = report::inline_share(&text);
    }

    // Delete everything.
    let t_delete = Instant::now();
    futures::stream::iter(names.iter().cloned())
        .map(|name| {
            let api = webapps.clone();
            async move { api.delete(&name, &DeleteParams::default()).await.map(drop) }
        })
        .buffer_unordered(32)
        .try_collect::<Vec<_>>()
        .await?;
    let ok = wait_for(timeout, || {
        let s = seen.lock();
        names.iter().all(|n| {
            !s.webapps.contains(n)
                && !s.deployments.contains_key(n)
                && !s.services.contains_key(n)
                && !s.secrets.contains_key(n)
        })
    })
    .await;
    run.delete_converge_s = t_delete.elapsed().as_secs_f64();
    if !ok {
        fail(&mut run, "delete");
    }

    let (_, _, hwm_b) = proc_usage(pid);
    run.cpu_s = cpu_a;
    run.peak_rss_mb = hwm_a.max(hwm_b);
    for w in watchers {
        w.abort();
    }
    drop(proc);
    run.converged = run.failure.is_none();
    if run.converged {
        let _ = std::fs::remove_dir_all(&tmp);
    }
    Ok(run)
}

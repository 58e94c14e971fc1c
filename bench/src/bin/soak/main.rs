//! `ctop-bench-soak`: does an operator give back the memory of objects that are gone?
//!
//! ```sh
//! cargo build --release -p ctop -p ctop-bench
//! target/release/ctop-bench-soak --sizes 1000,10000 --waves 6 --out bench/results-soak
//! ```
//!
//! Start at [`run_one`]. For each size N and implementation (ctop running
//! `examples/webapp`, the native kube-rs controller, optionally kopf), one after another,
//! each on a fresh `ctop sim --plain-http --no-workloads` as `ctop-bench` starts it: the
//! WebApp CRD, a probe CR, the implementation as a child process (its own `/proc`), then W
//! waves ([`wave::run`]): N WebApps with new names created at once, converged, deleted,
//! gone, the implementation quiet ([`settle`]), its `VmRSS` and `VmHWM` read. [`fit`]
//! turns the RSS after each wave into growth per wave and per deleted object; [`report`]
//! writes `results.md`, `results.json` and `chart.png`.

// A console tool: progress goes to stderr.
#![allow(clippy::print_stderr)]

mod fit;
mod report;
mod settle;
mod wave;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::bail;
use ctop_bench::implementation::{self, Launch, Programs};
use ctop_bench::procs::{free_port, spawn};
use ctop_bench::seen::{Seen, wait_for, watch_workload};
use ctop_bench::sim::{self, IMAGE_1, example_copy, webapp};
use kube::api::PostParams;
use parking_lot::Mutex;

use crate::fit::Growth;
use crate::settle::Quiet;
use crate::wave::{Soak, Wave};

/// The resync period of every implementation: the example's own, so that no resync runs
/// during a soak of a few minutes and the waves are all there is.
const EVERY: &str = "5m";
/// The CR that exists through every wave, to know the implementation serves.
const PROBE: &str = "probe";

/// Command-line options.
#[derive(Debug, Clone, clap::Parser)]
#[command(about = "Memory soak: waves of WebApps created and deleted, RSS after each, on kubesim")]
pub struct Opts {
    /// CRs per wave, comma separated (one run per size and implementation).
    #[arg(long, default_value = "1000,10000", value_delimiter = ',')]
    sizes: Vec<usize>,
    /// Waves per run.
    #[arg(long, default_value_t = 6)]
    waves: usize,
    /// Implementations to run, comma separated (ctop, native, kopf).
    #[arg(long, default_value = "ctop,native", value_delimiter = ',')]
    impls: Vec<String>,
    /// Seconds creation, deletion or the wait for quiet of one wave may take.
    #[arg(long, default_value_t = 600)]
    timeout_secs: u64,
    /// Milliseconds the implementation must stay quiet before its RSS is read.
    #[arg(long, default_value_t = 1000)]
    quiet_ms: u64,
    /// Where results.md, results.json and chart.png go.
    #[arg(long, default_value = "bench/results-soak")]
    out: PathBuf,
    /// The ctop binary [default: `ctop` beside this program, else target/release/ctop].
    #[arg(long, default_value_os_t = ctop_bench::implementation::beside_me("ctop"), hide_default_value = true)]
    ctop: PathBuf,
    /// The native controller binary [default: `webapp-native` beside this program, else
    /// target/release/webapp-native].
    #[arg(long, default_value_os_t = ctop_bench::implementation::beside_me("webapp-native"), hide_default_value = true)]
    native: PathBuf,
    /// The kopf executable (from the venv bench/ci.sh sets up).
    #[arg(long, default_value = "bench/.venv/bin/kopf")]
    kopf: PathBuf,
    /// The WebApp example ctop runs.
    #[arg(long, default_value = "examples/webapp")]
    example: PathBuf,
    /// The kopf operator.
    #[arg(long, default_value = "bench/kopf/webapp.py")]
    kopf_script: PathBuf,
    /// Results (results.json) of earlier soaks to show next to this one's, comma separated.
    #[arg(long, value_delimiter = ',')]
    merge: Vec<PathBuf>,
    /// Run nothing: write the report and chart of the `--merge`d results only.
    #[arg(long)]
    report_only: bool,
    /// Exit non-zero when an implementation does not converge in a wave.
    #[arg(long)]
    require_convergence: bool,
}

/// One implementation at one size.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct SoakRun {
    /// `ctop`, `native` or `kopf`.
    pub implementation: String,
    /// CRs per wave.
    pub size: usize,
    /// Waves asked for.
    pub waves_planned: usize,
    /// Every wave converged and went away.
    pub converged: bool,
    /// What failed, if something did.
    pub failure: Option<String>,
    /// The base (wave 0: the probe CR only) and every wave measured.
    pub waves: Vec<Wave>,
    /// RSS growth per wave from the second wave on.
    pub growth: Option<Growth>,
    /// Wall time of the run (kubesim start to the last wave measured), seconds.
    pub elapsed_s: f64,
}

impl SoakRun {
    fn is(&self, implementation: &str, size: usize) -> bool {
        self.implementation == implementation && self.size == size
    }
}

fn programs(opts: &Opts) -> Programs {
    Programs {
        ctop: opts.ctop.clone(),
        native: opts.native.clone(),
        kopf: opts.kopf.clone(),
        kopf_script: opts.kopf_script.clone(),
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt().with_env_filter("warn").with_writer(std::io::stderr).init();
    let opts = <Opts as clap::Parser>::parse();
    if !opts.report_only {
        programs(&opts).check(&opts.impls, None)?;
    }
    std::fs::create_dir_all(&opts.out)?;
    let mut runs: Vec<SoakRun> = Vec::new();
    for path in &opts.merge {
        let earlier: Vec<SoakRun> = serde_json::from_slice(&std::fs::read(path)?)?;
        for run in earlier {
            runs.retain(|r| !r.is(&run.implementation, run.size));
            runs.push(run);
        }
    }
    let order = |r: &SoakRun| (r.size, implementation::NAMES.iter().position(|i| *i == r.implementation));
    if !opts.report_only {
        for &size in &opts.sizes {
            for imp in &opts.impls {
                eprintln!("==> {imp}: {} waves of {size} CRs", opts.waves);
                let t0 = Instant::now();
                let mut run = SoakRun {
                    implementation: imp.clone(),
                    size,
                    waves_planned: opts.waves,
                    ..SoakRun::default()
                };
                if let Err(e) = run_one(&opts, &mut run).await {
                    run.failure = Some(format!("{e:#}"));
                }
                run.converged = run.failure.is_none();
                run.elapsed_s = t0.elapsed().as_secs_f64();
                let rss: Vec<(usize, f64)> = run.waves.iter().map(|w| (w.wave, w.rss_mb)).collect();
                run.growth = fit::growth(&rss, size);
                eprintln!("    {}", report::summary(&run));
                runs.retain(|r| !r.is(imp, size));
                runs.push(run);
                runs.sort_by_key(order);
                report::write(&opts.out, &runs)?;
            }
        }
    }
    runs.sort_by_key(order);
    report::write(&opts.out, &runs)?;
    eprintln!("results: {}", opts.out.join("results.md").display());
    let failed: Vec<&SoakRun> =
        runs.iter().filter(|r| !r.converged && opts.impls.contains(&r.implementation)).collect();
    if opts.require_convergence && !opts.report_only && !failed.is_empty() {
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

/// One implementation at one size: a fresh kubesim, the implementation, the waves. What was
/// measured stays in `run` when a wave fails.
async fn run_one(opts: &Opts, run: &mut SoakRun) -> anyhow::Result<()> {
    let (imp, size) = (run.implementation.clone(), run.size);
    let tmp = std::env::temp_dir().join(format!("ctop-bench-soak-{}-{imp}-{size}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp)?;
    let kubesim = sim::start(&opts.ctop, &tmp, size, None).await?;
    let client = kubesim.client.clone();
    let example = example_copy(&opts.example, &tmp, EVERY)?;
    let webapps = sim::install_webapp_crd(&opts.ctop, &example, &client).await?;
    let seen = Arc::new(Mutex::new(Seen::default()));
    let _watchers = Aborted(watch_workload(&client, &webapps, &seen));
    webapps.create(&PostParams::default(), &webapp(PROBE, IMAGE_1)).await?;

    let programs = programs(opts);
    let port = free_port()?;
    let launch =
        Launch { example: &example, kubeconfig: &kubesim.kubeconfig, every: EVERY, metrics_port: port };
    let log = tmp.join(format!("{imp}.log"));
    let proc = spawn(&mut implementation::command(&imp, &programs, &launch)?, &log)?;
    if !wait_for(Duration::from_secs(60), || seen.lock().done_at(PROBE).is_some()).await {
        bail!("the probe CR did not converge within 60 s (see {})", log.display());
    }
    let timeout = Duration::from_secs(opts.timeout_secs);
    let soak = Soak {
        webapps,
        seen,
        pid: proc.pid(),
        port,
        sim_pid: kubesim.proc.pid(),
        size,
        timeout,
        quiet: Quiet {
            window: Duration::from_millis(opts.quiet_ms),
            max_cpu: 0.02,
            every: Duration::from_millis(100),
            timeout,
        },
    };
    run.waves.push(soak.measure(0).await);
    for n in 1..=opts.waves {
        let w =
            wave::run(&soak, n).await.map_err(|e| anyhow::anyhow!("{e:#} (logs in {})", tmp.display()))?;
        eprintln!(
            "    wave {n}: converged {:.1}s, gone {:.1}s, quiet {:.1}s{}, RSS {:.1} MB (HWM {:.1})",
            w.create_converge_s,
            w.delete_gone_s,
            w.settle_s,
            if w.quiet { "" } else { " (NOT quiet)" },
            w.rss_mb,
            w.hwm_mb
        );
        run.waves.push(w);
    }
    drop(proc);
    let _ = std::fs::remove_dir_all(&tmp);
    Ok(())
}

/// Tasks aborted when this is dropped: the driver's watches stop with the run, however it
/// ends, instead of retrying against a kubesim that is gone.
struct Aborted(Vec<tokio::task::JoinHandle<()>>);

impl Drop for Aborted {
    fn drop(&mut self) {
        for task in &self.0 {
            task.abort();
        }
    }
}

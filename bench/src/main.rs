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
//! `chart.png`.

// A console tool: progress goes to stderr.
#![allow(clippy::print_stderr)]

mod report;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use futures::{StreamExt as _, TryStreamExt as _};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Secret, Service};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams,
};
use kube::runtime::watcher;
use kube::{Client, ResourceExt as _};
use parking_lot::Mutex;
use serde_json::{Value, json};

const DRIVER_AGENT: &str = "ctop-bench-driver";
const NAMESPACE: &str = "default";
const IMAGE_1: &str = "nginx:1.27";
const IMAGE_2: &str = "nginx:1.28";

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
    /// The ctop binary.
    #[arg(long, default_value = "target/release/ctop")]
    ctop: PathBuf,
    /// The native controller binary.
    #[arg(long, default_value = "target/release/webapp-native")]
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
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt().with_env_filter("warn").with_writer(std::io::stderr).init();
    let opts = <Opts as clap::Parser>::parse();
    std::fs::create_dir_all(&opts.out)?;
    let mut runs: Vec<Run> = Vec::new();
    for path in &opts.merge {
        let earlier: Vec<Run> = serde_json::from_slice(&std::fs::read(path)?)?;
        for run in earlier {
            runs.retain(|r| !(r.implementation == run.implementation && r.size == run.size));
            runs.push(run);
        }
    }
    let order = |r: &Run| ["ctop", "native", "kopf"].iter().position(|i| *i == r.implementation);
    if opts.report_only {
        runs.sort_by_key(|r| (r.size, order(r)));
        report::write(&opts.out, &runs, &opts.every)?;
        eprintln!("results: {}", opts.out.join("results.md").display());
        return Ok(());
    }
    for &size in &opts.sizes {
        for imp in &opts.impls {
            eprintln!("==> {imp}: {size} CRs");
            let run = match run_one(&opts, imp, size).await {
                Ok(r) => r,
                Err(e) => Run {
                    implementation: imp.clone(),
                    size,
                    failure: Some(format!("{e:#}")),
                    ..Run::default()
                },
            };
            eprintln!("    {}", report::summary(&run));
            runs.retain(|r| !(r.implementation == run.implementation && r.size == run.size));
            runs.push(run);
            runs.sort_by_key(|r| (r.size, order(r)));
            report::write(&opts.out, &runs, &opts.every)?;
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

/// Kills the process when dropped.
struct Proc {
    child: Child,
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

fn spawn(cmd: &mut Command, log: &Path) -> anyhow::Result<Proc> {
    let file = std::fs::File::create(log)?;
    let child = cmd
        .stdin(Stdio::null())
        .stdout(file.try_clone()?)
        .stderr(file)
        .spawn()
        .with_context(|| format!("cannot start {cmd:?}"))?;
    Ok(Proc { child })
}

/// (CPU seconds, VmRSS MiB, VmHWM MiB) of a process.
fn proc_usage(pid: u32) -> (f64, f64, f64) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let after = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<&str> = after.split_whitespace().collect();
    // Fields after the command: state is [0], utime is field 14 overall → [11], stime [12].
    let ticks = |i: usize| fields.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    let cpu = (ticks(11) + ticks(12)) / 100.0;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let kb = |key: &str| {
        status
            .lines()
            .find(|l| l.starts_with(key))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (cpu, kb("VmRSS:") / 1024.0, kb("VmHWM:") / 1024.0)
}

/// What the driver's watchers have seen.
#[derive(Debug, Default)]
struct Seen {
    deployments: HashMap<String, (Instant, String)>,
    deploy_image2: HashMap<String, Instant>,
    services: HashMap<String, Instant>,
    secrets: HashMap<String, Instant>,
    status: HashMap<String, Instant>,
    webapps: HashSet<String>,
}

impl Seen {
    fn done_at(&self, name: &str) -> Option<Instant> {
        let d = self.deployments.get(name)?.0;
        let s = *self.services.get(name)?;
        let t = *self.secrets.get(name)?;
        let st = *self.status.get(name)?;
        Some(d.max(s).max(t).max(st))
    }
}

fn watch_into<K, F>(api: Api<K>, seen: Arc<Mutex<Seen>>, on: F) -> tokio::task::JoinHandle<()>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + 'static,
    F: Fn(&mut Seen, &K, bool) + Send + 'static,
{
    tokio::spawn(async move {
        let stream = watcher(api, watcher::Config::default());
        futures::pin_mut!(stream);
        while let Some(event) = stream.next().await {
            let Ok(event) = event else { continue };
            let mut s = seen.lock();
            match event {
                watcher::Event::Apply(o) | watcher::Event::InitApply(o) => on(&mut s, &o, true),
                watcher::Event::Delete(o) => on(&mut s, &o, false),
                _ => {}
            }
        }
    })
}

fn set_once(map: &mut HashMap<String, Instant>, key: &str, present: bool) {
    if present {
        map.entry(key.to_owned()).or_insert_with(Instant::now);
    } else {
        map.remove(key);
    }
}

async fn client_for(kubeconfig: &Path) -> anyhow::Result<Client> {
    let kc = kube::config::Kubeconfig::read_from(kubeconfig)?;
    let mut config =
        kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default()).await?;
    config.headers.push((http::header::USER_AGENT, http::HeaderValue::from_static(DRIVER_AGENT)));
    Ok(Client::try_from(config)?)
}

/// The implementation's requests (everything but the driver's), by `"verb resource"`.
async fn impl_requests(client: &Client) -> anyhow::Result<HashMap<String, u64>> {
    let req = http::Request::get("/kubesim/stats").body(Vec::new())?;
    let stats: Value = client.request(req).await?;
    let mut out = HashMap::new();
    for (agent, c) in stats["clients"].as_object().into_iter().flatten() {
        if agent == DRIVER_AGENT {
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

async fn scrape(port: u16) -> Option<String> {
    let mut sock = tokio::net::TcpStream::connect(("127.0.0.1", port)).await.ok()?;
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    sock.write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").await.ok()?;
    let mut out = String::new();
    sock.read_to_string(&mut out).await.ok()?;
    Some(out)
}

fn metric(text: &str, prefix: &str) -> f64 {
    text.lines()
        .filter(|l| l.starts_with(prefix))
        .filter_map(|l| l.rsplit_once(' ')?.1.parse::<f64>().ok())
        .sum()
}

async fn reconciles(port: u16) -> u64 {
    scrape(port).await.map_or(0, |t| metric(&t, "controller_runtime_reconcile_total") as u64)
}

async fn wait_for<F: FnMut() -> bool>(timeout: Duration, mut done: F) -> bool {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if done() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    done()
}

fn webapp(name: &str, image: &str) -> DynamicObject {
    let gvk = GroupVersionKind::gvk("apps.example.com", "v1", "WebApp");
    let ar = ApiResource::from_gvk_with_plural(&gvk, "webapps");
    let mut o = DynamicObject::new(name, &ar).within(NAMESPACE);
    o.data = json!({"spec": {"image": image, "replicas": 2, "port": 80}});
    o
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// The bench copy of the example: identical but for the `every(...)` period.
fn example_copy(opts: &Opts, dir: &Path, every: &str) -> anyhow::Result<PathBuf> {
    let target = dir.join(format!("webapp-{every}"));
    std::fs::create_dir_all(&target)?;
    let script = std::fs::read_to_string(opts.example.join("operator.ct"))
        .with_context(|| format!("cannot read {}", opts.example.display()))?;
    if !script.contains(".every(\"5m\")") {
        bail!("{} no longer has .every(\"5m\"); update the bench", opts.example.display());
    }
    std::fs::write(
        target.join("operator.ct"),
        script.replace(".every(\"5m\")", &format!(".every({every:?})")),
    )?;
    Ok(target)
}

/// Run one implementation at one size.
async fn run_one(opts: &Opts, imp: &str, size: usize) -> anyhow::Result<Run> {
    let tmp = std::env::temp_dir().join(format!("ctop-bench-{}-{imp}-{size}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp)?;
    let kubeconfig = tmp.join("kubeconfig");
    let history = (size * 20).max(10_000).to_string();
    let _sim = spawn(
        Command::new(&opts.ctop)
            .args([
                "sim",
                "--plain-http",
                "--no-workloads",
                "--addr",
                "127.0.0.1:0",
                "--watch-history",
                &history,
            ])
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .env("CTOP_LOG", "warn"),
        &tmp.join("sim.log"),
    )?;
    if !wait_for(Duration::from_secs(20), || kubeconfig.exists()).await {
        bail!("kubesim did not write its kubeconfig (see {})", tmp.join("sim.log").display());
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    let client = client_for(&kubeconfig).await?;

    // The CRD, from `ctop manifests` of the example.
    let example = example_copy(opts, &tmp, "5m")?;
    let out = Command::new(&opts.ctop).arg("manifests").arg(&example).env("CTOP_LOG", "error").output()?;
    if !out.status.success() {
        bail!("ctop manifests failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    let crd = serde_saphyr::from_slice_multiple::<Value>(&out.stdout)
        .context("ctop manifests printed YAML that does not read back")?
        .into_iter()
        .find(|v| v["kind"] == "CustomResourceDefinition")
        .context("ctop manifests printed no CRD")?;
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.create(&PostParams::default(), &serde_json::from_value(crd)?).await?;
    let established = kube::runtime::wait::await_condition(
        crds,
        "webapps.apps.example.com",
        kube::runtime::wait::conditions::is_crd_established(),
    );
    tokio::time::timeout(Duration::from_secs(20), established).await??;

    let gvk = GroupVersionKind::gvk("apps.example.com", "v1", "WebApp");
    let ar = ApiResource::from_gvk_with_plural(&gvk, "webapps");
    let webapps: Api<DynamicObject> = Api::namespaced_with(client.clone(), NAMESPACE, &ar);
    webapps.create(&PostParams::default(), &webapp("probe", IMAGE_1)).await?;

    let every_s = opts.every.parse::<ctop_duration::D>()?.0.as_secs_f64();
    let start = |every: &str, log: &str| -> anyhow::Result<(Proc, u16)> {
        let port = free_port()?;
        let every_s = every.parse::<ctop_duration::D>()?.0.as_secs_f64();
        let mut cmd = match imp {
            "ctop" => {
                let mut c = Command::new(&opts.ctop);
                c.arg("run").arg(example_copy(opts, &tmp, every)?).arg("--kubeconfig").arg(&kubeconfig);
                c.args(["--leader-elect=false", "--health-port", "0", "--metrics-port", &port.to_string()]);
                c.env("CTOP_LOG", "warn");
                c
            }
            "native" => {
                let mut c = Command::new(&opts.native);
                c.arg("--kubeconfig").arg(&kubeconfig);
                c.args(["--every", every, "--metrics-port", &port.to_string()]);
                c
            }
            "kopf" => {
                let mut c = Command::new(&opts.kopf);
                c.args(["run", "--standalone", "--quiet", "-A"]).arg(&opts.kopf_script);
                c.env("KUBECONFIG", &kubeconfig);
                c.env("BENCH_EVERY", every_s.to_string());
                c.env("BENCH_METRICS_PORT", port.to_string());
                c
            }
            other => bail!("unknown implementation {other:?} (ctop, native, kopf)"),
        };
        Ok((spawn(&mut cmd, &tmp.join(format!("{imp}-{log}.log")))?, port))
    };
    // Process A: the example's own period (5m), for cold start, create and update.
    let started = Instant::now();
    let (proc, port) = start("5m", "work")?;
    let pid = proc.child.id();
    let mut run = Run { implementation: imp.into(), size, ..Run::default() };
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
    let watchers = [
        watch_into(
            Api::<Deployment>::namespaced(client.clone(), NAMESPACE),
            seen.clone(),
            |s, d: &Deployment, up| {
                let name = d.name_any();
                if up {
                    let image = d
                        .spec
                        .as_ref()
                        .and_then(|s| s.template.spec.as_ref()?.containers.first()?.image.clone())
                        .unwrap_or_default();
                    if image == IMAGE_2 {
                        s.deploy_image2.entry(name.clone()).or_insert_with(Instant::now);
                    }
                    let e = s.deployments.entry(name).or_insert_with(|| (Instant::now(), String::new()));
                    e.1 = image;
                } else {
                    s.deployments.remove(&name);
                }
            },
        ),
        watch_into(
            Api::<Service>::namespaced(client.clone(), NAMESPACE),
            seen.clone(),
            |s, o: &Service, up| {
                set_once(&mut s.services, &o.name_any(), up);
            },
        ),
        watch_into(
            Api::<Secret>::namespaced(client.clone(), NAMESPACE),
            seen.clone(),
            |s, o: &Secret, up| {
                let name = o.name_any();
                set_once(&mut s.secrets, name.strip_suffix("-token").unwrap_or(&name), up);
            },
        ),
        watch_into(webapps.clone(), seen.clone(), |s, o: &DynamicObject, up| {
            let name = o.name_any();
            if up {
                s.webapps.insert(name.clone());
            } else {
                s.webapps.remove(&name);
            }
            set_once(&mut s.status, &name, up && o.data["status"]["phase"].is_string());
        }),
    ];
    tokio::time::sleep(Duration::from_millis(300)).await;

    // Create.
    let reset = http::Request::delete("/kubesim/stats").body(Vec::new())?;
    let _: Value = client.request(reset).await?;
    let r0 = reconciles(port).await;
    let names: Vec<String> = (0..size).map(|i| format!("app-{i:05}")).collect();
    let t_create = Instant::now();
    let created: Vec<(String, Instant)> = futures::stream::iter(names.iter().cloned())
        .map(|name| {
            let api = webapps.clone();
            async move {
                api.create(&PostParams::default(), &webapp(&name, IMAGE_1)).await?;
                Ok::<_, kube::Error>((name, Instant::now()))
            }
        })
        .buffer_unordered(32)
        .try_collect()
        .await?;
    let all_done = || {
        let s = seen.lock();
        names.iter().all(|n| s.done_at(n).is_some())
    };
    let ok = wait_for(timeout, all_done).await;
    let fail = |run: &mut Run, what: &str| {
        run.failure.get_or_insert_with(|| format!("{what} did not converge within {} s", opts.timeout_secs));
    };
    {
        let s = seen.lock();
        let mut lat: Vec<f64> = created
            .iter()
            .filter_map(|(n, t)| Some(s.done_at(n)?.saturating_duration_since(*t).as_secs_f64() * 1000.0))
            .collect();
        lat.sort_by(f64::total_cmp);
        run.latency_p50_ms = percentile(&lat, 0.5);
        run.latency_p99_ms = percentile(&lat, 0.99);
        run.create_converge_s = names
            .iter()
            .filter_map(|n| s.done_at(n))
            .max()
            .map_or(timeout.as_secs_f64(), |t| t.saturating_duration_since(t_create).as_secs_f64());
    }
    if !ok {
        fail(&mut run, "create");
    }
    run.create_reconciles = reconciles(port).await.saturating_sub(r0);
    run.create_requests = impl_requests(&client).await?.values().sum();
    run.requests_per_reconcile = run.create_requests as f64 / run.create_reconciles.max(1) as f64;
    run.rss_per_cr_kb = (proc_usage(pid).1 - run.base_rss_mb).max(0.0) * 1024.0 / size as f64;

    // A burst of spec updates.
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

/// Durations like `500ms`, `1s`, `5m`.
mod ctop_duration {
    use std::time::Duration;

    /// A parsed duration.
    pub struct D(pub Duration);

    impl std::str::FromStr for D {
        type Err = anyhow::Error;
        fn from_str(s: &str) -> anyhow::Result<Self> {
            let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
            let (num, unit) = s.split_at(split);
            let n: u64 = num.parse()?;
            Ok(D(match unit {
                "ms" => Duration::from_millis(n),
                "s" | "" => Duration::from_secs(n),
                "m" => Duration::from_secs(n * 60),
                other => anyhow::bail!("unknown duration unit {other:?} (ms, s, m)"),
            }))
        }
    }
}

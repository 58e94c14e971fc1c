//! `ctop-bench-sharding`: `ctop run --sharding` with 1, 2 and 3 replicas on one workload of
//! WebApp CRs, and what a replica's death costs.
//!
//! ```sh
//! cargo build --release -p ctop -p ctop-bench
//! target/release/ctop-bench-sharding --sizes 10000 --replicas 1,2,3 --out bench/results-sharding
//! ```
//!
//! Start at [`run_one`]. Each run gets a fresh kubesim (as `ctop-bench` starts it) and the
//! WebApp CRD, then R `ctop run examples/webapp --sharding --identity bench-<i>` processes,
//! each its own child so its `/proc` CPU time and `VmHWM` are its own. Once every member
//! holds its Lease and a probe CR converged, N CRs are created at once and the driver's
//! watches ([`ctop_bench::seen`]) time the convergence and each CR's assignment (its create
//! response → the first event carrying `shard.ctop.dev/webapp`). With R ≥ 2 one replica
//! is then killed with SIGKILL (a member that is not the sharder, or in a run of its own
//! the sharder) and the driver times the move: kill → its Lease taken over by the sharder,
//! → no CR labelled with it, → every CR and its children on a survivor again. The baseline
//! is plain `ctop run` (leader election, no sharding). [`report`] writes `results.md` and
//! `results.json`.

// A console tool: progress goes to stderr.
#![allow(clippy::print_stderr)]

mod report;

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::bail;
use ctop_bench::procs::{Proc, free_port, proc_usage, reconciles, spawn};
use ctop_bench::seen::{Seen, percentile, wait_for, watch_into, watch_workload};
use ctop_bench::sim::{self, IMAGE_1, NAMESPACE, example_copy, webapp};
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{Api, PostParams};
use kube::{Client, ResourceExt as _};
use parking_lot::Mutex;

/// The operator's name (`--name`): its ring, and the leader Lease `webapp-leader`.
const OPERATOR: &str = "webapp";
/// The label the sharder puts on each primary object.
const SHARD_LABEL: &str = "shard.ctop.dev/webapp";
/// The holder the sharder writes into the Lease of a member it saw expire (the
/// controller's `shard::FENCE_HOLDER`).
const FENCE_HOLDER: &str = "ctop-sharder";
/// The CR created before the workload, to know the operator serves.
const PROBE: &str = "probe";

/// Command-line options.
#[derive(Debug, Clone, clap::Parser)]
#[command(about = "Benchmark ctop run --sharding with 1..N replicas on kubesim")]
pub struct Opts {
    /// Numbers of CRs, comma separated.
    #[arg(long, default_value = "10000", value_delimiter = ',')]
    sizes: Vec<usize>,
    /// Numbers of sharded replicas, comma separated.
    #[arg(long, default_value = "1,2,3", value_delimiter = ',')]
    replicas: Vec<usize>,
    /// Also run plain `ctop run` (leader election, no sharding) as the baseline.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    baseline: bool,
    /// With 2 or more replicas, also kill the sharder (the leader of `webapp-leader`), in a
    /// run of its own after the run that kills a member that is not the sharder.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    leader_kill: bool,
    /// Seconds a phase (startup, convergence, a move) may take before the run fails.
    #[arg(long, default_value_t = 600)]
    timeout_secs: u64,
    /// Where results.md and results.json go.
    #[arg(long, default_value = "bench/results-sharding")]
    out: PathBuf,
    /// The ctop binary [default: `ctop` beside this program, else target/release/ctop].
    #[arg(long, default_value_os_t = ctop_bench::implementation::beside_me("ctop"), hide_default_value = true)]
    ctop: PathBuf,
    /// The WebApp example.
    #[arg(long, default_value = "examples/webapp")]
    example: PathBuf,
    /// `CTOP_LOG` of the replicas (their logs stay in the run's temporary directory when it
    /// fails).
    #[arg(long, default_value = "warn")]
    ctop_log: String,
    /// Keep each run's temporary directory (kubeconfig, the replicas' and kubesim's logs)
    /// even when it finished.
    #[arg(long)]
    keep_logs: bool,
}

/// Which replica a run kills once the workload converged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Target {
    /// A member that does not lead `webapp-leader`.
    Member,
    /// The member leading `webapp-leader`: the sharder.
    Leader,
}

/// What one run is.
#[derive(Debug, Clone, Copy)]
struct Spec {
    size: usize,
    replicas: usize,
    sharded: bool,
    kill: Option<Target>,
}

impl Spec {
    fn label(&self) -> String {
        let mode = if self.sharded { "sharded" } else { "plain" };
        let kill = self.kill.map(|k| format!("-kill-{k:?}").to_lowercase()).unwrap_or_default();
        format!("{mode}-{}x-{}{kill}", self.replicas, self.size)
    }
}

/// One replica's figures.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Replica {
    /// Its `--identity` (and member name).
    pub identity: String,
    /// It led `webapp-leader` when the workload converged.
    pub leader: bool,
    /// `VmHWM` at convergence, MiB.
    pub peak_rss_mb: f64,
    /// User + system CPU seconds at convergence.
    pub cpu_s: f64,
    /// Reconciles at convergence (`controller_runtime_reconcile_total`).
    pub reconciles: u64,
    /// CRs labelled with it at convergence (plain run: every CR).
    pub objects: usize,
    /// This is the replica the run killed.
    pub killed: bool,
    /// CRs labelled with it once the dead replica's objects moved.
    pub objects_after: Option<usize>,
    /// `VmHWM` once the dead replica's objects moved, MiB.
    pub peak_rss_after_mb: Option<f64>,
    /// CPU seconds once the dead replica's objects moved.
    pub cpu_after_s: Option<f64>,
}

/// The move of a killed replica's objects.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Move {
    /// Which replica was killed.
    pub target: Option<Target>,
    /// Its identity.
    pub victim: String,
    /// The CRs it held.
    pub objects: usize,
    /// Its Lease's `leaseDurationSeconds`.
    pub lease_duration_s: f64,
    /// Kill → its Lease held by the sharder (`ctop-sharder`), seconds.
    pub fenced_s: Option<f64>,
    /// Kill → another member leads `webapp-leader` (a sharder kill), seconds.
    pub new_leader_s: Option<f64>,
    /// Kill → no CR labelled with it, seconds.
    pub moved_s: Option<f64>,
    /// Kill → every CR and its three children labelled with one survivor, seconds.
    pub converged_s: Option<f64>,
    /// Of its CRs, those whose token Secret's `data.token` changed in the move.
    pub tokens_changed: usize,
}

/// Everything measured in one run.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct ShardRun {
    /// `ctop run --sharding`; false for the baseline.
    pub sharded: bool,
    /// Number of replicas.
    pub replicas: usize,
    /// Number of CRs.
    pub size: usize,
    /// Every phase finished.
    pub converged: bool,
    /// What failed, if something did.
    pub failure: Option<String>,
    /// First create → every CR with its children and status, seconds.
    pub converge_s: f64,
    /// Per CR, create response → children and status seen: p50, ms.
    pub latency_p50_ms: f64,
    /// Same, p99.
    pub latency_p99_ms: f64,
    /// Per CR, create response → first watch event with the shard label: p50, ms.
    pub assign_p50_ms: Option<f64>,
    /// Same, p99.
    pub assign_p99_ms: Option<f64>,
    /// Same, the largest.
    pub assign_max_ms: Option<f64>,
    /// Each replica.
    pub members: Vec<Replica>,
    /// The kill, if the run had one.
    pub kill: Option<Move>,
}

impl ShardRun {
    fn of(spec: &Spec) -> Self {
        Self { sharded: spec.sharded, replicas: spec.replicas, size: spec.size, ..Self::default() }
    }

    /// Whether this is the same kind of run as `spec`.
    fn is(&self, spec: &Spec) -> bool {
        self.sharded == spec.sharded
            && self.replicas == spec.replicas
            && self.size == spec.size
            && self.kill.as_ref().and_then(|k| k.target) == spec.kill
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt().with_env_filter("warn").with_writer(std::io::stderr).init();
    let opts = <Opts as clap::Parser>::parse();
    std::fs::create_dir_all(&opts.out)?;
    let mut specs = Vec::new();
    for &size in &opts.sizes {
        if opts.baseline {
            specs.push(Spec { size, replicas: 1, sharded: false, kill: None });
        }
        for &replicas in &opts.replicas {
            let kills: &[Option<Target>] = match (replicas, opts.leader_kill) {
                (0 | 1, _) => &[None],
                (_, false) => &[Some(Target::Member)],
                (_, true) => &[Some(Target::Member), Some(Target::Leader)],
            };
            for &kill in kills {
                specs.push(Spec { size, replicas: replicas.max(1), sharded: true, kill });
            }
        }
    }
    let mut runs: Vec<ShardRun> = Vec::new();
    for spec in &specs {
        eprintln!("==> {}", spec.label());
        let mut run = match run_one(&opts, spec).await {
            Ok(r) => r,
            Err(e) => ShardRun { failure: Some(format!("{e:#}")), ..ShardRun::of(spec) },
        };
        if run.kill.is_none()
            && let Some(target) = spec.kill
        {
            run.kill = Some(Move { target: Some(target), ..Move::default() });
        }
        eprintln!("    {}", report::summary(&run));
        runs.retain(|r| !r.is(spec));
        runs.push(run);
        report::write(&opts.out, &runs)?;
    }
    eprintln!("results: {}", opts.out.join("results.md").display());
    if runs.iter().any(|r| !r.converged) {
        bail!("a run did not finish (see results.md)");
    }
    Ok(())
}

/// The Leases of the namespace as the driver's watch last saw them.
#[derive(Debug, Default)]
struct Leases {
    /// Holder and `leaseDurationSeconds` by Lease name.
    now: HashMap<String, (String, i32)>,
    /// Every change of holder: when, Lease, new holder.
    changes: Vec<(Instant, String, String)>,
}

impl Leases {
    fn holder(&self, lease: &str) -> Option<&str> {
        self.now.get(lease).map(|(h, _)| h.as_str()).filter(|h| !h.is_empty())
    }

    /// The first change of `lease` after `t` to a holder `to` accepts.
    fn changed_after(&self, t: Instant, lease: &str, to: impl Fn(&str) -> bool) -> Option<Instant> {
        self.changes.iter().find(|(at, l, h)| *at >= t && l == lease && to(h)).map(|(at, _, _)| *at)
    }
}

fn watch_leases(client: &Client, leases: &Arc<Mutex<Leases>>) -> tokio::task::JoinHandle<()> {
    watch_into(Api::<Lease>::namespaced(client.clone(), NAMESPACE), leases.clone(), |s, l: &Lease, up| {
        let name = l.name_any();
        let spec = l.spec.as_ref().filter(|_| up);
        let holder = spec.and_then(|s| s.holder_identity.clone()).unwrap_or_default();
        let duration = spec.and_then(|s| s.lease_duration_seconds).unwrap_or(0);
        if s.now.get(&name).map(|(h, _)| h) != Some(&holder) {
            s.changes.push((Instant::now(), name.clone(), holder.clone()));
        }
        s.now.insert(name, (holder, duration));
    })
}

fn secs(from: Instant, to: Instant) -> f64 {
    to.saturating_duration_since(from).as_secs_f64()
}

/// Run one spec: a fresh kubesim, R replicas, N CRs, and the kill if it has one.
async fn run_one(opts: &Opts, spec: &Spec) -> anyhow::Result<ShardRun> {
    let tmp =
        std::env::temp_dir().join(format!("ctop-bench-sharding-{}-{}", std::process::id(), spec.label()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp)?;
    let kubesim = sim::start(&opts.ctop, &tmp, spec.size, None).await?;
    let client = kubesim.client.clone();
    let example = example_copy(&opts.example, &tmp, "5m")?;
    let webapps = sim::install_webapp_crd(&opts.ctop, &example, &client).await?;
    let timeout = Duration::from_secs(opts.timeout_secs);
    let logs = tmp.display().to_string();

    let leases = Arc::new(Mutex::new(Leases::default()));
    let seen = Arc::new(Mutex::new(if spec.sharded { Seen::sharded(SHARD_LABEL) } else { Seen::default() }));
    let mut watchers = watch_workload(&client, &webapps, &seen);
    watchers.push(watch_leases(&client, &leases));

    // The replicas.
    let identities: Vec<String> = (0..spec.replicas).map(|i| format!("bench-{i}")).collect();
    let mut procs: Vec<(Proc, u16)> = Vec::new();
    for id in &identities {
        let port = free_port()?;
        let mut c = Command::new(&opts.ctop);
        c.arg("run").arg(&example).arg("--kubeconfig").arg(&kubesim.kubeconfig);
        c.args(["--lease-namespace", NAMESPACE, "--name", OPERATOR, "--identity", id]);
        c.args(["--health-port", "0", "--metrics-port", &port.to_string()]);
        if spec.sharded {
            c.arg("--sharding");
        }
        c.env("CTOP_LOG", &opts.ctop_log);
        procs.push((spawn(&mut c, &tmp.join(format!("{id}.log")))?, port));
    }
    let leader_lease = format!("{OPERATOR}-leader");
    let ready = wait_for(Duration::from_secs(60), || {
        let l = leases.lock();
        let members = !spec.sharded || identities.iter().all(|id| l.holder(id) == Some(id.as_str()));
        members && l.holder(&leader_lease).is_some_and(|h| identities.iter().any(|id| id == h))
    })
    .await;
    if !ready {
        bail!("the replicas did not take their Leases within 60 s (logs in {logs})");
    }
    webapps.create(&PostParams::default(), &webapp(PROBE, IMAGE_1)).await?;
    if !wait_for(Duration::from_secs(60), || seen.lock().done_at(PROBE).is_some()).await {
        bail!("the probe CR did not converge within 60 s (logs in {logs})");
    }

    // Create every CR at once (32 requests in flight, as ctop-bench does).
    let mut run = ShardRun::of(spec);
    let names: Vec<String> = (0..spec.size).map(|i| format!("app-{i:05}")).collect();
    let t_create = Instant::now();
    let created = sim::create_all(&webapps, &names).await?;
    let ok = wait_for(timeout, || seen.lock().all_done(&names)).await;
    let usage: Vec<(f64, f64)> =
        procs.iter().map(|(p, _)| proc_usage(p.pid())).map(|(c, _, h)| (c, h)).collect();
    let counts: Vec<u64> = futures::future::join_all(procs.iter().map(|(_, port)| reconciles(*port))).await;
    {
        let s = seen.lock();
        let c = s.convergence(&created, t_create, timeout.as_secs_f64());
        run.latency_p50_ms = c.latency_p50_ms;
        run.latency_p99_ms = c.latency_p99_ms;
        run.converge_s = c.converge_s;
        let ms = |from: Instant, to: Instant| secs(from, to) * 1000.0;
        if let Some(sh) = &s.shards {
            let mut assign: Vec<f64> =
                created.iter().filter_map(|(n, t)| Some(ms(*t, *sh.first_labelled.get(n)?))).collect();
            assign.sort_by(f64::total_cmp);
            run.assign_p50_ms = Some(percentile(&assign, 0.5));
            run.assign_p99_ms = Some(percentile(&assign, 0.99));
            run.assign_max_ms = assign.last().copied();
        }
        let leader = leases.lock().holder(&leader_lease).map(str::to_owned);
        let held = held_by(&s, &names);
        run.members = identities
            .iter()
            .zip(usage.iter().zip(&counts))
            .map(|(id, ((cpu, hwm), reconciles))| Replica {
                identity: id.clone(),
                leader: leader.as_deref() == Some(id.as_str()),
                peak_rss_mb: *hwm,
                cpu_s: *cpu,
                reconciles: *reconciles,
                objects: if spec.sharded { held.get(id).copied().unwrap_or(0) } else { names.len() },
                ..Replica::default()
            })
            .collect();
    }
    if !ok {
        run.failure =
            Some(format!("the CRs did not converge within {} s (logs in {logs})", opts.timeout_secs));
        return Ok(run);
    }

    if let Some(target) = spec.kill {
        let mut m = Move { target: Some(target), ..Move::default() };
        let result = kill_and_move(&mut run, &mut m, &mut procs, &leases, &seen, &names, timeout).await;
        run.kill = Some(m);
        if let Err(e) = result {
            run.failure = Some(format!("{e:#} (logs in {logs})"));
            return Ok(run);
        }
    }
    for w in watchers {
        w.abort();
    }
    drop(procs);
    run.converged = true;
    if opts.keep_logs {
        eprintln!("    logs in {logs}");
    } else {
        let _ = std::fs::remove_dir_all(&tmp);
    }
    Ok(run)
}

/// CRs (of `names`) by the member their label names.
fn held_by(seen: &Seen, names: &[String]) -> BTreeMap<String, usize> {
    let mut held = BTreeMap::new();
    if let Some(sh) = &seen.shards {
        for member in names.iter().filter_map(|n| sh.crs.get(n)) {
            *held.entry(member.clone()).or_default() += 1;
        }
    }
    held
}

/// Kill the `m.target` replica with SIGKILL and time its objects' move to the survivors.
async fn kill_and_move(
    run: &mut ShardRun,
    m: &mut Move,
    procs: &mut [(Proc, u16)],
    leases: &Arc<Mutex<Leases>>,
    seen: &Arc<Mutex<Seen>>,
    names: &[String],
    timeout: Duration,
) -> anyhow::Result<()> {
    let leader = leases.lock().holder(&format!("{OPERATOR}-leader")).map(str::to_owned);
    let victim = run
        .members
        .iter()
        .position(|r| match m.target {
            Some(Target::Leader) => Some(&r.identity) == leader.as_ref(),
            _ => Some(&r.identity) != leader.as_ref(),
        })
        .ok_or_else(|| anyhow::anyhow!("no replica to kill (leader {leader:?})"))?;
    let name = run.members[victim].identity.clone();
    m.victim = name.clone();
    m.lease_duration_s = leases.lock().now.get(&name).map_or(0.0, |(_, d)| f64::from(*d));
    let tokens_before: HashMap<String, Vec<u8>> = {
        let s = seen.lock();
        let sh = s.shards.as_ref().ok_or_else(|| anyhow::anyhow!("a kill needs a sharded run"))?;
        names
            .iter()
            .filter(|n| sh.crs.get(*n) == Some(&name))
            .filter_map(|n| Some((n.clone(), sh.tokens.get(n)?.clone())))
            .collect()
    };
    m.objects = run.members[victim].objects;
    run.members[victim].killed = true;
    let survivors: Vec<String> =
        run.members.iter().filter(|r| r.identity != name).map(|r| r.identity.clone()).collect();

    let t_kill = Instant::now();
    procs[victim].0.kill()?;
    let moved = wait_for(timeout, || {
        let s = seen.lock();
        s.shards.as_ref().is_some_and(|sh| names.iter().all(|n| sh.crs.get(n) != Some(&name)))
    })
    .await;
    if moved {
        m.moved_s = Some(t_kill.elapsed().as_secs_f64());
    }
    let settled = moved
        && wait_for(timeout, || {
            let s = seen.lock();
            let Some(sh) = s.shards.as_ref() else { return false };
            names.iter().all(|n| {
                s.status.contains_key(n)
                    && sh.settled(n).is_some_and(|member| survivors.iter().any(|v| v == member))
            })
        })
        .await;
    if settled {
        m.converged_s = Some(t_kill.elapsed().as_secs_f64());
    }
    {
        let l = leases.lock();
        m.fenced_s = l.changed_after(t_kill, &name, |h| h == FENCE_HOLDER).map(|t| secs(t_kill, t));
        if m.target == Some(Target::Leader) {
            m.new_leader_s = l
                .changed_after(t_kill, &format!("{OPERATOR}-leader"), |h| survivors.iter().any(|v| v == h))
                .map(|t| secs(t_kill, t));
        }
    }
    let s = seen.lock();
    if let Some(sh) = &s.shards {
        m.tokens_changed = tokens_before.iter().filter(|(n, t)| sh.tokens.get(*n) != Some(*t)).count();
    }
    let held = held_by(&s, names);
    for (r, (p, _)) in run.members.iter_mut().zip(procs.iter()) {
        r.objects_after = Some(held.get(&r.identity).copied().unwrap_or(0));
        if !r.killed {
            let (cpu, _, hwm) = proc_usage(p.pid());
            r.cpu_after_s = Some(cpu);
            r.peak_rss_after_mb = Some(hwm);
        }
    }
    match (moved, settled) {
        (false, _) => bail!("{name}'s objects did not move within {} s", timeout.as_secs()),
        (true, false) => {
            bail!("the moved objects did not converge on the survivors within {} s", timeout.as_secs())
        }
        (true, true) => Ok(()),
    }
}

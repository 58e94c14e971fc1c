//! One fuzz run: kubesim, the real `ctop` binary, concurrent random writers, optional
//! faults and an operator restart, then a wait for the example's invariants.
//!
//! [`run`] is the whole thing; [`Config`] says what to run and [`Report`] what happened.
//! Everything random comes from [`Config::seed`]: writer `i` uses `seed` forked by `i`, the
//! fault injector its own fork. Timing between the writers and the operator is not
//! reproducible, so a seed reproduces the operations, not the exact interleaving.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use ctop_kubesim::FaultRule;
use ctop_kubesim::{Config as SimConfig, KubeSim, StartError};
use k8s_openapi::api::core::v1::Namespace;
use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, ListParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig, KubeconfigError};
use parking_lot_free::Mutex;
use tokio::process::{Child, Command};

use crate::check;
use crate::ops::{self, kinds};
use crate::rng::Rng;

/// `std::sync::Mutex` that ignores poisoning (a panicking writer must not hide the trace).
mod parking_lot_free {
    /// A mutex whose lock never fails.
    #[derive(Debug, Default)]
    pub struct Mutex<T>(std::sync::Mutex<T>);
    impl<T> Mutex<T> {
        pub fn new(v: T) -> Self {
            Mutex(std::sync::Mutex::new(v))
        }
        pub fn lock(&self) -> std::sync::MutexGuard<'_, T> {
            self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
        }
    }
}

/// The examples the mutator knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Example {
    /// examples/greeting: Persons and Greetings.
    Greeting,
    /// examples/webapp: WebApps and their children.
    Webapp,
    /// examples/myresource: MyResources, their children and dependencies.
    Myresource,
    /// examples/myapp: MyApps, their Deployments, readiness and failures.
    Myapp,
    /// examples/pod-annotator: Pods labelled, relabelled and deleted.
    PodAnnotator,
}

impl Example {
    /// Every example, in a fixed order.
    pub const ALL: [Example; 5] =
        [Example::Greeting, Example::Webapp, Example::Myresource, Example::Myapp, Example::PodAnnotator];

    /// The directory name under `examples/`.
    pub fn dir_name(self) -> &'static str {
        match self {
            Example::Greeting => "greeting",
            Example::Webapp => "webapp",
            Example::Myresource => "myresource",
            Example::Myapp => "myapp",
            Example::PodAnnotator => "pod-annotator",
        }
    }

    /// The namespaces its objects live in (created before the run).
    fn namespaces(self) -> &'static [&'static str] {
        match self {
            Example::PodAnnotator => &ops::POD_NAMESPACES,
            _ => &ops::NAMESPACES,
        }
    }

    /// The custom resources the operator installs (waited for before mutating).
    fn crds(self) -> Vec<ApiResource> {
        match self {
            Example::Greeting => vec![kinds::person(), kinds::greeting()],
            Example::Webapp => vec![kinds::webapp()],
            Example::Myresource => vec![kinds::myresource()],
            Example::Myapp => vec![kinds::myapp()],
            Example::PodAnnotator => vec![kinds::pod()],
        }
    }

    /// The plural resources faults are injected into.
    fn fault_resources(self) -> &'static [&'static str] {
        match self {
            Example::Greeting => &["persons", "greetings"],
            Example::Webapp => &["webapps", "deployments", "services", "secrets"],
            Example::Myresource => &["myresources", "deployments", "services"],
            Example::Myapp => &["myapps", "deployments"],
            Example::PodAnnotator => &["pods"],
        }
    }

    async fn step(self, client: &Client, rng: &mut Rng) -> ops::Step {
        match self {
            Example::Greeting => ops::greeting(client, rng).await,
            Example::Webapp => ops::webapp(client, rng).await,
            Example::Myresource => ops::myresource(client, rng).await,
            Example::Myapp => ops::myapp(client, rng).await,
            Example::PodAnnotator => ops::pod(client, rng).await,
        }
    }

    async fn violations(self, client: &Client) -> Result<Vec<String>, kube::Error> {
        match self {
            Example::Greeting => check::greeting(client).await,
            Example::Webapp => check::webapp(client).await,
            Example::Myresource => check::myresource(client).await,
            Example::Myapp => check::myapp(client).await,
            Example::PodAnnotator => check::pod_annotator(client).await,
        }
    }

    /// Every name of the example's pools (to pick trace lines about an object).
    fn names(self) -> Vec<&'static str> {
        match self {
            Example::Greeting => ops::PERSONS.iter().chain(ops::GREETINGS.iter()).copied().collect(),
            Example::Webapp => ops::WEBAPPS.to_vec(),
            Example::Myresource => ops::MYRESOURCES.to_vec(),
            Example::Myapp => ops::MYAPPS.to_vec(),
            Example::PodAnnotator => ops::PODS.to_vec(),
        }
    }
}

impl fmt::Display for Example {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.dir_name())
    }
}

/// What to run.
#[derive(Debug, Clone)]
pub struct Config {
    /// Which example.
    pub example: Example,
    /// The seed of every random choice.
    pub seed: u64,
    /// How many operations the writers perform in total.
    pub steps: u64,
    /// How many writers run at once.
    pub writers: u64,
    /// Inject kubesim faults (errors, latency, dropped watches) while mutating.
    pub faults: bool,
    /// Kill the operator half-way and start a new one.
    pub restart: bool,
    /// The `ctop` binary.
    pub ctop: PathBuf,
    /// The directory holding `<example>/operator.ct`.
    pub examples_dir: PathBuf,
    /// How long to wait for the invariants after the last operation.
    pub converge_timeout: Duration,
}

impl Config {
    /// The `ctop-mutate` command that repeats this run.
    pub fn command(&self) -> String {
        format!(
            "ctop-mutate --example {} --seed {} --steps {} --writers {}{}{}",
            self.example,
            self.seed,
            self.steps,
            self.writers,
            if self.faults { " --faults" } else { "" },
            if self.restart { " --restart" } else { "" }
        )
    }
}

/// What a successful run did.
#[derive(Debug, Clone)]
pub struct Report {
    /// The run's configuration.
    pub config: Config,
    /// Operations that succeeded.
    pub ok: u64,
    /// Operations refused or failed (conflicts, not found, injected faults, ...).
    pub refused: u64,
    /// How many operations ended how (`ok`, `409 Conflict`, `404 NotFound`, ...).
    pub outcomes: BTreeMap<String, u64>,
    /// Faults injected.
    pub faults: u64,
    /// Operator restarts.
    pub restarts: u64,
    /// Time spent mutating.
    pub mutating: Duration,
    /// Time from the last operation until the invariants held.
    pub converging: Duration,
    /// Objects of the example's custom kinds at the end.
    pub objects: usize,
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = &self.config;
        write!(
            f,
            "{}: seed {} steps {} ({} ok, {} refused) writers {} faults {} ({} injected) restart {} ({}) — \
             mutating {:.1}s, converged in {:.1}s, {} objects left",
            c.example,
            c.seed,
            c.steps,
            self.ok,
            self.refused,
            c.writers,
            if c.faults { "on" } else { "off" },
            self.faults,
            if c.restart { "on" } else { "off" },
            self.restarts,
            self.mutating.as_secs_f64(),
            self.converging.as_secs_f64(),
            self.objects
        )?;
        let outcomes: Vec<String> = self.outcomes.iter().map(|(k, v)| format!("{k}: {v}")).collect();
        write!(f, "\n  outcomes: {}", outcomes.join(", "))
    }
}

/// Why a run failed.
#[derive(Debug, thiserror::Error)]
pub enum MutateError {
    /// kubesim did not start.
    #[error("kubesim did not start")]
    Sim(#[from] StartError),
    /// A file or process could not be set up.
    #[error("{what}")]
    Io {
        /// What was being done.
        what: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// The kubeconfig kubesim wrote could not be used.
    #[error("cannot use kubesim's kubeconfig")]
    Kubeconfig(#[from] KubeconfigError),
    /// A Kubernetes call of the harness itself failed.
    #[error("kubernetes call failed: {0}")]
    Kube(#[from] kube::Error),
    /// The operator never served its CRDs.
    #[error("the operator did not install its CRDs within 60s (log: {log})")]
    NoCrds {
        /// The operator's log file.
        log: String,
    },
    /// The operator process exited on its own.
    #[error("ctop exited during the run ({status}); its log: {log}")]
    CtopExited {
        /// How it exited.
        status: String,
        /// Its log file.
        log: String,
    },
    /// The invariants did not hold in time.
    #[error("{0}")]
    NotConverged(Box<Failure>),
}

/// A run whose invariants did not hold: what to look at and how to repeat it.
#[derive(Debug)]
pub struct Failure {
    /// The run's configuration.
    pub config: Config,
    /// The invariants broken at the deadline.
    pub violations: Vec<String>,
    /// The operations on the objects involved, in order.
    pub trace: Vec<String>,
    /// Where the operator's logs were kept.
    pub logs: PathBuf,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = &self.config;
        writeln!(
            f,
            "{}: not converged within {:?} after {} steps (seed {})",
            c.example, c.converge_timeout, c.steps, c.seed
        )?;
        writeln!(f, "repeat with: {}", c.command())?;
        writeln!(f, "operator logs: {}", self.logs.display())?;
        writeln!(f, "violations ({}):", self.violations.len())?;
        for v in self.violations.iter().take(40) {
            writeln!(f, "  {v}")?;
        }
        writeln!(f, "trace of the objects involved ({} operations):", self.trace.len())?;
        for t in &self.trace {
            writeln!(f, "  {t}")?;
        }
        Ok(())
    }
}

/// The operator process and where its logs go.
struct Operator {
    child: Child,
    log: PathBuf,
    started: u64,
}

async fn spawn_operator(
    config: &Config,
    dir: &Path,
    kubeconfig: &Path,
    n: u64,
) -> Result<Operator, MutateError> {
    let log = dir.join(format!("ctop-{n}.log"));
    let io = |what: String| move |source| MutateError::Io { what, source };
    let file = std::fs::File::create(&log).map_err(io(format!("cannot create {}", log.display())))?;
    let err = file.try_clone().map_err(io("cannot share the log file".into()))?;
    let child = Command::new(&config.ctop)
        .arg("run")
        .arg(config.examples_dir.join(config.example.dir_name()))
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(["--install-crds", "--leader-elect=false", "--health-port", "0", "--metrics-port", "0"])
        .stdin(Stdio::null())
        .stdout(file)
        .stderr(err)
        .kill_on_drop(true)
        .spawn()
        .map_err(io(format!("cannot start {}", config.ctop.display())))?;
    tracing::info!(n, log = %log.display(), "operator started");
    Ok(Operator { child, log, started: n })
}

impl Operator {
    fn check_alive(&mut self) -> Result<(), MutateError> {
        match self.child.try_wait() {
            Ok(Some(status)) => Err(MutateError::CtopExited {
                status: status.to_string(),
                log: self.log.display().to_string(),
            }),
            Ok(None) => Ok(()),
            Err(source) => Err(MutateError::Io { what: "cannot check the operator process".into(), source }),
        }
    }
}

async fn client_for(sim: &KubeSim) -> Result<Client, MutateError> {
    let kubeconfig = Kubeconfig::from_yaml(&sim.kubeconfig())?;
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?;
    Ok(Client::try_from(config)?)
}

/// Inject one random fault; returns whether one was injected.
fn inject(sim: &KubeSim, example: Example, rng: &mut Rng) -> bool {
    let resource = (*rng.pick(example.fault_resources())).to_owned();
    match rng.below(100) {
        0..45 => {
            let verb = *rng.pick(&["get", "list", "watch", "create", "update", "patch", "delete"]);
            let code = *rng.pick(&[500u16, 503, 429, 409]);
            let count = u32::try_from(rng.range(1, 3)).unwrap_or(1);
            sim.faults().fail(verb, &resource, code, count);
            true
        }
        45..75 => {
            let count = u32::try_from(rng.range(1, 20)).unwrap_or(1);
            sim.faults().add(FaultRule {
                verb: None,
                resource: Some(resource),
                code: 0,
                count,
                latency_ms: rng.range(5, 80),
            });
            true
        }
        75..88 => {
            sim.faults().drop_watches();
            true
        }
        _ => false,
    }
}

/// Run one fuzz round; see the module docs.
pub async fn run(config: Config) -> Result<Report, MutateError> {
    let io = |what: &str| {
        let what = what.to_owned();
        move |source| MutateError::Io { what, source }
    };
    let sim = KubeSim::start(SimConfig::default()).await?;
    let dir =
        tempfile::Builder::new().prefix("ctop-mutate-").tempdir().map_err(io("cannot make a temp dir"))?;
    let kubeconfig = dir.path().join("kubeconfig");
    sim.write_kubeconfig(&kubeconfig).map_err(io("cannot write the kubeconfig"))?;
    let client = client_for(&sim).await?;
    let namespaces = Api::<Namespace>::all(client.clone());
    for ns in config.example.namespaces().iter().filter(|n| **n != "default") {
        let obj: Namespace = serde_json::from_value(serde_json::json!({"metadata": {"name": ns}}))
            .map_err(kube::Error::SerdeError)?;
        match namespaces.create(&PostParams::default(), &obj).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 409 => {}
            Err(e) => return Err(e.into()),
        }
    }

    let operator =
        Arc::new(tokio::sync::Mutex::new(spawn_operator(&config, dir.path(), &kubeconfig, 1).await?));
    // The CRDs are served once the operator installed them.
    let deadline = Instant::now() + Duration::from_secs(60);
    for ar in config.example.crds() {
        while Api::<DynamicObject>::all_with(client.clone(), &ar)
            .list(&ListParams::default().limit(1))
            .await
            .is_err()
        {
            operator.lock().await.check_alive()?;
            if Instant::now() > deadline {
                return Err(MutateError::NoCrds { log: operator.lock().await.log.display().to_string() });
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    let root = Rng::new(config.seed);
    let trace = Arc::new(Mutex::new(Vec::<String>::new()));
    let next = Arc::new(AtomicU64::new(0));
    let (ok, refused, restarts) =
        (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let stop_faults = Arc::new(AtomicBool::new(false));
    let sim = Arc::new(sim);
    let started = Instant::now();

    let faults = config.faults.then(|| {
        let (sim, stop, mut rng) = (sim.clone(), stop_faults.clone(), root.fork(u64::MAX));
        let example = config.example;
        tokio::spawn(async move {
            let mut injected = 0u64;
            // At least one round, however short the run.
            loop {
                if inject(&sim, example, &mut rng) {
                    injected += 1;
                }
                tokio::time::sleep(Duration::from_millis(rng.range(20, 150))).await;
                if stop.load(Ordering::Relaxed) {
                    return injected;
                }
            }
        })
    });

    let mut writers = Vec::new();
    for w in 0..config.writers.max(1) {
        let (client, trace, next) = (client.clone(), trace.clone(), next.clone());
        let (ok, refused, restarts, operator) =
            (ok.clone(), refused.clone(), restarts.clone(), operator.clone());
        let (config, mut rng) = (config.clone(), root.fork(w));
        let (dir, kubeconfig) = (dir.path().to_owned(), kubeconfig.clone());
        writers.push(tokio::spawn(async move {
            loop {
                let step = next.fetch_add(1, Ordering::Relaxed);
                if step >= config.steps {
                    return Ok::<(), MutateError>(());
                }
                if config.restart && step == config.steps / 2 {
                    let mut op = operator.lock().await;
                    op.check_alive()?;
                    // A crash, not a clean stop: SIGKILL mid-reconcile.
                    let _ = op.child.start_kill();
                    let _ = op.child.wait().await;
                    let n = op.started + 1;
                    *op = spawn_operator(&config, &dir, &kubeconfig, n).await?;
                    restarts.fetch_add(1, Ordering::Relaxed);
                    trace.lock().push(format!("#{step} w{w} operator killed and restarted"));
                }
                let s = config.example.step(&client, &mut rng).await;
                let outcome = ops::outcome(&s.result);
                if s.result.is_ok() { &ok } else { &refused }.fetch_add(1, Ordering::Relaxed);
                trace.lock().push(format!("#{step} w{w} {} -> {outcome}", s.what));
                tokio::time::sleep(Duration::from_millis(rng.below(10))).await;
            }
        }));
    }
    let mut first_error = None;
    for w in writers {
        match w.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                first_error.get_or_insert(e);
            }
            Err(join) => {
                first_error.get_or_insert(MutateError::Io {
                    what: format!("a writer panicked: {join}"),
                    source: std::io::Error::other("writer task failed"),
                });
            }
        }
    }
    stop_faults.store(true, Ordering::Relaxed);
    let injected = match faults {
        Some(t) => t.await.unwrap_or(0),
        None => 0,
    };
    sim.faults().clear();
    if let Some(e) = first_error {
        return Err(e);
    }
    let mutating = started.elapsed();
    operator.lock().await.check_alive()?;

    // Converged: the invariants hold twice in a row, half a second apart.
    let converge_start = Instant::now();
    let mut passes = 0;
    let mut last = Vec::new();
    while passes < 2 {
        match config.example.violations(&client).await {
            Ok(v) if v.is_empty() => passes += 1,
            Ok(v) => {
                passes = 0;
                last = v;
            }
            Err(e) => {
                passes = 0;
                last = vec![format!("cannot read the cluster: {e}")];
            }
        }
        if passes < 2 {
            operator.lock().await.check_alive()?;
            if converge_start.elapsed() > config.converge_timeout {
                let names: Vec<&str> = config
                    .example
                    .names()
                    .into_iter()
                    .filter(|n| last.iter().any(|v| mentions(v, n)))
                    .collect();
                let all = trace.lock().clone();
                let mut involved: Vec<String> = all
                    .into_iter()
                    .filter(|t| t.contains("operator") || names.iter().any(|n| mentions(t, n)))
                    .collect();
                let cut = involved.len().saturating_sub(80);
                involved.drain(..cut);
                let logs = dir.keep();
                return Err(MutateError::NotConverged(Box::new(Failure {
                    config,
                    violations: last,
                    trace: involved,
                    logs,
                })));
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }
    let converging = converge_start.elapsed();
    let mut objects = 0;
    for ar in config.example.crds() {
        objects += Api::<DynamicObject>::all_with(client.clone(), &ar)
            .list(&ListParams::default())
            .await?
            .items
            .len();
    }
    let mut op = operator.lock().await;
    let _ = op.child.start_kill();
    let _ = op.child.wait().await;
    let mut outcomes = BTreeMap::new();
    for line in trace.lock().iter() {
        if let Some((_, outcome)) = line.rsplit_once(" -> ") {
            *outcomes.entry(outcome.to_owned()).or_insert(0) += 1;
        }
    }
    Ok(Report {
        outcomes,
        config,
        ok: ok.load(Ordering::Relaxed),
        refused: refused.load(Ordering::Relaxed),
        faults: injected,
        restarts: restarts.load(Ordering::Relaxed),
        mutating,
        converging,
        objects,
    })
}

/// Whether `text` names object `name` as a whole word (`g1` in `default/g1:` but not `g10`).
fn mentions(text: &str, name: &str) -> bool {
    text.match_indices(name).any(|(i, _)| {
        let before = text[..i].chars().next_back();
        let after = text[i + name.len()..].chars().next();
        let boundary = |c: Option<char>| c.is_none_or(|c| !c.is_ascii_alphanumeric() && c != '-');
        boundary(before) && boundary(after)
    })
}

#[cfg(test)]
mod tests {
    use super::mentions;

    #[test]
    fn mentions_whole_names_only() {
        assert!(mentions("default/g1: message", "g1"));
        assert!(!mentions("default/g10: message", "g1"));
        assert!(!mentions("w1-token", "w1"));
    }
}

//! `ctop test --fuzz`: random steps against an operator, the oracles and the script's
//! invariants checked whenever it is quiet, and a failing run shrunk to the steps that
//! matter. Start with [`fuzz`]: give it an [`Operator`] and a [`FuzzConfig`], read the
//! [`FuzzReport`].
//!
//! - [`plan`] draws the steps from the seed ([`rng`]) and the operator's schemas
//!   ([`generate`]) and samples; [`step`] is one step, its `Display` the trace line;
//! - [`exec`] carries steps out on a [`World`] and checks it after each settle;
//! - [`shrink`] removes steps from a failing run while it fails the same way.
//!
//! **What the seed fixes.** The steps: every write, its object, every fault and the
//! restart are drawn from the seed alone (the planner never reads the cluster but for the
//! list of children at the last checkpoint, which a deterministic operator makes the same
//! every run). The world runs on a paused clock, handler calls run one at a time, and
//! every step that settles waits until the operator is quiet, so a run replays step for
//! step and its trace (steps and outcomes) is the same for the same seed. **What it does
//! not fix:** the order in which the operator sees events that arrive at the same virtual
//! instant follows loopback TCP, so the exact virtual time a settle ends can differ; and
//! what an operator itself draws at random (`randomString`, `Math.random`) is its own.
//! A step followed by a short pause lands while the operator is still busy; where it
//! lands in the operator's work can differ between runs, which is how such a run finds
//! races, and why a failure found there may need a few runs of its seed to show again.

pub mod exec;
pub mod generate;
pub mod plan;
pub mod rng;
pub mod settings;
pub mod shrink;
pub mod step;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use ctop_kubesim::WorkloadConfig;
use serde_json::{Value, json};

use crate::format::{DEFAULT_QUIET, DEFAULT_TIMEOUT};
use crate::settle::{Quiet, settle};
use crate::world::{Operator, World, WorldConfig, values_for};
use exec::{Counts, Done, Failure, Runner};
use plan::{Planner, Seen, Writable};
use step::Step;

/// The namespace the fuzzer creates besides `default`, so that objects of the same name
/// live in two namespaces.
pub const OTHER_NAMESPACE: &str = "fuzz";

/// What to run.
#[derive(Clone, Debug)]
pub struct FuzzConfig {
    /// The seed of every random choice.
    pub seed: u64,
    /// How many steps.
    pub steps: u64,
    /// Inject API faults (errors, latency, dropped watches) and crash the operator once.
    pub faults: bool,
    /// Shrink a failing run, within this budget (`None`: report it as found).
    pub shrink: Option<shrink::Budget>,
}

/// What a fuzz run found.
#[derive(Clone, Debug)]
pub struct FuzzReport {
    /// The run's configuration.
    pub config: FuzzConfig,
    /// Steps carried out.
    pub steps_run: usize,
    /// The trace: one line per step, `#N step -> outcome`, and the failure if any.
    pub trace: Vec<String>,
    /// The failure, if one was found.
    pub failure: Option<Failure>,
    /// The shrunk run that fails the same way, as a trace.
    pub shrunk: Option<ShrunkRun>,
    /// What the run counted.
    pub counts: Counts,
    /// Real time of the run (shrinking excluded).
    pub wall: Duration,
    /// Virtual time of the run.
    pub virtual_time: Duration,
    /// What the fuzzer could not exercise, and why.
    pub notes: Vec<String>,
}

/// A shrunk failing run.
#[derive(Clone, Debug)]
pub struct ShrunkRun {
    /// Its trace.
    pub trace: Vec<String>,
    /// Its failure.
    pub failure: Failure,
    /// Replays it took.
    pub runs: usize,
    /// Whether the budget ran out before no step could be removed.
    pub exhausted: bool,
    /// Real time shrinking took.
    pub wall: Duration,
}

/// Why the fuzzer could not run at all.
#[derive(Debug, thiserror::Error)]
pub enum FuzzError {
    /// The world did not start or settle.
    #[error("{0}")]
    World(String),
    /// `tests/fuzz.yaml` is invalid.
    #[error("{0}")]
    Settings(String),
    /// There is nothing the fuzzer can write.
    #[error(
        "the script defines no kind and its controllers are for no kind the fuzzer can write (its samples/*.yaml have none either)"
    )]
    NothingToWrite,
}

/// Handler calls one settle of a fuzz run may see: a run has a few objects, and a world
/// that keeps itself busy is found (and shrunk, replay after replay) sooner.
const MAX_CALLS: usize = 500;

fn quiet() -> Quiet {
    Quiet { quiet: DEFAULT_QUIET, timeout: DEFAULT_TIMEOUT, max_calls: MAX_CALLS }
}

fn runtime() -> Result<tokio::runtime::Runtime, FuzzError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .map_err(|e| FuzzError::World(format!("cannot start a runtime: {e}")))
}

/// Run the fuzzer on `op` (see the module docs).
pub fn fuzz(op: &Operator, config: &FuzzConfig) -> Result<FuzzReport, FuzzError> {
    let wall = std::time::Instant::now();
    let rt = runtime()?;
    let (mut report, steps) = rt.block_on(live(op, config))?;
    report.wall = wall.elapsed();
    drop(rt);
    if let (Some(failure), Some(budget)) = (report.failure.clone(), config.shrink) {
        report.shrunk = Some(shrink_run(op, steps, &failure, &report.trace, budget));
    }
    Ok(report)
}

/// The samples of the operator: every object of `DIR/samples/*.yaml`, by file name.
fn samples(dir: &Path) -> Vec<Value> {
    let mut files: Vec<_> = std::fs::read_dir(dir.join("samples"))
        .map(|d| d.filter_map(Result::ok).map(|e| e.path()).collect())
        .unwrap_or_default();
    files.retain(|p| p.extension().is_some_and(|x| x == "yaml" || x == "yml"));
    files.sort();
    let mut out = Vec::new();
    for f in files {
        if let Ok(text) = std::fs::read_to_string(&f)
            && let Ok(docs) = ctop_core::yaml::documents::<Value>(&text)
        {
            out.extend(docs.into_iter().filter(|d| d.is_object()));
        }
    }
    out
}

/// A settled world with the namespaces the samples use, and what the fuzzer writes.
async fn setup(
    op: &Operator,
    settings: &settings::Settings,
) -> Result<(World, Vec<Writable>, Vec<String>, Vec<String>), FuzzError> {
    let values = values_for(&op.dir, None).map_err(|e| FuzzError::World(ctop_core::Chain(&e).to_string()))?;
    let env = crate::format::env::value(settings.env.as_ref());
    let config = WorldConfig { workloads: Some(WorkloadConfig::default()), values, env, crds: Vec::new() };
    let world =
        World::start(op, &config).await.map_err(|e| FuzzError::World(ctop_core::Chain(&e).to_string()))?;
    let samples = samples(&op.dir);
    let mut namespaces: Vec<String> = vec![OTHER_NAMESPACE.to_owned()];
    for s in &samples {
        if let Some(ns) = s["metadata"]["namespace"].as_str()
            && ns != "default"
            && !namespaces.iter().any(|n| n == ns)
        {
            namespaces.push(ns.to_owned());
        }
    }
    for ns in &namespaces {
        let object = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
        world.create(&object).await.map_err(|e| FuzzError::World(format!("creating namespace {ns}: {e}")))?;
    }
    let spec = world.spec().clone();
    let mut notes = Vec::new();
    // Kinds to write: the script's own, and the built-in kinds its controllers are for,
    // read or watch; never the kinds they manage.
    let mut wanted: Vec<(String, String)> = Vec::new();
    let mut add = |v: &str, k: &str| {
        if !wanted.iter().any(|(a, b)| a == v && b == k) {
            wanted.push((v.to_owned(), k.to_owned()));
        }
    };
    // Every served version of the script's resources: objects of a resource with several
    // versions are written in each (the API server converts them through the operator).
    for r in &spec.resources {
        add(&r.api_version, &r.kind);
        for v in r.all_versions().iter().filter(|v| v.served) {
            add(&r.api_version_of(&v.name), &r.kind);
        }
    }
    for c in &spec.controllers {
        for k in std::iter::once(&c.for_).chain(&c.reads).chain(c.watches.iter().map(|w| &w.kind)) {
            add(&k.api_version, &k.kind);
        }
    }
    let managed = |v: &str, k: &str| {
        spec.controllers.iter().any(|c| c.manages.iter().any(|m| m.api_version == v && m.kind == k))
    };
    let primary =
        |v: &str, k: &str| spec.controllers.iter().any(|c| c.for_.api_version == v && c.for_.kind == k);
    let mut kinds = Vec::new();
    for (v, k) in wanted {
        if managed(&v, &k) && !primary(&v, &k) {
            continue;
        }
        // The script's resource, in the version `v`.
        let own = spec
            .resources
            .iter()
            .find(|r| r.kind == k && v.contains('/') && ctop_core::group_of(&v) == r.group)
            .and_then(|r| r.all_versions().into_iter().find(|x| r.api_version_of(&x.name) == v));
        let found = world.kind(Some(&v), &k).await.map_err(FuzzError::World)?;
        let of_kind: Vec<Value> = samples
            .iter()
            .filter(|s| s["apiVersion"] == v.as_str() && s["kind"] == k.as_str())
            .cloned()
            .collect();
        let spec_schema = own.as_ref().and_then(|r| r.schema["properties"].get("spec").cloned());
        let writable = Writable {
            api_version: v.clone(),
            kind: k.clone(),
            namespaced: found.namespaced,
            spec_schema,
            samples: of_kind,
            primary: primary(&v, &k),
        };
        if own.is_none() && writable.samples.is_empty() && !plan::has_template(&writable) {
            notes.push(format!("{k} ({v}) is not written: no sample of it in samples/ and no template"));
            continue;
        }
        kinds.push(writable);
    }
    // Faults go to the operator's requests of every kind it touches.
    let mut fault_resources = Vec::new();
    for c in &spec.controllers {
        for k in std::iter::once(&c.for_)
            .chain(&c.manages)
            .chain(&c.reads)
            .chain(c.watches.iter().map(|w| &w.kind))
        {
            if let Ok(found) = world.kind(Some(&k.api_version), &k.kind).await
                && !fault_resources.contains(&found.ar.plural)
            {
                fault_resources.push(found.ar.plural);
            }
        }
    }
    if kinds.is_empty() {
        world.stop().await;
        return Err(FuzzError::NothingToWrite);
    }
    if let Err(e) = settle(&world, quiet()).await {
        world.stop().await;
        return Err(FuzzError::World(format!("before the first step, {e}")));
    }
    Ok((world, kinds, fault_resources, notes))
}

/// The trace line of step `n`: the step as it ran, what its action did, and whether it or
/// the check after it failed.
fn line(n: usize, step: &Step, done: &Done) -> String {
    let outcome = match (&done.outcome, &done.failure) {
        (None, _) => "failed".to_owned(),
        (Some(o), None) => o.clone(),
        (Some(o), Some(_)) => format!("{o}, then the check after it failed"),
    };
    format!("#{n} {} -> {outcome}", step.trace(done.created))
}

/// The trace after the checks at the end failed: the last step's line says so.
fn ended(trace: &mut [String]) {
    if let Some(last) = trace.last_mut() {
        last.push_str(", then the checks at the end failed");
    }
}

fn failure_line(f: &Failure) -> String {
    format!("FAILED {}: {f}", f.when())
}

/// The seeded run: draw, carry out, check.
async fn live(op: &Operator, config: &FuzzConfig) -> Result<(FuzzReport, Vec<Step>), FuzzError> {
    let started = tokio::time::Instant::now();
    let settings = settings::Settings::read(&op.dir).map_err(FuzzError::Settings)?;
    let (world, kinds, fault_resources, mut notes) = setup(op, &settings).await?;
    for (oracle, why) in &settings.oracles_off {
        notes.push(format!("oracle {oracle} is off (tests/fuzz.yaml): {why}"));
    }
    let mut planner = Planner::new(config.seed, kinds, fault_resources, config.faults, config.steps);
    let mut runner = Runner::new(world, quiet(), settings.oracles_off);
    let mut trace = Vec::new();
    let mut steps = Vec::new();
    let mut seen = Seen::default();
    let mut failure = runner.checkpoint(0).await.err();
    let total = usize::try_from(config.steps).unwrap_or(usize::MAX);
    if failure.is_none() {
        for n in 1..=total {
            let step = planner.next(&seen);
            let done = runner.step(n, &step).await;
            steps.push(step.clone());
            trace.push(line(n, &step, &done));
            if let Some(f) = done.failure {
                failure = Some(f);
                break;
            }
            if step.then == step::Then::Settle {
                seen.children = runner.children();
            }
        }
    }
    if failure.is_none() {
        failure = runner.end(total).await.err();
        if failure.is_some() {
            ended(&mut trace);
        }
    }
    if let Some(f) = &failure {
        trace.push(failure_line(f));
    }
    let report = FuzzReport {
        config: config.clone(),
        steps_run: steps.len(),
        trace,
        failure,
        shrunk: None,
        counts: runner.counts.clone(),
        wall: Duration::ZERO,
        virtual_time: started.elapsed(),
        notes,
    };
    runner.stop().await;
    Ok((report, steps))
}

/// Replay `steps` (no random draw) on a fresh world; the trace and the failure.
pub fn replay(op: &Operator, steps: &[Step]) -> Result<(Vec<String>, Option<Failure>), FuzzError> {
    runtime()?.block_on(async {
        let settings = settings::Settings::read(&op.dir).map_err(FuzzError::Settings)?;
        let (world, ..) = setup(op, &settings).await?;
        let mut runner = Runner::new(world, quiet(), settings.oracles_off);
        let mut trace = Vec::new();
        let mut failure = runner.checkpoint(0).await.err();
        if failure.is_none() {
            for (i, step) in steps.iter().enumerate() {
                let done = runner.step(i + 1, step).await;
                trace.push(line(i + 1, step, &done));
                if let Some(f) = done.failure {
                    failure = Some(f);
                    break;
                }
            }
        }
        if failure.is_none() {
            failure = runner.end(steps.len()).await.err();
            if failure.is_some() {
                ended(&mut trace);
            }
        }
        if let Some(f) = &failure {
            trace.push(failure_line(f));
        }
        runner.stop().await;
        Ok((trace, failure))
    })
}

/// Shrink the failing `steps` (whose run printed `trace`) to the fewest that fail with the
/// same key.
fn shrink_run(
    op: &Operator,
    mut steps: Vec<Step>,
    failure: &Failure,
    trace: &[String],
    budget: shrink::Budget,
) -> ShrunkRun {
    let started = std::time::Instant::now();
    steps.truncate(failure.step.max(1));
    let mut last: BTreeMap<usize, (Vec<String>, Failure)> = BTreeMap::new();
    let shrunk = shrink::shrink(steps.clone(), budget, |candidate| match replay(op, candidate) {
        Ok((trace, Some(f))) if f.key == failure.key => {
            last.insert(candidate.len(), (trace, f));
            true
        }
        _ => false,
    });
    // No step could be removed: the run that failed is the shortest found. It is not
    // replayed once more, since a failure that depends on timing may fail another way
    // (the same busy operator caught by another check) or not at all.
    let (trace, found) =
        last.remove(&shrunk.items.len()).unwrap_or_else(|| (trace.to_vec(), failure.clone()));
    ShrunkRun {
        trace,
        failure: found,
        runs: shrunk.runs,
        exhausted: shrunk.exhausted,
        wall: started.elapsed(),
    }
}

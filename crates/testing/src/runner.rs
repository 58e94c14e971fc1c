//! Running one test file: [`run_test`] starts a [`World`] on a fresh paused runtime, runs
//! each step (its action, a settle, its expectations, the per-step oracles, its golden
//! state), compares or writes the golden file, runs the end-of-test oracles, and returns a
//! [`TestReport`].

use ctop_core::Chain;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use crate::format::{Action, EventMatch, Expectation, Step, TestFile};
use crate::golden::{self, Golden};
use crate::matching::partial_match;
use crate::oracles::{Oracle, after_step, round_trips};
use crate::perturb;
use crate::settle::{Quiet, advance, settle};
use crate::state::Snapshot;
use crate::world::{Operator, World, WorldConfig, values_for};

/// How a run treats golden files.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum GoldenMode {
    /// Compare; a difference or a missing file fails the test.
    #[default]
    Compare,
    /// Write the file when it differs (`--update`).
    Update,
}

/// What happened to a test's golden file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GoldenOutcome {
    /// The test has `golden: false`, or did not get far enough to have a state.
    None,
    /// The state is what the file says.
    Matched,
    /// The file was written (new or changed).
    Written(PathBuf),
    /// The state differs (a failure says how).
    Differs,
}

/// One thing that went wrong in a test.
#[derive(Clone, Debug, PartialEq)]
pub struct Failure {
    /// The step (1-based) and its name; `None` before the first step or after the last.
    pub step: Option<(usize, String)>,
    /// The line of the test file it is about.
    pub line: Option<u64>,
    /// What went wrong (may span several lines: a diff, what did not converge).
    pub message: String,
}

/// How one test went.
#[derive(Clone, Debug)]
pub struct TestReport {
    /// The test's name.
    pub name: String,
    /// Its file.
    pub file: PathBuf,
    /// Its steps, and how many ran.
    pub steps: (usize, usize),
    /// Real time it took, start-up included.
    pub wall: Duration,
    /// Virtual time that passed in it.
    pub virtual_time: Duration,
    /// Everything that went wrong (none: it passed).
    pub failures: Vec<Failure>,
    /// Oracles turned off or not exercised, and why.
    pub notes: Vec<String>,
    /// Its golden file.
    pub golden: GoldenOutcome,
}

impl TestReport {
    /// Whether it passed.
    pub fn passed(&self) -> bool {
        self.failures.is_empty()
    }
}

/// Run `test` of `op` on a runtime of its own with a paused clock.
pub fn run_test(op: &Operator, test: &TestFile, mode: GoldenMode) -> TestReport {
    let wall = std::time::Instant::now();
    let mut report = TestReport {
        name: test.name.clone(),
        file: test.path.clone(),
        steps: (test.steps.len(), 0),
        wall: Duration::ZERO,
        virtual_time: Duration::ZERO,
        failures: Vec::new(),
        notes: test.oracles_off.iter().map(|(o, why)| format!("oracle {o} is off: {why}")).collect(),
        golden: GoldenOutcome::None,
    };
    match tokio::runtime::Builder::new_current_thread().enable_all().start_paused(true).build() {
        Ok(rt) => rt.block_on(run(op, test, mode, &mut report)),
        Err(e) => report.failures.push(Failure {
            step: None,
            line: None,
            message: format!("cannot start a runtime for the test: {e}"),
        }),
    }
    report.wall = wall.elapsed();
    report
}

/// A settled world for `test`, or the failure that kept it from starting.
async fn start_world(op: &Operator, test: &TestFile, q: Quiet) -> Result<World, String> {
    let values = values_for(&op.dir, test.values.as_ref()).map_err(|e| Chain(&e).to_string())?;
    let env = crate::format::env::value(test.env.as_ref());
    let config = WorldConfig { workloads: test.workloads.clone(), values, env, crds: test.crds.clone() };
    let world = World::start(op, &config).await.map_err(|e| Chain(&e).to_string())?;
    if let Err(e) = settle(&world, q).await {
        world.stop().await;
        return Err(format!("before the first step, {e}"));
    }
    Ok(world)
}

async fn run(op: &Operator, test: &TestFile, mode: GoldenMode, report: &mut TestReport) {
    let started = tokio::time::Instant::now();
    let q = Quiet { quiet: test.quiet, timeout: test.timeout, max_calls: crate::settle::MAX_CALLS };
    let mut world = match start_world(op, test, q).await {
        Ok(w) => w,
        Err(message) => return report.failures.push(Failure { step: None, line: None, message }),
    };
    let mut golden = Golden::default();
    // The last step after which the operator had objects to handle (with children, if any
    // step had some): the oracles that act on the world run on its state.
    let (mut last_alive, mut last_parent) = (None, None);
    for (i, step) in test.steps.iter().enumerate() {
        let n = i + 1;
        let busy = run_step(&mut world, step, q, &mut report.failures, n).await;
        report.steps.1 = n;
        let at = |message: String, line: u64| Failure {
            step: Some((n, step.name.clone())),
            line: Some(line),
            message,
        };
        // A replay needs the operator's directory, not the cluster (`World::act` skips it).
        let replayed = match &step.action {
            Action::Replay(r) => Some(crate::replay::step::run(op, r).await),
            _ => None,
        };
        if let Some(m) = replayed.as_ref().and_then(|r| r.failure.clone()) {
            report.failures.push(at(m, step.line));
        }
        if let Some(why) = world.failed() {
            report.failures.push(at(why, step.line));
            break;
        }
        match state_after(&world, test, n, step).await {
            Ok(after) => {
                check_expectations(&after.snapshot, &world, step, &mut report.failures, n).await;
                report.failures.extend(after.violations.into_iter().map(|v| at(v.to_string(), step.line)));
                golden
                    .steps
                    .push(golden::StepState { replay: replayed.and_then(|r| r.golden), ..after.golden });
                if after.primaries > 0 {
                    last_alive = Some(n);
                }
                if after.children > 0 {
                    last_parent = Some(n);
                }
            }
            Err(e) => report.failures.push(at(format!("cannot read the cluster: {e}"), step.line)),
        }
        if busy {
            // A world that never quieted would make every later step meaningless.
            break;
        }
    }
    if test.golden && report.steps.1 == test.steps.len() {
        report.golden = compare_golden(test, &golden, mode, &mut report.failures);
    }
    let acting = [Oracle::Idempotence, Oracle::FailedApplyPrunesNothing, Oracle::DeletionCleansUp];
    let wanted = acting.iter().any(|o| !test.oracles_off.contains_key(o));
    if report.failures.is_empty() && wanted {
        match last_parent.or(last_alive) {
            None => report.notes.push(
                "idempotence, failed-apply-prunes-nothing, deletion-cleans-up: no step left an object for the \
                 operator to handle"
                    .into(),
            ),
            Some(k) if k == test.steps.len() => end_oracles(&world, test, q, report).await,
            Some(k) => {
                // The test ends with nothing to act on: a fresh world replays it up to the
                // last step that had something (same steps, same virtual clock).
                world.stop().await;
                world = match replay(op, test, q, k).await {
                    Ok(w) => w,
                    Err(message) => {
                        report.failures.push(Failure {
                            step: None,
                            line: None,
                            message: format!("replaying the test up to step {k} for the oracles: {message}"),
                        });
                        report.virtual_time = started.elapsed();
                        return;
                    }
                };
                report.notes.push(format!("the oracles that act on the world ran on the state after step {k} (replayed)"));
                end_oracles(&world, test, q, report).await;
            }
        }
    }
    report.virtual_time = started.elapsed();
    world.stop().await;
}

/// A fresh world with the first `k` steps of `test` done (actions and settles only).
async fn replay(op: &Operator, test: &TestFile, q: Quiet, k: usize) -> Result<World, String> {
    let mut world = start_world(op, test, q).await?;
    let mut failures = Vec::new();
    for (i, step) in test.steps.iter().take(k).enumerate() {
        run_step(&mut world, step, q, &mut failures, i + 1).await;
        if let Some(f) = failures.first() {
            let message = f.message.clone();
            world.stop().await;
            return Err(format!("step {}: {message}", i + 1));
        }
    }
    Ok(world)
}

/// Carry out `step`'s action and settle; whether the world stayed busy.
async fn run_step(world: &mut World, step: &Step, q: Quiet, failures: &mut Vec<Failure>, n: usize) -> bool {
    let at = |message: String, line: u64| Failure {
        step: Some((n, step.name.clone())),
        line: Some(line),
        message,
    };
    let refused = world.act(&step.action).await.err();
    let wanted: Vec<(&String, u64)> = step
        .expect
        .iter()
        .filter_map(|e| match e {
            Expectation::Error { contains, line } => Some((contains, *line)),
            _ => None,
        })
        .collect();
    match (&refused, wanted.is_empty()) {
        // A seed says itself what failed (a write, a kind the cluster does not serve).
        (Some(e), true) if matches!(step.action, Action::Seed(_)) => failures.push(at(e.clone(), step.line)),
        (Some(e), true) => failures.push(at(format!("the API server refused it: {e}"), step.line)),
        (Some(e), false) => {
            for (text, line) in &wanted {
                if !e.contains(text.as_str()) {
                    failures.push(at(format!("expected a refusal containing {text:?}, got: {e}"), *line));
                }
            }
        }
        (None, false) => {
            for (text, line) in &wanted {
                failures
                    .push(at(format!("expected a refusal containing {text:?}, but it was accepted"), *line));
            }
        }
        (None, true) => {}
    }
    let settled = match &step.action {
        Action::Advance(d) => advance(world, *d, q).await,
        _ => settle(world, q).await,
    };
    match settled {
        Ok(_) => false,
        Err(e) => {
            failures.push(at(e.to_string(), step.line));
            true
        }
    }
}

/// The cluster after a step, as the runner reads it.
struct After {
    snapshot: Snapshot,
    golden: golden::StepState,
    violations: Vec<crate::oracles::Violation>,
    /// How many objects the operator handles.
    primaries: usize,
    /// How many children they have.
    children: usize,
}

/// The snapshot after step `n`, its golden state and the per-step oracles' violations.
async fn state_after(world: &World, test: &TestFile, n: usize, step: &Step) -> Result<After, String> {
    let snapshot = world.snapshot().await?;
    let last_calls = world.recording().last_by_object();
    let handled = last_calls.keys().cloned().collect();
    let applied = world.applied();
    let primaries = snapshot.primaries(world.spec(), &handled, &applied);
    let objects = snapshot.golden_objects(world.spec(), &primaries, &applied);
    let golden = golden::render_step(n, &step.name, &objects);
    let mut violations = after_step(world.spec(), &snapshot, &primaries, &last_calls);
    if world.spec().converting().next().is_some()
        && let Some(script) = world.script()
    {
        let (script, objects) = (script.clone(), snapshot.objects.clone());
        let found = tokio::task::spawn_blocking(move || round_trips(&script, &objects))
            .await
            .map_err(|e| format!("the conversion round trips stopped: {e}"))?;
        violations.extend(found);
    }
    violations.retain(|v| !test.oracles_off.contains_key(&v.oracle));
    let count = primaries.len();
    let children = primaries.iter().map(|p| snapshot.children_of(p).len()).sum();
    Ok(After { snapshot, golden, violations, primaries: count, children })
}

async fn check_expectations(
    snapshot: &Snapshot,
    world: &World,
    step: &Step,
    failures: &mut Vec<Failure>,
    n: usize,
) {
    let at = |message: String, line: u64| Failure {
        step: Some((n, step.name.clone())),
        line: Some(line),
        message,
    };
    for e in &step.expect {
        // A bare kind names the kind the world resolves it to (the script's own before a
        // built-in of the same name), never whichever object of that name comes first.
        let resolved = match e {
            Expectation::Object { target, .. } | Expectation::Absent { target, .. } => {
                Some(world.resolve(target).await)
            }
            Expectation::Event { event: EventMatch { regarding: Some(target), .. }, .. } => {
                Some(world.resolve(target).await)
            }
            _ => None,
        };
        let target = match resolved {
            Some(Ok(r)) => Some(r),
            Some(Err(message)) => {
                failures.push(at(message, e.line()));
                continue;
            }
            None => None,
        };
        match e {
            Expectation::Object { line, fields, .. } => {
                let Some(target) = &target else { continue };
                let found = match snapshot.find(target) {
                    Some(o) => Some(o.clone()),
                    None => world.get(target).await.unwrap_or_default(),
                };
                match found {
                    None => {
                        failures.push(at(format!("{target}: expected it to exist, but there is none"), *line))
                    }
                    Some(o) => {
                        let mismatches = partial_match(fields, &o);
                        if !mismatches.is_empty() {
                            let text: Vec<String> = mismatches.iter().map(|m| format!("\n  {m}")).collect();
                            failures.push(at(format!("{target} does not match:{}", text.concat()), *line));
                        }
                    }
                }
            }
            Expectation::Absent { line, .. } => {
                let Some(target) = &target else { continue };
                let found = match snapshot.find(target) {
                    Some(o) => Some(o.clone()),
                    None => world.get(target).await.unwrap_or_default(),
                };
                if let Some(o) = found {
                    let deleting = if o["metadata"]["deletionTimestamp"].is_null() {
                        String::new()
                    } else {
                        format!(" (being deleted; finalizers {})", o["metadata"]["finalizers"])
                    };
                    failures.push(at(
                        format!("{target}: expected it to be absent, but it exists{deleting}"),
                        *line,
                    ));
                }
            }
            Expectation::Event { line, event } => {
                let event = EventMatch { regarding: target.clone(), ..event.clone() };
                let event = &event;
                if !snapshot.events.iter().any(|e| event_matches(event, e)) {
                    let seen: Vec<String> =
                        snapshot.events.iter().map(|e| format!("\n  {}", event_line(e))).collect();
                    let seen = if seen.is_empty() { " none".to_owned() } else { seen.concat() };
                    failures.push(at(
                        format!("no event matches {}; the events are:{seen}", event_wanted(event)),
                        *line,
                    ));
                }
            }
            Expectation::Error { .. } => {}
        }
    }
}

fn event_matches(want: &EventMatch, e: &Value) -> bool {
    let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    want.type_.as_ref().is_none_or(|t| text(&e["type"]) == *t)
        && want.reason.as_ref().is_none_or(|r| text(&e["reason"]) == *r)
        && want.message.as_ref().is_none_or(|m| text(&e["note"]).contains(m.as_str()))
        && want.regarding.as_ref().is_none_or(|r| {
            let reg = &e["regarding"];
            // By group: an event may name another version of the object's kind.
            let fake = serde_json::json!({
                "kind": reg["kind"],
                "metadata": {"name": reg["name"], "namespace": reg["namespace"]},
            });
            let group = |v: &str| ctop_core::group_of(v).to_owned();
            crate::state::is(&fake, &crate::format::ObjectRef { api_version: None, ..r.clone() })
                && reg["apiVersion"]
                    .as_str()
                    .zip(r.api_version.as_deref())
                    .is_none_or(|(theirs, ours)| group(theirs) == group(ours))
        })
}

fn event_wanted(want: &EventMatch) -> String {
    let mut parts = Vec::new();
    if let Some(t) = &want.type_ {
        parts.push(format!("type {t}"));
    }
    if let Some(r) = &want.reason {
        parts.push(format!("reason {r}"));
    }
    if let Some(m) = &want.message {
        parts.push(format!("message containing {m:?}"));
    }
    if let Some(r) = &want.regarding {
        parts.push(format!("about {r}"));
    }
    parts.join(", ")
}

fn event_line(e: &Value) -> String {
    let reg = &e["regarding"];
    format!(
        "{} {} about {} {}: {}",
        e["type"].as_str().unwrap_or("?"),
        e["reason"].as_str().unwrap_or("?"),
        reg["kind"].as_str().unwrap_or("?"),
        reg["name"].as_str().unwrap_or("?"),
        e["note"].as_str().unwrap_or_default()
    )
}

fn compare_golden(
    test: &TestFile,
    golden: &Golden,
    mode: GoldenMode,
    failures: &mut Vec<Failure>,
) -> GoldenOutcome {
    let path = golden::path_of(&test.path);
    let shown = path.file_name().map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let test_name = test.path.file_name().map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let actual = golden.text(&test_name);
    let expected = std::fs::read_to_string(&path).ok();
    let fail = |failures: &mut Vec<Failure>, message: String| {
        failures.push(Failure { step: None, line: None, message })
    };
    match (mode, expected) {
        (_, Some(e)) if e == actual => GoldenOutcome::Matched,
        (GoldenMode::Update, _) => match std::fs::write(&path, &actual) {
            Ok(()) => GoldenOutcome::Written(path),
            Err(e) => {
                fail(failures, format!("cannot write {}: {e}", path.display()));
                GoldenOutcome::Differs
            }
        },
        (GoldenMode::Compare, None) => {
            fail(
                failures,
                format!(
                    "there is no golden file {} yet: run `ctop test --update` to write it, review it and commit it \
                     (or set `golden: false` in the test)",
                    path.display()
                ),
            );
            GoldenOutcome::Differs
        }
        (GoldenMode::Compare, Some(e)) => {
            fail(
                failures,
                format!(
                    "the state differs from {} (if the change is intended, run `ctop test --update` and review the diff):\n{}",
                    path.display(),
                    golden::diff(&e, &actual, &shown).trim_end()
                ),
            );
            GoldenOutcome::Differs
        }
    }
}

async fn end_oracles(world: &World, test: &TestFile, q: Quiet, report: &mut TestReport) {
    let on = |o: Oracle| !test.oracles_off.contains_key(&o);
    let runs: [(Oracle, &str); 3] = [
        (Oracle::Idempotence, "idempotence"),
        (Oracle::FailedApplyPrunesNothing, "failed apply"),
        (Oracle::DeletionCleansUp, "deletion"),
    ];
    for (oracle, what) in runs {
        if !on(oracle) {
            continue;
        }
        let found = match oracle {
            Oracle::Idempotence => perturb::idempotence(world, q).await,
            Oracle::FailedApplyPrunesNothing => perturb::failed_apply(world, q).await,
            _ => perturb::deletion(world, q).await,
        };
        match found {
            Ok(found) => {
                report.notes.extend(found.notes);
                report.failures.extend(found.violations.into_iter().map(|v| Failure {
                    step: None,
                    line: None,
                    message: format!("after the last step: {v}"),
                }));
                if found.busy {
                    // The next oracles would only wait for it again.
                    break;
                }
            }
            Err(e) => report.failures.push(Failure {
                step: None,
                line: None,
                message: format!("the {what} oracle could not run: {e}"),
            }),
        }
    }
}

/// The test files of an operator: `DIR/tests/*.yaml` but the golden files and the fuzz
/// settings (`fuzz.yaml`), by name.
pub fn test_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let tests = dir.join("tests");
    let mut out = Vec::new();
    let entries = match std::fs::read_dir(&tests) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
        Err(e) => return Err(e),
    };
    for entry in entries {
        let path = entry?.path();
        let yaml = path.extension().is_some_and(|x| x == "yaml" || x == "yml");
        let settings = path.file_name().is_some_and(|n| n == crate::fuzz::settings::FILE);
        if yaml && path.is_file() && !golden::is_golden(&path) && !settings {
            out.push(path);
        }
    }
    out.sort();
    Ok(out)
}

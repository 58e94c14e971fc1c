//! The fuzzer on the examples: a seed replays byte for byte, the examples pass a run with
//! faults, and broken copies of the examples (a status that flips, a child that
//! disappears on every other reconcile, a finalizer never released) are caught, with a
//! shrunk trace of at most 20 steps.

use std::path::{Path, PathBuf};
use std::time::Duration;

use ctop_testing::ObjectRef;
use ctop_testing::Operator;
use ctop_testing::fuzz::step::{Action, Step, Then};
use ctop_testing::fuzz::{FuzzConfig, FuzzReport, fuzz, replay, shrink};

const SEED: u64 = 20_261_126;

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

fn config(steps: u64, faults: bool) -> FuzzConfig {
    FuzzConfig {
        seed: SEED,
        steps,
        faults,
        // 80 replays bound the shrinking; the wall-clock bound is only a backstop, wide enough
        // that a loaded machine still gets the 80 (the finalizer case takes about 70 s in
        // all on 2 cores, and stopped at 60 s of shrinking beside a soak) and below
        // nextest's 300 s limit.
        shrink: Some(shrink::Budget { runs: 80, wall: Duration::from_secs(150) }),
    }
}

fn run(dir: &Path, config: &FuzzConfig) -> FuzzReport {
    let op = Operator { dir: dir.to_owned(), entry: "operator.ct".into() };
    match fuzz(&op, config) {
        Ok(r) => r,
        Err(e) => panic!("{}: {e}", dir.display()),
    }
}

/// A copy of `examples/NAME` without its tests (but with its fuzz settings), with `edit`
/// applied to its script.
fn copy(name: &str, edit: impl FnOnce(&str) -> String) -> tempfile::TempDir {
    fn copy_dir(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).expect("mkdir");
        for entry in std::fs::read_dir(from).expect("read_dir").flatten() {
            let (path, name) = (entry.path(), entry.file_name());
            let in_tests = from.file_name().is_some_and(|d| d == "tests");
            if in_tests && name != "fuzz.yaml" {
                continue;
            }
            if name == "node_modules" {
                std::os::unix::fs::symlink(&path, to.join(&name)).expect("symlink node_modules");
                continue;
            }
            if path.is_dir() {
                copy_dir(&path, &to.join(&name));
            } else {
                std::fs::copy(&path, to.join(&name)).expect("copy");
            }
        }
    }
    let dir = tempfile::tempdir().expect("tempdir");
    copy_dir(&examples().join(name), dir.path());
    let script = dir.path().join("operator.ct");
    let text = std::fs::read_to_string(&script).expect("operator.ct");
    let edited = edit(&text);
    assert_ne!(edited, text, "{name}: the edit changed nothing");
    std::fs::write(&script, edited).expect("write operator.ct");
    dir
}

#[test]
fn the_same_seed_replays_byte_for_byte() {
    let dir = examples().join("webapp");
    let c = config(120, true);
    let (a, b) = (run(&dir, &c), run(&dir, &c));
    assert!(a.failure.is_none(), "{:#?}", a.trace);
    assert_eq!(a.trace.len(), 120);
    assert_eq!(a.trace, b.trace);
    assert!(a.counts.faults > 0 && a.counts.restarts == 1, "{:?}", a.counts);
    let other = run(&dir, &FuzzConfig { seed: SEED + 1, ..c });
    assert_ne!(a.trace, other.trace, "another seed draws other steps");
}

#[test]
fn every_example_passes_a_run_with_faults() {
    let mut failed = Vec::new();
    for entry in std::fs::read_dir(examples()).expect("examples").flatten() {
        let dir = entry.path();
        if !dir.join("operator.ct").is_file() {
            continue;
        }
        let report = run(&dir, &FuzzConfig { shrink: None, ..config(150, true) });
        assert!(report.counts.accepted > 0, "{}: nothing was written: {:#?}", dir.display(), report.trace);
        if let Some(f) = &report.failure {
            failed.push(format!("{}: {f}\n{}", dir.display(), report.trace.join("\n")));
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n\n"));
}

/// Fuzz the broken copy `dir` and check the failure is found, by `keys`, and shrunk to at
/// most 20 steps. A seed whose run never reaches the broken path (the cronjob example's
/// generated schedules are mostly not cron expressions) passes: up to three seeds are tried.
fn caught(name: &str, dir: &Path, keys: &[&str]) {
    let mut last = None;
    for seed in SEED..SEED + 3 {
        let report = run(dir, &FuzzConfig { seed, ..config(80, false) });
        let Some(failure) = report.failure.clone() else {
            last = Some(report);
            continue;
        };
        assert!(keys.contains(&failure.key.as_str()), "{name} (seed {seed}): found {failure}");
        let shrunk = report.shrunk.as_ref().expect("shrunk");
        let steps = shrunk.trace.len().saturating_sub(1);
        assert!(
            (1..=20).contains(&steps) && shrunk.failure.key == failure.key,
            "{name} (seed {seed}): shrunk to {steps} steps:\n{}",
            shrunk.trace.join("\n")
        );
        return;
    }
    let trace = last.map(|r| r.trace.join("\n")).unwrap_or_default();
    panic!("{name}: three seeds found nothing; the last run:\n{trace}");
}

/// The examples whose controllers apply children whatever the time. The cronjob example
/// applies a Job when its schedule is due by the script's clock, which is real time, not
/// the virtual clock: within a fuzz run no schedule comes due.
const WITH_CHILDREN: [&str; 4] = ["webapp", "myapp", "myresource", "webpage"];

#[test]
fn a_child_that_disappears_every_other_reconcile_is_caught() {
    for name in WITH_CHILDREN {
        // Every child is applied by every second reconcile only: pruned, then applied again.
        let dir = copy(name, |s| {
            s.replace("  apply(", "  __flap(")
                + "\nconst __applies = {};\nfunction __flap(o) {\n  const k = `${o.kind}/${o.metadata.name}`;\n  \
                   __applies[k] = (__applies[k] ?? 0) + 1;\n  if (__applies[k] % 2 === 1) apply(o);\n}\n"
        });
        // The flapping keeps the operator busy, found by a settle ("not quiet"), or by the
        // settle after the idempotence oracle's change of nothing when the operator rested
        // first (each runtime of the pool keeps its own counter: two calls in a row on two
        // runtimes both apply).
        caught(name, dir.path(), &["not quiet", "oracle idempotence"]);
    }
}

#[test]
fn a_finalizer_never_released_is_caught() {
    for name in ["webapp", "myresource", "webpage", "cronjob", "greeting"] {
        let dir = copy(name, |s| {
            s.replacen(
                "\n  .reconcile(",
                "\n  .finalize(() => ({ type: \"error\", message: \"not yet\" }))\n  .reconcile(",
                1,
            )
        });
        caught(name, dir.path(), &["oracle deletion-cleans-up", "oracle failed-apply-prunes-nothing"]);
    }
}

#[test]
fn a_status_that_flips_is_caught() {
    for name in ["webapp", "myapp", "myresource", "webpage", "cronjob", "greeting"] {
        // A condition whose status every reconcile turns around, with nothing else changed
        // (read from the object, so how many reconciles ran does not matter).
        let dir = copy(name, |s| {
            let at = s.find("\n  .reconcile((").expect("a reconcile");
            let arg_start = at + "\n  .reconcile((".len();
            let arg_end = arg_start + s[arg_start..].find(')').expect("an argument");
            let arg = &s[arg_start..arg_end];
            let body = arg_end + s[arg_end..].find('{').expect("a body") + 1;
            format!(
                "{}\n    __flip({arg});{}\nimport {{ setCondition as __setCondition }} from \"ctop\";\n\
                 function __flip(o) {{\n  const now = o.status?.conditions?.find((c) => c.type === \"Flip\")?.status === \"True\";\n  \
                 __setCondition(o, {{ type: \"Flip\", status: !now, reason: \"Flip\", message: \"flips\" }});\n}}\n",
                &s[..body],
                &s[body..]
            )
        });
        // An example may leave the idempotence oracle out for a reason of its own (cronjob's
        // failing runs); this test is about the oracle, so it is on here.
        let settings = dir.path().join("tests/fuzz.yaml");
        if let Ok(text) = std::fs::read_to_string(&settings) {
            let kept: Vec<&str> =
                text.lines().filter(|l| !l.trim_start().starts_with("idempotence:")).collect();
            std::fs::write(&settings, kept.join("\n") + "\n").expect("rewrite tests/fuzz.yaml");
        }
        caught(name, dir.path(), &["oracle idempotence", "not quiet"]);
    }
}

/// An operator whose invariant holds only when the script's `Env.REGION` is `eu`.
const ENV_INVARIANT: &str = r#"import { resource, z, operator, Env, Result } from "ctop";
const probe = resource("env.example.com/v1", "Probe", { spec: { n: z.number().int().min(0).max(3) } });
operator(probe)
  .reconcile(() => Result.ok())
  .invariant("the region is set", () => Env.REGION === "eu" || `Env.REGION is ${Env.REGION}`);
"#;

#[test]
fn tests_fuzz_yaml_sets_the_scripts_env() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("tests")).expect("tests");
    std::fs::write(dir.path().join("operator.ct"), ENV_INVARIANT).expect("script");
    let settings = dir.path().join("tests/fuzz.yaml");
    let c = FuzzConfig { shrink: None, ..config(10, false) };
    std::fs::write(&settings, "env:\n  REGION: eu\n").expect("fuzz.yaml");
    let report = run(dir.path(), &c);
    assert!(report.failure.is_none() && report.counts.invariant_checks > 0, "{:#?}", report.trace);
    std::fs::write(&settings, "env:\n  REGION: us\n").expect("fuzz.yaml");
    let failure = run(dir.path(), &c).failure.expect("the invariant fails");
    assert_eq!(failure.key, "invariant \"the region is set\"");
    assert!(failure.message.ends_with(": Env.REGION is us"), "{failure}");
}

/// A broken operator: its status follows `spec.n`, but for 2 (and its invariant says so).
const OFF_BY_ONE: &str = r#"import { resource, z, operator, setStatus, Result } from "ctop";
const probe = resource("trace.example.com/v1", "Probe", {
  spec: { n: z.number().int().min(0).max(3) },
  status: { n: z.number().int() },
});
operator(probe)
  .reconcile((cr) => {
    setStatus(cr, { n: cr.spec.n === 2 ? 1 : cr.spec.n });
    return Result.ok();
  })
  .invariant("status.n follows spec.n", (cr) => cr.status?.n === cr.spec.n || `status.n is ${cr.status?.n}`);
"#;

/// A step that applies Probe `p` with `spec.n = n`.
fn probe(n: u64, what: &str, then: Then) -> Step {
    let target = ObjectRef {
        api_version: Some("trace.example.com/v1".into()),
        kind: "Probe".into(),
        namespace: Some("default".into()),
        name: "p".into(),
    };
    let object = serde_json::json!({"apiVersion": "trace.example.com/v1", "kind": "Probe",
        "metadata": {"name": "p", "namespace": "default"}, "spec": {"n": n}});
    Step { action: Action::Apply { target, object, what: what.into() }, then }
}

#[test]
fn the_trace_says_new_for_created_objects_and_fails_the_step_whose_check_failed() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("operator.ct"), OFF_BY_ONE).expect("script");
    let op = Operator { dir: dir.path().to_owned(), entry: "operator.ct".into() };
    let target = ObjectRef {
        api_version: Some("trace.example.com/v1".into()),
        kind: "Probe".into(),
        namespace: Some("default".into()),
        name: "p".into(),
    };
    let delete = Step { action: Action::Delete { target }, then: Then::Settle };

    // New only when it did not exist before the step: created, applied again, deleted and
    // created again. The check after step 5 fails, and step 5 says so; no step runs after.
    let steps = [
        probe(0, "from the samples", Then::Settle),
        probe(1, "spec generated from the schema", Then::Settle),
        delete,
        probe(3, "spec changed: n=3", Then::Settle),
        probe(2, "spec changed: n=2", Then::Settle),
        probe(0, "spec changed: n=0", Then::Settle),
    ];
    let (trace, failure) = replay(&op, &steps).expect("replays");
    let failure = failure.expect("the invariant fails");
    assert_eq!((failure.step, failure.end), (5, false));
    assert_eq!(
        trace,
        [
            "#1 apply Probe default/p (new, from the samples) -> ok",
            "#2 apply Probe default/p (spec generated from the schema) -> ok",
            "#3 delete Probe default/p -> ok",
            "#4 apply Probe default/p (new, spec changed: n=3) -> ok",
            "#5 apply Probe default/p (spec changed: n=2) -> ok, then the check after it failed",
            "FAILED after step 5: invariant \"status.n follows spec.n\": Probe default/p: status.n is 1",
        ]
    );

    // The last step only pauses: its object is checked by the checks at the end, which the
    // last step's line and the failure name (not a step after the last).
    let (trace, failure) = replay(
        &op,
        &[
            probe(0, "from the samples", Then::Settle),
            probe(2, "spec changed: n=2", Then::Pause(Duration::from_millis(10))),
        ],
    )
    .expect("replays");
    assert_eq!(failure.map(|f| (f.step, f.end)), Some((2, true)));
    assert_eq!(
        trace[1..],
        [
            "#2 apply Probe default/p (spec changed: n=2), then only 10ms -> ok, then the checks at the end failed",
            "FAILED after step 2, in the checks at the end: invariant \"status.n follows spec.n\": Probe default/p: status.n is 1",
        ]
    );
}

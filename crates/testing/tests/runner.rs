//! The runner on a real example (`examples/webapp`): its tests pass, a wrong expectation
//! fails with a message that says what differs, a golden file goes round from `--update`
//! to a comparison, and broken copies of the example are caught by the oracles.

use std::path::{Path, PathBuf};
use std::time::Duration;

use ctop_testing::GoldenOutcome;
use ctop_testing::{GoldenMode, Operator, TestFile, TestReport, run_test, test_files};

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

/// A copy of `examples/webapp` (script and samples, no tests) in a temporary directory,
/// with `edit` applied to its script.
fn webapp_copy(edit: impl FnOnce(String) -> String) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let from = examples().join("webapp");
    let script = std::fs::read_to_string(from.join("operator.ct")).expect("operator.ct");
    std::fs::write(dir.path().join("operator.ct"), edit(script)).expect("write operator.ct");
    std::fs::create_dir_all(dir.path().join("samples")).expect("samples");
    std::fs::create_dir_all(dir.path().join("tests")).expect("tests");
    std::fs::copy(from.join("samples/webapp.yaml"), dir.path().join("samples/webapp.yaml")).expect("sample");
    dir
}

/// Run the test `text`, written as `tests/NAME.yaml` of the operator in `dir`.
fn run(dir: &Path, name: &str, text: &str, mode: GoldenMode) -> TestReport {
    let path = dir.join("tests").join(format!("{name}.yaml"));
    std::fs::write(&path, text).expect("write the test");
    let test = TestFile::read(&path, dir).expect("a valid test");
    run_test(&Operator { dir: dir.to_owned(), entry: "operator.ct".into() }, &test, mode)
}

fn messages(r: &TestReport) -> Vec<String> {
    r.failures.iter().map(|f| f.message.clone()).collect()
}

#[test]
fn the_webapp_example_passes_its_tests() {
    let dir = examples().join("webapp");
    let op = Operator { dir: dir.clone(), entry: "operator.ct".into() };
    let files = test_files(&dir).expect("the tests");
    assert!(files.len() >= 2, "{files:?}");
    for f in files {
        let test = TestFile::read(&f, &dir).expect("valid");
        let report = run_test(&op, &test, GoldenMode::Compare);
        assert!(report.passed(), "{}: {:#?}", f.display(), report.failures);
        assert_eq!(report.golden, GoldenOutcome::Matched, "{}", f.display());
    }
}

#[test]
fn a_wrong_expectation_fails_with_what_differs() {
    let dir = webapp_copy(|s| s);
    let report = run(
        dir.path(),
        "wrong",
        "golden: false\nsteps:\n  - name: create\n    apply: samples/webapp.yaml\n    expect:\n      - kind: Deployment\n        metadata: {name: shop}\n        spec: {replicas: 5}\n      - absent: Service/shop\n",
        GoldenMode::Compare,
    );
    assert_eq!(
        messages(&report),
        [
            "Deployment shop does not match:\n  spec.replicas: expected 5, got 2",
            "Service shop: expected it to be absent, but it exists",
        ]
    );
    let first = &report.failures[0];
    assert_eq!((first.step.clone(), first.line), (Some((1, "create".into())), Some(6)));
}

#[test]
fn a_golden_file_is_written_then_compared() {
    let dir = webapp_copy(|s| s);
    let text =
        "steps:\n  - apply: samples/webapp.yaml\n  - patch: WebApp/shop\n    merge: {spec: {replicas: 3}}\n";
    let missing = run(dir.path(), "g", text, GoldenMode::Compare);
    assert!(messages(&missing)[0].starts_with("there is no golden file"), "{:?}", missing.failures);
    let written = run(dir.path(), "g", text, GoldenMode::Update);
    let golden = dir.path().join("tests/g.golden.yaml");
    assert!(written.passed(), "{:#?}", written.failures);
    assert_eq!(written.golden, GoldenOutcome::Written(golden.clone()));
    let again = run(dir.path(), "g", text, GoldenMode::Compare);
    assert!(again.passed() && again.golden == GoldenOutcome::Matched, "{:#?}", again.failures);
    // An edit of the golden file is a difference, shown as a diff of this run against it.
    let saved = std::fs::read_to_string(&golden).expect("golden");
    assert!(saved.contains("step: 2\nname: patch WebApp shop\n"), "{saved}");
    std::fs::write(&golden, saved.replacen("    replicas: 3\n", "    replicas: 4\n", 1)).expect("edit");
    let differs = run(dir.path(), "g", text, GoldenMode::Compare);
    assert_eq!(differs.golden, GoldenOutcome::Differs);
    let m = &messages(&differs)[0];
    assert!(m.contains("--- g.golden.yaml (golden)\n+++ g.golden.yaml (this run)"), "{m}");
    assert!(m.contains("\n-    replicas: 4\n+    replicas: 3\n"), "{m}");
}

#[test]
fn an_hour_passes_on_the_virtual_clock() {
    let dir = webapp_copy(|s| s);
    let report = run(
        dir.path(),
        "hour",
        "golden: false\nsteps:\n  - apply: samples/webapp.yaml\n  - advance: 24h\n",
        GoldenMode::Compare,
    );
    assert!(report.passed(), "{:#?}", report.failures);
    assert!(report.virtual_time >= Duration::from_secs(24 * 3600), "{:?}", report.virtual_time);
}

const APPLY: &str = "golden: false\nsteps:\n  - apply: samples/webapp.yaml\n";

#[test]
fn a_status_that_flips_is_caught_by_idempotence() {
    let dir = webapp_copy(|s| {
        s.replace("operator(webApp)", "let calls = 0;\noperator(webApp)").replace(
            r#"setStatus(cr, { ready, phase: ready ? "Running" : "Pending" });"#,
            r#"setStatus(cr, { ready, phase: calls++ % 2 ? "Running" : "Pending" });"#,
        )
    });
    let report = run(dir.path(), "flip", APPLY, GoldenMode::Compare);
    assert!(
        messages(&report).iter().any(|m| m
            == "after the last step: oracle idempotence: a reconcile with nothing changed wrote WebApp default/shop: changed status.phase"),
        "{:#?}",
        report.failures
    );
}

#[test]
fn a_child_that_disappears_every_other_reconcile_is_caught() {
    let dir = webapp_copy(|s| {
        s.replace("operator(webApp)", "let calls = 0;\noperator(webApp)")
            .replace("    apply(Service({", "    if (calls++ % 2 === 0) apply(Service({")
    });
    let report = run(dir.path(), "flap", APPLY, GoldenMode::Compare);
    let m = messages(&report).join("\n");
    assert!(
        m.contains("the operator keeps itself busy: ") && m.contains("WebApp default/shop (reconcile)"),
        "{m}"
    );
}

#[test]
fn a_finalizer_never_released_is_caught_by_deletion() {
    let dir = webapp_copy(|s| {
        let edited =
            s.replacen("\n  .reconcile(", "\n  .finalize(() => Result.error(\"not yet\"))\n  .reconcile(", 1);
        assert_ne!(edited, s, "the script has a reconcile");
        edited
    });
    let report = run(dir.path(), "stuck", APPLY, GoldenMode::Compare);
    let m = messages(&report);
    assert!(
        m.iter().any(|m| m.starts_with(
            "after the last step: oracle deletion-cleans-up: WebApp default/shop is still there"
        ) && m.ends_with("(finalizers: [\"webapps.apps.example.com/finalizer\"])")),
        "{m:#?}"
    );
    assert!(
        m.iter().any(|m| m.contains("Deployment default/shop, a child of a deleted object, is still there")),
        "{m:#?}"
    );
}

/// The runtime's golden case of a custom `CronJob` (the kubebuilder tutorial's group) that
/// reads the built-in `batch/v1` CronJob of the same name: its test applies both, refers to
/// each, and compares its golden file.
#[test]
fn a_kind_named_like_a_built_in_of_another_group_runs_beside_it() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../runtime/tests/golden/kubebuilder-cronjob");
    let op = Operator { dir: dir.clone(), entry: "operator.ct".into() };
    let files = test_files(&dir).expect("the tests");
    assert_eq!(files.len(), 1, "{files:?}");
    let test = TestFile::read(&files[0], &dir).expect("valid");
    let report = run_test(&op, &test, GoldenMode::Compare);
    assert!(report.passed(), "{:#?}", report.failures);
    assert_eq!(report.golden, GoldenOutcome::Matched);

    // A bare `CronJob` is the script's own; the built-in one needs its apiVersion.
    let text = "golden: false\nsteps:\n  - apply: samples/cronjob.yaml\n    expect:\n      \
                - {kind: CronJob, metadata: {name: cronjob-sample}, spec: {schedule: \"@hourly\"}}\n      \
                - {apiVersion: batch/v1, kind: CronJob, metadata: {name: cronjob-sample}}\n";
    let copy = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(copy.path().join("samples")).expect("samples");
    std::fs::create_dir_all(copy.path().join("tests")).expect("tests");
    std::fs::copy(dir.join("operator.ct"), copy.path().join("operator.ct")).expect("script");
    std::fs::copy(dir.join("samples/cronjob.yaml"), copy.path().join("samples/cronjob.yaml"))
        .expect("sample");
    let report = run(copy.path(), "bare", text, GoldenMode::Compare);
    assert_eq!(
        messages(&report),
        [
            "CronJob cronjob-sample does not match:\n  spec.schedule: expected \"@hourly\", got \"*/1 * * * *\"",
            "CronJob cronjob-sample: expected it to exist, but there is none",
        ]
    );
}

/// A script that reports what it reads of `Env` in its status.
const ENV_SCRIPT: &str = r#"import { resource, z, operator, setStatus, Env, Result } from "ctop";
const probe = resource("env.example.com/v1", "Probe", { status: { region: z.string(), home: z.boolean() } });
operator(probe).reconcile((cr) => {
  setStatus(cr, { region: Env.REGION ?? "none", home: Env.HOME !== undefined });
  return Result.ok();
});
"#;

#[test]
fn a_test_sets_the_scripts_env() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("tests")).expect("tests");
    std::fs::write(dir.path().join("operator.ct"), ENV_SCRIPT).expect("script");
    let test = |env: &str, region: &str| {
        format!(
            "golden: false\n{env}steps:\n  - apply: {{apiVersion: env.example.com/v1, kind: Probe, metadata: {{name: p}}}}\n    \
             expect:\n      - {{kind: Probe, metadata: {{name: p}}, status: {{region: {region}, home: false}}}}\n"
        )
    };
    let set = run(dir.path(), "set", &test("env: {REGION: eu-west-1}\n", "eu-west-1"), GoldenMode::Compare);
    assert!(set.passed(), "{:#?}", set.failures);
    // The test's env is all the script sees: nothing of the process, not even CTOP_ENV_*.
    let empty = run(dir.path(), "empty", &test("env: {}\n", "none"), GoldenMode::Compare);
    assert!(empty.passed(), "{:#?}", empty.failures);
    let wrong = run(dir.path(), "wrong", &test("env: {REGION: us}\n", "eu-west-1"), GoldenMode::Compare);
    assert_eq!(
        messages(&wrong),
        ["Probe p does not match:\n  status.region: expected \"eu-west-1\", got \"us\""]
    );
}

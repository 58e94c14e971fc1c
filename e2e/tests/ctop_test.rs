//! `ctop test` as CI runs it: the real binary on a scaffolded operator and on copies of it
//! with a failing and an invalid test; exit codes (0, 1, 2), the summary line, `--filter`,
//! `--junit` and the `--update` round trip.

use std::path::Path;
use std::process::{Command, Output};

use ctop_e2e::binary;

fn ctop(args: &[&str]) -> Output {
    Command::new(binary::ctop()).args(args).env_remove("CTOP_LOG").output().expect("ctop runs")
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A scaffolded operator in `dir/op` (kind Demo).
fn scaffold(dir: &Path) -> String {
    let op = dir.join("op");
    let op = op.to_str().expect("utf-8 path").to_owned();
    let out = ctop(&["init", &op, "--kind", "Demo", "--group", "demo.example.com"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    op
}

#[test]
fn a_scaffolded_operator_records_then_passes_its_test() {
    let dir = tempfile::tempdir().expect("tempdir");
    let op = scaffold(dir.path());
    let first = ctop(&["test", &op]);
    assert_eq!(first.status.code(), Some(1), "{}", stdout(&first));
    assert!(stdout(&first).contains("there is no golden file"), "{}", stdout(&first));
    let update = ctop(&["test", &op, "--update"]);
    assert_eq!(update.status.code(), Some(0), "{}", stdout(&update));
    assert!(
        stdout(&update).contains("ctop test: 1 passed, 0 failed (1 golden file(s) written) in "),
        "{}",
        stdout(&update)
    );
    let golden =
        std::fs::read_to_string(Path::new(&op).join("tests/demo.golden.yaml")).expect("golden written");
    assert!(golden.contains("step: 5\nname: fewer than one replica is refused\n"), "{golden}");
    let junit = dir.path().join("junit.xml");
    let again = ctop(&["test", &op, "--junit", junit.to_str().expect("utf-8")]);
    assert_eq!(again.status.code(), Some(0), "{}", stdout(&again));
    let last = stdout(&again).lines().last().unwrap_or_default().to_owned();
    assert!(last.starts_with("ctop test: 1 passed, 0 failed in "), "{last}");
    let xml = std::fs::read_to_string(&junit).expect("junit written");
    assert!(xml.contains("tests=\"1\"") && xml.contains("failures=\"0\""), "{xml}");
}

#[test]
fn failures_exit_1_and_invalid_files_exit_2() {
    let dir = tempfile::tempdir().expect("tempdir");
    let op = scaffold(dir.path());
    let tests = Path::new(&op).join("tests");
    std::fs::write(
        tests.join("wrong.yaml"),
        "golden: false\nsteps:\n  - apply: samples/demo.yaml\n    expect:\n      - kind: Deployment\n        metadata: {name: hello}\n        spec: {replicas: 7}\n",
    )
    .expect("write");
    let failed = ctop(&["test", &op, "--filter", "wrong"]);
    assert_eq!(failed.status.code(), Some(1), "{}", stdout(&failed));
    let text = stdout(&failed);
    assert!(text.contains("- step 1 \"apply Demo hello\" ("), "{text}");
    assert!(
        text.contains(
            "wrong.yaml:5): Deployment hello does not match:\n      spec.replicas: expected 7, got 2"
        ),
        "{text}"
    );
    assert!(text.contains("ctop test: 0 passed, 1 failed in "), "{text}");

    let none = ctop(&["test", &op, "--filter", "no-such-test"]);
    assert_eq!(none.status.code(), Some(2), "{}", stdout(&none));
    assert!(stdout(&none).contains("no test matches --filter \"no-such-test\""), "{}", stdout(&none));

    std::fs::write(tests.join("typo.yaml"), "steps:\n  - advance: 1m\n    expct: []\n").expect("write");
    let invalid = ctop(&["test", &op]);
    assert_eq!(invalid.status.code(), Some(2), "{}", stdout(&invalid));
    let text = stdout(&invalid);
    assert!(text.contains("typo.yaml:3: unknown field `expct`"), "{text}");
    assert!(text.contains("nothing was run"), "{text}");
}

#[test]
fn the_fuzzer_passes_a_scaffold_and_reports_a_broken_copy_with_its_seed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let op = scaffold(dir.path());
    let trace = dir.path().join("trace.txt");
    let args = ["test", &op, "--fuzz", "--seed", "7", "--steps", "40", "--faults", "--trace"];
    let ok = ctop(&[&args[..], &[trace.to_str().expect("utf-8")]].concat());
    assert_eq!(ok.status.code(), Some(0), "{}", stdout(&ok));
    assert!(
        stdout(&ok).starts_with(&format!("ok     fuzz {op} (seed 7, faults on): 40 steps: ")),
        "{}",
        stdout(&ok)
    );
    let lines = std::fs::read_to_string(&trace).expect("trace written");
    assert_eq!(lines.lines().count(), 40, "{lines}");
    assert!(lines.starts_with("#1 "), "{lines}");

    // A finalizer that is never released: deleting the Demo leaves it behind.
    let script = Path::new(&op).join("operator.ct");
    let text = std::fs::read_to_string(&script).expect("script");
    let broken = text.replacen(
        "\n  .reconcile(",
        "\n  .finalize(() => ({ type: \"error\", message: \"not yet\" }))\n  .reconcile(",
        1,
    );
    assert_ne!(broken, text, "the scaffold has a reconcile");
    std::fs::write(&script, broken).expect("write");
    let failed = ctop(&["test", &op, "--fuzz", "--seed", "7", "--steps", "40"]);
    let out = stdout(&failed);
    assert_eq!(failed.status.code(), Some(1), "{out}");
    assert!(out.starts_with(&format!("FAILED fuzz {op} (seed 7) after step ")), "{out}");
    assert!(
        out.contains("oracle deletion-cleans-up") || out.contains("oracle failed-apply-prunes-nothing"),
        "{out}"
    );
    assert!(
        out.contains("  shrunk to ")
            && out.contains(&format!("repeat with: ctop test {op} --fuzz --seed 7 --steps ")),
        "{out}"
    );
}

//! A recording as a test's input: examples/webapp is recorded reconciling two WebApps (one
//! in a namespace of its own), then test files use it: `seed:` starts a fresh cluster where
//! the recorded one was (the WebApps with their status, their children owned by them), and
//! `replay:` runs its calls against the script under test or another version, failing on
//! differences unless they are allowed.

mod common;

use common::webapp;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use ctop_testing::GoldenOutcome;
use ctop_testing::{GoldenMode, Operator, TestFile, TestReport, run_test};
use ctop_testing::{MAX_CALLS, Quiet, advance, settle};
use serde_json::json;

/// The recording every test here reads, made once per run: WebApps `default/hello` and
/// `prod/shop` created, then a resync (5 minutes later) that hands each to a reconcile
/// with its status `Running`.
fn recording() -> &'static Path {
    static FILE: OnceLock<PathBuf> = OnceLock::new();
    FILE.get_or_init(|| {
        // One file per process: nextest runs each test in a process of its own, at once.
        let name = format!("recorded-webapp-{}.ctrec", std::process::id());
        let file = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
        for part in ["", ".1", ".2", ".3"] {
            let _ = std::fs::remove_file(format!("{}{part}", file.display()));
        }
        record(&file);
        file
    })
}

fn record(file: &Path) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .expect("runtime");
    rt.block_on(async {
        let (world, writer) = common::recorded_webapp(file).await;
        let quiet =
            Quiet { quiet: Duration::from_secs(5), timeout: Duration::from_secs(600), max_calls: MAX_CALLS };
        settle(&world, quiet).await.expect("quiet at start");
        world
            .create(&json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "prod"}}))
            .await
            .expect("namespace prod");
        for (namespace, name, replicas) in [("default", "hello", 2), ("prod", "shop", 3)] {
            let app = json!({"apiVersion": "apps.example.com/v1", "kind": "WebApp",
                             "metadata": {"name": name, "namespace": namespace},
                             "spec": {"image": "nginx:1.27", "replicas": replicas}});
            world.apply(&app).await.expect("applied");
        }
        settle(&world, quiet).await.expect("quiet with two WebApps");
        // The resync: each WebApp handed to a reconcile once more, its status Running by now.
        advance(&world, Duration::from_secs(330), quiet).await.expect("quiet after the resync");
        world.stop().await;
        let summary = writer.close().expect("recording closes");
        assert!(summary.calls >= 4 && summary.dropped == 0, "{summary:?}");
    });
}

/// A copy of examples/webapp (script only) in `dir/name`, with `edit` applied to its script.
fn copy(dir: &Path, name: &str, edit: impl FnOnce(String) -> String) -> PathBuf {
    let to = dir.join(name);
    std::fs::create_dir_all(to.join("tests")).expect("mkdir");
    let script = std::fs::read_to_string(webapp().join("operator.ct")).expect("operator.ct");
    std::fs::write(to.join("operator.ct"), edit(script)).expect("write operator.ct");
    to
}

/// v2 of examples/webapp: it no longer applies the Service.
fn without_service(s: String) -> String {
    let start = s.find("    apply(Service({").expect("the Service");
    let end = start + s[start..].find("}));\n").expect("its end") + 5;
    format!("{}{}", &s[..start], &s[end..])
}

/// Runs `text` as `tests/NAME.yaml` of the operator in `dir`, the recording beside it.
fn run(dir: &Path, name: &str, text: &str, mode: GoldenMode) -> TestReport {
    let tests = dir.join("tests");
    std::fs::copy(recording(), tests.join("webapp.ctrec")).expect("the recording beside the test");
    let path = tests.join(format!("{name}.yaml"));
    std::fs::write(&path, text).expect("write the test");
    let test = TestFile::read(&path, dir).expect("a valid test");
    run_test(&Operator { dir: dir.to_owned(), entry: "operator.ct".into() }, &test, mode)
}

fn messages(r: &TestReport) -> Vec<String> {
    r.failures.iter().map(|f| f.message.clone()).collect()
}

#[test]
fn a_seeded_cluster_starts_where_the_recorded_one_was() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = copy(tmp.path(), "webapp", |s| s);
    // Without workloads, nothing but the seed gives the Deployments their status: the
    // WebApps are Running because the recorded Deployments are available.
    // The token as recorded (masked): the Secret is seeded with it, and kept (a child
    // recreated, by the garbage collector and the operator, would have a new one).
    let recorded = ctop_recording::read(recording()).expect("the recording");
    let seeds = ctop_testing::collect_seeds(&recorded).expect("the seeds");
    let secret = seeds
        .iter()
        .find(|s| s.object["kind"] == "Secret" && s.object["metadata"]["name"] == "hello-token")
        .expect("the token Secret was read");
    let token = secret.object["data"]["token"].as_str().expect("data.token");
    let text = format!(
        "golden: false\nworkloads: false\nsteps:\n  - seed: webapp.ctrec\n    expect:\n      \
        - {{kind: Secret, metadata: {{name: hello-token}}, data: {{token: \"{token}\"}}}}\n"
    ) + "      \
        - {kind: WebApp, metadata: {name: hello}, spec: {replicas: 2}, status: {phase: Running, ready: true}}\n      \
        - {kind: WebApp, metadata: {name: shop, namespace: prod}, spec: {replicas: 3}, status: {phase: Running, ready: true}}\n      \
        - {kind: Deployment, metadata: {name: shop, namespace: prod, ownerReferences: [{kind: WebApp, name: shop, controller: true}]}, \
           spec: {replicas: 3}, status: {availableReplicas: 3}}\n      \
        - {kind: Service, metadata: {name: hello}}\n  \
        - patch: WebApp/prod/shop\n    merge: {spec: {replicas: 4}}\n    expect:\n      \
        - {kind: Deployment, metadata: {name: shop, namespace: prod}, spec: {replicas: 4}}\n      \
        - {kind: WebApp, metadata: {name: shop, namespace: prod}, status: {phase: Pending, ready: false}}\n  \
        - patch: Deployment/prod/shop\n    \
          status: {observedGeneration: 2, replicas: 4, updatedReplicas: 4, readyReplicas: 4, availableReplicas: 4}\n    \
          expect:\n      - {kind: WebApp, metadata: {name: shop, namespace: prod}, status: {phase: Running, ready: true}}\n  \
        - delete: WebApp/hello\n    expect:\n      - absent: Deployment/hello\n      - absent: Secret/hello-token\n";
    let report = run(&dir, "seeded", &text, GoldenMode::Compare);
    // The oracles ran too: controller-owner after every step (the children's owner
    // references name the new uids), and deletion-cleans-up at the end.
    assert!(report.passed(), "{:#?}", report.failures);
    assert_eq!(report.steps, (4, 4));
}

#[test]
fn a_seeded_cluster_converges_with_workloads() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = copy(tmp.path(), "webapp", |s| s);
    let text = "golden: false\nsteps:\n  - seed: webapp.ctrec\n    expect:\n      \
        - {kind: WebApp, metadata: {name: shop, namespace: prod}, status: {phase: Running}}\n      \
        - {kind: Deployment, metadata: {name: hello}, spec: {replicas: 2}, status: {availableReplicas: 2}}\n  \
        - advance: 10m\n";
    let report = run(&dir, "converges", text, GoldenMode::Compare);
    assert!(report.passed(), "{:#?}", report.failures);
}

#[test]
fn a_recording_of_kinds_the_cluster_does_not_serve_fails_the_seed() {
    let tmp = tempfile::tempdir().expect("tempdir");
    // Another operator, with no WebApp CRD.
    let dir = copy(tmp.path(), "other", |_| {
        "import { resource, operator, Result } from \"ctop\";\n\
         operator(resource(\"other.example.com/v1\", \"Other\", {})).reconcile(() => Result.ok());\n"
            .to_owned()
    });
    let report = run(&dir, "wrong", "golden: false\nsteps:\n  - seed: webapp.ctrec\n", GoldenMode::Compare);
    assert_eq!(
        messages(&report),
        [
            "the recording holds objects of kinds the test's cluster does not serve: apps.example.com/v1 WebApp (2 objects); \
          apply their CustomResourceDefinitions in a step before the seed"
        ]
    );
    let f = &report.failures[0];
    assert_eq!((f.step.clone(), f.line), (Some((1, "seed webapp.ctrec".to_owned())), Some(3)));
}

#[test]
fn a_replay_passes_against_the_recorded_script_and_fails_on_differences_unless_allowed() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = copy(tmp.path(), "webapp", |s| s);
    copy(tmp.path(), "v2", without_service);

    let same = run(&dir, "same", "golden: false\nsteps:\n  - replay: webapp.ctrec\n", GoldenMode::Compare);
    assert!(same.passed(), "{:#?}", same.failures);

    let v2 = "golden: false\nsteps:\n  - replay: webapp.ctrec\n    script: ../../v2\n";
    let differs = run(&dir, "v2", v2, GoldenMode::Compare);
    let m = messages(&differs);
    assert_eq!(m.len(), 1, "{m:#?}");
    assert!(
        m[0].starts_with("the replay gives other outcomes than the recording (add `allow: differences`")
            && m[0].contains("\n  ../../v2 prunes v1/Service on 2 of 2 WebApps"),
        "{}",
        m[0]
    );
    assert_eq!(
        differs.failures[0].step.clone(),
        Some((1, "replay webapp.ctrec against ../../v2".to_owned()))
    );

    let allowed = run(&dir, "allowed", &format!("{v2}    allow: differences\n"), GoldenMode::Compare);
    assert!(allowed.passed(), "{:#?}", allowed.failures);

    // The operator under test is v2 itself: its default script is the one that differs.
    let v2_dir = tmp.path().join("v2");
    let own = run(&v2_dir, "own", "golden: false\nsteps:\n  - replay: webapp.ctrec\n", GoldenMode::Compare);
    assert!(
        messages(&own)
            .iter()
            .any(|m| m.contains("the script under test prunes v1/Service on 2 of 2 WebApps")),
        "{:#?}",
        own.failures
    );

    // A throw on one object is a new failure: `allow: differences` does not cover it.
    let throws = copy(tmp.path(), "throws", |s| {
        s.replacen(
            "const name = cr.metadata.name;",
            "const name = cr.metadata.name;\n    if (name === \"shop\") throw new Error(\"broken on purpose\");",
            1,
        )
    });
    let failing = run(
        &throws,
        "throws",
        "golden: false\nsteps:\n  - replay: webapp.ctrec\n    allow: differences\n",
        GoldenMode::Compare,
    );
    let m = messages(&failing);
    assert!(
        m.len() == 1
            && m[0].starts_with("the replay has calls that fail now and did not when recorded:")
            && m[0].contains("broken on purpose"),
        "{m:#?}"
    );
}

#[test]
fn seed_and_replay_steps_have_golden_files() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = copy(tmp.path(), "webapp", |s| s);
    copy(tmp.path(), "v2", without_service);
    let text = "steps:\n  - seed: webapp.ctrec\n  - replay: webapp.ctrec\n  \
                - replay: webapp.ctrec\n    script: ../../v2\n    allow: differences\n";
    let written = run(&dir, "g", text, GoldenMode::Update);
    assert!(written.passed(), "{:#?}", written.failures);
    assert!(matches!(written.golden, GoldenOutcome::Written(_)), "{:?}", written.golden);
    let again = run(&dir, "g", text, GoldenMode::Compare);
    assert!(again.passed() && again.golden == GoldenOutcome::Matched, "{:#?}", again.failures);
    let golden = std::fs::read_to_string(dir.join("tests/g.golden.yaml")).expect("golden");
    assert!(golden.contains("replay:\n  exit: identical\n"), "{golden}");
    assert!(golden.contains("exit: differences"), "{golden}");
    assert!(golden.contains("../../v2 prunes v1/Service on 2 of 2 WebApps"), "{golden}");
    let recording = ctop_recording::read(recording()).expect("the recording");
    assert!(!golden.contains(&recording.header.recording_id), "{golden}");
    assert!(!golden.contains(&recording.header.started), "{golden}");
    // The seeded state is in it too, the same every run (the second run matched it).
    assert!(golden.contains("step: 1\nname: seed webapp.ctrec\n"), "{golden}");
    assert!(golden.contains("    name: shop\n    namespace: prod\n"), "{golden}");
}

//! `ctop replay` in process: examples/webapp recorded while it reconciles two WebApps on an
//! in-process kubesim, then every recorded call run again: against the recorded script it
//! reproduces every output; against edited copies (a child dropped, a status field renamed,
//! a throw on one object) the report names what changes, on which objects.

mod common;

use common::webapp;

use std::path::Path;
use std::sync::Arc;

use ctop_recording::{RecordOptions, RecordWriter, Recording, TapeEntry};
use ctop_runtime::{Limits, Script};
use ctop_testing::replay::{ExitCode, Report, Target, recorded, replay};
use ctop_testing::{MAX_CALLS, Quiet, settle};
use serde_json::json;

/// Records examples/webapp reconciling WebApps `hello` and `broken` into `file`.
fn record(file: &Path) -> Recording {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .expect("runtime");
    rt.block_on(async {
        let (world, writer) = common::recorded_webapp(file).await;
        let quiet = Quiet {
            quiet: std::time::Duration::from_secs(5),
            timeout: std::time::Duration::from_secs(600),
            max_calls: MAX_CALLS,
        };
        settle(&world, quiet).await.expect("quiet at start");
        for name in ["hello", "broken"] {
            let app = json!({"apiVersion": "apps.example.com/v1", "kind": "WebApp",
                             "metadata": {"name": name, "namespace": "default"},
                             "spec": {"image": "nginx:1.27", "replicas": 2}});
            world.apply(&app).await.expect("applied");
        }
        settle(&world, quiet).await.expect("quiet with two WebApps");
        world.stop().await;
        let summary = writer.close().expect("recording closes");
        assert!(summary.calls >= 2 && summary.dropped == 0, "{summary:?}");
    });
    ctop_recording::read(file).expect("the recording reads back")
}

fn replay_against(recording: &Recording, target: Target) -> Report {
    let rt =
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    rt.block_on(replay(recording, target)).expect("replays")
}

/// A copy of examples/webapp with `edit` applied to its script, loaded.
fn edited(edit: impl FnOnce(&str) -> String) -> (tempfile::TempDir, Target) {
    let dir = tempfile::tempdir().expect("tempdir");
    let source = std::fs::read_to_string(webapp().join("operator.ct")).expect("script");
    let changed = edit(&source);
    assert_ne!(changed, source, "the edit changed nothing");
    std::fs::write(dir.path().join("operator.ct"), changed).expect("write");
    let script =
        Script::from_dir(dir.path(), "operator.ct", 1, Limits::default()).expect("the edited script loads");
    let target = Target::Script { script: Arc::new(script), label: "v2".into() };
    (dir, target)
}

#[test]
fn a_recording_replays_identically_against_its_script_and_names_what_a_new_version_changes() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let recording = record(&tmp.path().join("webapp.ctrec"));
    assert!(recording.complete, "{:?}", recording.notes);
    // The token came from randomString: its value is on the tape, masked.
    let supplied = recording
        .calls
        .iter()
        .flat_map(|c| &c.tape)
        .any(|t| matches!(t, TapeEntry::Supply { source, .. } if source == "randomString"));
    assert!(supplied, "no randomString on any tape");

    let same = replay_against(&recording, Target::Recorded);
    assert_eq!(same.exit, ExitCode::Identical, "{}", same.text());
    assert_eq!(same.identical, same.calls);
    assert!(same.calls >= 2, "{}", same.text());

    // v2 drops the Service.
    let (_d, dropped) = edited(|s| {
        let start = s.find("    apply(Service({").expect("the Service");
        let end = start + s[start..].find("}));\n").expect("its end") + 5;
        format!("{}{}", &s[..start], &s[end..])
    });
    let report = replay_against(&recording, dropped);
    assert_eq!(report.exit, ExitCode::Differences, "{}", report.text());
    assert!(
        report.summary.iter().any(|l| l == "v2 prunes v1/Service on 2 of 2 WebApps"),
        "{}",
        report.text()
    );
    for name in ["default/hello", "default/broken"] {
        assert!(report.objects.iter().any(|o| o.object == name), "{name} missing: {}", report.text());
    }

    // v2 renames status.phase to status.state.
    let (_d, renamed) =
        edited(|s| s.replace("setStatus(cr, { ready, phase:", "setStatus(cr, { ready, state:"));
    let report = replay_against(&recording, renamed);
    assert_eq!(report.exit, ExitCode::Differences, "{}", report.text());
    assert!(
        report.summary.iter().any(|l| l == "v2 removes status field phase on 2 of 2 WebApps"),
        "{}",
        report.text()
    );
    assert!(
        report.summary.iter().any(|l| l == "v2 adds status field state on 2 of 2 WebApps"),
        "{}",
        report.text()
    );
    assert!(
        report.text().contains("status phase: \"Pending\" → (absent)")
            || report.text().contains("status phase: \"Running\" → (absent)"),
        "{}",
        report.text()
    );

    // v2 throws on one object.
    let (_d, throws) = edited(|s| {
        s.replacen(
            "const name = cr.metadata.name;",
            "const name = cr.metadata.name;\n    if (name === \"broken\") throw new Error(\"broken on purpose\");",
            1,
        )
    });
    let report = replay_against(&recording, throws);
    assert_eq!(report.exit, ExitCode::NewFailures, "{}", report.text());
    let line = report.summary.iter().find(|l| l.contains("now fail")).expect("a failure line");
    assert!(
        line.starts_with("1 object now fails: WebApp default/broken (") && line.contains("broken on purpose"),
        "{line}"
    );
    assert!(!line.contains("default/hello"), "{line}");
}

/// A script that counts its calls at module level, so each runtime's count is its own.
const COUNTER: &str = r#"
import { resource, z, operator, setStatus } from "ctop";
const thing = resource("test.ctop.dev/v1", "Thing", {
  scope: "Namespaced",
  spec: { n: z.number().int().default(0) },
  status: { calls: z.number().int().optional(), sum: z.number().optional() },
});
let calls = 0;
operator(thing).reconcile((cr) => {
  calls += 1;
  // Long enough that calls overlap and both runtimes serve some.
  let sum = 0;
  for (let i = 0; i < 300000; i++) sum += i % 7;
  setStatus(cr, { calls, sum });
});
"#;

#[test]
fn module_state_replays_because_each_recorded_runtime_replays_on_its_own() {
    use ctop_kubesim::{Config, KubeSim};
    use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams};

    let tmp = tempfile::tempdir().expect("tempdir");
    std::fs::write(tmp.path().join("operator.ct"), COUNTER).expect("write");
    let file = tmp.path().join("counter.ctrec");
    let rt =
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    rt.block_on(async {
        let sim = KubeSim::start(Config::default()).await.expect("kubesim");
        let kubeconfig = tmp.path().join("kubeconfig");
        sim.write_kubeconfig(&kubeconfig).expect("kubeconfig");
        let script =
            Arc::new(Script::from_dir(tmp.path(), "operator.ct", 2, Limits::default()).expect("loads"));
        let client = ctop_test_support::client(&std::fs::read_to_string(&kubeconfig).expect("read")).await;
        ctop_controller::install_crds(
            &client,
            &ctop_manifests::operator_crds(script.spec()).expect("crds"),
            "test",
        )
        .await
        .expect("CRDs");
        let options =
            RecordOptions { path: file.clone(), operator: "counter".into(), ..RecordOptions::default() };
        let writer = RecordWriter::create(options, json!({}), json!({})).expect("recording");
        let handlers =
            Arc::new(ctop_runtime::ScriptHandlers::new(Arc::clone(&script), &json!({}), &json!({})));
        let handlers = recorded(handlers, &script, writer.clone());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let run = tokio::spawn(ctop_controller::run(
            handlers,
            ctop_controller::RunOptions::local(kubeconfig.clone(), "counter"),
            async move {
                let _ = stopped.await;
            },
        ));
        let ar = ApiResource::from_gvk(&GroupVersionKind::gvk("test.ctop.dev", "v1", "Thing"));
        let things: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &ar);
        let names: Vec<String> = (0..6).map(|i| format!("t{i}")).collect();
        for name in &names {
            let thing = serde_json::from_value(json!({"apiVersion": "test.ctop.dev/v1", "kind": "Thing",
                                                     "metadata": {"name": name}, "spec": {"n": 0}}))
            .expect("object");
            things.create(&PostParams::default(), &thing).await.expect("created");
        }
        for n in 1..4 {
            for name in &names {
                let patch = json!({"spec": {"n": n}});
                things.patch(name, &PatchParams::default(), &Patch::Merge(&patch)).await.expect("patched");
            }
        }
        // Every Thing's last spec reconciled.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        loop {
            let list = things.list(&Default::default()).await.expect("list");
            let done = list.items.iter().filter(|t| {
                t.data.pointer("/status/observedGeneration")
                    == t.metadata.generation.map(serde_json::Value::from).as_ref()
            });
            if done.count() == names.len() {
                break;
            }
            assert!(std::time::Instant::now() < deadline, "the Things were not reconciled in 60 s");
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        let _ = stop.send(());
        let _ = run.await;
        writer.close().expect("closes");
        sim.shutdown();
    });
    let recording = ctop_recording::read(&file).expect("reads");
    let serials: std::collections::BTreeSet<u64> =
        recording.calls.iter().filter_map(|c| c.runtime.map(|r| r.serial)).collect();
    assert!(recording.calls.iter().all(|c| c.runtime.is_some()), "every call names its runtime");
    assert!(serials.len() >= 2, "the calls ran on {} runtime(s): the test proves nothing", serials.len());
    let report = replay_against(&recording, Target::Recorded);
    assert_eq!(report.exit, ExitCode::Identical, "{}", report.text());
}

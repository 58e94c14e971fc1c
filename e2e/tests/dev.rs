//! `ctop dev` as a user runs it: the webapp example (copied, so it can be edited) against
//! the embedded kubesim, checked with kubectl; edits reload, a syntax error keeps the old
//! script running, SIGTERM exits cleanly.

mod common;

use std::io::Read as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{Kubectl, Proc};
use ctop_e2e::binary;

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for e in std::fs::read_dir(from).expect("read_dir") {
        let e = e.expect("entry");
        let target = to.join(e.file_name());
        if e.file_type().expect("file type").is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), target).expect("copy");
        }
    }
}

fn eventually_in(path: &Path, needle: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        if text.contains(needle) {
            return text;
        }
        assert!(Instant::now() < deadline, "{} never contained {needle:?}:\n{text}", path.display());
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn dev_serves_reloads_and_survives_errors() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let op = tmp.path().join("webapp");
    copy_dir(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/webapp"), &op);
    let kubeconfig = tmp.path().join("kc");
    let (stdout, stderr) = (tmp.path().join("stdout"), tmp.path().join("stderr"));
    let mut dev = Proc(
        Command::new(binary::ctop())
            .arg("dev")
            .arg(&op)
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .current_dir(tmp.path())
            .stdout(std::fs::File::create(&stdout).expect("stdout file"))
            .stderr(std::fs::File::create(&stderr).expect("stderr file"))
            .stdin(Stdio::null())
            .spawn()
            .expect("ctop dev starts"),
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    while !kubeconfig.exists() {
        assert!(Instant::now() < deadline, "no kubeconfig written");
        std::thread::sleep(Duration::from_millis(50));
    }
    let k = Kubectl { kubeconfig: kubeconfig.clone(), cache: tmp.path().join("cache") };

    // The sample is applied and reconciled.
    let owner = "jsonpath={.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].name}";
    for (kind, name) in [("deployment", "shop"), ("service", "shop"), ("secret", "shop-token")] {
        k.eventually(&["get", kind, name, "-o", owner], |s| s == "WebApp/shop");
    }
    // The embedded cluster runs the Deployment's Pods: the WebApp turns Running by itself.
    k.eventually(
        &["get", "deployment", "shop", "-o", "jsonpath={.status.availableReplicas}/{.spec.replicas}"],
        |s| s == "2/2",
    );
    k.eventually(&["get", "webapp", "shop", "-o", "jsonpath={.status.phase}/{.status.ready}"], |s| {
        s == "Running/true"
    });
    eventually_in(&stdout, "WebApp default/shop: Running/true, 3 children");
    eventually_in(&stderr, &format!("kubectl --kubeconfig {}", kubeconfig.display()));

    // An edit is reloaded and applied.
    let script = op.join("operator.ct");
    let source = std::fs::read_to_string(&script).expect("read operator.ct");
    // (The Deployment's own labels: its selector is immutable, on kubesim as on a cluster.)
    let old = "apply(Deployment({\n      metadata: { name, labels },";
    assert!(source.contains(old));
    let edited = "apply(Deployment({\n      metadata: { name, labels: { ...labels, tier: \"web\" } },";
    std::fs::write(&script, source.replacen(old, edited, 1)).expect("edit");
    k.eventually(&["get", "deployment", "shop", "-o", "jsonpath={.metadata.labels.tier}"], |s| s == "web");
    // Only the handler changed: the script is swapped in place, the caches are kept.
    eventually_in(&stderr, "script reloaded; caches kept");
    assert!(!std::fs::read_to_string(&stderr).unwrap_or_default().contains("restarting the controllers"));

    // A syntax error is reported with its place; the previous script keeps serving.
    let broken = format!("{}\nconst = ;\n", std::fs::read_to_string(&script).expect("read"));
    let error_line = broken.lines().count();
    std::fs::write(&script, broken).expect("break");
    eventually_in(&stderr, &format!("operator.ct:{error_line}:"));
    assert!(dev.0.try_wait().expect("try_wait").is_none(), "ctop dev keeps running");
    k.eventually(&["patch", "webapp", "shop", "--type=merge", "-p", r#"{"spec":{"replicas":3}}"#], |_| true);
    k.eventually(
        &["get", "deployment", "shop", "-o", "jsonpath={.spec.replicas}/{.metadata.labels.tier}"],
        |s| s == "3/web",
    );

    // SIGTERM stops it cleanly.
    let status = common::terminate(&mut dev);
    let mut log = String::new();
    let _ = std::fs::File::open(&stderr).and_then(|mut f| f.read_to_string(&mut log));
    assert!(status.success(), "ctop dev exited with {status}:\n{log}");
}

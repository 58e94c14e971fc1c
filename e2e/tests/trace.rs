//! Why a WebApp is (not) Ready, as a user asks: `ctop dev examples/webapp` with a pod stage
//! that keeps one WebApp's Pods unready; `kubectl wait --for=condition=Ready` on the Ready
//! condition ctop keeps, and `ctop trace` printing the tree, its health and the reconciles
//! it reads from the dev operator's page (found through .ctop/dev/page), or only what the
//! cluster shows when no operator answers.

mod common;

use std::path::Path;
use std::process::{Command, Output, Stdio};

use common::{Kubectl, Proc};
use ctop_e2e::binary;

/// `ctop trace args` in `dir` (where `ctop dev` runs).
fn trace(dir: &Path, args: &[&str]) -> Output {
    Command::new(binary::ctop()).arg("trace").args(args).current_dir(dir).output().expect("ctop trace runs")
}

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

#[test]
fn ready_names_the_blocking_child_and_trace_shows_why() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/webapp");
    let stderr = tmp.path().join("stderr");
    let _dev = Proc(
        Command::new(binary::ctop())
            .arg("dev")
            .arg(&example)
            .args(["--pod-stage", "app.kubernetes.io/name=stuck:never-ready"])
            .current_dir(tmp.path())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&stderr).expect("stderr file"))
            .stdin(Stdio::null())
            .spawn()
            .expect("ctop dev starts"),
    );
    // ctop dev writes its kubeconfig and its page's URL under .ctop/dev in its directory.
    let kubeconfig = tmp.path().join(".ctop/dev/kubeconfig");
    let page = tmp.path().join(".ctop/dev/page");
    common::wait_for(&kubeconfig);
    common::wait_for(&page);
    let k = Kubectl { kubeconfig: kubeconfig.clone(), cache: tmp.path().join("cache") };

    // The sample `shop` runs: kubectl wait on Ready means what it says.
    k.eventually(&["get", "webapp", "shop"], |_| true);
    let waited = k.run(&["wait", "--for=condition=Ready", "webapp/shop", "--timeout=60s"]);
    assert!(waited.status.success(), "kubectl wait: {}\n{}", text(&waited), log(&stderr));
    let reason =
        k.ok(&["get", "webapp", "shop", "-o", "jsonpath={.status.conditions[?(@.type==\"Ready\")].reason}"]);
    assert_eq!(reason, "ChildrenCurrent");

    // A WebApp whose Pods never become ready: Ready is False and names the Deployment.
    let stuck = "apiVersion: apps.example.com/v1\nkind: WebApp\nmetadata: {name: stuck}\nspec: {image: nginx, replicas: 2, port: 80}\n";
    std::fs::write(tmp.path().join("stuck.yaml"), stuck).expect("write");
    k.ok(&["apply", "-f", tmp.path().join("stuck.yaml").to_str().unwrap_or_default()]);
    let waited = k.run(&["wait", "--for=condition=Ready=False", "webapp/stuck", "--timeout=60s"]);
    assert!(waited.status.success(), "kubectl wait Ready=False: {}", text(&waited));
    let ready = k.eventually(
        &["get", "webapp", "stuck", "-o", "jsonpath={.status.conditions[?(@.type==\"Ready\")].message}"],
        |m| m.starts_with("Deployment stuck: "),
    );
    assert!(ready.contains("of 2 replicas"), "{ready}");
    let waited = k.run(&["wait", "--for=condition=Ready", "webapp/stuck", "--timeout=2s"]);
    assert!(!waited.status.success(), "an unready WebApp does not pass kubectl wait");

    // ctop trace, run beside ctop dev: the tree with each one's health, and the reconciles.
    // All the reconciles kept: how many Deployment status changes follow the create (each a
    // reconcile) depends on timing, and the create must stay in view.
    let out = trace(tmp.path(), &["webapp/stuck", "--last", "100"]);
    let printed = text(&out);
    assert!(out.status.success(), "{printed}");
    for want in [
        "WebApp default/stuck",
        "ChildInProgress",
        "├── Deployment/stuck",
        "ReplicaSet/stuck-",
        "Pod/stuck-",
        "Secret/stuck-token",
        "Service/stuck",
        "RECONCILES (last ",
        "created apps/v1/Deployment default/stuck",
        "it changed (generation 1)",
    ] {
        assert!(printed.contains(want), "ctop trace printed no {want:?}:\n{printed}");
    }
    let pod = printed.lines().find(|l| l.contains("Pod/stuck-")).unwrap_or_default();
    assert!(pod.contains("InProgress"), "an unready Pod: {pod}");

    // With no operator in reach: what the cluster shows, and why the reconciles are missing.
    let out = trace(tmp.path(), &["wa/shop", "--operator", "http://127.0.0.1:9"]);
    let printed = text(&out);
    assert!(out.status.success(), "{printed}");
    assert!(printed.contains("└── Service/shop") || printed.contains("Service/shop"), "{printed}");
    assert!(printed.contains("RECONCILES: not shown: no operator at http://127.0.0.1:9"), "{printed}");

    // Errors say what to do next.
    let out = trace(tmp.path(), &["webapp/nope"]);
    assert!(!out.status.success());
    assert!(text(&out).contains("\"nope\" not found in namespace \"default\""), "{}", text(&out));
    let out = trace(tmp.path(), &["gizmo/x"]);
    assert!(text(&out).contains("kubectl api-resources"), "{}", text(&out));
    let out = trace(tmp.path(), &["shop"]);
    assert!(text(&out).contains("is not KIND/NAME"), "{}", text(&out));
}

fn log(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

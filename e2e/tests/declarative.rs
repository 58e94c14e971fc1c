//! A Δ-controller `Operator` YAML where a script directory goes: `ctop manifests op.yaml`
//! gives CRDs and least-privilege RBAC the API server accepts, and `ctop run op.yaml`
//! creates the Operator, keeps its view objects (readable with kubectl) and writes its
//! status as Δ-controller does.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};

use common::{Kubectl, Logged, Proc, ctop_run, start_sim, wait_for};
use ctop_e2e::binary;

const OPERATOR: &str = include_str!("../../crates/declarative/tests/fixtures/operator/demo.yaml");

fn write_operator(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("op.yaml");
    std::fs::write(&path, OPERATOR).expect("write the Operator");
    path
}

/// The demo Operator reports its two working controllers and its broken one, and its view
/// copies a labelled ConfigMap.
fn copies_a_labelled_configmap(k: &Kubectl) {
    k.eventually(
        &["get", "operator", "demo", "-o", "jsonpath={.status.controllers[*].conditions[0].reason}"],
        |s| s == "Ready Ready NotReady",
    );
    k.ok(&["create", "configmap", "a", "--from-literal=x=1"]);
    k.ok(&["label", "configmap", "a", "copy=yes"]);
    k.eventually(&["get", "copies.demo.view.dcontroller.io", "a", "-o", "jsonpath={.spec.x}"], |s| s == "1");
}

#[test]
fn manifests_of_an_operator_yaml_install_on_kubesim() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (_sim, kubeconfig) = start_sim(dir.path());
    let op = write_operator(dir.path());
    let out = Command::new(binary::ctop()).arg("manifests").arg(&op).output().expect("ctop manifests runs");
    assert!(out.status.success(), "ctop manifests: {}", String::from_utf8_lossy(&out.stderr));
    let yaml = String::from_utf8(out.stdout).expect("utf-8");
    assert!(yaml.contains("name: operators.dcontroller.io"), "the Operator CRD");
    assert!(yaml.contains("name: copies.demo.view.dcontroller.io"), "the view's CRD");
    assert!(yaml.contains("- --bundle"), "the Deployment runs the Operator from its bundle");
    let manifests = dir.path().join("manifests.yaml");
    std::fs::write(&manifests, &yaml).expect("write");
    let k = Kubectl { kubeconfig, cache: dir.path().join("cache") };
    k.ok(&["apply", "--server-side", "-f", manifests.to_str().expect("utf-8")]);
    // The Patcher's target kind is read and patched, never created or deleted.
    let rules = k.ok(&[
        "get",
        "clusterrole",
        "demo-manager",
        "-o",
        "jsonpath={.rules[0].resources} {.rules[0].verbs}",
    ]);
    assert_eq!(rules, r#"["configmaps"] ["get","list","patch","watch"]"#);

    // What the Deployment runs: `ctop run --bundle` of the ConfigMap's bundle, as deployed.
    let b64 = k.ok(&[
        "get",
        "configmap",
        "-n",
        "demo-system",
        "demo-bundle",
        "-o",
        "jsonpath={.binaryData.bundle\\.js\\.gz}",
    ]);
    let decoded =
        Command::new("base64").arg("-d").stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().and_then(
            |mut c| {
                use std::io::Write as _;
                c.stdin.take().expect("stdin").write_all(b64.as_bytes())?;
                c.wait_with_output()
            },
        );
    let bundle = dir.path().join("bundle.js.gz");
    std::fs::write(&bundle, decoded.expect("base64 -d").stdout).expect("write the bundle");
    let values = dir.path().join("values.yaml");
    std::fs::write(&values, "").expect("write the values");
    let _run = Logged::spawn(
        Command::new(binary::ctop())
            .args(["run", "--bundle"])
            .arg(&bundle)
            .arg("--values")
            .arg(&values)
            .arg("--kubeconfig")
            .arg(&k.kubeconfig)
            .args(["--leader-elect=false", "--health-port", "0", "--metrics-port", "0"]),
        dir.path().join("bundle-run.log"),
    );
    k.eventually(&["get", "operator", "demo", "-o", "jsonpath={.status.controllers[0].name}"], |s| {
        s == "copy"
    });
}

#[test]
fn run_takes_an_operator_yaml() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (_sim, kubeconfig) = start_sim(dir.path());
    let op = write_operator(dir.path());
    let _run = ctop_run(&op, &kubeconfig, &[], "run.log");
    let k = Kubectl { kubeconfig, cache: dir.path().join("cache") };
    copies_a_labelled_configmap(&k);
    k.ok(&["create", "configmap", "target", "--from-literal=own=kept"]);
    k.ok(&["create", "configmap", "src", "--from-literal=p=1"]);
    k.ok(&["label", "configmap", "src", "stamp=yes"]);
    k.eventually(&["get", "configmap", "target", "-o", "jsonpath={.data.p}/{.data.own}"], |s| s == "1/kept");
    k.ok(&["delete", "configmap", "src"]);
    k.eventually(&["get", "configmap", "target", "-o", "jsonpath={.data.p}/{.data.own}"], |s| s == "/kept");
}

#[test]
fn dev_takes_an_operator_yaml_and_reloads_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let op = write_operator(dir.path());
    let kubeconfig = dir.path().join("kc");
    let _dev = Proc(
        Command::new(binary::ctop())
            .arg("dev")
            .arg(&op)
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .current_dir(dir.path())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.path().join("stderr")).expect("stderr file"))
            .stdin(Stdio::null())
            .spawn()
            .expect("ctop dev starts"),
    );
    wait_for(&kubeconfig);
    let k = Kubectl { kubeconfig, cache: dir.path().join("cache") };
    k.ok(&["create", "configmap", "a", "--from-literal=x=1"]);
    k.ok(&["label", "configmap", "a", "copy=yes"]);
    k.eventually(&["get", "copies.demo.view.dcontroller.io", "a", "-o", "jsonpath={.spec.x}"], |s| s == "1");
    // A saved change reloads: the view now carries y as well.
    std::fs::write(&op, OPERATOR.replace("x: \"$.data.x\"", "x: \"$.data.x\"\n              y: done"))
        .expect("edit");
    k.eventually(&["get", "copies.demo.view.dcontroller.io", "a", "-o", "jsonpath={.spec.y}"], |s| {
        s == "done"
    });
}

#[test]
fn manifests_and_run_of_the_operators_manager() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (_sim, kubeconfig) = start_sim(dir.path());
    let out = Command::new(binary::ctop())
        .args(["manifests", "--operators", "--operators-read", "configmaps"])
        .args(["--operators-write", "demo.view.dcontroller.io/*"])
        .output()
        .expect("ctop manifests runs");
    assert!(out.status.success(), "ctop manifests --operators: {}", String::from_utf8_lossy(&out.stderr));
    let yaml = String::from_utf8(out.stdout).expect("utf-8");
    assert!(yaml.contains("name: operators.dcontroller.io"), "the Operator CRD");
    assert!(yaml.contains("- --operators"), "the Deployment runs the manager");
    let manifests = dir.path().join("manifests.yaml");
    std::fs::write(&manifests, &yaml).expect("write");
    let k = Kubectl { kubeconfig, cache: dir.path().join("cache") };
    k.ok(&["apply", "--server-side", "-f", manifests.to_str().expect("utf-8")]);
    let rules =
        k.ok(&["get", "clusterrole", "ctop-operators-manager", "-o", "jsonpath={.rules[*].resources}"]);
    for r in ["configmaps", "customresourcedefinitions", "operators", "operators/status"] {
        assert!(rules.contains(&format!("\"{r}\"")), "{r} in {rules}");
    }

    // The manager runs the Operators applied after it started.
    let _run =
        Logged::spawn(
            Command::new(binary::ctop())
                .args(["run", "--operators", "--kubeconfig"])
                .arg(&k.kubeconfig)
                .args(["--leader-elect=false", "--health-port", "0", "--metrics-port", "0"]),
            dir.path().join("operators.log"),
        );
    let op = write_operator(dir.path());
    k.ok(&["apply", "--server-side", "-f", op.to_str().expect("utf-8")]);
    copies_a_labelled_configmap(&k);
}

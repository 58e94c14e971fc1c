//! `ctop sim` as a user runs it: the real binary, a kubeconfig written once it is ready,
//! kubectl against it, and a clean stop on SIGTERM.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use ctop_e2e::binary;

mod common;

fn wait_for(path: &Path) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !path.exists() {
        assert!(Instant::now() < deadline, "ctop sim did not write {}", path.display());
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn sim_serves_kubectl_and_stops_on_sigterm() {
    let dir = tempfile::tempdir().expect("temp dir");
    let kubeconfig = dir.path().join("kc");
    let mut child = Command::new(binary::ctop())
        .args(["sim", "--addr", "127.0.0.1:0", "--kubeconfig"])
        .arg(&kubeconfig)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("ctop starts");
    wait_for(&kubeconfig);
    let out = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .arg("--cache-dir")
        .arg(dir.path().join("cache"))
        .args(["get", "namespaces", "-o", "name"])
        .output()
        .expect("kubectl runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.lines().any(|l| l == "namespace/default"), "{stdout}");
    let term = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().expect("kill");
    assert!(term.success());
    let status = child.wait().expect("ctop exits");
    assert!(status.success(), "ctop sim exits cleanly on SIGTERM: {status:?}");
}

#[test]
fn sim_explains_a_busy_port() {
    let busy = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = busy.local_addr().expect("addr").to_string();
    let dir = tempfile::tempdir().expect("temp dir");
    let out = Command::new(binary::ctop())
        .args(["sim", "--addr", &addr, "--kubeconfig"])
        .arg(dir.path().join("kc"))
        .output()
        .expect("ctop runs");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("cannot listen on") && stderr.contains("pick another port"), "{stderr}");
}

#[test]
fn bundle_is_deterministic_and_reports_script_errors() {
    let dir = tempfile::tempdir().expect("temp dir");
    let op = dir.path().join("op");
    std::fs::create_dir_all(&op).expect("mkdir");
    std::fs::write(op.join("operator.ct"), include_str!("../../crates/runtime/sdk/examples/webapp.ts"))
        .expect("write");
    let bundle = |out: &str| {
        Command::new(binary::ctop())
            .arg("bundle")
            .arg(&op)
            .arg("-o")
            .arg(dir.path().join(out))
            .output()
            .expect("ctop runs")
    };
    assert!(bundle("a.js.gz").status.success());
    assert!(bundle("b.js.gz").status.success());
    let a = std::fs::read(dir.path().join("a.js.gz")).expect("a");
    assert_eq!(a, std::fs::read(dir.path().join("b.js.gz")).expect("b"), "same sources, same bytes");

    std::fs::write(op.join("operator.ct"), "import { z } from \"ctop\";\nconst = 1;\n").expect("write");
    let out = bundle("c.js.gz");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("operator.ct:2:"), "names file and line: {stderr}");
    assert!(
        stderr.contains(" --> operator.ct:2:7\n  |\n2 | const = 1;\n  |       ^"),
        "a code frame: {stderr}"
    );

    // An exception while the script declares its operators: the message, then the source
    // line with a caret under the column.
    std::fs::write(
        op.join("operator.ct"),
        "import { resource } from \"ctop\";\nconst n: number = 3;\nif (n > 2) {\n  throw new Error(\"too many\");\n}\n",
    )
    .expect("write");
    let out = bundle("d.js.gz");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("Error: too many (at operator.ct:4:"), "{stderr}");
    let frame: Vec<&str> =
        stderr.lines().skip_while(|l| !l.starts_with(" --> operator.ct:4:")).take(4).collect();
    assert_eq!(frame.get(1..3), Some(&["  |", "4 |   throw new Error(\"too many\");"][..]), "{stderr}");
    assert!(frame.get(3).is_some_and(|l| l.starts_with("  |   ") && l.ends_with('^')), "{stderr}");
}

#[test]
fn init_scaffolds_an_operator_that_bundles_and_gets_typings() {
    let dir = tempfile::tempdir().expect("temp dir");
    let op = dir.path().join("hello");
    let run = |args: &[&str]| Command::new(binary::ctop()).args(args).output().expect("ctop runs");
    let op_s = op.to_str().expect("utf-8");
    let out = run(&["init", op_s, "--kind", "Greeter", "--group", "demo.example.com"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    for f in ["operator.ct", "samples/greeter.yaml", "values.yaml", "tsconfig.json", "ctop.d.ts"] {
        assert!(op.join(f).exists(), "{f} written");
    }
    let again = run(&["init", op_s]);
    assert!(!again.status.success() && String::from_utf8_lossy(&again.stderr).contains("pass --force"));
    let bundle = run(&["bundle", op_s, "-o", dir.path().join("b.gz").to_str().expect("utf-8")]);
    assert!(bundle.status.success(), "{}", String::from_utf8_lossy(&bundle.stderr));
    let types = run(&["types", op_s]);
    assert!(types.status.success(), "{}", String::from_utf8_lossy(&types.stderr));
    let generated = std::fs::read_to_string(op.join("ctop-resources.d.ts")).expect("typings");
    assert!(generated.contains("export interface GreeterSpec {"), "{generated}");
    assert!(generated.contains("  replicas: number;"), "{generated}");
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write");
    path.to_str().expect("utf-8").to_owned()
}

const WIDGET_CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer}
"#;

/// `kubectl apply -f` of a `kind: List` validates the items against `/openapi/v2` (no
/// operation of `v1/List` in `/openapi/v3` lets it leave that to the server), which client-go
/// reads as protobuf: with kubectl's default strict validation, Lists of ConfigMaps and of
/// a custom resource apply, and an unknown field in an item is reported as kubectl does.
#[test]
fn kubectl_applies_a_list_with_strict_validation() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (_sim, kubeconfig) = common::start_sim(dir.path());
    let k = common::Kubectl { kubeconfig, cache: dir.path().join("cache") };
    let d = dir.path();
    let run = |args: &[&str]| {
        let out = k.run(args);
        (out.status.success(), String::from_utf8_lossy(&out.stderr).into_owned())
    };

    // What `kubectl get cm a b -o yaml` prints, applied back.
    k.ok(&["create", "configmap", "a", "--from-literal=x=1"]);
    k.ok(&["create", "configmap", "b", "--from-literal=y=2"]);
    let list = k.ok(&["get", "configmap", "a", "b", "-o", "yaml"]);
    assert!(list.starts_with("apiVersion: v1\nitems:"), "{list}");
    k.ok(&["delete", "configmap", "a", "b"]);
    let file = write(d, "list.yaml", &list);
    let out = k.ok(&["apply", "-f", &file]);
    assert_eq!(out, "configmap/a created\nconfigmap/b created\n");
    assert_eq!(k.ok(&["get", "configmap", "a", "-o", "jsonpath={.data.x}"]), "1");

    // A List holding a custom resource.
    let crd = write(d, "crd.yaml", WIDGET_CRD);
    k.ok(&["apply", "-f", &crd]);
    k.ok(&["wait", "--for=condition=Established", "crd/widgets.example.com"]);
    let mixed = "apiVersion: v1\nkind: List\nitems:\n\
        - apiVersion: example.com/v1\n  kind: Widget\n  metadata: {name: w, namespace: default}\n  spec: {size: 2}\n\
        - apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: c, namespace: default}\n  data: {k: v}\n";
    let out = k.ok(&["apply", "-f", &write(d, "mixed.yaml", mixed)]);
    assert_eq!(out, "widget.example.com/w created\nconfigmap/c created\n");
    assert_eq!(k.ok(&["get", "widget", "w", "-o", "jsonpath={.spec.size}"]), "2");

    // An unknown field in an item: kubectl's own validation names it, and nothing is applied.
    let bad = "apiVersion: v1\nkind: List\nitems:\n\
        - apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: d, namespace: default}\n  data: {k: v}\n  colour: red\n";
    let (ok, stderr) = run(&["apply", "-f", &write(d, "bad.yaml", bad)]);
    assert!(!ok);
    assert!(
        stderr.contains(r#"error validating data: ValidationError(ConfigMap): unknown field "colour" in io.k8s.api.core.v1.ConfigMap"#),
        "{stderr}"
    );
    let badcr = "apiVersion: v1\nkind: List\nitems:\n\
        - apiVersion: example.com/v1\n  kind: Widget\n  metadata: {name: v, namespace: default}\n  spec: {size: 2, colour: red}\n";
    let (ok, stderr) = run(&["apply", "-f", &write(d, "badcr.yaml", badcr)]);
    assert!(!ok);
    assert!(stderr.contains(r#"unknown field "colour""#), "{stderr}");
    assert!(!run(&["get", "configmap", "d"]).0 && !run(&["get", "widget", "v"]).0, "nothing was applied");
}

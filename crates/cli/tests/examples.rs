//! The examples under `examples/` as a user runs them: `ctop sim`, `ctop run <example>
//! --install-crds`, the example's samples applied with kubectl, and the behaviour its
//! README promises checked on the cluster with kubectl.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{Kubectl, Proc, start_sim};

fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples").join(name)
}

/// `ctop run examples/<name>` against the sim, its CRDs installed.
fn run_example(name: &str, k: &Kubectl) -> Proc {
    Proc(
        Command::new(env!("CARGO_BIN_EXE_ctop"))
            .arg("run")
            .arg(example(name))
            .arg("--kubeconfig")
            .arg(&k.kubeconfig)
            .args(["--install-crds", "--leader-elect=false", "--health-port", "0", "--metrics-port", "0"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("ctop run starts"),
    )
}

/// Stop `ctop run` with SIGTERM; it must exit cleanly.
fn stop(mut run: Proc) {
    let term = Command::new("kill").args(["-TERM", &run.0.id().to_string()]).status().expect("kill");
    assert!(term.success());
    let status = run.0.wait().expect("ctop run exits");
    assert!(status.success(), "ctop run exits cleanly on SIGTERM: {status:?}");
}

/// Apply a file or directory, retrying until the CRDs it needs are served.
fn apply(k: &Kubectl, path: &Path, expect: &str) {
    k.eventually(&["apply", "-f", path.to_str().expect("utf-8")], |s| s.contains(expect));
}

/// Write `yaml` to `dir/<file>` and apply it.
fn apply_yaml(k: &Kubectl, dir: &Path, file: &str, yaml: &str, expect: &str) {
    let path = dir.join(file);
    std::fs::write(&path, yaml).expect("write yaml");
    apply(k, &path, expect);
}

fn jsonpath(k: &Kubectl, kind: &str, name: &str, path: &str) -> String {
    k.ok(&["get", kind, name, "-o", &format!("jsonpath={path}")])
}

fn eventually_is(k: &Kubectl, kind: &str, name: &str, path: &str, want: &str) {
    k.eventually(&["get", kind, name, "-o", &format!("jsonpath={path}")], |s| s == want);
}

// ───────────────────────────── greeting ─────────────────────────────

#[test]
fn greeting_greets_families_and_holds_referenced_persons() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (_sim, kubeconfig) = start_sim(dir.path());
    let k = Kubectl { kubeconfig, cache: dir.path().join("cache") };
    let run = run_example("greeting", &k);
    apply(&k, &example("greeting").join("samples"), "greeting");

    let family = |want: &str| eventually_is(&k, "greeting", "doe-family", "{.status.message}|{.status.people}", want);
    family(r#"Hello to the Doe family: Jane, John|["janed","johnd"]"#);
    eventually_is(&k, "greeting", "hello-world", "{.status.message}|{.status.observedGeneration}", "Hello, World|1");
    for p in ["janed", "johnd", "maxm"] {
        eventually_is(&k, "person", p, "{.metadata.finalizers}", r#"["greetings.example.com/in-use"]"#);
    }

    // A Person changing family moves between Greetings; sorting is by first name.
    apply_yaml(
        &k,
        dir.path(),
        "must.yaml",
        "apiVersion: greetings.example.com/v1\nkind: Greeting\nmetadata: {name: must, namespace: default}\nspec: {surname: Mustermann}\n",
        "must",
    );
    eventually_is(&k, "greeting", "must", "{.status.message}", "Hello to the Mustermann family: Max");
    k.ok(&["patch", "person", "maxm", "--type=merge", "-p", r#"{"spec":{"surname":"Doe","firstName":"Adam"}}"#]);
    family(r#"Hello to the Doe family: Adam, Jane, John|["maxm","janed","johnd"]"#);
    eventually_is(&k, "greeting", "must", "{.status.message}|{.status.people}", "Hello to the Mustermann family: |[]");

    // With the operator stopped, deleting a referenced Person only marks it: the finalizer
    // holds it while the Greeting still lists it.
    stop(run);
    k.ok(&["delete", "person", "janed", "--wait=false"]);
    std::thread::sleep(Duration::from_secs(1));
    let marked = jsonpath(&k, "person", "janed", "{.metadata.deletionTimestamp}");
    assert!(!marked.is_empty(), "janed is soft-deleted and still there");
    // Back up: janed drops out of the Greeting, then the finalizer goes and so does janed.
    let run = run_example("greeting", &k);
    family(r#"Hello to the Doe family: Adam, John|["maxm","johnd"]"#);
    k.eventually(&["get", "persons", "-o", "name"], |s| !s.contains("janed"));

    // An unreferenced Person goes at once; the family shrinks again.
    k.ok(&["delete", "person", "maxm"]);
    family(r#"Hello to the Doe family: John|["johnd"]"#);

    // Exactly one of name and surname: the reconcile reports both/none as invalid.
    apply_yaml(
        &k,
        dir.path(),
        "both.yaml",
        "apiVersion: greetings.example.com/v1\nkind: Greeting\nmetadata: {name: both, namespace: default}\nspec: {name: A, surname: Doe}\n",
        "both",
    );
    eventually_is(
        &k,
        "greeting",
        "both",
        r#"{.status.conditions[?(@.type=="Valid")].reason}|{.status.message}"#,
        "InvalidSpec|",
    );
    // Deleting the Greeting releases nobody's finalizer wrongly: johnd is still listed by
    // doe-family and stays; once doe-family is gone, johnd can be deleted.
    k.ok(&["delete", "greeting", "doe-family"]);
    k.ok(&["delete", "person", "johnd", "--timeout=30s"]);
    k.eventually(&["get", "persons", "-o", "name"], |s| s.trim().is_empty());
    stop(run);
}

//! `ctop run` over an operator's life: the one-shot `onStart`, a process killed in the
//! middle of a reconcile and started again, and reconcile traces exported over OTLP.

mod common;

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{Kubectl, Proc, operator_dir, start_sim};
use ctop_e2e::binary;

/// A `Slow` CR: its reconcile spins for `spec.ms`, then applies a ConfigMap and sets
/// `status.done`. `onStart` applies an unowned ConfigMap once.
const SCRIPT: &str = r#"
import { resource, z, operator, apply, setStatus, Result, ConfigMap } from "ctop";

const slow = resource("test.example.com/v1", "Slow", {
  scope: "Namespaced",
  spec: { ms: z.number().int().min(0).default(0) },
  status: { done: z.boolean() },
});

operator(slow)
  .manages(ConfigMap)
  .onStart(() => {
    apply(ConfigMap({ metadata: { name: "started", namespace: "default" }, data: { by: "onStart" } }));
    return Result.ok();
  })
  .reconcile((cr) => {
    const until = Date.now() + cr.spec.ms;
    while (Date.now() < until) {}
    apply(ConfigMap({ metadata: { name: cr.metadata.name }, data: { done: "yes" } }));
    setStatus(cr, { done: true });
    return Result.ok();
  });
"#;

fn write_op(dir: &Path) -> std::path::PathBuf {
    let op = dir.join("op");
    std::fs::create_dir_all(&op).expect("mkdir");
    std::fs::write(op.join("operator.ct"), SCRIPT).expect("write the script");
    op
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port()
}

fn run(op: &Path, kubeconfig: &Path, metrics: u16, extra: &[&str]) -> Proc {
    Proc(
        Command::new(binary::ctop())
            .arg("run")
            .arg(op)
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .args(["--install-crds", "--leader-elect=false", "--health-port", "0"])
            .args(["--metrics-port", &metrics.to_string()])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("ctop run starts"),
    )
}

/// The sum of the `/metrics` samples on `port` whose line starts with `prefix`.
fn metric(port: u16, prefix: &str) -> Option<f64> {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.write_all(b"GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n").ok()?;
    let mut body = String::new();
    s.read_to_string(&mut body).ok()?;
    Some(
        body.lines()
            .filter(|l| l.starts_with(prefix))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum(),
    )
}

fn create_slow(k: &Kubectl, dir: &Path, name: &str, ms: u32) {
    let file = dir.join(format!("{name}.yaml"));
    std::fs::write(
        &file,
        format!("apiVersion: test.example.com/v1\nkind: Slow\nmetadata:\n  name: {name}\n  namespace: default\nspec:\n  ms: {ms}\n"),
    )
    .expect("write the CR");
    k.eventually(&["get", "crd", "slows.test.example.com", "-o", "name"], |s| !s.is_empty());
    k.eventually(&["apply", "-f", file.to_str().expect("utf-8")], |s| s.contains(name));
}

#[test]
fn on_start_runs_once_and_applies_unowned_objects() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (_sim, kubeconfig) = start_sim(dir.path());
    let op = write_op(dir.path());
    let port = free_port();
    let _run = run(&op, &kubeconfig, port, &[]);
    let k = Kubectl { kubeconfig, cache: dir.path().join("cache") };
    k.eventually(&["get", "configmap", "started", "-o", "jsonpath={.data.by}"], |s| s == "onStart");
    assert_eq!(
        k.ok(&["get", "configmap", "started", "-o", "jsonpath={.metadata.ownerReferences}"]),
        "",
        "what onStart applies has no owner"
    );
    let managers =
        k.ok(&["get", "configmap", "started", "-o", "jsonpath={.metadata.managedFields[*].manager}"]);
    assert_eq!(
        managers, "op",
        "applied server-side by the operator's own field manager (its directory's name)"
    );

    // CRs reconcile as usual after it; onStart does not run again.
    create_slow(&k, dir.path(), "a", 0);
    k.eventually(&["get", "configmap", "a", "-o", "jsonpath={.metadata.ownerReferences[0].name}"], |s| {
        s == "a"
    });
    let rv = k.ok(&["get", "configmap", "started", "-o", "jsonpath={.metadata.resourceVersion}"]);
    create_slow(&k, dir.path(), "b", 0);
    k.eventually(&["get", "slow", "b", "-o", "jsonpath={.status.done}"], |s| s == "true");
    assert_eq!(k.ok(&["get", "configmap", "started", "-o", "jsonpath={.metadata.resourceVersion}"]), rv);
    let runs = metric(port, "ctop_script_duration_seconds_count{").expect("metrics");
    let on_start =
        metric(port, "ctop_script_duration_seconds_count{controller=\"slow\",handler=\"onStart\"}")
            .expect("metrics");
    assert_eq!(on_start, 1.0, "onStart ran exactly once (of {runs} handler calls)");
}

#[test]
fn killed_mid_reconcile_the_next_process_converges() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (_sim, kubeconfig) = start_sim(dir.path());
    let op = write_op(dir.path());
    let port = free_port();
    let mut first = run(&op, &kubeconfig, port, &[]);
    let k = Kubectl { kubeconfig: kubeconfig.clone(), cache: dir.path().join("cache") };
    create_slow(&k, dir.path(), "slow", 3000);
    // Wait until a worker is inside the reconcile, then kill -9.
    let deadline = Instant::now() + Duration::from_secs(20);
    while metric(port, "controller_runtime_active_workers{") != Some(1.0) {
        assert!(Instant::now() < deadline, "the reconcile never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    first.0.kill().expect("kill -9");
    let _ = first.0.wait();
    assert_eq!(k.ok(&["get", "configmap", "-o", "name"]).lines().filter(|l| l.ends_with("/slow")).count(), 0);
    assert_eq!(k.ok(&["get", "slow", "slow", "-o", "jsonpath={.status.done}"]), "");

    let _second = run(&op, &kubeconfig, free_port(), &[]);
    k.eventually(&["get", "slow", "slow", "-o", "jsonpath={.status.done}"], |s| s == "true");
    assert_eq!(
        k.ok(&[
            "get",
            "configmap",
            "slow",
            "-o",
            "jsonpath={.data.done}/{.metadata.ownerReferences[0].name}"
        ]),
        "yes/slow"
    );
}

/// A minimal OTLP/HTTP collector: keeps the JSON body of every POST to `/v1/traces`.
fn collector() -> (u16, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let bodies = Arc::new(Mutex::new(Vec::new()));
    let keep = bodies.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(conn) = conn else { continue };
            let keep = keep.clone();
            std::thread::spawn(move || {
                let mut reader = BufReader::new(conn);
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    let request = line.clone();
                    let mut length = 0usize;
                    loop {
                        let mut h = String::new();
                        if reader.read_line(&mut h).unwrap_or(0) == 0 {
                            return;
                        }
                        if h.trim().is_empty() {
                            break;
                        }
                        if let Some((k, v)) = h.split_once(':')
                            && k.eq_ignore_ascii_case("content-length")
                        {
                            length = v.trim().parse().unwrap_or(0);
                        }
                    }
                    let mut body = vec![0; length];
                    if reader.read_exact(&mut body).is_err() {
                        return;
                    }
                    if request.starts_with("POST /v1/traces") {
                        keep.lock().expect("lock").push(String::from_utf8_lossy(&body).into_owned());
                    }
                    let reply =
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}";
                    if reader.get_mut().write_all(reply.as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    (port, bodies)
}

#[test]
fn reconciles_are_exported_as_traces_over_otlp() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (_sim, kubeconfig) = start_sim(dir.path());
    let op = write_op(dir.path());
    let (otlp, bodies) = collector();
    let endpoint = format!("http://127.0.0.1:{otlp}");
    let _run = run(&op, &kubeconfig, free_port(), &["--otlp-endpoint", &endpoint]);
    let k = Kubectl { kubeconfig, cache: dir.path().join("cache") };
    create_slow(&k, dir.path(), "traced", 0);
    k.eventually(&["get", "slow", "traced", "-o", "jsonpath={.status.done}"], |s| s == "true");

    // The batch exporter sends within a few seconds.
    let deadline = Instant::now() + Duration::from_secs(30);
    let (reconcile, spans) = loop {
        let all = bodies.lock().expect("lock").clone();
        let spans: Vec<serde_json::Value> = all
            .iter()
            .filter_map(|b| serde_json::from_str::<serde_json::Value>(b).ok())
            .flat_map(|v| {
                let mut out = Vec::new();
                for rs in v["resourceSpans"].as_array().into_iter().flatten() {
                    for ss in rs["scopeSpans"].as_array().into_iter().flatten() {
                        out.extend(ss["spans"].as_array().into_iter().flatten().cloned());
                    }
                }
                out
            })
            .collect();
        let attr = |s: &serde_json::Value, key: &str| {
            s["attributes"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|a| a["key"] == key)
                .and_then(|a| a["value"]["stringValue"].as_str().map(str::to_owned))
        };
        let found = spans
            .iter()
            .find(|s| s["name"] == "reconcile" && attr(s, "object").as_deref() == Some("default/traced"))
            .cloned();
        if let Some(r) = found {
            break (r, spans);
        }
        assert!(Instant::now() < deadline, "no reconcile span arrived; bodies: {all:?}");
        std::thread::sleep(Duration::from_millis(200));
    };
    let children: Vec<&str> = spans
        .iter()
        .filter(|s| s["parentSpanId"] == reconcile["spanId"] && s["traceId"] == reconcile["traceId"])
        .filter_map(|s| s["name"].as_str())
        .collect();
    for child in ["script", "apply", "status"] {
        assert!(children.contains(&child), "the reconcile span has a {child} child: {children:?}");
    }
}

/// Finalizers the script manages itself, a deleting object seen by `reconcile`, the
/// primary kind observable from its own cache, and `patch()` inside `finalize`.
const FINALIZERS_SCRIPT: &str = r#"
import { resource, z, operator, addFinalizer, removeFinalizer, getObserved, patch, setStatus, Result, ConfigMap } from "ctop";

const hold = resource("test.example.com/v1", "Hold", {
  scope: "Namespaced",
  spec: { release: z.boolean().default(false) },
  status: { selfSeen: z.boolean() },
});
const tidy = resource("test.example.com/v1", "Tidy", { scope: "Namespaced", spec: {} });

operator(hold).reconcile((cr) => {
  if (cr.metadata.deletionTimestamp) {
    if (cr.spec.release) removeFinalizer(cr, "test.example.com/hold");
    return Result.ok();
  }
  addFinalizer(cr, "test.example.com/hold");
  setStatus(cr, { selfSeen: getObserved(hold, cr.metadata.name)?.metadata?.uid === cr.metadata.uid });
  return Result.ok();
});

operator(tidy)
  // finalize patches a ConfigMap it does not own: that takes a grant.
  .permission({ apiGroups: [""], resources: ["configmaps"], verbs: ["patch"] })
  .reconcile(() => Result.ok())
  .finalize((cr) => {
    patch(ConfigMap({ metadata: { name: "tidy-log" }, data: { [cr.metadata.name]: "finalized" } }));
    return Result.ok();
  });
"#;

#[test]
fn scripts_manage_finalizers_and_finalize_can_patch() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (_sim, kubeconfig) = start_sim(dir.path());
    let op = operator_dir(dir.path(), FINALIZERS_SCRIPT);
    let _run = run(&op, &kubeconfig, free_port(), &[]);
    let k = Kubectl { kubeconfig, cache: dir.path().join("cache") };
    for crd in ["holds.test.example.com", "tidies.test.example.com"] {
        k.eventually(&["get", "crd", crd, "-o", "name"], |s| !s.is_empty());
    }
    let file = dir.path().join("objects.yaml");
    std::fs::write(
        &file,
        "apiVersion: test.example.com/v1\nkind: Hold\nmetadata: {name: h, namespace: default}\nspec: {}\n---\n\
         apiVersion: test.example.com/v1\nkind: Tidy\nmetadata: {name: t, namespace: default}\nspec: {}\n---\n\
         apiVersion: v1\nkind: ConfigMap\nmetadata: {name: tidy-log, namespace: default}\ndata: {}\n",
    )
    .expect("write");
    k.eventually(&["apply", "-f", file.to_str().expect("utf-8")], |s| s.contains("hold"));

    // addFinalizer lands; the CR sees itself in the cache.
    k.eventually(&["get", "hold", "h", "-o", "jsonpath={.metadata.finalizers[*]}"], |s| {
        s == "test.example.com/hold"
    });
    k.eventually(&["get", "hold", "h", "-o", "jsonpath={.status.selfSeen}"], |s| s == "true");
    // Deleted, it stays while the script holds it; released, the reconcile removes it.
    k.ok(&["delete", "hold", "h", "--wait=false"]);
    k.eventually(&["get", "hold", "h", "-o", "jsonpath={.metadata.deletionTimestamp}"], |s| !s.is_empty());
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        k.ok(&["get", "hold", "h", "-o", "jsonpath={.metadata.finalizers[*]}"]),
        "test.example.com/hold"
    );
    k.ok(&["patch", "hold", "h", "--type=merge", "-p", r#"{"spec":{"release":true}}"#]);
    k.eventually(&["get", "holds", "-o", "name"], |s| s.is_empty());

    // finalize's patch() is written before the finalizer goes.
    k.eventually(&["get", "tidy", "t", "-o", "jsonpath={.metadata.finalizers[*]}"], |s| {
        s.contains("finalizer")
    });
    k.ok(&["delete", "tidy", "t"]);
    k.eventually(&["get", "tidies", "-o", "name"], |s| s.is_empty());
    assert_eq!(k.ok(&["get", "configmap", "tidy-log", "-o", "jsonpath={.data.t}"]), "finalized");
}

/// Each `Set` applies one ConfigMap per name in `spec.names`.
const PRUNE_SCRIPT: &str = r#"
import { resource, z, operator, apply, Result, ConfigMap } from "ctop";
const set = resource("test.example.com/v1", "Set", { scope: "Namespaced", spec: { names: z.array(z.string()) } });
operator(set).manages(ConfigMap).reconcile((cr) => {
  for (const n of cr.spec.names) apply(ConfigMap({ metadata: { name: n }, data: { set: cr.metadata.name } }));
  return Result.ok();
});
"#;

#[test]
fn a_child_dropped_from_the_desired_set_is_pruned_and_nothing_else() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (_sim, kubeconfig) = start_sim(dir.path());
    let op = operator_dir(dir.path(), PRUNE_SCRIPT);
    let _run = run(&op, &kubeconfig, free_port(), &[]);
    let k = Kubectl { kubeconfig, cache: dir.path().join("cache") };
    k.eventually(&["get", "crd", "sets.test.example.com", "-o", "name"], |s| !s.is_empty());
    let file = dir.path().join("sets.yaml");
    std::fs::write(
        &file,
        "apiVersion: test.example.com/v1\nkind: Set\nmetadata: {name: a, namespace: default}\nspec: {names: [one, two]}\n---\n\
         apiVersion: test.example.com/v1\nkind: Set\nmetadata: {name: b, namespace: default}\nspec: {names: [three]}\n---\n\
         apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bystander, namespace: default}\ndata: {}\n",
    )
    .expect("write");
    k.eventually(&["apply", "-f", file.to_str().expect("utf-8")], |s| s.contains("set"));
    let uid = |name: &str| {
        k.eventually(&["get", "configmap", name, "-o", "jsonpath={.metadata.uid}"], |s| !s.is_empty())
    };
    let before: Vec<String> = ["one", "two", "three", "bystander"].iter().map(|n| uid(n)).collect();

    k.ok(&["patch", "set", "a", "--type=merge", "-p", r#"{"spec":{"names":["one"]}}"#]);
    k.eventually(&["get", "configmaps", "-o", "name"], |s| !s.lines().any(|l| l == "configmap/two"));
    for (name, was) in [("one", &before[0]), ("three", &before[2]), ("bystander", &before[3])] {
        assert_eq!(&uid(name), was, "{name} is untouched");
    }
    // An empty desired set prunes the rest of that owner's children only.
    k.ok(&["patch", "set", "a", "--type=merge", "-p", r#"{"spec":{"names":[]}}"#]);
    k.eventually(&["get", "configmaps", "-o", "name"], |s| !s.lines().any(|l| l == "configmap/one"));
    assert_eq!(uid("three"), before[2]);
    assert_eq!(uid("bystander"), before[3]);
}

/// A `Tick` CR resynced every second: its status copies the spec's note and keeps the
/// value `first` that its first reconcile chose, read back from the stored status after.
const TICK_SCRIPT: &str = r#"
import { resource, z, operator, setStatus, Result } from "ctop";
const tick = resource("test.example.com/v1", "Tick", {
  scope: "Namespaced",
  spec: { note: z.string().default("") },
  status: { note: z.string(), first: z.string() },
});
operator(tick).every("1s").reconcile((cr) => {
  setStatus(cr, { note: cr.spec.note, first: cr.status?.first ?? `${cr.metadata.name}@${Date.now()}` });
  return Result.ok();
});
"#;

/// The writes (`create`, `update`, `patch`, `delete…`) of clients other than kubectl.
fn writes_by_ctop(k: &Kubectl) -> u64 {
    let writes = ["create ", "update ", "patch ", "delete"];
    k.requests_by_ctop()
        .iter()
        .filter(|(key, _)| writes.iter().any(|w| key.starts_with(w)))
        .map(|(_, n)| n)
        .sum()
}

#[test]
fn periodic_ticks_reconcile_and_status_persists_through_the_subresource() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (_sim, kubeconfig) = start_sim(dir.path());
    let op = operator_dir(dir.path(), TICK_SCRIPT);
    let port = free_port();
    let mut first_run = run(&op, &kubeconfig, port, &[]);
    let k = Kubectl { kubeconfig: kubeconfig.clone(), cache: dir.path().join("cache") };
    k.eventually(&["get", "crd", "ticks.test.example.com", "-o", "name"], |s| !s.is_empty());
    let file = dir.path().join("tick.yaml");
    std::fs::write(&file, "apiVersion: test.example.com/v1\nkind: Tick\nmetadata: {name: t1, namespace: default}\nspec: {note: a}\n")
        .expect("write");
    k.eventually(&["apply", "-f", file.to_str().expect("utf-8")], |s| s.contains("t1"));
    let status = || ["get", "tick", "t1", "-o", "jsonpath={.status.note}|{.status.first}"];
    let first = k.eventually(&status(), |s| s.starts_with("a|t1@"));
    let first = first.trim_start_matches("a|").to_owned();

    // With nothing changing, `every("1s")` still reconciles, and a no-op tick writes nothing.
    let reconciles = || metric(port, "controller_runtime_reconcile_total{").expect("metrics");
    let (before, writes) = (reconciles(), writes_by_ctop(&k));
    std::thread::sleep(Duration::from_millis(3500));
    let ticks = reconciles() - before;
    assert!(ticks >= 2.0, "periodic ticks reconcile: {ticks} reconciles in 3.5 s");
    assert_eq!(writes_by_ctop(&k), writes, "the ticks found nothing to change and wrote nothing");

    // A spec write cannot touch the status: the object it stores keeps the operator's status.
    let stored = k.ok(&[
        "patch",
        "tick",
        "t1",
        "--type=merge",
        "-p",
        r#"{"spec":{"note":"b"},"status":{"note":"forged","first":"forged"}}"#,
        "-o",
        "jsonpath={.spec.note}|{.status.note}|{.status.first}",
    ]);
    assert_eq!(stored, format!("b|a|{first}"), "the status in a spec write is ignored");
    k.eventually(&status(), |s| s == format!("b|{first}"));

    // A new process reads the status back from the API: `first` is never chosen again.
    first_run.0.kill().expect("kill ctop run");
    first_run.0.wait().expect("ctop run exits");
    let port = free_port();
    let _second_run = run(&op, &kubeconfig, port, &[]);
    let start = Instant::now();
    while metric(port, "controller_runtime_reconcile_total{").unwrap_or(0.0) < 2.0 {
        assert!(start.elapsed() < Duration::from_secs(30), "the restarted operator reconciles");
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(k.ok(&status()), format!("b|{first}"), "the stored status survived the restart");
}

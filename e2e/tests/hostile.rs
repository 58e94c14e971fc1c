//! One operator, twenty good custom resources and four hostile ones (100,000 applies, an
//! endless loop, an allocation bomb, an exception in a promise job): `ctop run` stays up, the good ones converge, and each
//! hostile one reports its own failure on the object (a Warning event) and in `/status`.
//! The script is the runtime's hostile golden case, where each mode's error is pinned.

mod common;

use std::io::{Read as _, Write as _};
use std::process::Command;
use std::time::{Duration, Instant};

use common::{Kubectl, Logged, operator_dir, start_sim};
use ctop_e2e::binary;

const SCRIPT: &str = include_str!("../../crates/runtime/tests/golden/hostile/operator.ct");

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port()
}

/// `GET path` on 127.0.0.1:`port`: the body, when something answers.
fn get(port: u16, path: &str) -> Option<String> {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.write_all(format!("GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n").as_bytes()).ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    text.split_once("\r\n\r\n").map(|(_, body)| body.to_owned())
}

fn bombs(names_modes: &[(String, &str, u32)]) -> String {
    names_modes
        .iter()
        .map(|(name, mode, count)| {
            format!(
                "apiVersion: hostile.example.com/v1\nkind: Bomb\nmetadata:\n  name: {name}\n  namespace: default\n\
                 spec:\n  mode: {mode}\n  count: {count}\n"
            )
        })
        .collect::<Vec<_>>()
        .join("---\n")
}

#[test]
fn hostile_resources_fail_alone_and_visibly() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (_sim, kubeconfig) = start_sim(dir.path());
    let op = operator_dir(dir.path(), SCRIPT);
    let health = free_port();
    let mut run = Logged::spawn(
        Command::new(binary::ctop())
            .arg("run")
            .arg(&op)
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args(["--install-crds", "--leader-elect=false", "--metrics-port", "0"])
            .args([
                "--health-port",
                &health.to_string(),
                "--reconcile-timeout",
                "3s",
                "--script-memory",
                "32Mi",
            ])
            .args(["--max-children", "1000"])
            .env("CTOP_LOG", "info"),
        dir.path().join("hostile.log"),
    );
    let k = Kubectl { kubeconfig: kubeconfig.clone(), cache: dir.path().join("cache") };
    k.eventually(&["get", "crd", "bombs.hostile.example.com", "-o", "name"], |s| !s.is_empty());

    let mut all: Vec<(String, &str, u32)> = vec![
        ("runaway".into(), "applies", 100_000),
        ("loop".into(), "loop", 0),
        ("alloc".into(), "alloc", 0),
        ("job".into(), "jobThrow", 0),
    ];
    all.extend((0..20).map(|i| (format!("good-{i}"), "none", 0)));
    let manifest = dir.path().join("bombs.yaml");
    std::fs::write(&manifest, bombs(&all)).expect("write the bombs");
    let file = manifest.to_str().expect("utf-8");
    k.eventually(&["apply", "-f", file], |s| s.contains("bomb"));

    // Every good one converges: its ConfigMap exists and its status is written.
    k.eventually(&["get", "bombs", "-o", "jsonpath={range .items[*]}{.status.phase}{\"\\n\"}{end}"], |s| {
        s.lines().filter(|l| *l == "Done").count() == 20
    });
    for i in 0..20 {
        k.ok(&["get", "configmap", &format!("good-{i}"), "-o", "name"]);
    }

    // Each hostile one carries its own failure, as an event on the object.
    let reasons = [
        ("runaway", "more than 1000 children (apply and patch) in one call"),
        ("loop", "ran longer than its 3s deadline"),
        ("alloc", "ran out of memory (limit 32Mi)"),
        ("job", "thrown in a promise job (a promise rejected with no handler)"),
    ];
    for (name, text) in reasons {
        k.eventually(
            &[
                "get",
                "events.events.k8s.io",
                "--field-selector",
                &format!("regarding.name={name}"),
                "-o",
                "jsonpath={range .items[*]}{.type} {.reason}: {.note}{\"\\n\"}{end}",
            ],
            |s| s.lines().any(|l| l.starts_with("Warning ") && l.contains(text)),
        );
        let phase = k.ok(&["get", "bomb", name, "-o", "jsonpath={.status.phase}"]);
        assert_eq!(phase, "", "{name} never reports success");
    }
    assert_eq!(
        k.ok(&["get", "configmaps", "-o", "name"]).lines().filter(|l| l.contains("runaway-")).count(),
        0,
        "a call over the children limit applies nothing"
    );

    // The runaway's failure is terminal (retrying cannot help): it is not retried, and stays
    // on the object's Reconciled condition.
    k.eventually(
        &["get", "bomb", "runaway", "-o", "jsonpath={.status.conditions[?(@.type==\"Reconciled\")].message}"],
        |s| s.contains("children"),
    );
    // /status names the failures that keep coming back, and the process is still up.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let status = get(health, "/status").unwrap_or_default();
        if ["deadline", "out of memory", "promise job"].iter().all(|t| status.contains(t)) {
            break;
        }
        assert!(Instant::now() < deadline, "/status does not list the three failures:\n{status}");
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(run.proc.0.try_wait().expect("try_wait").is_none(), "ctop run is still running");
}

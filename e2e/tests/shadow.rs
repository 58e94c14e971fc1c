//! A shadow against a cluster it may only read: `ctop sim --authz` stands in for the live
//! cluster; examples/webapp (v1) reconciles the sample there and stops; the shadow's
//! manifests (`ctop manifests --shadow`) are applied and `ctop run --shadow` runs a v2 that
//! drops the Service with the shadow ServiceAccount's token. It converges, its page's
//! /api/shadow names the Service it would delete, its requests are gets, lists and watches
//! only, and the cluster's resourceVersion (kubesim's change counter) does not move.

mod common;

use std::io::{Read as _, Write as _};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::{Kubectl, Logged, free_port};
use ctop_e2e::binary;
use serde_json::Value;

/// `GET path` on 127.0.0.1:`port`; the body of a 200.
fn http_get(port: u16, path: &str) -> Option<String> {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(s, "GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    let (head, body) = text.split_once("\r\n\r\n")?;
    head.starts_with("HTTP/1.1 200").then(|| body.to_owned())
}

fn resource_version(k: &Kubectl) -> u64 {
    let stats: Value = serde_json::from_str(&k.ok(&["get", "--raw", "/kubesim/stats"])).expect("stats");
    stats["resourceVersion"].as_u64().expect("a resourceVersion")
}

#[test]
fn a_shadow_with_a_read_only_token_reports_what_v2_would_do_and_writes_nothing() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (_sim, admin) = common::start_sim_with(dir.path(), &["--authz", "--no-workloads"]);
    let k = Kubectl { kubeconfig: admin.clone(), cache: dir.path().join("cache") };
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/webapp");

    // v1 reconciles the sample on the cluster, then stops.
    let v1 = Logged::spawn(
        Command::new(binary::ctop()).arg("run").arg(&example).arg("--kubeconfig").arg(&admin).args([
            "--install-crds",
            "--leader-elect=false",
            "--health-port",
            "0",
            "--metrics-port",
            "0",
        ]),
        dir.path().join("v1.log"),
    );
    k.eventually(&["apply", "-f", example.join("samples").to_str().expect("utf-8")], |_| true);
    k.eventually(&["get", "webapp", "shop", "-o", "jsonpath={.status.phase}"], |p| !p.is_empty());
    k.eventually(&["get", "service", "shop", "-o", "name"], |s| s.contains("shop"));
    common::examples::stop(v1);

    // v2 drops the Service.
    let source = std::fs::read_to_string(example.join("operator.ct")).expect("script");
    let start = source.find("    apply(Service({").expect("the Service");
    let end = start + source[start..].find("}));\n").expect("its end") + 5;
    let v2 = dir.path().join("v2");
    std::fs::create_dir_all(&v2).expect("mkdir");
    std::fs::write(v2.join("operator.ct"), format!("{}{}", &source[..start], &source[end..])).expect("write");

    // The shadow's deployment: its ServiceAccount and read-only RBAC.
    let manifests = Command::new(binary::ctop())
        .args(["manifests", "--shadow", "--name", "webapp"])
        .arg(&v2)
        .output()
        .expect("ctop manifests runs");
    assert!(manifests.status.success(), "{}", String::from_utf8_lossy(&manifests.stderr));
    let file = dir.path().join("shadow.yaml");
    std::fs::write(&file, &manifests.stdout).expect("write");
    k.ok(&["create", "namespace", "webapp-system"]);
    k.ok(&["apply", "--server-side", "-f", file.to_str().expect("utf-8")]);
    let token = k.ok(&["create", "token", "webapp-shadow", "-n", "webapp-system"]);
    let reader = dir.path().join("reader-kc");
    std::fs::copy(&admin, &reader).expect("copy the kubeconfig");
    let rk = Kubectl { kubeconfig: reader.clone(), cache: dir.path().join("reader-cache") };
    rk.ok(&["config", "set-credentials", "shadow", "--token", token.trim()]);
    rk.ok(&["config", "set-context", "--current", "--user", "shadow"]);
    let denied = rk.run(&["create", "configmap", "x"]);
    assert!(!denied.status.success(), "the shadow's account cannot write");

    let before = resource_version(&k);
    k.ok(&["delete", "--raw", "/kubesim/stats"]);
    let port = free_port();
    let report = dir.path().join("report.json");
    let mut shadow = Logged::spawn(
        Command::new(binary::ctop())
            .arg("run")
            .arg(&v2)
            .arg("--kubeconfig")
            .arg(&reader)
            .args([
                "--name",
                "webapp",
                "--shadow",
                "--shadow-quiet",
                "1s",
                "--health-port",
                "0",
                "--metrics-port",
                "0",
            ])
            .args(["--ui-port", &port.to_string()])
            .arg("--shadow-report")
            .arg(&report),
        dir.path().join("shadow.log"),
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    let converged = loop {
        if let Some(body) = http_get(port, "/api/shadow") {
            let r: Value = serde_json::from_str(&body).expect("the report is JSON");
            if r["converged"] == true {
                break r;
            }
        }
        assert!(shadow.proc.0.try_wait().expect("try_wait").is_none(), "ctop run --shadow exited");
        assert!(Instant::now() < deadline, "the shadow did not converge in 60 s");
        std::thread::sleep(Duration::from_millis(200));
    };
    let summary: Vec<&str> =
        converged["summary"].as_array().expect("summary").iter().filter_map(Value::as_str).collect();
    assert!(summary.contains(&"would delete v1/Service on 1 of 1 WebApp objects"), "{summary:?}");
    let owner = &converged["owners"][0];
    assert_eq!(
        (owner["owner"]["kind"].as_str(), owner["owner"]["name"].as_str()),
        (Some("WebApp"), Some("shop"))
    );
    let deleted = owner["writes"]
        .as_array()
        .expect("writes")
        .iter()
        .any(|w| w["action"] == "delete" && w["kind"] == "v1/Service" && w["name"] == "shop");
    assert!(deleted, "{owner}");

    // Nothing was written to the cluster, and the shadow only read.
    assert_eq!(resource_version(&k), before, "the cluster changed under the shadow");
    let asked = k.requests_by_ctop();
    assert!(!asked.is_empty());
    for key in asked.keys() {
        let verb = key.split(' ').next().unwrap_or_default();
        assert!(["get", "list", "watch"].contains(&verb), "the shadow asked {key}: {asked:?}");
    }

    // SIGTERM: the report is written on the way out.
    let status = common::terminate(&mut shadow.proc);
    assert!(status.success(), "ctop run --shadow exited with {status}");
    let written: Value =
        serde_json::from_slice(&std::fs::read(&report).expect("the report file")).expect("JSON");
    assert_eq!(written["summary"], converged["summary"]);
}

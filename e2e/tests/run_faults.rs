//! `ctop run` under faults injected into kubesim (`ctop sim`): server errors on applies,
//! dropped watches, and leader failover between two replicas.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{Kubectl, Proc, start_sim};
use ctop_e2e::binary;

struct Sim {
    _proc: Proc,
    dir: tempfile::TempDir,
    k: Kubectl,
}

fn sim() -> Sim {
    let dir = tempfile::tempdir().expect("temp dir");
    let (proc, kubeconfig) = start_sim(dir.path());
    let k = Kubectl { kubeconfig, cache: dir.path().join("cache") };
    Sim { _proc: proc, dir, k }
}

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/webapp")
}

fn run_webapp(sim: &Sim, extra: &[&str]) -> Proc {
    Proc(
        Command::new(binary::ctop())
            .arg("run")
            .arg(example())
            .arg("--kubeconfig")
            .arg(&sim.k.kubeconfig)
            .args(["--install-crds", "--health-port", "0", "--metrics-port", "0"])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("ctop run starts"),
    )
}

fn apply_sample(sim: &Sim) {
    let k = &sim.k;
    k.eventually(&["get", "crd", "webapps.apps.example.com", "-o", "name"], |s| !s.is_empty());
    let sample = example().join("samples");
    k.eventually(&["apply", "-f", sample.to_str().expect("utf-8")], |s| s.contains("webapp"));
}

fn uid(k: &Kubectl, kind: &str, name: &str) -> String {
    k.eventually(&["get", kind, name, "-o", "jsonpath={.metadata.uid}"], |s| !s.is_empty())
}

fn replicas_become(k: &Kubectl, n: &str) {
    k.eventually(&["get", "deployment", "shop", "-o", "jsonpath={.spec.replicas}"], |s| s == n);
}

#[test]
fn apply_errors_back_off_without_pruning_and_converge() {
    failed_applies_converge(500);
}

#[test]
fn throttled_applies_back_off_without_pruning_and_converge() {
    failed_applies_converge(429);
}

/// The next three Deployment applies answer `code`; the change still lands, and nothing
/// is pruned or recreated on the way.
fn failed_applies_converge(code: u16) {
    let sim = sim();
    let k = &sim.k;
    let _run = run_webapp(&sim, &["--leader-elect=false"]);
    apply_sample(&sim);
    replicas_become(k, "2");
    let service = uid(k, "service", "shop");
    let secret = uid(k, "secret", "shop-token");
    let deployment = uid(k, "deployment", "shop");

    sim.k.post(
        sim.dir.path(),
        "/kubesim/faults",
        &format!(r#"{{"verb":"apply","resource":"deployments","code":{code},"count":3}}"#),
    );
    k.ok(&["patch", "webapp", "shop", "--type=merge", "-p", r#"{"spec":{"replicas":4}}"#]);
    replicas_become(k, "4");
    assert_eq!(k.ok(&["get", "--raw", "/kubesim/faults"]).trim(), "[]", "every injected failure was hit");
    assert_eq!(uid(k, "service", "shop"), service, "the Service survived the failing passes");
    assert_eq!(uid(k, "secret", "shop-token"), secret, "the Secret survived the failing passes");
    assert_eq!(uid(k, "deployment", "shop"), deployment, "the Deployment was updated, never recreated");
}

#[test]
fn dropped_watches_resume() {
    let sim = sim();
    let k = &sim.k;
    let _run = run_webapp(&sim, &["--leader-elect=false"]);
    apply_sample(&sim);
    replicas_become(k, "2");
    for replicas in ["3", "5"] {
        sim.k.post(sim.dir.path(), "/kubesim/faults/drop-watches", "{}");
        k.ok(&[
            "patch",
            "webapp",
            "shop",
            "--type=merge",
            "-p",
            &format!(r#"{{"spec":{{"replicas":{replicas}}}}}"#),
        ]);
        replicas_become(k, replicas);
        // A child change after the drop is seen too: a deleted Service comes back.
        k.ok(&["delete", "service", "shop"]);
        k.eventually(&["get", "service", "shop", "-o", "name"], |s| !s.is_empty());
    }
}

/// Watches resumed after a drop are answered `410 Expired` (twice per kind, as when the
/// server compacted past the resume version): the reflectors relist and keep serving.
#[test]
fn expired_watches_relist_and_resume() {
    let sim = sim();
    let k = &sim.k;
    let _run = run_webapp(&sim, &["--leader-elect=false"]);
    apply_sample(&sim);
    replicas_become(k, "2");
    for resource in ["webapps", "deployments", "services"] {
        sim.k.post(
            sim.dir.path(),
            "/kubesim/faults",
            &format!(r#"{{"verb":"watch","resource":"{resource}","code":410,"count":2}}"#),
        );
    }
    sim.k.post(sim.dir.path(), "/kubesim/faults/drop-watches", "{}");
    k.eventually(&["get", "--raw", "/kubesim/faults"], |s| s.trim() == "[]");
    k.ok(&["patch", "webapp", "shop", "--type=merge", "-p", r#"{"spec":{"replicas":6}}"#]);
    replicas_become(k, "6");
    k.ok(&["delete", "service", "shop"]);
    k.eventually(&["get", "service", "shop", "-o", "name"], |s| !s.is_empty());
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port()
}

/// The sum of the samples of `/metrics` on `port` whose line starts with `prefix` and
/// contains `needle` (`None` while not serving).
fn metric(port: u16, prefix: &str, needle: &str) -> Option<u64> {
    use std::io::{Read as _, Write as _};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.write_all(b"GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n").ok()?;
    let mut body = String::new();
    s.read_to_string(&mut body).ok()?;
    Some(
        body.lines()
            .filter(|l| l.starts_with(prefix) && l.contains(needle))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .map(|v| v as u64)
            .sum(),
    )
}

/// The successful reconciles `/metrics` on `port` counts (`None` while not serving).
fn reconciles(port: u16) -> Option<u64> {
    metric(port, "controller_runtime_reconcile_total{", "result=\"success\"")
}

/// `leader_election_master_status` on `port`.
fn leading(port: u16) -> Option<u64> {
    metric(port, "leader_election_master_status{", "webapp-leader")
}

fn replica(sim: &Sim, id: &str, metrics: u16) -> Proc {
    Proc(
        Command::new(binary::ctop())
            .arg("run")
            .arg(example())
            .arg("--kubeconfig")
            .arg(&sim.k.kubeconfig)
            .args(["--install-crds", "--health-port", "0", "--metrics-port", &metrics.to_string()])
            .args([
                "--leader-elect",
                "--lease-duration",
                "3s",
                "--renew-deadline",
                "2s",
                "--retry-period",
                "250ms",
            ])
            .env("POD_NAME", id)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("ctop run starts"),
    )
}

fn holder() -> [&'static str; 7] {
    ["get", "lease", "webapp-leader", "-n", "default", "-o", "jsonpath={.spec.holderIdentity}"]
}

/// Replica a, once it leads, and replica b standing by with its /metrics served, the sample
/// reconciled by a: (a, b, a's metrics port, b's).
fn leader_and_standby(sim: &Sim) -> (Proc, Proc, u16, u16) {
    let k = &sim.k;
    let (port_a, port_b) = (free_port(), free_port());
    let a = replica(sim, "replica-a", port_a);
    k.eventually(&holder(), |s| s == "replica-a");
    let b = replica(sim, "replica-b", port_b);
    apply_sample(sim);
    replicas_become(k, "2");
    let deadline = Instant::now() + Duration::from_secs(20);
    while reconciles(port_b).is_none() {
        assert!(Instant::now() < deadline, "the standby never served /metrics");
        std::thread::sleep(Duration::from_millis(50));
    }
    (a, b, port_a, port_b)
}

#[test]
fn a_standby_takes_over_within_one_lease_duration() {
    let sim = sim();
    let k = &sim.k;
    let (mut a, _b, port_a, port_b) = leader_and_standby(&sim);
    let deadline = Instant::now() + Duration::from_secs(20);
    while reconciles(port_a).is_none_or(|n| n == 0) {
        assert!(Instant::now() < deadline, "the leader never reconciled");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(reconciles(port_b), Some(0), "the standby does not reconcile");
    assert_eq!(k.ok(&holder()), "replica-a");

    a.0.kill().expect("kill -9 the leader");
    let killed = Instant::now();
    let _ = a.0.wait();
    k.eventually(&holder(), |s| s == "replica-b");
    let took = killed.elapsed();
    assert!(took < Duration::from_secs(3) + Duration::from_millis(1500), "took over after {took:?}");
    k.ok(&["patch", "webapp", "shop", "--type=merge", "-p", r#"{"spec":{"replicas":3}}"#]);
    replicas_become(k, "3");
    assert!(reconciles(port_b).is_some_and(|n| n > 0), "the new leader reconciles");
}

/// A leader stopped with SIGTERM hands its Lease over; the standby that wins it reconciles
/// every object at once, not when the requeue it gave each object while standing by (5 s)
/// comes due.
#[test]
fn a_standby_that_wins_the_lease_reconciles_at_once() {
    let sim = sim();
    let k = &sim.k;
    let (mut a, _b, _, port_b) = leader_and_standby(&sim);
    let status = Command::new("kill").args(["-TERM", &a.0.id().to_string()]).status().expect("kill runs");
    assert!(status.success());
    let stopped = Instant::now();
    let _ = a.0.wait();
    let deadline = stopped + Duration::from_secs(10);
    while reconciles(port_b).is_none_or(|n| n == 0) {
        assert!(Instant::now() < deadline, "the new leader never reconciled");
        std::thread::sleep(Duration::from_millis(20));
    }
    let took = stopped.elapsed();
    assert_eq!(k.ok(&holder()), "replica-b");
    // The hand-over itself takes a retry period (250 ms here); the 5 s requeue is not waited for.
    assert!(took < Duration::from_millis(2500), "the new leader first reconciled {took:?} after the SIGTERM");
}

/// `GET path` on `port`: the status code, if something answers.
fn status_of(port: u16, path: &str) -> Option<u16> {
    use std::io::{Read as _, Write as _};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.write_all(format!("GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n").as_bytes()).ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    text.split(' ').nth(1)?.parse().ok()
}

#[test]
fn ready_once_caches_sync_even_with_no_custom_resources() {
    let sim = sim();
    let health = free_port();
    let _op = Proc(
        Command::new(binary::ctop())
            .arg("run")
            .arg(example())
            .arg("--kubeconfig")
            .arg(&sim.k.kubeconfig)
            .args(["--install-crds", "--leader-elect=false", "--metrics-port", "0"])
            .args(["--health-port", &health.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("ctop run starts"),
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        // No WebApp exists, so no reconcile ever runs: readiness comes from the caches.
        if status_of(health, "/readyz") == Some(200) {
            break;
        }
        assert!(Instant::now() < deadline, "/readyz never became 200 with no custom resources");
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(status_of(health, "/healthz"), Some(200));
}

/// A leader whose Lease is taken over (here by hand, as another replica would after a
/// partition) stops reconciling until it wins the Lease back.
#[test]
fn a_leader_that_loses_its_lease_stops_reconciling() {
    let sim = sim();
    let k = &sim.k;
    let port = free_port();
    let _a = replica(&sim, "replica-a", port);
    k.eventually(&holder(), |s| s == "replica-a");
    apply_sample(&sim);
    replicas_become(k, "2");

    let now = Command::new("date").args(["-u", "+%Y-%m-%dT%H:%M:%S.000000Z"]).output().expect("date");
    let now = String::from_utf8_lossy(&now.stdout).trim().to_owned();
    k.ok(&[
        "patch",
        "lease",
        "webapp-leader",
        "-n",
        "default",
        "--type=merge",
        "-p",
        &format!(
            r#"{{"spec":{{"holderIdentity":"intruder","leaseDurationSeconds":3600,"renewTime":"{now}","acquireTime":"{now}"}}}}"#
        ),
    ]);
    let deadline = Instant::now() + Duration::from_secs(10);
    while leading(port) != Some(0) {
        assert!(Instant::now() < deadline, "the replica never stepped down");
        std::thread::sleep(Duration::from_millis(100));
    }
    let before = reconciles(port).expect("metrics");
    k.ok(&["patch", "webapp", "shop", "--type=merge", "-p", r#"{"spec":{"replicas":3}}"#]);
    // Several renew periods pass: nothing of the change is acted on while not leading.
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(k.ok(&["get", "deployment", "shop", "-o", "jsonpath={.spec.replicas}"]), "2");
    assert_eq!(reconciles(port), Some(before), "no reconcile ran while another replica held the Lease");
    assert_eq!(k.ok(&holder()), "intruder");

    // The intruder goes away (its Lease deleted): the replica leads again and catches up.
    k.ok(&["delete", "lease", "webapp-leader", "-n", "default"]);
    k.eventually(&holder(), |s| s == "replica-a");
    replicas_become(k, "3");
    assert_eq!(leading(port), Some(1));
}

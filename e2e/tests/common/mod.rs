//! Helpers shared by the black-box tests of the `ctop` binary: child processes that die
//! with the test, and kubectl against a kubeconfig with its own discovery cache.
#![allow(dead_code)]

pub mod examples;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use ctop_e2e::binary;

/// A child process killed when the test drops it.
pub struct Proc(pub Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A child process whose stderr goes to a file, printed (its last 200 lines) when the
/// test fails while the process is still held, so a CI failure shows what it logged.
pub struct Logged {
    /// The process.
    pub proc: Proc,
    /// Its stderr.
    pub log: PathBuf,
}

impl Logged {
    /// Spawn `cmd` with stdout discarded and stderr written to `log`.
    pub fn spawn(cmd: &mut Command, log: PathBuf) -> Self {
        let file = std::fs::File::create(&log).expect("create the log file");
        let child = cmd.stdout(Stdio::null()).stderr(file).spawn().expect("the process starts");
        Self { proc: Proc(child), log }
    }
}

impl Drop for Logged {
    #[expect(clippy::print_stderr, reason = "nextest shows a failed test's stderr: the log goes there")]
    fn drop(&mut self) {
        let _ = self.proc.0.kill();
        let _ = self.proc.0.wait();
        if std::thread::panicking() {
            let text = std::fs::read_to_string(&self.log).unwrap_or_default();
            let lines: Vec<&str> = text.lines().collect();
            let tail = &lines[lines.len().saturating_sub(200)..];
            eprintln!("── last {} lines of {} ──\n{}", tail.len(), self.log.display(), tail.join("\n"));
        }
    }
}

/// Send `proc` SIGTERM and wait (20 s at most) for it to exit; its exit status.
pub fn terminate(proc: &mut Proc) -> std::process::ExitStatus {
    let pid = proc.0.id().to_string();
    assert!(Command::new("kill").args(["-TERM", &pid]).status().expect("kill").success());
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(s) = proc.0.try_wait().expect("try_wait") {
            return s;
        }
        assert!(Instant::now() < deadline, "the process did not stop on SIGTERM");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Wait until `path` exists (e.g. the kubeconfig `ctop sim` writes once ready).
pub fn wait_for(path: &Path) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !path.exists() {
        assert!(Instant::now() < deadline, "ctop sim did not write {}", path.display());
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `ctop sim --no-workloads` (a bare API server: nothing runs Pods or writes the status of
/// Deployments) on a free port, writing its kubeconfig to `dir/kc`; returns once it is ready.
pub fn start_sim(dir: &Path) -> (Proc, PathBuf) {
    start_sim_with(dir, &["--no-workloads"])
}

/// `ctop sim` running workloads like a cluster (Pods start after 100 ms), writing its
/// kubeconfig to `dir/kc`; returns once it is ready.
pub fn start_cluster(dir: &Path) -> (Proc, PathBuf) {
    start_sim_with(dir, &["--pod-start", "100ms"])
}

/// [`start_cluster`] that calls the conversion and admission webhooks of the Service
/// `namespace/name` on `127.0.0.1:port` (`ctop sim --webhook-service`), as a cluster would
/// reach the operator's webhook Service.
pub fn start_cluster_with_webhook(dir: &Path, service: &str, port: u16) -> (Proc, PathBuf) {
    let mapping = format!("{service}=127.0.0.1:{port}");
    start_sim_with(dir, &["--pod-start", "100ms", "--webhook-service", &mapping])
}

/// A port nothing listens on now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port()
}

/// `ctop sim EXTRA…` on a free port, writing its kubeconfig to `dir/kc`; returns once it is
/// ready.
pub fn start_sim_with(dir: &Path, extra: &[&str]) -> (Proc, PathBuf) {
    let kubeconfig = dir.join("kc");
    let sim = Proc(
        Command::new(binary::ctop())
            .args(["sim", "--addr", "127.0.0.1:0"])
            .args(extra)
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("ctop sim starts"),
    );
    wait_for(&kubeconfig);
    (sim, kubeconfig)
}

/// An operator directory `dir/op` holding `script` as its `operator.ct`.
pub fn operator_dir(dir: &Path, script: &str) -> PathBuf {
    let op = dir.join("op");
    std::fs::create_dir_all(&op).expect("mkdir");
    std::fs::write(op.join("operator.ct"), script).expect("write the script");
    op
}

/// `ctop run <dir> --install-crds` against `kubeconfig` (no leader election, ports picked
/// by the system) with `extra` flags; its debug log goes to `<kubeconfig dir>/<log>` and
/// is printed if the test fails.
pub fn ctop_run(dir: &Path, kubeconfig: &Path, extra: &[&str], log: &str) -> Logged {
    Logged::spawn(
        Command::new(binary::ctop())
            .arg("run")
            .arg(dir)
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .args(["--install-crds", "--leader-elect=false", "--health-port", "0", "--metrics-port", "0"])
            .args(extra)
            .env("CTOP_LOG", "info,ctop=debug,ctop_runtime=debug,ctop_applier=debug"),
        kubeconfig.with_file_name(log),
    )
}

/// kubectl with a kubeconfig and a per-test discovery cache.
pub struct Kubectl {
    /// The kubeconfig.
    pub kubeconfig: PathBuf,
    /// The discovery cache directory.
    pub cache: PathBuf,
}

impl Kubectl {
    /// Run `kubectl args`.
    pub fn run(&self, args: &[&str]) -> Output {
        Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg("--cache-dir")
            .arg(&self.cache)
            .args(args)
            .output()
            .expect("kubectl runs")
    }

    /// Run `kubectl args`, which must succeed; its stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(out.status.success(), "kubectl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Poll `kubectl args` until its output satisfies `pred` (40 s at most).
    pub fn eventually(&self, args: &[&str], pred: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(40);
        loop {
            let out = self.run(args);
            let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
            if out.status.success() && pred(&stdout) {
                return stdout;
            }
            assert!(
                Instant::now() < deadline,
                "kubectl {args:?} never matched: {stdout} {}",
                String::from_utf8_lossy(&out.stderr)
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// kubesim's request counts (`GET /kubesim/stats`) of every client but kubectl, summed
    /// per key (`watch configmaps`, `patch deployments`, …): what the operator asked.
    pub fn requests_by_ctop(&self) -> std::collections::BTreeMap<String, u64> {
        let stats: serde_json::Value =
            serde_json::from_str(&self.ok(&["get", "--raw", "/kubesim/stats"])).expect("stats are JSON");
        let mut sums = std::collections::BTreeMap::new();
        let clients = stats["clients"].as_object().expect("clients");
        for (_, client) in clients.iter().filter(|(agent, _)| !agent.starts_with("kubectl")) {
            for (key, n) in client["requests"].as_object().into_iter().flatten() {
                *sums.entry(key.clone()).or_default() += n.as_u64().unwrap_or(0);
            }
        }
        sums
    }

    /// `POST path` with `body` (JSON) to the cluster, authenticated as the kubeconfig says
    /// (kubesim's `/kubesim/faults` control API).
    pub fn post(&self, dir: &Path, path: &str, body: &str) {
        let file = dir.join("body.json");
        std::fs::write(&file, body).expect("write the body");
        self.ok(&["create", "--raw", path, "-f", file.to_str().expect("utf-8")]);
    }
}

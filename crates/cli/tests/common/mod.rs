//! Helpers shared by the CLI's end-to-end tests: child processes that die with the test,
//! and kubectl against a kubeconfig with its own discovery cache.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// A child process killed when the test drops it.
pub struct Proc(pub Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
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

/// `ctop sim` on a free port, writing its kubeconfig to `dir/kc`; returns once it is ready.
pub fn start_sim(dir: &Path) -> (Proc, PathBuf) {
    let kubeconfig = dir.join("kc");
    let sim = Proc(
        Command::new(env!("CARGO_BIN_EXE_ctop"))
            .args(["sim", "--addr", "127.0.0.1:0", "--kubeconfig"])
            .arg(&kubeconfig)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("ctop sim starts"),
    );
    wait_for(&kubeconfig);
    (sim, kubeconfig)
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

    /// `POST path` with `body` (JSON) to the cluster, authenticated as the kubeconfig says
    /// (kubesim's `/kubesim/faults` control API).
    pub fn post(&self, dir: &Path, path: &str, body: &str) {
        let file = dir.join("body.json");
        std::fs::write(&file, body).expect("write the body");
        self.ok(&["create", "--raw", path, "-f", file.to_str().expect("utf-8")]);
    }
}

//! `ctop run` as a user runs it: kubesim (`ctop sim`), the webapp example with
//! `--install-crds`, and kubectl creating, patching and inspecting objects.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn wait_for(path: &Path) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !path.exists() {
        assert!(Instant::now() < deadline, "ctop sim did not write {}", path.display());
        std::thread::sleep(Duration::from_millis(20));
    }
}

struct Kubectl {
    kubeconfig: PathBuf,
    cache: PathBuf,
}

impl Kubectl {
    fn run(&self, args: &[&str]) -> Output {
        Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg("--cache-dir")
            .arg(&self.cache)
            .args(args)
            .output()
            .expect("kubectl runs")
    }

    fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(out.status.success(), "kubectl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Poll `kubectl args` until its output satisfies `pred`.
    fn eventually(&self, args: &[&str], pred: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(30);
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
}

#[test]
fn run_reconciles_the_webapp_example() {
    let dir = tempfile::tempdir().expect("temp dir");
    let kubeconfig = dir.path().join("kc");
    let _sim = Proc(
        Command::new(env!("CARGO_BIN_EXE_ctop"))
            .args(["sim", "--addr", "127.0.0.1:0", "--kubeconfig"])
            .arg(&kubeconfig)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("ctop sim starts"),
    );
    wait_for(&kubeconfig);
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/webapp");
    let mut run = Proc(
        Command::new(env!("CARGO_BIN_EXE_ctop"))
            .arg("run")
            .arg(&example)
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args(["--install-crds", "--leader-elect=false", "--health-port", "0", "--metrics-port", "0"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("ctop run starts"),
    );
    let k = Kubectl { kubeconfig, cache: dir.path().join("cache") };
    k.eventually(&["get", "crd", "webapps.apps.example.com", "-o", "name"], |s| !s.is_empty());
    // The CRD is served once established; retry the create until discovery has it.
    let sample = example.join("samples");
    k.eventually(&["apply", "-f", sample.to_str().expect("utf-8")], |s| s.contains("webapp"));

    let owner_of = |kind: &str, name: &str| {
        k.eventually(&["get", kind, name, "-o", "jsonpath={.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].name}/{.metadata.ownerReferences[0].controller}"], |s| !s.is_empty())
    };
    for (kind, name) in [("deployment", "shop"), ("service", "shop"), ("secret", "shop-token")] {
        assert_eq!(owner_of(kind, name), "WebApp/shop/true", "{kind} {name} is owned by the WebApp");
    }
    k.eventually(&["get", "webapp", "shop", "-o", "jsonpath={.status.phase}"], |s| s == "Pending");
    let token = k.ok(&["get", "secret", "shop-token", "-o", "jsonpath={.data.token}"]);
    assert!(!token.is_empty());

    k.ok(&[
        "patch",
        "deployment",
        "shop",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"replicas":2,"availableReplicas":2}}"#,
    ]);
    k.eventually(&["get", "webapp", "shop", "-o", "jsonpath={.status.phase}"], |s| s == "Running");

    k.ok(&["patch", "webapp", "shop", "--type=merge", "-p", r#"{"spec":{"replicas":3}}"#]);
    k.eventually(&["get", "deployment", "shop", "-o", "jsonpath={.spec.replicas}"], |s| s == "3");
    // 2 of 3 available now: back to Pending, after more reconciles.
    k.eventually(&["get", "webapp", "shop", "-o", "jsonpath={.status.phase}"], |s| s == "Pending");
    assert_eq!(
        k.ok(&["get", "secret", "shop-token", "-o", "jsonpath={.data.token}"]),
        token,
        "the token is generated once and read back from the cache"
    );

    let term = Command::new("kill").args(["-TERM", &run.0.id().to_string()]).status().expect("kill");
    assert!(term.success());
    let status = run.0.wait().expect("ctop run exits");
    assert!(status.success(), "ctop run exits cleanly on SIGTERM: {status:?}");
}

//! Helpers of the tests that run the operators under `examples/`.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::{Kubectl, Logged, ctop_run};

/// `examples/<name>`.
pub fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples").join(name)
}

/// `ctop run examples/<name>` against the sim, its CRDs installed.
pub fn run_example(name: &str, k: &Kubectl) -> Logged {
    run_example_with(name, k, &[])
}

/// `ctop run examples/<name> <extra...>`.
/// Its log (debug for ctop's own crates) is printed if the test fails.
pub fn run_example_with(name: &str, k: &Kubectl, extra: &[&str]) -> Logged {
    ctop_run(&example(name), &k.kubeconfig, extra, &format!("ctop-run-{name}.log"))
}

/// Stop `ctop run` with SIGTERM; it must exit cleanly.
pub fn stop(mut run: Logged) {
    let term = Command::new("kill").args(["-TERM", &run.proc.0.id().to_string()]).status().expect("kill");
    assert!(term.success());
    let status = run.proc.0.wait().expect("ctop run exits");
    assert!(status.success(), "ctop run exits cleanly on SIGTERM: {status:?}");
}

/// Apply a file or directory, retrying until the CRDs it needs are served.
pub fn apply(k: &Kubectl, path: &Path, expect: &str) {
    k.eventually(&["apply", "-f", path.to_str().expect("utf-8")], |s| s.contains(expect));
}

/// `kubectl get <kind> <name> -o jsonpath=<path>` until it prints `want`.
pub fn eventually_is(k: &Kubectl, kind: &str, name: &str, path: &str, want: &str) {
    k.eventually(&["get", kind, name, "-o", &format!("jsonpath={path}")], |s| s == want);
}

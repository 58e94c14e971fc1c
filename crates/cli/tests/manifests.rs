//! `ctop manifests --argocd-health` on examples/webapp: the argocd-cm patch Argo CD reads
//! its health checks from. (Applying it with kubectl: `e2e/tests/manifests.rs`.)

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Value, json};

fn webapp() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/webapp")
}

fn ctop(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ctop")).args(args).env("CTOP_LOG", "error").output().expect("ctop runs")
}

fn argocd_health(extra: &[&str]) -> Value {
    let dir = webapp().display().to_string();
    let out = ctop(&[&["manifests", dir.as_str(), "--argocd-health"], extra].concat());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let yaml = String::from_utf8_lossy(&out.stdout);
    assert!(yaml.starts_with("# Argo CD health checks"), "{yaml}");
    assert!(!yaml.contains("---"), "one document only:\n{yaml}");
    ctop_core::yaml::from_str(&yaml).expect("one YAML document")
}

#[test]
fn webapp_gets_an_argocd_cm_patch_with_the_health_check_of_its_kind() {
    let cm = argocd_health(&[]);
    assert_eq!(cm["apiVersion"], "v1");
    assert_eq!(cm["kind"], "ConfigMap");
    assert_eq!(
        cm["metadata"],
        json!({
            "name": "argocd-cm",
            "namespace": "argocd",
            "labels": {"app.kubernetes.io/name": "argocd-cm", "app.kubernetes.io/part-of": "argocd"},
        })
    );
    let data = cm["data"].as_object().expect("data");
    let keys: Vec<&String> = data.keys().collect();
    assert_eq!(keys, ["resource.customizations.health.apps.example.com_WebApp"]);
    assert_eq!(data.values().next().and_then(Value::as_str), Some(ctop_manifests::argocd::HEALTH_LUA));
    assert_eq!(
        cm.as_object().map(serde_json::Map::len),
        Some(4),
        "apiVersion, kind, metadata, data only: {cm}"
    );

    let elsewhere = argocd_health(&["--argocd-namespace", "gitops"]);
    assert_eq!(elsewhere["metadata"]["namespace"], "gitops");
    assert_eq!(elsewhere["data"], cm["data"]);
}

#[test]
fn the_patch_goes_to_a_file_and_its_namespace_is_checked() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let file = tmp.path().join("argocd-health.yaml");
    let dir = webapp().display().to_string();
    let out = ctop(&["manifests", &dir, "--argocd-health", "-o", file.to_str().expect("utf-8")]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let written: Value =
        ctop_core::yaml::from_str(&std::fs::read_to_string(&file).expect("written")).expect("YAML");
    assert_eq!(written, argocd_health(&[]));

    let bad = ctop(&["manifests", &dir, "--argocd-health", "--argocd-namespace", "Argo_CD"]);
    assert!(!bad.status.success());
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("Argo CD namespace \"Argo_CD\" must be a DNS label")
    );
    let alone = ctop(&["manifests", &dir, "--argocd-namespace", "argo"]);
    assert!(!alone.status.success(), "--argocd-namespace needs --argocd-health");
}

//! `ctop sim` as a kind cluster looks to a client: a client-certificate kubeconfig
//! (`--kubeconfig-client-cert`), the system Pods a fresh cluster holds (`--no-system-pods`
//! leaves them out), and graceful Pod deletion.

mod common;

use common::{Kubectl, start_sim_with};

fn kubectl(dir: &std::path::Path, kubeconfig: std::path::PathBuf) -> Kubectl {
    Kubectl { kubeconfig, cache: dir.join("cache") }
}

/// kind writes a kubeconfig whose admin authenticates with a client certificate; kubesim's
/// is signed by its CA and names `kubesim-admin` in `system:masters`
/// (`staging/src/k8s.io/apiserver/pkg/authentication/request/x509/x509.go`: CN the user, O
/// the groups).
#[test]
fn a_client_certificate_kubeconfig() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (_sim, kc) = start_sim_with(dir.path(), &["--authz", "--no-workloads", "--kubeconfig-client-cert"]);
    let yaml = std::fs::read_to_string(&kc).expect("kubeconfig");
    assert!(yaml.contains("client-certificate-data:") && !yaml.contains("token:"), "{yaml}");
    let k = kubectl(dir.path(), kc);
    let who =
        k.ok(&["auth", "whoami", "-o", "jsonpath={.status.userInfo.username} {.status.userInfo.groups}"]);
    assert_eq!(who, r#"kubesim-admin ["system:masters","system:authenticated"]"#);
    assert!(k.ok(&["get", "namespaces", "-o", "name"]).lines().any(|l| l == "namespace/kube-system"));
}

/// A fresh kind cluster runs about nine Pods in `kube-system` (the control plane's mirror
/// Pods, two CoreDNS, kube-proxy and kindnet per node) and local-path-provisioner.
#[test]
fn system_pods_or_none() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (_sim, kc) = start_sim_with(dir.path(), &["--pod-start", "50ms"]);
    let k = kubectl(dir.path(), kc);
    let ready = "jsonpath={range .items[*]}{.metadata.namespace}/{.status.conditions[?(@.type==\"Ready\")].status} {end}";
    let pods = k.eventually(&["get", "pods", "-A", "-o", ready], |s| {
        s.split_whitespace().count() == 9 && s.split_whitespace().all(|p| p.ends_with("/True"))
    });
    assert_eq!(pods.matches("kube-system/").count(), 8, "{pods}");
    assert!(k.ok(&["get", "pod", "-n", "kube-system", "etcd-kubesim-node-1", "-o", "name"]).contains("etcd"));

    let bare = tempfile::tempdir().expect("temp dir");
    let (_sim, kc) = start_sim_with(bare.path(), &["--pod-start", "50ms", "--no-system-pods"]);
    let k = kubectl(bare.path(), kc);
    assert_eq!(k.ok(&["get", "pods", "-A", "-o", "name"]).trim(), "");
}

/// `kubectl delete pod` waits for the Pod to be gone: the API server marks it
/// (`pkg/registry/core/pod/strategy.go`, `CheckGracefulDelete`) and the kubelet removes it
/// once its containers stopped.
#[test]
fn deleting_a_pod_waits_for_the_kubelet() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (_sim, kc) = start_sim_with(dir.path(), &["--pod-start", "50ms", "--no-system-pods"]);
    let k = kubectl(dir.path(), kc);
    k.ok(&["run", "web", "--image=nginx:1.27"]);
    k.ok(&["wait", "--for=condition=Ready", "pod/web", "--timeout=20s"]);
    assert_eq!(k.ok(&["delete", "pod", "web", "--timeout=20s"]).trim(), r#"pod "web" deleted"#);
    assert_eq!(k.ok(&["get", "pods", "-o", "name"]).trim(), "");
}

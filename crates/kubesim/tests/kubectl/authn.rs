//! Authentication through kubectl: a kubeconfig with a client certificate, as kind writes
//! one, instead of a token.

use ctop_kubesim::Config;
use serde_json::Value;

use super::*;

/// `staging/src/k8s.io/apiserver/pkg/authentication/request/x509/x509.go`: the CN of a
/// client certificate signed by the client CA is the user and its O the groups;
/// `authenticated_group_adder.go` adds `system:authenticated`. `kubectl auth whoami` asks
/// with a SelfSubjectReview.
#[tokio::test(flavor = "multi_thread")]
async fn a_client_certificate_kubeconfig_authenticates_as_its_subject() {
    let env = Env::start_with(Config { authz: true, ..Config::default() }).await;
    let kubeconfig = env.dir.path().join("cert.kubeconfig");
    let yaml = env.sim.kubeconfig_with_client_cert().expect("TLS is on").expect("client cert");
    assert!(yaml.contains("client-certificate-data:") && !yaml.contains("token:"), "{yaml}");
    std::fs::write(&kubeconfig, yaml).expect("write kubeconfig");
    let out = env.run_as(&kubeconfig, &["auth", "whoami", "-o", "json"], None);
    assert!(out.ok(), "{}", out.stderr);
    let review: Value = serde_json::from_str(&out.stdout).expect("SelfSubjectReview");
    assert_eq!(review["status"]["userInfo"]["username"], "kubesim-admin");
    assert_eq!(
        review["status"]["userInfo"]["groups"],
        serde_json::json!(["system:masters", "system:authenticated"])
    );
    let out = env.run_as(&kubeconfig, &["get", "namespaces", "-o", "name"], None);
    assert!(out.ok() && out.stdout.contains("namespace/default"), "{}", out.stderr);
}

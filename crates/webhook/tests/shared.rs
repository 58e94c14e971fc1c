//! The self-issued certificate shared through a Secret, against kubesim with a real kube
//! client: replicas starting together end up with one certificate, later ones read it, a
//! Secret for other hosts or with garbage in it is replaced, and a missing permission is a
//! clear error.

mod support;

use std::collections::BTreeMap;

use ctop_kubesim::{Config, KubeSim};
use ctop_webhook::shared::{HOSTS_ANNOTATION, SharedCertError, shared_self_issued};
use ctop_webhook::{SelfIssued, TlsSource};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, PostParams};

fn hosts() -> Vec<String> {
    vec!["op-webhook.op-system.svc".to_owned(), "127.0.0.1".to_owned()]
}

fn data(secret: &Secret, key: &str) -> String {
    let bytes = secret.data.as_ref().and_then(|d| d.get(key)).map(|b| b.0.clone()).unwrap_or_default();
    String::from_utf8(bytes).expect("utf-8")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_share_one_certificate_through_the_secret() {
    let sim = KubeSim::start(Config::default()).await.expect("kubesim starts");
    let client = support::client(&sim).await;
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "default");

    // Four replicas start at once: one create wins, the others read its Secret.
    let starts = (0..4).map(|_| {
        let client = client.clone();
        tokio::spawn(async move { shared_self_issued(&client, "default", "op-webhook-tls", &hosts()).await })
    });
    let mut issued: Vec<SelfIssued> = Vec::new();
    for start in starts {
        issued.push(start.await.expect("task").expect("shared certificate"));
    }
    assert!(issued.windows(2).all(|w| w[0].ca_pem == w[1].ca_pem && w[0].cert_pem == w[1].cert_pem));
    let stored = secrets.get("op-webhook-tls").await.expect("the Secret exists");
    assert_eq!(stored.type_.as_deref(), Some("kubernetes.io/tls"));
    assert_eq!(data(&stored, "ca.crt"), issued[0].ca_pem);
    assert_eq!(data(&stored, "tls.crt"), issued[0].cert_pem);
    assert_eq!(
        stored.metadata.annotations.as_ref().and_then(|a| a.get(HOSTS_ANNOTATION)).map(String::as_str),
        Some("127.0.0.1,op-webhook.op-system.svc")
    );
    // It serves: the stored pair loads as a TLS source.
    ctop_webhook::tls::CertStore::new(&TlsSource::SelfIssued(issued[0].clone())).expect("the pair loads");

    // A restart reads the same certificate (host order does not matter).
    let mut reversed = hosts();
    reversed.reverse();
    let again = shared_self_issued(&client, "default", "op-webhook-tls", &reversed).await.expect("read");
    assert_eq!(again.ca_pem, issued[0].ca_pem);

    // Other hosts: a new certificate replaces the old one in the same Secret.
    let other = shared_self_issued(&client, "default", "op-webhook-tls", &["other.svc".to_owned()])
        .await
        .expect("replaced");
    assert_ne!(other.ca_pem, issued[0].ca_pem);
    assert_eq!(data(&secrets.get("op-webhook-tls").await.expect("get"), "ca.crt"), other.ca_pem);

    // A Secret someone filled with garbage is replaced too.
    let mut broken = secrets.get("op-webhook-tls").await.expect("get");
    broken.data = Some(BTreeMap::from([
        ("ca.crt".to_owned(), ByteString(b"nope".to_vec())),
        ("tls.crt".to_owned(), ByteString(b"nope".to_vec())),
        ("tls.key".to_owned(), ByteString(b"nope".to_vec())),
    ]));
    secrets.replace("op-webhook-tls", &PostParams::default(), &broken).await.expect("break it");
    let fixed = shared_self_issued(&client, "default", "op-webhook-tls", &["other.svc".to_owned()])
        .await
        .expect("replaced");
    assert!(fixed.cert_pem.contains("BEGIN CERTIFICATE"));
    assert_eq!(data(&secrets.get("op-webhook-tls").await.expect("get"), "tls.crt"), fixed.cert_pem);
}

#[tokio::test]
async fn without_permission_the_error_says_what_to_grant() {
    let sim = KubeSim::start(Config { authz: true, ..Config::default() }).await.expect("kubesim starts");
    let admin = support::client(&sim).await;
    // A ServiceAccount with no role at all.
    let accounts: Api<k8s_openapi::api::core::v1::ServiceAccount> = Api::namespaced(admin.clone(), "default");
    let sa = serde_json::from_value(serde_json::json!({"metadata": {"name": "op"}})).expect("sa");
    accounts.create(&PostParams::default(), &sa).await.expect("sa created");
    let token = accounts
        .create_token_request("op", &PostParams::default(), &Default::default())
        .await
        .expect("token")
        .status
        .expect("status")
        .token;
    let kc = ctop_kubesim::kubeconfig_yaml(&sim.url(), sim.ca_pem(), Some(&token), "default");
    let kc = kube::config::Kubeconfig::from_yaml(&kc).expect("kubeconfig parses");
    let cfg = kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
        .await
        .expect("kubeconfig loads");
    let op = kube::Client::try_from(cfg).expect("client");
    let err = shared_self_issued(&op, "default", "op-webhook-tls", &hosts()).await.expect_err("forbidden");
    assert!(matches!(&err, SharedCertError::Api { action: "read", .. }), "{err}");
    let text = err.to_string();
    assert!(
        text.contains("Secret default/op-webhook-tls") && text.contains("get, create and update"),
        "{text}"
    );
}

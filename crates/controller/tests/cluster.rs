//! The operator's client of the cluster (`ctop_controller::client`).

use std::time::Duration;

use ctop_kubesim::{Config, KubeSim};
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, ListParams};

/// A server over plain HTTP with no CA in the kubeconfig (`kubectl proxy`, `ctop sim
/// --plain-http`) is reached as it is: the client takes no root certificates for it and
/// still talks to it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_http_server_is_reached_without_root_certificates() {
    let sim =
        KubeSim::start(Config { tls: false, bookmark_interval: Duration::from_secs(1), ..Config::default() })
            .await
            .expect("kubesim starts");
    assert!(sim.url().starts_with("http://"), "{}", sim.url());
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("kubeconfig");
    sim.write_kubeconfig(&path).expect("the kubeconfig is written");

    let config = ctop_controller::kube_config(Some(&path), None).await.expect("the kubeconfig reads");
    assert!(config.root_cert.is_none(), "the kubeconfig names no CA");
    let client = ctop_controller::client(Some(&path), None).await.expect("a client");
    let namespaces =
        Api::<Namespace>::all(client).list(&ListParams::default()).await.expect("a list over HTTP");
    assert!(namespaces.items.iter().any(|n| n.metadata.name.as_deref() == Some("default")));
}

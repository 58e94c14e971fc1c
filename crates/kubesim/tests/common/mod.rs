//! Shared helpers of the kubesim integration tests.
#![allow(dead_code)]

use std::time::{Duration, Instant};

use ctop_kubesim::{Config, KubeSim};
use kube::Client;

/// A fresh kubesim and a kube-rs client for it.
pub async fn start() -> (KubeSim, Client) {
    start_with(Config::default()).await
}

/// A kubesim started with `config` and an admin client.
pub async fn start_with(config: Config) -> (KubeSim, Client) {
    let _ = tracing_subscriber::fmt().with_test_writer().with_env_filter("ctop_kubesim=info").try_init();
    let sim = KubeSim::start(config).await.expect("kubesim starts");
    let client = client_for(&sim.kubeconfig()).await;
    (sim, client)
}

/// A client from kubeconfig YAML.
pub async fn client_for(kubeconfig: &str) -> Client {
    let kc = kube::config::Kubeconfig::from_yaml(kubeconfig).expect("kubeconfig parses");
    let cfg = kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
        .await
        .expect("kubeconfig loads");
    Client::try_from(cfg).expect("client")
}

/// Poll `f` until it returns `Some`, or panic after `secs` seconds.
pub async fn eventually<T, F, Fut>(secs: u64, what: &str, mut f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(v) = f().await {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The `reason` and `code` of a kube API error.
pub fn api_err<T: std::fmt::Debug>(r: Result<T, kube::Error>) -> kube::core::Status {
    match r {
        Err(kube::Error::Api(s)) => *s,
        other => panic!("expected an API error, got {other:?}"),
    }
}

/// A CRD for `widgets.example.com` with a status subresource, printer columns and a schema
/// exercising defaults, enums and ranges.
pub fn widget_crd() -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wd"]},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "additionalPrinterColumns": [{"name": "Size", "type": "integer", "jsonPath": ".spec.size"}],
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "spec": {
                            "type": "object",
                            "required": ["color"],
                            "properties": {
                                "color": {"type": "string", "enum": ["red", "blue"]},
                                "size": {"type": "integer", "minimum": 1, "maximum": 10, "default": 3},
                                "tags": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
                                "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
                            }
                        },
                        "status": {
                            "type": "object",
                            "properties": {"phase": {"type": "string"}, "observedGeneration": {"type": "integer"}}
                        }
                    }
                }}
            }]
        }
    })
}

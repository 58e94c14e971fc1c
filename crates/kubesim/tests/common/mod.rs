//! Shared helpers of the kubesim integration tests.
#![allow(dead_code)]

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
    ctop_test_support::client(kubeconfig).await
}

#[allow(unused_imports)]
pub use ctop_test_support::eventually;

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

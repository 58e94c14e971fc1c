//! Shared helpers of the applier's integration tests: a kubesim, a client, two CRDs.
#![allow(dead_code)]

use ctop_kubesim::{Config, KubeSim};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, PostParams};
use serde_json::{Value, json};

/// A fresh kubesim with the `App` (namespaced) and `Tenant` (cluster-scoped) CRDs of group
/// `apps.example.com` installed, and a client for it.
pub async fn start() -> (KubeSim, Client) {
    let _ = tracing_subscriber::fmt().with_test_writer().with_env_filter("ctop_kubesim=info").try_init();
    let sim = KubeSim::start(Config::default()).await.expect("kubesim starts");
    let kc = kube::config::Kubeconfig::from_yaml(&sim.kubeconfig()).expect("kubeconfig parses");
    let cfg = kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
        .await
        .expect("kubeconfig loads");
    let client = Client::try_from(cfg).expect("client");
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    for (kind, plural, scope) in [("App", "apps", "Namespaced"), ("Tenant", "tenants", "Cluster")] {
        let crd: CustomResourceDefinition = serde_json::from_value(crd(kind, plural, scope)).expect("crd");
        crds.create(&PostParams::default(), &crd).await.expect("crd created");
    }
    for plural in ["apps", "tenants"] {
        eventually(5, "CRD established", || async {
            let crd = crds.get(&format!("{plural}.apps.example.com")).await.ok()?;
            let established =
                crd.status?.conditions?.iter().any(|c| c.type_ == "Established" && c.status == "True");
            established.then_some(())
        })
        .await;
    }
    (sim, client)
}

fn crd(kind: &str, plural: &str, scope: &str) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.apps.example.com"), "labels": {"applyset.kubernetes.io/is-parent-type": "true"}},
        "spec": {
            "group": "apps.example.com",
            "scope": scope,
            "names": {"plural": plural, "singular": kind.to_lowercase(), "kind": kind},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                        "status": {
                            "type": "object",
                            "properties": {
                                "phase": {"type": "string"},
                                "message": {"type": "string"},
                                "details": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                                "observedGeneration": {"type": "integer"},
                                "conditions": {
                                    "type": "array",
                                    "x-kubernetes-list-type": "map",
                                    "x-kubernetes-list-map-keys": ["type"],
                                    "items": {"type": "object", "required": ["type", "status"],
                                              "x-kubernetes-preserve-unknown-fields": true,
                                              "properties": {"type": {"type": "string"}, "status": {"type": "string"}}}
                                }
                            }
                        }
                    }
                }}
            }]
        }
    })
}

/// The dynamic API of `App`s in `ns`.
pub fn apps(client: &Client, ns: &str) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("apps.example.com", "v1", "App");
    Api::namespaced_with(client.clone(), ns, &ApiResource::from_gvk_with_plural(&gvk, "apps"))
}

/// The dynamic API of `Tenant`s.
pub fn tenants(client: &Client) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("apps.example.com", "v1", "Tenant");
    Api::all_with(client.clone(), &ApiResource::from_gvk_with_plural(&gvk, "tenants"))
}

/// Create the App `name` in `ns` and return it as the server stored it.
pub async fn create_app(client: &Client, ns: &str, name: &str) -> DynamicObject {
    let app: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "apps.example.com/v1", "kind": "App",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"image": "nginx"},
    }))
    .expect("app");
    apps(client, ns).create(&PostParams::default(), &app).await.expect("app created")
}

/// Create the namespace `name`.
pub async fn create_namespace(client: &Client, name: &str) {
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": name}})).expect("namespace");
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await
        .expect("namespace created");
}

/// A desired ConfigMap (namespace left to the applier).
pub fn config_map(name: &str, value: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"value": value}})
}

/// The ConfigMap `ns/name`, if it exists.
pub async fn get_config_map(client: &Client, ns: &str, name: &str) -> Option<ConfigMap> {
    Api::<ConfigMap>::namespaced(client.clone(), ns).get_opt(name).await.expect("get configmap")
}

pub use ctop_test_support::eventually;

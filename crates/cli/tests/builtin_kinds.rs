//! One table of built-in kinds: the SDK's handles (`ctop_runtime::sdk::builtin_kinds`, generated
//! from k8s-openapi with the kinds' plurals and scopes) are the source, and the two other
//! places that know built-in kinds must agree with it on every kind the SDK offers:
//!
//! - ctop-manifests' RBAC (its table in `kinds.rs`): a controller that reads the kind gets a
//!   rule on the SDK's plural, in a Role when the kind is namespaced and in the ClusterRole
//!   when not, and no note that the kind was guessed;
//! - kubesim's registry: its discovery serves the kind under the SDK's plural and scope.

use std::collections::BTreeSet;

use ctop_core::OperatorSpec;
use ctop_manifests::{Options, WatchScope, permissions};
use ctop_runtime::sdk::{BuiltinKind, builtin_kinds};
use serde_json::json;

fn group(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or("", |(g, _)| g)
}

/// `(group, resource)` of every rule in `rules`.
fn resources(rules: &[ctop_core::PolicyRule]) -> BTreeSet<(String, String)> {
    rules
        .iter()
        .flat_map(|r| {
            r.api_groups.iter().flat_map(|g| r.resources.iter().map(|res| (g.clone(), res.clone())))
        })
        .collect()
}

#[test]
fn manifests_rbac_knows_every_sdk_kind_by_its_plural_and_scope() {
    let kinds = builtin_kinds();
    assert!(kinds.len() >= 29, "{kinds:?}");
    let reads: Vec<_> = kinds.iter().map(|k| json!({"apiVersion": k.api_version, "kind": k.kind})).collect();
    let spec: OperatorSpec = serde_json::from_value(json!({
        "controllers": [{"index": 0, "name": "reader", "for": {"apiVersion": "v1", "kind": "ConfigMap"}, "reads": reads}],
    }))
    .expect("an operator spec");
    let options = Options { watch: WatchScope::Namespace("team".into()), ..Options::new("op") };
    let p = permissions(&spec, &options);
    assert!(p.notes.is_empty(), "ctop-manifests guessed some SDK kinds: {:#?}", p.notes);
    let cluster = resources(&p.cluster);
    let namespaced = resources(p.namespaces.get("team").map_or(&[][..], Vec::as_slice));
    let mut wrong = Vec::new();
    for BuiltinKind { api_version, kind, plural, namespaced: is_namespaced } in &kinds {
        let key = (group(api_version).to_owned(), plural.clone());
        let (right, other) = if *is_namespaced { (&namespaced, &cluster) } else { (&cluster, &namespaced) };
        if !right.contains(&key) || other.contains(&key) {
            wrong.push(format!("{api_version} {kind}: {plural}, namespaced {is_namespaced}"));
        }
    }
    assert!(
        wrong.is_empty(),
        "ctop-manifests' table of built-in kinds (crates/manifests/src/kinds.rs) disagrees with the SDK on: {wrong:#?}"
    );
}

#[tokio::test]
async fn kubesim_serves_every_sdk_kind_by_its_plural_and_scope() {
    let sim = ctop_kubesim::KubeSim::start(ctop_kubesim::Config { tls: false, ..Default::default() })
        .await
        .expect("kubesim starts");
    let kubeconfig = kube::config::Kubeconfig::from_yaml(&sim.kubeconfig()).expect("kubeconfig parses");
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .expect("kubeconfig loads");
    let client = kube::Client::try_from(config).expect("client");
    let mut wrong = Vec::new();
    for k in builtin_kinds() {
        let list = if k.api_version.contains('/') {
            client.list_api_group_resources(&k.api_version).await
        } else {
            client.list_core_api_resources(&k.api_version).await
        };
        let served = list
            .ok()
            .and_then(|l| l.resources.into_iter().find(|r| r.kind == k.kind && !r.name.contains('/')));
        match served {
            Some(r) if r.name == k.plural && r.namespaced == k.namespaced => {}
            Some(r) => wrong.push(format!(
                "{} {}: the SDK has {} (namespaced {}), kubesim {} (namespaced {})",
                k.api_version, k.kind, k.plural, k.namespaced, r.name, r.namespaced
            )),
            None => wrong.push(format!("{} {}: kubesim does not serve it", k.api_version, k.kind)),
        }
    }
    assert!(
        wrong.is_empty(),
        "kubesim's registry (crates/kubesim/src/registry.rs) disagrees with the SDK on: {wrong:#?}"
    );
}

//! One table of built-in kinds: the SDK's handles (`ctop_runtime::sdk::builtin_kinds`, generated
//! from k8s-openapi with the kinds' plurals and scopes) are the source, and the two other
//! places that know built-in kinds must agree with it, and with each other:
//!
//! - ctop-manifests' RBAC (its table in `kinds.rs`): a controller that reads a kind gets a rule
//!   on its plural, in a Role when the kind is namespaced and in the ClusterRole when not, and
//!   no note that the kind was guessed;
//! - kubesim's registry (`registry.rs`): its discovery serves the kind under that plural and
//!   scope.
//!
//! Every kind the SDK offers must be known to both with the SDK's plural and scope; every kind
//! kubesim serves that ctop-manifests knows must have the same plural and scope in both.

use std::collections::BTreeSet;

use ctop_core::OperatorSpec;
use ctop_manifests::{Options, WatchScope, permissions};
use ctop_runtime::sdk::builtin_kinds;
use serde_json::json;

/// `(plural, namespaced)` of a kind.
type Place = (String, bool);

fn group(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or("", |(g, _)| g)
}

/// A rule's `(group, resource, namespaced, verbs)`.
type Rule = (String, String, bool, String);

/// Every rule the RBAC of a controller (of the script's own `Thing`, in namespace `team`) that
/// reads `reads` has, and the notes.
fn rbac(reads: &[(&str, &str)]) -> (BTreeSet<Rule>, Vec<String>) {
    let reads: Vec<_> = reads.iter().map(|(av, k)| json!({"apiVersion": av, "kind": k})).collect();
    let spec: OperatorSpec = serde_json::from_value(json!({
        "resources": [{
            "apiVersion": "example.com/v1", "group": "example.com", "version": "v1", "kind": "Thing",
            "plural": "things", "singular": "thing", "schema": {"type": "object"},
        }],
        "controllers": [{"index": 0, "name": "reader", "for": {"apiVersion": "example.com/v1", "kind": "Thing"}, "reads": reads}],
    }))
    .expect("an operator spec");
    let options = Options { watch: WatchScope::Namespace("team".into()), ..Options::new("op") };
    let p = permissions(&spec, &options);
    let team = p.namespaces.get("team").map_or(&[][..], Vec::as_slice);
    let rules = p.cluster.iter().map(|r| (r, false)).chain(team.iter().map(|r| (r, true)));
    let resources = rules
        .flat_map(|(r, namespaced)| {
            let verbs = r.verbs.join(",");
            r.api_groups.iter().flat_map(move |g| {
                let verbs = verbs.clone();
                r.resources.iter().map(move |res| (g.clone(), res.clone(), namespaced, verbs.clone()))
            })
        })
        .collect();
    (resources, p.notes)
}

/// Where ctop-manifests' RBAC puts the kind, or `None` when it does not know it (guesses).
fn manifests_place(api_version: &str, kind: &str) -> Option<Place> {
    let (base, _) = rbac(&[]);
    let (with, notes) = rbac(&[(api_version, kind)]);
    if !notes.is_empty() {
        return None;
    }
    // The rule reading it: new, or one the controller had already with more verbs now (it
    // writes events).
    let added: BTreeSet<Place> = with
        .difference(&base)
        .filter(|(g, _, _, _)| g == group(api_version))
        .map(|(_, plural, namespaced, _)| (plural.clone(), *namespaced))
        .collect();
    assert_eq!(added.len(), 1, "{api_version} {kind}: not one rule reads it but {added:?}");
    added.into_iter().next()
}

/// Every kind kubesim serves: `(apiVersion, kind, plural, namespaced)`.
async fn kubesim_kinds() -> Vec<(String, String, String, bool)> {
    let sim = ctop_kubesim::KubeSim::start(ctop_kubesim::Config { tls: false, ..Default::default() })
        .await
        .expect("kubesim starts");
    let kubeconfig = kube::config::Kubeconfig::from_yaml(&sim.kubeconfig()).expect("kubeconfig parses");
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .expect("kubeconfig loads");
    let client = kube::Client::try_from(config).expect("client");
    let mut versions: Vec<String> = client.list_core_api_versions().await.expect("/api").versions;
    for g in client.list_api_groups().await.expect("/apis").groups {
        versions.extend(g.versions.into_iter().map(|v| v.group_version));
    }
    let mut kinds = Vec::new();
    for av in versions {
        let list = if av.contains('/') {
            client.list_api_group_resources(&av).await
        } else {
            client.list_core_api_resources(&av).await
        };
        for r in list.expect("discovery").resources.into_iter().filter(|r| !r.name.contains('/')) {
            kinds.push((av.clone(), r.kind, r.name, r.namespaced));
        }
    }
    kinds
}

#[test]
fn manifests_rbac_knows_every_sdk_kind_by_its_plural_and_scope() {
    let kinds = builtin_kinds();
    assert!(kinds.len() >= 29, "{kinds:?}");
    let mut wrong = Vec::new();
    for k in &kinds {
        let sdk = (k.plural.clone(), k.namespaced);
        match manifests_place(&k.api_version, &k.kind) {
            Some(place) if place == sdk => {}
            Some(place) => wrong
                .push(format!("{} {}: the SDK has {sdk:?}, ctop-manifests {place:?}", k.api_version, k.kind)),
            None => {
                wrong.push(format!("{} {}: ctop-manifests does not know it (guesses)", k.api_version, k.kind))
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "ctop-manifests' table of built-in kinds (crates/manifests/src/kinds.rs) disagrees with the SDK on: {wrong:#?}"
    );
}

#[tokio::test]
async fn kubesim_serves_every_sdk_kind_and_agrees_with_manifests() {
    let served = kubesim_kinds().await;
    let find = |av: &str, kind: &str| served.iter().find(|(a, k, _, _)| a == av && k == kind);
    let mut wrong = Vec::new();
    for k in builtin_kinds() {
        match find(&k.api_version, &k.kind) {
            Some((_, _, plural, namespaced)) if *plural == k.plural && *namespaced == k.namespaced => {}
            Some((_, _, plural, namespaced)) => wrong.push(format!(
                "{} {}: the SDK has ({}, {}), kubesim ({plural}, {namespaced})",
                k.api_version, k.kind, k.plural, k.namespaced
            )),
            None => wrong.push(format!("{} {}: kubesim does not serve it", k.api_version, k.kind)),
        }
    }
    assert!(
        wrong.is_empty(),
        "kubesim's registry (crates/kubesim/src/kinds/registry.rs) disagrees with the SDK on: {wrong:#?}"
    );

    let mut known = 0;
    for (av, kind, plural, namespaced) in &served {
        let Some(place) = manifests_place(av, kind) else { continue };
        known += 1;
        if place != (plural.clone(), *namespaced) {
            wrong
                .push(format!("{av} {kind}: kubesim has ({plural}, {namespaced}), ctop-manifests {place:?}"));
        }
    }
    assert!(known >= 29, "ctop-manifests knows only {known} of kubesim's kinds");
    assert!(
        wrong.is_empty(),
        "ctop-manifests (crates/manifests/src/kinds.rs) and kubesim disagree on: {wrong:#?}"
    );
}

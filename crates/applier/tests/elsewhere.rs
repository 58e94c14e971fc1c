//! Children in other namespaces than their namespaced owner, against kubesim: no owner
//! reference (none can cross namespaces), tied by the `part-of` label and the
//! `ctop.dev/owner` annotation, recorded in the owner's `additional-namespaces`, and pruned
//! like any other child.

mod common;

use common::{config_map, create_app, create_namespace, get_config_map, start};
use ctop_applier::applyset::{
    ADDITIONAL_NAMESPACES_ANNOTATION, OWNER_ANNOTATION, PART_OF_LABEL, applyset_id,
};
use ctop_applier::{Applier, ApplierConfig, ApplyError, ChildError};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::ResourceExt as _;
use kube::api::{Api, PostParams};
use serde_json::{Value, json};

fn in_namespace(name: &str, value: &str, ns: &str) -> Value {
    let mut cm = config_map(name, value);
    cm["metadata"]["namespace"] = json!(ns);
    cm
}

#[tokio::test(flavor = "multi_thread")]
async fn a_child_in_another_namespace_is_tied_by_label_recorded_and_pruned() {
    let (_sim, client) = start().await;
    create_namespace(&client, "team-a").await;
    create_namespace(&client, "team-b").await;
    let owner = create_app(&client, "default", "web").await;
    let applier = Applier::new(client.clone(), ApplierConfig::new("test-operator"));
    let set = applyset_id("web", "default", "App", "apps.example.com");

    let report = applier
        .apply(
            &owner,
            [
                config_map("here", "1"),
                in_namespace("copy", "1", "team-a"),
                in_namespace("copy", "1", "team-b"),
            ],
        )
        .await
        .expect("applied");
    assert_eq!(report.applied.len(), 3);
    let copy = get_config_map(&client, "team-a", "copy").await.expect("copied to team-a");
    assert!(copy.owner_references().is_empty(), "no owner reference crosses namespaces");
    assert_eq!(copy.labels().get(PART_OF_LABEL), Some(&set));
    assert_eq!(
        copy.annotations().get(OWNER_ANNOTATION).map(String::as_str),
        Some("App.apps.example.com default/web")
    );
    let here = get_config_map(&client, "default", "here").await.expect("here");
    assert_eq!(here.owner_references()[0].uid, owner.uid().expect("uid"), "the same namespace: a reference");
    let live_owner = common::apps(&client, "default").get("web").await.expect("owner");
    assert_eq!(
        live_owner.annotations().get(ADDITIONAL_NAMESPACES_ANNOTATION).map(String::as_str),
        Some("team-a,team-b")
    );

    // Unchanged: nothing is written.
    let report = applier
        .apply(
            &owner,
            [
                config_map("here", "1"),
                in_namespace("copy", "1", "team-a"),
                in_namespace("copy", "1", "team-b"),
            ],
        )
        .await
        .expect("again");
    assert_eq!((report.applied.len(), report.skipped.len()), (0, 3));

    // Left out: pruned, and the record narrowed.
    let report = applier
        .apply(&owner, [config_map("here", "1"), in_namespace("copy", "1", "team-a")])
        .await
        .expect("pruned");
    let pruned: Vec<String> = report.pruned.iter().map(ToString::to_string).collect();
    assert_eq!(pruned, ["ConfigMap team-b/copy"]);
    assert!(get_config_map(&client, "team-b", "copy").await.is_none());
    let live_owner = common::apps(&client, "default").get("web").await.expect("owner");
    assert_eq!(
        live_owner.annotations().get(ADDITIONAL_NAMESPACES_ANNOTATION).map(String::as_str),
        Some("team-a")
    );

    // An empty set prunes the rest, here and elsewhere; the owner is a parent no more.
    let report = applier.apply(&owner, Vec::<Value>::new()).await.expect("emptied");
    assert_eq!(report.pruned.len(), 2);
    assert!(get_config_map(&client, "team-a", "copy").await.is_none());
    let live_owner = common::apps(&client, "default").get("web").await.expect("owner");
    assert!(live_owner.annotations().get(ADDITIONAL_NAMESPACES_ANNOTATION).is_none());
}

#[tokio::test(flavor = "multi_thread")]
async fn an_object_elsewhere_that_names_another_owner_is_neither_adopted_nor_pruned() {
    let (_sim, client) = start().await;
    create_namespace(&client, "team-a").await;
    let owner = create_app(&client, "default", "web").await;
    let applier = Applier::new(client.clone(), ApplierConfig::new("test-operator"));
    // Made by hand in team-a, under the name a child would have.
    let cm: ConfigMap = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "copy", "namespace": "team-a"}, "data": {"mine": "yes"},
    }))
    .expect("configmap");
    Api::<ConfigMap>::namespaced(client.clone(), "team-a")
        .create(&PostParams::default(), &cm)
        .await
        .expect("made");
    let err = applier.apply(&owner, [in_namespace("copy", "1", "team-a")]).await.expect_err("refused");
    let ApplyError::Apply { failures, .. } = &err else { panic!("an apply failure: {err}") };
    assert!(matches!(failures[0].error, ChildError::NotOurs { controlled: false, .. }), "{err}");

    // A copy of a child's labels on an object that does not name the owner is not pruned.
    let set = applyset_id("web", "default", "App", "apps.example.com");
    let lookalike: ConfigMap = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "lookalike", "namespace": "team-a", "labels": {PART_OF_LABEL: set}},
    }))
    .expect("configmap");
    Api::<ConfigMap>::namespaced(client.clone(), "team-a")
        .create(&PostParams::default(), &lookalike)
        .await
        .expect("made");
    applier.apply(&owner, [in_namespace("other", "1", "team-a")]).await.expect("applied");
    applier.apply(&owner, Vec::<Value>::new()).await.expect("emptied");
    assert!(get_config_map(&client, "team-a", "lookalike").await.is_some(), "not tied to the owner: kept");
    assert!(get_config_map(&client, "team-a", "copy").await.is_some(), "the hand-made object stays");
    assert!(get_config_map(&client, "team-a", "other").await.is_none(), "the child is pruned");
}

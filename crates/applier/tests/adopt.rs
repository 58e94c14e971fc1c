//! Ownership before adoption, against kubesim: an object the owner did not make is never
//! taken over unless the desired child says so, and then never from another controller.

mod common;

use common::{config_map, create_app, get_config_map, start};
use ctop_applier::applyset::{PART_OF_LABEL, applyset_id};
use ctop_applier::{Applier, ApplierConfig, ApplyError, ChildError, Desired};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::ResourceExt as _;
use kube::api::{Api, PostParams};
use serde_json::json;

/// Create the ConfigMap `name` in `default` by hand, with `metadata` merged in.
async fn by_hand(client: &kube::Client, name: &str, metadata: serde_json::Value) -> ConfigMap {
    let mut cm =
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"mine": "yes"}});
    if let (Some(m), Some(extra)) = (cm["metadata"].as_object_mut(), metadata.as_object()) {
        m.extend(extra.clone());
    }
    let cm: ConfigMap = serde_json::from_value(cm).expect("configmap");
    Api::<ConfigMap>::namespaced(client.clone(), "default")
        .create(&PostParams::default(), &cm)
        .await
        .expect("created")
}

#[tokio::test(flavor = "multi_thread")]
async fn an_object_made_by_hand_is_left_alone_and_the_rest_is_applied() {
    let (_sim, client) = start().await;
    let owner = create_app(&client, "default", "web").await;
    let before = by_hand(&client, "handmade", json!({})).await;
    let applier = Applier::new(client.clone(), ApplierConfig::new("test-operator"));
    let err = applier
        .apply(&owner, [config_map("handmade", "1"), config_map("fresh", "1")])
        .await
        .expect_err("the hand-made object is not taken over");
    let ApplyError::Apply { failures, report, .. } = &err else { panic!("an apply failure: {err}") };
    assert_eq!(failures.len(), 1);
    assert!(matches!(failures[0].error, ChildError::NotOurs { controlled: false, .. }));
    assert_eq!(
        failures[0].to_string(),
        "ConfigMap default/handmade: it exists and is not a child of App.apps.example.com default/web (it has no owner \
         reference and no ApplySet label: something else made it); it is left as it is, not adopted"
    );
    assert_eq!(report.applied.len(), 1, "the other child is applied");
    let after = get_config_map(&client, "default", "handmade").await.expect("still there");
    assert_eq!(after.resource_version(), before.resource_version(), "not written at all");
    assert!(after.owner_references().is_empty() && after.labels().get(PART_OF_LABEL).is_none());

    // Asked to, it is taken over.
    let report = applier
        .apply(
            &owner,
            [Desired { object: config_map("handmade", "1"), adopt: true }, config_map("fresh", "1").into()],
        )
        .await
        .expect("adopted");
    assert_eq!(report.adopted.len(), 1);
    let adopted = get_config_map(&client, "default", "handmade").await.expect("there");
    assert_eq!(adopted.owner_references()[0].uid, owner.uid().expect("uid"));
    // From then on it is a child like any other: no adopt needed.
    applier.apply(&owner, [config_map("handmade", "2"), config_map("fresh", "1")]).await.expect("applied");
}

#[tokio::test(flavor = "multi_thread")]
async fn another_controllers_object_is_never_adopted() {
    let (_sim, client) = start().await;
    let owner = create_app(&client, "default", "web").await;
    let other = create_app(&client, "default", "other").await;
    by_hand(
        &client,
        "theirs",
        json!({"ownerReferences": [{
            "apiVersion": "apps.example.com/v1", "kind": "App", "name": "other",
            "uid": other.uid().expect("uid"), "controller": true,
        }]}),
    )
    .await;
    let applier = Applier::new(client.clone(), ApplierConfig::new("test-operator"));
    let err = applier
        .apply(&owner, [Desired { object: config_map("theirs", "1"), adopt: true }])
        .await
        .expect_err("refused");
    let ApplyError::Apply { failures, .. } = &err else { panic!("an apply failure: {err}") };
    assert!(
        failures[0]
            .to_string()
            .contains("(it is controlled by App other); an object another owner controls is never adopted"),
        "{}",
        failures[0]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_member_of_the_owners_applyset_is_its_child() {
    // Left by an orphaning deletion of an owner of the same name: kubectl's ApplySets take
    // their members back.
    let (_sim, client) = start().await;
    let owner = create_app(&client, "default", "web").await;
    let id = applyset_id("web", "default", "App", "apps.example.com");
    by_hand(&client, "orphan", json!({"labels": {PART_OF_LABEL: id}})).await;
    let applier = Applier::new(client.clone(), ApplierConfig::new("test-operator"));
    let report = applier.apply(&owner, [config_map("orphan", "1")]).await.expect("applied");
    assert_eq!(report.applied.len(), 1);
    assert!(report.adopted.is_empty(), "it was a member already");
}

//! Tests of `object.rs`: the cached object's text, its fields and its health.

use super::*;
use kube::api::{DynamicObject, GroupVersionKind};
use serde_json::{Value, json};

fn ar() -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("apps", "v1", "Deployment"), "deployments")
}

#[test]
fn the_health_is_worked_out_once_and_is_that_of_the_text() {
    let text = json!({
        "metadata": {"name": "web", "namespace": "prod", "generation": 2},
        "spec": {"replicas": 2},
        "status": {"observedGeneration": 2, "replicas": 2, "updatedReplicas": 2, "readyReplicas": 1, "availableReplicas": 1}
    })
    .to_string();
    let o: Object = serde_json::from_str(&text).expect("object");
    let health = o.health(&ar()).expect("a Deployment's health");
    assert_eq!(Some(health), ctop_health::health_of_json(&o.to_json(&ar())).ok().as_ref());
    assert!(!health.is_current(), "{health:?}");
    assert!(std::ptr::eq(health, o.health(&ar()).expect("again")), "asked again, not worked out again");
    // A copy keeps the answer; equality ignores whether it was worked out.
    assert_eq!(o.clone().health(&ar()), Some(health));
    let fresh: Object = serde_json::from_str(&text).expect("object");
    assert_eq!(fresh, o);
}

#[test]
fn the_text_round_trips_without_managed_fields() {
    let sent = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "prod", "resourceVersion": "7", "labels": {"app": "web"},
                     "managedFields": [{"manager": "kubectl", "operation": "Apply"}]},
        "spec": {"replicas": 2, "template": {"spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}}},
        "status": {"readyReplicas": 1, "ratio": 0.5, "text": "a \"quoted\" é"}
    });
    let o: Object = serde_json::from_str(&sent.to_string()).expect("object");
    assert_eq!((o.name(), o.namespace(), o.resource_version()), ("web", Some("prod"), Some("7")));
    assert_eq!(o.labels().get("app"), Some("web"));
    let back: Value = serde_json::from_str(&o.to_json(&ar())).expect("json");
    let mut want = sent.clone();
    want["metadata"].as_object_mut().map(|m| m.remove("managedFields"));
    assert_eq!(back, want);
    // Through `Serialize` (what the applier and the status writer use), typed.
    let typed = Object {
        types: Some(Box::new(TypeMeta { api_version: "apps/v1".into(), kind: "Deployment".into() })),
        ..o.clone()
    };
    assert_eq!(serde_json::to_value(&typed).expect("value"), want);
    let dynamic: DynamicObject = serde_json::from_str(&typed.to_json(&ar())).expect("dynamic");
    assert_eq!(dynamic.data["spec"]["replicas"], 2);
}

#[test]
fn an_object_with_metadata_only_and_list_items_without_a_kind() {
    let o: Object = serde_json::from_str(r#"{"metadata":{"name":"x"}}"#).expect("object");
    assert_eq!(o.rest_len(), 0);
    let back: Value = serde_json::from_str(&o.to_json_as("v1", "ConfigMap")).expect("json");
    assert_eq!(back, json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}));
    // Read from a `Value` (serde_json writes the text of each field).
    let o: Object =
        serde_json::from_value(json!({"metadata": {"name": "x"}, "data": {"k": "v"}})).expect("object");
    let back: Value = serde_json::from_str(&o.to_json_as("v1", "ConfigMap")).expect("json");
    assert_eq!(back["data"], json!({"k": "v"}));
}

#[test]
fn indexed_metadata_is_read_once_and_written_back() {
    let sent = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {
            "name": "web", "namespace": "prod", "uid": "u-1", "resourceVersion": "12", "generation": 3,
            "creationTimestamp": "2026-11-22T04:29:26Z", "deletionTimestamp": "2026-11-22T05:00:00Z",
            "labels": {"b": "2", "a": "1"}, "annotations": {"note": "x \"y\""},
            "ownerReferences": [{"apiVersion": "apps.example.com/v1", "kind": "WebApp", "name": "web",
                                 "uid": "o-1", "controller": true, "blockOwnerDeletion": true}],
            "finalizers": ["example.com/cleanup"], "generateName": "web-", "futureField": {"k": [1, 2]}
        },
        "spec": {"replicas": 2}
    });
    let o: Object = serde_json::from_str(&sent.to_string()).expect("object");
    assert_eq!(o.generation(), Some(3));
    assert_eq!(o.labels().iter().collect::<Vec<_>>(), [("a", "1"), ("b", "2")]);
    assert_eq!(o.annotations().get("note"), Some("x \"y\""));
    assert_eq!(o.owner_references()[0].uid, "o-1");
    assert_eq!(o.finalizers(), ["example.com/cleanup"]);
    assert!(o.is_deleting());
    let back: Value = serde_json::from_str(&o.to_json(&ar())).expect("json");
    assert_eq!(back, sent);
    // Nulls read as absent, and are not written back.
    let o: Object = serde_json::from_value(
        json!({"metadata": {"name": "x", "labels": null, "finalizers": null, "deletionTimestamp": null}}),
    )
    .expect("object");
    assert!(!o.is_deleting() && o.labels().is_empty() && o.finalizers().is_empty());
    let back: Value = serde_json::from_str(&o.to_json_as("v1", "ConfigMap")).expect("json");
    assert_eq!(back["metadata"], json!({"name": "x", "deletionTimestamp": null}));
}

//! The status writer against kubesim: merge patches through the subresource, sent only when
//! they change something, with conditions merged by type, their `lastTransitionTime` kept
//! while their status holds, and `observedGeneration` moved only when asked.

mod common;

use common::{apps, create_app, start};
use ctop_applier::{StatusError, StatusPatch, StatusWrite, StatusWriter};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::ResourceExt;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

const OLD: &str = "2020-01-01T00:00:00Z";

/// A patch of these status fields.
fn fields(v: Value) -> StatusPatch {
    match v {
        Value::Object(m) => StatusPatch::from_fields(m),
        other => panic!("not an object: {other}"),
    }
}

fn written(w: StatusWrite) -> Option<String> {
    match w {
        StatusWrite::Written { resource_version } => resource_version,
        StatusWrite::Unchanged => panic!("expected a write"),
    }
}

/// The condition of type `kind` in `app`'s status.
fn condition<'a>(app: &'a DynamicObject, kind: &str) -> &'a Value {
    app.data["status"]["conditions"]
        .as_array()
        .and_then(|list| list.iter().find(|c| c["type"] == kind))
        .unwrap_or_else(|| panic!("no condition {kind} in {}", app.data["status"]))
}

#[tokio::test(flavor = "multi_thread")]
async fn fields_are_merged_and_null_deletes() {
    let (_sim, client) = start().await;
    let api = apps(&client, "default");
    let app = create_app(&client, "default", "web").await;
    let writer = StatusWriter::new(client.clone(), "test-operator");

    let rv = written(writer.write(&app, fields(json!({"phase": "Pending"}))).await.expect("{a}"));
    let app = api.get("web").await.expect("app");
    assert_eq!(rv, app.resource_version(), "Written carries the resourceVersion a GET sees");
    assert_eq!(app.metadata.generation, Some(1), "a status write does not bump the generation");

    // {b} after {a}: both stay.
    let patch = fields(json!({"message": "pulling", "details": {"image": "nginx", "tries": 1}}));
    let rv = written(writer.write(&app, patch).await.expect("{b}"));
    let app = api.get("web").await.expect("app");
    assert_eq!(rv, app.resource_version());
    assert_eq!(
        app.data["status"],
        json!({"phase": "Pending", "message": "pulling", "details": {"image": "nginx", "tries": 1}})
    );

    // Objects merge recursively; null deletes.
    let patch = fields(json!({"phase": null, "details": {"tries": 2, "image": null}}));
    written(writer.write(&app, patch).await.expect("{a: null}"));
    let app = api.get("web").await.expect("app");
    assert_eq!(app.data["status"], json!({"message": "pulling", "details": {"tries": 2}}));

    // Nothing to change: nothing sent, from this writer or a fresh one (a restarted operator).
    let same = || fields(json!({"message": "pulling", "phase": null, "details": {"tries": 2}}));
    assert_eq!(writer.write(&app, same()).await.expect("same"), StatusWrite::Unchanged);
    let fresh = StatusWriter::new(client.clone(), "test-operator");
    assert_eq!(fresh.write(&app, same()).await.expect("fresh"), StatusWrite::Unchanged);
    assert_eq!(fresh.write(&app, StatusPatch::default()).await.expect("empty"), StatusWrite::Unchanged);
    assert_eq!(api.get("web").await.expect("app").resource_version(), app.resource_version(), "no request");
}

#[tokio::test(flavor = "multi_thread")]
async fn conditions_merge_by_type_and_keep_their_transition_time() {
    let (_sim, client) = start().await;
    let api = apps(&client, "default");
    let app = create_app(&client, "default", "web").await;
    let writer = StatusWriter::new(client.clone(), "test-operator");

    let first = StatusPatch::default()
        .with_condition(
            json!({"type": "Ready", "status": "False", "reason": "Starting", "lastTransitionTime": OLD}),
        )
        .with_condition(json!({"type": "Synced", "status": "True", "reason": "Applied"}));
    written(writer.write(&app, first).await.expect("first"));
    let app = api.get("web").await.expect("app");
    assert_eq!(condition(&app, "Ready")["lastTransitionTime"], OLD);
    let synced_since = condition(&app, "Synced")["lastTransitionTime"].clone();
    assert!(
        synced_since.as_str().is_some_and(|t| t.ends_with('Z') && t.len() == OLD.len()),
        "{synced_since}"
    );

    // Another reason, same status: written, transition time kept; Synced, not named, stays.
    let reworded = StatusPatch::default()
        .with_condition(json!({"type": "Ready", "status": "False", "reason": "Pulling"}));
    written(writer.write(&app, reworded).await.expect("reworded"));
    let app = api.get("web").await.expect("app");
    assert_eq!(condition(&app, "Ready")["reason"], "Pulling");
    assert_eq!(condition(&app, "Ready")["lastTransitionTime"], OLD);
    assert_eq!(condition(&app, "Synced")["lastTransitionTime"], synced_since);
    let types: Vec<&Value> =
        app.data["status"]["conditions"].as_array().expect("list").iter().map(|c| &c["type"]).collect();
    assert_eq!(types, ["Ready", "Synced"], "live order kept");

    // The status flips: a new transition time. A new type is appended.
    let flip = StatusPatch::default()
        .with_condition(json!({"type": "Ready", "status": "True", "reason": "Up"}))
        .with_condition(json!({"type": "Degraded", "status": "False"}));
    written(writer.write(&app, flip).await.expect("flip"));
    let app = api.get("web").await.expect("app");
    let since = condition(&app, "Ready")["lastTransitionTime"].as_str().expect("time").to_owned();
    assert_ne!(since, OLD);
    let types: Vec<&Value> =
        app.data["status"]["conditions"].as_array().expect("list").iter().map(|c| &c["type"]).collect();
    assert_eq!(types, ["Ready", "Synced", "Degraded"]);

    // The same conditions again, without times: nothing to send.
    let again = StatusPatch::default()
        .with_condition(json!({"type": "Ready", "status": "True", "reason": "Up"}))
        .with_condition(json!({"type": "Synced", "status": "True", "reason": "Applied"}));
    assert_eq!(writer.write(&app, again).await.expect("again"), StatusWrite::Unchanged);
}

#[tokio::test(flavor = "multi_thread")]
async fn observed_generation_moves_only_when_asked() {
    let (_sim, client) = start().await;
    let api = apps(&client, "default");
    let app = create_app(&client, "default", "web").await;
    let writer = StatusWriter::new(client.clone(), "test-operator");

    let ready = || StatusPatch::default().with_condition(json!({"type": "Ready", "status": "True"}));
    written(writer.write(&app, ready().with_observed_generation(1)).await.expect("generation 1"));
    let app = api.get("web").await.expect("app");
    assert_eq!(app.data["status"]["observedGeneration"], 1);
    assert_eq!(condition(&app, "Ready")["observedGeneration"], 1, "conditions get it too");

    let spec = json!({"spec": {"image": "nginx:2"}});
    let app = api.patch("web", &PatchParams::default(), &Patch::Merge(&spec)).await.expect("spec change");
    assert_eq!(app.metadata.generation, Some(2));

    // A reconcile that failed part-way: status written, observedGeneration left at 1.
    let failed = StatusPatch::default()
        .with_field("message", json!("apply failed"))
        .with_condition(json!({"type": "Ready", "status": "False", "reason": "ApplyFailed"}));
    written(writer.write(&app, failed).await.expect("failed reconcile"));
    let app = api.get("web").await.expect("app");
    assert_eq!(app.data["status"]["observedGeneration"], 1);
    assert!(condition(&app, "Ready").get("observedGeneration").is_none(), "{}", app.data["status"]);

    // The next one succeeds: observedGeneration moves.
    let done = ready().with_field("message", Value::Null).with_observed_generation(2);
    written(writer.write(&app, done).await.expect("generation 2"));
    let app = api.get("web").await.expect("app");
    assert_eq!(app.data["status"]["observedGeneration"], 2);
    assert_eq!(condition(&app, "Ready")["observedGeneration"], 2);
    assert!(app.data["status"].get("message").is_none());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stale_object_does_not_cause_a_resend_or_lose_a_condition() {
    let (_sim, client) = start().await;
    let api = apps(&client, "default");
    let stale = create_app(&client, "default", "web").await;
    let writer = StatusWriter::new(client.clone(), "test-operator");

    let a = || StatusPatch::default().with_condition(json!({"type": "A", "status": "True"}));
    let rv = written(writer.write(&stale, a()).await.expect("A"));
    // The cache has not seen that write yet: the same patch is not sent again...
    assert_eq!(writer.write(&stale, a()).await.expect("A again"), StatusWrite::Unchanged);
    assert_eq!(api.get("web").await.expect("app").resource_version(), rv, "no request");
    // ...and a new condition is merged into what the server answered, not into the stale list.
    let b = StatusPatch::default().with_condition(json!({"type": "B", "status": "True"}));
    written(writer.write(&stale, b).await.expect("B"));
    assert_eq!(writer.write(&stale, a()).await.expect("A once more"), StatusWrite::Unchanged);
    let app = api.get("web").await.expect("app");
    let types: Vec<&Value> =
        app.data["status"]["conditions"].as_array().expect("list").iter().map(|c| &c["type"]).collect();
    assert_eq!(types, ["A", "B"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_field_the_schema_drops_is_not_sent_on_every_pass() {
    let (_sim, client) = start().await;
    let api = apps(&client, "default");
    let app = create_app(&client, "default", "web").await;
    let writer = StatusWriter::new(client.clone(), "test-operator");

    let patch = || fields(json!({"phase": "Running", "notInSchema": 1}));
    written(writer.write(&app, patch()).await.expect("first"));
    let app = api.get("web").await.expect("app");
    assert_eq!(app.data["status"], json!({"phase": "Running"}), "pruned by the schema");
    assert_eq!(writer.write(&app, patch()).await.expect("again"), StatusWrite::Unchanged);
    assert_eq!(api.get("web").await.expect("app").resource_version(), app.resource_version());
}

#[tokio::test(flavor = "multi_thread")]
async fn status_errors_say_what_to_fix() {
    let (_sim, client) = start().await;
    let writer = StatusWriter::new(client.clone(), "test-operator");
    let cm: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "c"}})).expect("configmap");
    let cm = Api::<ConfigMap>::default_namespaced(client.clone())
        .create(&PostParams::default(), &cm)
        .await
        .expect("cm");
    let err = writer
        .write(&cm, fields(json!({"phase": "x"})))
        .await
        .expect_err("configmaps have no status subresource");
    assert!(matches!(err, StatusError::NoStatusSubresource { .. }), "{err:?}");

    let app = create_app(&client, "default", "web").await;
    let err = writer
        .write(&app, StatusPatch::default().with_condition(json!({"status": "True"})))
        .await
        .expect_err("a condition without a type");
    assert!(matches!(err, StatusError::Invalid { .. }), "{err:?}");
    assert!(err.to_string().contains("no type"), "{err}");

    // A status the schema refuses: the API server's answer, read like kubectl's.
    let err = writer
        .write(&app, fields(json!({"phase": {"not": "a string"}})))
        .await
        .expect_err("phase must be a string");
    let text = err.to_string();
    assert!(matches!(err, StatusError::Write { .. }), "{err:?}");
    assert!(text.contains("422 Invalid") && text.contains("status.phase"), "{text}");
    assert!(!text.contains("Status {"), "{text}");
}

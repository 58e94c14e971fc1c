//! The status writer against kubesim: writes through the subresource only when the status
//! changed, with `observedGeneration` and conditions' `lastTransitionTime` maintained.

mod common;

use common::{apps, create_app, start};
use ctop_applier::{StatusError, StatusWrite, StatusWriter};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;

const OLD: &str = "2020-01-01T00:00:00Z";

#[tokio::test(flavor = "multi_thread")]
async fn status_is_written_only_when_it_changes() {
    let (_sim, client) = start().await;
    let api = apps(&client, "default");
    let app = create_app(&client, "default", "web").await;
    let writer = StatusWriter::new(client.clone(), "test-operator");

    let first = json!({"phase": "Pending", "conditions": [
        {"type": "Ready", "status": "False", "reason": "Starting", "lastTransitionTime": OLD}]});
    assert_eq!(writer.write(&app, first).await.expect("first write"), StatusWrite::Written);
    let app = api.get("web").await.expect("app");
    assert_eq!(app.data["status"]["phase"], "Pending");
    assert_eq!(app.data["status"]["observedGeneration"], 1);
    assert_eq!(app.data["status"]["conditions"][0]["lastTransitionTime"], OLD);
    assert_eq!(app.metadata.generation, Some(1), "a status write does not bump the generation");

    // The same status (without a transition time this time): nothing is sent.
    let same = || json!({"phase": "Pending", "conditions": [{"type": "Ready", "status": "False", "reason": "Starting"}]});
    assert_eq!(writer.write(&app, same()).await.expect("same"), StatusWrite::Unchanged);
    assert_eq!(api.get("web").await.expect("app").resource_version(), app.resource_version(), "no write");
    // A fresh writer (a restarted operator) sees the same thing from the live object alone.
    let fresh = StatusWriter::new(client.clone(), "test-operator");
    assert_eq!(fresh.write(&app, same()).await.expect("fresh"), StatusWrite::Unchanged);

    // Another reason, same condition status: written, transition time kept.
    let reworded = json!({"phase": "Pending", "conditions": [{"type": "Ready", "status": "False", "reason": "Pulling"}]});
    assert_eq!(writer.write(&app, reworded).await.expect("reworded"), StatusWrite::Written);
    let app = api.get("web").await.expect("app");
    assert_eq!(app.data["status"]["conditions"][0]["reason"], "Pulling");
    assert_eq!(app.data["status"]["conditions"][0]["lastTransitionTime"], OLD);

    // The condition flips: a new transition time.
    let ready =
        json!({"phase": "Running", "conditions": [{"type": "Ready", "status": "True", "reason": "Up"}]});
    assert_eq!(writer.write(&app, ready.clone()).await.expect("flip"), StatusWrite::Written);
    let app = api.get("web").await.expect("app");
    let since = app.data["status"]["conditions"][0]["lastTransitionTime"].as_str().expect("time").to_owned();
    assert_ne!(since, OLD);
    assert!(since.ends_with('Z') && since.len() == OLD.len(), "{since}");

    // A spec change bumps the generation: the same status is written again for
    // observedGeneration.
    let spec = json!({"spec": {"image": "nginx:2"}});
    let app = api.patch("web", &PatchParams::default(), &Patch::Merge(&spec)).await.expect("spec change");
    assert_eq!(app.metadata.generation, Some(2));
    assert_eq!(writer.write(&app, ready.clone()).await.expect("new generation"), StatusWrite::Written);
    let app = api.get("web").await.expect("app");
    assert_eq!(app.data["status"]["observedGeneration"], 2);
    assert_eq!(app.data["status"]["conditions"][0]["lastTransitionTime"].as_str(), Some(since.as_str()));
    assert_eq!(writer.write(&app, ready).await.expect("steady"), StatusWrite::Unchanged);

    // Fields this writer stops setting are removed (server-side apply of the subresource).
    let fewer = json!({"conditions": [{"type": "Ready", "status": "True", "reason": "Up"}]});
    assert_eq!(writer.write(&app, fewer).await.expect("fewer"), StatusWrite::Written);
    let app = api.get("web").await.expect("app");
    assert!(app.data["status"].get("phase").is_none(), "{}", app.data["status"]);
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
    let err =
        writer.write(&cm, json!({"phase": "x"})).await.expect_err("configmaps have no status subresource");
    assert!(matches!(err, StatusError::NoStatusSubresource { .. }), "{err:?}");

    let app = create_app(&client, "default", "web").await;
    let err = writer.write(&app, json!(["not", "an", "object"])).await.expect_err("not an object");
    assert!(matches!(err, StatusError::Invalid { .. }), "{err:?}");
}

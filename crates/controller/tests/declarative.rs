//! A Δ-controller `Operator` (ctop-declarative's `OperatorHandlers`) on the controller,
//! against kubesim: the Operator object created at start, views as real objects, Updater
//! outputs created, updated and pruned (also of inputs deleted while the operator was
//! stopped), Patcher fields patched, removed when they go stale and on delete, and a
//! broken controller reported beside a working one; the Updater outputs deleted with the
//! Operator, and another Operator object left alone.

mod common;

use std::sync::Arc;

use common::{Launch, eventually, sim, start_handlers_on};
use ctop_declarative::{Operator, OperatorHandlers};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Client;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, PostParams};
use serde_json::{Value, json};

const OPERATOR: &str = include_str!("../../declarative/tests/fixtures/operator/demo.yaml");

fn handlers() -> Arc<OperatorHandlers> {
    let _ = tracing_subscriber::fmt()
        .with_test_writer()
        .with_env_filter("ctop_controller=debug,ctop_applier=info,ctop_declarative=debug")
        .try_init();
    let op = Operator::from_yaml(OPERATOR).expect("the Operator reads");
    Arc::new(OperatorHandlers::new(op).expect("handlers"))
}

fn api(client: &Client, group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
    let _ = client;
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural)
}

async fn put_cm(cms: &Api<ConfigMap>, name: &str, labels: Value, data: Value) {
    let cm: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}, "data": data}))
            .expect("cm");
    match cms.get_opt(name).await.expect("get") {
        Some(old) => {
            let mut cm = cm;
            cm.metadata.resource_version = old.metadata.resource_version;
            cms.replace(name, &PostParams::default(), &cm).await.expect("replace");
        }
        None => {
            cms.create(&PostParams::default(), &cm).await.expect("create");
        }
    }
}

async fn data_of(cms: &Api<ConfigMap>, name: &str) -> Option<Value> {
    let cm = cms.get_opt(name).await.ok().flatten()?;
    Some(json!(cm.data.unwrap_or_default()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_yaml_runs_on_the_controller() {
    let sim = sim().await;
    let op = start_handlers_on(&sim, handlers(), Launch { name: Some("demo"), ..Launch::default() }).await;
    let client = op.client.clone();
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let copies: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        "default",
        &api(&client, "demo.view.dcontroller.io", "v1alpha1", "Copy", "copies"),
    );
    let operators: Api<DynamicObject> =
        Api::all_with(client.clone(), &api(&client, "dcontroller.io", "v1alpha1", "Operator", "operators"));

    // onStart created the Operator; its status names the broken controller, the others run.
    let status = eventually(30, "the Operator's status", || async {
        let o = operators.get_opt("demo").await.ok().flatten()?;
        let c = o.data["status"]["controllers"].as_array()?.clone();
        (c.len() == 3).then_some(c)
    })
    .await;
    assert_eq!(status[0]["conditions"][0]["status"], "True", "{status:?}");
    assert_eq!(status[2]["conditions"][0]["reason"], "NotReady");
    let why = status[2]["lastErrors"][0].as_str().unwrap_or_default();
    assert!(why.starts_with("controller \"broken\": pipeline[0].@project.metadata.name"), "{why}");
    assert!(why.contains("@nosuchop"), "{why}");

    // Updater: created, updated, pruned; the view is an object of the API.
    put_cm(&cms, "a", json!({"copy": "yes"}), json!({"x": "1"})).await;
    eventually(30, "the Copy of a", || async {
        let c = copies.get_opt("a").await.ok().flatten()?;
        (c.data["spec"]["x"] == "1").then_some(())
    })
    .await;
    put_cm(&cms, "a", json!({"copy": "yes"}), json!({"x": "2"})).await;
    eventually(30, "the Copy of a updated", || async {
        let c = copies.get_opt("a").await.ok().flatten()?;
        (c.data["spec"]["x"] == "2").then_some(())
    })
    .await;
    put_cm(&cms, "b", json!({"copy": "yes"}), json!({"x": "3"})).await;
    eventually(30, "the Copy of b", || async { copies.get_opt("b").await.ok().flatten() }).await;
    cms.delete("b", &DeleteParams::default()).await.expect("delete b");
    eventually(30, "the Copy of b pruned", || async {
        copies.get_opt("b").await.ok().is_some_and(|c| c.is_none()).then_some(())
    })
    .await;

    // Patcher: merged into an existing object, stale fields removed, un-patched on delete.
    put_cm(&cms, "target", json!({}), json!({"own": "kept"})).await;
    put_cm(&cms, "src", json!({"stamp": "yes"}), json!({"p": "1", "q": "2"})).await;
    eventually(30, "target patched", || async {
        (data_of(&cms, "target").await? == json!({"own": "kept", "p": "1", "q": "2"})).then_some(())
    })
    .await;
    put_cm(&cms, "src", json!({"stamp": "yes"}), json!({"p": "1"})).await;
    eventually(30, "q removed from target", || async {
        (data_of(&cms, "target").await? == json!({"own": "kept", "p": "1"})).then_some(())
    })
    .await;
    cms.delete("src", &DeleteParams::default()).await.expect("delete src");
    eventually(30, "target un-patched", || async {
        let cm = cms.get_opt("target").await.ok().flatten()?;
        let annotated =
            cm.metadata.annotations.unwrap_or_default().keys().any(|k| k.starts_with("patch.ctop.dev/"));
        (json!(cm.data.unwrap_or_default()) == json!({"own": "kept"}) && !annotated).then_some(())
    })
    .await;

    // Stopped: the input of a Copy goes, another comes; a new process catches up.
    put_cm(&cms, "src", json!({"stamp": "yes"}), json!({"p": "9"})).await;
    eventually(30, "target patched again", || async {
        (data_of(&cms, "target").await?.get("p")? == "9").then_some(())
    })
    .await;
    op.stop().await;
    cms.delete("a", &DeleteParams::default()).await.expect("delete a");
    cms.delete("src", &DeleteParams::default()).await.expect("delete src");
    put_cm(&cms, "c", json!({"copy": "yes"}), json!({"x": "4"})).await;
    let op = start_handlers_on(&sim, handlers(), Launch { name: Some("demo"), ..Launch::default() }).await;
    eventually(30, "the Copy of a pruned and c's made after the restart", || async {
        let gone = copies.get_opt("a").await.ok()?.is_none();
        let made = copies.get_opt("c").await.ok()?.is_some();
        (gone && made).then_some(())
    })
    .await;
    eventually(30, "target un-patched after the restart", || async {
        (data_of(&cms, "target").await? == json!({"own": "kept"})).then_some(())
    })
    .await;

    // A Patcher's target that appears after its input is patched when it appears.
    cms.delete("target", &DeleteParams::default()).await.expect("delete target");
    put_cm(&cms, "src", json!({"stamp": "yes"}), json!({"p": "5"})).await;
    put_cm(&cms, "target", json!({}), json!({"own": "new"})).await;
    eventually(30, "the new target patched", || async {
        (data_of(&cms, "target").await? == json!({"own": "new", "p": "5"})).then_some(())
    })
    .await;

    // Another Operator object is not this process's to reconcile.
    let mut other = Operator::from_yaml(OPERATOR).expect("reads").object;
    other["metadata"]["name"] = json!("other");
    let other: DynamicObject = serde_json::from_value(other).expect("an object");
    operators.create(&PostParams::default(), &other).await.expect("create another Operator");
    // Deleting the Operator deletes its Updater outputs, as a CR's children.
    operators.delete("demo", &DeleteParams::default()).await.expect("delete the Operator");
    eventually(30, "the Copy of c deleted with the Operator", || async {
        copies.get_opt("c").await.ok()?.is_none().then_some(())
    })
    .await;
    let other = operators.get("other").await.expect("the other Operator");
    assert!(other.data.get("status").is_none_or(Value::is_null), "{:?}", other.data.get("status"));
    op.stop().await;
}

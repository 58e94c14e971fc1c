//! Children in other namespaces than their primary's: tied by label (no owner reference can
//! cross namespaces), guarded by the children finalizer, re-made when deleted by hand,
//! pruned when left out, deleted with the primary, kept by an orphaning deletion.
//! In-process against an in-process kubesim.

mod common;

use common::{eventually, start};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::ResourceExt as _;
use kube::api::{Api, DeleteParams, PostParams};
use serde_json::json;

/// A copy of each Widget in each namespace its `spec.names` lists.
const COPIES: &str = r#"
operator(widget).manages(ConfigMap).reconcile((cr) => {
  for (const ns of cr.spec.names) {
    apply(ConfigMap({ metadata: { name: `copy-of-${cr.metadata.name}`, namespace: ns }, data: { mode: cr.spec.mode } }));
  }
  setStatus(cr, { phase: "Ready" });
});
"#;

const FINALIZER: &str = "children.ctop.dev/ctop-test";

async fn namespace(client: &kube::Client, name: &str) {
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": name}})).expect("namespace");
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await
        .expect("namespace created");
}

fn config_maps(client: &kube::Client, ns: &str) -> Api<ConfigMap> {
    Api::namespaced(client.clone(), ns)
}

/// The ConfigMap `ns/name` once `present` says whether it exists.
async fn wait_for(client: &kube::Client, ns: &str, name: &str, present: bool) -> Option<ConfigMap> {
    let what = format!("{ns}/{name} {}", if present { "exists" } else { "is gone" });
    eventually(30, &what, || async {
        let found = config_maps(client, ns).get_opt(name).await.ok()?;
        (found.is_some() == present).then_some(found)
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn children_elsewhere_are_remade_pruned_and_deleted_with_their_primary() {
    let op = start(COPIES).await;
    namespace(&op.client, "team-a").await;
    namespace(&op.client, "team-b").await;
    op.create("src", json!({"names": ["team-a", "team-b"]})).await;
    let copy = wait_for(&op.client, "team-a", "copy-of-src", true).await.expect("copy");
    wait_for(&op.client, "team-b", "copy-of-src", true).await;
    assert!(copy.owner_references().is_empty());
    assert_eq!(
        copy.annotations().get("ctop.dev/owner").map(String::as_str),
        Some("Widget.test.ctop.dev default/src")
    );
    let src = op.widget("src").await.expect("src");
    assert!(src.finalizers().iter().any(|f| f == FINALIZER), "{:?}", src.finalizers());

    // Deleted by hand: the primary is reconciled and makes it again.
    config_maps(&op.client, "team-a").delete("copy-of-src", &DeleteParams::default()).await.expect("deleted");
    wait_for(&op.client, "team-a", "copy-of-src", true).await;

    // Left out of the desired set: pruned.
    op.set_spec("src", json!({"names": ["team-a"]})).await;
    wait_for(&op.client, "team-b", "copy-of-src", false).await;

    // The primary deleted: its children elsewhere go with it, then the primary.
    op.widgets().delete("src", &DeleteParams::background()).await.expect("deleted");
    wait_for(&op.client, "team-a", "copy-of-src", false).await;
    eventually(30, "src is gone", || async { op.widget("src").await.is_none().then_some(()) }).await;
    let warned: Vec<_> =
        op.events_about("src").await.into_iter().filter(|e| e["type"] == "Warning").collect();
    assert!(warned.is_empty(), "{warned:?}");
    op.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_orphaning_deletion_keeps_the_children_elsewhere() {
    let op = start(COPIES).await;
    namespace(&op.client, "team-a").await;
    op.create("kept", json!({"names": ["team-a"]})).await;
    wait_for(&op.client, "team-a", "copy-of-kept", true).await;
    eventually(30, "the finalizer", || async {
        op.widget("kept").await.filter(|w| w.finalizers().iter().any(|f| f == FINALIZER))
    })
    .await;
    op.widgets().delete("kept", &DeleteParams::orphan()).await.expect("deleted");
    eventually(30, "kept is gone", || async { op.widget("kept").await.is_none().then_some(()) }).await;
    assert!(config_maps(&op.client, "team-a").get_opt("copy-of-kept").await.expect("get").is_some());
    op.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_primary_with_no_children_elsewhere_left_loses_the_finalizer() {
    let op = start(COPIES).await;
    namespace(&op.client, "team-a").await;
    op.create("src", json!({"names": ["team-a"]})).await;
    wait_for(&op.client, "team-a", "copy-of-src", true).await;
    eventually(30, "the finalizer", || async {
        op.widget("src").await.filter(|w| w.finalizers().iter().any(|f| f == FINALIZER))
    })
    .await;
    op.set_spec("src", json!({"names": []})).await;
    wait_for(&op.client, "team-a", "copy-of-src", false).await;
    eventually(30, "the finalizer is gone", || async {
        op.widget("src").await.filter(|w| !w.finalizers().iter().any(|f| f == FINALIZER))
    })
    .await;
    // Wanted again: the finalizer comes back before the copy.
    op.set_spec("src", json!({"names": ["team-a"]})).await;
    wait_for(&op.client, "team-a", "copy-of-src", true).await;
    let src = op.widget("src").await.expect("src");
    assert!(src.finalizers().iter().any(|f| f == FINALIZER), "{:?}", src.finalizers());
    op.stop().await;
}

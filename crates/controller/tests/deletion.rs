//! Deleting a primary object: it is never reconciled again once gone, its finalizer goes
//! without a conflict, and every call on it while it is being deleted follows one rule
//! (what the call applies is the desired set), with a wait that can never end reported on
//! the object. In-process against an in-process kubesim.

mod common;

use std::sync::Arc;

use common::{Launch, Operator, condition, eventually, sim, start, start_on};
use futures::StreamExt as _;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, WatchEvent, WatchParams};
use kube::{Resource as _, ResourceExt as _};
use parking_lot::Mutex;
use serde_json::json;

/// The ConfigMap `name` in `default`, once it exists.
async fn config_map(op: &Operator, name: &str) -> ConfigMap {
    eventually(20, &format!("the ConfigMap {name}"), || async {
        op.config_maps().get_opt(name).await.ok().flatten()
    })
    .await
}

/// Wait until the Widget `name` is gone.
async fn widget_gone(op: &Operator, name: &str) {
    eventually(30, &format!("{name} is gone"), || async { op.widget(name).await.is_none().then_some(()) })
        .await;
}

/// Events of type `Warning` about `name`, as `reason: note`.
async fn warnings(op: &Operator, name: &str) -> Vec<String> {
    op.events_about(name)
        .await
        .into_iter()
        .filter(|e| e["type"] == "Warning")
        .map(|e| format!("{}: {}", e["reason"].as_str().unwrap_or(""), e["note"].as_str().unwrap_or("")))
        .collect()
}

/// A child ConfigMap named after each Widget, and a status.
const CHILD: &str = r#"
operator(widget).manages(ConfigMap).reconcile((cr) => {
  apply(ConfigMap({ metadata: { name: cr.metadata.name }, data: { mode: cr.spec.mode } }));
  setStatus(cr, { phase: "Ready" });
});
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_object_is_never_reconciled_again() {
    let op = start(CHILD).await;
    // Every ConfigMap created from here on.
    let created = Arc::new(Mutex::new(Vec::<String>::new()));
    op.create("first", json!({})).await;
    let first = config_map(&op, "first").await;
    let mut stream = op
        .config_maps()
        .watch(&WatchParams::default(), first.resource_version().as_deref().unwrap_or("0"))
        .await
        .expect("watch")
        .boxed();
    let recorder = {
        let created = created.clone();
        tokio::spawn(async move {
            while let Some(Ok(event)) = stream.next().await {
                if let WatchEvent::Added(cm) = event {
                    created.lock().push(cm.name_any());
                }
            }
        })
    };
    // The issue saw the child come back in 4 of 5 tries: the garbage collector deletes it,
    // its deletion triggers the owner from a cache that still has it, and the reconcile
    // applies it again.
    for i in 0..5 {
        let name = format!("gone-{i}");
        op.create(&name, json!({})).await;
        config_map(&op, &name).await;
        op.widgets().delete(&name, &DeleteParams::background()).await.expect("deleted");
        eventually(20, &format!("{name}'s child is collected"), || async {
            op.config_maps().get_opt(&name).await.ok().and_then(|o| o.is_none().then_some(()))
        })
        .await;
        // A Widget created after the deletion is reconciled after the triggers it caused.
        let after = format!("after-{i}");
        op.create(&after, json!({})).await;
        config_map(&op, &after).await;
        let made: Vec<String> = created.lock().iter().filter(|n| **n == name).cloned().collect();
        assert_eq!(made, std::slice::from_ref(&name), "{name}'s child was created once, never again");
        let warned = warnings(&op, &name).await;
        assert!(warned.is_empty(), "nothing failed on {name}: {warned:?}");
    }
    recorder.abort();
    op.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_finalizer_goes_without_a_conflict() {
    let op = start_on(
        &sim().await,
        r#"operator(widget)
          .manages(ConfigMap)
          .finalize((cr) => Result.ok())
          .reconcile((cr) => {
            apply(ConfigMap({ metadata: { name: cr.metadata.name }, data: {} }));
            setStatus(cr, { phase: "Ready" });
          });"#,
        Launch { serve: true, ..Launch::default() },
    )
    .await;
    // The issue saw every plain delete fail once: the status write of the finalize call
    // moved the object's resourceVersion, which the finalizer's removal was guarded by.
    for i in 0..3 {
        let name = format!("w{i}");
        op.create(&name, json!({})).await;
        eventually(20, "reconciled", || async {
            op.widget(&name).await.filter(|w| w.data["status"]["phase"] == "Ready")
        })
        .await;
        op.widgets().delete(&name, &DeleteParams::default()).await.expect("deleted");
        widget_gone(&op, &name).await;
        let warned = warnings(&op, &name).await;
        assert!(warned.is_empty(), "the deletion of {name} failed nowhere: {warned:?}");
    }
    assert!(op.finalizes() >= 3);
    assert_eq!(op.metric("controller_runtime_reconcile_errors_total{controller=\"widget\"}").await, 0.0);
    op.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reconcile_that_waits_for_its_children_releases_its_own_finalizer() {
    // The kopf and controller-runtime habit: the reconcile adds its own finalizer, and on
    // deletion applies nothing and waits for its children to go before removing it.
    let op = start(
        r#"import { addFinalizer, removeFinalizer } from "ctop";
        operator(widget).manages(ConfigMap).reconcile((cr) => {
          addFinalizer(cr, "test.ctop.dev/cleanup");
          if (cr.metadata.deletionTimestamp) {
            if (getObserved(ConfigMap, cr.metadata.name)) return Result.ok();
            removeFinalizer(cr, "test.ctop.dev/cleanup");
            return Result.ok();
          }
          apply(ConfigMap({ metadata: { name: cr.metadata.name }, data: {} }));
        });"#,
    )
    .await;
    op.create("w", json!({})).await;
    config_map(&op, "w").await;
    eventually(20, "the finalizer", || async {
        op.widget("w").await.filter(|w| w.finalizers().iter().any(|f| f == "test.ctop.dev/cleanup"))
    })
    .await;
    op.widgets().delete("w", &DeleteParams::default()).await.expect("deleted");
    // Applying nothing during the deletion pruned the child; its deletion called the
    // reconcile again, which found it gone and removed the finalizer.
    widget_gone(&op, "w").await;
    assert!(op.config_maps().get_opt("w").await.expect("get").is_none(), "the child was pruned");
    let warned = warnings(&op, "w").await;
    assert!(warned.is_empty(), "{warned:?}");
    op.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deletion_that_can_never_end_says_what_it_waits_for() {
    // A reconcile that claims a finalizer and never lets it go, nor its child.
    let op = start(
        r#"import { addFinalizer } from "ctop";
        operator(widget).manages(ConfigMap).reconcile((cr) => {
          addFinalizer(cr, "test.ctop.dev/forever");
          apply(ConfigMap({ metadata: { name: cr.metadata.name }, data: {} }));
        });"#,
    )
    .await;
    op.create("w", json!({})).await;
    config_map(&op, "w").await;
    eventually(20, "the finalizer", || async { op.widget("w").await.filter(|w| !w.finalizers().is_empty()) })
        .await;
    op.widgets().delete("w", &DeleteParams::default()).await.expect("deleted");
    let stalled = eventually(20, "the Reconciled condition says the deletion stalled", || async {
        let w = op.widget("w").await?;
        let c = condition(&w, "Reconciled")?.clone();
        (c["reason"] == "DeletionStalled").then_some(c)
    })
    .await;
    assert_eq!(stalled["status"], "False");
    let message = stalled["message"].as_str().unwrap_or_default();
    for part in ["\"test.ctop.dev/forever\"", "children left: ConfigMap default/w", "removeFinalizer"] {
        assert!(message.contains(part), "the message names {part}: {message}");
    }
    let warned = eventually(20, "a DeletionStalled event", || async {
        let w = warnings(&op, "w").await;
        w.iter().any(|e| e.starts_with("DeletionStalled: ")).then_some(w)
    })
    .await;
    assert!(warned.iter().all(|e| e.starts_with("DeletionStalled: ")), "{warned:?}");
    // Released by hand, it goes.
    op.widgets()
        .patch("w", &PatchParams::default(), &Patch::Merge(json!({"metadata": {"finalizers": null}})))
        .await
        .expect("finalizer removed");
    widget_gone(&op, "w").await;
    let left = op.widgets().list(&ListParams::default()).await.expect("list").items;
    assert!(left.iter().all(|w| w.meta().name.as_deref() != Some("w")));
    op.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deletion_does_not_wait_out_the_backoff_of_failed_reconciles() {
    let op = start_on(
        &sim().await,
        r#"operator(widget)
          .finalize((cr) => Result.ok())
          .reconcile((cr) => Result.error("failing on purpose"));"#,
        Launch { serve: true, ..Launch::default() },
    )
    .await;
    op.create("w", json!({})).await;
    // Four failures in a row: the next retry is 8 s away (0.5 s doubling).
    eventually(30, "four failed reconciles", || async {
        let errors = op.metric("controller_runtime_reconcile_errors_total{controller=\"widget\"}").await;
        (errors >= 4.0).then_some(())
    })
    .await;
    let errors = op.metric("controller_runtime_reconcile_errors_total{controller=\"widget\"}").await;
    let deleted = std::time::Instant::now();
    op.widgets().delete("w", &DeleteParams::default()).await.expect("deleted");
    widget_gone(&op, "w").await;
    let after = op.metric("controller_runtime_reconcile_errors_total{controller=\"widget\"}").await;
    assert!(after <= errors + 1.0, "the deletion did not fail its way through: {errors} -> {after}");
    // Acted on at once, as controller-runtime does, not after the backoff.
    assert!(deleted.elapsed() < std::time::Duration::from_secs(6), "took {:?}", deleted.elapsed());
    assert!(op.finalizes() >= 1);
    op.stop().await;
}

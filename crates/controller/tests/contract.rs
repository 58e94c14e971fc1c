//! The reconcile contract, one scenario per promise: what a status patch, an early return,
//! a finalizer, a failure and an undeclared kind mean. Each runs a script in-process against
//! an in-process kubesim.

mod common;

use std::time::{Duration, Instant};

use common::{condition, eventually, observed_generation, start};
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_patches_merge_and_null_deletes() {
    let op = start(
        r#"operator(widget).reconcile((cr) => {
          if (cr.spec.mode === "a") setStatus(cr, { a: "set" });
          if (cr.spec.mode === "b") setStatus(cr, { b: "set" });
          if (cr.spec.mode === "drop") setStatus(cr, { a: null });
        });"#,
    )
    .await;
    op.create("w", json!({"mode": "a"})).await;
    eventually(20, "status.a", || async {
        op.widget("w").await.filter(|o| observed_generation(o) == Some(1))
    })
    .await;
    op.set_spec("w", json!({"mode": "b"})).await;
    let w = eventually(20, "status.b", || async {
        op.widget("w").await.filter(|o| observed_generation(o) == Some(2))
    })
    .await;
    assert_eq!(
        (&w.data["status"]["a"], &w.data["status"]["b"]),
        (&json!("set"), &json!("set")),
        "{:#}",
        w.data
    );
    op.set_spec("w", json!({"mode": "drop"})).await;
    let w = eventually(20, "a deleted", || async {
        op.widget("w").await.filter(|o| observed_generation(o) == Some(3))
    })
    .await;
    assert!(w.data["status"].get("a").is_none(), "{:#}", w.data);
    assert_eq!(w.data["status"]["b"], "set");
    op.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_controllers_own_writes_do_not_trigger_it_again() {
    let op = common::start_on(
        &common::sim().await,
        r#"operator(widget).manages(Secret).reconcile((cr) => {
          apply(Secret({ metadata: { name: `${cr.metadata.name}-token` }, stringData: { token: "t" } }));
          setStatus(cr, { phase: "Ready", b: cr.metadata.annotations?.poke ?? "none" });
        });"#,
        common::Launch { serve: true, ..common::Launch::default() },
    )
    .await;
    op.create("w", json!({})).await;
    eventually(20, "the first reconcile's status", || async {
        op.widget("w").await.filter(|o| o.data["status"]["b"] == "none")
    })
    .await;
    // A change by someone else: exactly one more reconcile, which records what it saw.
    op.widgets()
        .patch(
            "w",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {"poke": "1"}}})),
        )
        .await
        .expect("annotated");
    eventually(20, "the poke's reconcile", || async {
        op.widget("w").await.filter(|o| o.data["status"]["b"] == "1")
    })
    .await;
    // One reconcile for the creation, one for the child's creation (the first to observe it;
    // it may also be seen within the first run, and the two are one), one for the
    // annotation. One more for each of the two status writes when a reconcile started
    // between the write and its watch event (it may have read the cache without the write,
    // so the event counts; under CPU contention both can happen in one run). Each own write
    // re-triggering (two status writes, the ApplySet record) would make it 6 or more.
    let reconciles =
        op.metric("controller_runtime_reconcile_total{controller=\"widget\",result=\"success\"}").await;
    assert!(
        (2.0..=5.0).contains(&reconciles),
        "{reconciles} reconciles ({} handler calls): the status writes and the ApplySet record came back \
         as watch events and were not all recognised as the controller's own",
        op.reconciles()
    );
    op.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_reconcile_that_writes_status_follows_the_backoff() {
    let op = start(
        r#"import { now } from "ctop";
        operator(widget).reconcile((cr) => {
          setStatus(cr, { attempt: now() });
          return Result.error("not yet");
        });"#,
    )
    .await;
    let created = Instant::now();
    op.create("w", json!({})).await;
    eventually(30, "three attempts", || async { (op.reconciles() >= 3).then_some(()) }).await;
    // Backoff after the 1st and 2nd failure: 1 s, then 2 s. Each status write comes back as
    // a watch event; were it a trigger, the three attempts would take milliseconds.
    assert!(
        created.elapsed() >= Duration::from_millis(2500),
        "three attempts within {:?}: the status writes re-triggered the reconcile",
        created.elapsed()
    );
    let w = op.widget("w").await.expect("widget");
    let reconciled = condition(&w, "Reconciled").expect("the Reconciled condition");
    assert_eq!(
        (reconciled["status"].as_str(), reconciled["reason"].as_str()),
        (Some("False"), Some("ReconcileFailed"))
    );
    assert!(reconciled["message"].as_str().is_some_and(|m| m.contains("not yet")), "{reconciled}");
    assert!(w.data["status"]["attempt"].is_number(), "the handler's own status is written: {:#}", w.data);
    assert_eq!(observed_generation(&w), None, "observedGeneration advances only after a full success");
    op.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_show_on_the_object_and_hold_back_observed_generation() {
    let op = start(
        r#"operator(widget).manages(ConfigMap).reconcile((cr) => {
          if (cr.spec.mode === "throw") throw new Error("boom");
          if (cr.spec.mode === "refused") {
            // The API server refuses this child (a label value has a space): 422.
            apply(ConfigMap({ metadata: { name: `${cr.metadata.name}-child`, labels: { tier: "not valid" } } }));
          }
          setStatus(cr, { phase: "Ready" });
        });"#,
    )
    .await;
    op.create("thrower", json!({"mode": "throw"})).await;
    op.create("refused", json!({"mode": "refused"})).await;
    op.create("fine", json!({})).await;

    let thrower = eventually(20, "the thrower's condition", || async {
        op.widget("thrower").await.filter(|o| condition(o, "Reconciled").is_some())
    })
    .await;
    let c = condition(&thrower, "Reconciled").expect("condition");
    assert_eq!((c["status"].as_str(), c["reason"].as_str()), (Some("False"), Some("ScriptError")));
    assert!(c["message"].as_str().is_some_and(|m| m.contains("boom") && m.contains("operator.ct")), "{c}");
    assert_eq!(observed_generation(&thrower), None);
    let events = eventually(20, "a Warning event on the thrower", || async {
        let e = op.events_about("thrower").await;
        (!e.is_empty()).then_some(e)
    })
    .await;
    assert_eq!(
        (events[0]["type"].as_str(), events[0]["reason"].as_str()),
        (Some("Warning"), Some("ScriptError"))
    );

    let refused = eventually(20, "the refused child's condition", || async {
        op.widget("refused").await.filter(|o| condition(o, "Reconciled").is_some())
    })
    .await;
    let c = condition(&refused, "Reconciled").expect("condition");
    let message = c["message"].as_str().unwrap_or_default();
    assert_eq!(c["reason"], "ApplyFailed");
    assert!(
        message.contains("422 Invalid") && message.contains("metadata.labels"),
        "reads like kubectl: {message}"
    );
    assert!(!message.contains("Status {") && !message.contains("ListMeta"), "no Debug dump: {message}");
    assert!(refused.data["status"].get("phase").is_none(), "no status for children that were not applied");
    assert_eq!(observed_generation(&refused), None);

    let fine = eventually(20, "the good object reconciles", || async {
        op.widget("fine").await.filter(|o| observed_generation(o) == Some(1))
    })
    .await;
    assert_eq!(fine.data["status"]["phase"], "Ready");
    let c = condition(&fine, "Reconciled").expect("condition");
    assert_eq!(c["status"], "True");
    op.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finalize_can_delete_the_children_and_wait_for_them() {
    let op = start(
        r#"operator(widget).manages(ConfigMap)
          .finalize((cr) => {
            // Nothing applied: every child is pruned. Release once they are gone.
            return getObserved(ConfigMap, `${cr.metadata.name}-a`) ? Result.requeue("200ms") : Result.ok();
          })
          .reconcile((cr) => {
            apply(ConfigMap({ metadata: { name: `${cr.metadata.name}-a` }, data: { x: "1" } }));
          });"#,
    )
    .await;
    op.create("w", json!({})).await;
    eventually(20, "the child", || async { op.config_maps().get_opt("w-a").await.ok().flatten() }).await;
    op.widgets().delete("w", &DeleteParams::default()).await.expect("delete");
    eventually(20, "the Widget is gone", || async { op.widget("w").await.is_none().then_some(()) }).await;
    assert!(op.config_maps().get_opt("w-a").await.expect("get").is_none(), "the child was deleted");
    assert!(op.finalizes.load(std::sync::atomic::Ordering::SeqCst) >= 1);
    op.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_orphaning_delete_keeps_the_children_through_finalize() {
    let op = start(
        r#"operator(widget).manages(ConfigMap)
          .finalize(() => Result.ok())
          .reconcile((cr) => {
            apply(ConfigMap({ metadata: { name: `${cr.metadata.name}-a` } }));
          });"#,
    )
    .await;
    op.create("w", json!({})).await;
    eventually(20, "the child", || async { op.config_maps().get_opt("w-a").await.ok().flatten() }).await;
    op.widgets().delete("w", &DeleteParams::orphan()).await.expect("delete");
    eventually(20, "the Widget is gone", || async { op.widget("w").await.is_none().then_some(()) }).await;
    assert!(
        op.config_maps().get_opt("w-a").await.expect("get").is_some(),
        "the user asked to orphan the child"
    );
    op.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn result_keep_leaves_the_children_alone() {
    let op = start(
        r#"operator(widget).manages(ConfigMap).reconcile((cr) => {
          if (cr.spec.mode === "invalid") {
            setStatus(cr, { phase: "Invalid" });
            return Result.keep();
          }
          for (const n of cr.spec.names) apply(ConfigMap({ metadata: { name: `${cr.metadata.name}-${n}` } }));
          setStatus(cr, { phase: "Ready" });
        });"#,
    )
    .await;
    op.create("w", json!({"names": ["x", "y"]})).await;
    eventually(20, "both children", || async {
        let cms = op.config_maps();
        (cms.get_opt("w-x").await.ok()??, cms.get_opt("w-y").await.ok()??).into()
    })
    .await;
    op.set_spec("w", json!({"mode": "invalid", "names": []})).await;
    let w = eventually(20, "the invalid spec reported", || async {
        op.widget("w").await.filter(|o| observed_generation(o) == Some(2))
    })
    .await;
    assert_eq!(w.data["status"]["phase"], "Invalid");
    for name in ["w-x", "w-y"] {
        assert!(op.config_maps().get_opt(name).await.expect("get").is_some(), "{name} kept");
    }
    // Back to a complete desired set: what it leaves out is pruned again.
    op.set_spec("w", json!({"mode": "ok", "names": ["x"]})).await;
    eventually(20, "w-y pruned", || async {
        op.config_maps().get_opt("w-y").await.ok().and_then(|o| o.is_none().then_some(()))
    })
    .await;
    assert!(op.config_maps().get_opt("w-x").await.expect("get").is_some());
    op.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_undeclared_kind_is_refused_naming_the_builder_call() {
    let op = start(
        r#"operator(widget).manages(Secret).reconcile((cr) => {
          apply(Secret({ metadata: { name: `${cr.metadata.name}-s` } }));
          apply(ConfigMap({ metadata: { name: `${cr.metadata.name}-cm` } }));
        });"#,
    )
    .await;
    op.create("w", json!({})).await;
    let w = eventually(20, "the condition", || async {
        op.widget("w").await.filter(|o| condition(o, "Reconciled").is_some())
    })
    .await;
    let c = condition(&w, "Reconciled").expect("condition");
    assert_eq!(c["reason"], "UndeclaredKind");
    let message = c["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("ConfigMap default/w-cm") && message.contains(".manages(ConfigMap)"),
        "{message}"
    );
    let secrets: Api<k8s_openapi::api::core::v1::Secret> = Api::namespaced(op.client.clone(), "default");
    assert!(
        secrets.get_opt("w-s").await.expect("get").is_none(),
        "nothing is written when one object is refused"
    );
    assert!(op.config_maps().get_opt("w-cm").await.expect("get").is_none());
    op.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_controllers_health_is_a_cluster_object() {
    let op = start(
        r#"operator(widget).reconcile((cr) => {
          if (cr.spec.mode === "throw") throw new Error("boom");
        });"#,
    )
    .await;
    let ar = kube::api::ApiResource::from_gvk_with_plural(
        &kube::api::GroupVersionKind::gvk("ctop.dev", "v1alpha1", "ControllerStatus"),
        "controllerstatuses",
    );
    let statuses: Api<DynamicObject> = Api::namespaced_with(op.client.clone(), "default", &ar);
    let ready = |o: &DynamicObject| {
        o.data["status"]["conditions"].as_array().and_then(|cs| cs.iter().find(|c| c["type"] == "Ready")).map(
            |c| {
                (
                    c["status"].as_str().unwrap_or_default().to_owned(),
                    c["reason"].as_str().unwrap_or_default().to_owned(),
                )
            },
        )
    };
    let healthy = eventually(20, "a Ready ControllerStatus", || async {
        statuses
            .get_opt("ctop-test-widget")
            .await
            .ok()
            .flatten()
            .filter(|o| ready(o) == Some(("True".into(), "Ready".into())))
    })
    .await;
    assert_eq!(
        (healthy.data["spec"]["operator"].as_str(), healthy.data["spec"]["controller"].as_str()),
        (Some("ctop-test"), Some("widget"))
    );

    op.create("w", json!({"mode": "throw"})).await;
    let failing = eventually(20, "the failure published", || async {
        statuses
            .get_opt("ctop-test-widget")
            .await
            .ok()
            .flatten()
            .filter(|o| ready(o) == Some(("Unknown".into(), "ReconciliationFailed".into())))
    })
    .await;
    let last = failing.data["status"]["lastErrors"][0].as_str().unwrap_or_default();
    assert!(last.contains("boom"), "newest error first: {:#}", failing.data["status"]);
    op.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remove_deletes_a_child_of_this_object_only() {
    let op = start(
        r#"import { remove } from "ctop";
        operator(widget).manages(ConfigMap).reconcile((cr) => {
          const name = cr.metadata.name;
          if (cr.spec.mode === "drop") {
            apply(ConfigMap({ metadata: { name: `${name}-a` } }));
            remove(ConfigMap({ metadata: { name: `${name}-b` } }));
            remove(ConfigMap({ metadata: { name: "bystander" } }));
            setStatus(cr, { phase: "Dropped" });
            return Result.keep();
          }
          apply(ConfigMap({ metadata: { name: `${name}-a` } }));
          apply(ConfigMap({ metadata: { name: `${name}-b` } }));
        });"#,
    )
    .await;
    let bystander: k8s_openapi::api::core::v1::ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "bystander", "namespace": "default"}}))
            .expect("cm");
    op.config_maps().create(&kube::api::PostParams::default(), &bystander).await.expect("bystander");
    op.create("w", json!({})).await;
    eventually(20, "both children", || async {
        let cms = op.config_maps();
        (cms.get_opt("w-a").await.ok()??, cms.get_opt("w-b").await.ok()??).into()
    })
    .await;
    op.set_spec("w", json!({"mode": "drop"})).await;
    eventually(20, "w-b removed", || async {
        op.config_maps().get_opt("w-b").await.ok().and_then(|o| o.is_none().then_some(()))
    })
    .await;
    eventually(20, "the reconcile done", || async {
        op.widget("w").await.filter(|o| o.data["status"]["phase"] == "Dropped")
    })
    .await;
    assert!(op.config_maps().get_opt("w-a").await.expect("get").is_some(), "w-a kept");
    assert!(op.config_maps().get_opt("bystander").await.expect("get").is_some(), "not a child: left alone");
    op.stop().await;
}

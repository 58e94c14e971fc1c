//! An operator's life, one scenario per stage: children created, updated, pruned and
//! garbage-collected with their owner; a finalizer; periodic reconciles; the one-shot
//! `onStart`; `.watches()` through a mapper and a predicate; and leader election (only the
//! leader reconciles, renewing its Lease is not winning it again, a graceful stop hands over
//! at once). Each runs a script in-process against an in-process kubesim (the black-box
//! versions, through the binary, are in `e2e/tests/run*.rs`).

mod common;

use std::time::{Duration, Instant};

use common::{
    Launch, Operator, condition, eventually, http_get, observed_generation, sample, start, start_on,
};
use ctop_applier::applyset::{
    CONTAINS_GROUP_KINDS_ANNOTATION, ID_LABEL, PART_OF_LABEL, PRUNE_ANNOTATION, applyset_id,
};
use ctop_controller::LeaseTiming;
use futures::{StreamExt as _, TryStreamExt as _};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use kube::{Resource as _, ResourceExt as _};
use serde_json::json;

/// The Widget `name` once its status records generation `generation`.
async fn reconciled(op: &Operator, name: &str, generation: i64) -> DynamicObject {
    eventually(20, &format!("{name} reconciled at generation {generation}"), || async {
        op.widget(name).await.filter(|o| observed_generation(o) == Some(generation))
    })
    .await
}

/// The ConfigMap `name` in `default`, once it exists.
async fn config_map(op: &Operator, name: &str) -> ConfigMap {
    eventually(20, &format!("the ConfigMap {name}"), || async {
        op.config_maps().get_opt(name).await.ok().flatten()
    })
    .await
}

/// Wait until the ConfigMap `name` in `default` is gone.
async fn config_map_gone(op: &Operator, name: &str) {
    eventually(20, &format!("the ConfigMap {name} is gone"), || async {
        op.config_maps().get_opt(name).await.ok().and_then(|o| o.is_none().then_some(()))
    })
    .await;
}

fn data<'a>(cm: &'a ConfigMap, key: &str) -> Option<&'a str> {
    cm.data.as_ref()?.get(key).map(String::as_str)
}

fn rv(o: &impl kube::Resource) -> u64 {
    o.meta().resource_version.as_deref().and_then(|v| v.parse().ok()).expect("a numeric resourceVersion")
}

/// One ConfigMap and one Secret per Widget, the ConfigMap carrying `spec.mode`.
const CHILDREN: &str = r#"
operator(widget).manages(ConfigMap, Secret).reconcile((cr) => {
  apply(ConfigMap({ metadata: { name: `${cr.metadata.name}-config` }, data: { mode: cr.spec.mode } }));
  apply(Secret({ metadata: { name: `${cr.metadata.name}-token` }, stringData: { token: "t" } }));
  setStatus(cr, { phase: cr.spec.mode });
});
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_applies_owned_children_and_writes_the_status() {
    let op = start(CHILDREN).await;
    let created = op.create("w", json!({"mode": "a"})).await;
    let w = reconciled(&op, "w", 1).await;
    assert_eq!(w.data["status"]["phase"], "a", "{:#}", w.data);
    let c = condition(&w, "Reconciled").expect("the Reconciled condition");
    assert_eq!((c["status"].as_str(), c["reason"].as_str()), (Some("True"), Some("ReconcileSucceeded")));

    // The owner is the parent of an ApplySet: its id label and the kinds of its members.
    let set = applyset_id("w", "default", "Widget", common::GROUP);
    assert_eq!(w.labels().get(ID_LABEL), Some(&set), "{:#?}", w.metadata);
    assert_eq!(
        w.annotations().get(CONTAINS_GROUP_KINDS_ANNOTATION).map(String::as_str),
        Some("ConfigMap,Secret")
    );

    let cm = config_map(&op, "w-config").await;
    assert_eq!(data(&cm, "mode"), Some("a"));
    let secrets: Api<Secret> = Api::namespaced(op.client.clone(), "default");
    let secret = secrets.get("w-token").await.expect("the Secret is applied with the ConfigMap");
    let uid = created.uid().expect("uid");
    for (name, meta) in [("the ConfigMap", cm.meta()), ("the Secret", secret.meta())] {
        let owners = meta.owner_references.clone().unwrap_or_default();
        assert_eq!(owners.len(), 1, "{name}: {owners:?}");
        let o = &owners[0];
        assert_eq!(
            (o.api_version.as_str(), o.kind.as_str(), o.name.as_str(), o.uid.as_str()),
            (format!("{}/v1", common::GROUP).as_str(), "Widget", "w", uid.as_str()),
            "{name}"
        );
        assert_eq!((o.controller, o.block_owner_deletion), (Some(true), Some(true)), "{name}: {o:?}");
        let labels = meta.labels.clone().unwrap_or_default();
        assert_eq!(labels.get(PART_OF_LABEL), Some(&set), "{name} is a member of w's ApplySet");
    }
    op.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spec_change_reapplies_the_child_and_observed_generation_follows() {
    let op = start(CHILDREN).await;
    op.create("w", json!({"mode": "a"})).await;
    reconciled(&op, "w", 1).await;
    let first = config_map(&op, "w-config").await;
    assert_eq!(data(&first, "mode"), Some("a"));

    for (mode, generation) in [("b", 2), ("c", 3)] {
        op.set_spec("w", json!({"mode": mode})).await;
        let w = reconciled(&op, "w", generation).await;
        assert_eq!(w.data["status"]["phase"], mode, "{:#}", w.data);
        // The status is written after the children: the new content is already there.
        let cm = op.config_maps().get("w-config").await.expect("the child");
        assert_eq!(data(&cm, "mode"), Some(mode), "the child carries generation {generation}'s spec");
        assert_eq!(cm.uid(), first.uid(), "updated in place, not re-created");
    }
    op.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_dropped_from_the_desired_set_is_pruned_and_nothing_else() {
    let op = start(&format!(
        r#"operator(widget).manages(ConfigMap).reconcile((cr) => {{
          for (const n of cr.spec.names) {{
            const name = `${{cr.metadata.name}}-${{n}}`;
            const metadata = n === "keep" ? {{ name, annotations: {{ "{PRUNE_ANNOTATION}": "false" }} }} : {{ name }};
            apply(ConfigMap({{ metadata, data: {{ owner: cr.metadata.name }} }}));
          }}
          setStatus(cr, {{ phase: cr.spec.names.join(",") }});
        }});"#
    ))
    .await;
    let set = applyset_id("w", "default", "Widget", common::GROUP);
    // Not w's children: one nobody owns, one that carries w's ApplySet label but no owner
    // reference, and the child of another Widget.
    for (name, labels) in [("bystander", json!({})), ("lookalike", json!({ PART_OF_LABEL: set }))] {
        let cm: ConfigMap =
            serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}})).expect("configmap");
        op.config_maps().create(&PostParams::default(), &cm).await.expect("created");
    }
    op.create("w", json!({"names": ["x", "y", "keep"]})).await;
    op.create("other", json!({"names": ["z"]})).await;
    reconciled(&op, "w", 1).await;
    reconciled(&op, "other", 1).await;
    let mut before = Vec::new();
    for name in ["w-x", "w-keep", "other-z", "bystander", "lookalike"] {
        before.push((name, config_map(&op, name).await.uid()));
    }
    config_map(&op, "w-y").await;

    op.set_spec("w", json!({"names": ["x"]})).await;
    let w = reconciled(&op, "w", 2).await;
    assert_eq!(w.data["status"]["phase"], "x");
    config_map_gone(&op, "w-y").await;
    for (name, uid) in before {
        let now = op.config_maps().get_opt(name).await.expect("get");
        assert_eq!(now.and_then(|o| o.uid()), uid, "{name} is untouched");
    }
    // Opted out of pruning, it is still w's: deleting w would still collect it.
    let kept = op.config_maps().get("w-keep").await.expect("kept");
    let owners = kept.owner_references();
    assert!(owners.iter().any(|o| o.name == "w" && o.controller == Some(true)), "{owners:?}");
    op.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_the_owner_collects_its_children() {
    let op = start(CHILDREN).await;
    op.create("w", json!({})).await;
    op.create("other", json!({})).await;
    reconciled(&op, "w", 1).await;
    reconciled(&op, "other", 1).await;
    let secrets: Api<Secret> = Api::namespaced(op.client.clone(), "default");
    for name in ["w-config", "other-config"] {
        config_map(&op, name).await;
    }
    secrets.get("w-token").await.expect("w's Secret");
    let others = (
        op.config_maps().get("other-config").await.expect("get").uid(),
        secrets.get("other-token").await.expect("get").uid(),
    );

    op.widgets().delete("w", &DeleteParams::default()).await.expect("delete");
    eventually(20, "w is gone", || async { op.widget("w").await.is_none().then_some(()) }).await;
    // No finalizer: the controller has nothing to do; kubesim's garbage collector follows
    // the owner references.
    config_map_gone(&op, "w-config").await;
    eventually(20, "the Secret w-token is gone", || async {
        secrets.get_opt("w-token").await.ok().and_then(|o| o.is_none().then_some(()))
    })
    .await;
    assert_eq!(
        (
            op.config_maps().get("other-config").await.expect("another owner's child stays").uid(),
            secrets.get("other-token").await.expect("another owner's child stays").uid(),
        ),
        others
    );
    assert_eq!(op.finalizes(), 0, "no finalize handler, none called");
    op.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finalize_patches_before_the_finalizer_goes() {
    let op = start(
        r#"operator(widget)
          // finalize patches a ConfigMap it does not own: that takes a grant.
          .permission({ apiGroups: [""], resources: ["configmaps"], verbs: ["patch"] })
          .finalize((cr) => {
            patch(ConfigMap({ metadata: { name: "log" }, data: { [cr.metadata.name]: "finalized" } }));
          })
          .reconcile((cr) => { setStatus(cr, { phase: "Ready" }); });"#,
    )
    .await;
    let log: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "log"}, "data": {"keep": "me"}}))
        .expect("configmap");
    op.config_maps().create(&PostParams::default(), &log).await.expect("created");
    let finalizer = format!("widgets.{}/finalizer", common::GROUP);
    op.create("w", json!({})).await;
    let w = reconciled(&op, "w", 1).await;
    assert_eq!(w.finalizers(), std::slice::from_ref(&finalizer), "added before the first reconcile");
    assert_eq!(op.finalizes(), 0);

    // Every change of w from here on, to tell when the finalizer went.
    let mut changes = op
        .widgets()
        .watch(&WatchParams::default().fields("metadata.name=w"), &w.resource_version().expect("rv"))
        .await
        .expect("watch")
        .boxed();
    op.widgets().delete("w", &DeleteParams::default()).await.expect("delete");
    let released = tokio::time::timeout(Duration::from_secs(20), async {
        while let Some(event) = changes.try_next().await.expect("watch event") {
            match event {
                WatchEvent::Modified(o) if !o.finalizers().contains(&finalizer) => return o,
                WatchEvent::Deleted(o) => return o,
                _ => {}
            }
        }
        panic!("the watch ended before w lost its finalizer");
    })
    .await
    .expect("the finalizer is removed");
    eventually(20, "w is gone", || async { op.widget("w").await.is_none().then_some(()) }).await;

    assert!(op.finalizes() >= 1);
    let log = op.config_maps().get("log").await.expect("log");
    assert_eq!((data(&log, "w"), data(&log, "keep")), (Some("finalized"), Some("me")), "merged in");
    assert!(log.owner_references().is_empty(), "a patched object gets no owner");
    assert!(
        rv(&log) < rv(&released),
        "the patch (resourceVersion {}) lands before the finalizer goes ({})",
        rv(&log),
        rv(&released)
    );
    op.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_reconciles_again_without_a_change_and_writes_nothing() {
    let op = start_on(
        &common::sim().await,
        r#"operator(widget).every("1s").reconcile((cr) => { setStatus(cr, { phase: "Ready" }); });"#,
        Launch { serve: true, ..Launch::default() },
    )
    .await;
    op.create("w", json!({})).await;
    let w = reconciled(&op, "w", 1).await;
    // Ticks are reconciles (here skipped ones: nothing the handler read changed; see
    // tests/skip.rs), counted like any other.
    let ticks = || op.metric("controller_runtime_reconcile_total{controller=\"widget\",result=\"success\"}");
    let (before, since) = (ticks().await, Instant::now());
    eventually(10, "two periodic reconciles", || async { (ticks().await >= before + 2.0).then_some(()) })
        .await;
    let took = since.elapsed();
    // Two ticks a second apart, not a loop: the first may come at once, the second a period later.
    assert!(took >= Duration::from_millis(900), "two reconciles within {took:?}");
    let now = op.widget("w").await.expect("w");
    assert_eq!(
        now.resource_version(),
        w.resource_version(),
        "a tick that changes nothing writes nothing: {:#}",
        now.data
    );
    op.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_script_call_is_counted_with_where_it_ran() {
    let op = start_on(
        &common::sim().await,
        r#"operator(widget).reconcile((cr) => { setStatus(cr, { phase: "Ready" }); });"#,
        Launch { serve: true, ..Launch::default() },
    )
    .await;
    op.create("w", json!({})).await;
    reconciled(&op, "w", 1).await;
    let addr = op.metrics_addr.expect("served");
    let body = http_get(addr, "/metrics").await.map(|(_, b)| b).unwrap_or_default();
    let calls =
        sample(&body, r#"ctop_script_duration_seconds_count{controller="widget",handler="reconcile"}"#);
    let by_path = |path: &str| {
        let line =
            format!(r#"ctop_script_calls_total{{controller="widget",handler="reconcile",path="{path}"}}"#);
        sample(&body, &line).unwrap_or(0.0)
    };
    let counted = by_path("inline") + by_path("blocking") + by_path("restarted");
    assert!(calls.is_some_and(|n| n >= 1.0), "the reconcile was timed:\n{body}");
    assert_eq!(Some(counted), calls, "each call is counted once, on one path:\n{body}");
    op.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_start_runs_once_after_the_caches_sync_and_applies_unowned_objects() {
    let sim = common::sim().await;
    // Here before the operator: onStart sees it only if the caches are filled first.
    let seed: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "seed"}, "data": {"v": "before"}}))
            .expect("configmap");
    Api::<ConfigMap>::namespaced(common::client(&sim).await, "default")
        .create(&PostParams::default(), &seed)
        .await
        .expect("created");
    let op = start_on(
        &sim,
        r#"operator(widget).manages(ConfigMap)
          .onStart(() => {
            const seen = getObserved(ConfigMap, "seed", "default")?.data?.v ?? "unseen";
            apply(ConfigMap({ metadata: { name: "started", namespace: "default" }, data: { seen } }));
          })
          .reconcile((cr) => {
            apply(ConfigMap({ metadata: { name: `${cr.metadata.name}-child` } }));
            setStatus(cr, { phase: "Ready" });
          });"#,
        Launch::default(),
    )
    .await;
    let started = config_map(&op, "started").await;
    assert_eq!(data(&started, "seen"), Some("before"), "onStart ran on synced caches");
    assert!(started.owner_references().is_empty(), "what onStart applies has no owner");
    assert!(
        !started.labels().contains_key(PART_OF_LABEL),
        "nor belongs to an ApplySet: {:?}",
        started.labels()
    );
    let managers: Vec<_> = started.managed_fields().iter().filter_map(|m| m.manager.as_deref()).collect();
    assert_eq!(managers, ["ctop-test"], "server-side applied by the operator");
    assert_eq!(op.on_starts(), 1);

    // CRs come and go; onStart does not run again.
    op.create("a", json!({})).await;
    reconciled(&op, "a", 1).await;
    op.widgets().delete("a", &DeleteParams::default()).await.expect("delete");
    eventually(20, "a is gone", || async { op.widget("a").await.is_none().then_some(()) }).await;
    config_map_gone(&op, "a-child").await;
    op.create("b", json!({})).await;
    reconciled(&op, "b", 1).await;
    config_map(&op, "b-child").await;
    assert_eq!(op.on_starts(), 1, "onStart ran once");
    assert_eq!(
        op.config_maps().get("started").await.expect("started").resource_version(),
        started.resource_version(),
        "and its object was not written again"
    );
    op.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watches_map_selected_changes_that_pass_the_predicate() {
    let op = start(
        r#"operator(widget)
          .watches(ConfigMap, (cm) => cm.metadata.labels?.widget, {
            labelSelector: { watched: "yes" },
            predicate: "AnnotationChanged",
          })
          .reconcile((cr) => {
            const cm = getObserved(ConfigMap, `${cr.metadata.name}-settings`);
            setStatus(cr, { a: cm?.metadata.annotations?.note ?? "none", b: cm?.data?.v ?? "none" });
          });"#,
    )
    .await;
    op.create("w", json!({})).await;
    op.create("other", json!({})).await;
    for name in ["w", "other"] {
        let o = reconciled(&op, name, 1).await;
        assert_eq!(o.data["status"]["a"], "none");
    }
    let status = |want: &'static str| {
        let op = &op;
        async move {
            eventually(20, &format!("w's status.a is {want}"), || async {
                op.widget("w").await.filter(|o| o.data["status"]["a"] == want)
            })
            .await
        }
    };

    // A selected ConfigMap appears: the mapper names w, whose reconcile reads it.
    let (reconciles, maps) = (op.reconciles(), op.maps());
    let settings: ConfigMap = serde_json::from_value(json!({"metadata": {
        "name": "w-settings", "labels": {"watched": "yes", "widget": "w"}, "annotations": {"note": "1"},
    }, "data": {"v": "1"}}))
    .expect("configmap");
    op.config_maps().create(&PostParams::default(), &settings).await.expect("created");
    let w = status("1").await;
    assert_eq!(w.data["status"]["b"], "1");
    assert_eq!((op.reconciles(), op.maps()), (reconciles + 1, maps + 1), "w alone reconciled");

    // A data change (the predicate wants annotations) and an unselected ConfigMap naming w:
    // neither reaches the mapper. Then an annotation change does; its events come in
    // order on one watch, so by the time it is mapped the two before were filtered out.
    let (reconciles, maps) = (op.reconciles(), op.maps());
    op.config_maps()
        .patch("w-settings", &PatchParams::default(), &Patch::Merge(json!({"data": {"v": "2"}})))
        .await
        .expect("patched");
    let unselected: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "unselected", "labels": {"widget": "w"}}}))
            .expect("configmap");
    op.config_maps().create(&PostParams::default(), &unselected).await.expect("created");
    op.config_maps()
        .patch(
            "w-settings",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {"note": "2"}}})),
        )
        .await
        .expect("patched");
    let w = status("2").await;
    assert_eq!(w.data["status"]["b"], "2", "the reconcile reads the cache, which has every change");
    assert_eq!(op.maps(), maps + 1, "the mapper saw the annotation change only");
    assert_eq!(op.reconciles(), reconciles + 1, "one reconcile, of w");
    let other = op.widget("other").await.expect("other");
    assert_eq!(observed_generation(&other), Some(1));
    assert_eq!(other.data["status"]["a"], "none", "other was never named");
    op.stop().await;
}

/// Each replica writes its name into `status.b`.
fn replica(name: &str) -> String {
    format!(r#"operator(widget).reconcile((cr) => {{ setStatus(cr, {{ b: "{name}" }}); }});"#)
}

/// `leader_election_master_status` of `op` (0 or 1), once its metrics are served.
async fn leading(op: &Operator) -> f64 {
    let addr = op.metrics_addr.expect("metrics served");
    eventually(10, "the metrics", || async {
        let (code, body) = http_get(addr, "/metrics").await?;
        (code == 200).then_some(())?;
        sample(&body, "leader_election_master_status{name=\"ctop-test-leader\"}")
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_leader_reconciles_and_a_graceful_stop_hands_over_at_once() {
    let timing = LeaseTiming {
        lease_duration: Duration::from_secs(3),
        renew_deadline: Duration::from_secs(2),
        retry_period: Duration::from_millis(200),
    };
    let how = Launch { leader_elect: true, lease: timing, serve: true, ..Launch::default() };
    let sim = common::sim().await;
    let leases: Api<Lease> = Api::namespaced(common::client(&sim).await, "default");
    let lease = || async {
        leases
            .get_opt("ctop-test-leader")
            .await
            .ok()
            .flatten()
            .and_then(|l| l.spec)
            .filter(|s| s.holder_identity.as_deref().is_some_and(|h| !h.is_empty()))
    };

    let a = start_on(&sim, &replica("a"), how).await;
    let held = eventually(20, "a holds the Lease", lease).await;
    a.create("w", json!({})).await;
    let w = reconciled(&a, "w", 1).await;
    assert_eq!(w.data["status"]["b"], "a");

    let b = start_on(&sim, &replica("b"), how).await;
    let b_health = b.health_addr.expect("health served");
    eventually(20, "b's caches are synced", || async {
        http_get(b_health, "/readyz").await.filter(|(code, _)| *code == 200)
    })
    .await;
    assert_eq!(leading(&a).await, 1.0, "a leads");
    assert_eq!(
        leading(&b).await,
        0.0,
        "b stands by while a holds the Lease (holder {:?})",
        held.holder_identity
    );
    // A Widget created while both run is reconciled by a alone.
    a.create("w2", json!({})).await;
    let w2 = reconciled(&a, "w2", 1).await;
    assert_eq!(w2.data["status"]["b"], "a");
    assert_eq!(b.reconciles(), 0, "the standby called no handler");

    // A graceful stop releases the Lease: b takes it on its next try and reconciles every
    // Widget at once, not when the requeue it gave each while standing by comes due (5 s),
    // nor when a's Lease would have expired (3 s).
    let stopped = Instant::now();
    a.stop().await;
    for name in ["w", "w2"] {
        eventually(10, &format!("b reconciles {name}"), || async {
            b.widget(name).await.filter(|o| o.data["status"]["b"] == "b")
        })
        .await;
    }
    let took = stopped.elapsed();
    assert!(took < Duration::from_secs(2), "b reconciled {took:?} after a stopped");
    let now = eventually(5, "the Lease is held", lease).await;
    assert_eq!(now.lease_transitions, held.lease_transitions.map(|t| t + 1), "one hand-over");
    assert_eq!(leading(&b).await, 1.0, "b leads");
    b.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_does_not_reconcile_again_when_it_renews_its_lease() {
    let timing = LeaseTiming {
        lease_duration: Duration::from_secs(3),
        renew_deadline: Duration::from_secs(2),
        retry_period: Duration::from_millis(200),
    };
    let sim = common::sim().await;
    let leases: Api<Lease> = Api::namespaced(common::client(&sim).await, "default");
    let renewed = || async {
        let lease = leases.get_opt("ctop-test-leader").await.ok().flatten()?;
        lease.spec?.renew_time
    };
    let op = start_on(&sim, &replica("a"), Launch { leader_elect: true, lease: timing, ..Launch::default() })
        .await;
    op.create("w", json!({})).await;
    reconciled(&op, "w", 1).await;
    // Once the start (and the win, which reconciles everything) is a renewal behind us,
    // three more renewals, a retry period apart, with nothing changing in between.
    let mut last = eventually(10, "the Lease is held", renewed).await;
    let mut before = None;
    for n in 0..=3 {
        last = eventually(10, &format!("renewal {n}"), || async { renewed().await.filter(|t| *t != last) })
            .await;
        before = before.or(Some(op.reconciles()));
    }
    let before = before.expect("counted after the first renewal");
    assert_eq!(
        op.reconciles(),
        before,
        "renewing the Lease it already holds is not winning it: no reconcile of every object"
    );
    op.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn objects_there_before_the_operator_starts_are_all_reconciled() {
    let sim = common::sim().await;
    let first = start_on(
        &sim,
        r#"operator(widget).reconcile((cr) => { setStatus(cr, { b: "first" }); });"#,
        Launch::default(),
    )
    .await;
    let names: Vec<String> = (0..300).map(|i| format!("w{i:03}")).collect();
    for n in &names {
        first.create(n, json!({})).await;
    }
    eventually(30, "every widget reconciled by the first operator", || async {
        let list = first.widgets().list(&Default::default()).await.ok()?;
        (list.items.iter().filter(|w| w.data["status"]["b"] == "first").count() == names.len()).then_some(())
    })
    .await;
    first.stop().await;
    // A new operator's first list holds all of them: each is reconciled (none is looked up
    // before its cache has it, and dropped).
    let second = start_on(
        &sim,
        r#"operator(widget).reconcile((cr) => { setStatus(cr, { b: "second" }); });"#,
        Launch::default(),
    )
    .await;
    eventually(30, "every widget reconciled by the second operator", || async {
        let list = second.widgets().list(&Default::default()).await.ok()?;
        (list.items.iter().filter(|w| w.data["status"]["b"] == "second").count() == names.len()).then_some(())
    })
    .await;
    second.stop().await;
}

//! Reconciles skipped when nothing the handler read changed (`src/fingerprint.rs`): a
//! periodic tick with nothing changed calls no handler and writes nothing; a change to the
//! object, to anything the handler read (found, missing or listed), or to a child it
//! applied runs it again. Each runs a script in-process against an in-process kubesim.

mod common;

use common::{Launch, Operator, eventually, observed_generation, start_on};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::ResourceExt as _;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::json;

const SKIPPED: &str = "ctop_reconcile_skipped_total{controller=\"widget\"}";

async fn start(body: &str) -> Operator {
    start_on(&common::sim().await, body, Launch { serve: true, ..Launch::default() }).await
}

/// Wait until `n` more reconciles were skipped than now.
async fn skipped_more(op: &Operator, n: f64) {
    let from = op.metric(SKIPPED).await;
    eventually(20, &format!("{n} more skipped reconciles"), || async {
        (op.metric(SKIPPED).await >= from + n).then_some(())
    })
    .await;
}

async fn config_map(op: &Operator, name: &str, v: &str) {
    let api: Api<ConfigMap> = Api::namespaced(op.client.clone(), "default");
    let cm: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": name}, "data": {"v": v}})).expect("configmap");
    if api.get_opt(name).await.expect("get").is_some() {
        api.patch(name, &PatchParams::default(), &Patch::Merge(json!({"data": {"v": v}})))
            .await
            .expect("patched");
    } else {
        api.create(&PostParams::default(), &cm).await.expect("created");
    }
}

async fn token(op: &Operator) -> Option<String> {
    let api: Api<Secret> = Api::namespaced(op.client.clone(), "default");
    let s = api.get_opt("w-token").await.ok().flatten()?;
    let data = s.data?.remove("v")?;
    String::from_utf8(data.0).ok()
}

/// Wait until the child Secret's `v` is `want`.
async fn token_becomes(op: &Operator, want: &str, what: &str) {
    eventually(20, what, || async { (token(op).await.as_deref() == Some(want)).then_some(()) }).await;
}

/// Wait until `w` is reconciled at its first generation.
async fn first_reconcile(op: &Operator) {
    eventually(20, "the first reconcile", || async {
        op.widget("w").await.filter(|o| observed_generation(o) == Some(1))
    })
    .await;
}

const READS_A_CONFIGMAP: &str = r#"operator(widget).reads(ConfigMap).manages(Secret).every("100ms")
  .reconcile((cr) => {
    const v = getObserved(ConfigMap, "settings", cr.metadata.namespace)?.data?.v ?? "missing";
    apply(Secret({ metadata: { name: `${cr.metadata.name}-token` }, stringData: { v } }));
    setStatus(cr, { phase: "Ready" });
  });"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tick_with_nothing_changed_calls_no_handler_and_writes_nothing() {
    let op = start(READS_A_CONFIGMAP).await;
    op.create("w", json!({})).await;
    first_reconcile(&op).await;
    skipped_more(&op, 1.0).await;
    let (calls, w) = (op.reconciles(), op.widget("w").await.expect("w"));
    skipped_more(&op, 5.0).await;
    assert_eq!(op.reconciles(), calls, "ticks with nothing changed call no handler");
    let now = op.widget("w").await.expect("w");
    assert_eq!(now.resource_version(), w.resource_version(), "and write nothing");
    let status = common::http_get(op.health_addr.expect("served"), "/status").await.expect("/status").1;
    let status: serde_json::Value = serde_json::from_str(&status).expect("json");
    let c = &status["controllers"][0];
    assert!(
        c["skipped"].as_u64() >= Some(6) && c["reconciled"].as_u64() > c["skipped"].as_u64(),
        "{status:#}"
    );
    op.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_the_handler_read_changing_runs_it_again_found_or_missing() {
    let op = start(READS_A_CONFIGMAP).await;
    op.create("w", json!({})).await;
    token_becomes(&op, "missing", "the child, made without the ConfigMap").await;
    skipped_more(&op, 2.0).await;
    // A read kind triggers nothing; the next tick sees that a lookup that missed now finds.
    config_map(&op, "settings", "one").await;
    token_becomes(&op, "one", "the child from the new ConfigMap").await;
    skipped_more(&op, 2.0).await;
    config_map(&op, "settings", "two").await;
    token_becomes(&op, "two", "the child from the changed ConfigMap").await;
    op.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_changed_or_deleted_runs_the_handler_again() {
    let op = start(READS_A_CONFIGMAP).await;
    op.create("w", json!({})).await;
    eventually(20, "the child", || async { token(&op).await }).await;
    skipped_more(&op, 2.0).await;
    let secrets: Api<Secret> = Api::namespaced(op.client.clone(), "default");
    let calls = op.reconciles();
    secrets.delete("w-token", &DeleteParams::default()).await.expect("deleted");
    eventually(20, "the child back", || async {
        secrets.get_opt("w-token").await.ok().flatten().filter(|s| s.metadata.deletion_timestamp.is_none())
    })
    .await;
    assert!(op.reconciles() > calls, "the handler ran again");
    skipped_more(&op, 2.0).await;
    // Someone else's edit of the child: applied back over.
    secrets
        .patch("w-token", &PatchParams::default(), &Patch::Merge(json!({"stringData": {"v": "edited"}})))
        .await
        .expect("edited");
    token_becomes(&op, "missing", "the edit undone").await;
    op.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_list_that_changes_runs_the_handler_again() {
    let op = start(
        r#"import { listObserved } from "ctop";
        operator(widget).reads(ConfigMap).every("100ms").reconcile((cr) => {
          const names = listObserved(ConfigMap).map((c) => c.metadata.name).sort().join(",");
          setStatus(cr, { a: names });
        });"#,
    )
    .await;
    op.create("w", json!({})).await;
    eventually(20, "the first status", || async {
        op.widget("w").await.filter(|o| o.data["status"]["a"] == "")
    })
    .await;
    skipped_more(&op, 2.0).await;
    config_map(&op, "x", "1").await;
    eventually(20, "the list with x", || async {
        op.widget("w").await.filter(|o| o.data["status"]["a"] == "x")
    })
    .await;
    skipped_more(&op, 2.0).await;
    config_map(&op, "x", "2").await;
    config_map(&op, "y", "1").await;
    eventually(20, "the list with y", || async {
        op.widget("w").await.filter(|o| o.data["status"]["a"] == "x,y")
    })
    .await;
    op.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_with_always_runs_the_handler_on_every_tick() {
    let op = start(
        r#"operator(widget).every("100ms", { always: true }).reconcile((cr) => { setStatus(cr, { phase: "Ready" }); });"#,
    )
    .await;
    op.create("w", json!({})).await;
    first_reconcile(&op).await;
    let calls = op.reconciles();
    eventually(20, "five more handler calls", || async { (op.reconciles() >= calls + 5).then_some(()) })
        .await;
    assert_eq!(op.metric(SKIPPED).await, 0.0);
    op.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handler_that_reads_the_clock_runs_on_every_tick() {
    let op = start(
        r#"operator(widget).every("100ms").reconcile((cr) => {
          const late = Date.now() > Date.parse("2020-01-01T00:00:00Z");
          setStatus(cr, { phase: late ? "Ready" : "Early" });
        });"#,
    )
    .await;
    op.create("w", json!({})).await;
    first_reconcile(&op).await;
    let calls = op.reconciles();
    eventually(20, "five more handler calls", || async { (op.reconciles() >= calls + 5).then_some(()) })
        .await;
    assert_eq!(op.metric(SKIPPED).await, 0.0, "a nondeterministic run is never skipped");
    op.stop().await;
}

//! The `Ready` condition ctop keeps on each primary from its children's health, and the
//! reconcile history the health port serves: in-process, against a kubesim that runs
//! workloads (Deployments get ReplicaSets and Pods; pod stages make them fail or never
//! become ready).

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{Launch, condition, eventually, http_get, start_on};
use ctop_controller::history::{ChildAction, Ended, Reconcile, Trigger};
use ctop_controller::inspect::api::HistoryAnswer;
use ctop_kubesim::{Config, KubeSim, PodStage, WorkloadConfig};
use kube::api::{Api, DeleteParams, ListParams};
use serde_json::{Value, json};

/// A Widget manages a Deployment of `spec.names.length || 2` replicas labelled with its
/// name, and a ConfigMap; it sets no `Ready` of its own.
const DEPLOYS: &str = r#"
import { Deployment } from "ctop";
operator(widget).manages(Deployment, ConfigMap).reconcile((cr) => {
  const name = cr.metadata.name;
  const labels = { app: name };
  apply(ConfigMap({ metadata: { name }, data: { mode: cr.spec.mode } }));
  apply(Deployment({
    metadata: { name, labels },
    spec: {
      replicas: 2,
      selector: { matchLabels: labels },
      template: { metadata: { labels }, spec: { containers: [{ name: "web", image: "nginx" }] } },
    },
  }));
  setStatus(cr, { phase: "Applied" });
});"#;

async fn sim() -> Arc<KubeSim> {
    let workloads = WorkloadConfig { pod_start: Duration::from_millis(100), ..WorkloadConfig::default() };
    let config = Config { workloads: Some(workloads), ..Config::default() };
    Arc::new(KubeSim::start(config).await.expect("kubesim starts"))
}

/// The `Ready` condition of Widget `name` once `f` accepts it.
async fn ready_when(op: &common::Operator, name: &str, what: &str, f: impl Fn(&Value) -> bool) -> Value {
    eventually(30, what, || async {
        let o = op.widget(name).await?;
        condition(&o, "Ready").filter(|c| f(c)).cloned()
    })
    .await
}

/// Pod stages from now on; the Pods they pick start again under them.
async fn stage(op: &common::Operator, stages: &[&str]) {
    let stages: Vec<PodStage> = stages.iter().map(|s| s.parse().expect("a stage")).collect();
    op.sim.faults().set_pod_stages(stages);
    let pods: Api<k8s_openapi::api::core::v1::Pod> = Api::namespaced(op.client.clone(), "default");
    pods.delete_collection(&DeleteParams::background(), &ListParams::default().labels("app=shop"))
        .await
        .expect("pods deleted");
}

async fn history(op: &common::Operator, name: &str) -> Option<HistoryAnswer> {
    let addr = op.health_addr.expect("served");
    let (code, body) =
        http_get(addr, &format!("/api/history?controller=widget&namespace=default&name={name}")).await?;
    (code == 200).then(|| serde_json::from_str(&body).expect("history JSON"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ready_names_the_blocking_child_and_follows_its_pods() {
    let sim = sim().await;
    let op = start_on(&sim, DEPLOYS, Launch { serve: true, ..Launch::default() }).await;
    op.create("shop", json!({})).await;

    let ready = ready_when(&op, "shop", "Ready True", |c| c["status"] == "True").await;
    assert_eq!(ready["reason"], "ChildrenCurrent", "{ready}");
    assert_eq!(ready["message"], "all 2 children are current", "{ready}");

    // Pods that never become ready: the Deployment is InProgress, and Ready says so.
    let staged = Instant::now();
    stage(&op, &["app=shop:never-ready"]).await;
    let blocked =
        ready_when(&op, "shop", "Ready False naming the Deployment", |c| c["status"] == "False").await;
    let took = staged.elapsed();
    assert_eq!(blocked["reason"], "ChildInProgress", "{blocked}");
    let message = blocked["message"].as_str().unwrap_or_default();
    assert!(message.starts_with("Deployment shop: "), "names the Deployment: {message}");
    assert!(message.contains("of 2 replicas available"), "and why: {message}");
    tracing::info!(?took, "Ready turned False after the stage");

    // They recover: Ready turns True again, by itself (no change of the Widget).
    stage(&op, &[]).await;
    ready_when(&op, "shop", "Ready True again", |c| c["status"] == "True").await;

    // Pods that fail: still the Deployment that blocks.
    stage(&op, &["app=shop:fail"]).await;
    let failed = ready_when(&op, "shop", "Ready False with failing Pods", |c| c["status"] == "False").await;
    assert!(failed["message"].as_str().is_some_and(|m| m.starts_with("Deployment shop: ")), "{failed}");

    // The history tells the story: the first reconcile created both children, later ones
    // were queued by the Deployment's changes and turned Ready.
    let answer = eventually(10, "a history", || history(&op, "shop")).await;
    let first: &Reconcile = answer.history.first().expect("a reconcile");
    assert!(
        matches!(
            first.triggers.first(),
            Some(Trigger::Changed { generation: Some(1), .. }) | Some(Trigger::Started)
        ),
        "{:?}",
        first.triggers
    );
    let created: Vec<_> =
        first.children.iter().filter(|c| c.action == ChildAction::Created).map(|c| c.kind.as_str()).collect();
    assert!(created.contains(&"apps/v1/Deployment") && created.contains(&"v1/ConfigMap"), "{created:?}");
    assert!(matches!(first.ended, Ended::Succeeded { .. }), "{:?}", first.ended);
    let by_child = answer.history.iter().any(|r| {
        r.triggers.iter().any(|t| matches!(t, Trigger::Child { kind, name, .. } if kind == "apps/v1/Deployment" && name == "shop"))
    });
    assert!(by_child, "a reconcile queued by the Deployment: {:#?}", answer.history);
    let turned =
        answer.history.iter().flat_map(|r| &r.status).any(|f| {
            f.path == "conditions[Ready]" && f.after.as_ref().is_some_and(|c| c["status"] == "False")
        });
    assert!(turned, "a reconcile turned Ready False: {:#?}", answer.history);
    assert!(
        answer.history.len() <= ctop_controller::history::DEFAULT_KEPT,
        "bounded: {}",
        answer.history.len()
    );

    // Forgotten with the object.
    op.widgets().delete("shop", &DeleteParams::default()).await.expect("deleted");
    eventually(30, "the history forgotten", || async {
        let addr = op.health_addr.expect("served");
        let (code, _) = http_get(addr, "/api/history?controller=widget&namespace=default&name=shop").await?;
        (code == 404).then_some(())
    })
    .await;
    op.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_script_that_sets_ready_keeps_its_own() {
    let sim = sim().await;
    let op = start_on(
        &sim,
        r#"operator(widget).manages(ConfigMap).reconcile((cr) => {
          apply(ConfigMap({ metadata: { name: cr.metadata.name }, data: {} }));
          setCondition(cr, { type: "Ready", status: false, reason: "Mine", message: "the script decides" });
        });"#,
        Launch::default(),
    )
    .await;
    op.create("own", json!({})).await;
    let ready = ready_when(&op, "own", "the script's Ready", |c| c["reason"] == "Mine").await;
    assert_eq!(ready["status"], "False");
    // A later reconcile (a spec change) keeps it the script's.
    op.set_spec("own", json!({"mode": "again"})).await;
    eventually(30, "the second reconcile", || async {
        let o = op.widget("own").await?;
        (common::observed_generation(&o) == Some(2)).then_some(())
    })
    .await;
    let o = op.widget("own").await.expect("exists");
    assert_eq!(condition(&o, "Ready").map(|c| c["reason"].clone()), Some(json!("Mine")));
    op.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_history_off_nothing_is_kept_and_ready_still_works() {
    let sim = sim().await;
    let op = start_on(&sim, DEPLOYS, Launch { serve: true, history: Some(0), ..Launch::default() }).await;
    op.create("shop", json!({})).await;
    ready_when(&op, "shop", "Ready True", |c| c["status"] == "True").await;
    let answer = history(&op, "shop").await.expect("the object is known");
    assert!(answer.history.is_empty(), "no records: {:?}", answer.history);
    assert_eq!(answer.skipped, 0);
    let addr = op.health_addr.expect("served");
    let (code, body) = http_get(addr, "/api/objects").await.expect("answers");
    assert_eq!(code, 200);
    let overview: Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(overview["controllers"][0]["history"], 0, "{overview}");
    assert_eq!(overview["controllers"][0]["objects"][0]["ready"]["status"], "True", "{overview}");
    op.stop().await;
}

//! What a controller remembers per object goes with the object: thousands of Widgets
//! created, reconciled (children, status, failures, a finalizer) and deleted leave nothing
//! behind in any of its memories (`ctop_remembered_objects`).

mod common;

use common::{Launch, eventually, sim, start_on};
use futures::StreamExt as _;
use kube::api::{DeleteParams, ListParams, PostParams};
use serde_json::json;

/// Widgets created and deleted by each test.
const WIDGETS: usize = 1_000;

/// The operator: a child and a status for each widget, or a failure for one in ten;
/// `finalize` is `.finalize((cr) => Result.ok())` or nothing.
fn script(finalize: &str) -> String {
    format!(
        r#"
operator(widget)
  .manages(ConfigMap)
  {finalize}
  .reconcile((cr) => {{
    apply(ConfigMap({{ metadata: {{ name: cr.metadata.name }}, data: {{ mode: cr.spec.mode }} }}));
    if (cr.spec.mode === "fail") return Result.error("failing on purpose");
    setStatus(cr, {{ phase: "Ready" }});
    return Result.ok();
  }});
"#
    )
}

/// The three memories of the controller `widget`.
const MEMORIES: [&str; 3] = ["objects", "applied", "status"];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn objects_deleted_at_once_leave_nothing_behind() {
    churn(&script("")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn objects_finalized_leave_nothing_behind() {
    churn(&script(".finalize((cr) => Result.ok())")).await;
}

/// Create [`WIDGETS`] widgets under the operator `script`, wait until they are
/// reconciled, delete them, and wait until every memory of the controller is empty.
async fn churn(script: &str) {
    let op = start_on(&sim().await, script, Launch { serve: true, ..Launch::default() }).await;
    let widgets = op.widgets();
    let names: Vec<String> = (0..WIDGETS).map(|i| format!("w{i}")).collect();
    // The CRD is served once the first create goes through.
    op.create("w0", json!({})).await;
    futures::stream::iter(names.iter().skip(1).enumerate())
        .for_each_concurrent(32, |(i, name)| {
            let widgets = widgets.clone();
            async move {
                let mode = if i % 10 == 0 { "fail" } else { "ok" };
                let obj = serde_json::from_value(json!({
                    "apiVersion": "test.ctop.dev/v1", "kind": "Widget",
                    "metadata": {"name": name, "namespace": "default"}, "spec": {"mode": mode},
                }))
                .expect("widget");
                widgets.create(&PostParams::default(), &obj).await.expect("created");
            }
        })
        .await;
    let failing = names.iter().skip(1).enumerate().filter(|(i, _)| i % 10 == 0).count();
    eventually(300, "every widget reconciled", || async {
        let list = widgets.list(&ListParams::default()).await.ok()?;
        let ready = list.items.iter().filter(|w| w.data["status"]["phase"] == "Ready").count();
        (ready == WIDGETS - failing).then_some(())
    })
    .await;
    for memory in MEMORIES {
        let n =
            op.metric(&format!("ctop_remembered_objects{{controller=\"widget\",memory=\"{memory}\"}}")).await;
        assert!(n > 0.0, "{memory}: something is remembered while the widgets live");
    }

    futures::stream::iter(names.iter())
        .for_each_concurrent(32, |name| {
            let widgets = widgets.clone();
            async move {
                widgets.delete(name, &DeleteParams::default()).await.expect("deleted");
            }
        })
        .await;
    eventually(300, "every widget gone", || async {
        widgets.list(&ListParams::default()).await.ok().filter(|l| l.items.is_empty()).map(|_| ())
    })
    .await;
    for memory in MEMORIES {
        let metric = format!("ctop_remembered_objects{{controller=\"widget\",memory=\"{memory}\"}}");
        eventually(60, &format!("the {memory} memory is empty"), || async {
            (op.metric(&metric).await == 0.0).then_some(())
        })
        .await;
    }
    op.stop().await;
}

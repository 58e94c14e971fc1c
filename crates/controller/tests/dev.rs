//! `ctop dev`'s pieces in-process: sample files applied (a bad file reported, the others
//! applied), the live summary, and the reload loop (a hot swap keeps the controllers, a
//! script that watches something else restarts them, a failed load keeps the running one).

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{eventually, load, sim, widget_resource};
use ctop_controller::dev::{
    DevOptions, DevSource, LoadError, Reload, SampleError, Summary, apply_samples, run_dev,
};
use ctop_core::Handlers;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, DynamicObject, PostParams};
use serde_json::{Value, json};

fn crds(handlers: &Arc<dyn Handlers>) -> Vec<Value> {
    handlers
        .spec()
        .resources
        .iter()
        .map(|r| ctop_manifests::crd(r, &serde_json::Map::new()).expect("crd"))
        .collect()
}

#[tokio::test]
async fn samples_are_applied_file_by_file_and_a_bad_file_is_reported() {
    let sim = sim().await;
    let client = common::client(&sim).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let write = |name: &str, text: &str| std::fs::write(dir.path().join(name), text).expect("write sample");
    write(
        "a.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: one}\ndata: {on: off}\n---\n\
         apiVersion: v1\nkind: Secret\nmetadata: {name: two, namespace: kube-system}\n",
    );
    write("b.yaml", "apiVersion: example.com/v1\nkind: Nope\nmetadata: {name: x}\n");
    write("c.yml", "apiVersion: v1\nkind: [\n");
    write(
        "d.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: three}\n---\napiVersion: v1\nkind: ConfigMap\n",
    );
    write("notes.txt", "not a sample");

    let report = apply_samples(&client, dir.path(), "ctop-dev").await;
    assert_eq!(report.applied, ["ConfigMap one", "Secret two", "ConfigMap three"]);
    let failed: Vec<(String, &SampleError)> = report
        .failed
        .iter()
        .map(|(p, e)| (p.file_name().unwrap_or_default().to_string_lossy().into_owned(), e))
        .collect();
    assert_eq!(failed.len(), 3, "{failed:?}");
    assert!(matches!(failed[0], (ref f, SampleError::NotServed { .. }) if f == "b.yaml"), "{failed:?}");
    assert!(matches!(failed[1], (ref f, SampleError::Yaml(_)) if f == "c.yml"), "{failed:?}");
    assert!(
        matches!(failed[2], (ref f, SampleError::NotAnObject { index: 2, .. }) if f == "d.yaml"),
        "{failed:?}"
    );
    let shown = ctop_core::Chain(&failed[0].1).to_string();
    assert!(shown.starts_with("example.com/v1/Nope is not served: "), "{shown}");

    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let one = cms.get("one").await.expect("the sample without a namespace lands in default");
    let data = one.data.unwrap_or_default();
    assert_eq!(data.get("on").map(String::as_str), Some("off"), "YAML 1.2: on/off stay strings");
    let secrets: Api<k8s_openapi::api::core::v1::Secret> = Api::namespaced(client.clone(), "kube-system");
    secrets.get("two").await.expect("the sample's own namespace is kept");

    let missing = apply_samples(&client, &dir.path().join("none"), "ctop-dev").await;
    assert!(missing.applied.is_empty() && missing.failed.is_empty());
}

/// Sets `status.phase` to `phase` (so a test can tell which script reconciled).
fn phase_script(phase: &str, manages: &str) -> String {
    format!(
        r#"operator(widget).manages({manages}).reconcile((cr) => {{
  setStatus(cr, {{ phase: "{phase}" }});
  return Result.ok();
}});"#
    )
}

#[tokio::test]
async fn the_summary_prints_a_line_when_an_object_changes() {
    let op = common::start(&phase_script("one", "ConfigMap")).await;
    op.create("w", json!({})).await;
    eventually(20, "the status", || async {
        op.widget("w").await.filter(|o| o.data["status"]["phase"] == "one")
    })
    .await;
    let (handlers, _dir) = load(&phase_script("one", "ConfigMap"));
    let mut summary = Summary::default();
    assert_eq!(summary.update(&op.client, handlers.spec()).await, ["Widget default/w: one/-, 0 children"]);
    assert!(summary.update(&op.client, handlers.spec()).await.is_empty(), "nothing changed");
    op.widgets().delete("w", &DeleteParams::default()).await.expect("delete");
    eventually(20, "the Widget is gone", || async { op.widget("w").await.is_none().then_some(()) }).await;
    assert_eq!(summary.update(&op.client, handlers.spec()).await, ["Widget default/w: deleted"]);
}

/// The next load: handlers, or why loading failed.
type Next = Result<Arc<dyn Handlers>, String>;

/// A source fed by the test: each pushed load is reported as one change.
#[derive(Clone, Default)]
struct Fed {
    pending: Arc<Mutex<Vec<Next>>>,
    activated: Arc<AtomicUsize>,
}

impl Fed {
    fn push(&self, next: Next) {
        self.pending.lock().expect("lock").push(next);
    }
}

impl DevSource for Fed {
    fn changed(&mut self) -> bool {
        !self.pending.lock().expect("lock").is_empty()
    }

    async fn load(&mut self) -> Result<Reload, LoadError> {
        let next = self.pending.lock().expect("lock").remove(0);
        let handlers = next?;
        Ok(Reload { crds: crds(&handlers), handlers })
    }

    async fn activated(&mut self, _: &Arc<dyn Handlers>) {
        self.activated.fetch_add(1, Ordering::SeqCst);
    }
}

#[tokio::test]
async fn the_dev_loop_swaps_in_place_restarts_for_new_watches_and_survives_a_bad_load() {
    let sim = sim().await;
    let client = common::client(&sim).await;
    let (first, dir) = load(&phase_script("one", "ConfigMap"));
    ctop_controller::install_crds(&client, &crds(&first), "ctop-dev").await.expect("CRDs installed");
    let kubeconfig = dir.path().join("kubeconfig");
    sim.write_kubeconfig(&kubeconfig).expect("kubeconfig");
    let options = DevOptions { poll: Duration::from_millis(50), ..DevOptions::new(kubeconfig, "ctop-dev") };
    let source = Fed::default();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(run_dev(first, source.clone(), options, async move {
        let _ = stopped.await;
    }));

    let widgets: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &widget_resource());
    let obj: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "test.ctop.dev/v1", "kind": "Widget",
        "metadata": {"name": "w", "namespace": "default"}, "spec": {},
    }))
    .expect("widget");
    widgets.create(&PostParams::default(), &obj).await.expect("create");
    let phase = |want: &'static str| {
        let widgets = widgets.clone();
        async move {
            eventually(20, &format!("phase {want}"), || async {
                widgets.get_opt("w").await.ok().flatten().filter(|o| o.data["status"]["phase"] == want)
            })
            .await;
        }
    };
    phase("one").await;

    // Same controllers: swapped in place, every object reconciles with the new handlers.
    let (two, _d2) = load(&phase_script("two", "ConfigMap"));
    source.push(Ok(two));
    phase("two").await;
    assert_eq!(source.activated.load(Ordering::SeqCst), 1);

    // A load that fails keeps the running handlers and is not activated.
    source.push(Err("operator.ct:3:1: Unexpected token".into()));
    eventually(20, "the bad load is consumed", || async {
        source.pending.lock().expect("lock").is_empty().then_some(())
    })
    .await;
    assert_eq!(source.activated.load(Ordering::SeqCst), 1);

    // Another managed kind: the controllers restart and reconcile with the new handlers.
    let (three, _d3) = load(&phase_script("three", "ConfigMap, Secret"));
    source.push(Ok(three));
    phase("three").await;
    assert_eq!(source.activated.load(Ordering::SeqCst), 2);

    let _ = stop.send(());
    tokio::time::timeout(Duration::from_secs(20), task)
        .await
        .expect("the dev loop stops on shutdown")
        .expect("the dev loop does not panic")
        .expect("the dev loop ends without error");
}

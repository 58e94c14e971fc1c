//! `.reads(kind, { metadataOnly: true })`: the controller lists and watches the kind as
//! `PartialObjectMetadata` (kubesim answers as the API server does), the script's
//! `getObserved` and `listObserved` see `apiVersion`, `kind` and `metadata` alone, and a
//! `.watches()` of the kind shares that watch, so a change of the metadata triggers the
//! reconcile it maps to.

mod common;

use common::{eventually, start};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Patch, PatchParams, PostParams};
use serde_json::json;

/// Each Widget reports what it sees of the ConfigMap `<name>-cm`: its fields (`phase`), its
/// `color` label (`a`), and its kind and whether any ConfigMap it lists has `data` (`b`).
const READER: &str = r#"
import { listObserved } from "ctop";

operator(widget)
  .reads(ConfigMap, { metadataOnly: true })
  .watches(ConfigMap, (cm) => cm.metadata.labels?.widget)
  .reconcile((w) => {
    const cm = getObserved(ConfigMap, `${w.metadata.name}-cm`);
    const all = listObserved(ConfigMap);
    setStatus(w, {
      phase: cm ? Object.keys(cm).sort().join(",") : "none",
      a: cm?.metadata.labels?.color ?? "none",
      b: cm ? `${cm.apiVersion} ${cm.kind} ${all.some((c) => c.data !== undefined) ? "with data" : "metadata only"}` : "none",
    });
  });
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_metadata_only_kind_is_seen_as_metadata_and_its_changes_trigger() {
    let op = start(READER).await;
    let cm: ConfigMap = serde_json::from_value(json!({"metadata": {
        "name": "w-cm", "labels": {"widget": "w", "color": "red"}, "annotations": {"note": "1"},
    }, "data": {"big": "x".repeat(4096)}}))
    .expect("configmap");
    op.config_maps().create(&PostParams::default(), &cm).await.expect("created");
    op.create("w", json!({})).await;
    let w = eventually(20, "w saw its ConfigMap", || async {
        op.widget("w").await.filter(|o| o.data["status"]["a"] == "red")
    })
    .await;
    assert_eq!(w.data["status"]["phase"], "apiVersion,kind,metadata", "{:?}", w.data["status"]);
    assert_eq!(w.data["status"]["b"], "v1 ConfigMap metadata only");

    // A label change reaches the mapper through the shared metadata-only watch, and the
    // reconcile it triggers reads the new labels from the cache.
    let reconciles = op.reconciles();
    op.config_maps()
        .patch(
            "w-cm",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"color": "blue"}}})),
        )
        .await
        .expect("patched");
    let w = eventually(20, "w saw the new label", || async {
        op.widget("w").await.filter(|o| o.data["status"]["a"] == "blue")
    })
    .await;
    assert_eq!(w.data["status"]["phase"], "apiVersion,kind,metadata");
    assert!(op.reconciles() > reconciles);
    op.stop().await;
}

#[test]
fn a_kind_the_controller_manages_cannot_be_metadata_only() {
    let dir = tempfile::tempdir().expect("tempdir");
    let body =
        "operator(widget).manages(ConfigMap).reads(ConfigMap, { metadataOnly: true }).reconcile(() => {});";
    std::fs::write(dir.path().join("operator.ct"), format!("{}\n{body}", common::PRELUDE)).expect("write");
    let Err(err) =
        ctop_runtime::Script::from_dir(dir.path(), "operator.ct", 1, ctop_runtime::Limits::default())
    else {
        panic!("a metadata-only managed kind was accepted");
    };
    assert!(
        err.to_string().contains(
            ".reads(ConfigMap, { metadataOnly: true }): ConfigMap is managed by this operator \
             (the Ready condition reads its children's status), so its objects are cached in full; drop metadataOnly"
        ),
        "{err}"
    );
}

/// A spec written in Rust (no SDK to refuse it) whose managed kind is also metadata-only.
struct Conflicted(ctop_core::OperatorSpec);

impl ctop_core::Handlers for Conflicted {
    fn spec(&self) -> &ctop_core::OperatorSpec {
        &self.0
    }
    fn reconcile(&self, _: ctop_core::HandlerCall) -> ctop_core::HandlerFuture<ctop_core::ReconcileOutcome> {
        Box::pin(async { Ok(ctop_core::ReconcileOutcome::default()) })
    }
    fn finalize(&self, _: ctop_core::HandlerCall) -> ctop_core::HandlerFuture<ctop_core::FinalizeOutcome> {
        Box::pin(async { Ok(ctop_core::FinalizeOutcome::default()) })
    }
    fn on_start(&self, _: ctop_core::HandlerCall) -> ctop_core::HandlerFuture<ctop_core::StartOutcome> {
        Box::pin(async { Ok(ctop_core::StartOutcome::default()) })
    }
    fn map(&self, _: usize, _: ctop_core::HandlerCall) -> ctop_core::HandlerFuture<ctop_core::MapOutcome> {
        Box::pin(async { Ok(ctop_core::MapOutcome::default()) })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_controller_refuses_a_managed_kind_read_metadata_only() {
    let kind = |api_version: &str, kind: &str| ctop_core::KindRef {
        api_version: api_version.into(),
        kind: kind.into(),
    };
    let secret = kind("v1", "Secret");
    let spec = ctop_core::OperatorSpec {
        resources: Vec::new(),
        controllers: vec![ctop_core::ControllerSpec {
            name: "copier".into(),
            for_: kind("v1", "ConfigMap"),
            manages: vec![secret.clone()],
            reads: vec![secret.clone()],
            metadata_only: vec![secret],
            handlers: vec!["reconcile".into()],
            ..ctop_core::ControllerSpec::default()
        }],
    };
    let sim = common::sim().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = dir.path().join("kubeconfig");
    sim.write_kubeconfig(&kubeconfig).expect("kubeconfig");
    let options = ctop_controller::RunOptions::local(kubeconfig, "conflicted");
    let run = ctop_controller::run(std::sync::Arc::new(Conflicted(spec)), options, std::future::pending());
    let err = tokio::time::timeout(std::time::Duration::from_secs(30), run)
        .await
        .expect("refused at start, not run")
        .expect_err("refused");
    assert_eq!(
        err.to_string(),
        "operator \"copier\": .reads(Secret, { metadataOnly: true }): Secret is managed by this operator \
         (the Ready condition reads its children's status), so its objects are cached in full; drop metadataOnly"
    );
}

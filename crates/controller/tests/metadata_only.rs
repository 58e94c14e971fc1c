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

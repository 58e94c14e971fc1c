//! An operator touches only the objects it selects: a decorator of ConfigMaps selected by an
//! annotation (as Metacontroller's decorators select) puts its finalizer and ApplySet record
//! on those alone, releases one that stops being selected, and drops its ApplySet record
//! from an object left without children.

mod common;

use common::{eventually, start};
use ctop_applier::applyset::{ID_LABEL, TOOLING_ANNOTATION};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::ResourceExt as _;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::json;

/// A Secret beside each ConfigMap annotated `decorate`, unless it says `decorate: none`.
const DECORATOR: &str = r#"
operator(ConfigMap, { annotationSelector: "decorate" })
  .manages(Secret)
  .finalize((cm) => Result.ok())
  .reconcile((cm) => {
    if (cm.metadata.annotations?.decorate !== "none") {
      apply(Secret({ metadata: { name: `${cm.metadata.name}-s` }, stringData: { of: cm.metadata.name } }));
    }
    return Result.ok();
  });
"#;

async fn config_map(api: &Api<ConfigMap>, name: &str, annotations: serde_json::Value) {
    let cm: ConfigMap = serde_json::from_value(
        json!({"metadata": {"name": name, "annotations": annotations}, "data": {"k": "v"}}),
    )
    .expect("configmap");
    api.create(&PostParams::default(), &cm).await.expect("created");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_selected_objects_carry_the_finalizer_and_the_record() {
    let op = start(DECORATOR).await;
    let cms = op.config_maps();
    let secrets: Api<Secret> = Api::namespaced(op.client.clone(), "default");
    let finalizer = "configmaps/finalizer";
    config_map(&cms, "plain", json!({})).await;
    config_map(&cms, "decorated", json!({"decorate": "yes"})).await;
    eventually(20, "the decorated one's Secret", || async {
        secrets.get_opt("decorated-s").await.ok().flatten()
    })
    .await;
    let decorated = eventually(20, "the finalizer on the decorated one", || async {
        let cm = cms.get("decorated").await.ok()?;
        cm.finalizers().iter().any(|f| f.ends_with(finalizer)).then_some(cm)
    })
    .await;
    assert!(decorated.labels().contains_key(ID_LABEL), "it is the parent of its Secret");
    // A later object's Secret means the controller has long seen `plain`.
    config_map(&cms, "later", json!({"decorate": "yes"})).await;
    eventually(20, "the later one's Secret", || async { secrets.get_opt("later-s").await.ok().flatten() })
        .await;
    let plain = cms.get("plain").await.expect("plain");
    assert!(plain.finalizers().is_empty(), "{:?}", plain.finalizers());
    assert!(plain.labels().is_empty() && plain.annotations().is_empty(), "untouched: {:?}", plain.metadata);
    assert!(secrets.get_opt("plain-s").await.expect("get").is_none());

    // Left without children, the decorated object is no ApplySet parent any more.
    cms.patch(
        "later",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"annotations": {"decorate": "none"}}})),
    )
    .await
    .expect("patched");
    let later = eventually(20, "the record removed from later", || async {
        let cm = cms.get("later").await.ok()?;
        (!cm.labels().contains_key(ID_LABEL)).then_some(cm)
    })
    .await;
    assert!(!later.annotations().contains_key(TOOLING_ANNOTATION), "{:?}", later.annotations());
    assert!(secrets.get_opt("later-s").await.expect("get").is_none(), "its Secret was pruned");

    // No longer selected: released. Its finalizer goes, its Secret stays with it.
    cms.patch(
        "decorated",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"annotations": {"decorate": null}}})),
    )
    .await
    .expect("patched");
    eventually(20, "the finalizer removed from decorated", || async {
        let cm = cms.get("decorated").await.ok()?;
        cm.finalizers().is_empty().then_some(())
    })
    .await;
    assert!(secrets.get_opt("decorated-s").await.expect("get").is_some(), "its child stays");
    cms.delete("decorated", &DeleteParams::default()).await.expect("deleted");
    eventually(20, "decorated is gone, not stuck", || async {
        cms.get_opt("decorated").await.ok().and_then(|o| o.is_none().then_some(()))
    })
    .await;
    op.stop().await;
}

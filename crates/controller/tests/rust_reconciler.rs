//! The controller drives any [`Handlers`], not only scripts: a reconciler written in Rust
//! returns the same typed outcome and gets the same watches, applies, pruning and GC.

mod common;

use std::sync::Arc;

use common::{eventually, start_with};
use ctop_core::{
    ControllerSpec, FailureKind, FinalizeOutcome, HandlerCall, HandlerError, HandlerFuture, Handlers,
    KindRef, MapOutcome, OperatorSpec, ReconcileOutcome, StartOutcome,
};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, DeleteParams, PostParams};
use serde_json::{Value, json};

/// Copies the data of each ConfigMap labelled `copy=yes` into a Secret it owns.
struct Copier {
    spec: OperatorSpec,
}

impl Copier {
    fn new() -> Self {
        let kind =
            |api_version: &str, kind: &str| KindRef { api_version: api_version.into(), kind: kind.into() };
        let controller = ControllerSpec {
            index: 0,
            name: "copier".into(),
            for_: kind("v1", "ConfigMap"),
            label_selector: Some("copy=yes".into()),
            manages: vec![kind("v1", "Secret")],
            handlers: vec!["reconcile".into()],
            ..ControllerSpec::default()
        };
        Self { spec: OperatorSpec { resources: Vec::new(), controllers: vec![controller] } }
    }
}

fn unsupported<T>(what: &str) -> HandlerFuture<T> {
    let e = HandlerError::new(FailureKind::Invalid, format!("the copier has no {what} handler"));
    Box::pin(async move { Err(e) })
}

impl Handlers for Copier {
    fn spec(&self) -> &OperatorSpec {
        &self.spec
    }

    fn reconcile(&self, call: HandlerCall) -> HandlerFuture<ReconcileOutcome> {
        Box::pin(async move {
            let cm: Value = serde_json::from_str(call.object.as_deref().unwrap_or("null"))
                .map_err(|e| HandlerError::new(FailureKind::Invalid, e.to_string()))?;
            let name = cm["metadata"]["name"].as_str().unwrap_or_default();
            let mut out = ReconcileOutcome::default();
            out.children.objects.push(json!({
                "apiVersion": "v1", "kind": "Secret",
                "metadata": {"name": format!("{name}-copy")},
                "stringData": cm["data"],
            }));
            Ok(out)
        })
    }

    fn finalize(&self, _: HandlerCall) -> HandlerFuture<FinalizeOutcome> {
        unsupported("finalize")
    }

    fn on_start(&self, _: HandlerCall) -> HandlerFuture<StartOutcome> {
        unsupported("onStart")
    }

    fn map(&self, _: usize, _: HandlerCall) -> HandlerFuture<MapOutcome> {
        unsupported("mapper")
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rust_reconciler_runs_on_the_controller() {
    let op = start_with(Arc::new(Copier::new()), tempfile::tempdir().expect("tempdir")).await;
    let cms: Api<ConfigMap> = Api::namespaced(op.client.clone(), "default");
    let secrets: Api<Secret> = Api::namespaced(op.client.clone(), "default");
    let cm: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "settings", "labels": {"copy": "yes"}}, "data": {"color": "blue"}
    }))
    .expect("configmap");
    cms.create(&PostParams::default(), &cm).await.expect("created");
    let copy =
        eventually(20, "the copy", || async { secrets.get_opt("settings-copy").await.ok().flatten() }).await;
    let owner = copy.metadata.owner_references.unwrap_or_default();
    assert_eq!(owner.first().map(|o| (o.kind.as_str(), o.name.as_str())), Some(("ConfigMap", "settings")));
    assert_eq!(copy.data.and_then(|d| d.get("color").map(|v| v.0.clone())), Some(b"blue".to_vec()));

    cms.delete("settings", &DeleteParams::default()).await.expect("deleted");
    eventually(20, "the copy is collected with its owner", || async {
        secrets.get_opt("settings-copy").await.ok().and_then(|s| s.is_none().then_some(()))
    })
    .await;
    op.stop().await;
}

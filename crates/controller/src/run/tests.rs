//! A stopped controller lets go of everything it held: its context and its caches are
//! freed once `run` returns (nothing holds them in a cycle or in a task left running),
//! sharded or not, so `ctop dev`'s restarts and a lost membership leak nothing.

use std::sync::{Arc, Weak};
use std::time::Duration;

use ctop_core::{
    ControllerSpec, FailureKind, FinalizeOutcome, HandlerCall, HandlerError, HandlerFuture, Handlers,
    KindRef, MapOutcome, OperatorSpec, ReconcileOutcome, StartOutcome,
};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, PostParams};
use parking_lot::Mutex;
use serde_json::json;

use crate::context::Ctx;
use crate::store::WeakStore;
use crate::{LeaseTiming, RunOptions};

/// What a started controller held: its context, and the contents of each of its caches.
struct Held {
    ctx: Weak<Ctx>,
    stores: Vec<WeakStore>,
}

impl Held {
    fn alive(&self) -> (bool, usize) {
        (self.ctx.strong_count() > 0, self.stores.iter().filter(|s| s.alive()).count())
    }
}

/// What each controller started in this process held, by operator name.
static STARTED: Mutex<Vec<(String, Held)>> = Mutex::new(Vec::new());

/// Called by `start_controller` for every controller it starts.
pub(super) fn started(ctx: &Arc<Ctx>) {
    let stores = ctx.caches.iter().map(|c| c.store.downgrade()).collect();
    STARTED.lock().push((ctx.options.name.clone(), Held { ctx: Arc::downgrade(ctx), stores }));
}

/// A Secret copy of each ConfigMap labelled `copy=yes`, and a cache of Services it reads.
struct Copier(OperatorSpec);

impl Copier {
    fn new() -> Self {
        let kind =
            |api_version: &str, kind: &str| KindRef { api_version: api_version.into(), kind: kind.into() };
        Self(OperatorSpec {
            resources: Vec::new(),
            controllers: vec![ControllerSpec {
                name: "copier".into(),
                for_: kind("v1", "ConfigMap"),
                label_selector: Some("copy=yes".into()),
                manages: vec![kind("v1", "Secret")],
                reads: vec![kind("v1", "Service")],
                handlers: vec!["reconcile".into()],
                ..ControllerSpec::default()
            }],
        })
    }
}

fn none<T>() -> HandlerFuture<T> {
    Box::pin(async { Err(HandlerError::new(FailureKind::Invalid, "not declared".to_owned())) })
}

impl Handlers for Copier {
    fn spec(&self) -> &OperatorSpec {
        &self.0
    }
    fn reconcile(&self, call: HandlerCall) -> HandlerFuture<ReconcileOutcome> {
        Box::pin(async move {
            let cm: serde_json::Value = serde_json::from_str(call.object.as_deref().unwrap_or("null"))
                .map_err(|e| HandlerError::new(FailureKind::Invalid, e.to_string()))?;
            let mut out = ReconcileOutcome::default();
            out.children.objects.push(json!({
                "apiVersion": "v1", "kind": "Secret",
                "metadata": {"name": format!("{}-copy", cm["metadata"]["name"].as_str().unwrap_or_default())},
            }));
            Ok(out)
        })
    }
    fn finalize(&self, _: HandlerCall) -> HandlerFuture<FinalizeOutcome> {
        none()
    }
    fn on_start(&self, _: HandlerCall) -> HandlerFuture<StartOutcome> {
        none()
    }
    fn map(&self, _: usize, _: HandlerCall) -> HandlerFuture<MapOutcome> {
        none()
    }
}

/// Run the copier as `name`, reconcile one ConfigMap, stop, and wait until what the
/// controller held is freed.
async fn run_and_stop(name: &str, sharding: bool) {
    let sim = ctop_kubesim::KubeSim::start(ctop_kubesim::Config::default()).await.expect("kubesim starts");
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = dir.path().join("kubeconfig");
    sim.write_kubeconfig(&kubeconfig).expect("kubeconfig");
    let options =
        RunOptions { identity: Some(format!("{name}-0")), sharding, ..RunOptions::local(kubeconfig, name) };
    let timing = LeaseTiming {
        lease_duration: Duration::from_secs(5),
        renew_deadline: Duration::from_secs(3),
        retry_period: Duration::from_millis(500),
    };
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let run = tokio::spawn(crate::run_with_lease(Arc::new(Copier::new()), options, timing, async move {
        let _ = stopped.await;
    }));

    let client = {
        let kc = kube::config::Kubeconfig::from_yaml(&sim.kubeconfig()).expect("kubeconfig parses");
        let cfg = kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
            .await
            .expect("kubeconfig loads");
        kube::Client::try_from(cfg).expect("client")
    };
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let secrets: Api<Secret> = Api::namespaced(client, "default");
    let cm: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "c", "labels": {"copy": "yes"}}}))
        .expect("configmap");
    cms.create(&PostParams::default(), &cm).await.expect("created");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while secrets.get_opt("c-copy").await.ok().flatten().is_none() {
        assert!(tokio::time::Instant::now() < deadline, "{name}: the copy was never applied");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }

    let held: Vec<Held> = STARTED.lock().extract_if(.., |(n, _)| n == name).map(|(_, h)| h).collect();
    assert!(!held.is_empty() && held.iter().all(|h| h.alive() == (true, h.stores.len())), "{name}: running");
    assert!(held.iter().all(|h| h.stores.len() == 3), "the ConfigMap, Secret and Service caches");
    let _ = stop.send(());
    run.await.expect("joins").expect("the run ends cleanly");
    // Aborted tasks are dropped by the runtime shortly after `run` returns.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while held.iter().any(|h| h.alive() != (false, 0)) {
        let alive: Vec<(bool, usize)> = held.iter().map(Held::alive).collect();
        assert!(
            tokio::time::Instant::now() < deadline,
            "{name}: still held after the stop (context, caches): {alive:?}"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_controller_frees_its_context_and_caches() {
    run_and_stop("stop-plain", false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_sharded_member_frees_its_context_and_caches() {
    run_and_stop("stop-sharded", true).await;
}

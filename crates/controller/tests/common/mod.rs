//! An operator script running in-process against an in-process kubesim: the controller
//! crate's own test bed (no binary). Handler calls are counted through a [`Handlers`]
//! wrapper, so tests can wait on "the next reconcile" instead of sleeping.
#![allow(dead_code)]

use std::future::Future;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use ctop_controller::{RetryLimit, RunOptions};
use ctop_core::{
    FinalizeOutcome, HandlerCall, HandlerFuture, Handlers, MapOutcome, OperatorSpec, ReconcileOutcome,
    StartOutcome,
};
use ctop_kubesim::{Config, KubeSim};
use ctop_runtime::{Limits, Script, ScriptHandlers};
use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ListParams, PostParams};
use serde_json::{Value, json};

/// The group of the test resource every script here declares.
pub const GROUP: &str = "test.ctop.dev";

/// The script's prelude: the `Widget` resource.
pub const PRELUDE: &str = r#"
import {
  resource, z, operator, apply, patch, getObserved, setStatus, setCondition, Result, Values,
  Secret, ConfigMap,
} from "ctop";

const widget = resource("test.ctop.dev/v1", "Widget", {
  scope: "Namespaced",
  spec: {
    mode: z.string().default("ok"),
    names: z.array(z.string()).default([]),
  },
  status: {
    a: z.string().optional(),
    b: z.string().optional(),
    phase: z.string().optional(),
    attempt: z.number().optional(),
  },
});
"#;

/// Handlers that count the calls of the handlers they wrap.
pub struct Counting {
    inner: Arc<dyn Handlers>,
    /// Reconcile calls so far.
    pub reconciles: Arc<AtomicUsize>,
    /// Finalize calls so far.
    pub finalizes: Arc<AtomicUsize>,
}

impl Handlers for Counting {
    fn spec(&self) -> &OperatorSpec {
        self.inner.spec()
    }
    fn reconcile(&self, call: HandlerCall) -> HandlerFuture<ReconcileOutcome> {
        self.reconciles.fetch_add(1, Ordering::SeqCst);
        self.inner.reconcile(call)
    }
    fn finalize(&self, call: HandlerCall) -> HandlerFuture<FinalizeOutcome> {
        self.finalizes.fetch_add(1, Ordering::SeqCst);
        self.inner.finalize(call)
    }
    fn on_start(&self, call: HandlerCall) -> HandlerFuture<StartOutcome> {
        self.inner.on_start(call)
    }
    fn map(&self, watch: usize, call: HandlerCall) -> HandlerFuture<MapOutcome> {
        self.inner.map(watch, call)
    }
}

/// A running operator and its cluster.
pub struct Operator {
    pub sim: KubeSim,
    pub client: Client,
    pub reconciles: Arc<AtomicUsize>,
    pub finalizes: Arc<AtomicUsize>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
    _dir: tempfile::TempDir,
}

impl Operator {
    /// The reconcile calls so far.
    pub fn reconciles(&self) -> usize {
        self.reconciles.load(Ordering::SeqCst)
    }

    /// The dynamic API of `Widget`s in `default`.
    pub fn widgets(&self) -> Api<DynamicObject> {
        Api::namespaced_with(self.client.clone(), "default", &widget_resource())
    }

    /// Create the `Widget` `name` with `spec` in `default` (retrying until its CRD is served).
    pub async fn create(&self, name: &str, spec: Value) -> DynamicObject {
        let obj: DynamicObject = serde_json::from_value(json!({
            "apiVersion": format!("{GROUP}/v1"), "kind": "Widget",
            "metadata": {"name": name, "namespace": "default"}, "spec": spec,
        }))
        .expect("widget");
        eventually(20, "the Widget is created", || async {
            self.widgets().create(&PostParams::default(), &obj).await.ok()
        })
        .await
    }

    /// The Widget `name`, if it exists.
    pub async fn widget(&self, name: &str) -> Option<DynamicObject> {
        self.widgets().get_opt(name).await.expect("get widget")
    }

    /// Events about the object named `name`.
    pub async fn events_about(&self, name: &str) -> Vec<Value> {
        let ar = ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("events.k8s.io", "v1", "Event"),
            "events",
        );
        let api: Api<DynamicObject> = Api::namespaced_with(self.client.clone(), "default", &ar);
        let list = api.list(&ListParams::default()).await.expect("list events");
        list.items
            .into_iter()
            .map(|e| serde_json::to_value(e).expect("event json"))
            .filter(|e| e["regarding"]["name"] == name)
            .collect()
    }

    /// Stop the operator and wait for it.
    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for Operator {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
        self.sim.shutdown();
    }
}

/// The `Widget` kind.
pub fn widget_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(GROUP, "v1", "Widget"), "widgets")
}

/// Start `body` (appended to [`PRELUDE`]) as an operator against a fresh kubesim.
pub async fn start(body: &str) -> Operator {
    let _ = tracing_subscriber::fmt()
        .with_test_writer()
        .with_env_filter("ctop_controller=debug,ctop_applier=info")
        .try_init();
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("operator.ct"), format!("{PRELUDE}\n{body}")).expect("write script");
    let script = Script::from_dir(dir.path(), "operator.ct", 2, Limits::default()).expect("the script loads");
    let handlers = ScriptHandlers::new(Arc::new(script), &json!({}), &json!({}));
    start_with(Arc::new(handlers), dir).await
}

/// Start `handlers` against a fresh kubesim.
pub async fn start_with(handlers: Arc<dyn Handlers>, dir: tempfile::TempDir) -> Operator {
    let sim = KubeSim::start(Config::default()).await.expect("kubesim starts");
    let kubeconfig = dir.path().join("kubeconfig");
    sim.write_kubeconfig(&kubeconfig).expect("kubeconfig");
    let kc = kube::config::Kubeconfig::read_from(&kubeconfig).expect("kubeconfig reads");
    let cfg = kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
        .await
        .expect("kubeconfig loads");
    let client = Client::try_from(cfg).expect("client");
    let crds = handlers
        .spec()
        .resources
        .iter()
        .map(|r| ctop_manifests::crd(r, &serde_json::Map::new()).expect("crd"))
        .collect();
    let counting = Counting { inner: handlers, reconciles: Arc::default(), finalizes: Arc::default() };
    let (reconciles, finalizes) = (counting.reconciles.clone(), counting.finalizes.clone());
    let options = RunOptions {
        kubeconfig: Some(kubeconfig),
        context: None,
        namespace: None,
        concurrency: 2,
        health_addr: SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
        metrics_addr: SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
        leader_elect: false,
        lease_namespace: "default".into(),
        name: "ctop-test".into(),
        install_crds: crds,
        retry_limit: RetryLimit::default(),
    };
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        let run = ctop_controller::run(Arc::new(counting), options, async move {
            let _ = stopped.await;
        });
        if let Err(e) = run.await {
            panic!("the operator failed: {e}");
        }
    });
    Operator { sim, client, reconciles, finalizes, stop: Some(stop), task: Some(task), _dir: dir }
}

/// Poll `f` until it returns `Some`, for at most `secs` seconds.
pub async fn eventually<T, F, Fut>(secs: u64, what: &str, mut f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(v) = f().await {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for: {what}");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// The condition `type` of `o`'s status.
pub fn condition<'a>(o: &'a DynamicObject, type_: &str) -> Option<&'a Value> {
    o.data["status"]["conditions"].as_array()?.iter().find(|c| c["type"] == type_)
}

//! An operator script running in-process against an in-process kubesim: the controller
//! crate's own test bed (no binary). Handler calls are counted through a [`Handlers`]
//! wrapper, so tests can wait on "the next reconcile" instead of sleeping. Several
//! operators may share one kubesim ([`sim`], [`start_on`]), as replicas electing a leader.
#![allow(dead_code)]

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use ctop_controller::{LeaseTiming, RetryLimit, RunOptions};
use ctop_core::{
    FinalizeOutcome, HandlerCall, HandlerFuture, Handlers, MapOutcome, OperatorSpec, ReconcileOutcome,
    StartOutcome,
};
use ctop_kubesim::{Config, KubeSim};
use ctop_runtime::{Limits, Script, ScriptHandlers};
use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ListParams, PostParams};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

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
    /// `onStart` calls so far.
    pub on_starts: Arc<AtomicUsize>,
    /// Mapper calls so far (of every `.watches()`).
    pub maps: Arc<AtomicUsize>,
}

impl Counting {
    fn new(inner: Arc<dyn Handlers>) -> Self {
        Self {
            inner,
            reconciles: Arc::default(),
            finalizes: Arc::default(),
            on_starts: Arc::default(),
            maps: Arc::default(),
        }
    }
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
        self.on_starts.fetch_add(1, Ordering::SeqCst);
        self.inner.on_start(call)
    }
    fn map(&self, watch: usize, call: HandlerCall) -> HandlerFuture<MapOutcome> {
        self.maps.fetch_add(1, Ordering::SeqCst);
        self.inner.map(watch, call)
    }
}

/// Replicas started so far in this process (each gets its own Lease identity).
static REPLICAS: AtomicUsize = AtomicUsize::new(0);

/// How [`start_on`] runs an operator. The default is what [`start`] does: one replica, no
/// leader election, health and metrics on ports nobody asks for.
#[derive(Clone, Copy, Debug, Default)]
pub struct Launch {
    /// Reconcile only while holding the Lease `ctop-test-leader` in `default`.
    pub leader_elect: bool,
    /// The election's timing (used with `leader_elect`).
    pub lease: LeaseTiming,
    /// Serve health and metrics on ports the test can reach ([`Operator::health_addr`],
    /// [`Operator::metrics_addr`]).
    pub serve: bool,
    /// The operator's name (field manager, Leases, event reporter) [default: `ctop-test`].
    pub name: Option<&'static str>,
    /// Reconciles kept per object [default: `history::DEFAULT_KEPT`].
    pub history: Option<usize>,
}

/// A running operator and its cluster (shared with other operators started on it).
pub struct Operator {
    pub sim: Arc<KubeSim>,
    pub client: Client,
    pub reconciles: Arc<AtomicUsize>,
    pub finalizes: Arc<AtomicUsize>,
    pub on_starts: Arc<AtomicUsize>,
    pub maps: Arc<AtomicUsize>,
    /// Where `/healthz`, `/readyz` and `/status` are served, with [`Launch::serve`].
    pub health_addr: Option<SocketAddr>,
    /// Where `/metrics` is served, with [`Launch::serve`].
    pub metrics_addr: Option<SocketAddr>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
    _dir: tempfile::TempDir,
}

impl Operator {
    /// The value of the `/metrics` sample whose line starts with `prefix` (0 when there is
    /// none yet); needs [`Launch::serve`].
    pub async fn metric(&self, prefix: &str) -> f64 {
        let addr = self.metrics_addr.expect("started with Launch { serve: true, .. }");
        let body = http_get(addr, "/metrics").await.map(|(_, b)| b).unwrap_or_default();
        sample(&body, prefix).unwrap_or_default()
    }

    /// The reconcile calls so far.
    pub fn reconciles(&self) -> usize {
        self.reconciles.load(Ordering::SeqCst)
    }

    /// The finalize calls so far.
    pub fn finalizes(&self) -> usize {
        self.finalizes.load(Ordering::SeqCst)
    }

    /// The `onStart` calls so far.
    pub fn on_starts(&self) -> usize {
        self.on_starts.load(Ordering::SeqCst)
    }

    /// The mapper calls so far.
    pub fn maps(&self) -> usize {
        self.maps.load(Ordering::SeqCst)
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

    /// The ConfigMaps of `default`.
    pub fn config_maps(&self) -> Api<k8s_openapi::api::core::v1::ConfigMap> {
        Api::namespaced(self.client.clone(), "default")
    }

    /// Merge `spec` into the Widget `name`'s spec.
    pub async fn set_spec(&self, name: &str, spec: Value) {
        self.widgets()
            .patch(name, &kube::api::PatchParams::default(), &kube::api::Patch::Merge(json!({"spec": spec})))
            .await
            .expect("spec patched");
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
        // The last one out stops the cluster (dropping a `KubeSim` shuts it down).
    }
}

/// The `Widget` kind.
pub fn widget_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(GROUP, "v1", "Widget"), "widgets")
}

/// A fresh kubesim, to start one or more operators on.
pub async fn sim() -> Arc<KubeSim> {
    Arc::new(KubeSim::start(Config::default()).await.expect("kubesim starts"))
}

/// A client of `sim`.
pub async fn client(sim: &KubeSim) -> Client {
    let kc = kube::config::Kubeconfig::from_yaml(&sim.kubeconfig()).expect("kubeconfig parses");
    let cfg = kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
        .await
        .expect("kubeconfig loads");
    Client::try_from(cfg).expect("client")
}

/// `body` (appended to [`PRELUDE`]) loaded as script handlers, and the directory it is in.
pub fn load(body: &str) -> (Arc<dyn Handlers>, tempfile::TempDir) {
    let _ = tracing_subscriber::fmt()
        .with_test_writer()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "ctop_controller=debug,ctop_applier=info".into()),
        )
        .try_init();
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("operator.ct"), format!("{PRELUDE}\n{body}")).expect("write script");
    let script = Script::from_dir(dir.path(), "operator.ct", 2, Limits::default()).expect("the script loads");
    (Arc::new(ScriptHandlers::new(Arc::new(script), &json!({}), &json!({}))), dir)
}

/// Start `body` (appended to [`PRELUDE`]) as an operator against a fresh kubesim.
pub async fn start(body: &str) -> Operator {
    let (handlers, dir) = load(body);
    launch(sim().await, handlers, dir, Launch::default()).await
}

/// Start `body` (appended to [`PRELUDE`]) as an operator against `sim`, as `how` says.
pub async fn start_on(sim: &Arc<KubeSim>, body: &str, how: Launch) -> Operator {
    let (handlers, dir) = load(body);
    launch(sim.clone(), handlers, dir, how).await
}

/// Start `handlers` against `sim`, as `how` says.
pub async fn start_handlers_on(sim: &Arc<KubeSim>, handlers: Arc<dyn Handlers>, how: Launch) -> Operator {
    launch(sim.clone(), handlers, tempfile::tempdir().expect("tempdir"), how).await
}

/// Start `handlers` against a fresh kubesim.
pub async fn start_with(handlers: Arc<dyn Handlers>, dir: tempfile::TempDir) -> Operator {
    launch(sim().await, handlers, dir, Launch::default()).await
}

/// A loopback address nobody listens on now (port 0 when `!known`: the server picks one).
fn local_addr(known: bool) -> SocketAddr {
    if !known {
        return SocketAddr::from((Ipv4Addr::LOCALHOST, 0));
    }
    let listener = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind a free port");
    listener.local_addr().expect("local address")
}

async fn launch(
    sim: Arc<KubeSim>,
    handlers: Arc<dyn Handlers>,
    dir: tempfile::TempDir,
    how: Launch,
) -> Operator {
    let kubeconfig = dir.path().join("kubeconfig");
    sim.write_kubeconfig(&kubeconfig).expect("kubeconfig");
    let client = client(&sim).await;
    let crds = ctop_manifests::operator_crds(handlers.spec()).expect("crds");
    let counting = Counting::new(handlers);
    let (reconciles, finalizes) = (counting.reconciles.clone(), counting.finalizes.clone());
    let (on_starts, maps) = (counting.on_starts.clone(), counting.maps.clone());
    let (health_addr, metrics_addr) = (local_addr(how.serve), local_addr(how.serve));
    let options = RunOptions {
        kubeconfig: Some(kubeconfig),
        context: None,
        namespace: None,
        concurrency: 2,
        health_addr,
        metrics_addr,
        inspector: None,
        shared: None,
        leader_elect: how.leader_elect,
        lease_namespace: "default".into(),
        name: how.name.unwrap_or("ctop-test").into(),
        // Each operator of a test is a replica of its own.
        identity: Some(format!("replica-{}", REPLICAS.fetch_add(1, Ordering::SeqCst))),
        install_crds: crds,
        retry_limit: RetryLimit::default(),
        sharding: false,
        migrate_storage: None,
        history: how.history.unwrap_or(ctop_controller::history::DEFAULT_KEPT),
    };
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        let run = ctop_controller::run_with_lease(Arc::new(counting), options, how.lease, async move {
            let _ = stopped.await;
        });
        if let Err(e) = run.await {
            panic!("the operator failed: {e}");
        }
    });
    Operator {
        sim,
        client,
        reconciles,
        finalizes,
        on_starts,
        maps,
        health_addr: how.serve.then_some(health_addr),
        metrics_addr: how.serve.then_some(metrics_addr),
        stop: Some(stop),
        task: Some(task),
        _dir: dir,
    }
}

/// `GET path` on `addr` over HTTP/1.0: the status code and body, if something answers.
pub async fn http_get(addr: SocketAddr, path: &str) -> Option<(u16, String)> {
    let mut stream = tokio::net::TcpStream::connect(addr).await.ok()?;
    stream.write_all(format!("GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").as_bytes()).await.ok()?;
    let mut raw = String::new();
    tokio::time::timeout(Duration::from_secs(5), stream.read_to_string(&mut raw)).await.ok()?.ok()?;
    let (head, body) = raw.split_once("\r\n\r\n")?;
    let status = head.split(' ').nth(1)?.parse().ok()?;
    Some((status, body.to_owned()))
}

/// The value of the first sample in the Prometheus text `metrics` whose line starts with
/// `prefix`.
pub fn sample(metrics: &str, prefix: &str) -> Option<f64> {
    metrics.lines().find(|l| l.starts_with(prefix))?.rsplit(' ').next()?.parse().ok()
}

pub use ctop_test_support::eventually;

/// The `status.observedGeneration` of `o`.
pub fn observed_generation(o: &DynamicObject) -> Option<i64> {
    o.data["status"]["observedGeneration"].as_i64()
}

/// The condition `type` of `o`'s status.
pub fn condition<'a>(o: &'a DynamicObject, type_: &str) -> Option<&'a Value> {
    o.data["status"]["conditions"].as_array()?.iter().find(|c| c["type"] == type_)
}

//! The controller: one kube-runtime [`Controller`] per `operator(...)` of a script.
//!
//! For each [`ControllerSpec`]: the primary kind is watched through a `DynamicObject`
//! controller; each `.manages()` kind is watched through a reflector store and fed to
//! [`Controller::owns_stream_with`] (child changes map to the controlling owner); each
//! `.reads()` kind gets a reflector store only. A kind is watched once per scope and the
//! watch is shared: a `.watches()` of a kind already watched in a scope that covers its
//! own (same or all namespaces, same or no label selector) takes that watch's events
//! after its cache has them, narrowed client-side, so its reconciles never read a cache
//! older than their trigger; otherwise it gets its own watcher (namespace and label
//! selector applied by the server, cached for `observed` unless the kind already is).
//! The events pass the watch's predicate (creations and deletions
//! always; updates compared with the previous version of the object, kept per object) and
//! are mapped to primaries by the script's `map:<i>` handler or, without a mapper, by owner
//! reference, then fed to [`Controller::reconcile_on`]. A reconcile:
//!
//! 1. waits for leadership (when elected: not leading means requeue in 5 s, no side effect);
//! 2. adds the controller's finalizer when the script declared `.finalize()`; on deletion
//!    runs the `finalize` handler and removes the finalizer once it returned ok;
//! 3. dispatches `reconcile` in `spawn_blocking` with `object`, `env` and `values`; the
//!    script's `getObserved` / `listObserved` read the caches on demand through a
//!    [`crate::vm::Observer`] (for namespaced primaries the objects of the primary's
//!    namespace plus all cluster-scoped ones; one keyed lookup per `getObserved`), so a
//!    reconcile costs the same with ten cached objects or a hundred thousand. Cached
//!    objects carry no `managedFields`;
//! 4. on `Result.ok()`/`Result.requeue(d)`: applies the children with
//!    [`ctop_applier::Applier::apply_observed`] (complete set, pruning the rest), then
//!    merge-patches the output's `patches` into their live objects (not owned: no owner
//!    reference, never pruned); on `Result.error(m)` applies nothing (an error must not
//!    prune);
//! 5. writes `status` merged with the output's `conditions` through the status writer,
//!    publishes the output's events, and requeues: `requeue(d)` → after `d`, ok → after
//!    `every` (or on the next change), error → per-object exponential backoff, held back
//!    further by a global retry bucket shared by all controllers ([`RetryLimit`]).
//!
//! Each reconcile is a `tracing` span (`reconcile`, with `script`, `apply` and `status`
//! children) that the CLI exports over OTLP when configured. A declared `onStart` runs once
//! per process after the caches sync and leadership is won. [`run_reloadable`]
//! lets `ctop dev` replace the script in place: caches and leadership stay, every object
//! reconciles again with the new code.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ctop_applier::{Applier, ApplierConfig, CachedMeta, ChildCache, ChildRef};
use ctop_core::{ControllerSpec, KindRef, NamedPredicate, Predicate, WatchSpec};
use futures::StreamExt as _;
use k8s_openapi::api::core::v1::ObjectReference;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, TypeMeta};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::discovery::Scope;
use kube::runtime::controller::{Action, Config as ControllerConfig, Controller};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt as _, watcher};
use kube::{Client, Resource as _, ResourceExt as _};
use parking_lot::Mutex;
use serde_json::{Map, Value, json};
use tokio::sync::watch;
use tracing::Instrument as _;

use crate::Script;
use crate::health::{self, Health, Metrics, ReconcileResult};
use crate::leader::{LeaderElector, LeaseConfig};

/// Prefix of the process environment variables passed to scripts as `Env` (stripped):
/// `CTOP_ENV_REGION=eu` is `Env.REGION`. Nothing else of the environment is visible.
pub const ENV_PREFIX: &str = "CTOP_ENV_";

/// How `ctop run` runs a script.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// The kubeconfig file; `None` infers (in-cluster, `KUBECONFIG`, `~/.kube/config`).
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context; `None` uses its current context.
    pub context: Option<String>,
    /// Watch only this namespace; `None` watches all.
    pub namespace: Option<String>,
    /// Reconciles running at once per controller.
    pub concurrency: u16,
    /// Where `/healthz`, `/readyz` and `/status` are served (port 0 picks one).
    pub health_addr: SocketAddr,
    /// Where `/metrics` is served (port 0 picks one).
    pub metrics_addr: SocketAddr,
    /// Elect a leader on a Lease; reconcile only while leading.
    pub leader_elect: bool,
    /// Namespace of the Lease.
    pub lease_namespace: String,
    /// Name of the Lease and the field manager / event reporter.
    pub name: String,
    /// CRDs to server-side apply (and wait for) before starting.
    pub install_crds: Vec<Value>,
    /// The values (parsed values YAML).
    pub values: Value,
    /// The env the scripts see.
    pub env: Value,
    /// The global limit on retries of failed reconciles, shared by every controller.
    pub retry_limit: RetryLimit,
}

/// The global bucket that failed reconciles are retried through, on top of the per-object
/// exponential backoff (the later of the two wins), as controller-runtime's default rate
/// limiter does: a burst of failures cannot turn into a storm of retries against the API.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RetryLimit {
    /// Retries per second once the burst is spent.
    pub qps: f64,
    /// Retries allowed at once.
    pub burst: u32,
}

impl Default for RetryLimit {
    /// 10 retries per second, bursts of 100 (controller-runtime's defaults).
    fn default() -> Self {
        Self { qps: 10.0, burst: 100 }
    }
}

/// A token bucket handing out the time at which each caller may go (tokens can be owed, so
/// every reservation is granted with the delay it must wait).
#[derive(Debug)]
struct Bucket {
    limit: RetryLimit,
    state: Mutex<(f64, Instant)>,
}

impl Bucket {
    fn new(limit: RetryLimit) -> Self {
        Self { limit, state: Mutex::new((f64::from(limit.burst), Instant::now())) }
    }

    /// Take one token; how long the caller must wait for it.
    fn reserve(&self) -> Duration {
        if self.limit.qps.is_nan() || self.limit.qps <= 0.0 {
            return Duration::ZERO;
        }
        let mut st = self.state.lock();
        let now = Instant::now();
        let refill = now.duration_since(st.1).as_secs_f64() * self.limit.qps;
        st.0 = (st.0 + refill).min(f64::from(self.limit.burst.max(1)));
        st.1 = now;
        st.0 -= 1.0;
        if st.0 >= 0.0 { Duration::ZERO } else { Duration::from_secs_f64(-st.0 / self.limit.qps) }
    }
}

/// The environment scripts see: variables named `CTOP_ENV_<NAME>`, as `<NAME>`.
#[must_use]
pub fn script_env() -> Value {
    let map: Map<String, Value> = std::env::vars()
        .filter_map(|(k, v)| k.strip_prefix(ENV_PREFIX).map(|n| (n.to_owned(), Value::String(v))))
        .filter(|(k, _)| !k.is_empty())
        .collect();
    Value::Object(map)
}

/// Parse a values YAML document (empty means `{}`).
pub fn values_from_yaml(text: &str) -> Result<Value, ValuesError> {
    if text.trim().is_empty() {
        return Ok(json!({}));
    }
    let v: Value = serde_yaml_ng::from_str(text)?;
    match v {
        Value::Null => Ok(json!({})),
        Value::Object(_) => Ok(v),
        other => Err(ValuesError::NotAMapping {
            found: match other {
                Value::Array(_) => "a list",
                Value::String(_) => "a string",
                Value::Number(_) => "a number",
                _ => "a boolean",
            },
        }),
    }
}

/// Why a values file was refused.
#[derive(Debug, thiserror::Error)]
pub enum ValuesError {
    /// The file is not YAML.
    #[error(transparent)]
    Yaml(#[from] serde_yaml_ng::Error),
    /// The file is YAML but not a mapping (scripts read `Values.key`).
    #[error("the values file holds {found}, not a mapping of keys to values (scripts read Values.<key>)")]
    NotAMapping {
        /// What the document is.
        found: &'static str,
    },
}

/// The timing of leader election (see [`LeaseConfig`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LeaseTiming {
    /// How long a standby waits after the leader's last renewal before taking over.
    pub lease_duration: Duration,
    /// How long the leader keeps leading without a successful renewal.
    pub renew_deadline: Duration,
    /// Time between acquire and renew attempts.
    pub retry_period: Duration,
}

impl Default for LeaseTiming {
    /// 15 s / 10 s / 2 s, as controller-runtime.
    fn default() -> Self {
        Self {
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
        }
    }
}

/// Why a run failed.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The kubeconfig could not be read or used.
    #[error("cannot configure the Kubernetes client: {0}")]
    Config(String),
    /// An API call failed at start.
    #[error("{what}: {source}")]
    Kube {
        /// What was being done.
        what: String,
        /// The error.
        source: kube::Error,
    },
    /// Start-up failed otherwise.
    #[error("{0}")]
    Start(String),
}

/// A reconcile failure.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ReconcileError(String);

async fn client(kubeconfig: Option<&PathBuf>, context: Option<&String>) -> Result<Client, RunError> {
    let options = KubeConfigOptions { context: context.cloned(), ..KubeConfigOptions::default() };
    let config = match kubeconfig {
        Some(path) => {
            let kc = Kubeconfig::read_from(path)
                .map_err(|e| RunError::Config(format!("{}: {e}", path.display())))?;
            kube::Config::from_custom_kubeconfig(kc, &options)
                .await
                .map_err(|e| RunError::Config(e.to_string()))?
        }
        None if context.is_some() => {
            kube::Config::from_kubeconfig(&options).await.map_err(|e| RunError::Config(e.to_string()))?
        }
        None => kube::Config::infer().await.map_err(|e| RunError::Config(e.to_string()))?,
    };
    Client::try_from(config)
        .map_err(|source| RunError::Kube { what: "cannot build the client".into(), source })
}

/// Server-side apply `crds` and wait until each is Established (30 s at most).
async fn install_crds(client: &Client, crds: &[Value], manager: &str) -> Result<(), RunError> {
    let ar = ApiResource::from_gvk(&GroupVersionKind::gvk(
        "apiextensions.k8s.io",
        "v1",
        "CustomResourceDefinition",
    ));
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &ar);
    for crd in crds {
        let name = crd["metadata"]["name"].as_str().unwrap_or_default().to_owned();
        api.patch(&name, &PatchParams::apply(manager).force(), &Patch::Apply(crd))
            .await
            .map_err(|source| RunError::Kube { what: format!("cannot apply the CRD {name}"), source })?;
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let got = api
                .get(&name)
                .await
                .map_err(|source| RunError::Kube { what: format!("cannot read the CRD {name}"), source })?;
            let established = got.data["status"]["conditions"]
                .as_array()
                .is_some_and(|cs| cs.iter().any(|c| c["type"] == "Established" && c["status"] == "True"));
            if established {
                tracing::info!(crd = name, "CRD installed");
                break;
            }
            if Instant::now() > deadline {
                return Err(RunError::Start(format!("the CRD {name} did not become Established within 30s")));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    Ok(())
}

/// The `workqueue_*` figures of one controller, observed around kube-runtime's scheduler
/// (which does not expose its queue): an object is queued when a trigger names it (its own
/// change, an owned child's, a `.watches()` mapping) and leaves the queue when a reconcile
/// of it starts; like the workqueue, an object queued twice is counted once. Requeues
/// scheduled by a result (`requeue`, `every`, backoff) are counted as retries only on error.
struct QueueStats {
    name: String,
    metrics: Metrics,
    pending: Mutex<HashMap<String, Instant>>,
}

impl QueueStats {
    fn add(&self, key: String) {
        let depth = {
            let mut p = self.pending.lock();
            if p.contains_key(&key) {
                return;
            }
            p.insert(key, Instant::now());
            p.len()
        };
        self.metrics.queue_add(&self.name);
        self.metrics.set_queue_depth(&self.name, depth);
    }

    fn started(&self, key: &str) {
        let (waited, depth) = {
            let mut p = self.pending.lock();
            (p.remove(key), p.len())
        };
        if let Some(at) = waited {
            self.metrics.observe_queue_duration(&self.name, at.elapsed());
            self.metrics.set_queue_depth(&self.name, depth);
        }
    }
}

/// The keys of the primaries an owned child triggers: its controller owner of the primary kind.
fn owner_keys(child: &DynamicObject, primary: &ApiResource, namespaced: bool) -> Vec<String> {
    child
        .owner_references()
        .iter()
        .filter(|r| {
            r.controller == Some(true) && r.kind == primary.kind && r.api_version == primary.api_version
        })
        .map(|r| {
            let ns = if namespaced { child.namespace().unwrap_or_default() } else { String::new() };
            format!("{ns}/{}", r.name)
        })
        .collect()
}

/// A kind resolved through discovery, with its cache.
struct Cached {
    key: String,
    ar: ApiResource,
    namespaced: bool,
    store: Store<DynamicObject>,
    /// ApplySet members by set id, for managed kinds (see [`SetIndex`]).
    sets: Option<Arc<SetIndex>>,
}

/// What a shared watch of one kind is for, besides filling its cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    /// The controller's kind: its events are the primary triggers.
    Primary,
    /// A `.manages()` kind: its events trigger the controlling owner.
    Owned,
    /// A `.reads()` kind: cached only.
    Read,
    /// A `.watches()` kind that no other watch covers: its events go to that mapper.
    Watch,
}

/// One watch of a kind in one scope (namespace, label selector), planned before any
/// starts so that every consumer is known: the cache `getObserved` reads and every
/// `.watches()` mapper of the kind are fed by the same stream, each event reaching the
/// mappers only after the cache holds it (as controller-runtime's shared informers do).
/// Two watches of one kind would race: a mapper could run, and its reconcile read the
/// cache, before the cache had the change that triggered it.
struct InformerPlan {
    key: String,
    ar: ApiResource,
    namespaced: bool,
    /// `None`: all namespaces (or a cluster-scoped kind).
    namespace: Option<String>,
    labels: Option<String>,
    role: Role,
    /// `.watches()` fed from this watch, each through its own channel.
    subscribers: Vec<tokio::sync::mpsc::UnboundedSender<watcher::Event<DynamicObject>>>,
}

/// A started [`InformerPlan`].
struct Informer {
    store: Store<DynamicObject>,
    sets: Option<Arc<SetIndex>>,
    stream: futures::stream::BoxStream<'static, Result<watcher::Event<DynamicObject>, watcher::Error>>,
    synced: watch::Receiver<bool>,
}

impl InformerPlan {
    fn new(
        key: String,
        ar: ApiResource,
        namespaced: bool,
        namespace: Option<String>,
        labels: Option<String>,
        role: Role,
    ) -> Self {
        Self { key, ar, namespaced, namespace, labels, role, subscribers: Vec::new() }
    }

    /// Whether this watch sees every object a watch of `key` in `namespace` with
    /// `labels` would.
    fn covers(&self, key: &str, namespace: Option<&str>, labels: Option<&str>) -> bool {
        self.key == key
            && (self.namespace.is_none() || self.namespace.as_deref() == namespace)
            && (self.labels.is_none() || self.labels.as_deref() == labels)
    }

    /// Start the watch in a task of its own: the reflector first, then the ApplySet index
    /// (managed kinds), then the subscribers.
    fn start(self, client: &Client) -> Informer {
        let writer = reflector::store::Writer::<DynamicObject>::new(self.ar.clone());
        let store = writer.as_reader();
        let sets = (self.role == Role::Owned).then(|| Arc::new(SetIndex::default()));
        let index = sets.clone();
        let subscribers = self.subscribers;
        let mut config = watcher::Config::default();
        if let Some(sel) = &self.labels {
            config = config.labels(sel);
        }
        let api = api_for(client, &self.ar, self.namespaced, self.namespace.as_deref());
        // Readiness is tapped here (not taken from `Controller::new_with`): a second task
        // waiting on a kube-runtime 5 store is never woken (its readiness keeps one
        // waker; see crates/kubesim/tests/store_ready.rs).
        let (stream, synced) = tap_init_done(detach(
            watcher(api, config).default_backoff().modify(strip_managed_fields).reflect(writer).inspect(
                move |e| {
                    if let Ok(e) = e {
                        if let Some(index) = &index {
                            index.observe(e);
                        }
                        for tx in &subscribers {
                            // A closed channel is a controller shutting down.
                            let _ = tx.send(e.clone());
                        }
                    }
                },
            ),
        ));
        Informer { store, sets, stream: stream.boxed(), synced }
    }
}

/// Where a `.watches()` gets its events.
enum WatchSource {
    /// From a shared watch of wider scope, narrowed client-side.
    Shared(tokio::sync::mpsc::UnboundedReceiver<watcher::Event<DynamicObject>>, EventScope),
    /// From its own watch (the index of its plan).
    Own(usize),
}

/// The client-side part of a `.watches()` scope fed by a wider shared watch: what the
/// server would have filtered. An object that leaves the scope (its labels change) is
/// passed on as a deletion, as a server-side filtered watch reports it.
#[derive(Default)]
struct EventScope {
    namespace: Option<String>,
    labels: Option<ctop_core::LabelSelector>,
}

impl EventScope {
    /// What a watch in `namespace` with `labels` must filter from `wider`'s events.
    fn narrowing(
        wider: &InformerPlan,
        namespace: Option<String>,
        labels: Option<&str>,
    ) -> Result<Self, ctop_core::LabelSelectorError> {
        Ok(Self {
            namespace: namespace.filter(|_| wider.namespace.is_none()),
            labels: match (&wider.labels, labels) {
                (None, Some(sel)) => Some(ctop_core::LabelSelector::parse(sel)?),
                _ => None,
            },
        })
    }

    fn admits(&self, o: &DynamicObject) -> bool {
        self.namespace.as_ref().is_none_or(|ns| o.metadata.namespace.as_ref() == Some(ns))
            && self.labels.as_ref().is_none_or(|sel| {
                let labels = o.labels();
                sel.matches_with(|k| labels.get(k).map(String::as_str))
            })
    }

    fn apply(
        self,
        rx: tokio::sync::mpsc::UnboundedReceiver<watcher::Event<DynamicObject>>,
    ) -> impl futures::Stream<Item = Result<watcher::Event<DynamicObject>, watcher::Error>> + Send + 'static
    {
        let events = futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|e| (e, rx)) });
        let mut inside = std::collections::HashSet::new();
        events.filter_map(move |e| {
            let out = match e {
                _ if self.namespace.is_none() && self.labels.is_none() => Some(e),
                watcher::Event::Apply(o) | watcher::Event::InitApply(o) if !self.admits(&o) => {
                    inside.remove(&object_key(&o)).then_some(watcher::Event::Delete(o))
                }
                watcher::Event::Apply(ref o) | watcher::Event::InitApply(ref o) => {
                    inside.insert(object_key(o));
                    Some(e)
                }
                watcher::Event::Delete(o) => {
                    inside.remove(&object_key(&o)).then_some(watcher::Event::Delete(o))
                }
                watcher::Event::Init | watcher::Event::InitDone => Some(e),
            };
            std::future::ready(out.map(Ok))
        })
    }
}

/// The objects of one cached kind by their `applyset.kubernetes.io/part-of` label, kept
/// from the watch events, so that finding an owner's former children costs O(its
/// children) rather than a scan of the kind. It may hold a few objects already gone (a
/// relist does not report what disappeared): readers confirm each one in the store.
#[derive(Default)]
struct SetIndex {
    inner: Mutex<SetIndexInner>,
}

#[derive(Default)]
struct SetIndexInner {
    members: HashMap<String, std::collections::HashSet<(String, String)>>,
    set_of: HashMap<(String, String), String>,
}

impl SetIndex {
    fn observe(&self, event: &watcher::Event<DynamicObject>) {
        let mut idx = self.inner.lock();
        let mut put = |o: &DynamicObject, present: bool| {
            let key = (o.namespace().unwrap_or_default(), o.name_any());
            if let Some(old) = idx.set_of.remove(&key)
                && let Some(m) = idx.members.get_mut(&old)
            {
                m.remove(&key);
                if m.is_empty() {
                    idx.members.remove(&old);
                }
            }
            let label = o.labels().get(ctop_applier::applyset::PART_OF_LABEL).cloned();
            if let (true, Some(set)) = (present, label) {
                idx.members.entry(set.clone()).or_default().insert(key.clone());
                idx.set_of.insert(key, set);
            }
        };
        match event {
            watcher::Event::Apply(o) | watcher::Event::InitApply(o) => put(o, true),
            watcher::Event::Delete(o) => put(o, false),
            watcher::Event::Init | watcher::Event::InitDone => {}
        }
    }

    fn members(&self, set: &str) -> Vec<(String, String)> {
        self.inner.lock().members.get(set).map(|m| m.iter().cloned().collect()).unwrap_or_default()
    }
}

struct Ctx {
    spec: ControllerSpec,
    script: ScriptSource,
    retries: Arc<Bucket>,
    primary: ApiResource,
    namespaced: bool,
    caches: Arc<Vec<Cached>>,
    applier: Applier,
    recorder: Recorder,
    client: Client,
    options: RunOptions,
    health: Health,
    metrics: Metrics,
    leader: Option<watch::Receiver<bool>>,
    failures: Mutex<HashMap<String, u32>>,
    queue: Arc<QueueStats>,
    /// Kinds resolved for `patches`, by `apiVersion/kind`.
    kinds: Mutex<HashMap<String, (ApiResource, bool)>>,
}

fn kind_key(k: &KindRef) -> String {
    format!("{}/{}", k.api_version, k.kind)
}

async fn resolve(client: &Client, k: &KindRef) -> Result<(ApiResource, bool), RunError> {
    let (group, version) = k.api_version.rsplit_once('/').unwrap_or(("", &k.api_version));
    let gvk = GroupVersionKind::gvk(group, version, &k.kind);
    let (ar, caps) = kube::discovery::pinned_kind(client, &gvk)
        .await
        .map_err(|source| RunError::Kube { what: format!("{} is not served", kind_key(k)), source })?;
    Ok((ar, caps.scope == Scope::Namespaced))
}

fn api_for(client: &Client, ar: &ApiResource, namespaced: bool, ns: Option<&str>) -> Api<DynamicObject> {
    match (namespaced, ns) {
        (true, Some(ns)) => Api::namespaced_with(client.clone(), ns, ar),
        _ => Api::all_with(client.clone(), ar),
    }
}

/// The script a run dispatches to; a new value replaces it between reconciles (see
/// [`run_reloadable`]).
pub type ScriptSource = watch::Receiver<Arc<Script>>;

/// Whether `new` can replace `old` in a running operator without restarting its
/// controllers (and so without dropping their caches): it must declare the same
/// controllers (kinds, watches, handlers, finalizers, periods). Handler code may differ.
#[must_use]
pub fn hot_swappable(old: &Script, new: &Script) -> bool {
    old.spec().controllers == new.spec().controllers
}

/// Run every controller of `script` until `shutdown` completes (default lease timing).
pub async fn run(
    script: Arc<Script>,
    options: RunOptions,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), RunError> {
    run_with_lease(script, options, LeaseTiming::default(), shutdown).await
}

/// [`run`] with this leader-election timing (used when `options.leader_elect`).
pub async fn run_with_lease(
    script: Arc<Script>,
    options: RunOptions,
    timing: LeaseTiming,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), RunError> {
    let (_keep, scripts) = watch::channel(script);
    run_reloadable(scripts, options, timing, shutdown).await
}

/// [`run_with_lease`] with a script that can be replaced while running (`ctop dev`): each
/// new value of `scripts` is used from the next handler call on, and every primary object
/// is reconciled again with it; caches, leadership and in-flight reconciles are kept. A
/// replacement must be [`hot_swappable`] with the first script: one that is not is ignored
/// with an error (restart the run to change what is watched).
pub async fn run_reloadable(
    scripts: ScriptSource,
    options: RunOptions,
    timing: LeaseTiming,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), RunError> {
    let script = scripts.borrow().clone();
    let client = client(options.kubeconfig.as_ref(), options.context.as_ref()).await?;
    if !options.install_crds.is_empty() {
        install_crds(&client, &options.install_crds, &options.name).await?;
    }
    let health = Health::new();
    let metrics = Metrics::new();
    let (health_addr, health_task) =
        health::serve_router(options.health_addr, health::health_router(health.clone()))
            .await
            .map_err(|e| RunError::Start(e.to_string()))?;
    let (metrics_addr, metrics_task) =
        health::serve_router(options.metrics_addr, health::metrics_router(metrics.clone()))
            .await
            .map_err(|e| RunError::Start(e.to_string()))?;
    tracing::info!(%health_addr, %metrics_addr, "serving health and metrics");

    let leadership = if options.leader_elect {
        // Unique per replica: the pod name, else host and process (two processes on one
        // host must not share an identity).
        let identity = std::env::var("POD_NAME").unwrap_or_else(|_| {
            let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "ctop".into());
            format!("{host}_{}", std::process::id())
        });
        let mut config =
            LeaseConfig::new(options.lease_namespace.clone(), format!("{}-leader", options.name), identity);
        config.lease_duration = timing.lease_duration;
        config.renew_deadline = timing.renew_deadline;
        config.retry_period = timing.retry_period;
        let lease = config.name.clone();
        let elector =
            LeaderElector::new(client.clone(), config).map_err(|e| RunError::Start(e.to_string()))?;
        let leadership = elector.run();
        let mut leading = leadership.subscribe();
        let metrics = metrics.clone();
        tokio::spawn(async move {
            loop {
                let now = *leading.borrow_and_update();
                metrics.set_leader(&lease, now);
                tracing::info!(lease, leading = now, "leadership");
                if leading.changed().await.is_err() {
                    metrics.set_leader(&lease, false);
                    return;
                }
            }
        });
        Some(leadership)
    } else {
        None
    };

    let (stop_tx, stop_rx) = watch::channel(false);
    let retries = Arc::new(Bucket::new(options.retry_limit));
    let mut tasks = Vec::new();
    for spec in script.spec().controllers.clone() {
        if !spec.handlers.iter().any(|h| h == "reconcile") {
            tracing::warn!(controller = spec.name, "no reconcile handler: not started");
            continue;
        }
        let leader = leadership.as_ref().map(crate::leader::Leadership::subscribe);
        let fut = start_controller(
            client.clone(),
            spec,
            scripts.clone(),
            retries.clone(),
            options.clone(),
            health.clone(),
            metrics.clone(),
            leader,
            stop_rx.clone(),
        )
        .await?;
        tasks.push(tokio::spawn(fut));
    }
    shutdown.await;
    tracing::info!("shutting down");
    stop_tx.send_replace(true);
    for t in tasks {
        let _ = t.await;
    }
    if let Some(l) = leadership
        && let Err(e) = l.shutdown().await
    {
        tracing::warn!(error = %e, "cannot release the lease");
    }
    health_task.abort();
    metrics_task.abort();
    Ok(())
}

#[allow(clippy::too_many_arguments)]
async fn start_controller(
    client: Client,
    spec: ControllerSpec,
    scripts: ScriptSource,
    retries: Arc<Bucket>,
    options: RunOptions,
    health: Health,
    metrics: Metrics,
    leader: Option<watch::Receiver<bool>>,
    stop: watch::Receiver<bool>,
) -> Result<impl Future<Output = ()> + Send + 'static, RunError> {
    let name = spec.name.clone();
    let queue =
        Arc::new(QueueStats { name: name.clone(), metrics: metrics.clone(), pending: Mutex::default() });
    let (primary, namespaced) = resolve(&client, &spec.for_).await?;
    let ns = options.namespace.as_deref();
    let scope = |namespaced: bool, ns: Option<&str>| ns.filter(|_| namespaced).map(str::to_owned);
    // One watch per kind and scope, shared by everything that reads or is triggered by
    // that kind (see `InformerPlan`): the primary kind's (the script may scope it by a
    // namespace and a label selector, both applied by the server), each managed or read
    // kind's, and one per `.watches()` that none of these covers.
    let mut plans = vec![InformerPlan::new(
        kind_key(&spec.for_),
        primary.clone(),
        namespaced,
        scope(namespaced, spec.namespace.as_deref().or(ns)),
        spec.label_selector.clone(),
        Role::Primary,
    )];
    for (k, owned) in spec.manages.iter().map(|k| (k, true)).chain(spec.reads.iter().map(|k| (k, false))) {
        if plans.iter().any(|p| p.key == kind_key(k)) {
            continue;
        }
        let (ar, child_namespaced) = resolve(&client, k).await?;
        let role = if owned { Role::Owned } else { Role::Read };
        // `.manages(kind, { childrenOnly: true })`: the server sends children only (every
        // child carries the ApplySet part-of label), unless the kind is also read in full.
        let selector = (owned && spec.children_only.contains(k) && !spec.reads.contains(k))
            .then(|| ctop_applier::applyset::PART_OF_LABEL.to_owned());
        plans.push(InformerPlan::new(
            kind_key(k),
            ar,
            child_namespaced,
            scope(child_namespaced, ns),
            selector,
            role,
        ));
    }
    let mut watch_sources = Vec::new();
    for (i, w) in spec.watches.iter().enumerate() {
        let (ar, watched_namespaced) = resolve(&client, &w.kind).await?;
        let key = kind_key(&w.kind);
        let w_ns = scope(watched_namespaced, w.namespace.as_deref().or(ns));
        let source =
            match plans.iter().position(|p| p.covers(&key, w_ns.as_deref(), w.label_selector.as_deref())) {
                Some(j) => {
                    let filter = EventScope::narrowing(&plans[j], w_ns, w.label_selector.as_deref())
                        .map_err(|e| RunError::Start(format!(".watches({key}): {e}")))?;
                    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
                    plans[j].subscribers.push(tx);
                    WatchSource::Shared(rx, filter)
                }
                None => {
                    plans.push(InformerPlan::new(
                        key,
                        ar.clone(),
                        watched_namespaced,
                        w_ns,
                        w.label_selector.clone(),
                        Role::Watch,
                    ));
                    WatchSource::Own(plans.len() - 1)
                }
            };
        watch_sources.push((i, w.clone(), ar, source));
    }
    let mut plans = plans.into_iter();
    let primary_plan = plans.next().ok_or_else(|| RunError::Start("no primary watch".into()))?;
    let primary_informer = primary_plan.start(&client);
    let primary_store = primary_informer.store.clone();
    let primary_stream = primary_informer.stream;
    let primary_triggers = {
        let queue = queue.clone();
        let objects: futures::stream::BoxStream<'static, Result<DynamicObject, watcher::Error>> =
            match spec.predicate.clone() {
                // Creations always pass; updates when the predicate holds against the
                // previous version; deletions are not triggers of the primary.
                Some(p) => filter_events(
                    primary_stream
                        .filter(|e| std::future::ready(!matches!(e, Ok(watcher::Event::Delete(_))))),
                    Some(p),
                )
                .map(Ok)
                .boxed(),
                None => without_errors(primary_stream.applied_objects(), name.clone()).boxed(),
            };
        objects.inspect(move |o| {
            if let Ok(o) = o {
                queue.add(object_key(o));
            }
        })
    };
    let mut controller =
        Controller::for_stream_with(primary_triggers, primary_store.clone(), primary.clone())
            .with_config(ControllerConfig::default().concurrency(options.concurrency));
    // The primary kind is observable too (`getObserved(myKind, ...)`), from the same cache.
    let mut caches = vec![Cached {
        key: kind_key(&spec.for_),
        ar: primary.clone(),
        namespaced,
        store: primary_store,
        sets: None,
    }];
    let mut synced = vec![primary_informer.synced];
    let mut own_watch_streams = HashMap::new();
    for (j, plan) in plans.enumerate() {
        let (key, role) = (plan.key.clone(), plan.role);
        let (ar, plan_namespaced) = (plan.ar.clone(), plan.namespaced);
        let informer = plan.start(&client);
        synced.push(informer.synced);
        // `getObserved` reads the first cache of a kind (a second one exists only for a
        // `.watches()` scoped beyond it).
        if !caches.iter().any(|c| c.key == key) {
            caches.push(Cached {
                key,
                ar: ar.clone(),
                namespaced: plan_namespaced,
                store: informer.store,
                sets: informer.sets,
            });
        }
        match role {
            Role::Owned => {
                let (queue, primary, namespaced) = (queue.clone(), primary.clone(), namespaced);
                let triggers =
                    without_errors(informer.stream.touched_objects(), name.clone()).inspect(move |o| {
                        if let Ok(o) = o {
                            owner_keys(o, &primary, namespaced).into_iter().for_each(|k| queue.add(k));
                        }
                    });
                controller = controller.owns_stream_with(triggers, ar);
            }
            Role::Watch => {
                own_watch_streams.insert(j + 1, informer.stream);
            }
            Role::Primary | Role::Read => {
                tokio::spawn(informer.stream.for_each(|_| async {}));
            }
        }
    }
    if let Some(every) = spec.every {
        tracing::info!(controller = name, every = ?Duration::from(every), "periodic resync");
    }
    health.register(&name);
    metrics.register_controller(&name, usize::from(options.concurrency));
    let reporter = Reporter { controller: options.name.clone(), instance: std::env::var("POD_NAME").ok() };
    let applier = Applier::new(client.clone(), ApplierConfig::new(options.name.clone()));
    let reloads = reloads(scripts.clone(), name.clone());
    let ctx = Arc::new(Ctx {
        kinds: Mutex::default(),
        spec,
        script: scripts,
        retries,
        primary,
        namespaced,
        caches: Arc::new(caches),
        applier,
        recorder: Recorder::new(client.clone(), reporter),
        client,
        options,
        health: health.clone(),
        metrics,
        leader,
        failures: Mutex::default(),
        queue,
    });
    {
        let ctx = ctx.clone();
        let stop = stop.clone();
        tokio::spawn(async move {
            for mut rx in synced {
                if rx.wait_for(|s| *s).await.is_err() {
                    // The watcher ended (shutdown): the caches will never sync.
                    return;
                }
            }
            ctx.health.set_caches_synced(&ctx.spec.name, true);
            tracing::info!(controller = ctx.spec.name, "caches synced");
            if ctx.spec.handlers.iter().any(|h| h == "onStart") {
                on_start(&ctx, stop).await;
            }
        });
    }
    for (i, w, ar, source) in watch_sources {
        let events = match source {
            WatchSource::Shared(rx, filter) => filter.apply(rx).boxed(),
            WatchSource::Own(j) => match own_watch_streams.remove(&j) {
                Some(stream) => stream.boxed(),
                None => continue,
            },
        };
        controller = controller.reconcile_on(watch_triggers(ctx.clone(), i, w, ar, events));
    }
    controller = controller.reconcile_all_on(reloads);
    if let Some(leader) = ctx.leader.clone() {
        // A replica that wins the Lease reconciles everything at once, instead of waiting
        // for the requeue each object got while it was standing by.
        let won = tokio_stream::wrappers::WatchStream::new(leader)
            .filter(|leading| std::future::ready(*leading))
            .map(|_| ());
        controller = controller.reconcile_all_on(won);
    }
    let mut stop = stop;
    let shutdown = async move {
        let _ = stop.wait_for(|s| *s).await;
    };
    health.set_ready(&name, true);
    Ok(controller.graceful_shutdown_on(shutdown).run(reconcile, error_policy, ctx).for_each(|r| async move {
        if let Err(e) = r {
            tracing::debug!(error = %e, "controller event");
        }
    }))
}

/// One `()` per replacement of the script (see [`run_reloadable`]): reconcile everything.
fn reloads(
    mut scripts: ScriptSource,
    controller: String,
) -> impl futures::Stream<Item = ()> + Send + 'static {
    // The script running now is not a replacement.
    scripts.mark_unchanged();
    futures::stream::unfold(scripts, move |mut rx| {
        let controller = controller.clone();
        async move {
            rx.changed().await.ok()?;
            tracing::info!(controller, "script replaced: reconciling every object with it");
            Some(((), rx))
        }
    })
}

/// The one-shot `onStart` handler: run once the caches are synced and (when elected) this
/// replica leads. `Result.error` and failures retry with backoff; `Result.requeue(d)` runs
/// it again after `d`; `Result.ok()` ends it. Its `apply`s are server-side applied without
/// an owner (never pruned), its `patch`es merged, its events published when they name the
/// object they regard.
async fn on_start(ctx: &Arc<Ctx>, mut stop: watch::Receiver<bool>) {
    let name = ctx.spec.name.clone();
    let mut failures = 0u32;
    loop {
        if let Some(leader) = &ctx.leader {
            let mut leader = leader.clone();
            tokio::select! {
                r = leader.wait_for(|l| *l) => if r.is_err() { return },
                _ = stop.wait_for(|s| *s) => return,
            }
        }
        let started = Instant::now();
        let out = run_on_start(ctx).await;
        let took = started.elapsed();
        let delay = match out {
            Ok(None) => {
                ctx.metrics.record_reconcile(&name, ReconcileResult::Success, took);
                tracing::info!(controller = name, took = ?took, "onStart done");
                return;
            }
            Ok(Some(after)) => {
                ctx.metrics.record_reconcile(&name, ReconcileResult::Success, took);
                failures = 0;
                after
            }
            Err(e) => {
                ctx.metrics.record_reconcile(&name, ReconcileResult::Error, took);
                ctx.health.record_error(&name, format!("onStart: {e}"));
                failures = failures.saturating_add(1);
                let delay = backoff(failures).max(ctx.retries.reserve());
                tracing::warn!(controller = name, error = %e, retry_in = ?delay, "onStart failed");
                delay
            }
        };
        tokio::select! {
            () = tokio::time::sleep(delay) => {}
            _ = stop.wait_for(|s| *s) => return,
        }
    }
}

/// One `onStart` call and its side effects: `Some(d)` when it asked to run again after `d`.
async fn run_on_start(ctx: &Arc<Ctx>) -> Result<Option<Duration>, ReconcileError> {
    let out = dispatch(ctx, "onStart", None).await?;
    match out["result"]["type"].as_str() {
        Some("error") => {
            return Err(ReconcileError(out["result"]["message"].as_str().unwrap_or("").to_owned()));
        }
        Some("requeue") => {}
        _ => {}
    }
    for obj in out["applies"].as_array().into_iter().flatten() {
        apply_unowned(ctx, obj).await?;
    }
    apply_patches(ctx, None, &out).await?;
    publish_events(ctx, None, &out).await;
    Ok((out["result"]["type"] == "requeue").then(|| requeue_after(&out)))
}

/// Server-side apply `obj` with the operator's field manager and no owner reference.
async fn apply_unowned(ctx: &Ctx, obj: &Value) -> Result<(), ReconcileError> {
    let (ar, namespaced, name, ns) = target_of(ctx, obj, None).await?;
    let api = api_for(&ctx.client, &ar, namespaced, ns.as_deref());
    api.patch(&name, &PatchParams::apply(&ctx.options.name).force(), &Patch::Apply(obj))
        .await
        .map_err(|e| ReconcileError(format!("apply {}/{} {name}: {e}", ar.api_version, ar.kind)))?;
    Ok(())
}

/// Cached objects drop `managedFields`: nothing reads them (the applier compares its own
/// fingerprints), and they are often the larger part of an object.
fn strip_managed_fields(o: &mut DynamicObject) {
    o.metadata.managed_fields = None;
}

/// Poll `stream` in a task of its own and hand its items over through a channel; the task
/// ends when the returned stream is dropped. Each watcher runs like this, so that its
/// relists and backoff sleeps never wait on the controller's task (or the other way).
fn detach<S>(stream: S) -> impl futures::Stream<Item = S::Item> + Send + 'static
where
    S: futures::Stream + Send + 'static,
    S::Item: Send + 'static,
{
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut stream = std::pin::pin!(stream);
        loop {
            tokio::select! {
                item = stream.next() => match item {
                    Some(item) => if tx.send(item).is_err() { return },
                    None => return,
                },
                () = tx.closed() => return,
            }
        }
    });
    futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|item| (item, rx)) })
}

/// Drop the errors of a trigger stream (logged; the watcher behind it retries with its own
/// backoff). kube-runtime's controller answers any trigger error by pausing *all* triggers
/// with a growing backoff: a few `410`s on one watch would stall every reconcile for a
/// minute and more.
fn without_errors<T, E>(
    stream: impl futures::Stream<Item = Result<T, E>> + Send + 'static,
    controller: String,
) -> impl futures::Stream<Item = Result<T, E>> + Send + 'static
where
    T: Send + 'static,
    E: std::fmt::Display + Send + 'static,
{
    stream.filter(move |r| {
        if let Err(e) = r {
            tracing::warn!(controller, error = %e, "watch failed; retrying with backoff");
        }
        std::future::ready(r.is_ok())
    })
}

/// Pass a reflector's events through and report its first `InitDone` (the cache holds the
/// full list) on a watch channel, which wakes any number of waiters.
fn tap_init_done<S>(
    stream: S,
) -> (impl futures::Stream<Item = S::Item> + Send + 'static, watch::Receiver<bool>)
where
    S: futures::Stream<Item = Result<watcher::Event<DynamicObject>, watcher::Error>> + Send + 'static,
{
    let (tx, rx) = watch::channel(false);
    let stream = stream.inspect(move |e| {
        if matches!(e, Ok(watcher::Event::InitDone)) {
            tx.send_replace(true);
        }
    });
    (stream, rx)
}

/// Whether a change from `old` to `new` passes `p`.
fn predicate_passes(p: &Predicate, old: &DynamicObject, new: &DynamicObject) -> bool {
    match p {
        Predicate::Named(NamedPredicate::GenerationChanged) => old.meta().generation != new.meta().generation,
        Predicate::Named(NamedPredicate::ResourceVersionChanged) => {
            old.meta().resource_version != new.meta().resource_version
        }
        Predicate::Named(NamedPredicate::LabelChanged) => old.labels() != new.labels(),
        Predicate::Named(NamedPredicate::AnnotationChanged) => old.annotations() != new.annotations(),
        Predicate::And { and } => and.iter().all(|p| predicate_passes(p, old, new)),
        Predicate::Or { or } => or.iter().any(|p| predicate_passes(p, old, new)),
    }
}

/// The objects of watcher events that pass `predicate`: creations and deletions always
/// pass; an update passes when the predicate holds between the previous version (kept
/// per object) and the new one. A relist replays objects as updates of what was seen.
fn filter_events<S>(
    events: S,
    predicate: Option<Predicate>,
) -> impl futures::Stream<Item = DynamicObject> + Send + 'static
where
    S: futures::Stream<Item = Result<watcher::Event<DynamicObject>, watcher::Error>> + Send + 'static,
{
    let mut previous: HashMap<String, DynamicObject> = HashMap::new();
    events
        .filter_map(|e| async move {
            match e {
                Ok(e) => Some(e),
                Err(err) => {
                    tracing::warn!(error = %err, "watch failed; retrying with backoff");
                    None
                }
            }
        })
        .flat_map(move |event| {
            let out: Vec<DynamicObject> = match event {
                watcher::Event::Apply(o) | watcher::Event::InitApply(o) => {
                    let key = object_key(&o);
                    let pass = match (&predicate, previous.get(&key)) {
                        (Some(p), Some(old)) => predicate_passes(p, old, &o),
                        (None, Some(old)) => old.resource_version() != o.resource_version(),
                        (_, None) => true,
                    };
                    previous.insert(key, o.clone());
                    if pass { vec![o] } else { Vec::new() }
                }
                watcher::Event::Delete(o) => {
                    previous.remove(&object_key(&o));
                    vec![o]
                }
                watcher::Event::Init | watcher::Event::InitDone => Vec::new(),
            };
            futures::stream::iter(out)
        })
}

/// The primary objects a `.watches()` event maps to: through the script's `map:<index>`
/// handler, or by the object's owner references to the primary kind.
async fn map_watched(
    ctx: &Arc<Ctx>,
    index: usize,
    w: &WatchSpec,
    obj: DynamicObject,
) -> Vec<ObjectRef<DynamicObject>> {
    let ns = obj.namespace();
    if !w.mapper {
        return obj
            .owner_references()
            .iter()
            .filter(|r| r.api_version == ctx.primary.api_version && r.kind == ctx.primary.kind)
            .map(|r| {
                let o = ObjectRef::new_with(&r.name, ctx.primary.clone());
                match (&ns, ctx.namespaced) {
                    (Some(ns), true) => o.within(ns),
                    _ => o,
                }
            })
            .collect();
    }
    let handler = format!("map:{index}");
    let out = match dispatch(ctx, &handler, Some(&obj)).await {
        Ok(out) => out,
        Err(e) => {
            tracing::warn!(controller = ctx.spec.name, object = object_key(&obj), error = %e, "mapper failed");
            return Vec::new();
        }
    };
    out["requests"]
        .as_array()
        .map(|rs| {
            rs.iter()
                .filter_map(|r| {
                    let o = ObjectRef::new_with(r["name"].as_str()?, ctx.primary.clone());
                    Some(match r["namespace"].as_str() {
                        Some(ns) if ctx.namespaced => o.within(ns),
                        _ => o,
                    })
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The reconcile triggers of the `index`th `.watches()`.
fn watch_triggers<S>(
    ctx: Arc<Ctx>,
    index: usize,
    w: WatchSpec,
    ar: ApiResource,
    events: S,
) -> impl futures::Stream<Item = ObjectRef<DynamicObject>> + Send + 'static
where
    S: futures::Stream<Item = Result<watcher::Event<DynamicObject>, watcher::Error>> + Send + 'static,
{
    let w = Arc::new(w);
    filter_events(events, w.predicate.clone())
        .then(move |mut obj| {
            let ctx = ctx.clone();
            let w = w.clone();
            obj.types = Some(TypeMeta { api_version: ar.api_version.clone(), kind: ar.kind.clone() });
            async move {
                let refs = map_watched(&ctx, index, &w, obj).await;
                for r in &refs {
                    ctx.queue.add(format!("{}/{}", r.namespace.as_deref().unwrap_or_default(), r.name));
                }
                futures::stream::iter(refs)
            }
        })
        .flatten()
}

/// The kind (resolved through the caches, else discovery, remembered), scope, name and
/// namespace of an object a handler returned. A namespaced object without a namespace
/// gets the owner's, else the run's namespace, else `default`.
async fn target_of(
    ctx: &Ctx,
    obj: &Value,
    owner: Option<&DynamicObject>,
) -> Result<(ApiResource, bool, String, Option<String>), ReconcileError> {
    let (Some(api_version), Some(kind), Some(name)) =
        (obj["apiVersion"].as_str(), obj["kind"].as_str(), obj["metadata"]["name"].as_str())
    else {
        return Err(ReconcileError("each object needs apiVersion, kind and metadata.name".into()));
    };
    let key = format!("{api_version}/{kind}");
    let known = ctx
        .caches
        .iter()
        .find(|c| c.key == key)
        .map(|c| (c.ar.clone(), c.namespaced))
        .or_else(|| ctx.kinds.lock().get(&key).cloned());
    let (ar, namespaced) = match known {
        Some(k) => k,
        None => {
            let k = KindRef { api_version: api_version.into(), kind: kind.into() };
            let resolved = resolve(&ctx.client, &k).await.map_err(|e| ReconcileError(e.to_string()))?;
            ctx.kinds.lock().insert(key, resolved.clone());
            resolved
        }
    };
    let ns = obj["metadata"]["namespace"]
        .as_str()
        .map(str::to_owned)
        .or_else(|| owner.and_then(kube::ResourceExt::namespace))
        .or_else(|| ctx.options.namespace.clone())
        .or_else(|| namespaced.then(|| "default".to_owned()));
    Ok((ar, namespaced, name.to_owned(), ns))
}

/// Merge-patch each of the output's `patches` into its live object (not owned: no owner
/// reference, never pruned). Namespaced objects without a namespace get the owner's.
async fn apply_patches(ctx: &Ctx, owner: Option<&DynamicObject>, out: &Value) -> Result<(), ReconcileError> {
    let Some(patches) = out["patches"].as_array() else { return Ok(()) };
    for p in patches {
        let (ar, namespaced, name, ns) =
            target_of(ctx, p, owner).await.map_err(|e| ReconcileError(format!("patch: {e}")))?;
        let api = api_for(&ctx.client, &ar, namespaced, ns.as_deref());
        let mut body = p.clone();
        if let Some(o) = body.as_object_mut() {
            o.remove("apiVersion");
            o.remove("kind");
        }
        api.patch(&name, &PatchParams::default(), &Patch::Merge(&body))
            .await
            .map_err(|e| ReconcileError(format!("patch {}/{} {name}: {e}", ar.api_version, ar.kind)))?;
    }
    Ok(())
}

fn object_key(obj: &DynamicObject) -> String {
    format!("{}/{}", obj.namespace().unwrap_or_default(), obj.name_any())
}

/// The per-object delay before the `n`th retry: 1 s doubling to 5 min.
fn backoff(n: u32) -> Duration {
    Duration::from_millis(500u64.saturating_mul(1 << n.min(10))).min(Duration::from_secs(300))
}

fn error_policy(obj: Arc<DynamicObject>, err: &ReconcileError, ctx: Arc<Ctx>) -> Action {
    let n = {
        let mut f = ctx.failures.lock();
        let n = f.entry(object_key(&obj)).or_insert(0);
        *n = n.saturating_add(1);
        *n
    };
    let delay = backoff(n).max(ctx.retries.reserve());
    ctx.metrics.queue_retry(&ctx.spec.name);
    tracing::warn!(controller = ctx.spec.name, object = object_key(&obj), error = %err, retry_in = ?delay, "reconcile failed");
    Action::requeue(delay)
}

/// The caches as the script's `getObserved` / `listObserved` see them during one call:
/// for a call about a namespaced object of a namespaced primary, the objects of its
/// namespace plus every cluster-scoped one; for calls without an object (`onStart`), all.
/// Objects are looked up by key and serialized only when the script asks for them.
struct CacheView {
    caches: Arc<Vec<Cached>>,
    /// The namespace namespaced kinds are restricted to, if any.
    namespace: Option<String>,
}

impl CacheView {
    fn new(ctx: &Ctx, object: Option<&DynamicObject>) -> Self {
        let namespace = object.and_then(kube::ResourceExt::namespace).filter(|_| ctx.namespaced);
        Self { caches: ctx.caches.clone(), namespace }
    }

    /// `o` as JSON text with the cache's apiVersion and kind.
    fn json(c: &Cached, o: &DynamicObject) -> String {
        let (api_version, kind) = c.key.rsplit_once('/').unwrap_or(("", c.key.as_str()));
        Typed::new(o, api_version, kind).to_json()
    }
}

/// A cached object serialized straight from its typed parts, with `apiVersion` and `kind`
/// given (a cache's objects may lack them). No intermediate `serde_json::Value`: handing
/// objects to the script is on every reconcile's path.
#[derive(serde::Serialize)]
struct Typed<'a> {
    #[serde(rename = "apiVersion")]
    api_version: &'a str,
    kind: &'a str,
    metadata: &'a kube::api::ObjectMeta,
    #[serde(flatten)]
    data: &'a Value,
}

impl<'a> Typed<'a> {
    fn new(o: &'a DynamicObject, api_version: &'a str, kind: &'a str) -> Self {
        Typed { api_version, kind, metadata: &o.metadata, data: &o.data }
    }

    /// The primary object, typed from its own `TypeMeta` or else from `ar`.
    fn primary(o: &'a DynamicObject, ar: &'a ApiResource) -> Self {
        let (api_version, kind) = o.types.as_ref().map_or((ar.api_version.as_str(), ar.kind.as_str()), |t| {
            (t.api_version.as_str(), t.kind.as_str())
        });
        Self::new(o, api_version, kind)
    }

    fn to_json(&self) -> String {
        // Serializing borrowed JSON values into a string cannot fail unless `data` is not an
        // object (never from the API server); then it is left out.
        serde_json::to_string(self).unwrap_or_else(|_| {
            serde_json::to_string(&Typed { data: &Value::Null, ..*self })
                .unwrap_or_else(|_| "null".to_owned())
        })
    }
}

/// The dispatch input, serialized in one pass.
#[derive(serde::Serialize)]
struct Input<'a> {
    object: Option<Typed<'a>>,
    env: &'a Value,
    values: &'a Value,
}

impl crate::vm::Observer for CacheView {
    fn list(&self, kind: &str) -> Option<String> {
        let c = self.caches.iter().find(|c| c.key == kind)?;
        let items: Vec<String> = c
            .store
            .state()
            .iter()
            .filter(|o| !c.namespaced || self.namespace.is_none() || o.namespace() == self.namespace)
            .map(|o| Self::json(c, o))
            .collect();
        Some(format!("[{}]", items.join(",")))
    }

    fn get(&self, kind: &str, namespace: Option<&str>, name: &str) -> Option<Option<String>> {
        let c = self.caches.iter().find(|c| c.key == kind)?;
        let key = ObjectRef::new_with(name, c.ar.clone());
        let key = match (c.namespaced, namespace) {
            (true, Some(ns)) => {
                if self.namespace.as_deref().is_some_and(|own| own != ns) {
                    return Some(None);
                }
                key.within(ns)
            }
            (true, None) => return Some(None),
            (false, _) => key,
        };
        Some(c.store.get(&key).map(|o| Self::json(c, &o)))
    }
}

async fn dispatch(
    ctx: &Arc<Ctx>,
    handler: &str,
    object: Option<&DynamicObject>,
) -> Result<Value, ReconcileError> {
    let input = Input {
        object: object.map(|o| Typed::primary(o, &ctx.primary)),
        env: &ctx.options.env,
        values: &ctx.options.values,
    };
    let input = serde_json::to_string(&input)
        .map_err(|e| ReconcileError(format!("cannot serialize the {handler} input: {e}")))?;
    let observer: Arc<dyn crate::vm::Observer> = Arc::new(CacheView::new(ctx, object));
    let script = ctx.script.borrow().clone();
    let started = Instant::now();
    // The script's own deadline (`--reconcile-timeout`) bounds the call; waiting for a free
    // runtime does not count, and a call stuck in a host call is abandoned (Pool::run).
    let out = script
        .dispatch_async(handler, ctx.spec.index, input, Some(observer))
        .instrument(tracing::info_span!("script", handler))
        .await;
    ctx.metrics.observe_script(&ctx.spec.name, handler, started.elapsed());
    out.map_err(|e| ReconcileError(format!("{handler} failed: {e}")))
}

async fn patch_finalizers(
    ctx: &Ctx,
    owner: &DynamicObject,
    finalizers: Vec<String>,
) -> Result<(), ReconcileError> {
    let api = api_for(&ctx.client, &ctx.primary, ctx.namespaced, owner.namespace().as_deref());
    let patch = json!({"metadata": {"finalizers": finalizers, "resourceVersion": owner.resource_version()}});
    api.patch(&owner.name_any(), &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map_err(|e| ReconcileError(format!("cannot update the finalizers: {e}")))?;
    Ok(())
}

async fn reconcile(obj: Arc<DynamicObject>, ctx: Arc<Ctx>) -> Result<Action, ReconcileError> {
    if let Some(leader) = &ctx.leader
        && !*leader.borrow()
    {
        return Ok(Action::requeue(Duration::from_secs(5)));
    }
    // One span per reconcile (exported as a trace when OpenTelemetry is configured), with
    // the script call, the applies and the status write as children.
    let span = tracing::info_span!(
        "reconcile",
        controller = %ctx.spec.name,
        object = %object_key(&obj),
        generation = obj.meta().generation.unwrap_or_default(),
        otel.status_code = tracing::field::Empty,
        error = tracing::field::Empty,
    );
    let key = object_key(&obj);
    ctx.queue.started(&key);
    ctx.metrics.add_active_workers(&ctx.spec.name, 1);
    let started = Instant::now();
    let reference = obj.object_ref(&ctx.primary);
    let result = reconcile_inner(obj, &ctx).instrument(span.clone()).await;
    let took = started.elapsed();
    ctx.metrics.add_active_workers(&ctx.spec.name, -1);
    ctx.metrics.observe_work_duration(&ctx.spec.name, took);
    if let Err(e) = &result {
        span.record("otel.status_code", "ERROR");
        span.record("error", tracing::field::display(e));
    }
    match &result {
        Ok(_) => {
            ctx.health.record_success(&ctx.spec.name);
            ctx.metrics.record_reconcile(&ctx.spec.name, ReconcileResult::Success, took);
        }
        Err(e) => {
            ctx.health.record_error(&ctx.spec.name, e.to_string());
            ctx.metrics.record_reconcile(&ctx.spec.name, ReconcileResult::Error, took);
            // The failure on the object itself, for `kubectl describe` (the recorder turns
            // repeats of the same failure into one event with a count).
            let event = Event {
                type_: EventType::Warning,
                reason: "ReconcileError".into(),
                note: Some(event_note(&e.to_string())),
                action: "Reconcile".into(),
                secondary: None,
            };
            if let Err(err) = ctx.recorder.publish(&event, &reference).await {
                tracing::warn!(error = %err, "cannot publish the failure as an event");
            }
        }
    }
    result
}

/// An event's note: at most 1 kB, as the API server allows.
fn event_note(text: &str) -> String {
    const MAX: usize = 1024;
    if text.len() <= MAX {
        return text.to_owned();
    }
    let mut cut = text[..text.floor_char_boundary(MAX - 3)].to_owned();
    cut.push('…');
    cut
}

async fn reconcile_inner(obj: Arc<DynamicObject>, ctx: &Arc<Ctx>) -> Result<Action, ReconcileError> {
    let mut owner = (*obj).clone();
    owner.types =
        Some(TypeMeta { api_version: ctx.primary.api_version.clone(), kind: ctx.primary.kind.clone() });
    let finalizer = ctx.spec.finalizer.clone().filter(|_| ctx.spec.handlers.iter().any(|h| h == "finalize"));
    let has_finalizer = |o: &DynamicObject, f: &str| o.finalizers().iter().any(|x| x == f);

    if owner.meta().deletion_timestamp.is_some() {
        if let Some(f) = finalizer.filter(|f| has_finalizer(&owner, f)) {
            let out = dispatch(ctx, "finalize", Some(&owner)).await?;
            publish_events(ctx, Some(&owner), &out).await;
            match out["result"]["type"].as_str() {
                Some("error") => {
                    return Err(ReconcileError(format!(
                        "finalize: {}",
                        out["result"]["message"].as_str().unwrap_or("")
                    )));
                }
                Some("requeue") => {
                    apply_patches(ctx, Some(&owner), &out).await?;
                    return Ok(Action::requeue(requeue_after(&out)));
                }
                _ => {}
            }
            apply_patches(ctx, Some(&owner), &out).await?;
            update_finalizers(ctx, &owner, &out, Some(&f)).await?;
        } else if !owner.finalizers().is_empty() {
            // Finalizers the script manages itself (`addFinalizer`): the reconcile sees the
            // object on its way out and may remove them. Nothing is applied for it.
            return reconcile_deleting(ctx, &owner).await;
        }
        if let Some(uid) = owner.uid() {
            ctx.applier.forget(&uid);
            ctx.applier.status_writer().forget(&uid);
        }
        ctx.failures.lock().remove(&object_key(&owner));
        return Ok(Action::await_change());
    }
    if let Some(f) = &finalizer
        && !has_finalizer(&owner, f)
    {
        let mut all = owner.finalizers().to_vec();
        all.push(f.clone());
        patch_finalizers(ctx, &owner, all).await?;
        // The change triggers the next reconcile.
        return Ok(Action::await_change());
    }

    let mut out = dispatch(ctx, "reconcile", Some(&owner)).await?;
    let result_type = out["result"]["type"].as_str().unwrap_or("ok").to_owned();
    // The script's finalizer changes go first: one it adds is in place before any child.
    let mut failure = if result_type == "error" {
        Some(format!("reconcile: {}", out["result"]["message"].as_str().unwrap_or("")))
    } else {
        update_finalizers(ctx, &owner, &out, None).await.err().map(|e| e.0)
    };
    if failure.is_none() {
        // Moved out, not cloned: the children can be most of the call's output budget.
        let applies = match out.get_mut("applies").map(Value::take) {
            Some(Value::Array(applies)) => applies,
            _ => Vec::new(),
        };
        let span = tracing::info_span!("apply", children = applies.len());
        let children = Children(&ctx.caches);
        match ctx.applier.apply_cached(&owner, applies, &children).instrument(span).await {
            Ok(report) => {
                ctx.metrics.applies(&ctx.spec.name, report.applied.len() as u64);
                ctx.metrics.applies_skipped(&ctx.spec.name, report.skipped.len() as u64);
                ctx.metrics.prunes(&ctx.spec.name, report.pruned.len() as u64);
                if let Err(e) = apply_patches(ctx, Some(&owner), &out).await {
                    failure = Some(e.0);
                }
            }
            Err(e) => failure = Some(format!("apply: {e}")),
        }
    }

    let mut status = match &out["status"] {
        Value::Object(s) => Some(s.clone()),
        _ => None,
    };
    if let Some(Value::Array(conditions)) = out.get("conditions")
        && !conditions.is_empty()
    {
        status.get_or_insert_with(Map::new).insert("conditions".into(), Value::Array(conditions.clone()));
    }
    if let Some(status) = status
        && let Err(e) = ctx
            .applier
            .status_writer()
            .write(&owner, Value::Object(status))
            .instrument(tracing::info_span!("status"))
            .await
    {
        failure.get_or_insert(format!("status: {e}"));
    }
    publish_events(ctx, Some(&owner), &out).await;
    if let Some(f) = failure {
        return Err(ReconcileError(f));
    }
    ctx.failures.lock().remove(&object_key(&owner));
    Ok(if result_type == "requeue" {
        Action::requeue(requeue_after(&out))
    } else if let Some(every) = ctx.spec.every {
        Action::requeue(every.into())
    } else {
        Action::await_change()
    })
}

/// The caches of the managed kinds as the applier reads them: children by key for the
/// unchanged-skip, and an ApplySet's members for pruning (no LIST per reconcile).
struct Children<'a>(&'a [Cached]);

impl ChildCache for Children<'_> {
    fn get(&self, c: &ChildRef) -> Option<Arc<dyn CachedMeta>> {
        let cache = self.find(&c.api_version, &c.kind)?;
        let r = ObjectRef::new_with(&c.name, cache.ar.clone());
        let r = match &c.namespace {
            Some(ns) if cache.namespaced => r.within(ns),
            _ => r,
        };
        Some(cache.store.get(&r)?)
    }

    fn members(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        set_id: &str,
    ) -> Option<Vec<Arc<dyn CachedMeta>>> {
        let cache = self.find(api_version, kind)?;
        let label = ctop_applier::applyset::PART_OF_LABEL;
        let labelled = |o: &DynamicObject| o.labels().get(label).map(String::as_str) == Some(set_id);
        if let Some(index) = &cache.sets {
            return Some(
                index
                    .members(set_id)
                    .into_iter()
                    .filter(|(ns, _)| !cache.namespaced || Some(ns.as_str()) == namespace)
                    .filter_map(|(ns, name)| {
                        let r = ObjectRef::new_with(&name, cache.ar.clone());
                        cache.store.get(&if cache.namespaced { r.within(&ns) } else { r })
                    })
                    .filter(|o| labelled(o))
                    .map(|o| o as Arc<dyn CachedMeta>)
                    .collect(),
            );
        }
        Some(
            cache
                .store
                .state()
                .into_iter()
                .filter(|o| !cache.namespaced || o.metadata.namespace.as_deref() == namespace)
                .filter(|o| labelled(o))
                .map(|o| o as Arc<dyn CachedMeta>)
                .collect(),
        )
    }
}

impl Children<'_> {
    /// The cache of `api_version`/`kind`, found without building its key.
    fn find(&self, api_version: &str, kind: &str) -> Option<&Cached> {
        self.0.iter().find(|x| {
            x.key.len() == api_version.len() + 1 + kind.len()
                && x.key.starts_with(api_version)
                && x.key.ends_with(kind)
                && x.key.as_bytes().get(api_version.len()) == Some(&b'/')
        })
    }
}

/// A reconcile of an object being deleted that carries finalizers other than the
/// controller's own: its status, patches, events and finalizer changes are written, its
/// children are not applied (nor pruned; garbage collection removes them).
async fn reconcile_deleting(ctx: &Arc<Ctx>, owner: &DynamicObject) -> Result<Action, ReconcileError> {
    let out = dispatch(ctx, "reconcile", Some(owner)).await?;
    publish_events(ctx, Some(owner), &out).await;
    if out["result"]["type"] == "error" {
        return Err(ReconcileError(format!(
            "reconcile: {}",
            out["result"]["message"].as_str().unwrap_or("")
        )));
    }
    apply_patches(ctx, Some(owner), &out).await?;
    update_finalizers(ctx, owner, &out, None).await?;
    Ok(if out["result"]["type"] == "requeue" {
        Action::requeue(requeue_after(&out))
    } else {
        Action::await_change()
    })
}

/// Write the finalizers the handler added and removed (`addFinalizer` / `removeFinalizer`
/// on the object being handled), and drop `done` (the controller's own, after `finalize`).
async fn update_finalizers(
    ctx: &Ctx,
    owner: &DynamicObject,
    out: &Value,
    done: Option<&str>,
) -> Result<(), ReconcileError> {
    let names = |key: &str| -> Vec<String> {
        out["finalizers"][key]
            .as_array()
            .map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect())
            .unwrap_or_default()
    };
    let (add, remove) = (names("add"), names("remove"));
    let current = owner.finalizers().to_vec();
    let mut next: Vec<String> =
        current.iter().filter(|f| !remove.contains(f) && Some(f.as_str()) != done).cloned().collect();
    for f in add {
        // Nothing new is added to an object on its way out (the API server refuses it).
        if !next.contains(&f) && owner.meta().deletion_timestamp.is_none() {
            next.push(f);
        }
    }
    if next != current {
        patch_finalizers(ctx, owner, next).await?;
    }
    Ok(())
}

fn requeue_after(out: &Value) -> Duration {
    out["result"]["after"]
        .as_str()
        .and_then(|s| s.parse::<ctop_core::Duration>().ok())
        .map_or(Duration::from_secs(1), Into::into)
}

/// Publish the output's events: about the object each names in `regarding`, else about
/// `owner` (events of `onStart` without `regarding` are logged instead).
async fn publish_events(ctx: &Ctx, owner: Option<&DynamicObject>, out: &Value) {
    let Some(events) = out["events"].as_array() else { return };
    let own: Option<ObjectReference> = owner.map(|o| o.object_ref(&ctx.primary));
    for e in events {
        let reference = match (e.get("regarding"), &own) {
            (Some(r), _) => ObjectReference {
                api_version: r["apiVersion"].as_str().map(Into::into),
                kind: r["kind"].as_str().map(Into::into),
                name: r["name"].as_str().map(Into::into),
                namespace: r["namespace"].as_str().map(Into::into),
                uid: r["uid"].as_str().map(Into::into),
                ..ObjectReference::default()
            },
            (None, Some(own)) => own.clone(),
            (None, None) => {
                tracing::info!(controller = ctx.spec.name, reason = %e["reason"], message = %e["message"], "event without an object");
                continue;
            }
        };
        let event = Event {
            type_: if e["type"] == "Warning" { EventType::Warning } else { EventType::Normal },
            reason: e["reason"].as_str().unwrap_or("Reconciled").to_owned(),
            note: e["message"].as_str().map(Into::into),
            action: "Reconcile".into(),
            secondary: None,
        };
        if let Err(err) = ctx.recorder.publish(&event, &reference).await {
            tracing::warn!(error = %err, "cannot publish an event");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_must_be_a_mapping() {
        assert_eq!(values_from_yaml("").ok(), Some(json!({})));
        assert_eq!(values_from_yaml("~\n").ok(), Some(json!({})));
        assert_eq!(values_from_yaml("tier: gold\n").ok(), Some(json!({"tier": "gold"})));
        let list = values_from_yaml("- tier: gold\n").map_err(|e| e.to_string());
        assert_eq!(
            list,
            Err("the values file holds a list, not a mapping of keys to values (scripts read Values.<key>)"
                .into())
        );
        assert!(matches!(values_from_yaml("a: [\n"), Err(ValuesError::Yaml(_))));
    }

    #[test]
    fn a_shared_watch_is_narrowed_as_the_server_would() {
        let ar =
            ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("", "v1", "ConfigMap"), "configmaps");
        let wide = InformerPlan::new("v1/ConfigMap".into(), ar.clone(), true, None, None, Role::Read);
        assert!(wide.covers("v1/ConfigMap", Some("a"), Some("watched=yes")));
        assert!(!wide.covers("v1/Secret", None, None));
        let narrow =
            InformerPlan::new("v1/ConfigMap".into(), ar.clone(), true, Some("a".into()), None, Role::Read);
        assert!(!narrow.covers("v1/ConfigMap", None, None), "one namespace does not cover all");
        assert!(EventScope::narrowing(&wide, None, Some("in (")).is_err());

        let scope = EventScope::narrowing(&wide, Some("a".into()), Some("watched=yes")).expect("valid");
        let cm = |ns: &str, name: &str, watched: bool| {
            let mut o = DynamicObject::new(name, &ar).within(ns);
            if watched {
                o.metadata.labels = Some([("watched".to_owned(), "yes".to_owned())].into());
            }
            o
        };
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        for e in [
            watcher::Event::Init,
            watcher::Event::InitApply(cm("a", "in", true)),
            watcher::Event::InitApply(cm("b", "elsewhere", true)),
            watcher::Event::InitApply(cm("a", "unlabelled", false)),
            watcher::Event::InitDone,
            watcher::Event::Apply(cm("a", "in", false)),
            watcher::Event::Apply(cm("a", "unlabelled", true)),
            watcher::Event::Delete(cm("a", "in", false)),
            watcher::Event::Delete(cm("a", "unlabelled", true)),
        ] {
            tx.send(e).expect("send");
        }
        drop(tx);
        let got: Vec<String> = futures::executor::block_on(scope.apply(rx).collect::<Vec<_>>())
            .into_iter()
            .map(|e| match e {
                Ok(watcher::Event::Init) => "init".to_owned(),
                Ok(watcher::Event::InitDone) => "done".to_owned(),
                Ok(watcher::Event::InitApply(o)) => format!("list {}", o.name_any()),
                Ok(watcher::Event::Apply(o)) => format!("apply {}", o.name_any()),
                Ok(watcher::Event::Delete(o)) => format!("delete {}", o.name_any()),
                Err(e) => format!("error {e}"),
            })
            .collect();
        // `in` leaves the scope (a deletion), `unlabelled` enters it; the second deletion
        // of `in` is not reported again.
        assert_eq!(got, ["init", "list in", "done", "delete in", "apply unlabelled", "delete unlabelled"]);
    }

    #[test]
    fn objects_reach_the_script_as_the_api_serves_them() {
        let ar = ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("apps", "v1", "Deployment"),
            "deployments",
        );
        let mut o = DynamicObject::new("web", &ar).within("prod").data(json!({"spec": {"replicas": 2}}));
        o.metadata.labels = Some([("app".to_owned(), "web".to_owned())].into());
        let want = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "prod", "labels": {"app": "web"}}, "spec": {"replicas": 2}});
        let text = Typed::new(&o, "apps/v1", "Deployment").to_json();
        assert_eq!(serde_json::from_str::<Value>(&text).ok(), Some(want.clone()));
        // A cached object without its TypeMeta takes the cache's kind; the primary its own.
        o.types = None;
        assert_eq!(
            serde_json::from_str::<Value>(&Typed::primary(&o, &ar).to_json()).ok(),
            Some(want.clone())
        );
        o.data = Value::Null;
        let bare: Value = serde_json::from_str(&Typed::primary(&o, &ar).to_json()).unwrap_or_default();
        assert_eq!(bare["metadata"]["name"], "web", "{bare}");
        assert!(bare.get("spec").is_none());
        let input =
            Input { object: Some(Typed::primary(&o, &ar)), env: &json!({"A": "1"}), values: &json!({}) };
        let input: Value =
            serde_json::from_str(&serde_json::to_string(&input).unwrap_or_default()).unwrap_or_default();
        assert_eq!(
            (input["object"]["kind"].as_str(), &input["env"]),
            (Some("Deployment"), &json!({"A": "1"}))
        );
    }

    #[test]
    fn the_retry_bucket_spends_its_burst_then_paces() {
        let b = Bucket::new(RetryLimit { qps: 10.0, burst: 3 });
        for _ in 0..3 {
            assert_eq!(b.reserve(), Duration::ZERO);
        }
        // Owed tokens queue up at 100 ms each.
        let fourth = b.reserve();
        let fifth = b.reserve();
        assert!(fourth > Duration::from_millis(50) && fourth <= Duration::from_millis(100), "{fourth:?}");
        assert!(fifth > fourth + Duration::from_millis(50), "{fifth:?} after {fourth:?}");
        let unlimited = Bucket::new(RetryLimit { qps: 0.0, burst: 0 });
        assert_eq!(unlimited.reserve(), Duration::ZERO);
    }

    #[test]
    fn backoff_doubles_from_one_second_to_five_minutes() {
        assert_eq!(backoff(1), Duration::from_secs(1));
        assert_eq!(backoff(2), Duration::from_secs(2));
        assert_eq!(backoff(30), Duration::from_secs(300));
    }

    #[test]
    fn children_trigger_their_controlling_owner_only() {
        let primary = ApiResource::from_gvk(&GroupVersionKind::gvk("apps.example.com", "v1", "WebApp"));
        let child: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "t", "namespace": "ns", "ownerReferences": [
                {"apiVersion": "apps.example.com/v1", "kind": "WebApp", "name": "shop", "uid": "1", "controller": true},
                {"apiVersion": "apps.example.com/v1", "kind": "WebApp", "name": "other", "uid": "2"},
                {"apiVersion": "v1", "kind": "ConfigMap", "name": "cm", "uid": "3", "controller": true}
            ]}
        }))
        .expect("object");
        assert_eq!(owner_keys(&child, &primary, true), vec!["ns/shop".to_owned()]);
        assert_eq!(owner_keys(&child, &primary, false), vec!["/shop".to_owned()]);
    }
}

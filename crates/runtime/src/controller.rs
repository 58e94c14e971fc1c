//! The controller: one kube-runtime [`Controller`] per `operator(...)` of a script.
//!
//! For each [`ControllerSpec`]: the primary kind is watched through a `DynamicObject`
//! controller; each `.manages()` kind is watched through a reflector store and fed to
//! [`Controller::owns_stream_with`] (child changes map to the controlling owner); each
//! `.reads()` kind gets a reflector store only. A reconcile:
//!
//! 1. waits for leadership (when elected: not leading means requeue in 5 s, no side effect);
//! 2. adds the controller's finalizer when the script declared `.finalize()`; on deletion
//!    runs the `finalize` handler and removes the finalizer once it returned ok;
//! 3. dispatches `reconcile` in `spawn_blocking` with `object`, `observed` (from the
//!    caches: for namespaced primaries the objects of the primary's namespace plus all
//!    cluster-scoped ones), `env` and `values`;
//! 4. on `Result.ok()`/`Result.requeue(d)`: applies the children with
//!    [`ctop_applier::Applier::apply_observed`] (complete set, pruning the rest); on
//!    `Result.error(m)` applies nothing (an error must not prune);
//! 5. writes `status` merged with the output's `conditions` through the status writer,
//!    publishes the output's events, and requeues: `requeue(d)` → after `d`, ok → after
//!    `every` (or on the next change), error → per-object exponential backoff.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ctop_applier::{Applier, ApplierConfig, ChildRef};
use ctop_core::{ControllerSpec, KindRef};
use futures::{FutureExt as _, StreamExt as _};
use k8s_openapi::api::core::v1::ObjectReference;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, TypeMeta};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::discovery::Scope;
use kube::runtime::controller::{Action, Config as ControllerConfig, Controller};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt as _, watcher};
use kube::{Client, Resource as _, ResourceExt as _};
use parking_lot::Mutex;
use serde_json::{Map, Value, json};
use tokio::sync::watch;

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
    /// Watch only this namespace; `None` watches all.
    pub namespace: Option<String>,
    /// Longest a handler may run before the reconcile fails.
    pub reconcile_timeout: Duration,
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
pub fn values_from_yaml(text: &str) -> Result<Value, serde_yaml_ng::Error> {
    if text.trim().is_empty() {
        return Ok(json!({}));
    }
    let v: Value = serde_yaml_ng::from_str(text)?;
    Ok(if v.is_null() { json!({}) } else { v })
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

async fn client(kubeconfig: Option<&PathBuf>) -> Result<Client, RunError> {
    let config = match kubeconfig {
        Some(path) => {
            let kc = Kubeconfig::read_from(path)
                .map_err(|e| RunError::Config(format!("{}: {e}", path.display())))?;
            kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
                .await
                .map_err(|e| RunError::Config(e.to_string()))?
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

/// A kind resolved through discovery, with its cache.
struct Cached {
    key: String,
    namespaced: bool,
    store: Store<DynamicObject>,
}

struct Ctx {
    spec: ControllerSpec,
    script: Arc<Script>,
    primary: ApiResource,
    namespaced: bool,
    caches: Vec<Cached>,
    applier: Applier,
    recorder: Recorder,
    client: Client,
    options: RunOptions,
    health: Health,
    metrics: Metrics,
    leader: Option<watch::Receiver<bool>>,
    failures: Mutex<HashMap<String, u32>>,
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

/// Run every controller of `script` until `shutdown` completes.
pub async fn run(
    script: Arc<Script>,
    options: RunOptions,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), RunError> {
    let client = client(options.kubeconfig.as_ref()).await?;
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
        let identity = std::env::var("POD_NAME")
            .or_else(|_| std::env::var("HOSTNAME"))
            .unwrap_or_else(|_| format!("ctop-{}", std::process::id()));
        let config =
            LeaseConfig::new(options.lease_namespace.clone(), format!("{}-leader", options.name), identity);
        let elector =
            LeaderElector::new(client.clone(), config).map_err(|e| RunError::Start(e.to_string()))?;
        Some(elector.run())
    } else {
        None
    };

    let (stop_tx, stop_rx) = watch::channel(false);
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
            script.clone(),
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
    script: Arc<Script>,
    options: RunOptions,
    health: Health,
    metrics: Metrics,
    leader: Option<watch::Receiver<bool>>,
    stop: watch::Receiver<bool>,
) -> Result<impl Future<Output = ()> + Send + 'static, RunError> {
    let name = spec.name.clone();
    let (primary, namespaced) = resolve(&client, &spec.for_).await?;
    let ns = options.namespace.as_deref();
    let primary_api = api_for(&client, &primary, namespaced, ns);
    let mut controller = Controller::new_with(primary_api, watcher::Config::default(), primary.clone())
        .with_config(ControllerConfig::default().concurrency(options.concurrency));
    let mut caches = Vec::new();
    let mut readers = vec![controller.store()];
    let mut seen = std::collections::BTreeSet::new();
    for (k, owned) in spec.manages.iter().map(|k| (k, true)).chain(spec.reads.iter().map(|k| (k, false))) {
        if !seen.insert(kind_key(k)) {
            continue;
        }
        let (ar, child_namespaced) = resolve(&client, k).await?;
        let writer = reflector::store::Writer::<DynamicObject>::new(ar.clone());
        let store = writer.as_reader();
        let stream = watcher(api_for(&client, &ar, child_namespaced, ns), watcher::Config::default())
            .default_backoff()
            .reflect(writer);
        if owned {
            controller = controller.owns_stream_with(stream.applied_objects(), ar.clone());
        } else {
            tokio::spawn(stream.for_each(|_| async {}));
        }
        readers.push(store.clone());
        caches.push(Cached { key: kind_key(k), namespaced: child_namespaced, store });
    }
    if let Some(every) = spec.every {
        tracing::info!(controller = name, every = ?Duration::from(every), "periodic resync");
    }
    health.register(&name);
    metrics.register_controller(&name, usize::from(options.concurrency));
    {
        let health = health.clone();
        let name = name.clone();
        tokio::spawn(async move {
            for r in readers {
                let _ = r.wait_until_ready().await;
            }
            health.set_caches_synced(&name, true);
            tracing::info!(controller = name, "caches synced");
        });
    }
    let reporter = Reporter { controller: options.name.clone(), instance: std::env::var("POD_NAME").ok() };
    let applier = Applier::new(client.clone(), ApplierConfig::new(options.name.clone()));
    let ctx = Arc::new(Ctx {
        spec,
        script,
        primary,
        namespaced,
        caches,
        applier,
        recorder: Recorder::new(client.clone(), reporter),
        client,
        options,
        health: health.clone(),
        metrics,
        leader,
        failures: Mutex::default(),
    });
    let mut stop = stop;
    let shutdown = async move {
        let _ = stop.wait_for(|s| *s).await;
    };
    health.set_ready(&name, true);
    // The stores' readiness is not always signalled (seen against kubesim), so the first
    // reconcile outcome also counts as synced: it implies the primary watch delivered.
    Ok(controller
        .graceful_shutdown_on(shutdown)
        .run(reconcile, error_policy, ctx)
        .for_each(move |r| {
            let health = health.clone();
            let name = name.clone();
            async move {
                if !health.status(&name).is_some_and(|s| s.caches_synced) {
                    health.set_caches_synced(&name, true);
                }
                if let Err(e) = r {
                    tracing::debug!(error = %e, "controller event");
                }
            }
        })
        .map(|()| ()))
}

fn object_key(obj: &DynamicObject) -> String {
    format!("{}/{}", obj.namespace().unwrap_or_default(), obj.name_any())
}

fn error_policy(obj: Arc<DynamicObject>, err: &ReconcileError, ctx: Arc<Ctx>) -> Action {
    let n = {
        let mut f = ctx.failures.lock();
        let n = f.entry(object_key(&obj)).or_insert(0);
        *n = n.saturating_add(1);
        *n
    };
    let delay = Duration::from_millis(500u64.saturating_mul(1 << n.min(10))).min(Duration::from_secs(300));
    tracing::warn!(controller = ctx.spec.name, object = object_key(&obj), error = %err, retry_in = ?delay, "reconcile failed");
    Action::requeue(delay)
}

fn observed(ctx: &Ctx, ns: Option<&str>) -> Value {
    let mut out = Map::new();
    for c in &ctx.caches {
        let items: Vec<Value> = c
            .store
            .state()
            .iter()
            .filter(|o| !c.namespaced || !ctx.namespaced || o.namespace().as_deref() == ns)
            .map(|o| {
                let mut v = serde_json::to_value(o.as_ref()).unwrap_or(Value::Null);
                if let Some((api_version, kind)) = c.key.rsplit_once('/') {
                    v["apiVersion"] = api_version.into();
                    v["kind"] = kind.into();
                }
                v
            })
            .collect();
        out.insert(c.key.clone(), Value::Array(items));
    }
    Value::Object(out)
}

async fn dispatch(
    ctx: &Arc<Ctx>,
    handler: &'static str,
    owner: &DynamicObject,
) -> Result<Value, ReconcileError> {
    let input = json!({
        "object": owner,
        "observed": observed(ctx, owner.namespace().as_deref()),
        "env": ctx.options.env,
        "values": ctx.options.values,
    })
    .to_string();
    let script = ctx.script.clone();
    let index = ctx.spec.index;
    let started = Instant::now();
    let call = tokio::task::spawn_blocking(move || script.dispatch(handler, index, &input));
    let out = tokio::time::timeout(ctx.options.reconcile_timeout, call).await;
    ctx.metrics.observe_script(&ctx.spec.name, handler, started.elapsed());
    match out {
        Err(_) => {
            Err(ReconcileError(format!("{handler} took longer than {:?}", ctx.options.reconcile_timeout)))
        }
        Ok(Err(e)) => Err(ReconcileError(format!("{handler} panicked: {e}"))),
        Ok(Ok(Err(e))) => Err(ReconcileError(format!("{handler} failed: {e}"))),
        Ok(Ok(Ok(v))) => Ok(v),
    }
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
    let started = Instant::now();
    let result = reconcile_inner(obj, &ctx).await;
    let took = started.elapsed();
    match &result {
        Ok(_) => {
            ctx.health.record_success(&ctx.spec.name);
            ctx.metrics.record_reconcile(&ctx.spec.name, ReconcileResult::Success, took);
        }
        Err(e) => {
            ctx.health.record_error(&ctx.spec.name, e.to_string());
            ctx.metrics.record_reconcile(&ctx.spec.name, ReconcileResult::Error, took);
        }
    }
    result
}

async fn reconcile_inner(obj: Arc<DynamicObject>, ctx: &Arc<Ctx>) -> Result<Action, ReconcileError> {
    let mut owner = (*obj).clone();
    owner.types =
        Some(TypeMeta { api_version: ctx.primary.api_version.clone(), kind: ctx.primary.kind.clone() });
    let finalizer = ctx.spec.finalizer.clone().filter(|_| ctx.spec.handlers.iter().any(|h| h == "finalize"));
    let has_finalizer = |o: &DynamicObject, f: &str| o.finalizers().iter().any(|x| x == f);

    if owner.meta().deletion_timestamp.is_some() {
        if let Some(f) = finalizer.filter(|f| has_finalizer(&owner, f)) {
            let out = dispatch(ctx, "finalize", &owner).await?;
            publish_events(ctx, &owner, &out).await;
            match out["result"]["type"].as_str() {
                Some("error") => {
                    return Err(ReconcileError(format!(
                        "finalize: {}",
                        out["result"]["message"].as_str().unwrap_or("")
                    )));
                }
                Some("requeue") => return Ok(Action::requeue(requeue_after(&out))),
                _ => {}
            }
            let rest = owner.finalizers().iter().filter(|x| **x != f).cloned().collect();
            patch_finalizers(ctx, &owner, rest).await?;
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

    let out = dispatch(ctx, "reconcile", &owner).await?;
    let result_type = out["result"]["type"].as_str().unwrap_or("ok").to_owned();
    let mut failure = None;
    if result_type == "error" {
        failure = Some(format!("reconcile: {}", out["result"]["message"].as_str().unwrap_or("")));
    } else {
        let applies = out["applies"].as_array().cloned().unwrap_or_default();
        let lookup = |c: &ChildRef| {
            let key = format!("{}/{}", c.api_version, c.kind);
            let cache = ctx.caches.iter().find(|x| x.key == key)?;
            let o = cache
                .store
                .state()
                .into_iter()
                .find(|o| o.name_any() == c.name && o.namespace().as_deref() == c.namespace.as_deref())?;
            Some(o.metadata.clone())
        };
        match ctx.applier.apply_observed(&owner, applies, lookup).await {
            Ok(report) => {
                ctx.metrics.applies(&ctx.spec.name, report.applied.len() as u64);
                ctx.metrics.applies_skipped(&ctx.spec.name, report.skipped.len() as u64);
                ctx.metrics.prunes(&ctx.spec.name, report.pruned.len() as u64);
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
        && let Err(e) = ctx.applier.status_writer().write(&owner, Value::Object(status)).await
    {
        failure.get_or_insert(format!("status: {e}"));
    }
    publish_events(ctx, &owner, &out).await;
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

fn requeue_after(out: &Value) -> Duration {
    out["result"]["after"]
        .as_str()
        .and_then(|s| s.parse::<ctop_core::Duration>().ok())
        .map_or(Duration::from_secs(1), Into::into)
}

async fn publish_events(ctx: &Ctx, owner: &DynamicObject, out: &Value) {
    let Some(events) = out["events"].as_array() else { return };
    let own: ObjectReference = owner.object_ref(&ctx.primary);
    for e in events {
        let reference = match e.get("regarding") {
            Some(r) => ObjectReference {
                api_version: r["apiVersion"].as_str().map(Into::into),
                kind: r["kind"].as_str().map(Into::into),
                name: r["name"].as_str().map(Into::into),
                namespace: r["namespace"].as_str().map(Into::into),
                uid: r["uid"].as_str().map(Into::into),
                ..ObjectReference::default()
            },
            None => own.clone(),
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

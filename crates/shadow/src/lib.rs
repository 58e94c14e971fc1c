//! # ctop-shadow: run the next version of an operator for real, and write nothing
//!
//! `ctop run --shadow` points the operator's controllers (unchanged) at an in-process
//! kubesim *overlay* instead of the live cluster. A read-only mirror (`mirror.rs`) fills the
//! overlay with exactly the objects the controllers would cache (`plan.rs`), using list and
//! watch on the live cluster and nothing else; the controllers read those copies and every
//! write they make lands in the overlay. The report (`report.rs`) compares what the shadow
//! wrote with the live objects: what the new version would create, change (field by field)
//! and delete, per owner, with a summary.
//!
//! Start with [`Shadow::start`]: give it a live client, the script's [`OperatorSpec`] and its
//! CRDs; run the controllers with [`Shadow::handlers`] on [`Shadow::kubeconfig`]; read
//! [`Shadow::report`] (also served as `/api/shadow` by [`router`]). The shadow has
//! *converged* when every live primary has been reconciled at least once and nothing has
//! been written or reconciled for [`ShadowOptions::quiet`].
//!
//! What it cannot show: the overlay runs no controllers of its own (a new Deployment never
//! gets Pods there) and no third-party admission webhooks; see kubesim's README.

mod handlers;
mod mirror;
pub mod plan;
pub mod report;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ctop_core::OperatorSpec;
use ctop_kubesim::{Config, KubeSim};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use kube::api::{Api, Patch, PatchParams};
use parking_lot::Mutex;
use serde_json::Value;

pub use report::ShadowReport;

/// The field manager of what the shadow itself puts into its overlay (CRDs).
const MANAGER: &str = "ctop-shadow";

/// Why the shadow could not start.
#[derive(Debug, thiserror::Error)]
pub enum ShadowError {
    /// The overlay did not start.
    #[error("the shadow's overlay could not start")]
    Overlay(#[source] ctop_kubesim::StartError),
    /// Its kubeconfig could not be written.
    #[error("cannot write the overlay's kubeconfig")]
    Kubeconfig(#[source] std::io::Error),
    /// The live cluster refused a read.
    #[error("{what}")]
    Live {
        /// What was read.
        what: String,
        /// The client's error.
        #[source]
        source: kube::Error,
    },
    /// The overlay refused a CRD.
    #[error("the overlay refused the CRD {name}")]
    Install {
        /// The CRD.
        name: String,
        /// The client's error.
        #[source]
        source: kube::Error,
    },
}

/// How the shadow runs.
#[derive(Clone, Debug)]
pub struct ShadowOptions {
    /// Copy only this namespace's objects of namespaced kinds (`ctop run --namespace`).
    pub namespace: Option<String>,
    /// How long the shadow must write nothing to count as converged.
    pub quiet: Duration,
    /// How the report names the live cluster (its server URL).
    pub live_server: String,
}

/// When the shadow last wrote something that counts.
struct Activity {
    seq: u64,
    at: Instant,
}

/// A running shadow: the overlay, its mirror and what it wrote.
pub struct Shadow {
    sim: Arc<KubeSim>,
    kubeconfig: PathBuf,
    _dir: tempfile::TempDir,
    live: mirror::Live,
    primaries: Vec<String>,
    /// Writes up to this sequence number were the shadow's setup, not the operator's.
    since: Mutex<u64>,
    activity: Arc<Mutex<Activity>>,
    calls: Arc<Mutex<handlers::Calls>>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    options: ShadowOptions,
}

impl Shadow {
    /// Starts the overlay, installs `crds` (the script's, with the ControllerStatus CRD) and
    /// the live CRDs of custom kinds the script uses without declaring them, then mirrors
    /// what the controllers of `spec` would cache and waits until every watch has listed.
    /// Kinds the live cluster does not serve (a kind new in this version) are skipped.
    ///
    /// # Errors
    ///
    /// The overlay does not start, the live cluster refuses a list or a CRD read (its RBAC:
    /// `ctop manifests --shadow` grants what is needed), the overlay refuses a CRD.
    pub async fn start(
        live: Client,
        spec: &OperatorSpec,
        crds: &[Value],
        options: ShadowOptions,
    ) -> Result<Self, ShadowError> {
        let sim = Arc::new(
            KubeSim::start(Config { overlay: true, ..Config::default() })
                .await
                .map_err(ShadowError::Overlay)?,
        );
        let dir = tempfile::tempdir().map_err(ShadowError::Kubeconfig)?;
        let kubeconfig = dir.path().join("kubeconfig");
        sim.write_kubeconfig(&kubeconfig).map_err(ShadowError::Kubeconfig)?;
        let overlay = overlay_client(&sim).await?;
        install(&overlay, crds).await?;
        let mut kinds = Vec::new();
        for w in plan::watched(spec, options.namespace.as_deref()) {
            match mirror::resolve(&live, &w).await {
                Ok(kind) => kinds.push(kind),
                Err(e) => tracing::info!(
                    kind = %w.kind.key(),
                    "not mirrored: {e} (a kind this version adds has nothing live to copy)"
                ),
            }
        }
        let declared =
            |group: &str, kind: &str| spec.resources.iter().any(|r| r.group == group && r.kind == kind);
        let mut copied = Vec::new();
        for k in &kinds {
            let name = format!("{}.{}", k.ar.plural, k.ar.group);
            if builtin_group(&k.ar.group) || declared(&k.ar.group, &k.ar.kind) || copied.contains(&name) {
                continue;
            }
            if let Some(crd) = live_crd(&live, &name).await? {
                install(&overlay, &[crd]).await?;
            }
            copied.push(name);
        }
        let live_objects: mirror::Live = Arc::default();
        let mut tasks = Vec::new();
        let mut synced = Vec::new();
        for kind in kinds {
            let (task, done) = mirror::start(&live, Arc::clone(&sim), kind, Arc::clone(&live_objects));
            tasks.push(task);
            synced.push(done);
        }
        for done in synced {
            // A watch that ended before listing has logged why; the others still count.
            let _ = done.await;
        }
        let since = sim.request_writes().last().map_or(0, |w| w.seq);
        let activity = Arc::new(Mutex::new(Activity { seq: since, at: Instant::now() }));
        tasks.push(tokio::spawn(watch_activity(Arc::clone(&sim), Arc::clone(&activity))));
        let primaries = spec.controllers.iter().map(|c| c.for_.key()).collect();
        tracing::info!(
            objects = live_objects.lock().len(),
            "the shadow's overlay holds a copy of the live objects; nothing is written to the live cluster"
        );
        Ok(Self {
            sim,
            kubeconfig,
            _dir: dir,
            live: live_objects,
            primaries,
            since: Mutex::new(since),
            activity,
            calls: Arc::default(),
            tasks,
            options,
        })
    }

    /// The overlay's kubeconfig: where the controllers run.
    #[must_use]
    pub fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    /// The overlay.
    #[must_use]
    pub fn sim(&self) -> &Arc<KubeSim> {
        &self.sim
    }

    /// Leave the writes made so far out of the report (setup done after [`Shadow::start`],
    /// such as a webhook's configuration).
    pub fn exclude_writes_so_far(&self) {
        let last = self.sim.request_writes().last().map_or(0, |w| w.seq);
        *self.since.lock() = last;
    }

    /// `inner`, noting each reconcile for [`Shadow::report`]'s convergence: run the
    /// controllers with these.
    #[must_use]
    pub fn handlers(&self, inner: Arc<dyn ctop_core::Handlers>) -> Arc<dyn ctop_core::Handlers> {
        Arc::new(handlers::Noting { inner, calls: Arc::clone(&self.calls) })
    }

    /// What the shadow would have written so far.
    #[must_use]
    pub fn report(&self) -> ShadowReport {
        let since = *self.since.lock();
        let writes = self.sim.request_writes_since(since);
        let live = self.live.lock().clone();
        let mut report = report::build(&writes, &live, &self.primaries);
        let (all_reconciled, last_call) = {
            let calls = self.calls.lock();
            let primary = |k: &report::Key| self.primaries.iter().any(|p| *p == format!("{}/{}", k.0, k.1));
            (live.keys().filter(|k| primary(k)).all(|k| calls.reconciled.contains(k)), calls.last)
        };
        let wrote = self.activity.lock().at;
        let last = last_call.map_or(wrote, |c| c.max(wrote));
        let quiet = last.elapsed();
        report.quiet_ms = u64::try_from(quiet.as_millis()).unwrap_or(u64::MAX);
        report.converged = all_reconciled && last_call.is_some() && quiet >= self.options.quiet;
        report.live.clone_from(&self.options.live_server);
        report.dropped = self.sim.dropped_request_writes();
        report
    }
}

impl Drop for Shadow {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
        self.sim.shutdown();
    }
}

/// `/api/shadow`: the report as JSON, to merge into the operator's page.
pub fn router(shadow: Arc<Shadow>) -> axum::Router {
    axum::Router::new()
        .route("/api/shadow", axum::routing::get(move || async move { axum::Json(shadow.report()) }))
}

/// Groups whose kinds are built in (no CRD to copy).
fn builtin_group(group: &str) -> bool {
    group.is_empty()
        || group.ends_with(".k8s.io")
        || matches!(group, "apps" | "batch" | "policy" | "autoscaling" | "ctop.dev")
}

/// Notes the time of each write that counts (the operator's own bookkeeping does not).
async fn watch_activity(sim: Arc<KubeSim>, activity: Arc<Mutex<Activity>>) {
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    loop {
        tick.tick().await;
        let seq = activity.lock().seq;
        let writes = sim.request_writes_since(seq);
        let Some(last) = writes.last() else { continue };
        let counts =
            writes.iter().any(|w| !matches!(w.kind.as_str(), "Lease" | "ControllerStatus" | "Event"));
        let mut a = activity.lock();
        a.seq = last.seq;
        if counts {
            a.at = Instant::now();
        }
    }
}

async fn overlay_client(sim: &KubeSim) -> Result<Client, ShadowError> {
    let dir = tempfile::tempdir().map_err(ShadowError::Kubeconfig)?;
    let path = dir.path().join("kubeconfig");
    sim.write_kubeconfig(&path).map_err(ShadowError::Kubeconfig)?;
    let live = |what: &str, source| ShadowError::Live { what: format!("the overlay: {what}"), source };
    let kc = kube::config::Kubeconfig::read_from(&path)
        .map_err(|e| live("cannot read its kubeconfig", kube::Error::InferKubeconfig(e)))?;
    let config = kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
        .await
        .map_err(|e| live("cannot configure a client", kube::Error::InferKubeconfig(e)))?;
    Client::try_from(config).map_err(|e| live("cannot build a client", e))
}

/// Server-side applies `crds` into the overlay.
async fn install(overlay: &Client, crds: &[Value]) -> Result<(), ShadowError> {
    let api: Api<CustomResourceDefinition> = Api::all(overlay.clone());
    for crd in crds {
        let name = crd.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default().to_owned();
        api.patch(&name, &PatchParams::apply(MANAGER).force(), &Patch::Apply(crd))
            .await
            .map_err(|source| ShadowError::Install { name: name.clone(), source })?;
    }
    Ok(())
}

/// The live CRD `name` without what its server set, or `None` when there is none (a kind
/// served by an aggregated API).
async fn live_crd(live: &Client, name: &str) -> Result<Option<Value>, ShadowError> {
    let api: Api<CustomResourceDefinition> = Api::all(live.clone());
    let crd = match api.get_opt(name).await {
        Ok(crd) => crd,
        Err(source) => {
            return Err(ShadowError::Live {
                what: format!(
                    "cannot read the CRD {name} from the live cluster (ctop manifests --shadow grants get on it)"
                ),
                source,
            });
        }
    };
    let Some(crd) = crd else { return Ok(None) };
    let mut value = serde_json::to_value(&crd).unwrap_or_default();
    let mut kept = BTreeMap::new();
    if let Some(meta) = value.get("metadata") {
        for field in ["name", "labels", "annotations"] {
            if let Some(v) = meta.get(field) {
                kept.insert(field.to_owned(), v.clone());
            }
        }
    }
    if let Some(map) = value.as_object_mut() {
        map.remove("status");
        map.insert("metadata".into(), serde_json::to_value(kept).unwrap_or_default());
        map.insert("apiVersion".into(), Value::String("apiextensions.k8s.io/v1".into()));
        map.insert("kind".into(), Value::String("CustomResourceDefinition".into()));
    }
    Ok(Some(value))
}

//! The world a test runs in: an in-process kubesim and the operator's controllers on it,
//! on the runtime's (paused) clock. Start with [`World::start`]; then act on it
//! ([`World::apply`], [`World::delete`], [`World::patch`], the faults), let it run
//! ([`crate::settle`]), and read it ([`World::snapshot`], [`World::get`]). The runner drives
//! a test file through it; a fuzzer can drive random steps through the same calls.
//!
//! Everything a test does goes through the API server over HTTP, as `kubectl` would (field
//! manager `ctop-test`); the operator runs exactly as `ctop run` runs it, with its handler
//! calls recorded ([`crate::record`]), and its `validate`/`mutate` handlers are served as
//! `ctop dev` serves them (kubesim calls them over HTTPS on every write they cover).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use ctop_core::{Handlers, OperatorSpec};
use ctop_kubesim::{Config, KubeSim, WorkloadConfig};
use ctop_runtime::{Limits, Script, ScriptHandlers};
use kube::Client;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams};
use parking_lot::Mutex;
use serde_json::Value;

use crate::format::{Action, ObjectRef};
use crate::record::{Recorder, Recording};

mod kinds;

pub use kinds::Kind;
use kinds::Kinds;

/// The wall-clock time a world starts at, on the script's `now()` and in kubesim's
/// timestamps, in seconds since the Unix epoch: 2026-01-01T00:00:00Z.
pub const EPOCH_SECS: u64 = 1_767_225_600;

/// The field manager of everything a test writes.
pub const MANAGER: &str = "ctop-test";

/// Why a world could not start.
#[derive(Debug, thiserror::Error)]
pub enum WorldError {
    /// The script did not load.
    #[error("the script could not be loaded")]
    Script(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The values are not usable.
    #[error("the values are not usable: {0}")]
    Values(String),
    /// kubesim did not start.
    #[error("kubesim could not start")]
    Sim(#[from] ctop_kubesim::StartError),
    /// The CRDs could not be generated.
    #[error("the CRDs could not be generated")]
    Crds(#[from] ctop_manifests::Error),
    /// Talking to kubesim failed.
    #[error("{what}")]
    Kube {
        /// What was being done.
        what: String,
        /// The client's error.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

/// An operator directory to test.
#[derive(Clone, Debug)]
pub struct Operator {
    /// The directory.
    pub dir: PathBuf,
    /// The entry script, relative to it.
    pub entry: String,
}

/// How a world is set up.
#[derive(Clone, Debug)]
pub struct WorldConfig {
    /// How kubesim runs workloads (`None`: a bare API server).
    pub workloads: Option<WorkloadConfig>,
    /// The script's `Values`.
    pub values: Value,
    /// The script's `Env` (a mapping of names to strings).
    pub env: Value,
    /// CustomResourceDefinitions of other operators, installed before the operator starts.
    pub crds: Vec<Value>,
}

/// The running world. Dropping it stops the operator and kubesim.
pub struct World {
    sim: Arc<KubeSim>,
    client: Client,
    recording: Arc<Recording>,
    spec: OperatorSpec,
    kinds: Mutex<Kinds>,
    applied: Mutex<Vec<ObjectRef>>,
    /// The script's handlers (also called directly: admission, invariants); `None` for a
    /// Δ-controller `Operator`.
    script: Option<Arc<ScriptHandlers>>,
    /// The recording wrapper the controllers call, and how they run: what a restart needs.
    recorder: Arc<Recorder>,
    options: ctop_controller::RunOptions,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<Result<(), ctop_controller::RunError>>>,
    writes: tokio::task::JoinHandle<()>,
    _webhook: Option<ctop_webhook::dev::DevWebhook>,
    _dir: tempfile::TempDir,
}

/// The handlers of the Δ-controller `Operator` YAML `op.entry` names (in `op.dir`), when it
/// names one; `None` for a script.
fn declarative_at(op: &Operator) -> Result<Option<Arc<dyn Handlers>>, WorldError> {
    let path = op.dir.join(&op.entry);
    if !path.extension().is_some_and(|e| e == "yaml" || e == "yml") {
        return Ok(None);
    }
    let text = std::fs::read_to_string(&path).map_err(|e| WorldError::Script(Box::new(e)))?;
    let operator =
        ctop_declarative::Operator::from_yaml(&text).map_err(|e| WorldError::Script(Box::new(e)))?;
    let handlers =
        ctop_declarative::OperatorHandlers::new(operator).map_err(|e| WorldError::Script(Box::new(e)))?;
    Ok(Some(Arc::new(handlers)))
}

/// The script's conversions behind the webhook server's trait.
struct ScriptConversion(Arc<ScriptHandlers>);

impl ctop_webhook::ConversionScript for ScriptConversion {
    fn convert(
        &self,
        desired_api_version: &str,
        objects: &[Value],
    ) -> Result<Vec<Value>, ctop_webhook::HookError> {
        self.0.convert(desired_api_version, objects).map_err(ctop_webhook::HookError::Failed)
    }
}

/// The script's admission handlers behind the webhook server's trait.
struct ScriptAdmission(Arc<ScriptHandlers>);

impl ctop_webhook::AdmissionScript for ScriptAdmission {
    fn call(
        &self,
        call: &ctop_webhook::AdmissionCall<'_>,
    ) -> Result<ctop_core::AdmissionOutcome, ctop_webhook::HookError> {
        let h = call.handler.as_str();
        self.0
            .admit(h, call.controller, call.object, call.old_object, call.request)
            .map_err(ctop_webhook::HookError::Failed)
    }
}

impl World {
    /// Load the script, start kubesim, install the script's CRDs and start the operator.
    /// Its first lists are not awaited here: settle the world before the first step.
    pub async fn start(op: &Operator, config: &WorldConfig) -> Result<Self, WorldError> {
        Self::start_wrapped(op, config, |handlers, _| handlers).await
    }

    /// [`World::start`], with the script's handlers wrapped by `wrap` (given them and the
    /// script) before the controllers call them: a recording of every call, for instance.
    pub async fn start_wrapped(
        op: &Operator,
        config: &WorldConfig,
        wrap: impl FnOnce(Arc<dyn Handlers>, &Script) -> Arc<dyn Handlers>,
    ) -> Result<Self, WorldError> {
        // The script's `now()` and kubesim's timestamps read the virtual clock: a fixed
        // epoch plus the virtual time since the world started, so a schedule comes due
        // after an `advance`, and names or times derived from the clock are the same every
        // run. (A script call runs on the blocking pool, inside the runtime's context, so
        // Tokio's clock there is the paused one.)
        let epoch = std::time::SystemTime::UNIX_EPOCH + Duration::from_secs(EPOCH_SECS);
        let virtual_start = tokio::time::Instant::now();
        ctop_kubesim::clock::set_virtual(epoch);
        let (script_handlers, handlers) = match declarative_at(op)? {
            Some(handlers) => (None, handlers),
            None => {
                let (dir, entry) = (op.dir.clone(), op.entry.clone());
                // One runtime: calls run one at a time anyway (the recorder's gate), and a
                // script that keeps state between calls (a counter at module level) then
                // sees every call in order, as it would in a `ctop run` with one worker,
                // instead of whichever runtime was free.
                let script =
                    tokio::task::spawn_blocking(move || Script::from_dir(&dir, &entry, 1, Limits::default()))
                        .await
                        .map_err(|e| WorldError::Script(Box::new(e)))?
                        .map_err(|e| WorldError::Script(Box::new(e)))?;
                script.configure_egress(&[], &[]);
                script.set_clock(Arc::new(move || epoch + virtual_start.elapsed()));
                let handlers = Arc::new(ScriptHandlers::new(Arc::new(script), &config.env, &config.values));
                let wrapped = wrap(handlers.clone(), handlers.script());
                (Some(handlers), wrapped)
            }
        };
        let spec = handlers.spec().clone();
        let sim = Arc::new(
            KubeSim::start(Config {
                tls: false,
                workloads: config.workloads.clone(),
                // Bookmarks only wake watches up; a test does not need them.
                bookmark_interval: Duration::from_secs(3600),
                ..Config::default()
            })
            .await?,
        );
        let tmp = tempfile::tempdir().map_err(|e| kube_error("cannot make a temporary directory", e))?;
        let kubeconfig = tmp.path().join("kubeconfig");
        sim.write_kubeconfig(&kubeconfig).map_err(|e| kube_error("cannot write the kubeconfig", e))?;
        let client = client_of(&sim).await?;
        // The script's validate/mutate handlers and conversions, served as `ctop dev` serves
        // them: kubesim calls them over HTTPS on every write of the kinds they cover, and on
        // every request in another version than an object is stored in. Started before the
        // CRDs, which point at it.
        let webhook = if let Some(script_handlers) =
            script_handlers.as_ref().filter(|_| ctop_webhook::dev::DevWebhook::needed(&spec))
        {
            let admission = Arc::new(ScriptAdmission(script_handlers.clone()));
            let hook = ctop_webhook::dev::DevWebhook::start(&client, admission, &spec)
                .await
                .map_err(|e| kube_error("cannot serve the admission handlers", e))?;
            hook.set_conversion(Arc::new(ScriptConversion(script_handlers.clone())), &spec);
            Some(hook)
        } else {
            None
        };
        let crds = match &webhook {
            Some(hook) => ctop_manifests::operator_crds_with(&spec, &hook.conversion().into())?,
            None => ctop_manifests::operator_crds(&spec)?,
        };
        let crds: Vec<Value> = config.crds.iter().cloned().chain(crds).collect();
        ctop_controller::install_crds(&client, &crds, MANAGER)
            .await
            .map_err(|e| kube_error("cannot install the CRDs", e))?;
        let recorder = Arc::new(Recorder::new(handlers));
        let recording = recorder.recording();
        // Every write is noted at the virtual instant it happened (the task runs before the
        // clock can move on), so a settle can tell exactly when the cluster last changed.
        let mut changes = sim.changes();
        let noted = recording.clone();
        let writes = tokio::spawn(async move {
            while changes.changed().await.is_ok() {
                noted.note_write();
            }
        });
        let options = ctop_controller::RunOptions {
            identity: Some("ctop-test".into()),
            ..ctop_controller::RunOptions::local(kubeconfig, "ctop")
        };
        let mut world = Self {
            sim,
            client,
            recording,
            spec,
            kinds: Mutex::new(Kinds::default()),
            applied: Mutex::new(Vec::new()),
            script: script_handlers,
            recorder,
            options,
            stop: None,
            task: None,
            writes,
            _webhook: webhook,
            _dir: tmp,
        };
        world.start_operator();
        world.discover().await?;
        Ok(world)
    }

    /// Start the operator's controllers (a fresh process, as far as they can tell: new
    /// caches, new queues, new watches).
    fn start_operator(&mut self) {
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let handlers: Arc<dyn Handlers> = self.recorder.clone();
        self.task = Some(tokio::spawn(ctop_controller::run(handlers, self.options.clone(), async move {
            let _ = stopped.await;
        })));
        self.stop = Some(stop);
    }

    /// Crash the operator (its task is dropped wherever it was, mid-reconcile or not) and
    /// start it again, as a `kill -9` and a new Pod would.
    pub async fn restart(&mut self) {
        self.stop_operator().await;
        self.start_operator();
    }

    /// Drop the operator's task wherever it was (start it again with `start_operator`).
    async fn stop_operator(&mut self) {
        self.stop = None;
        if let Some(task) = self.task.take() {
            task.abort();
            let _ = task.await;
        }
    }

    /// The script's handlers, to call directly (admission, invariants); `None` when the
    /// operator is a Δ-controller `Operator`.
    pub fn script(&self) -> Option<&Arc<ScriptHandlers>> {
        self.script.as_ref()
    }

    /// What the script declares.
    pub fn spec(&self) -> &OperatorSpec {
        &self.spec
    }

    /// The handler calls so far.
    pub fn recording(&self) -> &Arc<Recording> {
        &self.recording
    }

    /// kubesim.
    pub fn sim(&self) -> &KubeSim {
        &self.sim
    }

    /// A client of kubesim.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The objects the test applied so far (as it named them).
    pub fn applied(&self) -> Vec<ObjectRef> {
        self.applied.lock().clone()
    }

    /// Whether the operator stopped by itself (it failed), and why.
    pub fn failed(&mut self) -> Option<String> {
        let task = self.task.as_mut()?;
        if !task.is_finished() {
            return None;
        }
        let task = self.task.take()?;
        let result = futures::FutureExt::now_or_never(task)?;
        Some(match result {
            Ok(Ok(())) => "the operator stopped".into(),
            Ok(Err(e)) => format!("the operator stopped: {e}"),
            Err(e) => format!("the operator crashed: {e}"),
        })
    }

    /// Stop the operator and wait for it.
    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
        self.sim.shutdown();
    }

    async fn discover(&self) -> Result<(), WorldError> {
        let kinds = Kinds::discover(&self.client).await.map_err(|e| kube_error("API discovery failed", e))?;
        *self.kinds.lock() = kinds;
        Ok(())
    }

    /// The kind `api_version`/`kind` names (the only one of that name when `api_version` is
    /// `None`). Discovery runs again once on a miss (a CRD the test applied).
    pub async fn kind(&self, api_version: Option<&str>, kind: &str) -> Result<Kind, String> {
        for attempt in 0..2 {
            if let Some(k) = self.lookup(api_version, kind)? {
                return Ok(k);
            }
            if attempt == 0 {
                self.discover().await.map_err(|e| ctop_core::Chain(&e).to_string())?;
            }
        }
        Err(match api_version {
            Some(v) => format!("the API server serves no kind {kind} in {v}"),
            None => format!("the API server serves no kind {kind}"),
        })
    }

    fn lookup(&self, api_version: Option<&str>, kind: &str) -> Result<Option<Kind>, String> {
        self.kinds.lock().lookup(&self.spec, api_version, kind)
    }

    /// `r` with its `apiVersion`: as written, or that of the kind its bare kind names (the
    /// script's own kind when a built-in of another group has the same name; an error
    /// when two groups serve it and neither is the script's). A kind no group serves stays
    /// as written (no object of it exists).
    pub async fn resolve(&self, r: &ObjectRef) -> Result<ObjectRef, String> {
        if r.api_version.is_some() {
            return Ok(r.clone());
        }
        for attempt in 0..2 {
            if let Some(kind) = self.lookup(None, &r.kind)? {
                return Ok(ObjectRef { api_version: Some(kind.ar.api_version), ..r.clone() });
            }
            if attempt == 0 {
                self.discover().await.map_err(|e| ctop_core::Chain(&e).to_string())?;
            }
        }
        Ok(r.clone())
    }

    /// The API of `r`'s kind in its namespace, and the name.
    async fn api_of(&self, r: &ObjectRef) -> Result<(Api<DynamicObject>, Kind), String> {
        let kind = self.kind(r.api_version.as_deref(), &r.kind).await?;
        let api = if kind.namespaced {
            Api::namespaced_with(self.client.clone(), r.namespace.as_deref().unwrap_or("default"), &kind.ar)
        } else {
            Api::all_with(self.client.clone(), &kind.ar)
        };
        Ok((api, kind))
    }

    /// Carry out a step's action (all but the waiting: an [`Action::Advance`] does nothing
    /// here, see [`crate::settle::advance`]; nor an [`Action::Replay`], which needs no
    /// cluster: see [`crate::replay::step`]); the refusal's text, naming the object, when
    /// the API server refused a write. A seed restarts the operator (see the `seed` module).
    pub async fn act(&mut self, action: &Action) -> Result<(), String> {
        match action {
            Action::Check | Action::Advance(_) => Ok(()),
            Action::Apply(objects) => {
                for o in objects {
                    self.apply(o)
                        .await
                        .map_err(|e| format!("applying {}: {e}", crate::state::describe(o)))?;
                }
                Ok(())
            }
            Action::Delete(refs) => {
                for r in refs {
                    self.delete(r).await.map_err(|e| format!("deleting {r}: {e}"))?;
                }
                Ok(())
            }
            Action::Patch { target, body, status } => self
                .patch(target, body, *status)
                .await
                .map(|_| ())
                .map_err(|e| format!("patching {target}: {e}")),
            Action::Pods(stages) => self.stage_pods(stages.clone()).await,
            Action::Fault(rule) => {
                self.sim.faults().add(rule.clone());
                Ok(())
            }
            Action::ClearFaults => {
                self.clear_faults();
                Ok(())
            }
            Action::Seed(recording) => {
                // The operator starts again on the seeded cluster, as `ctop run` would start
                // on the recorded one: it never sees it half written.
                self.stop_operator().await;
                let seeded = crate::seed::seed(self, &recording.path).await;
                self.start_operator();
                seeded.map_err(|e| ctop_core::Chain(&e).to_string())
            }
            // It needs the operator's directory, not the cluster: the runner runs it.
            Action::Replay(_) => Ok(()),
        }
    }

    /// Remove the injected API faults, keeping the Pod stages.
    pub fn clear_faults(&self) {
        let faults = self.sim.faults();
        let stages = faults.pod_stages();
        faults.clear();
        faults.set_pod_stages(stages);
    }

    /// Server-side apply `obj` (forced, as `ctop-test`); the refusal's text on failure.
    pub async fn apply(&self, obj: &Value) -> Result<(), String> {
        let r = ObjectRef::of(obj)?;
        let (api, _) = self.api_of(&r).await?;
        api.patch(&r.name, &PatchParams::apply(MANAGER).force(), &Patch::Apply(obj))
            .await
            .map_err(|e| ctop_controller::api_error_text(&e))?;
        let mut applied = self.applied.lock();
        if !applied.contains(&r) {
            applied.push(r);
        }
        Ok(())
    }

    /// Delete `r` (background propagation); the refusal's text on failure.
    pub async fn delete(&self, r: &ObjectRef) -> Result<(), String> {
        let (api, _) = self.api_of(r).await?;
        api.delete(&r.name, &DeleteParams::background())
            .await
            .map_err(|e| ctop_controller::api_error_text(&e))?;
        Ok(())
    }

    /// A JSON merge patch of `r` (of its status subresource with `status`); the object as
    /// the server wrote it.
    pub async fn patch(&self, r: &ObjectRef, body: &Value, status: bool) -> Result<Value, String> {
        let (api, kind) = self.api_of(r).await?;
        let params = PatchParams { field_manager: Some(MANAGER.into()), ..PatchParams::default() };
        let result = if status {
            api.patch_status(&r.name, &params, &Patch::Merge(body)).await
        } else {
            api.patch(&r.name, &params, &Patch::Merge(body)).await
        };
        result.map(|o| with_type(o, &kind.ar)).map_err(|e| ctop_controller::api_error_text(&e))
    }

    /// Create `obj` (it must not exist).
    pub async fn create(&self, obj: &Value) -> Result<Value, String> {
        let r = ObjectRef::of(obj)?;
        let (api, kind) = self.api_of(&r).await?;
        let typed: DynamicObject = serde_json::from_value(obj.clone()).map_err(|e| e.to_string())?;
        let params = kube::api::PostParams { field_manager: Some(MANAGER.into()), ..Default::default() };
        api.create(&params, &typed)
            .await
            .map(|o| with_type(o, &kind.ar))
            .map_err(|e| ctop_controller::api_error_text(&e))
    }

    /// The object `r` names, if it exists.
    pub async fn get(&self, r: &ObjectRef) -> Result<Option<Value>, String> {
        let (api, kind) = self.api_of(r).await?;
        let found = api.get_opt(&r.name).await.map_err(|e| ctop_controller::api_error_text(&e))?;
        Ok(found.map(|o| with_type(o, &kind.ar)))
    }

    /// Every object of `kind`, in every namespace.
    pub async fn list(&self, kind: &Kind) -> Result<Vec<Value>, String> {
        let api: Api<DynamicObject> = Api::all_with(self.client.clone(), &kind.ar);
        let list = api.list(&ListParams::default()).await.map_err(|e| ctop_controller::api_error_text(&e))?;
        Ok(list.items.into_iter().map(|o| with_type(o, &kind.ar)).collect())
    }

    /// Every `events.k8s.io/v1` Event.
    pub async fn events(&self) -> Result<Vec<Value>, String> {
        let kind = self.kind(Some("events.k8s.io/v1"), "Event").await?;
        self.list(&kind).await
    }

    /// Pod stages from now on; the running Pods they pick are deleted so that they start
    /// again under them.
    pub async fn stage_pods(&self, stages: Vec<ctop_kubesim::PodStage>) -> Result<(), String> {
        self.sim.faults().set_pod_stages(stages.clone());
        let pods = self.kind(Some("v1"), "Pod").await?;
        for pod in self.list(&pods).await? {
            if stages.iter().any(|s| s.picks(&pod)) && pod["metadata"]["deletionTimestamp"].is_null() {
                let r = ObjectRef {
                    api_version: Some("v1".into()),
                    kind: "Pod".into(),
                    namespace: pod["metadata"]["namespace"].as_str().map(str::to_owned),
                    name: pod["metadata"]["name"].as_str().unwrap_or_default().to_owned(),
                };
                self.delete(&r).await?;
            }
        }
        Ok(())
    }

    /// A snapshot of the kinds a test looks at: those the script defines, its
    /// controllers' primary, managed and read kinds, and those of the objects the test
    /// applied.
    pub async fn snapshot(&self) -> Result<crate::state::Snapshot, String> {
        let mut wanted: Vec<(Option<String>, String)> = Vec::new();
        let mut add = |v: Option<&str>, k: &str| {
            let key = (v.map(str::to_owned), k.to_owned());
            if !wanted.contains(&key) {
                wanted.push(key);
            }
        };
        for r in &self.spec.resources {
            add(Some(&r.api_version), &r.kind);
        }
        for c in &self.spec.controllers {
            for k in std::iter::once(&c.for_).chain(&c.manages).chain(&c.reads) {
                add(Some(&k.api_version), &k.kind);
            }
        }
        // The script's resources are listed in the version its handlers see; an object a step
        // applied in another version is the same object (an expectation in that version reads
        // it through the API server's conversion).
        let another_version = |v: Option<&str>, k: &str| {
            let group = v.map(ctop_core::group_of);
            self.spec
                .resources
                .iter()
                .any(|r| r.kind == k && group == Some(r.group.as_str()) && v != Some(&r.api_version))
        };
        for r in self.applied.lock().iter() {
            if !another_version(r.api_version.as_deref(), &r.kind) {
                add(r.api_version.as_deref(), &r.kind);
            }
        }
        let mut objects = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for (v, k) in wanted {
            let kind = self.kind(v.as_deref(), &k).await?;
            if seen.insert(kind.ar.api_version.clone() + "/" + &kind.ar.kind) {
                objects.extend(self.list(&kind).await?);
            }
        }
        Ok(crate::state::Snapshot { objects, events: self.events().await? })
    }
}

impl Drop for World {
    fn drop(&mut self) {
        self.writes.abort();
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

/// `o` as JSON with its `apiVersion` and `kind` (a list's items may lack them).
fn with_type(o: DynamicObject, ar: &ApiResource) -> Value {
    let mut v = serde_json::to_value(o).unwrap_or_default();
    if let Some(m) = v.as_object_mut() {
        m.insert("apiVersion".into(), Value::from(ar.api_version.clone()));
        m.insert("kind".into(), Value::from(ar.kind.clone()));
    }
    v
}

fn kube_error(what: &str, e: impl std::error::Error + Send + Sync + 'static) -> WorldError {
    WorldError::Kube { what: what.to_owned(), source: Box::new(e) }
}

/// The test's client: exempt from the faults it injects for the operator, and without
/// retries of its own.
async fn client_of(sim: &KubeSim) -> Result<Client, WorldError> {
    let kc =
        kube::config::Kubeconfig::from_yaml(&sim.kubeconfig()).map_err(|e| kube_error("kubeconfig", e))?;
    let mut config = kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
        .await
        .map_err(|e| kube_error("kubeconfig", e))?;
    config.headers.push((
        http::HeaderName::from_static(ctop_kubesim::FAULT_EXEMPT_HEADER),
        http::HeaderValue::from_static("ctop-test"),
    ));
    config.default_retry = false;
    Client::try_from(config).map_err(|e| kube_error("client", e))
}

/// The operator's values: `values` from the test, else `DIR/values.yaml`, else empty.
pub fn values_for(dir: &Path, from_test: Option<&Value>) -> Result<Value, WorldError> {
    if let Some(v) = from_test {
        return Ok(v.clone());
    }
    match std::fs::read_to_string(dir.join("values.yaml")) {
        Ok(text) => ctop_runtime::values_from_yaml(&text).map_err(|e| WorldError::Values(e.to_string())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Value::Object(serde_json::Map::new())),
        Err(e) => Err(WorldError::Values(format!("cannot read values.yaml: {e}"))),
    }
}

//! A loaded operator script: its bundle, a pool of QuickJS runtimes running it with the
//! embedded SDK, and the operator description it declares.

use std::path::Path;
use std::sync::Arc;

use ctop_core::{EgressRule, OperatorSpec};
use parking_lot::RwLock;

use crate::bundle::{Bundle, BundleError};
use crate::egress::EgressPolicy;
use crate::load::{LoadError, load_dir};
use crate::pool::Pool;
use crate::sdk::SDK_JS;
use crate::vm::{Limits, Observer, Vm, VmError, VmOptions};

/// Why a script could not be made ready.
#[derive(Debug, thiserror::Error)]
pub enum ScriptError {
    /// The TypeScript sources could not be loaded; the message names file, line and column.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// A bundle file could not be read; the message says why.
    #[error(transparent)]
    Bundle(#[from] BundleError),
    /// The script failed while running its top level (or a limit was hit).
    #[error(transparent)]
    Vm(#[from] VmError),
    /// `__ct_operator` does not have the shape the runtime expects (an SDK bug or a script
    /// that overwrote it).
    #[error("the script's operator registry is malformed")]
    Registry(#[source] serde_json::Error),
}

/// A script ready to dispatch handler calls.
pub struct Script {
    bundle: Arc<Bundle>,
    spec: OperatorSpec,
    pool: Arc<Pool>,
    limits: Limits,
    egress: Arc<RwLock<EgressPolicy>>,
    clock: Arc<crate::vm::Clock>,
}

impl std::fmt::Debug for Script {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Script")
            .field("entry", &self.bundle.entry)
            .field("spec", &self.spec)
            .finish_non_exhaustive()
    }
}

impl Script {
    /// Load `dir/entry` from source.
    pub fn from_dir(dir: &Path, entry: &str, workers: usize, limits: Limits) -> Result<Self, ScriptError> {
        Self::from_bundle(load_dir(dir, entry)?, workers, limits)
    }

    /// Load a `bundle.js.gz` produced by `ctop bundle`.
    pub fn from_bundle_gz(bytes: &[u8], workers: usize, limits: Limits) -> Result<Self, ScriptError> {
        Self::from_bundle(Bundle::from_gz(bytes)?, workers, limits)
    }

    /// Run `bundle` in `workers` runtimes and extract what it declares.
    pub fn from_bundle(bundle: Bundle, workers: usize, limits: Limits) -> Result<Self, ScriptError> {
        let bundle = Arc::new(bundle);
        let egress = Arc::new(RwLock::new(EgressPolicy::default()));
        let clock = Arc::new(crate::vm::Clock::default());
        let factory = {
            let bundle = bundle.clone();
            let (egress, clock) = (egress.clone(), clock.clone());
            move || Vm::with_options(bundle.clone(), SDK_JS, vm_options(&bundle, limits, &egress, &clock))
        };
        let pool = Pool::new(workers.max(1), factory)?;
        let registry = pool.with(|vm| vm.registry())?;
        let spec: OperatorSpec = serde_json::from_value(registry).map_err(ScriptError::Registry)?;
        egress.write().rules = declared_egress(&spec);
        Ok(Self { bundle, spec, pool: Arc::new(pool), limits, egress, clock })
    }

    /// Lets `fetch` also reach `rules` (the deployer's `--egress`), and keeps `own_ports` on
    /// loopback closed to it (the operator's health, metrics and webhook servers). See
    /// `egress.rs`.
    pub fn configure_egress(&self, rules: &[EgressRule], own_ports: &[u16]) {
        let mut policy = self.egress.write();
        policy.rules = declared_egress(&self.spec);
        for rule in rules {
            if !policy.rules.contains(rule) {
                policy.rules.push(rule.clone());
            }
        }
        policy.own_ports = own_ports.to_vec();
    }

    /// Read the time of `now()` from `clock` from now on, in every runtime of the script
    /// (`ctop test` sets its virtual clock; `Date` keeps reading the system's).
    pub fn set_clock(&self, clock: crate::vm::ClockFn) {
        self.clock.set(clock);
    }

    /// Where `fetch` may go now.
    pub fn egress(&self) -> EgressPolicy {
        self.egress.read().clone()
    }

    /// The limits its runtimes run under.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// What the script declares.
    pub fn spec(&self) -> &OperatorSpec {
        &self.spec
    }

    /// The bundle it runs.
    pub fn bundle(&self) -> &Bundle {
        &self.bundle
    }

    /// Call `handler` of controller `index` with `input` (JSON) in a free runtime.
    pub fn dispatch(&self, handler: &str, index: u32, input: &str) -> Result<serde_json::Value, VmError> {
        self.pool.with(|vm| vm.dispatch(handler, index, input))
    }

    /// [`Script::dispatch_observed`] from async code: waits for a free runtime without
    /// blocking the async runtime, and answers [`VmError::Timeout`] at the deadline plus
    /// `OVERRUN_GRACE` (2 s) even when the script is stuck in a host call (its runtime is then
    /// abandoned and replaced; see [`Pool::run`]). When `observer` answers from memory
    /// ([`Observer::answers_from_memory`]), the call may first run on the calling worker
    /// under a short budget, and start over on the blocking pool if it overruns it.
    pub async fn dispatch_async(
        &self,
        handler: &str,
        index: u32,
        input: String,
        observer: Option<Arc<dyn Observer>>,
    ) -> Result<serde_json::Value, VmError> {
        let handler = handler.to_owned();
        // An observer that answers from memory lets the call try the async worker first.
        let may_inline = observer.as_ref().is_none_or(|o| o.answers_from_memory());
        let told = observer.clone();
        let (result, path) = self
            .pool
            .run_path(OVERRUN_GRACE, may_inline, move |vm| match &observer {
                Some(observer) => vm.dispatch_observed(&handler, index, &input, Arc::clone(observer)),
                None => vm.dispatch(&handler, index, &input),
            })
            .await;
        if let Some(observer) = told {
            observer.ran(path);
        }
        result
    }

    /// [`Script::dispatch`] with `observer` serving `getObserved` / `listObserved`.
    pub fn dispatch_observed(
        &self,
        handler: &str,
        index: u32,
        input: &str,
        observer: Arc<dyn Observer>,
    ) -> Result<serde_json::Value, VmError> {
        self.pool.with(|vm| vm.dispatch_observed(handler, index, input, observer))
    }
}

/// Every controller's `.egress(...)` rules, each once.
fn declared_egress(spec: &OperatorSpec) -> Vec<EgressRule> {
    let mut rules: Vec<EgressRule> = Vec::new();
    for rule in spec.controllers.iter().flat_map(|c| &c.egress) {
        if !rules.contains(rule) {
            rules.push(rule.clone());
        }
    }
    rules
}

/// How long past its deadline a call of [`Script::dispatch_async`] may stay blocked in a host
/// call before it is abandoned. The deadline stops JavaScript itself within milliseconds;
/// host calls bound themselves by what is left of it (fetch), so this only catches a host
/// call that hangs.
pub const OVERRUN_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// Runtime options whose position mapper translates generated-JS positions back to the
/// TypeScript sources of `bundle`.
fn vm_options(
    bundle: &Arc<Bundle>,
    limits: Limits,
    egress: &Arc<RwLock<EgressPolicy>>,
    clock: &Arc<crate::vm::Clock>,
) -> VmOptions {
    let maps = bundle.clone();
    VmOptions {
        limits,
        egress: Arc::clone(egress),
        clock: Arc::clone(clock),
        position_mapper: Some(Arc::new(move |module: &str, line: u32, column: u32| {
            maps.original_position(module, line, column)
        })),
    }
}

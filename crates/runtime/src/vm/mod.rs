//! The QuickJS side of the script runtime: a [`Vm`] runs one operator script (a
//! [`Pool`](crate::pool::Pool) keeps one per worker).
//!
//! Start with [`Vm::new`] (or [`Vm::with_options`] to pass a source-map [`PositionMapper`]):
//! it creates an rquickjs runtime with the [`Limits`], hooks the built-ins that read the clock
//! or randomness (`nondet.rs`), installs `globalThis.__ct_host` (`host.rs`), serves the
//! bundle's modules plus the built-in module `"ctop"` (the sdk source) and the SDK's own
//! modules through a module loader that needs no file system (`loader.rs`), and evaluates the
//! entry module, whose top level registers the operator. Then [`Vm::registry`] reads
//! `globalThis.__ct_operator` and [`Vm::dispatch`] calls `globalThis.__ct_dispatch(handler,
//! index, inputJson)` (`RUNTIME.md` in this crate is the contract between loader, vm and sdk).
//!
//! Every call goes through `Vm::call` (this file); `env.rs` classifies what comes back
//! (errors, promise rejections, the output), `stack.rs` reads and maps stack traces, and
//! `deadline.rs` is the deadline the interrupt handler checks.
//!
//! # Limits
//! Every entry into JavaScript (loading, [`Vm::registry`], [`Vm::dispatch`]) arms a deadline
//! that the runtime's interrupt handler checks; past it the script is stopped with an
//! uncatchable error and the call fails with [`VmError::Timeout`]. The runtime's allocations are
//! capped ([`VmError::OutOfMemory`]), its stack is capped (deep recursion throws a catchable
//! `RangeError`, reported as [`VmError::Exception`]), the Rust heap its output takes is
//! counted as it is copied out of the runtime ([`VmError::OutputTooLarge`]), and its number of
//! children is capped ([`VmError::TooManyChildren`]). A call that hits the deadline or the
//! memory limit marks its `Vm` broken ([`Vm::is_broken`]); the [`Pool`](crate::pool::Pool) replaces broken `Vm`s
//! with fresh ones before anyone else gets them.
//!
//! Promise jobs a call queues run before it returns, and they are part of the call: a job
//! that throws, a promise rejected with no handler, or a limit hit inside a job fails the
//! call like the same failure in the handler's own code would.
//!
//! # State between calls
//! A `Vm` is reused for many calls, so what the script keeps alive survives between them:
//! module-level variables (`let cache = new Map()` at the top of a module) and properties it
//! puts on `globalThis` on purpose. Everything else is fresh per call: the input is parsed anew
//! from JSON (mutating it changes nothing for the next call), locals die with the call, and
//! modules are strict so a stray assignment cannot create a global. Kept state is per `Vm`,
//! i.e. per worker, and is lost whenever a `Vm` is rebuilt, so scripts may use it only as a
//! cache, never as the source of truth. The sdk clears its own output buffers at the start of
//! every dispatch.
//!
//! # Host functions
//! [`HOST_FUNCTIONS`] lists them. `__ct_host.randomString(n)` ([a-zA-Z0-9], OS randomness, `n` ≤ 1 MiB), `log(level, message,
//! fieldsJson)` (a `tracing` event with target `ctop::script`; wrap calls in a span to attach
//! the controller), `now()` (ms since the epoch), `decodeBase64(text)` (UTF-8 text),
//! `health(objectJson)` (`{status, reason, message}` by kstatus' rules, `ctop-health`),
//! `cronNext`/`cronBetween` (see [`crate::cron`]), and `fetch(url, initJson)`: a blocking
//! HTTP/1.1 request (http and https only) returning `{status, statusText, headers, body, url}`
//! or `{error}` as JSON, bounded by [`FetchLimits`] and by what is left of the call's
//! deadline (the interrupt handler cannot stop a request in flight). A fetch that ends past
//! the deadline fails the call with [`VmError::Timeout`] once the script returns.
//! `observed(op, kindKey, namespace, name)` serves `getObserved`/`listObserved` from the
//! [`Observer`] given to [`Vm::dispatch_observed`] (`undefined` when the call has none or
//! the kind is not observed, else JSON text: `null` for a missing object). `snap(obj,
//! namespace?)` copies a child into the call's output store and returns its index (see
//! `RUNTIME.md`: this is how `apply()` and `patch()` hand their children over).
//!
//! `now`, `randomString` and `fetch`, like `Math.random`, `Date.now()`, `new Date()` and
//! `performance`, tell the call's [`Observer`] that the call is nondeterministic
//! ([`Observer::nondeterministic`], once per kind per call; the list is in `nondet.rs` and
//! `RUNTIME.md`), and take each value they return from [`Observer::supply`] (live unless
//! the observer replays a recording).
//!
//! # Threads
//! rquickjs is built with its `parallel` feature so a `Vm` is [`Send`] and may move between
//! threads, but it is used by one thread at a time (`&mut self`). Calls block: run them on a
//! blocking thread whose stack is larger than [`Limits::max_stack`] (Rust's default 2 MiB
//! thread stack suits the default limit). There is no event loop: a promise can only settle
//! through the job queue, so handlers may `await` only promises that resolve without timers
//! or I/O.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use rquickjs::{Context, Ctx, Function, Persistent, Runtime, Value};

mod clock;
mod deadline;
mod env;
mod error;
mod host;
mod loader;
mod nondet;
mod stack;

use crate::bundle::Bundle;
pub use crate::egress::EgressPolicy;
pub use crate::fetch::FetchLimits;
use crate::fetch::Fetcher;
use crate::snapshot::Snapshots;
pub use clock::{Clock, ClockFn};
use deadline::Deadline;
use env::{Env, RejectionSlot, Tracker};
#[cfg(test)]
pub(crate) use host::HOST_FUNCTIONS;
use host::{HostFetch, install_host};
use loader::BundleLoader;

pub use error::VmError;

/// Name of the built-in module that serves the sdk source.
pub const SDK_MODULE: &str = "ctop";
const HOST_GLOBAL: &str = "__ct_host";
const REGISTRY_GLOBAL: &str = "__ct_operator";
const DISPATCH_GLOBAL: &str = "__ct_dispatch";
/// Longest string `__ct_host.randomString` produces.
pub const MAX_RANDOM_STRING: usize = 1 << 20;
/// Log messages and fields longer than this many bytes are truncated.
const MAX_LOG_TEXT: usize = 64 * 1024;
const MIB: usize = 1024 * 1024;

/// Resource limits of one [`Vm`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Bytes the runtime may allocate (default 64 MiB).
    pub memory: usize,
    /// Wall-clock deadline of one call into the script (default 30 s, `--reconcile-timeout`).
    pub timeout: Duration,
    /// Rust heap bytes the output of one call may take, children included (default 16 MiB);
    /// what a call holds outside [`Limits::memory`]. The heap of a copied object is 10–25×
    /// its JSON, so 16 MiB holds about 8,000 small ConfigMaps or 1,600 Deployments.
    pub max_output: usize,
    /// Most children (`apply()` plus `patch()` targets) one call may return (default
    /// 10,000, `--max-children`).
    pub max_children: usize,
    /// Stack bytes the interpreter may use (default 1 MiB); the calling thread needs more.
    pub max_stack: usize,
    /// Bounds of `__ct_host.fetch` (time, body sizes, redirects).
    pub fetch: FetchLimits,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            memory: 64 * MIB,
            timeout: Duration::from_secs(30),
            max_output: 16 * MIB,
            max_children: 10_000,
            max_stack: MIB,
            fetch: FetchLimits::default(),
        }
    }
}

/// Translates a position QuickJS reports in a module's JavaScript (module name, 1-based line,
/// 1-based column) to the TypeScript source position (1-based line and column), or `None`
/// when it has no mapping. The load part builds one from the bundle's source maps.
pub type PositionMapper = Arc<dyn Fn(&str, u32, u32) -> Option<(u32, u32)> + Send + Sync>;

/// Everything [`Vm::with_options`] takes besides the bundle and the sdk.
#[derive(Clone, Default)]
pub struct VmOptions {
    /// Resource limits.
    pub limits: Limits,
    /// Maps exception positions back to the TypeScript source; `None` keeps JS positions.
    pub position_mapper: Option<PositionMapper>,
    /// Where `fetch` may go, shared by every runtime of a script (empty: nowhere).
    pub egress: Arc<parking_lot::RwLock<EgressPolicy>>,
    /// The clock `now()` reads, shared by every runtime of a script.
    pub clock: Arc<Clock>,
}

impl fmt::Debug for VmOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VmOptions")
            .field("limits", &self.limits)
            .field("position_mapper", &self.position_mapper.is_some())
            .finish()
    }
}

pub use ctop_core::{Answer, Observer, Source};

/// The [`Observer`] of the call in progress, read by the `observed` host function and told
/// about nondeterministic calls (`nondet.rs`).
type ObserverSlot = Arc<Mutex<nondet::CallObserver>>;

/// The children `apply()`/`patch()` copied out during the call in progress.
type SnapshotSlot = Arc<Mutex<Snapshots>>;

/// One QuickJS runtime and context running one operator script.
pub struct Vm {
    observer: ObserverSlot,
    snapshots: SnapshotSlot,
    rejections: RejectionSlot,
    context: Context,
    bundle: Arc<Bundle>,
    options: VmOptions,
    deadline: Arc<Deadline>,
    broken: bool,
    /// Stops calls after this instead of the deadline, when shorter ([`Vm::set_budget`]).
    budget: Option<Duration>,
    /// The last call was stopped by its budget.
    over_budget: bool,
    /// This runtime's number in the process (see [`Observer::runtime`]).
    serial: u64,
    /// Handler calls it served so far.
    calls: u64,
}

/// The next [`Vm`]'s serial.
static NEXT_SERIAL: AtomicU64 = AtomicU64::new(1);

impl fmt::Debug for Vm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Vm")
            .field("entry", &self.bundle.entry)
            .field("options", &self.options)
            .field("broken", &self.broken)
            .finish_non_exhaustive()
    }
}

impl Vm {
    /// Creates a runtime with `limits`, installs `__ct_host` and the module loader (the
    /// bundle's modules plus `"ctop"` from `sdk_js`), and evaluates the entry module.
    pub fn new(bundle: Arc<Bundle>, sdk_js: &str, limits: Limits) -> Result<Self, VmError> {
        let options = VmOptions { limits, ..VmOptions::default() };
        Self::with_options(bundle, sdk_js, options)
    }

    /// [`Vm::new`] with all options, e.g. a `PositionMapper` for source maps.
    pub(crate) fn with_options(
        bundle: Arc<Bundle>,
        sdk_js: &str,
        options: VmOptions,
    ) -> Result<Self, VmError> {
        if !bundle.modules.contains_key(&bundle.entry) {
            return Err(VmError::Load {
                message: format!("the entry module {:?} is not in the bundle", bundle.entry),
            });
        }
        let engine = |e: rquickjs::Error| match e {
            rquickjs::Error::Allocation => VmError::OutOfMemory { limit: options.limits.memory },
            e => VmError::Engine(e.to_string()),
        };
        let runtime = Runtime::new().map_err(engine)?;
        runtime.set_memory_limit(options.limits.memory);
        runtime.set_max_stack_size(options.limits.max_stack);
        let deadline = Arc::new(Deadline::new());
        let handler_deadline = Arc::clone(&deadline);
        runtime.set_interrupt_handler(Some(Box::new(move || handler_deadline.expired())));
        let loader = BundleLoader { bundle: Arc::clone(&bundle), sdk: Arc::from(sdk_js) };
        runtime.set_loader(loader.clone(), loader);
        let context = Context::full(&runtime).map_err(engine)?;
        let fetch = HostFetch {
            fetcher: Arc::new(Fetcher::new(options.limits.fetch, Arc::clone(&options.egress))),
            deadline: Arc::clone(&deadline),
        };
        let observer = ObserverSlot::default();
        let slot = Arc::clone(&observer);
        let snapshots = SnapshotSlot::default();
        let snapshot_slot = Arc::clone(&snapshots);
        let rejections = RejectionSlot::default();
        let tracker = Tracker {
            rejections: Arc::clone(&rejections),
            deadline: Arc::clone(&deadline),
            options: options.clone(),
            bundle: Arc::clone(&bundle),
        };
        runtime.set_host_promise_rejection_tracker(Some(Box::new(move |ctx, _promise, reason, handled| {
            tracker.track(&ctx, reason, handled);
        })));
        let mut vm = Vm {
            observer,
            snapshots,
            rejections,
            context,
            bundle,
            options,
            deadline,
            broken: false,
            budget: None,
            over_budget: false,
            serial: NEXT_SERIAL.fetch_add(1, Ordering::Relaxed),
            calls: 0,
        };
        let bundle = Arc::clone(&vm.bundle);
        vm.call(
            "the entry module",
            |ctx, env| {
                nondet::hook_builtins(ctx, &slot).map_err(|e| env.error(ctx, e))?;
                install_host(ctx, fetch, slot, snapshot_slot, env.options).map_err(|e| env.error(ctx, e))?;
                let js = bundle.modules.get(&bundle.entry).map_or("", |m| m.js.as_str());
                let (_, promise) = rquickjs::Module::declare(ctx.clone(), bundle.entry.as_str(), js)
                    .and_then(|module| module.eval())
                    .map_err(|e| env.error(ctx, e))?;
                Ok(promise.into_value())
            },
            |ctx, env, _| {
                let dispatch: Value<'_> =
                    ctx.globals().get(DISPATCH_GLOBAL).map_err(|e| env.error(ctx, e))?;
                if !dispatch.is_function() {
                    return Err(VmError::Load {
                        message: format!(
                            "{:?} declares no operator: the \"{SDK_MODULE}\" module never ran \
                             (globalThis.{DISPATCH_GLOBAL} is not set). Call operator(...) imported \
                             from \"{SDK_MODULE}\"; an import that nothing uses is dropped when the \
                             TypeScript is compiled",
                            env.bundle.entry
                        ),
                    });
                }
                Ok(())
            },
        )?;
        Ok(vm)
    }

    /// `JSON.stringify(globalThis.__ct_operator)`, parsed: what the script's top level
    /// registered.
    pub fn registry(&mut self) -> Result<serde_json::Value, VmError> {
        self.call(
            "the registry",
            |ctx, env| {
                let registry: Value<'_> =
                    ctx.globals().get(REGISTRY_GLOBAL).map_err(|e| env.error(ctx, e))?;
                if registry.is_undefined() {
                    return Err(VmError::BadOutput(format!(
                        "globalThis.{REGISTRY_GLOBAL} is not set; the script registered nothing"
                    )));
                }
                let json = ctx
                    .json_stringify(registry)
                    .map_err(|e| env.error(ctx, e))?
                    .ok_or_else(|| VmError::BadOutput(format!("globalThis.{REGISTRY_GLOBAL} is not JSON")))?;
                Ok(json.into_value())
            },
            |ctx, env, json| env.parse_output(ctx, json),
        )
    }

    /// Calls `__ct_dispatch(handler, index, input)` with the deadline armed and returns the
    /// output: copied from the returned object (children from the call's snapshots) or
    /// parsed from returned JSON text. A returned promise is driven to completion.
    pub fn dispatch(&mut self, handler: &str, index: u32, input: &str) -> Result<serde_json::Value, VmError> {
        self.calls += 1;
        let limit = self.options.limits.max_output;
        self.snapshots.lock().reset(limit);
        let snapshots = Arc::clone(&self.snapshots);
        let out = self.call(
            "the handler",
            |ctx, env| {
                let dispatch: Function<'_> =
                    ctx.globals().get(DISPATCH_GLOBAL).map_err(|e| env.error(ctx, e))?;
                dispatch.call((handler, index, input)).map_err(|e| env.error(ctx, e))
            },
            |ctx, env, output| {
                if output.is_string() {
                    return env.parse_output(ctx, output);
                }
                env.copy_output(ctx, &output, &snapshots)
            },
        );
        let mut snapshots = self.snapshots.lock();
        let overflow = snapshots.overflow();
        let too_many = snapshots.too_many();
        snapshots.reset(0);
        drop(snapshots);
        if too_many {
            return Err(VmError::TooManyChildren { limit: self.options.limits.max_children });
        }
        if let Some(size) = overflow {
            return Err(VmError::OutputTooLarge { size, limit });
        }
        let out = out?;
        let max = self.options.limits.max_children;
        let children: usize = ["applies", "patches"]
            .iter()
            .filter_map(|list| out.get(*list).and_then(serde_json::Value::as_array).map(Vec::len))
            .sum();
        if children > max {
            return Err(VmError::TooManyChildren { limit: max });
        }
        Ok(out)
    }

    /// [`Vm::dispatch`] with `observer` serving the handler's `getObserved` and
    /// `listObserved` (the input then carries no `observed`) and told about each kind of
    /// nondeterministic call the handler makes ([`Observer::nondeterministic`]), whose
    /// values it supplies ([`Observer::supply`]).
    pub fn dispatch_observed(
        &mut self,
        handler: &str,
        index: u32,
        input: &str,
        observer: Arc<dyn Observer>,
    ) -> Result<serde_json::Value, VmError> {
        observer.runtime(self.serial, self.calls);
        self.observer.lock().start(Some(observer));
        let out = self.dispatch(handler, index, input);
        self.observer.lock().start(None);
        out
    }

    /// Whether a call hit the deadline or the memory limit, so this `Vm` may be broken and
    /// should be replaced (the [`Pool`](crate::pool::Pool) does so).
    pub fn is_broken(&self) -> bool {
        self.broken
    }

    /// The limits this `Vm` runs under.
    pub fn limits(&self) -> &Limits {
        &self.options.limits
    }

    /// Stops the calls that follow after `budget` when it is shorter than the deadline
    /// (`None`: at the deadline). A call stopped by its budget fails with
    /// [`VmError::Timeout`] and breaks the `Vm`, like one past its deadline, and
    /// [`Vm::over_budget`] says so. The [`Pool`](crate::pool::Pool) uses it for the short
    /// first attempt it runs on the async worker.
    pub(crate) fn set_budget(&mut self, budget: Option<Duration>) {
        self.budget = budget;
    }

    /// Whether the last call was stopped by the budget of [`Vm::set_budget`].
    pub(crate) fn over_budget(&self) -> bool {
        self.over_budget
    }

    /// Whether `fetch` may reach anywhere now: with no egress rule it refuses every request
    /// before any I/O, so a call waits on nothing outside the process but its observer.
    pub(crate) fn may_fetch(&self) -> bool {
        !self.options.egress.read().rules.is_empty()
    }

    /// One entry into JavaScript with the deadline armed: `start` runs inside the context and
    /// returns a value. A value that is not a promise goes to `finish` at once; then every
    /// queued promise job runs (outside the context, so a job that fails is seen: its
    /// exception fails the call); then a promise returned by `start` must have settled, and
    /// its value goes to `finish`. A promise rejected with no handler by the time the jobs
    /// are done fails the call too (an exception thrown in a `.then` callback, or a limit hit
    /// there, would otherwise vanish). `what` names the promise in
    /// [`VmError::NeverSettled`].
    fn call<T>(
        &mut self,
        what: &str,
        start: impl for<'js> FnOnce(&Ctx<'js>, &Env<'_>) -> Result<Value<'js>, VmError>,
        finish: impl for<'js> FnOnce(&Ctx<'js>, &Env<'_>, Value<'js>) -> Result<T, VmError>,
    ) -> Result<T, VmError> {
        let env = Env { deadline: &self.deadline, options: &self.options, bundle: &self.bundle };
        self.rejections.lock().clear();
        let budget = self.budget.filter(|b| *b < self.options.limits.timeout);
        self.over_budget = false;
        self.deadline.arm(budget.unwrap_or(self.options.limits.timeout));
        let result = (|| {
            let mut finish = Some(finish);
            let first = self.context.with(|ctx| -> Result<Step<T>, VmError> {
                let value = start(&ctx, &env)?;
                if value.is_promise() {
                    return Ok(Step::Settle(Persistent::save(&ctx, value)));
                }
                match finish.take() {
                    Some(finish) => finish(&ctx, &env, value).map(Step::Done),
                    None => Err(VmError::Engine("a call finished twice".to_owned())),
                }
            })?;
            env.drain(self.context.runtime())?;
            let value = match first {
                Step::Done(value) => value,
                Step::Settle(promise) => self.context.with(|ctx| {
                    let promise = promise.restore(&ctx).map_err(|e| env.error(&ctx, e))?;
                    let settled = env.settled(&ctx, promise, what)?;
                    match finish.take() {
                        Some(finish) => finish(&ctx, &env, settled),
                        None => Err(VmError::Engine("a call finished twice".to_owned())),
                    }
                })?,
            };
            match self.rejections.lock().take() {
                Some(error) => Err(error),
                None => Ok(value),
            }
        })();
        self.deadline.disarm();
        if let Err(e) = &result
            && e.breaks_runtime()
        {
            self.broken = true;
            self.over_budget = budget.is_some() && matches!(e, VmError::Timeout { .. });
        }
        result
    }
}

/// The first part of a call: its result, or the promise to settle once the jobs ran.
enum Step<T> {
    Done(T),
    Settle(Persistent<Value<'static>>),
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
pub(crate) mod tests;

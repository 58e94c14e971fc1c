//! The QuickJS side of the script runtime: a [`Vm`] runs one operator script (a
//! [`Pool`](crate::pool::Pool) keeps one per worker).
//!
//! Start with [`Vm::new`] (or [`Vm::with_options`] to pass a source-map [`PositionMapper`]):
//! it creates an rquickjs runtime with the [`Limits`], hooks the built-ins that read the clock
//! or randomness (`nondet.rs`), installs `globalThis.__ct_host`, serves the bundle's modules
//! plus the built-in module `"ctop"` (the sdk source) through a module loader that needs no
//! file system, and evaluates the entry module, whose top level registers the operator. Then [`Vm::registry`] reads `globalThis.__ct_operator` and [`Vm::dispatch`]
//! calls `globalThis.__ct_dispatch(handler, index, inputJson)` (`RUNTIME.md` in this crate
//! is the contract between loader, vm and sdk).
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
//! `__ct_host.randomString(n)` ([a-zA-Z0-9], OS randomness, `n` ≤ 1 MiB), `log(level, message,
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
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use rquickjs::loader::{ImportAttributes, Loader, Resolver};
use rquickjs::module::Declared;
use rquickjs::{Coerced, Context, Ctx, Exception, Function, Persistent, Runtime, Type, Value};

mod clock;
mod error;
mod host;
mod nondet;

use crate::bundle::Bundle;
use crate::diagnostic::{CodeFrame, frame_in_bundle};
pub use crate::egress::EgressPolicy;
pub use crate::fetch::FetchLimits;
use crate::fetch::Fetcher;
use crate::snapshot::Snapshots;
pub use clock::{Clock, ClockFn};
use host::{HostFetch, install_host};

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

/// The per-call deadline shared with the interrupt handler.
struct Deadline {
    base: Instant,
    /// Nanoseconds after `base`, or [`Deadline::DISARMED`].
    at: AtomicU64,
    fired: AtomicBool,
}

impl Deadline {
    const DISARMED: u64 = u64::MAX;

    fn new() -> Self {
        Deadline { base: Instant::now(), at: AtomicU64::new(Self::DISARMED), fired: AtomicBool::new(false) }
    }

    fn now(&self) -> u64 {
        u64::try_from(self.base.elapsed().as_nanos()).unwrap_or(Self::DISARMED - 1)
    }

    fn arm(&self, after: Duration) {
        let after = u64::try_from(after.as_nanos()).unwrap_or(u64::MAX);
        self.fired.store(false, Ordering::Relaxed);
        let at = self.now().saturating_add(after).min(Self::DISARMED - 1);
        self.at.store(at, Ordering::Relaxed);
    }

    fn disarm(&self) {
        self.at.store(Self::DISARMED, Ordering::Relaxed);
    }

    /// Time left before the deadline; `None` when disarmed.
    fn remaining(&self) -> Option<Duration> {
        let at = self.at.load(Ordering::Relaxed);
        (at != Self::DISARMED).then(|| Duration::from_nanos(at.saturating_sub(self.now())))
    }

    /// Called by the interrupt handler: true (stop the script) once the deadline has passed.
    fn expired(&self) -> bool {
        let at = self.at.load(Ordering::Relaxed);
        if at != Self::DISARMED && self.now() >= at {
            self.fired.store(true, Ordering::Relaxed);
            return true;
        }
        false
    }

    fn fired(&self) -> bool {
        self.fired.load(Ordering::Relaxed)
    }
}

/// Resolver and loader over the bundle: specifiers are canonical module names already.
#[derive(Clone)]
struct BundleLoader {
    bundle: Arc<Bundle>,
    sdk: Arc<str>,
}

impl Resolver for BundleLoader {
    fn resolve<'js>(
        &mut self,
        _ctx: &Ctx<'js>,
        base: &str,
        name: &str,
        _attributes: Option<ImportAttributes<'js>>,
    ) -> rquickjs::Result<String> {
        if name == SDK_MODULE || self.bundle.modules.contains_key(name) {
            Ok(name.to_owned())
        } else {
            Err(rquickjs::Error::new_resolving_message(base, name, "no such module in the bundle"))
        }
    }
}

impl Loader for BundleLoader {
    fn load<'js>(
        &mut self,
        ctx: &Ctx<'js>,
        name: &str,
        _attributes: Option<ImportAttributes<'js>>,
    ) -> rquickjs::Result<rquickjs::Module<'js, Declared>> {
        let js = if name == SDK_MODULE {
            &*self.sdk
        } else {
            match self.bundle.modules.get(name) {
                Some(module) => module.js.as_str(),
                None => return Err(rquickjs::Error::new_loading(name)),
            }
        };
        rquickjs::Module::declare(ctx.clone(), name, js)
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

    /// [`Vm::new`] with all options, e.g. a [`PositionMapper`] for source maps.
    pub fn with_options(bundle: Arc<Bundle>, sdk_js: &str, options: VmOptions) -> Result<Self, VmError> {
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
        self.deadline.arm(self.options.limits.timeout);
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
        }
        result
    }
}

/// The first part of a call: its result, or the promise to settle once the jobs ran.
enum Step<T> {
    Done(T),
    Settle(Persistent<Value<'static>>),
}

/// The first promise rejection of the call in progress that no handler took (yet).
#[derive(Default)]
struct Rejections {
    /// Rejected promises without a handler; a handler attached later takes one off.
    unhandled: usize,
    /// The error of the first of them.
    first: Option<VmError>,
}

impl Rejections {
    fn clear(&mut self) {
        self.unhandled = 0;
        self.first = None;
    }

    /// The error to fail the call with, when a rejection is still unhandled.
    fn take(&mut self) -> Option<VmError> {
        let error = self.first.take().filter(|_| self.unhandled > 0);
        self.clear();
        error
    }
}

type RejectionSlot = Arc<Mutex<Rejections>>;

/// The runtime's promise rejection tracker: what it needs to classify a rejection reason.
struct Tracker {
    rejections: RejectionSlot,
    deadline: Arc<Deadline>,
    options: VmOptions,
    bundle: Arc<Bundle>,
}

impl Tracker {
    fn track<'js>(&self, ctx: &Ctx<'js>, reason: Value<'js>, handled: bool) {
        let mut rejections = self.rejections.lock();
        if handled {
            rejections.unhandled = rejections.unhandled.saturating_sub(1);
            if rejections.unhandled == 0 {
                rejections.first = None;
            }
            return;
        }
        rejections.unhandled += 1;
        if rejections.first.is_none() {
            let env = Env { deadline: &self.deadline, options: &self.options, bundle: &self.bundle };
            let error = if self.deadline.fired() { env.timeout() } else { env.exception(ctx, reason) };
            rejections.first = Some(match error {
                VmError::Exception { name, message, stack, file, line, column, frame } => {
                    VmError::Exception {
                        name,
                        message: format!("{message} (a promise rejected with no handler)"),
                        stack,
                        file,
                        line,
                        column,
                        frame,
                    }
                }
                other => other,
            });
        }
    }
}

/// What error classification and output handling need, borrowed from the [`Vm`].
struct Env<'a> {
    deadline: &'a Deadline,
    options: &'a VmOptions,
    bundle: &'a Bundle,
}

impl Env<'_> {
    fn timeout(&self) -> VmError {
        VmError::Timeout { after: self.options.limits.timeout }
    }

    fn oom(&self) -> VmError {
        VmError::OutOfMemory { limit: self.options.limits.memory }
    }

    /// Classifies an rquickjs error, taking the pending exception off the context.
    fn error(&self, ctx: &Ctx<'_>, error: rquickjs::Error) -> VmError {
        let thrown = error.is_exception().then(|| ctx.catch());
        if self.deadline.fired() {
            return self.timeout();
        }
        match (error, thrown) {
            (_, Some(value)) => self.exception(ctx, value),
            (rquickjs::Error::Allocation, None) => self.oom(),
            (e, None) => VmError::Engine(e.to_string()),
        }
    }

    fn exception<'js>(&self, ctx: &Ctx<'js>, value: Value<'js>) -> VmError {
        // QuickJS throws nothing at all, or `null`, when it cannot even allocate the error
        // object (`JS_ThrowError2`). A script that throws `null` itself is reported the same
        // way: the two cannot be told apart.
        if matches!(value.type_of(), Type::Uninitialized | Type::Null) {
            return self.oom();
        }
        let Some(error) = value.as_object().and_then(|o| Exception::from_object(o.clone())) else {
            return VmError::Exception {
                name: "Error".to_owned(),
                message: describe(ctx, &value),
                stack: String::new(),
                file: None,
                line: None,
                column: None,
                frame: None,
            };
        };
        let name = error
            .get::<_, Option<Coerced<String>>>("name")
            .ok()
            .flatten()
            .map_or_else(|| "Error".to_owned(), |n| n.0);
        let message = error.message().unwrap_or_default();
        if name == "InternalError" && message == "out of memory" {
            return self.oom();
        }
        let stack = at_call_site(&error.stack().unwrap_or_default(), self.bundle);
        let stack = map_stack(&stack, self.options.position_mapper.as_ref());
        let frame = pick_frame(&stack, self.bundle);
        let code = frame.as_ref().and_then(|f| self.code_frame(f.file, f.line, f.column)).map(Box::new);
        VmError::Exception {
            name,
            message,
            file: frame.as_ref().map(|f| f.file.to_owned()),
            line: frame.as_ref().map(|f| f.line),
            column: frame.as_ref().map(|f| f.column),
            stack,
            frame: code,
        }
    }

    /// The code frame at a position of the stack: in the original source when positions
    /// were mapped through the source maps, else in the module's JavaScript.
    fn code_frame(&self, file: &str, line: u32, column: u32) -> Option<CodeFrame> {
        if self.options.position_mapper.is_some() {
            frame_in_bundle(self.bundle, file, line, column)
        } else {
            CodeFrame::new(file, &self.bundle.modules.get(file)?.js, line, column)
        }
    }

    /// The value of a promise once the jobs ran: its result, its rejection as an error, or
    /// [`VmError::NeverSettled`].
    fn settled<'js>(&self, ctx: &Ctx<'js>, value: Value<'js>, what: &str) -> Result<Value<'js>, VmError> {
        let Some(promise) = value.as_promise() else {
            return Ok(value);
        };
        match promise.result::<Value<'_>>() {
            Some(Ok(value)) => Ok(value),
            Some(Err(e)) => Err(self.error(ctx, e)),
            None => Err(VmError::NeverSettled { what: what.to_owned() }),
        }
    }

    /// Runs every queued promise job, outside the context so that a job's failure is seen;
    /// fails on the first job that throws, or once the deadline has passed.
    fn drain(&self, runtime: &Runtime) -> Result<(), VmError> {
        loop {
            match runtime.execute_pending_job() {
                Ok(true) => {}
                Ok(false) => break,
                Err(job) => {
                    return Err(job.0.with(|ctx| {
                        let thrown = ctx.catch();
                        if self.deadline.fired() { self.timeout() } else { self.exception(&ctx, thrown) }
                    }));
                }
            }
            if self.deadline.expired() {
                return Err(self.timeout());
            }
        }
        if self.deadline.fired() {
            return Err(self.timeout());
        }
        Ok(())
    }

    /// The output object of a dispatch that snapshotted its children through
    /// `__ct_host.snap`: copied from the runtime, with the snapshot indices in `applies` and
    /// `patches` replaced by the snapshots.
    fn copy_output<'js>(
        &self,
        ctx: &Ctx<'js>,
        value: &Value<'js>,
        snapshots: &SnapshotSlot,
    ) -> Result<serde_json::Value, VmError> {
        let mut snapshots = snapshots.lock();
        let mut output = snapshots.copy(ctx, value).map_err(|e| self.error(ctx, e))?;
        if !output.is_object() {
            return Err(VmError::BadOutput(format!(
                "{DISPATCH_GLOBAL} returned {}, not an object or a JSON string",
                value.type_name()
            )));
        }
        for list in ["applies", "patches"] {
            let Some(items) = output.get_mut(list).and_then(serde_json::Value::as_array_mut) else {
                continue;
            };
            for item in items.iter_mut() {
                let taken =
                    item.as_u64().and_then(|i| usize::try_from(i).ok()).and_then(|i| snapshots.take(i));
                *item = taken.ok_or_else(|| {
                    VmError::BadOutput(format!("{list} holds {item}, which is not a snapshot of this call"))
                })?;
            }
        }
        Ok(output)
    }

    /// Checks that `value` is a JSON string within [`Limits::max_output`] and parses it.
    fn parse_output<'js>(&self, ctx: &Ctx<'js>, value: Value<'js>) -> Result<serde_json::Value, VmError> {
        let Some(text) = value.as_string() else {
            return Err(VmError::BadOutput(format!(
                "{DISPATCH_GLOBAL} returned {}, not a JSON string",
                value.type_name()
            )));
        };
        // The UTF-8 copy lives in the runtime's memory, so its size is bounded by the limit
        // before anything is copied to the Rust heap.
        let text = text.clone().to_cstring().map_err(|e| self.error(ctx, e))?;
        let limit = self.options.limits.max_output;
        let size = text.as_str().len();
        if size > limit {
            return Err(VmError::OutputTooLarge { size, limit });
        }
        serde_json::from_str(text.as_str())
            .map_err(|e| VmError::BadOutput(format!("output is not valid JSON: {e}")))
    }
}

/// A thrown non-error value as text.
fn describe<'js>(ctx: &Ctx<'js>, value: &Value<'js>) -> String {
    if let Some(s) = value.as_string() {
        return s.to_string().unwrap_or_default();
    }
    match ctx.json_stringify(value.clone()) {
        Ok(Some(json)) => json.to_string().unwrap_or_default(),
        _ => format!("a thrown {}", value.type_name()),
    }
}

/// One `    at fn (file:line:col)` or `    at file:line:col` line of a QuickJS stack.
#[derive(Debug, PartialEq, Eq)]
struct Frame<'a> {
    function: Option<&'a str>,
    file: &'a str,
    line: u32,
    column: u32,
}

fn parse_frame(text: &str) -> Option<Frame<'_>> {
    let rest = text.trim().strip_prefix("at ")?;
    let (function, location) = match rest.strip_suffix(')').and_then(|r| r.rsplit_once(" (")) {
        Some((function, location)) => (Some(function), location),
        None => (None, rest),
    };
    let (location, column) = location.rsplit_once(':')?;
    let (file, line) = location.rsplit_once(':')?;
    Some(Frame { function, file, line: line.parse().ok()?, column: column.parse().ok()? })
}

/// Rewrites every frame position through `mapper`; frames it has no mapping for are kept.
fn map_stack(stack: &str, mapper: Option<&PositionMapper>) -> String {
    let Some(mapper) = mapper else {
        return stack.to_owned();
    };
    let mut out = String::with_capacity(stack.len());
    for text in stack.lines() {
        let mapped = parse_frame(text).and_then(|frame| {
            let (line, column) = mapper(frame.file, frame.line, frame.column)?;
            let indent = &text[..text.len() - text.trim_start().len()];
            Some(match frame.function {
                Some(function) => format!("{indent}at {function} ({}:{line}:{column})", frame.file),
                None => format!("{indent}at {}:{line}:{column}", frame.file),
            })
        });
        out.push_str(mapped.as_deref().unwrap_or(text));
        out.push('\n');
    }
    out
}

/// `stack` with the innermost frame in a bundle module moved to the call it made, when that
/// frame called out of the bundle (the SDK, whose functions check their arguments and throw):
/// QuickJS gives a call the position of the last expression of its arguments, and a user
/// expects the error of `resource(..., { ...ten lines... })` at `resource(`. Other stacks
/// (the error thrown in the bundle's own code) are returned as they are.
fn at_call_site(stack: &str, bundle: &Bundle) -> String {
    let lines: Vec<&str> = stack.lines().collect();
    let Some(at) =
        lines.iter().position(|l| parse_frame(l).is_some_and(|f| bundle.modules.contains_key(f.file)))
    else {
        return stack.to_owned();
    };
    let (Some(caller), Some(callee)) =
        (parse_frame(lines[at]), at.checked_sub(1).and_then(|i| parse_frame(lines[i])))
    else {
        return stack.to_owned();
    };
    let Some(function) = callee.function.filter(|f| !f.starts_with('<')) else {
        return stack.to_owned();
    };
    let Some((line, column)) = bundle
        .modules
        .get(caller.file)
        .and_then(|m| crate::diagnostic::call_site::call_start(&m.js, caller.line, caller.column, function))
    else {
        return stack.to_owned();
    };
    let indent = &lines[at][..lines[at].len() - lines[at].trim_start().len()];
    let moved = match caller.function {
        Some(f) => format!("{indent}at {f} ({}:{line}:{column})", caller.file),
        None => format!("{indent}at {}:{line}:{column}", caller.file),
    };
    let mut out: Vec<String> = lines.iter().map(|l| (*l).to_owned()).collect();
    out[at] = moved;
    let mut text = out.join("\n");
    if stack.ends_with('\n') {
        text.push('\n');
    }
    text
}

/// The innermost frame in a bundle module, else the innermost frame with a position.
fn pick_frame<'a>(stack: &'a str, bundle: &Bundle) -> Option<Frame<'a>> {
    let mut first = None;
    for frame in stack.lines().filter_map(parse_frame) {
        if bundle.modules.contains_key(frame.file) {
            return Some(frame);
        }
        first.get_or_insert(frame);
    }
    first
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
pub(crate) mod tests;

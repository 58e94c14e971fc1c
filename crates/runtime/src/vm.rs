//! The QuickJS side of the script runtime: a [`Vm`] runs one operator script (a
//! [`Pool`](crate::pool::Pool) keeps one per worker).
//!
//! Start with [`Vm::new`] (or [`Vm::with_options`] to pass a source-map [`PositionMapper`]):
//! it creates an rquickjs runtime with the [`Limits`], installs `globalThis.__ct_host`, serves
//! the bundle's modules plus the built-in module `"ctop"` (the sdk source) through a module
//! loader that needs no file system, and evaluates the entry module, whose top level registers
//! the operator. Then [`Vm::registry`] reads `globalThis.__ct_operator` and [`Vm::dispatch`]
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
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use parking_lot::Mutex;
use rand::TryRng;
use rand::rngs::SysRng;
use rquickjs::function::Opt;
use rquickjs::loader::{ImportAttributes, Loader, Resolver};
use rquickjs::module::Declared;
use rquickjs::{Coerced, Context, Ctx, Exception, Function, Object, Persistent, Runtime, Type, Value};

use crate::bundle::Bundle;
use crate::diagnostic::{CodeFrame, frame_in_bundle};
pub use crate::egress::EgressPolicy;
pub use crate::fetch::FetchLimits;
use crate::fetch::Fetcher;
use crate::snapshot::Snapshots;

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
}

impl fmt::Debug for VmOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VmOptions")
            .field("limits", &self.limits)
            .field("position_mapper", &self.position_mapper.is_some())
            .finish()
    }
}

/// Why a call into the script failed.
#[derive(Debug, thiserror::Error)]
pub enum VmError {
    /// The script threw (or the engine threw for it, e.g. a stack overflow or a bad import).
    #[error("{name}: {message}{}", at(.file, .line, .column))]
    Exception {
        /// The error's `name` (`Error`, `TypeError`, …); `Error` for thrown non-errors.
        name: String,
        /// The error's `message`, or the thrown value as text.
        message: String,
        /// The stack trace, positions mapped through the [`PositionMapper`]; may be empty.
        stack: String,
        /// Module of the innermost script frame (a bundle module if any frame is one).
        file: Option<String>,
        /// 1-based line in `file`.
        line: Option<u32>,
        /// 1-based column in `file`: where QuickJS recorded the failing operation, which can be
        /// later on the line than the `throw` keyword (e.g. the last operand of `new Error(..)`).
        column: Option<u32>,
        /// The source line at `file:line:column` with a caret, for terminals (not part of the
        /// message, which stays on one line for Events and conditions).
        frame: Option<Box<CodeFrame>>,
    },
    /// The call ran past its deadline and was stopped.
    #[error(
        "the script ran longer than its {after:?} deadline and was stopped; make the handler \
         do less per call, or raise the deadline (--reconcile-timeout; --webhook-handler-timeout \
         for validate and mutate)"
    )]
    Timeout {
        /// The deadline that was exceeded.
        after: Duration,
    },
    /// The runtime hit its memory limit.
    #[error(
        "the script ran out of memory (limit {}); keep less data alive in the script, or raise \
         --script-memory",
        bytes(*.limit)
    )]
    OutOfMemory {
        /// The memory limit in bytes.
        limit: usize,
    },
    /// The handler's output takes more memory than [`Limits::max_output`].
    #[error(
        "the handler's output takes more than its {} memory budget (children included); \
         return fewer or smaller objects, or raise --max-output",
        bytes(*.limit)
    )]
    OutputTooLarge {
        /// Heap bytes counted when the budget ran out.
        size: usize,
        /// The limit in bytes.
        limit: usize,
    },
    /// The handler applied or patched more children than [`Limits::max_children`].
    #[error(
        "the handler returned more than {limit} children (apply and patch) in one call; split \
         the work across objects, or raise --max-children"
    )]
    TooManyChildren {
        /// The limit.
        limit: usize,
    },
    /// The script's output was not what the runtime protocol expects (not a JSON string, or
    /// not valid JSON).
    #[error("bad output from the script: {0}")]
    BadOutput(String),
    /// A promise the runtime waited for never settled (there is no event loop).
    #[error(
        "{what} returned a promise that never settled; only promises that resolve without \
         timers or I/O can be awaited"
    )]
    NeverSettled {
        /// What returned the promise.
        what: String,
    },
    /// The bundle could not be set up: the entry module is missing, or the script never
    /// installed `__ct_dispatch` (it did not import `"ctop"`).
    #[error("cannot load the script: {message}")]
    Load {
        /// What is wrong.
        message: String,
    },
    /// QuickJS failed in a way the script did not cause (e.g. creating the runtime).
    #[error("script engine error: {0}")]
    Engine(String),
}

/// `n` bytes as the flags take them: `64Mi` when a whole number of MiB, else `1000 bytes`.
fn bytes(n: usize) -> String {
    if n >= MIB && n.is_multiple_of(MIB) { format!("{}Mi", n / MIB) } else { format!("{n} bytes") }
}

fn at(file: &Option<String>, line: &Option<u32>, column: &Option<u32>) -> String {
    match (file, line, column) {
        (Some(f), Some(l), Some(c)) => format!(" (at {f}:{l}:{c})"),
        (Some(f), Some(l), None) => format!(" (at {f}:{l})"),
        (Some(f), None, _) => format!(" (in {f})"),
        _ => String::new(),
    }
}

impl VmError {
    /// Whether the `Vm` that returned this error may be broken and must be replaced.
    pub fn breaks_runtime(&self) -> bool {
        matches!(self, VmError::Timeout { .. } | VmError::OutOfMemory { .. })
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

pub use ctop_core::Observer;

/// The [`Observer`] of the call in progress, read by the `observed` host function.
type ObserverSlot = Arc<Mutex<Option<Arc<dyn Observer>>>>;

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
}

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
        let mut vm =
            Vm { observer, snapshots, rejections, context, bundle, options, deadline, broken: false };
        let bundle = Arc::clone(&vm.bundle);
        vm.call(
            "the entry module",
            |ctx, env| {
                install_host(ctx, fetch, slot, snapshot_slot, &env.options.limits)
                    .map_err(|e| env.error(ctx, e))?;
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
    /// `listObserved` (the input then carries no `observed`).
    pub fn dispatch_observed(
        &mut self,
        handler: &str,
        index: u32,
        input: &str,
        observer: Arc<dyn Observer>,
    ) -> Result<serde_json::Value, VmError> {
        *self.observer.lock() = Some(observer);
        let out = self.dispatch(handler, index, input);
        *self.observer.lock() = None;
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
        let stack = map_stack(&error.stack().unwrap_or_default(), self.options.position_mapper.as_ref());
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

fn install_host<'js>(
    ctx: &Ctx<'js>,
    fetch: HostFetch,
    observer: ObserverSlot,
    snapshots: SnapshotSlot,
    limits: &Limits,
) -> rquickjs::Result<()> {
    let host = Object::new(ctx.clone())?;
    // The SDK's apply()/patch() stop a runaway loop at the limit: `tooManyChildren` marks the
    // call failed (so catching the error changes nothing) and throws. The vm also counts the
    // output's children, in case the SDK's count was got around.
    host.set("maxChildren", limits.max_children as f64)?;
    let marker = Arc::clone(&snapshots);
    let limit = limits.max_children;
    let too_many = move |ctx: Ctx<'js>| -> rquickjs::Result<()> {
        // `try_lock`: a getter run by a copy in progress holds the store (never wait on it).
        if let Some(mut store) = marker.try_lock() {
            store.mark_too_many();
        }
        Err(Exception::throw_range(&ctx, &format!("more than {limit} children in one call")))
    };
    host.set("tooManyChildren", Function::new(ctx.clone(), too_many)?.with_name("tooManyChildren")?)?;
    let released = Arc::clone(&snapshots);
    let snap = move |ctx: Ctx<'js>, value: Value<'js>, namespace: Opt<Value<'js>>| {
        // A getter or toJSON that calls apply() while a copy is running finds the store taken.
        let Some(mut store) = snapshots.try_lock() else {
            return Err(Exception::throw_type(
                &ctx,
                "apply/patch cannot be called while an object is being copied",
            ));
        };
        let namespace = namespace.0.and_then(|n| n.as_string().and_then(|s| s.to_string().ok()));
        store.push(&ctx, &value, namespace)
    };
    host.set("snap", Function::new(ctx.clone(), snap)?.with_name("snap")?)?;
    let release = move |index: f64| {
        if let Some(mut store) = released.try_lock()
            && index >= 0.0
            && index.fract() == 0.0
        {
            // A whole, non-negative number: the index `snap` returned.
            store.release(index as usize);
        }
    };
    host.set("release", Function::new(ctx.clone(), release)?.with_name("release")?)?;
    let observed = move |ctx: Ctx<'_>,
                         op: Coerced<String>,
                         kind: Coerced<String>,
                         ns: Opt<Coerced<String>>,
                         name: Opt<Coerced<String>>| {
        observed(&ctx, &observer, &op.0, &kind.0, ns.0.map(|n| n.0), name.0.map(|n| n.0))
    };
    host.set("observed", Function::new(ctx.clone(), observed)?.with_name("observed")?)?;
    host.set("randomString", Function::new(ctx.clone(), random_string)?.with_name("randomString")?)?;
    host.set("log", Function::new(ctx.clone(), log)?.with_name("log")?)?;
    host.set("now", Function::new(ctx.clone(), now)?.with_name("now")?)?;
    let fetch =
        move |url: Coerced<String>, init: Opt<Coerced<String>>| fetch.call(&url.0, init.0.map(|i| i.0));
    host.set("fetch", Function::new(ctx.clone(), fetch)?.with_name("fetch")?)?;
    host.set("decodeBase64", Function::new(ctx.clone(), decode_base64)?.with_name("decodeBase64")?)?;
    crate::cron::install(ctx, &host)?;
    ctx.globals().set(HOST_GLOBAL, host)?;
    // A script must not replace the host functions (e.g. lift `maxChildren`).
    ctx.eval::<(), _>(format!(
        "Object.freeze(globalThis.{HOST_GLOBAL}); \
         Object.defineProperty(globalThis, \"{HOST_GLOBAL}\", {{ writable: false, configurable: false }});"
    ))
}

/// `__ct_host.observed(op, kind, namespace, name)`: `op` is `list` or `get` (see the
/// module docs); an empty namespace means none. A missing object is the JSON text `null`.
fn observed(
    ctx: &Ctx<'_>,
    slot: &ObserverSlot,
    op: &str,
    kind: &str,
    namespace: Option<String>,
    name: Option<String>,
) -> rquickjs::Result<Option<String>> {
    let Some(observer) = slot.lock().clone() else {
        return Ok(None);
    };
    match op {
        "list" => Ok(observer.list(kind)),
        "get" => {
            let namespace = namespace.filter(|n| !n.is_empty());
            Ok(observer
                .get(kind, namespace.as_deref(), name.as_deref().unwrap_or_default())
                .map(|found| found.unwrap_or_else(|| "null".to_owned())))
        }
        _ => Err(Exception::throw_type(ctx, &format!("observed: unknown operation {op:?}"))),
    }
}

/// `__ct_host.randomString(n)`: `n` characters of [a-zA-Z0-9] from the OS generator.
fn random_string(ctx: Ctx<'_>, n: f64) -> rquickjs::Result<String> {
    if !(n.is_finite() && n >= 0.0 && n.fract() == 0.0 && n <= MAX_RANDOM_STRING as f64) {
        return Err(Exception::throw_range(
            &ctx,
            &format!("randomString: length must be an integer from 0 to {MAX_RANDOM_STRING}"),
        ));
    }
    const ALPHABET: &[u8; 62] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    // `n` was checked to be a whole number in 0..=MAX_RANDOM_STRING.
    let len = n as usize;
    let mut out = String::with_capacity(len);
    let mut buf = [0u8; 256];
    while out.len() < len {
        SysRng.try_fill_bytes(&mut buf).map_err(|e| {
            Exception::throw_internal(&ctx, &format!("randomString: OS randomness failed: {e}"))
        })?;
        // 248 = 4 * 62: rejecting larger bytes keeps every character equally likely.
        for &b in buf.iter().filter(|&&b| b < 248) {
            if out.len() == len {
                break;
            }
            out.push(char::from(ALPHABET[usize::from(b % 62)]));
        }
    }
    Ok(out)
}

/// `__ct_host.log(level, message, fieldsJson)`: one `tracing` event, target `ctop::script`.
fn log<'js>(
    ctx: Ctx<'js>,
    level: Coerced<String>,
    message: Coerced<String>,
    fields: Opt<Value<'js>>,
) -> rquickjs::Result<()> {
    let message = clip(message.0);
    let fields = match fields.0 {
        None => String::new(),
        Some(v) if v.is_undefined() || v.is_null() => String::new(),
        Some(v) => match v.as_string() {
            Some(s) => s.to_string()?,
            None => describe(&ctx, &v),
        },
    };
    let fields = clip(fields);
    match level.0.as_str() {
        "debug" => tracing::debug!(target: "ctop::script", fields = %fields, "{message}"),
        "warn" => tracing::warn!(target: "ctop::script", fields = %fields, "{message}"),
        "error" => tracing::error!(target: "ctop::script", fields = %fields, "{message}"),
        _ => tracing::info!(target: "ctop::script", fields = %fields, "{message}"),
    }
    Ok(())
}

fn clip(mut text: String) -> String {
    if text.len() > MAX_LOG_TEXT {
        text.truncate(text.floor_char_boundary(MAX_LOG_TEXT));
        text.push('…');
    }
    text
}

/// `__ct_host.decodeBase64(text)`: standard base64 (as the API server encodes a Secret's
/// `data`) decoded to UTF-8 text; a `TypeError` if it is not base64 or not UTF-8.
fn decode_base64(ctx: Ctx<'_>, text: Coerced<String>) -> rquickjs::Result<String> {
    use base64::Engine as _;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text.0.as_bytes())
        .map_err(|e| Exception::throw_type(&ctx, &format!("not base64: {e}")))?;
    String::from_utf8(bytes).map_err(|_| {
        Exception::throw_type(
            &ctx,
            "the decoded bytes are not UTF-8 text; read the base64 `data` field instead",
        )
    })
}

/// `__ct_host.now()`: milliseconds since the Unix epoch.
fn now() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0.0, |d| d.as_millis() as f64)
}

/// `__ct_host.fetch(url, initJson)`: what the host function needs.
struct HostFetch {
    fetcher: Arc<Fetcher>,
    deadline: Arc<Deadline>,
}

impl HostFetch {
    /// Runs the request within what is left of the deadline and returns the reply JSON.
    fn call(&self, url: &str, init: Option<String>) -> String {
        let cap = self.deadline.remaining();
        let reply = if cap.is_some_and(|left| left.is_zero()) {
            "{\"error\":\"the script call's deadline has passed\"}".to_owned()
        } else {
            self.fetcher.fetch_json(url, init.as_deref().unwrap_or("{}"), cap)
        };
        // The interrupt handler could not run during the request: if the deadline passed,
        // mark it so the call fails with a timeout even if the script returns right away.
        self.deadline.expired();
        reply
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
pub(crate) mod tests {
    use super::*;
    use crate::bundle::Module;
    use serde_json::json;

    /// A tiny stand-in for the real sdk: registers controllers and dispatches to them.
    pub(crate) const SDK: &str = r#"
const specs = [];
globalThis.__ct_operator = { resources: [], controllers: [] };
export function operator(name, spec) {
  const index = specs.length;
  specs.push(spec);
  globalThis.__ct_operator.controllers.push({
    index, name, for: spec.for, every: spec.every ?? null,
    handlers: Object.keys(spec).filter((k) => typeof spec[k] === "function"),
  });
}
export const host = globalThis.__ct_host;
globalThis.__ct_dispatch = (handler, index, inputJson) => {
  const fn = specs[index]?.[handler];
  if (typeof fn !== "function") throw new TypeError(`no ${handler} on controller ${index}`);
  const out = fn(JSON.parse(inputJson));
  if (out instanceof Promise) return out.then((o) => JSON.stringify(o ?? null));
  return JSON.stringify(out ?? null);
};
"#;

    const UTIL: &str = "export function greet(n) {\n  if (n === \"bad\") {\n    throw new Error(\"bad name: \" + n);\n  }\n  return \"hello \" + n;\n}\n";

    fn bundle(entry_js: &str, extra: &[(&str, &str)]) -> Arc<Bundle> {
        let mut modules = std::collections::BTreeMap::new();
        let module = |js: &str| Module { js: js.to_owned(), source_map: None };
        modules.insert("operator.ct".to_owned(), module(entry_js));
        for (name, js) in extra {
            modules.insert((*name).to_owned(), module(js));
        }
        Arc::new(Bundle { entry: "operator.ct".to_owned(), modules })
    }

    /// An operator with one controller whose `reconcile` is `body` (with `input` in scope).
    pub(crate) fn reconciler(prelude: &str, body: &str) -> Arc<Bundle> {
        let entry = format!(
            "import {{ operator, host }} from \"ctop\";\nimport {{ greet }} from \"lib/util.ts\";\n{prelude}\n\
             operator(\"web\", {{ for: {{ apiVersion: \"v1\", kind: \"Web\" }}, reconcile(input) {{ {body} }} }});\n"
        );
        bundle(&entry, &[("lib/util.ts", UTIL)])
    }

    fn vm(prelude: &str, body: &str) -> Vm {
        Vm::new(reconciler(prelude, body), SDK, Limits::default()).unwrap()
    }

    pub(crate) fn short(timeout_ms: u64) -> Limits {
        Limits { timeout: Duration::from_millis(timeout_ms), ..Limits::default() }
    }

    fn input(name: &str) -> String {
        json!({ "object": { "metadata": { "name": name } } }).to_string()
    }

    #[test]
    fn registry_lists_what_the_top_level_registered() {
        let mut vm = vm("", "return null;");
        assert_eq!(
            vm.registry().unwrap(),
            json!({
                "resources": [],
                "controllers": [{
                    "index": 0, "name": "web", "for": { "apiVersion": "v1", "kind": "Web" },
                    "every": null, "handlers": ["reconcile"],
                }],
            })
        );
    }

    #[test]
    fn registry_missing_or_not_json_is_bad_output() {
        let b = bundle("import \"ctop\"; delete globalThis.__ct_operator;", &[]);
        let err = Vm::new(b, SDK, Limits::default()).unwrap().registry().unwrap_err();
        assert!(matches!(err, VmError::BadOutput(ref m) if m.contains("registered nothing")));
        let b = bundle("import \"ctop\"; globalThis.__ct_operator = () => 1;", &[]);
        let err = Vm::new(b, SDK, Limits::default()).unwrap().registry().unwrap_err();
        assert!(matches!(err, VmError::BadOutput(_)), "{err}");
    }

    #[test]
    fn dispatch_round_trips_json() {
        let mut vm = vm(
            "",
            "const o = input.object;
             return { applies: [{ kind: \"ConfigMap\", metadata: { name: o.metadata.name + \"-cm\" } }],
                      status: { greeting: greet(o.metadata.name), n: o.spec.n * 2 },
                      echo: o.spec };",
        );
        let spec = json!({ "n": 21, "text": "ünï ✓ \"quoted\"", "list": [1, null, true] });
        let inp = json!({ "object": { "metadata": { "name": "a" }, "spec": spec } });
        let out = vm.dispatch("reconcile", 0, &inp.to_string()).unwrap();
        assert_eq!(
            out,
            json!({
                "applies": [{ "kind": "ConfigMap", "metadata": { "name": "a-cm" } }],
                "status": { "greeting": "hello a", "n": 42 },
                "echo": spec,
            })
        );
        // Unknown handlers and indexes are the sdk's exceptions, not crashes.
        let err = vm.dispatch("finalize", 0, "{}").unwrap_err();
        assert!(matches!(err, VmError::Exception { ref name, .. } if name == "TypeError"));
        assert!(vm.dispatch("reconcile", 7, "{}").is_err());
        assert!(!vm.is_broken());
    }

    #[test]
    fn exception_has_message_file_and_line() {
        let mut vm = vm("", "return greet(input.object.metadata.name);");
        assert_eq!(vm.dispatch("reconcile", 0, &input("ok")).unwrap(), json!("hello ok"));
        let err = vm.dispatch("reconcile", 0, &input("bad")).unwrap_err();
        let VmError::Exception { ref name, ref message, ref stack, ref file, line, column, ref frame } = err
        else {
            panic!("expected an exception, got {err:?}");
        };
        assert_eq!(name, "Error");
        assert_eq!(message, "bad name: bad");
        assert_eq!(file.as_deref(), Some("lib/util.ts"));
        assert_eq!(line, Some(3));
        assert!(column.is_some_and(|c| c > 1), "{column:?}");
        assert!(stack.contains("at greet (lib/util.ts:3:"), "{stack}");
        assert!(stack.contains("(operator.ct:"), "{stack}");
        let frame = frame.as_ref().expect("a code frame").to_string();
        assert!(frame.starts_with(" --> lib/util.ts:3:") && frame.contains("3 | "), "{frame}");
        let text = err.to_string();
        assert!(text.starts_with("Error: bad name: bad (at lib/util.ts:3:"), "{text}");
    }

    #[test]
    fn position_mapper_rewrites_positions() {
        let mapper: PositionMapper = Arc::new(|file: &str, line: u32, column: u32| {
            (file == "lib/util.ts").then_some((line + 100, column + 1))
        });
        let js_column = match vm("", "return greet(\"bad\");").dispatch("reconcile", 0, "{}") {
            Err(VmError::Exception { column, .. }) => column.unwrap(),
            other => panic!("{other:?}"),
        };
        let options = VmOptions { position_mapper: Some(mapper), ..VmOptions::default() };
        let b = reconciler("", "return greet(\"bad\");");
        let mut vm = Vm::with_options(b, SDK, options).unwrap();
        match vm.dispatch("reconcile", 0, "{}").unwrap_err() {
            VmError::Exception { file, line, column, stack, .. } => {
                assert_eq!(file.as_deref(), Some("lib/util.ts"));
                assert_eq!((line, column), (Some(103), Some(js_column + 1)));
                assert!(stack.contains(&format!("at greet (lib/util.ts:103:{})", js_column + 1)));
                // Frames the mapper does not know keep their JavaScript positions.
                assert!(stack.contains("(operator.ct:"), "{stack}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn thrown_non_errors_are_described() {
        let mut vm = vm("", "throw { code: 7 };");
        match vm.dispatch("reconcile", 0, "{}").unwrap_err() {
            VmError::Exception { name, message, .. } => {
                assert_eq!((name.as_str(), message.as_str()), ("Error", "{\"code\":7}"));
            }
            other => panic!("{other:?}"),
        }
        let mut vm = self::vm("", "throw \"plain\";");
        let err = vm.dispatch("reconcile", 0, "{}").unwrap_err();
        assert_eq!(err.to_string(), "Error: plain");
    }

    #[test]
    fn load_failures_are_reported() {
        let bad_syntax = "export function greet(n) {\n  return n +;\n}\n";
        let b =
            bundle("import { greet } from \"lib/util.ts\"; import \"ctop\";", &[("lib/util.ts", bad_syntax)]);
        match Vm::new(b, SDK, Limits::default()).unwrap_err() {
            VmError::Exception { name, file, line, .. } => {
                assert_eq!(name, "SyntaxError");
                assert_eq!((file.as_deref(), line), (Some("lib/util.ts"), Some(2)));
            }
            other => panic!("{other:?}"),
        }
        let b = bundle("import \"ctop\"; import \"lib/missing.ts\";", &[]);
        let err = Vm::new(b, SDK, Limits::default()).unwrap_err();
        assert!(
            matches!(err, VmError::Exception { ref message, .. } if message.contains("lib/missing.ts")),
            "{err:?}"
        );
        let b = bundle("import \"ctop\";\nthrow new RangeError(\"top\");", &[]);
        let err = Vm::new(b, SDK, Limits::default()).unwrap_err();
        assert!(
            matches!(err, VmError::Exception { ref name, line: Some(2), .. } if name == "RangeError"),
            "{err:?}"
        );
        let b = bundle("export const x = 1;", &[]);
        let err = Vm::new(b, SDK, Limits::default()).unwrap_err();
        assert!(matches!(err, VmError::Load { ref message } if message.contains("\"ctop\"")));
        let mut b = (*bundle("import \"ctop\";", &[])).clone();
        b.entry = "nope.ct".to_owned();
        let err = Vm::new(Arc::new(b), SDK, Limits::default()).unwrap_err();
        assert!(matches!(err, VmError::Load { ref message } if message.contains("nope.ct")));
        let b = bundle("import \"ctop\"; await new Promise(() => {});", &[]);
        let err = Vm::new(b, SDK, Limits::default()).unwrap_err();
        assert!(matches!(err, VmError::NeverSettled { .. }), "{err:?}");
    }

    #[test]
    fn infinite_top_level_loop_times_out_at_load() {
        let b = bundle("import \"ctop\"; for (;;) {}", &[]);
        let started = Instant::now();
        let err = Vm::new(b, SDK, short(200)).unwrap_err();
        assert!(matches!(err, VmError::Timeout { after } if after == Duration::from_millis(200)));
        assert!(started.elapsed() < Duration::from_secs(3));
    }

    fn pool(prelude: &'static str, body: &'static str, limits: Limits) -> crate::pool::Pool {
        let b = reconciler(prelude, body);
        crate::pool::Pool::new(1, move || Vm::new(Arc::clone(&b), SDK, limits)).unwrap()
    }

    pub(crate) const COUNTER: &str = "let calls = 0;";
    pub(crate) const SPIN_OR_COUNT: &str =
        "if (input.spin) { try { while (true) {} } catch (e) { return \"caught\"; } }
        if (input.bomb) { let a = []; for (;;) a.push(new Array(1e6).fill(1)); }
        if (input.huge) return \"x\".repeat(10000000);
        return calls++;";

    #[test]
    fn timeout_stops_an_endless_handler_and_the_pool_serves_the_next_call() {
        let pool = pool(COUNTER, SPIN_OR_COUNT, short(300));
        let call = |inp: serde_json::Value| pool.with(|vm| vm.dispatch("reconcile", 0, &inp.to_string()));
        assert_eq!(call(json!({})).unwrap(), json!(0));
        assert_eq!(call(json!({})).unwrap(), json!(1));
        let started = Instant::now();
        let err = call(json!({ "spin": true })).unwrap_err();
        let took = started.elapsed();
        assert!(matches!(err, VmError::Timeout { .. }), "{err:?}");
        assert!(took >= Duration::from_millis(300) && took < Duration::from_secs(3), "{took:?}");
        assert!(err.to_string().contains("--reconcile-timeout"));
        // The broken Vm was replaced: module state starts over.
        assert_eq!(call(json!({})).unwrap(), json!(0));
    }

    #[test]
    fn allocation_bomb_is_out_of_memory_and_the_pool_recovers() {
        let limits = Limits { memory: 32 * MIB, ..Limits::default() };
        let pool = pool(COUNTER, SPIN_OR_COUNT, limits);
        let call = |inp: serde_json::Value| pool.with(|vm| vm.dispatch("reconcile", 0, &inp.to_string()));
        assert_eq!(call(json!({})).unwrap(), json!(0));
        let err = call(json!({ "bomb": true })).unwrap_err();
        assert!(matches!(err, VmError::OutOfMemory { limit } if limit == 32 * MIB), "{err:?}");
        assert!(err.to_string().contains("limit 32Mi") && err.to_string().contains("--script-memory"));
        assert_eq!(call(json!({})).unwrap(), json!(0));
        assert_eq!(call(json!({})).unwrap(), json!(1));
    }

    #[test]
    fn huge_output_is_rejected_before_copying() {
        let limits = Limits { max_output: 4 * MIB, ..Limits::default() };
        let mut vm = Vm::new(reconciler(COUNTER, SPIN_OR_COUNT), SDK, limits).unwrap();
        let err = vm.dispatch("reconcile", 0, "{\"huge\":true}").unwrap_err();
        assert!(
            matches!(err, VmError::OutputTooLarge { size: 10_000_002, limit } if limit == 4 * MIB),
            "{err:?}"
        );
        assert!(!vm.is_broken());
        assert_eq!(vm.dispatch("reconcile", 0, "{}").unwrap(), json!(0));
    }

    #[test]
    fn deep_recursion_is_a_stack_overflow_exception() {
        let mut vm = vm(
            "function down(n) { return down(n + 1) + 1; }",
            "if (input.deep) return down(0); return \"fine\";",
        );
        match vm.dispatch("reconcile", 0, "{\"deep\":true}").unwrap_err() {
            VmError::Exception { name, message, .. } => {
                assert_eq!(name, "RangeError");
                assert!(message.contains("call stack"), "{message}");
            }
            other => panic!("{other:?}"),
        }
        assert!(!vm.is_broken());
        assert_eq!(vm.dispatch("reconcile", 0, "{}").unwrap(), json!("fine"));
    }

    #[test]
    fn only_module_level_state_survives_between_calls() {
        let mut vm = vm(
            "let kept = 0;",
            "let local = 0; local++; kept++;
             const seen = input.object.seen ?? null; input.object.seen = \"mutated\";
             globalThis.onPurpose = (globalThis.onPurpose ?? 0) + 1;
             let stray = \"ok\"; try { leaked = 1; } catch (e) { stray = e.name; }
             return { local, kept, seen, onPurpose: globalThis.onPurpose, stray };",
        );
        let first = vm.dispatch("reconcile", 0, "{\"object\":{}}").unwrap();
        let second = vm.dispatch("reconcile", 0, "{\"object\":{}}").unwrap();
        let expect = |n: u32| json!({ "local": 1, "kept": n, "seen": null, "onPurpose": n, "stray": "ReferenceError" });
        assert_eq!(first, expect(1));
        assert_eq!(second, expect(2));
    }

    #[test]
    fn queued_promise_jobs_run_before_the_call_returns() {
        let mut vm = vm("let ticks = 0;", "Promise.resolve().then(() => { ticks++; }); return ticks;");
        assert_eq!(vm.dispatch("reconcile", 0, "{}").unwrap(), json!(0));
        assert_eq!(vm.dispatch("reconcile", 0, "{}").unwrap(), json!(1));
    }

    #[test]
    fn async_handlers_are_awaited() {
        let b = bundle(
            "import { operator } from \"ctop\";
             operator(\"a\", { async reconcile(input) { const v = await Promise.resolve(input.v); return { v: v + 1 }; },
                             async finalize() { await new Promise(() => {}); },
                             async validate() { await null; throw new Error(\"async boom\"); } });",
            &[],
        );
        let mut vm = Vm::new(b, SDK, Limits::default()).unwrap();
        assert_eq!(vm.dispatch("reconcile", 0, "{\"v\":1}").unwrap(), json!({ "v": 2 }));
        let err = vm.dispatch("finalize", 0, "{}").unwrap_err();
        assert!(matches!(err, VmError::NeverSettled { .. }), "{err:?}");
        let err = vm.dispatch("validate", 0, "{}").unwrap_err();
        assert!(matches!(err, VmError::Exception { ref message, .. } if message == "async boom"));
    }

    #[test]
    fn non_json_output_is_bad_output() {
        let b = bundle("import \"ctop\";", &[]);
        for (sdk, what) in [
            ("globalThis.__ct_dispatch = () => 42;", "int"),
            ("globalThis.__ct_dispatch = () => \"{nope\";", "valid JSON"),
        ] {
            let sdk = format!("globalThis.__ct_operator = {{}};\n{sdk}");
            let mut vm = Vm::new(Arc::clone(&b), &sdk, Limits::default()).unwrap();
            let err = vm.dispatch("reconcile", 0, "{}").unwrap_err();
            assert!(matches!(err, VmError::BadOutput(ref m) if m.contains(what)), "{err:?}");
        }
    }

    #[test]
    fn random_string_has_the_length_and_alphabet() {
        let mut vm = vm(
            "",
            "const r = {}; for (const n of input.lengths) r[n] = host.randomString(n);
             const errors = []; for (const n of input.bad) { try { host.randomString(n); } catch (e) { errors.push(e.name); } }
             return { r, errors };",
        );
        let inp = json!({ "lengths": [0, 1, 32, 1000], "bad": [-1, 1.5, 2e6, "x"] });
        let out = vm.dispatch("reconcile", 0, &inp.to_string()).unwrap();
        for n in [0usize, 1, 32, 1000] {
            let s = out["r"][n.to_string()].as_str().unwrap();
            assert_eq!(s.len(), n);
            assert!(s.bytes().all(|b| b.is_ascii_alphanumeric()), "{s}");
        }
        assert_eq!(out["errors"], json!(["RangeError", "RangeError", "RangeError", "TypeError"]));
        let again = vm.dispatch("reconcile", 0, &inp.to_string()).unwrap();
        assert_ne!(out["r"]["32"], again["r"]["32"]);
        // All 62 characters show up in a long sample, and nothing else.
        let long = random_sample(&mut vm);
        let distinct: std::collections::BTreeSet<char> = long.chars().collect();
        assert_eq!(distinct.len(), 62);
    }

    fn random_sample(vm: &mut Vm) -> String {
        let inp = json!({ "lengths": [100000], "bad": [] });
        let out = vm.dispatch("reconcile", 0, &inp.to_string()).unwrap();
        out["r"]["100000"].as_str().unwrap().to_owned()
    }

    #[test]
    fn now_and_fetch() {
        let mut vm = vm(
            "",
            "const reply = JSON.parse(host.fetch(\"ftp://x/y\", \"{}\"));
             return { now: host.now(), err: reply.error };",
        );
        let out = vm.dispatch("reconcile", 0, "{}").unwrap();
        assert!(out["err"].as_str().unwrap().contains("only http and https"), "{out}");
        let rust_now = now();
        let js_now = out["now"].as_f64().unwrap();
        assert!((rust_now - js_now).abs() < 5_000.0, "{rust_now} vs {js_now}");
    }

    const FETCH: &str =
        "const init = { method: input.method, headers: { \"x-a\": \"1\" }, body: input.body };
        const reply = JSON.parse(host.fetch(input.url, JSON.stringify(init)));
        return reply;";

    /// A `Vm` whose fetch may reach the test servers on loopback.
    fn loopback_vm(body: &str, limits: Limits) -> Vm {
        let rules = vec!["http://127.0.0.1:*".parse().unwrap()];
        let egress = Arc::new(parking_lot::RwLock::new(EgressPolicy { rules, own_ports: vec![] }));
        Vm::with_options(reconciler("", body), SDK, VmOptions { limits, egress, position_mapper: None })
            .unwrap()
    }

    #[test]
    fn fetch_from_a_script() {
        use crate::fetch::tests::{response, serve};
        let (base, seen) = serve(2, |req, _| {
            let body = format!("pong {}", String::from_utf8_lossy(&req.body));
            let status = if req.request_line().contains("/gone") { "404 Not Found" } else { "200 OK" };
            response(status, &[("x-b", "2")], &body)
        });
        let mut vm = loopback_vm(FETCH, Limits::default());
        let inp = json!({ "url": format!("{base}/hook"), "method": "POST", "body": "ping" });
        let out = vm.dispatch("reconcile", 0, &inp.to_string()).unwrap();
        assert_eq!(out["status"], json!(200));
        assert_eq!(out["statusText"], json!("OK"));
        assert_eq!(out["body"], json!("pong ping"));
        assert_eq!(out["headers"]["x-b"], json!("2"));
        let req = seen.recv().unwrap();
        assert_eq!(req.request_line(), "POST /hook HTTP/1.1");
        assert_eq!(req.header("x-a"), Some("1"));
        let inp = json!({ "url": format!("{base}/gone"), "method": "GET" });
        let out = vm.dispatch("reconcile", 0, &inp.to_string()).unwrap();
        assert_eq!((&out["status"], &out["body"]), (&json!(404), &json!("pong ")));
        assert!(!vm.is_broken());
    }

    #[test]
    fn fetch_stops_at_the_call_deadline() {
        let (base, _hold) = crate::fetch::tests::silent();
        let mut vm = loopback_vm(FETCH, short(400));
        let started = Instant::now();
        let err = vm.dispatch("reconcile", 0, &json!({ "url": base }).to_string()).unwrap_err();
        let took = started.elapsed();
        assert!(matches!(err, VmError::Timeout { .. }), "{err:?}");
        assert!(took >= Duration::from_millis(400) && took < Duration::from_secs(3), "{took:?}");
        assert!(vm.is_broken());
    }

    /// (level, target, message, fields) of one event.
    type Event = (tracing::Level, String, String, String);

    /// Records events.
    #[derive(Default, Clone)]
    struct Capture(Arc<Mutex<Vec<Event>>>);

    #[derive(Default)]
    struct Fields {
        message: String,
        fields: String,
    }

    impl tracing::field::Visit for Fields {
        fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn fmt::Debug) {
            match field.name() {
                "message" => self.message = format!("{value:?}"),
                "fields" => self.fields = format!("{value:?}"),
                _ => {}
            }
        }
    }

    impl tracing::Subscriber for Capture {
        fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
            true
        }
        fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
            tracing::span::Id::from_u64(1)
        }
        fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
        fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
        fn event(&self, event: &tracing::Event<'_>) {
            let mut fields = Fields::default();
            event.record(&mut fields);
            let meta = event.metadata();
            self.0.lock().push((*meta.level(), meta.target().to_owned(), fields.message, fields.fields));
        }
        fn enter(&self, _: &tracing::span::Id) {}
        fn exit(&self, _: &tracing::span::Id) {}
    }

    #[test]
    fn log_becomes_tracing_events() {
        let mut vm = vm(
            "",
            "host.log(\"debug\", \"d\", JSON.stringify({ a: 1 }));
             host.log(\"info\", \"i\");
             host.log(\"warn\", \"w\", null);
             host.log(\"error\", \"e\", \"{}\");
             host.log(\"loud\", \"x\".repeat(70000));
             return null;",
        );
        let capture = Capture::default();
        tracing::subscriber::with_default(capture.clone(), || {
            vm.dispatch("reconcile", 0, "{}").unwrap();
        });
        let events = capture.0.lock();
        let short: Vec<_> =
            events.iter().take(4).map(|(l, t, m, f)| (*l, t.as_str(), m.as_str(), f.as_str())).collect();
        use tracing::Level;
        assert_eq!(
            short,
            [
                (Level::DEBUG, "ctop::script", "d", "{\"a\":1}"),
                (Level::INFO, "ctop::script", "i", ""),
                (Level::WARN, "ctop::script", "w", ""),
                (Level::ERROR, "ctop::script", "e", "{}"),
            ]
        );
        let (level, _, message, _) = &events[4];
        assert_eq!(*level, Level::INFO);
        assert!(message.len() < 70000 && message.ends_with('…'));
    }

    #[test]
    fn vm_and_pool_can_cross_threads() {
        fn send<T: Send>() {}
        fn sync<T: Send + Sync>() {}
        send::<Vm>();
        sync::<crate::pool::Pool>();
    }

    #[test]
    fn stack_frames_parse() {
        assert_eq!(
            parse_frame("    at greet (lib/util.ts:3:11)"),
            Some(Frame { function: Some("greet"), file: "lib/util.ts", line: 3, column: 11 })
        );
        assert_eq!(
            parse_frame("    at operator.ct:2:7"),
            Some(Frame { function: None, file: "operator.ct", line: 2, column: 7 })
        );
        assert_eq!(parse_frame("    at JSON.parse (native)"), None);
        assert_eq!(parse_frame("    at <anonymous> (missing)"), None);
        assert_eq!(parse_frame("garbage"), None);
        let b = bundle("", &[]);
        let stack = "    at f (ctop:1:2)\n    at g (operator.ct:5:6)\n";
        assert_eq!(pick_frame(stack, &b).map(|f| f.line), Some(5));
        assert_eq!(pick_frame("    at f (ctop:1:2)\n", &b).map(|f| f.file), Some("ctop"));
        let mapper: PositionMapper = Arc::new(|_: &str, l: u32, c: u32| Some((l * 10, c * 10)));
        assert_eq!(
            map_stack("    at f (ctop:1:2)\n    at x (native)\n", Some(&mapper)),
            "    at f (ctop:10:20)\n    at x (native)\n"
        );
    }
}

//! What a call does that its inputs do not determine: reported to the call's [`Observer`]
//! through [`Observer::nondeterministic`] (the controller does not skip the next reconcile of
//! an object whose last one did; see `RUNTIME.md`, "Nondeterministic calls"), and each value
//! taken from its [`Observer::supply`], which computes it live (reads the clock, draws
//! randomness, sends the request) unless it replays a recording.
//!
//! Start with [`Nondet`], the kinds and the names the observer gets, and [`CallObserver`],
//! the slot [`super::Vm::dispatch_observed`] fills for one call: [`report`] tells the observer
//! about a kind at most once per call, [`supply_number`] and [`supply_text`] ask it for each
//! value (a `TypeError` in the script when a replay gives a text for a number or the other
//! way round: a divergence shows, it never falls back to the live value); without an
//! observer (loading, [`super::Vm::dispatch`]) nobody is told and every value is live. The
//! host functions `now`, `randomString` and `fetch` do this from Rust (`host.rs`);
//! [`hook_builtins`] hooks the JavaScript built-ins that read the clock or randomness once
//! per context, before the bundle runs.
//!
//! # How the built-ins are hooked
//! Each hooked function is replaced by a `Proxy` of the original whose `apply` (and, for
//! `Date`, `construct`) trap is a Rust function that reports and then takes the value from
//! [`Observer::supply`], live by calling the original it gets as the trap's target:
//! `Math.random()`, `Date.now()` and `performance.now()` return the supplied number; `Date()`
//! returns the original `Date.prototype.toString` of a date at the supplied time, and `new
//! Date()` without arguments constructs the original with it (`new Date(x)` reads no clock
//! and is passed on unchanged). A proxy forwards everything else to its target, so `name`,
//! `length`, `prototype`, static methods such as `Date.UTC`, `instanceof Date`, subclassing
//! and `Function.prototype.toString` (`[native code]`) behave as before; the properties keep
//! their attributes (a script may still assign `Math.random`, as in any engine). The originals
//! are reachable from nowhere but the proxies' targets and the `Date` proxy's handler
//! (`Date.prototype.constructor` is the proxy too), so a script cannot call one without
//! reporting: what it assigns instead is its own code, which reaches the clock or randomness
//! only through the hooks. The traps hold no JavaScript value (QuickJS's cycle collector
//! cannot see into a Rust closure), only the slot: the originals `Date()` needs besides its
//! target (`Date.now`, `Date.prototype.toString`, which a script may replace) are properties
//! of the handler, which a trap gets as its `this`.
//!
//! QuickJS (quickjs-ng, as `Context::full` sets it up) reads the clock in `Date.now()`,
//! `Date()` and `new Date()` without arguments, `performance.now()` and
//! `performance.timeOrigin` (the time the context was created), and draws randomness only in
//! `Math.random()`. There is no `crypto`; the per-context hash seed only orders hash buckets,
//! which no script sees (Maps and Sets iterate in insertion order).

use std::sync::Arc;

use ctop_core::{Answer, Source};
use rquickjs::function::{Args, This};
use rquickjs::object::{Accessor, Property};
use rquickjs::proxy::ProxyHandler;
use rquickjs::{Array, Constructor, Ctx, Exception, Function, Object, Proxy, Value};

use super::{Observer, ObserverSlot};

/// One kind of nondeterministic call; [`Nondet::what`] is the name the observer gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Nondet {
    /// `__ct_host.now()` (the SDK's `now()`, and `cron(...).next()` without a time).
    Now,
    /// `__ct_host.randomString(n)`.
    RandomString,
    /// `__ct_host.fetch(url, init)`, reported before the request, also when it fails.
    Fetch,
    /// `Math.random()`.
    MathRandom,
    /// `Date.now()`, `new Date()` without arguments, `Date(...)` called as a function.
    Date,
    /// `performance.now()`.
    PerformanceNow,
    /// `performance.timeOrigin`.
    PerformanceTimeOrigin,
}

impl Nondet {
    /// The name given to [`Observer::nondeterministic`].
    pub(super) fn what(self) -> &'static str {
        match self {
            Nondet::Now => "now()",
            Nondet::RandomString => "randomString()",
            Nondet::Fetch => "fetch()",
            Nondet::MathRandom => "Math.random()",
            Nondet::Date => "Date",
            Nondet::PerformanceNow => "performance.now()",
            Nondet::PerformanceTimeOrigin => "performance.timeOrigin",
        }
    }

    fn bit(self) -> u8 {
        1 << self as u8
    }
}

/// The [`Observer`] of the call in progress and the kinds it was told about.
#[derive(Default)]
pub(super) struct CallObserver {
    observer: Option<Arc<dyn Observer>>,
    /// One [`Nondet::bit`] per kind reported during this call.
    reported: u8,
}

impl CallObserver {
    /// Starts a call served by `observer` (`None`: a call without one).
    pub(super) fn start(&mut self, observer: Option<Arc<dyn Observer>>) {
        self.observer = observer;
        self.reported = 0;
    }

    /// The observer of the call in progress.
    pub(super) fn observer(&self) -> Option<&Arc<dyn Observer>> {
        self.observer.as_ref()
    }
}

/// Tells the call's observer about `kind` unless it was told already in this call. The
/// observer runs outside the lock.
pub(super) fn report(slot: &ObserverSlot, kind: Nondet) {
    let observer = {
        let mut call = slot.lock();
        if call.reported & kind.bit() != 0 {
            return;
        }
        call.reported |= kind.bit();
        call.observer.clone()
    };
    if let Some(observer) = observer {
        observer.nondeterministic(kind.what());
    }
}

/// Asks the call's observer for the value of `source` ([`Observer::supply`]) and expects a
/// number: `live` computes it as the runtime would. A text (a replay that diverged) is a
/// `TypeError` thrown into the script, naming `kind`. See [`supply`].
pub(super) fn supply_number<'js>(
    ctx: &Ctx<'js>,
    slot: &ObserverSlot,
    kind: Nondet,
    source: Source<'_>,
    mut live: impl FnMut() -> rquickjs::Result<f64>,
) -> rquickjs::Result<f64> {
    match supply(slot, source, Answer::Number(f64::NAN), || live().map(Answer::Number))? {
        Answer::Number(n) => Ok(n),
        Answer::Text(_) => Err(diverged(ctx, "a text", kind)),
    }
}

/// [`supply_number`] for a source whose value is a text (`randomString`, `fetch`).
pub(super) fn supply_text<'js>(
    ctx: &Ctx<'js>,
    slot: &ObserverSlot,
    kind: Nondet,
    source: Source<'_>,
    mut live: impl FnMut() -> rquickjs::Result<String>,
) -> rquickjs::Result<String> {
    match supply(slot, source, Answer::Text(String::new()), || live().map(Answer::Text))? {
        Answer::Text(text) => Ok(text),
        Answer::Number(_) => Err(diverged(ctx, "a number", kind)),
    }
}

/// The value of `source`: the call's observer's [`Observer::supply`] with `live`, or `live`
/// itself for a call without an observer (loading, [`super::Vm::dispatch`]). Neither runs
/// under the slot's lock (`live` may call into JavaScript, the observer may block).
///
/// `live` fails when what it calls throws (a native function at the stack limit, the OS
/// generator failing): the observer then gets `placeholder` in its place, `live` is not run
/// again, and the error (the exception pending in the context) is the result, so the
/// script sees the same exception as without an observer.
fn supply(
    slot: &ObserverSlot,
    source: Source<'_>,
    placeholder: Answer,
    mut live: impl FnMut() -> rquickjs::Result<Answer>,
) -> rquickjs::Result<Answer> {
    let observer = slot.lock().observer.clone();
    let Some(observer) = observer else {
        return live();
    };
    let mut failed = None;
    let answer = observer.supply(source, &mut || {
        if failed.is_some() {
            return placeholder.clone();
        }
        live().unwrap_or_else(|e| {
            failed = Some(e);
            placeholder.clone()
        })
    });
    match failed {
        Some(e) => Err(e),
        None => Ok(answer),
    }
}

/// The `TypeError` for an observer that supplied `got` ("a text") where `kind` gives the
/// other variant: a replay that diverged shows, it never falls back to the live value.
fn diverged(ctx: &Ctx<'_>, got: &str, kind: Nondet) -> rquickjs::Error {
    Exception::throw_type(ctx, &format!("replay supplied {got} for {}", kind.what()))
}

/// Where the `Date` proxy's handler keeps the original `Date.now` (the clock its traps read
/// live) and `Date.prototype.toString` (what `Date()` returns): properties of the handler,
/// which no script can reach and QuickJS's collector sees.
const ORIGINAL_NOW: &str = "originalNow";
/// See [`ORIGINAL_NOW`].
const ORIGINAL_TO_STRING: &str = "originalToString";

/// Hooks `Math.random`, `Date` and `performance` (see the module docs). Runs once per
/// context, before any script code.
pub(super) fn hook_builtins<'js>(ctx: &Ctx<'js>, slot: &ObserverSlot) -> rquickjs::Result<()> {
    let globals = ctx.globals();

    let math: Object<'js> = globals.get("Math")?;
    let random: Function<'js> = math.get("random")?;
    math.prop("random", numeric(ctx, random, slot, Nondet::MathRandom, Source::MathRandom)?)?;

    // `Date.now` is a property of the original constructor, which the proxy forwards to.
    let date: Function<'js> = globals.get("Date")?;
    let date_now: Function<'js> = date.get("now")?;
    date.prop("now", numeric(ctx, date_now.clone(), slot, Nondet::Date, Source::Date)?)?;
    let prototype: Object<'js> = date.get("prototype")?;
    let to_string: Function<'js> = prototype.get("toString")?;
    let date = date_proxy(ctx, date, date_now, to_string, slot)?;
    prototype.prop("constructor", date.clone())?;
    globals.prop("Date", date)?;

    // `performance.now` and `performance.timeOrigin` are read-only and cannot be redefined,
    // so `performance` becomes a new object of the same shape.
    let performance: Object<'js> = globals.get("performance")?;
    let perf_now: Function<'js> = performance.get("now")?;
    let time_origin: f64 = performance.get("timeOrigin")?;
    let hooked = Object::new(ctx.clone())?;
    hooked.prop(
        "now",
        Property::from(numeric(ctx, perf_now, slot, Nondet::PerformanceNow, Source::PerformanceNow)?)
            .enumerable(),
    )?;
    let origin_slot = Arc::clone(slot);
    let origin = move |ctx: Ctx<'js>| {
        report(&origin_slot, Nondet::PerformanceTimeOrigin);
        let source = Source::PerformanceTimeOrigin;
        supply_number(&ctx, &origin_slot, Nondet::PerformanceTimeOrigin, source, || Ok(time_origin))
    };
    hooked.prop("timeOrigin", Accessor::from(origin).enumerable())?;
    globals.prop("performance", hooked)
}

/// A proxy of `target`, a function returning a number (`Math.random`, `Date.now`,
/// `performance.now`): a call reports `kind` and returns the number supplied as `source`,
/// live by calling `target` with the call's `this` and arguments.
fn numeric<'js>(
    ctx: &Ctx<'js>,
    target: Function<'js>,
    slot: &ObserverSlot,
    kind: Nondet,
    source: Source<'static>,
) -> rquickjs::Result<Proxy<'js>> {
    let handler = Object::new(ctx.clone())?;
    let call_slot = Arc::clone(slot);
    let apply = move |ctx: Ctx<'js>, target: Function<'js>, this: Value<'js>, args: Array<'js>| {
        report(&call_slot, kind);
        supply_number(&ctx, &call_slot, kind, source, || {
            let mut call = arguments(&ctx, &args)?;
            call.this(this.clone())?;
            call.apply::<f64>(&target)
        })
    };
    handler.set("apply", Function::new(ctx.clone(), apply)?)?;
    Proxy::new(ctx.clone(), target, ProxyHandler::from_object(handler)?)
}

/// The proxy of the `Date` constructor. `Date(...)` called as a function reports and
/// returns `new Date(ms).toString()` (with the original `toString`), `ms` supplied as
/// [`Source::Date`]; `new Date()` without arguments reports and constructs the original
/// with the supplied `ms` (for `new.target`, so a subclass keeps its prototype); `new
/// Date(x)` does not read the clock, and is passed on as it is. `now` and `to_string` (the
/// originals) go on the handler, which the traps get as their `this`.
fn date_proxy<'js>(
    ctx: &Ctx<'js>,
    target: Function<'js>,
    now: Function<'js>,
    to_string: Function<'js>,
    slot: &ObserverSlot,
) -> rquickjs::Result<Proxy<'js>> {
    let handler = Object::new(ctx.clone())?;
    handler.set(ORIGINAL_NOW, now)?;
    handler.set(ORIGINAL_TO_STRING, to_string)?;
    let call_slot = Arc::clone(slot);
    let apply = move |ctx: Ctx<'js>,
                      This(handler): This<Object<'js>>,
                      target: Constructor<'js>,
                      _this: Value<'js>,
                      _args: Array<'js>| {
        report(&call_slot, Nondet::Date);
        let ms = date_ms(&ctx, &call_slot, &handler)?;
        let date: Value<'js> = target.construct((ms,))?;
        let to_string: Function<'js> = handler.get(ORIGINAL_TO_STRING)?;
        to_string.call::<_, Value<'js>>((This(date),))
    };
    handler.set("apply", Function::new(ctx.clone(), apply)?)?;
    let new_slot = Arc::clone(slot);
    let construct = move |ctx: Ctx<'js>,
                          This(handler): This<Object<'js>>,
                          target: Constructor<'js>,
                          args: Array<'js>,
                          new_target: Value<'js>| {
        let mut call = if args.is_empty() {
            report(&new_slot, Nondet::Date);
            let ms = date_ms(&ctx, &new_slot, &handler)?;
            let mut call = Args::new(ctx.clone(), 1);
            call.push_arg(ms)?;
            call
        } else {
            arguments(&ctx, &args)?
        };
        // `this` of a construct call is `new.target`: a subclass keeps its prototype.
        call.this(new_target)?;
        call.construct::<Value<'js>>(&target)
    };
    handler.set("construct", Function::new(ctx.clone(), construct)?)?;
    Proxy::new(ctx.clone(), target, ProxyHandler::from_object(handler)?)
}

/// The time `Date()` or `new Date()` reads: supplied as [`Source::Date`], live from the
/// original `Date.now` kept on `handler`.
fn date_ms<'js>(ctx: &Ctx<'js>, slot: &ObserverSlot, handler: &Object<'js>) -> rquickjs::Result<f64> {
    supply_number(ctx, slot, Nondet::Date, Source::Date, || {
        let now: Function<'js> = handler.get(ORIGINAL_NOW)?;
        now.call::<_, f64>(())
    })
}

/// The trap's argument list as call arguments.
fn arguments<'js>(ctx: &Ctx<'js>, args: &Array<'js>) -> rquickjs::Result<Args<'js>> {
    let mut call = Args::new(ctx.clone(), args.len());
    for value in args.iter::<Value<'js>>() {
        call.push_arg(value?)?;
    }
    Ok(call)
}

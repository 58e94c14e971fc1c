//! What a call does that its inputs do not determine, reported to the call's [`Observer`]
//! through [`Observer::nondeterministic`] (the controller does not skip the next reconcile of
//! an object whose last one did; see `RUNTIME.md`, "Nondeterministic calls").
//!
//! Start with [`Nondet`], the kinds and the names the observer gets, and [`CallObserver`],
//! the slot [`super::Vm::dispatch_observed`] fills for one call: [`report`] tells the observer
//! about a kind at most once per call, and does nothing for a call without one (loading,
//! [`super::Vm::dispatch`]). The host functions `now`, `randomString` and
//! `fetch` report from Rust (`host.rs`); [`hook_builtins`] hooks the JavaScript built-ins that
//! read the clock or randomness once per context, before the bundle runs.
//!
//! # How the built-ins are hooked
//! Each hooked function is replaced by a `Proxy` of the original whose `apply` (and, for
//! `Date`, `construct`) trap is a Rust function that reports and then calls the original it
//! gets as the trap's target. A proxy forwards everything else to its target, so `name`,
//! `length`, `prototype`, static methods such as `Date.UTC`, `instanceof Date`, subclassing
//! and `Function.prototype.toString` (`[native code]`) behave as before; the properties keep
//! their attributes (a script may still assign `Math.random`, as in any engine). The originals
//! are reachable from nowhere but the proxies' targets (`Date.prototype.constructor` is the
//! proxy too), so a script cannot call one without reporting: what it assigns instead is its
//! own code, which reaches the clock or randomness only through the hooks. The traps hold no
//! JavaScript value (QuickJS's cycle collector cannot see into a Rust closure), only the slot.
//!
//! QuickJS (quickjs-ng, as `Context::full` sets it up) reads the clock in `Date.now()`,
//! `Date()` and `new Date()` without arguments, `performance.now()` and
//! `performance.timeOrigin` (the time the context was created), and draws randomness only in
//! `Math.random()`. There is no `crypto`; the per-context hash seed only orders hash buckets,
//! which no script sees (Maps and Sets iterate in insertion order).

use std::sync::Arc;

use rquickjs::function::Args;
use rquickjs::object::{Accessor, Property};
use rquickjs::proxy::ProxyHandler;
use rquickjs::{Array, Constructor, Ctx, Function, Object, Proxy, Value};

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

/// Hooks `Math.random`, `Date` and `performance` (see the module docs). Runs once per
/// context, before any script code.
pub(super) fn hook_builtins<'js>(ctx: &Ctx<'js>, slot: &ObserverSlot) -> rquickjs::Result<()> {
    let globals = ctx.globals();

    let math: Object<'js> = globals.get("Math")?;
    let random: Function<'js> = math.get("random")?;
    math.prop("random", reporting(ctx, random, slot, Nondet::MathRandom, false)?)?;

    // `Date.now` is a property of the original constructor, which the proxy forwards to.
    let date: Function<'js> = globals.get("Date")?;
    let date_now: Function<'js> = date.get("now")?;
    date.prop("now", reporting(ctx, date_now, slot, Nondet::Date, false)?)?;
    let prototype: Object<'js> = date.get("prototype")?;
    let date = reporting(ctx, date, slot, Nondet::Date, true)?;
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
        Property::from(reporting(ctx, perf_now, slot, Nondet::PerformanceNow, false)?).enumerable(),
    )?;
    let origin_slot = Arc::clone(slot);
    let origin = move || {
        report(&origin_slot, Nondet::PerformanceTimeOrigin);
        time_origin
    };
    hooked.prop("timeOrigin", Accessor::from(origin).enumerable())?;
    globals.prop("performance", hooked)
}

/// A proxy of `target` that reports `kind` when called; `date` adds a `construct` trap that
/// reports only when there are no arguments (`new Date(x)` does not read the clock).
fn reporting<'js>(
    ctx: &Ctx<'js>,
    target: Function<'js>,
    slot: &ObserverSlot,
    kind: Nondet,
    date: bool,
) -> rquickjs::Result<Proxy<'js>> {
    let handler = Object::new(ctx.clone())?;
    let call_slot = Arc::clone(slot);
    let apply = move |ctx: Ctx<'js>, target: Function<'js>, this: Value<'js>, args: Array<'js>| {
        report(&call_slot, kind);
        let mut call = arguments(&ctx, &args)?;
        call.this(this)?;
        call.apply::<Value<'js>>(&target)
    };
    handler.set("apply", Function::new(ctx.clone(), apply)?)?;
    if date {
        let new_slot = Arc::clone(slot);
        let construct =
            move |ctx: Ctx<'js>, target: Constructor<'js>, args: Array<'js>, new_target: Value<'js>| {
                if args.is_empty() {
                    report(&new_slot, kind);
                }
                // `this` of a construct call is `new.target`: a subclass keeps its prototype.
                let mut call = arguments(&ctx, &args)?;
                call.this(new_target)?;
                call.construct::<Value<'js>>(&target)
            };
        handler.set("construct", Function::new(ctx.clone(), construct)?)?;
    }
    Proxy::new(ctx.clone(), target, ProxyHandler::from_object(handler)?)
}

/// The trap's argument list as call arguments.
fn arguments<'js>(ctx: &Ctx<'js>, args: &Array<'js>) -> rquickjs::Result<Args<'js>> {
    let mut call = Args::new(ctx.clone(), args.len());
    for value in args.iter::<Value<'js>>() {
        call.push_arg(value?)?;
    }
    Ok(call)
}

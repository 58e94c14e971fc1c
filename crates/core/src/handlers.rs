//! The boundary between the controller and whatever computes outcomes: [`Handlers`].
//!
//! The controller (`ctop-controller`) calls a [`Handlers`] for each reconcile, finalize,
//! `onStart` and mapper call, handing it the object as JSON text and an [`Observer`] over its
//! caches; the handlers answer with the typed outcomes of [`crate::outcome`]. The script
//! runtime implements it for a script; a Rust reconciler can implement it too. Neither side
//! sees the other's internals.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use crate::{FinalizeOutcome, MapOutcome, OperatorSpec, ReconcileOutcome, StartOutcome};

/// The caches a handler call reads (`getObserved` / `listObserved`), served on demand
/// instead of serialized into every call's input: a controller's caches can hold thousands
/// of objects, a handler usually reads a few.
pub trait Observer: Send + Sync {
    /// The objects of kind `kind` (`apiVersion/kind`) this call may see, as a JSON array;
    /// `None` when the kind is not observed.
    fn list(&self, kind: &str) -> Option<String>;
    /// The object of kind `kind` named `name` (in `namespace` when namespaced) as JSON:
    /// `Some(None)` when the kind is observed but the object is not there, `None` when
    /// the kind is not observed.
    fn get(&self, kind: &str, namespace: Option<&str>, name: &str) -> Option<Option<String>>;
    /// The call did something its inputs do not determine: read the clock (`now()`,
    /// `Date`), drew randomness (`randomString`, `Math.random`) or called `fetch`; `what`
    /// names it. The controller never skips the next reconcile of an object whose last
    /// reconcile did (see `ctop-controller`'s fingerprints). Called at most once per kind
    /// of call is enough; the default ignores it.
    fn nondeterministic(&self, what: &'static str) {
        let _ = what;
    }
    /// The value a nondeterministic source gives this call. `live` computes it as the
    /// runtime would (reads the clock, draws randomness, sends the request); the default
    /// returns that. A recorder notes what `live` gave, a replayer returns what was noted
    /// instead of calling it. Called once per use of the source, after
    /// [`Observer::nondeterministic`]; a wrapping observer must forward it.
    fn supply(&self, source: Source<'_>, live: &mut dyn FnMut() -> Answer) -> Answer {
        let _ = source;
        live()
    }
    /// Which script runtime serves the call, before it starts: `serial` names the runtime
    /// in this process (a replaced runtime gets a new one) and `call` counts the calls it
    /// served before this one. What a script keeps at module level lives in its runtime, so a
    /// recorder notes it and a replay runs each runtime's calls on a runtime of their own, in
    /// order. The default ignores it; a wrapping observer must forward it.
    ///
    /// It also starts each *attempt*: a call that ran first on the async worker and overran
    /// its short budget there is stopped and runs again from the start on another runtime
    /// (see [`Observer::answers_from_memory`]). An observer that keeps what a call read or
    /// drew forgets, here, what came before: only the last attempt is the call.
    fn runtime(&self, serial: u64, call: u64) {
        let _ = (serial, call);
    }
    /// Whether every read this observer serves ([`Observer::list`], [`Observer::get`]) and
    /// every value it supplies answers from memory, never waiting on I/O or on a lock held
    /// across I/O. Then ctop may run the call first on the async worker that awaits it, under
    /// a budget of a few milliseconds, instead of handing it to a blocking thread (which costs
    /// two thread switches per call); a call that overruns starts over on a blocking thread
    /// ([`Observer::runtime`] is called again). The default is `false`; a wrapping observer
    /// forwards what it wraps.
    fn answers_from_memory(&self) -> bool {
        false
    }
    /// How the call ran, once it ended: on the async worker, on a blocking thread, or on a
    /// blocking thread after its attempt on the worker overran the budget (see
    /// [`Observer::answers_from_memory`]). The controller counts it in
    /// `ctop_script_calls_total`. The default ignores it; a wrapping observer forwards it.
    fn ran(&self, path: CallPath) {
        let _ = path;
    }
}

/// Where a script call ran (see [`Observer::ran`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CallPath {
    /// On the async worker that awaited it, within the inline budget.
    Inline,
    /// Handed to a blocking thread (the observer may wait on I/O, the script may fetch, no
    /// runtime was idle, or inline attempts are paused after an overrun).
    Blocking,
    /// Started on the async worker, overran the inline budget, and ran again from the start
    /// on a blocking thread.
    Restarted,
}

impl CallPath {
    /// The value of the `path` label: `inline`, `blocking` or `restarted`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Inline => "inline",
            Self::Blocking => "blocking",
            Self::Restarted => "restarted",
        }
    }
}

/// A nondeterministic source a call draws a value from (see [`Observer::supply`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source<'a> {
    /// `now()` (the SDK's clock, and `cron(...).next()` without a time): milliseconds
    /// since the epoch, a [`Answer::Number`].
    Now,
    /// `randomString(len)`: a [`Answer::Text`] of `len` characters.
    RandomString {
        /// The length asked for.
        len: usize,
    },
    /// `fetch(url, init)`: the reply as the JSON text the SDK reads, a [`Answer::Text`].
    Fetch {
        /// The URL.
        url: &'a str,
        /// The request's options as JSON text (method, headers, body).
        init: &'a str,
    },
    /// `Math.random()`: a [`Answer::Number`] in `[0, 1)`.
    MathRandom,
    /// `Date.now()`, `new Date()` without arguments, `Date()`: milliseconds since the
    /// epoch, a [`Answer::Number`].
    Date,
    /// `performance.now()`: milliseconds since the context was made, a [`Answer::Number`].
    PerformanceNow,
    /// `performance.timeOrigin`: a [`Answer::Number`].
    PerformanceTimeOrigin,
}

impl Source<'_> {
    /// The source's name in recordings: `now`, `randomString`, `fetch`, `mathRandom`,
    /// `date`, `performanceNow`, `performanceTimeOrigin`.
    #[must_use]
    pub fn name(&self) -> &'static str {
        match self {
            Source::Now => "now",
            Source::RandomString { .. } => "randomString",
            Source::Fetch { .. } => "fetch",
            Source::MathRandom => "mathRandom",
            Source::Date => "date",
            Source::PerformanceNow => "performanceNow",
            Source::PerformanceTimeOrigin => "performanceTimeOrigin",
        }
    }
}

/// The value a [`Source`] gave.
#[derive(Clone, Debug, PartialEq)]
pub enum Answer {
    /// A number (times in milliseconds, `Math.random`).
    Number(f64),
    /// A text (`randomString`, a `fetch` reply).
    Text(String),
}

/// One handler call's input.
#[derive(Clone)]
pub struct HandlerCall {
    /// The index of the controller in [`OperatorSpec::controllers`].
    pub controller: u32,
    /// The object handled, as JSON text with `apiVersion` and `kind`; `None` for `onStart`.
    pub object: Option<String>,
    /// The caches the call may read.
    pub observer: Arc<dyn Observer>,
}

/// How a handler call failed (as opposed to returning `Result.error`, which is an outcome).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailureKind {
    /// The handler threw (or its promise rejected).
    Exception,
    /// The handler ran past its deadline.
    Timeout,
    /// The handler's runtime broke (out of memory, a crash of the engine): the analog of a
    /// panic in a Go reconciler.
    Crash,
    /// The handler's output breaks a rule of the contract (too many children, an object of a
    /// kind the operator does not declare, a malformed output): retrying cannot help.
    Invalid,
}

/// A failed handler call.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct HandlerError {
    /// What kind of failure.
    pub kind: FailureKind,
    /// What happened, as the user should read it (script errors name file, line, column).
    pub message: String,
    /// The underlying error, when there is one.
    #[source]
    pub source: Option<Box<dyn std::error::Error + Send + Sync>>,
    /// Where in the script it failed, with the source line, for logs (the message stays on
    /// one line: it also goes into Events and conditions).
    pub frame: Option<crate::CodeFrame>,
}

impl HandlerError {
    /// A failure of `kind` saying `message`.
    pub fn new(kind: FailureKind, message: impl Into<String>) -> Self {
        Self { kind, message: message.into(), source: None, frame: None }
    }
}

/// A boxed future of a handler's answer.
pub type HandlerFuture<T> = Pin<Box<dyn Future<Output = Result<T, HandlerError>> + Send + 'static>>;

/// What computes outcomes for the controllers of one [`OperatorSpec`].
///
/// Each method is called only when [`crate::ControllerSpec::handlers`] names the handler
/// (a mapper when its [`crate::WatchSpec::mapper`] is set).
pub trait Handlers: Send + Sync + 'static {
    /// What is declared: the controllers to run.
    fn spec(&self) -> &OperatorSpec;
    /// Bring the world in line with `call.object`.
    fn reconcile(&self, call: HandlerCall) -> HandlerFuture<ReconcileOutcome>;
    /// Clean up before `call.object` goes away.
    fn finalize(&self, call: HandlerCall) -> HandlerFuture<FinalizeOutcome>;
    /// Once per process, when the caches are synced and this replica leads.
    fn on_start(&self, call: HandlerCall) -> HandlerFuture<StartOutcome>;
    /// The primaries the `watch`th `.watches()` of the controller maps `call.object` to.
    fn map(&self, watch: usize, call: HandlerCall) -> HandlerFuture<MapOutcome>;
}

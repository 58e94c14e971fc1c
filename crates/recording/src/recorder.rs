//! [`Recorder`]: [`Handlers`] that record every call of the handlers they wrap, with the
//! [`TapeObserver`] that notes each read and nondeterministic value of a call.

use std::sync::Arc;
use std::time::Instant;

use ctop_core::{
    Answer, FinalizeOutcome, HandlerCall, HandlerError, HandlerFuture, Handlers, MapOutcome, Observer,
    OperatorSpec, ReconcileOutcome, Source, StartOutcome,
};
use parking_lot::Mutex;

use crate::types::{CallRecord, CallResult, HandlerKind, RuntimeCall, ScriptInfo, TapeEntry};
use crate::writer::{Finished, Produced, RecordWriter};

/// [`Handlers`] that record each call of `inner` (its object, every read and
/// nondeterministic value, its outcome or failure) to a [`RecordWriter`].
///
/// Calls run as they would without it: the observer is wrapped, not replaced, and the
/// record is handed to the writer thread without waiting when the call ends. A call the
/// controller abandons (drops its future) is not recorded.
pub struct Recorder {
    inner: Arc<dyn Handlers>,
    script: Arc<str>,
    writer: RecordWriter,
}

impl Recorder {
    /// Record the calls of `inner`, the script `script`, to `writer` (which writes the
    /// script's bundle once, whatever the number of recorders of it).
    pub fn new(inner: Arc<dyn Handlers>, script: ScriptInfo, writer: RecordWriter) -> Self {
        let sha: Arc<str> = Arc::from(script.sha256.as_str());
        writer.add_script(script);
        Self { inner, script: sha, writer }
    }

    fn controller_name(&self, index: u32) -> String {
        let controllers = &self.inner.spec().controllers;
        controllers
            .iter()
            .find(|c| c.index == index)
            .or_else(|| controllers.get(usize::try_from(index).ok()?))
            .map(|c| c.name.clone())
            .unwrap_or_default()
    }

    fn wrap<T: Send + 'static>(
        &self,
        handler: HandlerKind,
        call: HandlerCall,
        run: impl FnOnce(HandlerCall) -> HandlerFuture<T>,
        produced: fn(&T) -> Produced,
    ) -> HandlerFuture<T> {
        let seq = self.writer.next_seq();
        let now = chrono::Utc::now();
        let started = Instant::now();
        let tape = Arc::new(TapeObserver::new(call.observer.clone()));
        let head = CallRecord {
            seq,
            at: now.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            at_ms: now.timestamp_millis(),
            handler,
            controller: call.controller,
            controller_name: self.controller_name(call.controller),
            script: self.script.to_string(),
            object: call.object.clone(),
            tape: Vec::new(),
            result: CallResult::Outcome(serde_json::Value::Null),
            took_ms: 0.0,
            runtime: None,
        };
        let writer = self.writer.clone();
        let fut = run(HandlerCall { observer: tape.clone(), ..call });
        Box::pin(async move {
            let out = fut.await;
            let mut record = head;
            record.tape = tape.take();
            record.runtime = tape.runtime_call();
            record.took_ms = started.elapsed().as_secs_f64() * 1000.0;
            let produced = match &out {
                Ok(o) => Some(produced(o)),
                Err(e) => {
                    record.result = failure(e);
                    None
                }
            };
            writer.submit(Finished { call: record, produced });
            out
        })
    }
}

fn failure(e: &HandlerError) -> CallResult {
    CallResult::Failure { kind: e.kind, message: e.message.clone(), frame: e.frame.clone() }
}

impl Handlers for Recorder {
    fn spec(&self) -> &OperatorSpec {
        self.inner.spec()
    }

    fn reconcile(&self, call: HandlerCall) -> HandlerFuture<ReconcileOutcome> {
        self.wrap(
            HandlerKind::Reconcile,
            call,
            |c| self.inner.reconcile(c),
            |o| Produced::Reconcile(Box::new(o.clone())),
        )
    }

    fn finalize(&self, call: HandlerCall) -> HandlerFuture<FinalizeOutcome> {
        self.wrap(
            HandlerKind::Finalize,
            call,
            |c| self.inner.finalize(c),
            |o| Produced::Reconcile(Box::new(o.clone())),
        )
    }

    fn on_start(&self, call: HandlerCall) -> HandlerFuture<StartOutcome> {
        self.wrap(
            HandlerKind::OnStart,
            call,
            |c| self.inner.on_start(c),
            |o| Produced::Reconcile(Box::new(o.clone())),
        )
    }

    fn map(&self, watch: usize, call: HandlerCall) -> HandlerFuture<MapOutcome> {
        self.wrap(HandlerKind::Map(watch), call, |c| self.inner.map(watch, c), |o| Produced::Map(o.clone()))
    }
}

/// An [`Observer`] that answers from the one it wraps and notes every question with its
/// answer, in order: the call's tape.
pub struct TapeObserver {
    inner: Arc<dyn Observer>,
    tape: Mutex<Vec<TapeEntry>>,
    runtime: Mutex<Option<RuntimeCall>>,
}

impl TapeObserver {
    /// Note what `inner` answers.
    #[must_use]
    pub fn new(inner: Arc<dyn Observer>) -> Self {
        Self { inner, tape: Mutex::new(Vec::new()), runtime: Mutex::new(None) }
    }

    /// The runtime that served the call, when the handlers said.
    pub fn runtime_call(&self) -> Option<RuntimeCall> {
        *self.runtime.lock()
    }

    /// The tape so far, leaving it empty.
    pub fn take(&self) -> Vec<TapeEntry> {
        std::mem::take(&mut *self.tape.lock())
    }
}

impl Observer for TapeObserver {
    fn list(&self, kind: &str) -> Option<String> {
        let answer = self.inner.list(kind);
        self.tape.lock().push(TapeEntry::List { kind: kind.to_owned(), answer: answer.clone() });
        answer
    }

    fn get(&self, kind: &str, namespace: Option<&str>, name: &str) -> Option<Option<String>> {
        let answer = self.inner.get(kind, namespace, name);
        self.tape.lock().push(TapeEntry::Get {
            kind: kind.to_owned(),
            namespace: namespace.map(str::to_owned),
            name: name.to_owned(),
            answer: answer.clone(),
        });
        answer
    }

    fn nondeterministic(&self, what: &'static str) {
        self.inner.nondeterministic(what);
    }

    /// An attempt starts: the tape of an earlier, stopped attempt is dropped.
    fn runtime(&self, serial: u64, call: u64) {
        *self.runtime.lock() = Some(RuntimeCall { serial, call });
        self.tape.lock().clear();
        self.inner.runtime(serial, call);
    }

    fn answers_from_memory(&self) -> bool {
        self.inner.answers_from_memory()
    }

    fn ran(&self, path: ctop_core::CallPath) {
        self.inner.ran(path);
    }

    /// Asks the wrapped observer (which calls `live`, unless it supplies values itself) and
    /// notes what it gave.
    fn supply(&self, source: Source<'_>, live: &mut dyn FnMut() -> Answer) -> Answer {
        let answer = self.inner.supply(source, live);
        let (detail, init) = match source {
            Source::RandomString { len } => (Some(len.to_string()), None),
            Source::Fetch { url, init } => (Some(url.to_owned()), Some(init.to_owned())),
            Source::Now
            | Source::MathRandom
            | Source::Date
            | Source::PerformanceNow
            | Source::PerformanceTimeOrigin => (None, None),
        };
        self.tape.lock().push(TapeEntry::Supply {
            source: source.name().to_owned(),
            detail,
            init,
            answer: answer.clone(),
        });
        answer
    }
}

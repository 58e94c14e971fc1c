//! Every handler call the controller makes, as the runner sees it: [`Recording`] wraps the
//! script's [`Handlers`] and keeps a [`Call`] per call (which handler, which object, when
//! on the virtual clock, how it ended). The runner uses it to tell a quiet operator from a
//! busy one, to name what never converged, and the oracles to know what failed and which
//! finalizers the operator adds.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use ctop_core::{
    FinalizeOutcome, HandlerCall, HandlerFuture, HandlerResult, Handlers, MapOutcome, OperatorSpec,
    ReconcileOutcome, StartOutcome,
};
use parking_lot::Mutex;
use serde::Deserialize;

/// The object a call was about.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CallObject {
    /// Its `apiVersion`.
    pub api_version: String,
    /// Its kind.
    pub kind: String,
    /// Its namespace (empty for cluster-scoped objects).
    pub namespace: String,
    /// Its name.
    pub name: String,
}

impl std::fmt::Display for CallObject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.namespace.is_empty() {
            write!(f, "{} {}", self.kind, self.name)
        } else {
            write!(f, "{} {}/{}", self.kind, self.namespace, self.name)
        }
    }
}

/// How a call ended.
#[derive(Clone, Debug, PartialEq)]
pub enum Ended {
    /// Still running.
    Running,
    /// It returned an outcome with this result.
    Returned(HandlerResult),
    /// It failed (threw, timed out, broke a rule).
    Failed(String),
}

impl std::fmt::Display for Ended {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Ended::Running => f.write_str("still running"),
            Ended::Returned(HandlerResult::Ok) => f.write_str("Result.ok()"),
            Ended::Returned(HandlerResult::Requeue { after }) => write!(f, "Result.requeue({after})"),
            Ended::Returned(HandlerResult::Error { message }) => write!(f, "Result.error({message:?})"),
            Ended::Failed(m) => write!(f, "failed: {m}"),
        }
    }
}

/// One handler call.
#[derive(Clone, Debug)]
pub struct Call {
    /// Which handler: `reconcile`, `finalize`, `onStart` or `map`.
    pub handler: &'static str,
    /// The controller's index.
    pub controller: u32,
    /// The object handled (`None` for `onStart`).
    pub object: Option<CallObject>,
    /// When it started, on the virtual clock since the world started.
    pub at: Duration,
    /// How it ended.
    pub ended: Ended,
    /// Finalizers its outcome added.
    pub finalizers_added: Vec<String>,
}

impl Call {
    /// Whether it failed, by throwing or by `Result.error`.
    pub fn failed(&self) -> Option<&str> {
        match &self.ended {
            Ended::Failed(m) | Ended::Returned(HandlerResult::Error { message: m }) => Some(m),
            _ => None,
        }
    }
}

/// When things happened, on the virtual clock since the recording started; each list is
/// in time order (it is appended to as time moves).
#[derive(Debug, Default)]
struct Timeline {
    /// When each handler call started.
    starts: Vec<Duration>,
    /// When each handler call ended.
    ends: Vec<Duration>,
    /// When the cluster was written (one entry per wake, which may cover several writes).
    writes: Vec<Duration>,
}

/// How many entries of the time-ordered `times` are at or before `t`.
fn count_until(times: &[Duration], t: Duration) -> usize {
    times.partition_point(|x| *x <= t)
}

/// The calls so far, shared by the wrapper and the runner.
#[derive(Debug)]
pub struct Recording {
    calls: Mutex<Vec<Call>>,
    in_flight: AtomicUsize,
    timeline: Mutex<Timeline>,
    origin: tokio::time::Instant,
}

impl Recording {
    fn new() -> Self {
        Self {
            calls: Mutex::new(Vec::new()),
            in_flight: AtomicUsize::new(0),
            timeline: Mutex::new(Timeline::default()),
            origin: tokio::time::Instant::now(),
        }
    }

    /// The instant the recording's times count from.
    pub fn origin(&self) -> tokio::time::Instant {
        self.origin
    }

    /// Note that the cluster was written now.
    pub fn note_write(&self) {
        let now = self.origin.elapsed();
        self.timeline.lock().writes.push(now);
    }

    /// The last time, at or before `t`, that a handler call started or ended or the
    /// cluster was written.
    pub fn last_activity(&self, t: Duration) -> Option<Duration> {
        let tl = self.timeline.lock();
        [&tl.starts, &tl.ends, &tl.writes]
            .into_iter()
            .filter_map(|times| count_until(times, t).checked_sub(1).map(|i| times[i]))
            .max()
    }

    /// Handler calls running at `t` (started at or before it, not ended by then).
    pub fn running_at(&self, t: Duration) -> usize {
        let tl = self.timeline.lock();
        count_until(&tl.starts, t).saturating_sub(count_until(&tl.ends, t))
    }

    /// Calls started so far.
    pub fn started(&self) -> usize {
        self.calls.lock().len()
    }

    /// Calls running now.
    pub fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::SeqCst)
    }

    /// A copy of the calls from the `from`th on.
    pub fn since(&self, from: usize) -> Vec<Call> {
        self.calls.lock().get(from..).map(<[Call]>::to_vec).unwrap_or_default()
    }

    /// The last finished `reconcile` or `finalize` call about each object.
    pub fn last_by_object(&self) -> std::collections::BTreeMap<CallObject, Call> {
        let mut out = std::collections::BTreeMap::new();
        for c in self.calls.lock().iter() {
            if let (Some(o), "reconcile" | "finalize") = (&c.object, c.handler)
                && c.ended != Ended::Running
            {
                out.insert(o.clone(), c.clone());
            }
        }
        out
    }

    /// Every finalizer an outcome added so far.
    pub fn finalizers_added(&self) -> std::collections::BTreeSet<String> {
        self.calls.lock().iter().flat_map(|c| c.finalizers_added.iter().cloned()).collect()
    }

    /// The virtual time since the world started.
    pub fn now(&self) -> Duration {
        self.origin.elapsed()
    }

    fn begin(&self, handler: &'static str, call: &HandlerCall) -> usize {
        let object = call.object.as_deref().and_then(object_of);
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        let at = self.origin.elapsed();
        self.timeline.lock().starts.push(at);
        let mut calls = self.calls.lock();
        calls.push(Call {
            handler,
            controller: call.controller,
            object,
            at,
            ended: Ended::Running,
            finalizers_added: Vec::new(),
        });
        calls.len() - 1
    }

    fn end(&self, index: usize, ended: Ended, finalizers_added: Vec<String>) {
        let now = self.origin.elapsed();
        self.timeline.lock().ends.push(now);
        if let Some(c) = self.calls.lock().get_mut(index) {
            c.ended = ended;
            c.finalizers_added = finalizers_added;
        }
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Head {
    #[serde(default)]
    api_version: String,
    #[serde(default)]
    kind: String,
    #[serde(default)]
    metadata: HeadMeta,
}

#[derive(Default, Deserialize)]
struct HeadMeta {
    #[serde(default)]
    name: String,
    #[serde(default)]
    namespace: String,
}

fn object_of(json: &str) -> Option<CallObject> {
    let h: Head = serde_json::from_str(json).ok()?;
    Some(CallObject {
        api_version: h.api_version,
        kind: h.kind,
        namespace: h.metadata.namespace,
        name: h.metadata.name,
    })
}

/// [`Handlers`] that record every call of the handlers they wrap.
///
/// Calls run one at a time, in the order the controller makes them (a fair lock): two
/// calls running at once on the blocking pool would finish in an order the OS decides, and
/// their writes with them, so a test would not run the same way twice. The virtual clock
/// does not move while a call runs, so this costs real time only.
pub struct Recorder {
    inner: Arc<dyn Handlers>,
    recording: Arc<Recording>,
    one_at_a_time: Arc<tokio::sync::Mutex<()>>,
}

impl Recorder {
    /// Wrap `inner`; the recording starts now (on the virtual clock).
    pub fn new(inner: Arc<dyn Handlers>) -> Self {
        Self { inner, recording: Arc::new(Recording::new()), one_at_a_time: Arc::default() }
    }

    /// The calls, shared.
    pub fn recording(&self) -> Arc<Recording> {
        self.recording.clone()
    }

    fn wrap(
        &self,
        handler: &'static str,
        call: HandlerCall,
        run: impl FnOnce(HandlerCall) -> HandlerFuture<ReconcileOutcome>,
    ) -> HandlerFuture<ReconcileOutcome> {
        let index = self.recording.begin(handler, &call);
        let recording = self.recording.clone();
        let gate = self.one_at_a_time.clone();
        let fut = run(call);
        Box::pin(async move {
            // Ended even if the controller drops the call (a dropped reconcile).
            let mut guard = EndGuard { recording: recording.clone(), index, done: false };
            let _turn = gate.lock().await;
            let out = fut.await;
            let (ended, added) = match &out {
                Ok(o) => (Ended::Returned(o.result.clone()), o.finalizers.add.clone()),
                Err(e) => (Ended::Failed(e.message.clone()), Vec::new()),
            };
            recording.end(index, ended, added);
            guard.done = true;
            out
        })
    }
}

struct EndGuard {
    recording: Arc<Recording>,
    index: usize,
    done: bool,
}

impl Drop for EndGuard {
    fn drop(&mut self) {
        if !self.done {
            self.recording.end(self.index, Ended::Failed("the call was dropped".into()), Vec::new());
        }
    }
}

impl Handlers for Recorder {
    fn spec(&self) -> &OperatorSpec {
        self.inner.spec()
    }

    fn reconcile(&self, call: HandlerCall) -> HandlerFuture<ReconcileOutcome> {
        self.wrap("reconcile", call, |c| self.inner.reconcile(c))
    }

    fn finalize(&self, call: HandlerCall) -> HandlerFuture<FinalizeOutcome> {
        self.wrap("finalize", call, |c| self.inner.finalize(c))
    }

    fn on_start(&self, call: HandlerCall) -> HandlerFuture<StartOutcome> {
        self.wrap("onStart", call, |c| self.inner.on_start(c))
    }

    fn map(&self, watch: usize, call: HandlerCall) -> HandlerFuture<MapOutcome> {
        let index = self.recording.begin("map", &call);
        let recording = self.recording.clone();
        let gate = self.one_at_a_time.clone();
        let fut = self.inner.map(watch, call);
        Box::pin(async move {
            let mut guard = EndGuard { recording: recording.clone(), index, done: false };
            let _turn = gate.lock().await;
            let out = fut.await;
            let ended = match &out {
                Ok(_) => Ended::Returned(HandlerResult::Ok),
                Err(e) => Ended::Failed(e.message.clone()),
            };
            recording.end(index, ended, Vec::new());
            guard.done = true;
            out
        })
    }
}

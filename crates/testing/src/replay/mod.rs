//! `ctop replay`: every handler call of a recording (`ctop-recording`) run again, without a
//! cluster, against the script that made it or another version, and what differs.
//!
//! Start with [`replay`]: give it a [`Recording`] and a [`Target`], get a [`Report`]. Each
//! recorded call is handed the recorded object, and a [`ReplayObserver`] answers its reads,
//! clock, randomness and `fetch` from the recording. Against the recorded script
//! ([`Target::Recorded`], or a script of the same bundle) the observer is strict: every read
//! must come in the recorded order and every output must equal the recorded one, or the call
//! is *diverged* (the recording is incomplete: module state, load-time randomness). Against
//! another version it answers by key, and each call's outcome is compared with [`diff`]:
//! children added, changed (field by field), pruned or kept, the status field by field, new
//! failures and fixed ones. [`report`] groups the calls by object and writes the summary.

pub mod diff;
pub mod report;
pub mod step;

use std::collections::HashMap;
use std::sync::Arc;

use ctop_core::{FailureKind, HandlerCall, Handlers, OperatorSpec};
use ctop_recording::{
    CallRecord, CallResult, HandlerKind, RecordWriter, Recorder, Recording, ReplayMode, ReplayObserver,
    ScriptInfo,
};
use ctop_runtime::{Limits, Script, ScriptHandlers};
use serde_json::Value;

pub use report::{ExitCode, ObjectReport, Report};

use self::diff::OutcomeDiff;

/// What the recorded calls run against.
pub enum Target {
    /// The script each call was recorded with (from the recording's bundles).
    Recorded,
    /// Another script (usually the next version), named `label` in the report.
    Script {
        /// The script.
        script: Arc<Script>,
        /// How the report names it (its directory).
        label: String,
    },
}

/// Why a recording cannot be replayed at all.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// A call names a script the recording does not hold.
    #[error(
        "call {seq} was made by script {sha}, which the recording does not hold (a part of it is missing)"
    )]
    MissingScript {
        /// The call.
        seq: u64,
        /// The bundle's sha256.
        sha: String,
    },
    /// A recorded script does not load.
    #[error("the recorded script {sha} does not load")]
    Load {
        /// The bundle's sha256.
        sha: String,
        /// Why.
        #[source]
        source: Box<ctop_runtime::ScriptError>,
    },
}

/// How one replayed call compares with its recording.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
#[serde(tag = "verdict", rename_all = "camelCase")]
pub enum Verdict {
    /// The same outcome.
    Identical,
    /// A different outcome (a script of another version).
    Different {
        /// What differs.
        diff: OutcomeDiff,
    },
    /// It returned an outcome when recorded and fails now.
    NewFailure {
        /// The failure, as the controller would report it.
        message: String,
    },
    /// It failed when recorded and returns an outcome now.
    Fixed {
        /// The recorded failure.
        was: String,
    },
    /// The recorded call timed out or crashed its runtime: nothing to compare.
    NotCompared {
        /// Why.
        why: String,
    },
    /// The recorded script did not do what it did when recorded.
    Diverged {
        /// The first difference.
        why: String,
    },
}

/// One replayed call.
#[derive(Clone, Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CallReport {
    /// The recorded call's sequence number.
    pub seq: u64,
    /// `reconcile`, `finalize`, `onStart` or `map:N`.
    pub handler: String,
    /// The controller's name.
    pub controller: String,
    /// `namespace/name` of the object (empty for `onStart`).
    pub object: String,
    /// Its kind.
    pub kind: String,
    /// How it compares.
    #[serde(flatten)]
    pub verdict: Verdict,
    /// Reads the recording could not answer (another version reads what the recorded one
    /// did not): their answers were made up, so the outcome may differ in a live run.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub blind_reads: Vec<String>,
}

/// `handlers` of `script`, every call recorded by `writer`: what `--record` runs, and what
/// a test wraps a [`crate::World`]'s handlers in to record them.
pub fn recorded(handlers: Arc<dyn Handlers>, script: &Script, writer: RecordWriter) -> Arc<dyn Handlers> {
    let bundle = script.bundle();
    let info =
        ScriptInfo { sha256: bundle.sha256_hex(), entry: bundle.entry.clone(), bundle_gz: bundle.to_gz() };
    Arc::new(Recorder::new(handlers, info, writer))
}

/// Replays every call of `recording` against `target`, in recorded order. Each recorded
/// runtime gets a runtime of its own (what a script keeps at module level comes out as it was),
/// loaded at its first call.
pub async fn replay(recording: &Recording, target: Target) -> Result<Report, ReplayError> {
    let label = match &target {
        Target::Recorded => "the recorded script".to_owned(),
        Target::Script { label, .. } => label.clone(),
    };
    let mut runtimes = Runtimes { recording, target: &target, loaded: HashMap::new() };
    let mut calls = Vec::with_capacity(recording.calls.len());
    for record in &recording.calls {
        let (handlers, strict) = runtimes.of(record)?;
        calls.push(replay_call(record, handlers.as_ref(), strict).await);
    }
    Ok(report::build(recording, label, calls))
}

/// The runtimes calls replay on, by script and recorded runtime.
struct Runtimes<'a> {
    recording: &'a Recording,
    target: &'a Target,
    loaded: HashMap<(String, Option<u64>), Arc<ScriptHandlers>>,
}

impl Runtimes<'_> {
    /// The handlers `record` replays on, and whether they run the script that made it (then
    /// its outputs must be the recorded ones).
    fn of(&mut self, record: &CallRecord) -> Result<(Arc<ScriptHandlers>, bool), ReplayError> {
        let serial = record.runtime.map(|r| r.serial);
        let (sha, load): (String, Box<dyn FnOnce() -> Result<Script, ReplayError>>) = match self.target {
            Target::Recorded => {
                let missing = || ReplayError::MissingScript { seq: record.seq, sha: record.script.clone() };
                let info = self.recording.scripts.get(&record.script).ok_or_else(missing)?;
                let sha = record.script.clone();
                let error_sha = sha.clone();
                let load = move || {
                    Script::from_bundle_gz(&info.bundle_gz, 1, Limits::default())
                        .map_err(|e| ReplayError::Load { sha: error_sha, source: Box::new(e) })
                };
                (sha, Box::new(load))
            }
            Target::Script { script, .. } => {
                let sha = script.bundle().sha256_hex();
                let error_sha = sha.clone();
                let bundle = script.bundle().clone();
                let load = move || {
                    Script::from_bundle(bundle, 1, Limits::default())
                        .map_err(|e| ReplayError::Load { sha: error_sha, source: Box::new(e) })
                };
                (sha, Box::new(load))
            }
        };
        let strict = sha == record.script;
        let key = (sha, serial);
        if let Some(h) = self.loaded.get(&key) {
            return Ok((Arc::clone(h), strict));
        }
        let (env, values) = (&self.recording.env, &self.recording.values);
        let handlers = Arc::new(ScriptHandlers::new(Arc::new(load()?), env, values));
        self.loaded.insert(key, Arc::clone(&handlers));
        Ok((handlers, strict))
    }
}

/// What a call gave: its output JSON, or a failure's kind and message.
enum Given {
    Output(Value),
    Failure(String),
}

async fn replay_call(record: &CallRecord, handlers: &ScriptHandlers, strict: bool) -> CallReport {
    let (object, kind, namespace) = identity(record.object.as_deref());
    let mut report = CallReport {
        seq: record.seq,
        handler: handler_name(&record.handler),
        controller: record.controller_name.clone(),
        object,
        kind,
        verdict: Verdict::Identical,
        blind_reads: Vec::new(),
    };
    let Some(controller) = controller_index(handlers.spec(), record) else {
        report.verdict = Verdict::NewFailure {
            message: format!(
                "the script has no controller {:?}: the object would not be handled",
                record.controller_name
            ),
        };
        return report;
    };
    let observer = ReplayObserver::new(record, if strict { ReplayMode::Strict } else { ReplayMode::Keyed });
    let call = HandlerCall { controller, object: record.object.clone(), observer: observer.clone() };
    let given = match record.handler {
        HandlerKind::Reconcile => handlers.reconcile(call).await.map(|o| o.to_output()),
        HandlerKind::Finalize => handlers.finalize(call).await.map(|o| o.to_output()),
        HandlerKind::OnStart => handlers.on_start(call).await.map(|o| o.to_output()),
        HandlerKind::Map(watch) => handlers.map(watch, call).await.map(|o| o.to_output()),
    };
    let given = match given {
        // Through the same text as the recorded output went: a float that serde_json reads
        // back one ulp off is off the same way on both sides.
        Ok(v) => Given::Output(serde_json::from_str(&v.to_string()).unwrap_or(v)),
        Err(e) => Given::Failure(e.message),
    };
    observer.finish();
    report.blind_reads = observer.blind_reads();
    report.verdict = judge(&record.result, &given, namespace.as_deref());
    if strict {
        // The recorded script must do again exactly what it did: any difference says the
        // recording missed an input.
        if let Some(why) = observer.divergence() {
            report.verdict = Verdict::Diverged { why };
        } else if !matches!(report.verdict, Verdict::Identical | Verdict::NotCompared { .. }) {
            report.verdict = Verdict::Diverged { why: describe(&report.verdict) };
        }
    }
    report
}

/// Compares what a call gave with what was recorded.
fn judge(recorded: &CallResult, given: &Given, namespace: Option<&str>) -> Verdict {
    match (recorded, given) {
        (CallResult::Failure { kind: FailureKind::Timeout | FailureKind::Crash, message, .. }, _) => {
            Verdict::NotCompared { why: format!("the recorded call did not finish: {message}") }
        }
        (CallResult::Failure { message: was, .. }, Given::Failure(now)) => {
            if was == now {
                Verdict::Identical
            } else {
                Verdict::Different {
                    diff: OutcomeDiff {
                        other: vec![diff::FieldChange {
                            path: "failure".into(),
                            before: Some(Value::String(was.clone())),
                            after: Some(Value::String(now.clone())),
                        }],
                        ..OutcomeDiff::default()
                    },
                }
            }
        }
        (CallResult::Failure { message, .. }, Given::Output(v)) => match error_of(v) {
            Some(now) => Verdict::Different {
                diff: OutcomeDiff {
                    other: vec![diff::FieldChange {
                        path: "failure".into(),
                        before: Some(Value::String(message.clone())),
                        after: Some(Value::String(now)),
                    }],
                    ..OutcomeDiff::default()
                },
            },
            None => Verdict::Fixed { was: message.clone() },
        },
        (CallResult::Outcome(v), Given::Failure(message)) => match error_of(v) {
            Some(_) => Verdict::Different {
                diff: OutcomeDiff {
                    other: vec![diff::FieldChange {
                        path: "failure".into(),
                        before: error_of(v).map(Value::String),
                        after: Some(Value::String(message.clone())),
                    }],
                    ..OutcomeDiff::default()
                },
            },
            None => Verdict::NewFailure { message: message.clone() },
        },
        (CallResult::Outcome(before), Given::Output(after)) => match (error_of(before), error_of(after)) {
            (None, Some(message)) => Verdict::NewFailure { message },
            (Some(was), None) => Verdict::Fixed { was },
            _ => {
                let d = diff::diff(before, after, namespace);
                if d.is_empty() { Verdict::Identical } else { Verdict::Different { diff: d } }
            }
        },
    }
}

/// The message of an output that ended in `Result.error(...)`.
fn error_of(output: &Value) -> Option<String> {
    let result = output.get("result")?;
    (result.get("type")?.as_str()? == "error").then(|| {
        format!("Result.error: {}", result.get("message").and_then(Value::as_str).unwrap_or_default())
    })
}

/// A verdict in a few words, for a divergence without a read to name.
fn describe(verdict: &Verdict) -> String {
    match verdict {
        Verdict::Different { diff } => {
            let first = diff
                .children
                .first()
                .map(|c| format!("{} {}", c.verb(), c.child()))
                .or_else(|| diff.status.first().map(|f| format!("status {f}")))
                .or_else(|| diff.other.first().map(ToString::to_string))
                .unwrap_or_default();
            format!("the output differs from the recorded one: {first}")
        }
        Verdict::NewFailure { message } => format!("it fails now: {message}"),
        Verdict::Fixed { was } => format!("it failed when recorded ({was}) and returns now"),
        Verdict::Identical | Verdict::NotCompared { .. } | Verdict::Diverged { .. } => String::new(),
    }
}

/// The controller of `record` in `spec`: by name, so a version that reorders its
/// controllers still replays.
fn controller_index(spec: &OperatorSpec, record: &CallRecord) -> Option<u32> {
    spec.controllers
        .iter()
        .find(|c| c.name == record.controller_name)
        .or_else(|| {
            spec.controllers
                .iter()
                .find(|c| c.index == record.controller && record.controller_name.is_empty())
        })
        .map(|c| c.index)
}

fn handler_name(kind: &HandlerKind) -> String {
    match kind {
        HandlerKind::Reconcile => "reconcile".into(),
        HandlerKind::Finalize => "finalize".into(),
        HandlerKind::OnStart => "onStart".into(),
        HandlerKind::Map(n) => format!("map:{n}"),
    }
}

/// `namespace/name` (or `name`), kind and namespace of a call's object.
fn identity(object: Option<&str>) -> (String, String, Option<String>) {
    let Some(o) = object.and_then(|t| serde_json::from_str::<Value>(t).ok()) else {
        return (String::new(), String::new(), None);
    };
    let text = |p: &str| o.pointer(p).and_then(Value::as_str).map(str::to_owned);
    let (name, namespace) = (text("/metadata/name").unwrap_or_default(), text("/metadata/namespace"));
    let key = match &namespace {
        Some(ns) => format!("{ns}/{name}"),
        None => name,
    };
    (key, text("/kind").unwrap_or_default(), namespace)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn ok(status: Value) -> Value {
        json!({"applies": [], "status": status, "result": {"type": "ok", "keep": false}})
    }

    #[test]
    fn a_call_that_fails_now_is_a_new_failure_and_the_reverse_fixed() {
        let recorded = CallResult::Outcome(ok(json!({})));
        let now = Given::Failure("operator.ct:3:9 boom".into());
        assert_eq!(
            judge(&recorded, &now, None),
            Verdict::NewFailure { message: "operator.ct:3:9 boom".into() }
        );
        let errored = Given::Output(json!({"result": {"type": "error", "message": "bad spec"}}));
        assert_eq!(
            judge(&recorded, &errored, None),
            Verdict::NewFailure { message: "Result.error: bad spec".into() }
        );
        let failed =
            CallResult::Failure { kind: FailureKind::Exception, message: "boom".into(), frame: None };
        assert_eq!(
            judge(&failed, &Given::Output(ok(json!({}))), None),
            Verdict::Fixed { was: "boom".into() }
        );
        assert_eq!(judge(&failed, &Given::Failure("boom".into()), None), Verdict::Identical);
    }

    #[test]
    fn a_recorded_timeout_is_not_compared() {
        let timed_out =
            CallResult::Failure { kind: FailureKind::Timeout, message: "deadline".into(), frame: None };
        assert!(matches!(
            judge(&timed_out, &Given::Output(ok(json!({}))), None),
            Verdict::NotCompared { .. }
        ));
    }

    #[test]
    fn the_object_is_named_by_namespace_and_name() {
        let (key, kind, ns) = identity(Some(r#"{"kind":"WebApp","metadata":{"name":"a","namespace":"d"}}"#));
        assert_eq!((key.as_str(), kind.as_str(), ns.as_deref()), ("d/a", "WebApp", Some("d")));
        assert_eq!(identity(None).0, "");
    }
}

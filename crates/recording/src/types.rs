//! The recording's contents as Rust values: what [`crate::read`] gives back and what the
//! [`crate::Recorder`] hands the writer. Their on-disk form is in `lines.rs` (FORMAT.md).

use std::fmt;

use ctop_core::{Answer, CodeFrame, FailureKind};
use serde_json::Value;

/// Whether secrets are masked in a recording (`header.redaction`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Redaction {
    /// Secret values, `randomString` answers and credentials in `fetch` headers are replaced
    /// by masks of the same length (FORMAT.md, "Redaction").
    #[default]
    Masked,
    /// Everything is recorded as it was (`--record-secrets`).
    Clear,
}

impl Redaction {
    /// `masked` or `clear`, as the header says it.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Redaction::Masked => "masked",
            Redaction::Clear => "clear",
        }
    }
}

/// One version of the script: its bundle, so that a replay needs no sources.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScriptInfo {
    /// The bundle's sha256 (hex), as `Bundle::sha256_hex` gives it; calls name their script
    /// by it.
    pub sha256: String,
    /// The entry module.
    pub entry: String,
    /// The bundle as `Bundle::to_gz` writes it.
    pub bundle_gz: Vec<u8>,
}

/// The first line of every part.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    /// The file format's (major, minor) version.
    pub format: (u16, u16),
    /// The version of ctop that recorded.
    pub ctop: String,
    /// sha256 of the SDK embedded in that ctop.
    pub sdk_sha256: String,
    /// A random id shared by every part of one recording.
    pub recording_id: String,
    /// The part's number, from 1, one more at each rotation.
    pub part: u32,
    /// When the recording (not the part) started, RFC 3339.
    pub started: String,
    /// The operator's name.
    pub operator: String,
    /// Whether secrets are masked.
    pub redaction: Redaction,
    /// The recording process's `TZ` variable, when set: local-time `Date` methods follow it.
    pub tz: Option<String>,
}

/// Which handler a call ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HandlerKind {
    /// `reconcile`.
    Reconcile,
    /// `finalize`.
    Finalize,
    /// `onStart`.
    OnStart,
    /// The mapper of the controller's `n`th `.watches()`.
    Map(usize),
}

impl fmt::Display for HandlerKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HandlerKind::Reconcile => f.write_str("reconcile"),
            HandlerKind::Finalize => f.write_str("finalize"),
            HandlerKind::OnStart => f.write_str("onStart"),
            HandlerKind::Map(n) => write!(f, "map:{n}"),
        }
    }
}

impl HandlerKind {
    /// Read the form [`Display`](fmt::Display) writes.
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "reconcile" => Some(HandlerKind::Reconcile),
            "finalize" => Some(HandlerKind::Finalize),
            "onStart" => Some(HandlerKind::OnStart),
            _ => s.strip_prefix("map:")?.parse().ok().map(HandlerKind::Map),
        }
    }
}

/// One thing a call asked of its observer, with the answer it got, in call order.
#[derive(Clone, Debug, PartialEq)]
pub enum TapeEntry {
    /// `Observer::list`: the JSON array text, `None` when the kind was not observed.
    List {
        /// `apiVersion/kind`.
        kind: String,
        /// The answer.
        answer: Option<String>,
    },
    /// `Observer::get`: `Some(None)` when the object was missing, `None` when the kind was
    /// not observed.
    Get {
        /// `apiVersion/kind`.
        kind: String,
        /// The namespace asked for.
        namespace: Option<String>,
        /// The name asked for.
        name: String,
        /// The answer.
        answer: Option<Option<String>>,
    },
    /// `Observer::supply`: a nondeterministic source's value.
    Supply {
        /// [`ctop_core::Source::name`].
        source: String,
        /// `randomString`'s length (decimal), or `fetch`'s URL.
        detail: Option<String>,
        /// `fetch`'s request options as JSON text (credential headers masked unless the
        /// recording is clear).
        init: Option<String>,
        /// The value.
        answer: Answer,
    },
}

impl TapeEntry {
    /// The request, as a replay report names it: `get v1/Secret default/x`,
    /// `list v1/ConfigMap`, `randomString(32)`, `fetch https://…`, `date`.
    #[must_use]
    pub fn request(&self) -> String {
        match self {
            TapeEntry::List { kind, .. } => format!("list {kind}"),
            TapeEntry::Get { kind, namespace, name, .. } => get_request(kind, namespace.as_deref(), name),
            TapeEntry::Supply { source, detail, .. } => supply_request(source, detail.as_deref()),
        }
    }
}

/// `get KIND NS/NAME` (or `get KIND NAME` without a namespace).
pub(crate) fn get_request(kind: &str, namespace: Option<&str>, name: &str) -> String {
    match namespace {
        Some(ns) => format!("get {kind} {ns}/{name}"),
        None => format!("get {kind} {name}"),
    }
}

/// `randomString(32)`, `fetch URL`, or the source's name.
pub(crate) fn supply_request(source: &str, detail: Option<&str>) -> String {
    match (source, detail) {
        ("randomString", Some(d)) => format!("randomString({d})"),
        (s, Some(d)) => format!("{s} {d}"),
        (s, None) => s.to_owned(),
    }
}

/// How a call ended.
#[derive(Clone, Debug, PartialEq)]
pub enum CallResult {
    /// It returned: the outcome's `to_output()` JSON (`ReconcileOutcome` or `MapOutcome`).
    Outcome(Value),
    /// It failed (`HandlerError`).
    Failure {
        /// How.
        kind: FailureKind,
        /// The error's message.
        message: String,
        /// Where in the script.
        frame: Option<CodeFrame>,
    },
}

/// One handler call: everything it read and what it gave back.
#[derive(Clone, Debug, PartialEq)]
pub struct CallRecord {
    /// The call's number in the recording, in the order calls started (from 1; a gap is a
    /// dropped call, or one the controller abandoned).
    pub seq: u64,
    /// When it started, RFC 3339 with milliseconds, UTC.
    pub at: String,
    /// The same instant in milliseconds since the epoch.
    pub at_ms: i64,
    /// Which handler.
    pub handler: HandlerKind,
    /// The controller's index in the spec.
    pub controller: u32,
    /// The controller's name (a v2 that reorders controllers still finds it).
    pub controller_name: String,
    /// The sha256 of the script that ran it.
    pub script: String,
    /// The object handed to the handler, as JSON text; `None` for `onStart`.
    pub object: Option<String>,
    /// Its reads and nondeterministic values, in order.
    pub tape: Vec<TapeEntry>,
    /// How it ended.
    pub result: CallResult,
    /// How long it took, in milliseconds.
    pub took_ms: f64,
    /// The script runtime that served it, when the handlers said (see
    /// [`ctop_core::Observer::runtime`]): a replay runs each runtime's calls on one of their
    /// own, so what a script keeps at module level comes out the same.
    pub runtime: Option<RuntimeCall>,
}

/// Which runtime served a call, and how many it had served before.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct RuntimeCall {
    /// The runtime's number in the recording process.
    pub serial: u64,
    /// The calls it had served before this one.
    pub call: u64,
}

/// `exception`, `timeout`, `crash`, `invalid`.
pub(crate) fn failure_name(kind: FailureKind) -> &'static str {
    match kind {
        FailureKind::Exception => "exception",
        FailureKind::Timeout => "timeout",
        FailureKind::Crash => "crash",
        FailureKind::Invalid => "invalid",
    }
}

/// The inverse of [`failure_name`].
pub(crate) fn failure_kind(name: &str) -> Option<FailureKind> {
    Some(match name {
        "exception" => FailureKind::Exception,
        "timeout" => FailureKind::Timeout,
        "crash" => FailureKind::Crash,
        "invalid" => FailureKind::Invalid,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handler_kinds_read_back() {
        for k in [HandlerKind::Reconcile, HandlerKind::Finalize, HandlerKind::OnStart, HandlerKind::Map(3)] {
            assert_eq!(HandlerKind::parse(&k.to_string()), Some(k));
        }
        assert_eq!(HandlerKind::parse("map:x"), None);
    }

    #[test]
    fn failure_kinds_read_back() {
        for k in [FailureKind::Exception, FailureKind::Timeout, FailureKind::Crash, FailureKind::Invalid] {
            assert_eq!(failure_kind(failure_name(k)), Some(k));
        }
    }
}

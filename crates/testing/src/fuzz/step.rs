//! One fuzz step, fully concrete: what it writes, to which object, and how long the world
//! runs after it. A run is a list of these; a replay (of a seed, or while shrinking) runs
//! the list again without drawing any random number, so a step never depends on the run
//! it came from. [`Step`]'s `Display` is its trace line.

use std::fmt;
use std::time::Duration;

use ctop_kubesim::FaultRule;
use serde_json::Value;

use crate::format::ObjectRef;

/// What a step does.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    /// Server-side apply `object` (create or update; field manager `ctop-test`, forced).
    Apply {
        /// The object.
        target: ObjectRef,
        /// The whole object.
        object: Value,
        /// What it is made of, for the trace (`spec generated from the schema`, `from the
        /// samples`, `spec changed: port=8080`); whether it was new is known once it ran.
        what: String,
    },
    /// Apply an object that breaks its schema: the API server must refuse it.
    Invalid {
        /// The object.
        target: ObjectRef,
        /// The whole object.
        object: Value,
        /// The field that breaks the schema (`spec.port`).
        path: String,
        /// The rule it breaks.
        rule: String,
    },
    /// Delete an object (background propagation).
    Delete {
        /// The object.
        target: ObjectRef,
    },
    /// Set (or remove, with `None`) a label or an annotation: a change without a new
    /// generation.
    Meta {
        /// The object.
        target: ObjectRef,
        /// `labels` or `annotations`.
        field: &'static str,
        /// The key.
        key: String,
        /// The value; `None` removes it.
        value: Option<String>,
    },
    /// Delete one of the operator's children behind its back (it must put it back).
    DeleteChild {
        /// The child.
        target: ObjectRef,
    },
    /// Change a label of one of the operator's children behind its back.
    DriftChild {
        /// The child.
        target: ObjectRef,
        /// The label.
        key: String,
        /// Its new value.
        value: String,
    },
    /// Inject an API fault for the operator's requests (the fuzzer's own are exempt).
    Fault(FaultRule),
    /// End every watch the API server is serving (the operator must resume them).
    DropWatches,
    /// Crash the operator and start it again.
    Restart,
}

/// How the world runs after a step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Then {
    /// Until quiet; then the oracles and the invariants are checked.
    Settle,
    /// Only this much virtual time (the next step lands while the operator is busy).
    Pause(Duration),
}

/// One step of a run.
#[derive(Clone, Debug, PartialEq)]
pub struct Step {
    /// What it does.
    pub action: Action,
    /// What happens after it.
    pub then: Then,
}

impl Action {
    /// Whether this action injects a fault (so the checkpoint after it clears the faults
    /// and lets the operator recover first).
    pub fn is_fault(&self) -> bool {
        matches!(self, Action::Fault(_) | Action::DropWatches | Action::Restart)
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Action::Apply { target, what, .. } => write!(f, "apply {target} ({what})"),
            Action::Invalid { target, path, rule, .. } => {
                write!(f, "apply {target} with {path} invalid ({rule})")
            }
            Action::Delete { target } => write!(f, "delete {target}"),
            Action::Meta { target, field, key, value: Some(v) } => {
                write!(f, "set {field} {key}={v} on {target}")
            }
            Action::Meta { target, field, key, value: None } => write!(f, "remove {field} {key} of {target}"),
            Action::DeleteChild { target } => write!(f, "delete child {target} behind the operator's back"),
            Action::DriftChild { target, key, value } => {
                write!(f, "set label {key}={value} on child {target} behind the operator's back")
            }
            Action::Fault(r) => {
                let verb = r.verb.as_deref().unwrap_or("any verb");
                let resource = r.resource.as_deref().unwrap_or("any resource");
                match (r.code, r.latency_ms) {
                    (0, ms) => {
                        write!(f, "fault: the next {} {verb} of {resource} take {ms}ms longer", r.count)
                    }
                    (code, 0) => {
                        write!(f, "fault: the next {} {verb} of {resource} fail with {code}", r.count)
                    }
                    (code, ms) => write!(
                        f,
                        "fault: the next {} {verb} of {resource} fail with {code} after {ms}ms",
                        r.count
                    ),
                }
            }
            Action::DropWatches => f.write_str("fault: every watch is dropped"),
            Action::Restart => f.write_str("the operator crashes and starts again"),
        }
    }
}

impl Step {
    /// The step as its trace line shows it once it ran: an apply that created its object
    /// (the object did not exist before the step) says `(new, ...)`.
    #[must_use]
    pub fn trace(&self, created: bool) -> String {
        let action = match &self.action {
            Action::Apply { target, what, .. } if created => format!("apply {target} (new, {what})"),
            other => other.to_string(),
        };
        match self.then {
            Then::Settle => action,
            Then::Pause(d) => format!("{action}, then only {}ms", d.as_millis()),
        }
    }
}

impl fmt::Display for Step {
    /// The step as drawn, before it ran (nothing said of whether an apply creates).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.trace(false))
    }
}

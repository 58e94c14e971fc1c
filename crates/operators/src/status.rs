//! The manager's word on an Operator that cannot run: a `Ready=False` condition in its
//! status naming the error (the controller's own `status.controllers` and conditions are
//! written by the controller while it runs).

use kube::Api;
use kube::api::{DynamicObject, Patch, PatchParams};
use serde_json::json;

/// Why an Operator does not run, as its `Ready` condition's reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reason {
    /// The object is no Operator ctop can run.
    InvalidOperator,
    /// Its controller did not start, or stopped with an error.
    ControllerFailed,
}

impl Reason {
    fn as_str(self) -> &'static str {
        match self {
            Reason::InvalidOperator => "InvalidOperator",
            Reason::ControllerFailed => "ControllerFailed",
        }
    }
}

/// Set the `Ready=False` condition of Operator `name` (of `generation`) to `message`; a
/// failure is logged (the manager goes on).
pub(crate) async fn report(
    api: &Api<DynamicObject>,
    name: &str,
    generation: Option<i64>,
    reason: Reason,
    message: &str,
) {
    let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let patch = json!({"status": {"conditions": [{
        "type": "Ready",
        "status": "False",
        "reason": reason.as_str(),
        "message": message,
        "observedGeneration": generation,
        "lastTransitionTime": now,
    }]}});
    match api.patch_status(name, &PatchParams::default(), &Patch::Merge(&patch)).await {
        Ok(_) => tracing::warn!(
            operator = name,
            reason = reason.as_str(),
            error = message,
            "the Operator cannot run"
        ),
        Err(e) => tracing::warn!(
            operator = name,
            error = message,
            status_error = %e,
            "the Operator cannot run, and its status could not say so"
        ),
    }
}

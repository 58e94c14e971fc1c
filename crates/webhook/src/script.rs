//! The one seam between the server and the operator script: [`AdmissionScript`].
//!
//! The server never sees JavaScript. It hands the script a [`AdmissionCall`] (which handler
//! of which controller, the object and the old object) and gets a typed
//! [`AdmissionOutcome`] back, never JSON to read by key: `validate` answers with
//! `allowed`, `message` and `warnings`, `mutate` with the `object` to store (the server
//! computes the JSONPatch). `ctop` implements the trait on top of `ctop_runtime::Script`
//! (the QuickJS pool, with its time and memory limits), reading the SDK's output with
//! [`AdmissionOutcome::from_output`]; tests and other hosts can implement it with plain Rust.

use ctop_core::AdmissionOutcome;
use serde_json::Value;

use crate::routes::HandlerKind;

/// One call of an admission handler.
#[derive(Clone, Copy, Debug)]
pub struct AdmissionCall<'a> {
    /// `validate` or `mutate`.
    pub handler: HandlerKind,
    /// The controller's index in the script.
    pub controller: u32,
    /// The object being admitted (`request.object`).
    pub object: &'a Value,
    /// The object before the change (`request.oldObject`), on updates.
    pub old_object: Option<&'a Value>,
    /// The whole `request` of the AdmissionReview (operation, user, namespace, dry run).
    pub request: &'a Value,
}

/// Why a handler call failed. The server answers it according to the failure policy and
/// keeps serving.
#[derive(Debug, thiserror::Error)]
pub enum HookError {
    /// The handler threw, returned something malformed or broke a limit of the script
    /// runtime (memory, its own deadline); the message says which and where.
    #[error("{0}")]
    Failed(String),
    /// The handler did not answer within the server's per-request deadline.
    #[error("the {handler} handler did not answer within {after:?}")]
    Timeout {
        /// `validate` or `mutate`.
        handler: &'static str,
        /// The deadline.
        after: std::time::Duration,
    },
    /// Every handler slot stayed busy for the whole deadline.
    #[error("all {limit} handler slots stayed busy for {after:?}")]
    Busy {
        /// The concurrency limit.
        limit: usize,
        /// How long the request waited.
        after: std::time::Duration,
    },
}

/// How the server reaches the script. Calls block (a script runtime runs them), so the
/// server runs them on the blocking thread pool, at most `concurrency` at once.
///
/// What the server reads of the [`AdmissionOutcome`]:
/// - `validate`: `allowed`, `warnings`, and `message` when denied (denied without one
///   reads `denied by the operator`); `object` is not read.
/// - `mutate`: `object`, the object as it should be stored, turned into a JSONPatch
///   against the request's object (none: allowed unchanged; not a JSON object: a
///   [`HookError::Failed`]), and `warnings` with it; `allowed` and `message` are not
///   read (the SDK's `mutate` cannot deny).
pub trait AdmissionScript: Send + Sync + 'static {
    /// Run one handler and return what it decided. An output that cannot be read as an
    /// [`AdmissionOutcome`] is a [`HookError::Failed`].
    fn call(&self, call: &AdmissionCall<'_>) -> Result<AdmissionOutcome, HookError>;
}

impl<F> AdmissionScript for F
where
    F: Fn(&AdmissionCall<'_>) -> Result<AdmissionOutcome, HookError> + Send + Sync + 'static,
{
    fn call(&self, call: &AdmissionCall<'_>) -> Result<AdmissionOutcome, HookError> {
        self(call)
    }
}

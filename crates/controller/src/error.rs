//! What can go wrong: at start ([`RunError`]) and in one reconcile ([`ReconcileError`]).
//!
//! A [`ReconcileError`] keeps its cause, so the error policy can tell a script exception
//! from a timeout, an API conflict from a refused object, and a mistake retrying cannot fix
//! ([`ReconcileError::is_terminal`]) from one it can.

use ctop_applier::{ApplyError, StatusError};
use ctop_core::{FailureKind, HandlerError};

/// Why a run failed to start.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The kubeconfig could not be read or used.
    #[error("cannot configure the Kubernetes client: {0}")]
    Config(String),
    /// An API call failed at start. The message renders the API's answer once, as kubectl
    /// words it ([`api_error_text`]); the [`kube::Error`] is kept but is not the source,
    /// whose own text is a `Debug` dump of the same answer.
    #[error("{what}: {}", api_error_text(.error))]
    Kube {
        /// What was being done.
        what: String,
        /// The error.
        error: kube::Error,
    },
    /// Start-up failed otherwise.
    #[error("{0}")]
    Start(String),
    /// A sharded replica could not renew its member Lease within the renew deadline and
    /// stopped, before the sharder could move its objects; restart it to rejoin.
    #[error(
        "lost the member Lease of operator {0:?}: stopped so that its objects can move; restart to rejoin the ring"
    )]
    LostMembership(String),
}

/// Why one reconcile (or finalize, or `onStart`) failed.
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    /// The handler call failed: it threw, ran past its deadline, broke its runtime or
    /// returned an output that breaks the contract.
    #[error(transparent)]
    Handler(#[from] HandlerError),
    /// The handler returned `Result.error(message)`.
    #[error("{handler}: {message}")]
    Failed {
        /// The handler.
        handler: &'static str,
        /// Its message.
        message: String,
    },
    /// The handler wrote an object of a kind the operator does not declare: the generated
    /// RBAC would refuse it in a cluster, so it is refused everywhere.
    #[error("{action} {object}: {kind} is not declared by operator {controller:?}; add {fix} to it")]
    Undeclared {
        /// `apply` or `patch`.
        action: &'static str,
        /// The object, `Kind namespace/name`.
        object: String,
        /// `apiVersion/kind`.
        kind: String,
        /// The controller.
        controller: String,
        /// The builder call that declares it, e.g. `.manages(ConfigMap)`.
        fix: String,
    },
    /// An object the handler returned cannot be written (no apiVersion, kind or name).
    #[error("{action}: {reason}")]
    BadObject {
        /// `apply` or `patch`.
        action: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// Applying or pruning the children failed. The [`ApplyError`] says why, the API's
    /// answer rendered as kubectl words it, so it is in the message and not a source (whose
    /// chain would repeat that answer as a `Debug` dump).
    #[error("apply: {0}")]
    Apply(ApplyError),
    /// Writing the status failed; like [`ReconcileError::Apply`], the [`StatusError`] is in
    /// the message.
    #[error("status: {0}")]
    Status(StatusError),
    /// Another API call failed (finalizers, patches, objects applied by `onStart`); like
    /// [`RunError::Kube`], the API's answer is rendered once in the message.
    #[error("{what}: {}", api_error_text(.error))]
    Api {
        /// What was being done, naming the object.
        what: String,
        /// The error.
        error: kube::Error,
    },
    /// A kind could not be resolved.
    #[error(transparent)]
    Run(#[from] RunError),
    /// A `reconcile` of an object being deleted left a finalizer it claims (`addFinalizer`)
    /// in place, removed nothing and pruned nothing: nothing will call it again, so the
    /// object would stay `Terminating` for good. Not retried until the object, a child or
    /// the script changes.
    #[error(
        "the deletion of {object} waits for {}, which the reconcile handler adds but did not remove, and nothing will call it again ({}); call removeFinalizer(cr, {:?}) once the cleanup is done",
        names(.finalizers), left(.children), .finalizers.first().map_or("", String::as_str)
    )]
    DeletionStalled {
        /// The object, `Kind namespace/name`.
        object: String,
        /// The finalizers it waits for.
        finalizers: Vec<String>,
        /// Its children still there (`Kind namespace/name`, a few).
        children: Vec<String>,
    },
    /// The object was deleted (or replaced under its name) while it was being reconciled:
    /// nothing is retried, reported or remembered.
    #[error("{object} no longer exists")]
    Gone {
        /// The object, `Kind namespace/name`.
        object: String,
    },
}

impl From<ApplyError> for ReconcileError {
    /// A failed apply; the owner's own write answered `404` means the owner is gone.
    fn from(e: ApplyError) -> Self {
        match e {
            ApplyError::OwnerUpdate { owner, error: kube::Error::Api(s), .. } if s.code == 404 => {
                Self::Gone { object: owner }
            }
            ApplyError::OwnerGone { owner, .. } => Self::Gone { object: owner },
            e => Self::Apply(e),
        }
    }
}

impl ReconcileError {
    /// Where in the script a handler failed, with its source line, when the handler said.
    #[must_use]
    pub fn code_frame(&self) -> Option<&ctop_core::CodeFrame> {
        match self {
            Self::Handler(e) => e.frame.as_ref(),
            _ => None,
        }
    }

    /// Whether retrying cannot help until something changes (the object, the script): the
    /// output broke a rule, or the API server refused an object as invalid. Like
    /// controller-runtime's terminal errors, these are not retried with backoff.
    #[must_use]
    pub fn is_terminal(&self) -> bool {
        match self {
            Self::Handler(e) => e.kind == FailureKind::Invalid,
            Self::Undeclared { .. } | Self::BadObject { .. } | Self::DeletionStalled { .. } => true,
            Self::Apply(e) => e.is_invalid_input(),
            _ => false,
        }
    }

    /// Whether the handler ran past its deadline.
    #[must_use]
    pub fn is_timeout(&self) -> bool {
        matches!(self, Self::Handler(e) if e.kind == FailureKind::Timeout)
    }

    /// Whether the object is gone ([`ReconcileError::Gone`]): not a failure.
    #[must_use]
    pub fn is_gone(&self) -> bool {
        matches!(self, Self::Gone { .. })
    }

    /// Whether the handler's runtime broke (the analog of a panic in a Go reconciler).
    #[must_use]
    pub fn is_crash(&self) -> bool {
        matches!(self, Self::Handler(e) if e.kind == FailureKind::Crash)
    }

    /// The reason of the Warning event and of the failed condition.
    #[must_use]
    pub fn reason(&self) -> &'static str {
        match self {
            Self::Handler(e) => match e.kind {
                FailureKind::Exception => "ScriptError",
                FailureKind::Timeout => "ScriptTimeout",
                FailureKind::Crash => "ScriptCrashed",
                FailureKind::Invalid => "InvalidOutput",
            },
            Self::Failed { .. } => "ReconcileFailed",
            Self::Undeclared { .. } => "UndeclaredKind",
            Self::BadObject { .. } => "InvalidOutput",
            Self::Apply(ApplyError::Apply { failures, .. })
                if failures.iter().any(|f| matches!(f.error, ctop_applier::ChildError::NotOurs { .. })) =>
            {
                "AdoptionRefused"
            }
            Self::Apply(_) => "ApplyFailed",
            Self::Status(_) => "StatusFailed",
            Self::Api { .. } | Self::Run(_) => "APIError",
            Self::Gone { .. } => "Gone",
            Self::DeletionStalled { .. } => "DeletionStalled",
        }
    }
}

/// `finalizer "a"` or `finalizers "a", "b"`.
fn names(finalizers: &[String]) -> String {
    let quoted: Vec<String> = finalizers.iter().map(|f| format!("{f:?}")).collect();
    match quoted.len() {
        1 => format!("finalizer {}", quoted.join("")),
        _ => format!("finalizers {}", quoted.join(", ")),
    }
}

/// What is left of the object's children, for a message.
fn left(children: &[String]) -> String {
    if children.is_empty() {
        "no child is left".to_owned()
    } else {
        format!("children left: {}", children.join(", "))
    }
}

/// An API error as kubectl would word it: `422 Invalid: <the server's message>` for an
/// answer of the API server, the chain of causes for a transport failure.
#[must_use]
pub fn api_error_text(err: &kube::Error) -> String {
    ctop_applier::api_error_text(err)
}

#[cfg(test)]
mod tests {
    use kube::core::Status;

    use super::*;

    fn not_found() -> kube::Error {
        kube::Error::Api(Box::new(Status::failure(r#"configmaps "x" not found"#, "NotFound").with_code(404)))
    }

    /// The API's answer is said once, as kubectl words it, with `to_string` and with the
    /// chain alike (the `kube::Error`'s own text, a `Debug` dump, never).
    #[test]
    fn an_api_error_says_its_answer_once() {
        let errors: [&dyn std::error::Error; 2] = [
            &RunError::Kube { what: "cannot apply the CRD x".into(), error: not_found() },
            &ReconcileError::Api { what: "apply ConfigMap default/x".into(), error: not_found() },
        ];
        for e in errors {
            let line = ctop_core::Chain(e).to_string();
            assert_eq!(line, e.to_string());
            assert!(line.ends_with(r#": 404 NotFound: configmaps "x" not found"#), "{line}");
            assert_eq!(line.matches("not found").count(), 1, "{line}");
            assert!(!line.contains("ErrorResponse") && !line.contains("ApiError"), "{line}");
        }
    }

    #[test]
    fn a_status_write_error_is_said_once() {
        let e =
            ReconcileError::Status(StatusError::Write { object: "App default/a".into(), error: not_found() });
        let line = ctop_core::Chain(&e).to_string();
        assert_eq!(line, e.to_string());
        assert_eq!(line.matches("not found").count(), 1, "{line}");
        assert_eq!(e.reason(), "StatusFailed");
    }
}

//! What can go wrong, and what to do about it.
//!
//! Every message that carries an API server answer renders it the way kubectl does —
//! `<code> <reason>: <server message>` — through [`api_error_text`], never as a Rust
//! `Debug` dump; the [`kube::Error`] itself stays available as the error's `source`.

use std::fmt;

use crate::ApplyReport;
use crate::adopt::ChildError;
use crate::object::ChildRef;

/// One child that was not applied: the API server refused it, or it exists and is not a
/// child of the owner ([`ChildError::NotOurs`]).
#[derive(Debug)]
pub struct ChildFailure {
    /// The child.
    pub child: ChildRef,
    /// Why.
    pub error: ChildError,
}

impl fmt::Display for ChildFailure {
    /// `Secret default/x: 422 Invalid: Secret "x" is invalid: data.token: ...`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.child, self.error)
    }
}

/// Why [`Applier::apply`](crate::Applier::apply) did not complete.
///
/// Every variant before [`ApplyError::OwnerUpdate`] is raised before anything is written:
/// the desired set is checked as a whole first. Later variants carry the
/// [`ApplyReport`] of what was done before the failure.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ApplyError {
    /// The owner object cannot be an owner: it lacks `apiVersion`/`kind` (a
    /// `DynamicObject` without `types`), a name, or a uid (it was not read from the API
    /// server). Pass the object as the API server returned it.
    #[error("owner {owner} cannot own children: {reason}; pass the object as read from the API server")]
    InvalidOwner {
        /// The owner, as far as it could be named.
        owner: String,
        /// What is missing.
        reason: String,
    },

    /// A desired child is not a well-formed object (no `apiVersion`, `kind` or
    /// `metadata.name`, `generateName` instead of a name, not a JSON object, …). Fix the
    /// object passed in; retrying does not help.
    #[error("desired child #{index} ({child}) is invalid: {reason}")]
    InvalidChild {
        /// Its position in the desired set.
        index: usize,
        /// The child, as far as it could be named.
        child: String,
        /// What is wrong.
        reason: String,
    },

    /// A desired child cannot be owned by this owner: it is in another namespace than a
    /// namespaced owner, it is cluster-scoped under a namespaced owner (owner references
    /// never cross namespaces and a cluster-scoped object cannot point at a namespaced
    /// one), it is namespaced under a cluster-scoped owner without naming its namespace, or
    /// it already names another controller. Change the child (or the owner); nothing was
    /// applied.
    #[error("{owner} cannot own {child}: {reason}")]
    CannotOwn {
        /// The owner.
        owner: String,
        /// The child.
        child: Box<ChildRef>,
        /// Why not.
        reason: String,
    },

    /// The same object appears twice in the desired set. Apply each object once.
    #[error("{child} appears more than once in the desired set; apply each object once")]
    Duplicate {
        /// The repeated child.
        child: ChildRef,
    },

    /// The API server does not serve the kind of a child (or of the owner): a typo in
    /// `apiVersion`/`kind`, or its CustomResourceDefinition is not installed yet. Install
    /// the CRD or fix the object; nothing was applied.
    #[error(
        "the API server does not serve {api_version} {kind}: {}; install its CRD or fix apiVersion/kind",
        api_error_text(.error)
    )]
    UnknownKind {
        /// The `apiVersion` asked for.
        api_version: String,
        /// The `kind` asked for.
        kind: String,
        /// What discovery answered (its text is in the message: kube's own repeats it as a
        /// debug dump, so it is a field, not the cause).
        error: kube::Error,
    },

    /// API discovery failed for another reason (network, authorization, server error).
    /// Usually transient: retry with backoff.
    #[error("API discovery of {what} failed: {}; retry", api_error_text(.error))]
    Discovery {
        /// What was being discovered.
        what: String,
        /// The API server's answer (its text is in the message: kube's own repeats it as a
        /// debug dump, so it is a field, not the cause).
        error: kube::Error,
    },

    /// The owner is already the parent of an ApplySet that another tool manages (its
    /// `applyset.kubernetes.io/tooling` names another tool), or its
    /// `applyset.kubernetes.io/id` label is not the id this owner must have. ctop refuses to
    /// take such a set over; remove the label and annotations if the set is abandoned.
    #[error("{owner} is the parent of an ApplySet this applier must not manage: {reason}")]
    ForeignApplySet {
        /// The owner.
        owner: String,
        /// What does not match.
        reason: String,
    },

    /// Writing the ApplySet label and annotations on the owner failed. The owner needs
    /// `patch` permission on its own kind. Usually transient: retry with backoff. Children
    /// applied in this pass are in `report`; nothing was pruned.
    #[error(
        "cannot record the ApplySet on {owner}: {}; retry (the owner's kind needs the patch verb)",
        api_error_text(.error)
    )]
    OwnerUpdate {
        /// The owner.
        owner: String,
        /// The API server's answer (its text is in the message: kube's own repeats it as a
        /// debug dump, so it is a field, not the cause).
        error: kube::Error,
        /// What was done before.
        report: Box<ApplyReport>,
    },

    /// The owner no longer exists (or another object took its name): a child applied before
    /// and gone now (the garbage collector deletes the children of a deleted owner) is not
    /// created again. Nothing more is done; forget the owner.
    #[error("{owner} no longer exists; its children are not applied again")]
    OwnerGone {
        /// The owner.
        owner: String,
        /// What was done before.
        report: Box<ApplyReport>,
    },

    /// At least one child could not be applied (e.g. a 500, a 409 field-manager conflict
    /// without `force`, a 422 validation error). The other children were still applied,
    /// and **nothing was pruned** in this pass. Retry with backoff; a 422 needs the child
    /// fixed.
    #[error("{} of {} children failed to apply, nothing was pruned (first: {})", failures.len(), total, FirstFailure(failures))]
    Apply {
        /// The children that failed.
        failures: Vec<ChildFailure>,
        /// How many children were in the desired set.
        total: usize,
        /// What was applied or skipped.
        report: Box<ApplyReport>,
    },

    /// Every child was applied, but listing or deleting prune candidates failed (or the
    /// kind recorded on the owner could not be discovered). The objects not yet pruned
    /// stay until a later pass. Usually transient: retry with backoff; a 403 means the
    /// operator lacks `list`/`delete` on that kind.
    #[error("pruning failed at {what}: {}; retry", api_error_text(.error))]
    Prune {
        /// The list or delete that failed.
        what: String,
        /// The API server's answer (its text is in the message: kube's own repeats it as a
        /// debug dump, so it is a field, not the cause).
        error: kube::Error,
        /// What was done before (including what was already pruned).
        report: Box<ApplyReport>,
    },
}

impl ApplyError {
    /// What was applied, skipped and pruned before the failure, when anything was tried.
    #[must_use]
    pub fn report(&self) -> Option<&ApplyReport> {
        match self {
            Self::OwnerUpdate { report, .. }
            | Self::OwnerGone { report, .. }
            | Self::Apply { report, .. }
            | Self::Prune { report, .. } => Some(report),
            _ => None,
        }
    }

    /// `true` when the desired set or the owner is at fault, so that retrying with the same
    /// input cannot succeed (only a changed input can).
    #[must_use]
    pub fn is_invalid_input(&self) -> bool {
        matches!(
            self,
            Self::InvalidOwner { .. }
                | Self::InvalidChild { .. }
                | Self::CannotOwn { .. }
                | Self::Duplicate { .. }
                | Self::ForeignApplySet { .. }
        )
    }
}

struct FirstFailure<'a>(&'a [ChildFailure]);

impl fmt::Display for FirstFailure<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0.first() {
            Some(first) => first.fmt(f),
            None => f.write_str("none"),
        }
    }
}

/// Why [`StatusWriter::write`](crate::StatusWriter::write) did not complete.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StatusError {
    /// The object lacks `apiVersion`/`kind`, a name or a uid, or a condition of the patch is
    /// not a JSON object with a non-empty string `type`. Pass the object as read from the
    /// API server and fix the conditions; retrying does not help.
    #[error("cannot write the status of {object}: {reason}")]
    Invalid {
        /// The object, as far as it could be named.
        object: String,
        /// What is wrong.
        reason: String,
    },

    /// The kind has no status subresource, so status cannot be written separately from
    /// spec. Add `subresources: {status: {}}` to the CRD version.
    #[error("{kind} has no status subresource; add `subresources: {{status: {{}}}}` to its CRD")]
    NoStatusSubresource {
        /// The kind.
        kind: String,
    },

    /// Discovery of the object's kind failed. Retry with backoff; if the kind is unknown
    /// its CRD is missing.
    #[error("API discovery of {what} failed: {}; retry", api_error_text(.error))]
    Discovery {
        /// What was being discovered.
        what: String,
        /// The API server's answer (its text is in the message: kube's own repeats it as a
        /// debug dump, so it is a field, not the cause).
        error: kube::Error,
    },

    /// The API server refused the status write (e.g. 404 when the object was deleted, 422
    /// when the status does not match the CRD schema, 403 without `patch` on
    /// `<plural>/status`). Retry with backoff unless it is a 422.
    #[error("writing the status of {object} failed: {}", api_error_text(.error))]
    Write {
        /// The object.
        object: String,
        /// The API server's answer (its text is in the message: kube's own repeats it as a
        /// debug dump, so it is a field, not the cause).
        error: kube::Error,
    },
}

/// The kube-rs placeholder reason of an error answer whose body was not a `Status`.
const UNPARSED_REASON: &str = "Failed to parse error data";

/// The longest server message kept from an answer that was not a `Status` (an HTML page
/// from a proxy, say).
const RAW_MESSAGE_LIMIT: usize = 300;

/// `err` as a person reads it, the way kubectl prints API errors.
///
/// - An answer of the API server (`kube::Error::Api`): `<code> <reason>: <message>`, e.g.
///   `422 Invalid: Secret "x" is invalid: data.token: Invalid value: ...`, or
///   `404 NotFound: configmaps "x" not found`. Field causes the message does not already
///   name are added in parentheses; an answer without a `Status` body gets the reason its
///   code stands for and its (shortened) body as the message.
/// - Any other error (transport, TLS, decoding, discovery): a short sentence followed by
///   the chain of causes joined by `": "`, e.g. `cannot reach the API server: client error
///   (Connect): tcp connect error: Connection refused (os error 111)`.
///
/// ```
/// use kube::core::Status;
///
/// let err = kube::Error::Api(Box::new(
///     Status::failure(r#"configmaps "x" not found"#, "NotFound").with_code(404),
/// ));
/// assert_eq!(ctop_applier::api_error_text(&err), r#"404 NotFound: configmaps "x" not found"#);
/// ```
#[must_use]
pub fn api_error_text(err: &kube::Error) -> String {
    use kube::error::DiscoveryError as D;
    match err {
        kube::Error::Api(status) => status_text(status),
        kube::Error::HyperError(e) => lead_and_causes("cannot reach the API server", e),
        kube::Error::Service(e) => lead_and_causes("the request to the API server failed", e.as_ref()),
        kube::Error::SerdeError(e) => lead_and_causes("cannot decode the API server's answer", e),
        kube::Error::FromUtf8(e) => lead_and_causes("the API server's answer is not UTF-8", e),
        kube::Error::ReadEvents(e) => lead_and_causes("cannot read the API server's stream", e),
        kube::Error::HttpError(e) => lead_and_causes("cannot build the HTTP request", e),
        kube::Error::BuildRequest(e) => lead_and_causes("cannot build the request", e),
        kube::Error::Auth(e) => lead_and_causes("cannot authenticate to the API server", e),
        kube::Error::Discovery(D::InvalidGroupVersion(gv)) => format!("invalid apiVersion {gv:?}"),
        kube::Error::Discovery(D::MissingKind(kind)) => {
            format!("the API server does not serve the kind {kind}")
        }
        kube::Error::Discovery(D::MissingApiGroup(group)) => {
            format!("the API server does not serve the API group {group:?}")
        }
        kube::Error::Discovery(D::MissingResource(resource)) => {
            format!("the API server does not serve the resource {resource:?}")
        }
        kube::Error::Discovery(D::EmptyApiGroup(group)) => {
            format!("the API group {group:?} serves no version")
        }
        other => ctop_core::Chain(other).to_string(),
    }
}

/// `<code> <reason>: <message>` of a `Status` answer.
fn status_text(status: &kube::core::Status) -> String {
    let raw = status.reason == UNPARSED_REASON;
    let reason = if status.reason.is_empty() || raw { reason_of_code(status.code) } else { &status.reason };
    let mut head = String::new();
    if status.code != 0 {
        head.push_str(&status.code.to_string());
    }
    if !reason.is_empty() {
        if !head.is_empty() {
            head.push(' ');
        }
        head.push_str(reason);
    }
    let mut message = if raw { shorten(&status.message) } else { status.message.trim().to_owned() };
    let unnamed: Vec<String> = status
        .details
        .iter()
        .flat_map(|d| &d.causes)
        .filter(|c| !c.message.is_empty() || !c.field.is_empty())
        .filter(|c| !(message.contains(&c.message) && message.contains(&c.field)))
        .map(|c| match (c.field.is_empty(), c.message.is_empty()) {
            (true, _) => c.message.clone(),
            (false, true) => c.field.clone(),
            (false, false) => format!("{}: {}", c.field, c.message),
        })
        .collect();
    if !unnamed.is_empty() {
        let unnamed = unnamed.join("; ");
        message = if message.is_empty() { unnamed } else { format!("{message} ({unnamed})") };
    }
    match (head.is_empty(), message.is_empty()) {
        (_, true) => head,
        (true, false) => message,
        (false, false) => format!("{head}: {message}"),
    }
}

/// The `metav1.StatusReason` the API server gives an HTTP code (apimachinery's
/// `NewGenericServerResponse`), for answers that carry none.
fn reason_of_code(code: u16) -> &'static str {
    match code {
        400 => "BadRequest",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "NotFound",
        405 => "MethodNotAllowed",
        406 => "NotAcceptable",
        409 => "Conflict",
        410 => "Expired",
        413 => "RequestEntityTooLarge",
        415 => "UnsupportedMediaType",
        422 => "Invalid",
        429 => "TooManyRequests",
        500 => "InternalError",
        503 => "ServiceUnavailable",
        504 => "Timeout",
        _ => "",
    }
}

/// A raw answer body on one line, cut to [`RAW_MESSAGE_LIMIT`] characters.
fn shorten(body: &str) -> String {
    let line = body.split_whitespace().collect::<Vec<_>>().join(" ");
    match line.char_indices().nth(RAW_MESSAGE_LIMIT) {
        Some((at, _)) => format!("{}...", &line[..at]),
        None => line,
    }
}

/// `lead: <err>: <its cause>: ...`.
fn lead_and_causes(lead: &str, err: &(dyn std::error::Error + 'static)) -> String {
    format!("{lead}: {}", ctop_core::Chain(err))
}

#[cfg(test)]
mod tests {
    use kube::core::Status;
    use kube::core::response::{StatusCause, StatusDetails};

    use super::*;

    fn api(status: Status) -> kube::Error {
        kube::Error::Api(Box::new(status))
    }

    fn cause(field: &str, message: &str) -> StatusCause {
        StatusCause { reason: "FieldValueInvalid".into(), message: message.into(), field: field.into() }
    }

    fn details(causes: Vec<StatusCause>) -> StatusDetails {
        StatusDetails {
            name: "x".into(),
            group: String::new(),
            kind: "Secret".into(),
            uid: String::new(),
            causes,
            retry_after_seconds: 0,
        }
    }

    #[test]
    fn an_api_answer_is_said_once_in_the_chain() {
        let error = api(Status::failure("configmaps \"x\" is forbidden", "Forbidden").with_code(403));
        let err = StatusError::Write { object: "App default/a".into(), error };
        let line = ctop_core::Chain(&err).to_string();
        assert_eq!(line, err.to_string(), "kube's own text (a debug dump of the answer) is not appended");
        assert_eq!(line.matches("is forbidden").count(), 1, "{line}");
    }

    #[test]
    fn invalid_reads_like_kubectl() {
        let message =
            r#"Secret "x" is invalid: data[token]: Invalid value: "not base64": illegal base64 data"#;
        let err = api(Status::failure(message, "Invalid").with_code(422).with_details(details(vec![cause(
            "data[token]",
            r#"Invalid value: "not base64": illegal base64 data"#,
        )])));
        let text = api_error_text(&err);
        assert_eq!(text, format!("422 Invalid: {message}"), "causes already in the message are not repeated");
        assert!(!text.contains("Status {"), "{text}");

        // Causes the message does not name are added.
        let err = api(Status::failure(r#"App.apps.example.com "web" is invalid"#, "Invalid")
            .with_code(422)
            .with_details(details(vec![
                cause("spec.replicas", "Invalid value: \"x\": must be an integer"),
                cause("", "bad"),
            ])));
        assert_eq!(
            api_error_text(&err),
            r#"422 Invalid: App.apps.example.com "web" is invalid (spec.replicas: Invalid value: "x": must be an integer; bad)"#
        );
    }

    #[test]
    fn not_found_and_bodies_that_are_no_status() {
        let err = api(Status::failure(r#"secrets "x" not found"#, "NotFound").with_code(404));
        assert_eq!(api_error_text(&err), r#"404 NotFound: secrets "x" not found"#);

        // What kube-rs makes of a plain-text 404 (e.g. a CRD that is not installed).
        let err = api(Status::failure("404 page not found\n", UNPARSED_REASON).with_code(404));
        assert_eq!(api_error_text(&err), "404 NotFound: 404 page not found");
        let long = format!("<html>{}</html>", "x".repeat(1000));
        let text = api_error_text(&api(Status::failure(&long, UNPARSED_REASON).with_code(502)));
        assert!(text.starts_with("502: <html>xxx") && text.ends_with("...") && text.len() < 320, "{text}");

        let err = api(Status::failure("", "").with_code(500));
        assert_eq!(api_error_text(&err), "500 InternalError");
    }

    #[test]
    fn other_errors_join_their_causes() {
        let io = std::io::Error::new(std::io::ErrorKind::InvalidData, "stream closed");
        assert_eq!(
            api_error_text(&kube::Error::ReadEvents(io)),
            "cannot read the API server's stream: stream closed"
        );
        let serde = serde_json::from_str::<serde_json::Value>("{").expect_err("truncated JSON");
        let text = api_error_text(&kube::Error::SerdeError(serde));
        assert!(text.starts_with("cannot decode the API server's answer: EOF"), "{text}");
        let missing = kube::Error::Discovery(kube::error::DiscoveryError::MissingKind(
            "Widget in example.com/v1".into(),
        ));
        assert_eq!(
            api_error_text(&missing),
            "the API server does not serve the kind Widget in example.com/v1"
        );
    }

    #[test]
    fn child_failures_name_the_child() {
        let failure = ChildFailure {
            child: ChildRef {
                api_version: "v1".into(),
                kind: "Secret".into(),
                namespace: Some("default".into()),
                name: "x".into(),
            },
            error: ChildError::Api(api(
                Status::failure(r#"Secret "x" is invalid: data: bad"#, "Invalid").with_code(422)
            )),
        };
        assert_eq!(failure.to_string(), r#"Secret default/x: 422 Invalid: Secret "x" is invalid: data: bad"#);
    }
}

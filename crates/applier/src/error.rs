//! What can go wrong, and what to do about it.

use std::fmt;

use crate::ApplyReport;
use crate::object::ChildRef;

/// One child whose server-side apply the API server refused.
#[derive(Debug)]
pub struct ChildFailure {
    /// The child.
    pub child: ChildRef,
    /// The API server's answer (or the transport error).
    pub error: kube::Error,
}

impl fmt::Display for ChildFailure {
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
        "the API server does not serve {api_version} {kind}: {source}; install its CRD or fix apiVersion/kind"
    )]
    UnknownKind {
        /// The `apiVersion` asked for.
        api_version: String,
        /// The `kind` asked for.
        kind: String,
        /// What discovery answered.
        source: kube::Error,
    },

    /// API discovery failed for another reason (network, authorization, server error).
    /// Usually transient: retry with backoff.
    #[error("API discovery of {what} failed: {source}; retry")]
    Discovery {
        /// What was being discovered.
        what: String,
        /// The underlying error.
        source: kube::Error,
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
    #[error("cannot record the ApplySet on {owner}: {source}; retry (the owner's kind needs the patch verb)")]
    OwnerUpdate {
        /// The owner.
        owner: String,
        /// The underlying error.
        source: kube::Error,
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
    #[error("pruning failed at {what}: {source}; retry")]
    Prune {
        /// The list or delete that failed.
        what: String,
        /// The underlying error.
        source: kube::Error,
        /// What was done before (including what was already pruned).
        report: Box<ApplyReport>,
    },
}

impl ApplyError {
    /// What was applied, skipped and pruned before the failure, when anything was tried.
    #[must_use]
    pub fn report(&self) -> Option<&ApplyReport> {
        match self {
            Self::OwnerUpdate { report, .. } | Self::Apply { report, .. } | Self::Prune { report, .. } => {
                Some(report)
            }
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
    /// The object lacks `apiVersion`/`kind`, a name or a uid, or the status given is not a
    /// JSON object. Pass the object as read from the API server and an object as status.
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
    #[error("API discovery of {what} failed: {source}; retry")]
    Discovery {
        /// What was being discovered.
        what: String,
        /// The underlying error.
        source: kube::Error,
    },

    /// The API server refused the status write (e.g. 404 when the object was deleted, 422
    /// when the status does not match the CRD schema, 403 without `patch` on
    /// `<plural>/status`). Retry with backoff unless it is a 422.
    #[error("writing the status of {object} failed: {source}")]
    Write {
        /// The object.
        object: String,
        /// The underlying error.
        source: kube::Error,
    },
}

//! Ownership before adoption: a pass never takes over an object it did not make.
//!
//! Server-side apply creates an object that is missing and merges into one that exists, so
//! applying a child named like an object someone else made (a Namespace created by hand,
//! another tool's ConfigMap) would put the owner reference and ApplySet label on it, and
//! deleting the owner would then garbage-collect it. Before a child is applied for the
//! first time in a pass, its live object is looked up (in the caller's cache when that
//! cache holds every object of the kind, else with a metadata `GET`): an object that
//! exists is a child only when it names this owner's uid in its owner references or
//! carries this owner's ApplySet `part-of` label (KEP-3659: a set's member, e.g. a child
//! left by an orphaning deletion of an owner of the same name). Anything else fails that
//! child with [`ChildError::NotOurs`], naming who holds it, unless the desired child was
//! marked [`Desired::adopt`]; an object another controller controls is never taken over.
//! As Helm's ownership check and kubectl's ApplySets, this looks before writing: an object
//! created between the look and the apply (milliseconds) is still adopted.

use std::fmt;

use serde_json::Value;

use crate::applyset::PART_OF_LABEL;
use crate::cache::CachedMeta;

/// One desired child: the object, and whether an existing object of that name that is not
/// already a child may be taken over.
#[derive(Clone, Debug, PartialEq)]
pub struct Desired {
    /// The complete object (`apiVersion`, `kind`, `metadata.name`).
    pub object: Value,
    /// Take over an existing object that is not a child of the owner (it gets the owner
    /// reference and the ApplySet label). An object controlled by another owner is never
    /// taken over.
    pub adopt: bool,
}

impl From<Value> for Desired {
    /// A child that is never adopted.
    fn from(object: Value) -> Self {
        Self { object, adopt: false }
    }
}

/// Why one child was not applied.
#[derive(Debug)]
pub enum ChildError {
    /// The API server refused the apply (or the transport failed).
    Api(kube::Error),
    /// The object exists and is not a child of the owner; it was left as it is.
    NotOurs {
        /// The owner, `Kind namespace/name`.
        owner: String,
        /// Who holds the object instead, as a sentence part ("it has no owner", "it is
        /// controlled by Tenant other").
        holder: String,
        /// Whether the object is controlled by another owner (then even an adopting
        /// child cannot take it).
        controlled: bool,
    },
}

impl fmt::Display for ChildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Api(e) => f.write_str(&crate::api_error_text(e)),
            Self::NotOurs { owner, holder, controlled: false } => write!(
                f,
                "it exists and is not a child of {owner} ({holder}); it is left as it is, not adopted"
            ),
            Self::NotOurs { owner, holder, controlled: true } => write!(
                f,
                "it exists and is not a child of {owner} ({holder}); an object another owner controls is never adopted"
            ),
        }
    }
}

/// Whether the live object `meta` is a child of the owner `owner_uid` whose ApplySet is
/// `set_id`; when it is not, who holds it and whether another owner controls it.
pub(crate) fn holder(meta: &dyn CachedMeta, owner_uid: &str, set_id: &str) -> Option<(String, bool)> {
    let refs = meta.owner_references();
    if refs.iter().any(|r| r.uid == owner_uid) || meta.label(PART_OF_LABEL) == Some(set_id) {
        return None;
    }
    let named =
        |r: &k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference| format!("{} {}", r.kind, r.name);
    if let Some(c) = refs.iter().find(|r| r.controller == Some(true)) {
        return Some((format!("it is controlled by {}", named(c)), true));
    }
    let mut parts = Vec::new();
    if !refs.is_empty() {
        let owners: Vec<String> = refs.iter().map(named).collect();
        parts.push(format!("it is owned by {}", owners.join(", ")));
    }
    if let Some(other) = meta.label(PART_OF_LABEL) {
        parts.push(format!("it belongs to the ApplySet {other}"));
    }
    if parts.is_empty() {
        parts.push("it has no owner reference and no ApplySet label: something else made it".to_owned());
    }
    Some((parts.join("; "), false))
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

    fn meta(refs: Vec<OwnerReference>, part_of: Option<&str>) -> ObjectMeta {
        ObjectMeta {
            name: Some("team-a".into()),
            owner_references: Some(refs),
            labels: part_of.map(|s| [(PART_OF_LABEL.to_owned(), s.to_owned())].into()),
            ..ObjectMeta::default()
        }
    }

    fn owner_ref(kind: &str, name: &str, uid: &str, controller: bool) -> OwnerReference {
        OwnerReference {
            api_version: "x/v1".into(),
            kind: kind.into(),
            name: name.into(),
            uid: uid.into(),
            controller: Some(controller),
            ..OwnerReference::default()
        }
    }

    fn holds(m: &ObjectMeta) -> Option<(String, bool)> {
        holder(&crate::cache::Meta(m), "mine", "applyset-mine")
    }

    #[test]
    fn only_the_owner_uid_or_its_applyset_make_a_child() {
        assert_eq!(holds(&meta(vec![owner_ref("Tenant", "a", "mine", true)], None)), None);
        assert_eq!(holds(&meta(vec![], Some("applyset-mine"))), None, "a member of the set");
        assert_eq!(
            holds(&meta(vec![], None)),
            Some(("it has no owner reference and no ApplySet label: something else made it".into(), false))
        );
        assert_eq!(
            holds(&meta(vec![owner_ref("Tenant", "b", "theirs", true)], Some("applyset-theirs"))),
            Some(("it is controlled by Tenant b".into(), true))
        );
        assert_eq!(
            holds(&meta(vec![owner_ref("Tenant", "b", "theirs", false)], Some("applyset-theirs"))),
            Some(("it is owned by Tenant b; it belongs to the ApplySet applyset-theirs".into(), false))
        );
    }
}

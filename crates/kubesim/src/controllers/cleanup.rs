//! What the cluster's cleanup controllers (`gc`: garbage collection, namespace and CRD
//! cleanup) are told after each commit: the [`Work`] a change gives them ([`work_for`]),
//! from the change and the [`Role`] of its object. The API computes it and sends it; the
//! controllers act through the API. Neither module imports the other's internals.

use std::sync::Arc;

use serde_json::Value;

use crate::kinds::meta::deleting;
use crate::kinds::registry::{CrdVersion, StoreKey};
use crate::store::{Change, EventKind, ObjKey, uid_of};

/// What kind of object a committed change is about, as far as cleanup cares.
#[derive(Clone, Debug)]
pub enum Role {
    /// A CustomResourceDefinition.
    Crd,
    /// A Namespace.
    Namespace,
    /// A custom resource, served by this CRD version.
    CustomResource(Arc<CrdVersion>),
    /// Any other object.
    Other,
}

/// One piece of work for the collector.
#[derive(Clone, Debug)]
pub enum Work {
    /// The object with this uid is gone: look at its dependents.
    OwnerGone(String),
    /// The object with this uid changed or lost a dependent: finish a foreground or
    /// orphan deletion if it is in one.
    Owner(String),
    /// This object has owner references: check that its owners exist.
    Dependent(StoreKey, ObjKey),
    /// This namespace may be terminating.
    Namespace(String),
    /// This CRD may be terminating.
    CrdCleanup(String),
}

/// A piece of work as the collector receives it: what to look at, and the request-write
/// log entry of the change that gave it (see [`crate::store::RequestWrite`]), so that the
/// writes it leads to are logged as that write's consequences.
#[derive(Clone, Debug)]
pub struct Task {
    /// What to look at.
    pub work: Work,
    /// The sequence number of the logged change that gave the work, if it was logged.
    pub because: Option<u64>,
}

/// What a committed change gives the collector to look at (computed as the change commits,
/// so that only these few strings wait in the collector's queue, not the objects).
pub fn work_for(change: &Change, role: &Role) -> Vec<Work> {
    let obj = &change.object;
    let mut work = Vec::new();
    if matches!(role, Role::Crd)
        && change.kind != EventKind::Deleted
        && deleting(obj)
        && let Some(name) = obj.pointer("/metadata/name").and_then(Value::as_str)
    {
        work.push(Work::CrdCleanup(name.to_owned()));
    }
    match change.kind {
        EventKind::Deleted => {
            if let Some(uid) = uid_of(obj) {
                work.push(Work::OwnerGone(uid.to_owned()));
            }
            let old_owners = change
                .old
                .as_deref()
                .and_then(|o| o.pointer("/metadata/ownerReferences"))
                .and_then(Value::as_array);
            for r in old_owners.into_iter().flatten() {
                if let Some(uid) = r["uid"].as_str() {
                    work.push(Work::Owner(uid.to_owned()));
                }
            }
            if let Some(ns) = obj.pointer("/metadata/namespace").and_then(Value::as_str) {
                work.push(Work::Namespace(ns.to_owned()));
            }
            if let Role::CustomResource(crd) = role {
                work.push(Work::CrdCleanup(crd.crd_name.clone()));
            }
        }
        _ => {
            if obj.pointer("/metadata/ownerReferences").is_some() {
                work.push(Work::Dependent(change.store.clone(), name_ns(obj)));
            }
            if deleting(obj) {
                if let Some(uid) = uid_of(obj) {
                    work.push(Work::Owner(uid.to_owned()));
                }
                if matches!(role, Role::Namespace) {
                    let name = obj.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
                    work.push(Work::Namespace(name.to_owned()));
                }
            }
        }
    }
    work
}

/// An object's `(namespace, name)`, its key in its store.
pub(crate) fn name_ns(obj: &Value) -> (String, String) {
    let s = |p: &str| obj.pointer(p).and_then(Value::as_str).unwrap_or_default().to_owned();
    (s("/metadata/namespace"), s("/metadata/name"))
}

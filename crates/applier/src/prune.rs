//! Finding and deleting former children.
//!
//! Candidates are listed, never guessed (from the caller's caches when it has them, see
//! [`crate::ChildCache`]): for every group-kind recorded on the owner or
//! being applied, a label-selected list (`applyset.kubernetes.io/part-of=<id>`) in the
//! owner's namespace and each recorded additional namespace (for a cluster-scoped owner:
//! cluster-wide for cluster-scoped kinds, and in each recorded namespace for namespaced
//! kinds). A listed object is deleted only when it is also tied to this owner (an owner
//! reference to its uid; in another namespace than a namespaced owner's, the
//! `ctop.dev/owner` annotation naming it), is not in the desired set, is not
//! already being deleted and has not opted out with `ctop.dev/prune: "false"`. Deletes carry
//! uid and resourceVersion preconditions, so neither an object re-created under the same
//! name meanwhile nor one changed since it was read (say, orphaned by its owner's deletion)
//! is hit on stale grounds; such a one is left to the next pass. They use background
//! propagation, so the object's own dependents are garbage-collected.
//!
//! A cache may lag behind the applier's own writes: a child applied by the last pass may not
//! be in it yet. So a child the applier remembers applying under this owner that a cached
//! list does not show is read from the API server and judged the same way; without that, a
//! pass that wants no children would find none, drop the owner's record, and leave the child
//! for good.

use std::collections::BTreeSet;

use foldhash::{HashMap, HashSet};
use std::sync::Arc;

use kube::Client;
use kube::api::ListParams;

use crate::ApplyReport;
use crate::applyset::{GroupKind, OWNER_ANNOTATION, PART_OF_LABEL, PRUNE_ANNOTATION};
use crate::cache::CachedMeta;
use crate::delete::{Deletion, delete_as_read};
use crate::discovery::{Discovery, Resolved, code};
use crate::object::{ChildRef, Key, ObjectInfo};

/// Where and what to prune.
pub(crate) struct Scope<'a> {
    pub(crate) owner: &'a ObjectInfo,
    pub(crate) set_id: &'a str,
    /// Every group-kind that may have members.
    pub(crate) kinds: &'a BTreeSet<GroupKind>,
    /// Every namespace besides the owner's own that may have members.
    pub(crate) namespaces: &'a BTreeSet<String>,
    /// The desired set: never pruned.
    pub(crate) keep: &'a HashSet<Key>,
    /// Kinds already resolved while applying.
    pub(crate) known: &'a HashMap<GroupKind, Resolved>,
    /// The caller's caches, asked before listing.
    pub(crate) cache: Option<&'a dyn crate::cache::ChildCache>,
    /// The children the applier remembers applying under this owner.
    pub(crate) remembered: &'a [Key],
}

/// Delete the former children in `scope`, adding them to `report.pruned` (and opted-out
/// ones to `report.kept`). Returns the former children left in place (opted out), or what
/// failed.
pub(crate) async fn prune(
    client: &Client,
    discovery: &Discovery,
    scope: &Scope<'_>,
    report: &mut ApplyReport,
) -> Result<Vec<ChildRef>, (String, kube::Error)> {
    let owner = scope.owner;
    let selector = ListParams::default().labels(&format!("{PART_OF_LABEL}={}", scope.set_id));
    let owner_named = owner.describe();
    let mut left = Vec::new();
    for gk in scope.kinds {
        let resolved = match scope.known.get(gk) {
            Some(r) => r.clone(),
            None => match discovery.group_kind(gk).await {
                Ok(Some(r)) => r,
                // Not served any more (its CRD was removed): no member can be left.
                Ok(None) => continue,
                Err(e) => return Err((format!("discovery of {gk}"), e)),
            },
        };
        let places: Vec<Option<&str>> = match (owner.namespace.as_deref(), resolved.namespaced) {
            (Some(ns), true) => std::iter::once(ns)
                .chain(scope.namespaces.iter().map(String::as_str).filter(|n| *n != ns))
                .map(Some)
                .collect(),
            // A cluster-scoped object cannot be owned by a namespaced owner.
            (Some(_), false) => continue,
            (None, true) => scope.namespaces.iter().map(|ns| Some(ns.as_str())).collect(),
            (None, false) => vec![None],
        };
        for place in places {
            let cached = scope.cache.and_then(|c| {
                c.members(&resolved.resource.api_version, &resolved.resource.kind, place, scope.set_id)
            });
            let from_cache = cached.is_some();
            let mut listed: Vec<Arc<dyn CachedMeta>> = match cached {
                Some(items) => items,
                None => match resolved.api(client, place).list_metadata(&selector).await {
                    Ok(list) => list.items.into_iter().map(|i| Arc::new(i) as Arc<dyn CachedMeta>).collect(),
                    Err(e) if code(&e) == Some(404) => {
                        discovery.forget(&resolved.resource);
                        continue;
                    }
                    Err(e) => {
                        return Err((format!("listing {gk} in {}", place.unwrap_or("the cluster")), e));
                    }
                },
            };
            if from_cache {
                listed.extend(missed(client, &resolved, gk, place, scope, &listed).await?);
            }
            for object in listed {
                let (Some(name), Some(uid)) = (object.name(), object.uid()) else { continue };
                let labelled = object.label(PART_OF_LABEL) == Some(scope.set_id);
                let owned = object.owner_references().iter().any(|r| r.uid == owner.uid)
                    || (owner.namespace.is_some()
                        && object.namespace() != owner.namespace.as_deref()
                        && object.annotation(OWNER_ANNOTATION) == Some(owner_named.as_str()));
                if !labelled || !owned || object.is_deleting() {
                    continue;
                }
                let child = ChildRef {
                    api_version: resolved.resource.api_version.clone(),
                    kind: resolved.resource.kind.clone(),
                    namespace: object.namespace().map(str::to_owned).filter(|_| resolved.namespaced),
                    name: name.to_owned(),
                };
                if scope.keep.contains(&child.key()) {
                    continue;
                }
                let opted_out = object.annotation(PRUNE_ANNOTATION) == Some("false");
                if opted_out {
                    tracing::debug!(%child, "left the desired set but opted out of pruning");
                    report.kept.push(child.clone());
                    left.push(child);
                    continue;
                }
                let api = resolved.api(client, child.namespace.as_deref());
                match delete_as_read(&api, &child.name, Some(uid), object.resource_version()).await {
                    Ok(Deletion::Deleted) => {
                        tracing::debug!(%child, "pruned");
                        report.pruned.push(child);
                    }
                    Ok(Deletion::Gone) => {}
                    // Replaced under the same name, or changed since it was read: left for
                    // the next pass to look at again (its kind stays recorded).
                    Ok(Deletion::Changed) => {
                        tracing::debug!(%child, "changed since it was read; pruning it is left to the next pass");
                        left.push(child);
                    }
                    Err(e) => return Err((format!("deleting {child}"), e)),
                }
            }
        }
    }
    Ok(left)
}

/// The children of kind `gk` in `place` that the applier remembers applying under this owner
/// and that the cached `listed` does not show, as the API server has them now (gone ones
/// left out).
async fn missed(
    client: &Client,
    resolved: &Resolved,
    gk: &GroupKind,
    place: Option<&str>,
    scope: &Scope<'_>,
    listed: &[Arc<dyn CachedMeta>],
) -> Result<Vec<Arc<dyn CachedMeta>>, (String, kube::Error)> {
    let seen: HashSet<&str> = listed.iter().filter_map(|o| o.name()).collect();
    let mut out: Vec<Arc<dyn CachedMeta>> = Vec::new();
    for key in scope.remembered.iter().filter(|k| {
        k.group_kind == *gk
            && k.namespace.as_deref() == place.filter(|_| resolved.namespaced)
            && !seen.contains(k.name.as_str())
            && !scope.keep.contains(*k)
    }) {
        match resolved.api(client, place).get_metadata_opt(&key.name).await {
            Ok(Some(object)) => {
                tracing::debug!(kind = %gk, name = key.name, "a remembered child the cache does not show yet");
                out.push(Arc::new(object));
            }
            Ok(None) => {}
            Err(e) => return Err((format!("reading {gk} {}", key.name), e)),
        }
    }
    Ok(out)
}

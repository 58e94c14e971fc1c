//! What an [`Applier`] remembers of each owner between passes, for the unchanged-skip: the
//! last successful apply of each child (what was sent, what the server answered, what ties
//! it to its owner) and the group-kinds and namespaces last recorded on the owner. Dropped
//! with [`Applier::forget`] when the owner goes.

use std::collections::BTreeSet;

use foldhash::HashMap;

use crate::answer::AnswerMeta;

use crate::apply::{Applier, Live, Prepared};
use crate::applyset::GroupKind;
use crate::cache::{CachedMeta, ChildCache, Meta};
use crate::error::api_error_text;
use crate::fingerprint::Fingerprint;
use crate::object::{ChildRef, Key, ObjectInfo};

/// What the applier remembers of one owner between passes.
#[derive(Debug, Default)]
pub(crate) struct OwnerMemory {
    /// The last successful apply of each child.
    pub(crate) applied: HashMap<Key, Applied>,
    /// The group-kinds and namespaces last recorded on the owner (in case the caller hands
    /// in an owner read before that write).
    pub(crate) group_kinds: BTreeSet<GroupKind>,
    pub(crate) namespaces: BTreeSet<String>,
}

/// The last successful apply of a child: what was sent and what the server answered.
#[derive(Clone, Debug)]
pub(crate) struct Applied {
    pub(crate) hash: Fingerprint,
    pub(crate) uid: String,
    pub(crate) marker: Marker,
    /// The labels and annotations the apply set (a live object must still carry them).
    pub(crate) labels: Vec<(String, String)>,
    pub(crate) annotations: Vec<(String, String)>,
    pub(crate) tie: Tie,
}

/// What ties a child to its owner.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Tie {
    /// A controller owner reference (and the `part-of` label): the garbage collector
    /// deletes the child with its owner.
    Reference,
    /// The `part-of` label and the `ctop.dev/owner` annotation alone, for a child in
    /// another namespace than its namespaced owner: pruned by the applier, and deleted with
    /// the owner only by the caller (a finalizer on the owner).
    Label,
}

/// What tells that a live object is still the one our apply produced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Marker {
    /// For kinds with a status subresource: any change outside metadata and status bumps
    /// the generation, while status updates by the child's own controller do not.
    Generation(i64),
    /// For every other kind: any change at all.
    ResourceVersion(String),
}

impl Applier {
    /// Drop what is remembered of an owner (call it when the owner is deleted). Only the
    /// unchanged-skip uses this memory: a forgotten owner's children are applied again on
    /// its next pass.
    pub fn forget(&self, owner_uid: &str) {
        self.memory.lock().remove(owner_uid);
    }

    /// The owners this applier remembers something of (see [`Applier::forget`]); a caller
    /// that forgets each owner it deletes sees this fall back as they go.
    #[must_use]
    pub fn remembered(&self) -> usize {
        self.memory.lock().len()
    }

    /// Whether each of `children` is in `cache` exactly as this applier's last apply of it
    /// for `owner_uid` left it: the same object, not changed since (its generation for
    /// kinds with a status, else its resourceVersion), still carrying the labels and
    /// annotations applied and the owner reference. `false` for a child this applier has
    /// not applied (or has forgotten). A controller that skips a reconcile whose inputs did
    /// not change relies on it: the children of the last outcome are still in place.
    pub fn children_intact(&self, owner_uid: &str, children: &[ChildRef], cache: &dyn ChildCache) -> bool {
        let memory = self.memory.lock();
        let Some(m) = memory.get(owner_uid) else { return children.is_empty() };
        children.iter().all(|child| {
            m.applied
                .get(&child.key())
                .is_some_and(|last| cache.get(child).is_some_and(|live| still_ours(last, &*live, owner_uid)))
        })
    }

    /// Whether `p` can be skipped: the same content was applied before and the live object
    /// is still what that apply produced, with our labels, annotations and owner reference.
    pub(crate) async fn unchanged(&self, owner_uid: &str, p: &Prepared, live: Live<'_>) -> bool {
        let last = {
            let memory = self.memory.lock();
            memory.get(owner_uid).and_then(|m| m.applied.get(&p.key)).filter(|a| a.hash == p.hash).cloned()
        };
        let Some(last) = last else { return false };
        let ours = |meta: &dyn CachedMeta| still_ours(&last, meta, owner_uid);
        match live {
            Live::Cache(observed) => observed(&p.child).is_some_and(|meta| ours(&Meta(&meta))),
            Live::Cached(cache) => cache.get(&p.child).is_some_and(|o| ours(&*o)),
            Live::Server => match p
                .kind
                .api(&self.client, p.child.namespace.as_deref())
                .get_metadata_opt(&p.child.name)
                .await
            {
                Ok(found) => found.is_some_and(|o| ours(&Meta(&o.metadata))),
                Err(error) => {
                    tracing::debug!(
                        child = %p.child,
                        error = %api_error_text(&error),
                        "cannot read the live object; applying"
                    );
                    false
                }
            },
        }
    }

    pub(crate) fn remember(&self, owner_uid: &str, p: &Prepared, result: &AnswerMeta) {
        let Some(uid) = result.uid.clone() else { return };
        let marker = match (p.kind.status, result.generation) {
            (true, Some(g)) => Marker::Generation(g),
            _ => match result.resource_version.clone() {
                Some(rv) => Marker::ResourceVersion(rv),
                None => return,
            },
        };
        let mut memory = self.memory.lock();
        let m = memory.entry(owner_uid.to_owned()).or_default();
        let kept = |field: &str| -> Vec<(String, String)> {
            p.body["metadata"][field]
                .as_object()
                .map(|m| m.iter().filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned()))).collect())
                .unwrap_or_default()
        };
        let (labels, annotations) = (kept("labels"), kept("annotations"));
        m.applied
            .insert(p.key.clone(), Applied { hash: p.hash, uid, marker, labels, annotations, tie: p.tie });
    }

    pub(crate) fn remember_record(
        &self,
        owner: &ObjectInfo,
        kinds: &BTreeSet<GroupKind>,
        namespaces: &BTreeSet<String>,
    ) {
        if kinds.is_empty() && namespaces.is_empty() && !self.memory.lock().contains_key(&owner.uid) {
            return;
        }
        let mut memory = self.memory.lock();
        let m = memory.entry(owner.uid.clone()).or_default();
        m.group_kinds = kinds.clone();
        m.namespaces = namespaces.clone();
    }
}

/// Whether the live object `meta` is still what the apply recorded in `last` produced.
pub(crate) fn still_ours(last: &Applied, meta: &dyn CachedMeta, owner_uid: &str) -> bool {
    let same_object = meta.uid() == Some(&last.uid) && !meta.is_deleting();
    let untouched = match &last.marker {
        Marker::Generation(g) => meta.generation() == Some(*g),
        Marker::ResourceVersion(rv) => meta.resource_version() == Some(rv),
    };
    let labels_kept = last.labels.iter().all(|(k, v)| meta.label(k) == Some(v));
    let annotations_kept = last.annotations.iter().all(|(k, v)| meta.annotation(k) == Some(v));
    // A child tied by label is held by its labels and annotations, checked above.
    let owned = last.tie == Tie::Label
        || meta.owner_references().iter().any(|r| r.uid == owner_uid && r.controller == Some(true));
    same_object && untouched && labels_kept && annotations_kept && owned
}

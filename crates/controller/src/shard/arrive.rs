//! A member's side of receiving a moved object ([`Arrivals`]): its first reconcile here
//! waits until the children it arrived with are in this member's caches.
//!
//! The children are relabelled before the object (by the old member, or by the sharder
//! for a member that is gone), but each kind has its own watch, so the object's event can
//! reach this member before its children's. A reconcile then would find no children, and
//! a script that keeps something it drew once in a child (a generated password, read back
//! with `getObserved`) would draw it again. So an object that arrives after the first list
//! carrying an ApplySet id (it has had children: it is not new) is held until each child
//! the API server lists under this member's label for it is in the cache.
//!
//! The lists are shared: one list per managed kind of every child labelled for this member
//! serves every object that arrived before it started. A rebalance that brings thousands of
//! objects costs a few lists, not one per object (which, at 10,000 objects, kept the API
//! server busy long enough for Lease renewals to time out).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use ctop_applier::applyset::{ID_LABEL, PART_OF_LABEL, applyset_id};
use kube::api::{Api, DynamicObject};
use tokio::time::Instant;

use super::pages::Pages;
use crate::cluster::api_for;
use crate::context::Ctx;
use crate::error::api_error_text;
use crate::object::Object;
use crate::object::object_key;

/// Longest wait for a moved object's children to reach the caches.
const PRIME_LIMIT: Duration = Duration::from_secs(10);

/// Every child labelled for this member, by ApplySet: `(cache index, namespace, name)`.
struct Snapshot {
    /// When its lists started.
    taken: Instant,
    children: HashMap<String, Vec<(usize, Option<String>, String)>>,
}

/// The wait for moved objects of one controller of a member. Which objects the member has
/// seen is remembered with the rest of each object (`Memory::arrive`), and forgotten with
/// it.
#[derive(Default)]
pub(crate) struct Arrivals {
    /// The last snapshot; the lock also makes one list at a time.
    snapshot: tokio::sync::Mutex<Option<Arc<Snapshot>>>,
}

impl Arrivals {
    /// Note `o`, seen by this member's primary watch (`initial`: in a list), and return
    /// once it may be reconciled.
    pub(crate) async fn admit(&self, ctx: &Ctx, o: &Object, initial: bool) {
        let seen = Instant::now();
        let new = ctx.memory.arrive(&object_key(o));
        if initial || !new || !o.labels().iter().any(|(k, _)| k == ID_LABEL) {
            return;
        }
        let Some(snapshot) = self.snapshot_after(ctx, seen).await else { return };
        wait_for_children(ctx, o, &snapshot).await;
    }

    /// A snapshot whose lists started at or after `t`; `None` when the lists fail.
    async fn snapshot_after(&self, ctx: &Ctx, t: Instant) -> Option<Arc<Snapshot>> {
        let mut last = self.snapshot.lock().await;
        if let Some(s) = last.as_ref().filter(|s| s.taken >= t) {
            return Some(s.clone());
        }
        let taken = Instant::now();
        match list_children(ctx).await {
            Ok(children) => {
                let s = Arc::new(Snapshot { taken, children });
                *last = Some(s.clone());
                Some(s)
            }
            Err(e) => {
                tracing::warn!(controller = ctx.spec.name, error = %api_error_text(&e), "cannot list this member's children; moved objects reconcile without waiting for theirs");
                None
            }
        }
    }
}

/// Every child labelled for this member, in every managed kind, by ApplySet.
async fn list_children(
    ctx: &Ctx,
) -> Result<HashMap<String, Vec<(usize, Option<String>, String)>>, kube::Error> {
    let mut out: HashMap<String, Vec<(usize, Option<String>, String)>> = HashMap::new();
    let Some(shard) = ctx.shard.as_ref() else { return Ok(out) };
    let selector = format!("{PART_OF_LABEL},{}", shard.selector());
    for (i, cache) in ctx.caches.iter().enumerate().filter(|(_, c)| c.sets.is_some()) {
        let api: Api<DynamicObject> =
            api_for(&ctx.client, &cache.ar, cache.namespaced, ctx.options.namespace.as_deref());
        let mut pages = Pages::new(&api, &selector);
        while let Some(page) = pages.next().await? {
            for o in page {
                let Some(set) = o.metadata.labels.as_ref().and_then(|l| l.get(PART_OF_LABEL)).cloned() else {
                    continue;
                };
                let ns = o.metadata.namespace.filter(|_| cache.namespaced);
                out.entry(set).or_default().push((i, ns, o.metadata.name.unwrap_or_default()));
            }
        }
    }
    Ok(out)
}

/// Wait until every child `snapshot` lists for `o` is in the caches, for this member.
async fn wait_for_children(ctx: &Ctx, o: &Object, snapshot: &Snapshot) {
    let Some(shard) = ctx.shard.as_ref() else { return };
    let set = applyset_id(o.name(), o.namespace().unwrap_or(""), &ctx.primary.kind, &ctx.primary.group);
    let Some(children) = snapshot.children.get(&set) else { return };
    let deadline = Instant::now() + PRIME_LIMIT;
    for (i, ns, name) in children {
        let Some(cache) = ctx.caches.get(*i) else { continue };
        let here = || {
            cache
                .store
                .get(ns.as_deref(), name)
                .is_some_and(|c| c.labels().get(&shard.labels.shard) == Some(shard.me.as_str()))
        };
        while !here() {
            if Instant::now() >= deadline {
                tracing::warn!(
                    controller = ctx.spec.name,
                    object = object_key(o),
                    child = name,
                    "a moved object's child did not reach the cache in time; reconciling without it"
                );
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

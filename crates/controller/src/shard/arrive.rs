//! A member's side of receiving a moved object ([`Arrivals`]): its first reconcile here
//! waits until the children it arrived with are in this member's caches.
//!
//! The children are relabelled before the object (by the old member, or by the sharder
//! for a member that is gone), but each kind has its own watch, so the object's event can
//! reach this member before its children's. A reconcile then would find no children, and
//! a script that keeps something it drew once in a child (a generated password, read back
//! with `getObserved`) would draw it again. So an object that arrives after the first list
//! carrying an ApplySet id (it has had children: it is not new) is held until each child
//! the API server lists for it under this member's label is in the cache.

use std::collections::HashSet;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use ctop_applier::applyset::{ID_LABEL, PART_OF_LABEL, applyset_id};
use kube::api::{Api, DynamicObject, ListParams};
use parking_lot::Mutex;

use crate::cluster::api_for;
use crate::context::Ctx;
use crate::error::api_error_text;
use crate::object::Object;
use crate::triggers::object_key;

/// Longest wait for a moved object's children to reach the caches.
const PRIME_LIMIT: Duration = Duration::from_secs(10);

/// The objects one controller of a member has seen, and the wait for moved ones.
#[derive(Default)]
pub(crate) struct Arrivals {
    known: Mutex<HashSet<String>>,
    ctx: OnceLock<Arc<Ctx>>,
}

impl Arrivals {
    /// The controller's context, once built (its triggers start before).
    pub(crate) fn set_ctx(&self, ctx: Arc<Ctx>) {
        let _ = self.ctx.set(ctx);
    }

    /// Note `o`, seen by this member's primary watch (`initial`: in a list), and return
    /// once it may be reconciled.
    pub(crate) async fn admit(&self, o: &Object, initial: bool) {
        let key = object_key(o);
        let new = self.known.lock().insert(key);
        if initial || !new || !o.labels().iter().any(|(k, _)| k == ID_LABEL) {
            return;
        }
        if let Some(ctx) = self.ctx.get() {
            prime(ctx, o).await;
        }
    }

    /// `key` left this member (handed over, moved or deleted).
    pub(crate) fn forget(&self, key: &str) {
        self.known.lock().remove(key);
    }
}

/// Wait until every child of `o` labelled for this member is in the caches.
async fn prime(ctx: &Ctx, o: &Object) {
    let Some(shard) = ctx.shard.as_ref() else { return };
    let set = applyset_id(o.name(), o.namespace().unwrap_or(""), &ctx.primary.kind, &ctx.primary.group);
    let selector = format!("{PART_OF_LABEL}={set},{}", shard.selector());
    let deadline = tokio::time::Instant::now() + PRIME_LIMIT;
    for cache in ctx.caches.iter().filter(|c| c.sets.is_some()) {
        let ns = o.namespace().filter(|_| cache.namespaced);
        let api: Api<DynamicObject> = api_for(&ctx.client, &cache.ar, cache.namespaced, ns);
        let children = match api.list(&ListParams::default().labels(&selector)).await {
            Ok(list) => list.items,
            Err(e) => {
                tracing::warn!(controller = ctx.spec.name, object = object_key(o), error = %api_error_text(&e), "cannot list a moved object's children; reconciling it without waiting for them");
                return;
            }
        };
        for child in children {
            let name = child.metadata.name.unwrap_or_default();
            let here = || {
                cache
                    .store
                    .get(ns, &name)
                    .is_some_and(|c| c.labels().get(&shard.labels.shard) == Some(&shard.me))
            };
            while !here() {
                if tokio::time::Instant::now() >= deadline {
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
}

//! A member's side of a move: handing over an object the sharder marked
//! `drain.ctop.dev/<operator>: <new member>` ([`Drainer::run`]).
//!
//! The primary watch passes such an object here instead of queueing it, and workers skip
//! it. The handover waits for a reconcile of it in flight to finish, relabels its
//! children (found in this member's caches through their ApplySet label) for the new
//! member, then relabels the object itself and drops the drain label in one merge patch
//! guarded by the resourceVersion it read. The new member's watches then receive the
//! children first and the object last, so its first reconcile sees the children in its
//! cache. A failed step is retried with backoff while the object is still draining.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use ctop_applier::applyset::applyset_id;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio::sync::{Semaphore, mpsc};

use super::Ownership;
use crate::cluster::api_for;
use crate::context::Ctx;
use crate::error::api_error_text;
use crate::object::Object;
use crate::queue::WorkQueue;

/// Handovers running at once.
const CONCURRENT_HANDOVERS: usize = 16;

/// The handovers of one controller.
pub(crate) struct Drainer {
    ctx: Arc<Ctx>,
    queue: Arc<WorkQueue>,
    /// Objects being handed over (a second drain event of one waits for the first).
    busy: Mutex<HashSet<String>>,
    limit: Arc<Semaphore>,
}

impl Drainer {
    /// Hand over each object whose key arrives on `keys`, until the channel closes.
    pub(crate) async fn run(ctx: Arc<Ctx>, queue: Arc<WorkQueue>, mut keys: mpsc::UnboundedReceiver<String>) {
        let this = Arc::new(Self {
            ctx,
            queue,
            busy: Mutex::default(),
            limit: Arc::new(Semaphore::new(CONCURRENT_HANDOVERS)),
        });
        while let Some(key) = keys.recv().await {
            if !this.busy.lock().insert(key.clone()) {
                continue;
            }
            let this = this.clone();
            tokio::spawn(async move {
                let Ok(_permit) = this.limit.clone().acquire_owned().await else { return };
                this.hand_over(&key).await;
                this.busy.lock().remove(&key);
            });
        }
    }

    async fn hand_over(&self, key: &str) {
        let ctx = &self.ctx;
        let Some(shard) = ctx.shard.as_ref() else { return };
        let Some(primaries) = ctx.caches.iter().find(|c| c.key == ctx.primary_kind) else { return };
        // No worker takes it any more (they skip draining objects); one may still be on it.
        self.queue.wait_idle(key).await;
        let (ns, name) = key.split_once('/').unwrap_or(("", key));
        let ns = Some(ns).filter(|ns| ctx.namespaced && !ns.is_empty());
        let mut backoff = Duration::from_millis(100);
        loop {
            let Some(obj) = primaries.store.get(ns, name) else { return };
            let to = match shard.ownership(&obj) {
                Ownership::Draining(to) => to.to_owned(),
                Ownership::Mine | Ownership::NotMine => return,
            };
            match self.step(&obj, &to).await {
                Ok(true) => {
                    self.queue.schedule(key, None);
                    ctx.memory.forget(key);
                    shard.metrics.handed_over(&ctx.options.name);
                    tracing::debug!(controller = ctx.spec.name, object = key, to, "handed over");
                    return;
                }
                // It changed since the cache saw it: try again with the newer version.
                Ok(false) => {}
                Err(e) => {
                    tracing::warn!(controller = ctx.spec.name, object = key, to, error = %api_error_text(&e), "cannot hand the object over; retrying");
                }
            }
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(Duration::from_secs(30));
        }
    }

    /// Relabel `obj`'s children, then `obj`; `false` when `obj` changed meanwhile.
    async fn step(&self, obj: &Object, to: &str) -> Result<bool, kube::Error> {
        let ctx = &self.ctx;
        let Some(shard) = ctx.shard.as_ref() else { return Ok(true) };
        let params = PatchParams { field_manager: Some(ctx.options.name.clone()), ..PatchParams::default() };
        let set =
            applyset_id(obj.name(), obj.namespace().unwrap_or(""), &ctx.primary.kind, &ctx.primary.group);
        for cache in ctx.caches.iter() {
            let Some(sets) = &cache.sets else { continue };
            for (cns, cname) in sets.members(&set) {
                let cns = Some(cns.as_str()).filter(|n| cache.namespaced && !n.is_empty());
                let Some(child) = cache.store.get(cns, &cname) else { continue };
                if child.labels().get(&shard.labels.shard) != Some(shard.me.as_str()) {
                    continue;
                }
                let api: Api<DynamicObject> = api_for(&ctx.client, &cache.ar, cache.namespaced, cns);
                let patch = json!({"metadata": {"labels": {shard.labels.shard.clone(): to}}});
                match api.patch(&cname, &params, &Patch::Merge(patch)).await {
                    Err(kube::Error::Api(s)) if s.is_not_found() => {}
                    other => {
                        other?;
                    }
                }
            }
        }
        let api: Api<DynamicObject> = api_for(&ctx.client, &ctx.primary, ctx.namespaced, obj.namespace());
        let patch = json!({"metadata": {
            "resourceVersion": obj.resource_version(),
            "labels": {shard.labels.shard.clone(): to, shard.labels.drain.clone(): Value::Null},
        }});
        match api.patch(obj.name(), &params, &Patch::Merge(patch)).await {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(s)) if s.is_conflict() => Ok(false),
            Err(kube::Error::Api(s)) if s.is_not_found() => Ok(true),
            Err(e) => Err(e),
        }
    }
}

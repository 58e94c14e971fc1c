//! The workers of one controller: each takes the next key from the [`WorkQueue`], looks
//! the object up in the primary cache (a key whose object is gone is dropped), reconciles
//! it and sets its timer from the outcome (`requeue(d)`, the period, a backoff).

use std::sync::Arc;

use std::time::Duration;

use tokio::time::Instant;

use crate::context::Ctx;
use crate::history::Trigger;
use crate::object::{Object, split_key};
use crate::queue::{Next, WorkQueue};
use crate::reconcile::{error_policy, reconcile};
use crate::shard::Ownership;
use crate::store::Store;

/// Run `n` workers until the queue shuts down, once the caches hold their first lists
/// (`synced`); returns once every one has finished the object it was working on. Dropped,
/// it aborts them.
pub(crate) async fn run_workers(
    n: usize,
    queue: Arc<WorkQueue>,
    store: Store,
    mut synced: tokio::sync::watch::Receiver<bool>,
    ctx: Arc<Ctx>,
) {
    // Keys queued before then wait (a key looked up in an empty cache would be dropped).
    if synced.wait_for(|s| *s).await.is_err() {
        return;
    }
    // A set, so that dropping this future (a sharded member that lost its Lease) aborts
    // every worker mid-reconcile.
    let mut workers = tokio::task::JoinSet::new();
    for _ in 0..n.max(1) {
        workers.spawn(work(queue.clone(), store.clone(), ctx.clone()));
    }
    while let Some(done) = workers.join_next().await {
        if let Err(e) = done
            && e.is_panic()
        {
            tracing::error!(controller = ctx.spec.name, error = %e, "a worker panicked");
        }
    }
}

async fn work(queue: Arc<WorkQueue>, store: Store, ctx: Arc<Ctx>) {
    while let Some(key) = queue.get().await {
        let (ns, name) = split_key(&key, ctx.namespaced);
        let mine = |o: &Object| ctx.shard.as_ref().is_none_or(|s| s.ownership(o) == Ownership::Mine);
        let draining =
            |o: &Object| ctx.shard.as_ref().is_some_and(|s| matches!(s.ownership(o), Ownership::Draining(_)));
        match store.get(ns, name) {
            Some(obj) if mine(&obj) => {
                let (next, retry) = match reconcile(obj.clone(), &ctx).await {
                    Ok(next) => (next, false),
                    Err(e) => (error_policy(&obj, &e, &ctx), !e.is_terminal()),
                };
                ctx.memory.timer(
                    &key,
                    match next {
                        Next::AwaitChange => None,
                        _ if retry => Some(Trigger::Retry),
                        Next::After(d) if ctx.spec.every.is_some_and(|e| d == Duration::from(e)) => {
                            Some(Trigger::Tick)
                        }
                        Next::After(_) => Some(Trigger::Requeue),
                    },
                );
                queue.schedule(
                    &key,
                    match next {
                        Next::AwaitChange => None,
                        Next::After(d) => Some(Instant::now() + d),
                    },
                );
                // Deleted (or replaced under its name) while it was reconciled: what that
                // reconcile remembered goes with it.
                if store.get(ns, name).is_none_or(|o| o.uid() != obj.uid()) {
                    ctx.memory.forget(&key);
                    if let Some(uid) = obj.uid() {
                        ctx.memory.forget_uid(uid);
                    }
                }
            }
            // A sharded member leaves an object it is handing over to the drainer.
            Some(obj) if draining(&obj) => {}
            // Gone, or no longer this member's: nothing to run, nothing to remember.
            _ => {
                queue.schedule(&key, None);
                ctx.memory.forget(&key);
            }
        }
        queue.done(&key);
    }
}

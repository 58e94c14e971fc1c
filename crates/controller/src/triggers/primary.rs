//! The triggers of the primary kind's own watch.
//!
//! - A creation, and an update that passes the operator's predicate, queue the object; so
//!   does the start of its deletion, whatever the predicate (a deletion is acted on at
//!   once, and the failures counted before it are forgotten: see `Memory::observe`).
//! - A deletion is no trigger: the object and everything remembered of it are forgotten,
//!   and its timer is cancelled. A relist forgets the objects it no longer has (it reports
//!   no deletions).
//! - Sharded: an object being handed over goes to the drainer instead of a worker, and a
//!   moved object waits for its children (see `shard::Arrivals`).
//! - The echo of the controller's own write (its status, its ApplySet record) is dropped.

use std::sync::Arc;

use futures::StreamExt as _;
use kube::runtime::watcher;
use tokio::sync::mpsc::UnboundedSender;

use super::ECHO_CHECKS;
use super::predicate::Previous;
use crate::context::Ctx;
use crate::effects::Change;
use crate::history::Trigger;
use crate::object::{Object, object_key, split_key};
use crate::queue::{Priority, WorkQueue};
use crate::shard::Ownership;
use crate::shard::arrive::Arrivals;

/// An object that left the controller's watch while it still carries the controller's
/// finalizer was not deleted (the API server keeps it until its finalizers are gone): it
/// stopped being selected (its labels or annotations changed). The controller lets it go:
/// its finalizers (the `finalize` one, the children one) are removed, so that the object can
/// be deleted later without a controller that no longer looks at it; its children stay
/// (their owner references delete them with it; children in other namespaces stay for
/// good). A sharded member's objects leave its watch when they move to another member:
/// they are not released.
fn release(ctx: &Arc<Ctx>, o: Object) {
    let finalize = ctx.spec.finalizer.clone().filter(|_| ctx.spec.handlers.iter().any(|h| h == "finalize"));
    let remove: Vec<String> = finalize
        .into_iter()
        .chain([crate::effects::children_finalizer(ctx)])
        .filter(|f| o.finalizers().contains(f))
        .collect();
    if ctx.shard.is_some() || remove.is_empty() {
        return;
    }
    let ctx = ctx.clone();
    tokio::spawn(async move {
        let o = o.typed(&ctx.primary);
        match crate::effects::change_finalizers(&ctx, &o, Change { add: &[], remove: &remove }).await {
            Ok(()) => tracing::info!(
                controller = ctx.spec.name,
                object = object_key(&o),
                "no longer selected: released (its finalizer removed)"
            ),
            Err(e) => tracing::warn!(
                controller = ctx.spec.name,
                object = object_key(&o),
                error = %e,
                "no longer selected, but its finalizer could not be removed; remove it by hand"
            ),
        }
    });
}

/// Queue the primary objects `events` (the primary watch, its lists held until they end)
/// call for, until the stream ends.
pub(crate) async fn primary<S>(
    ctx: Arc<Ctx>,
    queue: Arc<WorkQueue>,
    events: S,
    arrivals: Option<Arc<Arrivals>>,
    drains: UnboundedSender<String>,
) where
    S: futures::Stream<Item = Result<watcher::Event<Object>, watcher::Error>> + Send + 'static,
{
    let mut previous = ctx.spec.predicate.clone().map(|p| Previous::new(Some(p)));
    let mut triggers = {
        let (ctx, queue) = (ctx.clone(), queue.clone());
        move |event: Result<watcher::Event<Object>, watcher::Error>| {
            let event = match event {
                Ok(e) => e,
                Err(e) => {
                    tracing::warn!(controller = ctx.spec.name, error = %e, "watch failed; retrying with backoff");
                    return None;
                }
            };
            let (o, priority) = match event {
                watcher::Event::Apply(o) => (o, Priority::Change),
                watcher::Event::InitApply(o) => (o, Priority::Background),
                watcher::Event::Delete(o) => {
                    if let Some(p) = &mut previous {
                        p.deleted(&o);
                    }
                    let key = object_key(&o);
                    queue.forget(&key);
                    ctx.memory.forget_idle(&key);
                    release(&ctx, o);
                    return None;
                }
                watcher::Event::Init => {
                    if let Some(p) = &mut previous {
                        p.init();
                    }
                    return None;
                }
                watcher::Event::InitDone => {
                    if let Some(p) = &mut previous {
                        p.init_done();
                    }
                    let store = &ctx.primaries().store;
                    ctx.memory.retain(|key| {
                        let (ns, name) = split_key(key, ctx.namespaced);
                        store.get(ns, name).is_some()
                    });
                    return None;
                }
            };
            let deletion_started = ctx.memory.observe(&o);
            let passes = previous.as_mut().is_none_or(|p| p.passes(&o));
            if !(passes || deletion_started) {
                return None;
            }
            // An object being handed over goes to the drainer, not to a worker.
            if ctx.shard.as_ref().is_some_and(|s| matches!(s.ownership(&o), Ownership::Draining(_))) {
                let _ = drains.send(object_key(&o));
                return None;
            }
            Some((o, priority))
        }
    };
    let echoes = {
        let ctx = ctx.clone();
        move |(o, priority): (Object, Priority)| {
            let (ctx, arrivals) = (ctx.clone(), arrivals.clone());
            async move {
                // A moved object waits for its children (see `shard::Arrivals`).
                if let Some(a) = &arrivals {
                    a.admit(&ctx, &o, priority == Priority::Background).await;
                }
                let key = object_key(&o);
                if ctx.memory.is_echo(&ctx.primary_kind, &o, &key).await {
                    return None;
                }
                ctx.memory.triggered(&key, || match priority {
                    Priority::Change => Trigger::Changed {
                        generation: o.generation(),
                        resource_version: o.resource_version().map(str::to_owned),
                    },
                    // The first list after the start, or a relist.
                    Priority::Background if ctx.memory.has_history(&key) => Trigger::Relisted,
                    Priority::Background => Trigger::Started,
                });
                Some((key, priority))
            }
        }
    };
    events
        .filter_map(move |e| std::future::ready(triggers(e)))
        .map(echoes)
        .buffer_unordered(ECHO_CHECKS)
        .filter_map(std::future::ready)
        .for_each(move |(key, priority)| {
            queue.add(key, priority);
            std::future::ready(())
        })
        .await;
}

//! One reconcile of one primary object, from the handler call to its effects:
//!
//! 1. wait for leadership (not leading: requeue in 5 s, no side effect);
//! 2. after one of its children was deleted, make sure the object itself still exists (the
//!    garbage collector deletes the children of an object already gone, and this cache may
//!    not know yet): a gone object is never reconciled;
//! 3. on deletion, run the deletion's call instead (`finalize`); else add the controller's
//!    finalizer when `.finalize()` is declared (the change triggers the next reconcile);
//! 4. skip the handler when nothing it read changed (`fingerprint`);
//! 5. call the handlers' `reconcile` with the object and a `CacheView`;
//! 6. carry out the outcome (`effects`): nothing is written after `Result.error`; else
//!    every object written must be declared, then the finalizer changes, the children
//!    (pruning former ones unless the outcome keeps them), the unowned patches, the status
//!    with `observedGeneration` only when everything succeeded, the events;
//! 7. requeue: `requeue(d)` after `d`, ok after `every` (or on the next change), failures
//!    with backoff (terminal ones not at all). An object that turned out to be gone is
//!    forgotten, with no event and no retry.

use std::sync::Arc;
use std::time::{Duration, Instant};

use ctop_applier::ChildRef;
use ctop_core::HandlerResult;
use kube::api::{Api, DynamicObject};
use kube::runtime::events::{Event, EventType};
use tracing::Instrument as _;

pub use crate::effects::{READY, RECONCILED};

use crate::call::Call;
use crate::cluster::api_for;
use crate::context::Ctx;
use crate::effects::{self, Change, child_ref, describe, event_note};
use crate::error::ReconcileError;
use crate::fingerprint::Fingerprint;
use crate::health::ReconcileResult;
use crate::history::Ended;
use crate::object::{Object, object_key};
use crate::queue::Next;
use crate::retry::backoff;

/// Reconcile `obj` (a worker's item; see `worker`).
pub(crate) async fn reconcile(obj: Arc<Object>, ctx: &Arc<Ctx>) -> Result<Next, ReconcileError> {
    if let Some(leader) = &ctx.leader
        && !*leader.borrow()
    {
        return Ok(Next::After(Duration::from_secs(5)));
    }
    // One span per reconcile (exported as a trace when OpenTelemetry is configured), with
    // the handler call, the applies and the status write as children.
    let span = tracing::info_span!(
        "reconcile",
        controller = %ctx.spec.name,
        object = %object_key(&obj),
        generation = obj.generation().unwrap_or_default(),
        member = tracing::field::Empty,
        otel.status_code = tracing::field::Empty,
        error = tracing::field::Empty,
    );
    if let Some(shard) = &ctx.shard {
        span.record("member", shard.me.as_str());
    }
    let key = object_key(&obj);
    ctx.metrics.add_active_workers(&ctx.spec.name, 1);
    // In progress until finished (or dropped, if this future is cancelled).
    let work = ctx.metrics.work_started(&ctx.spec.name);
    let started = Instant::now();
    let reference = obj.reference(&ctx.primary);
    // Until this reconcile ends, the watch events of its writes wait to be recognised.
    let running = ctx.memory.begin(&ctx.primary_kind, &obj);
    let done = reconcile_object(obj, ctx).instrument(span.clone()).await;
    drop(running);
    let done = match done {
        Err(ReconcileError::Gone { object }) => {
            tracing::debug!(controller = ctx.spec.name, object, "gone; forgotten");
            ctx.memory.gone(&key);
            Ok(Done::from(Next::AwaitChange))
        }
        other => other,
    };
    let skipped = matches!(done, Ok(Done { skipped: true, .. }));
    let result = done.map(|d| d.next);
    let took = started.elapsed();
    ctx.memory.ended(&key, took, skipped, || match &result {
        Ok(next) => Ended::Succeeded {
            next_in_seconds: match next {
                Next::After(d) => Some(d.as_secs_f64()),
                Next::AwaitChange => None,
            },
        },
        Err(e) => Ended::Failed {
            reason: e.reason().into(),
            message: crate::history::cut(&e.to_string()),
            code_frame: e.code_frame().map(|f| f.to_string()),
            terminal: e.is_terminal(),
        },
    });
    work.finish();
    ctx.metrics.add_active_workers(&ctx.spec.name, -1);
    ctx.metrics.observe_work_duration(&ctx.spec.name, took);
    match &result {
        Ok(action) => {
            ctx.health.record_success(&ctx.spec.name, skipped);
            let r = if *action == Next::AwaitChange
                || ctx.spec.every.is_some_and(|e| *action == Next::After(e.into()))
            {
                ReconcileResult::Success
            } else {
                ReconcileResult::RequeueAfter
            };
            ctx.metrics.record_reconcile(&ctx.spec.name, r, took);
        }
        Err(e) => {
            span.record("otel.status_code", "ERROR");
            span.record("error", tracing::field::display(e));
            ctx.health.record_error(&ctx.spec.name, e.to_string());
            ctx.metrics.record_reconcile(&ctx.spec.name, ReconcileResult::Error, took);
            if e.is_terminal() {
                ctx.metrics.terminal_error(&ctx.spec.name);
            }
            if e.is_timeout() {
                ctx.metrics.timeout(&ctx.spec.name);
            }
            if e.is_crash() {
                ctx.metrics.panic(&ctx.spec.name);
            }
            // The failure on the object itself, for `kubectl describe` (the recorder turns
            // repeats of the same failure into one event with a count).
            let event = Event {
                type_: EventType::Warning,
                reason: e.reason().into(),
                note: Some(event_note(&e.to_string())),
                action: "Reconcile".into(),
                secondary: None,
            };
            if let Err(err) = ctx.recorder.publish(&event, &reference).await {
                tracing::warn!(error = %crate::error::api_error_text(&err), "cannot publish the failure as an event");
            }
        }
    }
    result
}

/// What follows a failed reconcile: per-object exponential backoff held back further by the
/// global retry bucket; terminal errors wait for a change instead (or the period).
pub(crate) fn error_policy(obj: &Object, err: &ReconcileError, ctx: &Ctx) -> Next {
    if err.is_terminal() {
        tracing::warn!(controller = ctx.spec.name, object = object_key(obj), error = %err, code = err.code_frame().map(tracing::field::display), "reconcile failed; not retried until the object or the script changes");
        return match ctx.spec.every {
            Some(every) => Next::After(every.into()),
            None => Next::AwaitChange,
        };
    }
    let n = ctx.memory.failed(&object_key(obj));
    let delay = backoff(n).max(ctx.retries.reserve());
    ctx.metrics.queue_retry(&ctx.spec.name);
    tracing::warn!(controller = ctx.spec.name, object = object_key(obj), error = %err, retry_in = ?delay, code = err.code_frame().map(tracing::field::display), "reconcile failed");
    Next::After(delay)
}

/// How a reconcile ended.
struct Done {
    next: Next,
    /// The handler was not called: nothing it read had changed (see `fingerprint`).
    skipped: bool,
}

impl From<Next> for Done {
    fn from(next: Next) -> Self {
        Done { next, skipped: false }
    }
}

async fn reconcile_object(obj: Arc<Object>, ctx: &Arc<Ctx>) -> Result<Done, ReconcileError> {
    let finalizer = ctx.spec.finalizer.clone().filter(|_| ctx.spec.handlers.iter().any(|h| h == "finalize"));
    let has_finalizer = |o: &Object, f: &str| o.finalizers().iter().any(|x| x == f);
    let owner = obj.typed(&ctx.primary);
    let key = object_key(&owner);

    // The API server said it is gone: its deletion event is on the way to this cache.
    if ctx.memory.known_gone(&key) {
        return Ok(Next::AwaitChange.into());
    }
    if ctx.memory.must_confirm(&key) {
        if !confirm(ctx, &owner).await? {
            // Its deletion is on the way to this cache, and its event will run it.
            return Ok(Next::AwaitChange.into());
        }
        ctx.memory.confirmed(&key);
    }
    if owner.is_deleting() {
        ctx.memory.set_fingerprint(&key, None);
        let finalizer = finalizer.filter(|f| has_finalizer(&owner, f));
        return crate::finalize::deleting(ctx, &owner, finalizer.as_deref()).await.map(Done::from);
    }
    if let Some(f) = &finalizer
        && !has_finalizer(&owner, f)
    {
        effects::change_finalizers(ctx, &owner, Change { add: std::slice::from_ref(f), remove: &[] }).await?;
        // The change triggers the next reconcile.
        return Ok(Next::AwaitChange.into());
    }

    if !ctx.spec.always_run
        && let Some(mut fp) = ctx.memory.take_fingerprint(&key)
    {
        let handlers = ctx.handlers.borrow().clone();
        let holds = fp.holds(&owner, &handlers, &ctx.caches, |uid, children, cache| {
            ctx.applier.children_intact(uid, children, cache)
        });
        if let Some(next) = holds {
            // The handler's outcome stands, but a child's health may have changed (not
            // while the children are as they were when the condition was last written).
            if fp.keeps_ready() {
                let versions = effects::children_versions(ctx, fp.children());
                if !fp.ready_current(&versions) {
                    let ready = effects::ready_condition(ctx, fp.children());
                    if let Some(e) = effects::write_ready(ctx, &owner, ready).await {
                        return Err(e);
                    }
                    fp.ready_written(versions);
                }
            }
            ctx.memory.set_fingerprint(&key, Some(fp));
            ctx.metrics.reconcile_skipped(&ctx.spec.name);
            return Ok(Done { next, skipped: true });
        }
    }
    // Built only now: the call's input is the object as JSON, which a skip does not need.
    let mut call = Call::new(ctx, Some(&owner));
    let note_reads = |call: &Call| ctx.memory.note(&key, |d| d.reads(call.view.history_reads()));
    let out = call.run(ctx, "reconcile", |h, c| h.reconcile(c)).await;
    note_reads(&call);
    let out = match out {
        Ok(out) => out,
        Err(e) => {
            let e = ReconcileError::from(e);
            if let Some(status) = effects::write_status(ctx, &owner, None, Err(&e), None).await
                && status.is_gone()
            {
                return Err(status);
            }
            return Err(e);
        }
    };
    // Deleted while the handler ran: the outcome was computed for the object alive, and
    // applying it could adopt again children an orphaning deletion has just released (the
    // garbage collector would then delete them with the object). The deletion's own
    // reconcile (queued by its watch event) follows instead.
    let latest = ctx.primaries().store.get(owner.namespace(), owner.name());
    if latest.is_none_or(|o| o.is_deleting() || o.uid() != owner.uid()) {
        tracing::debug!(
            controller = ctx.spec.name,
            object = key,
            "deleted while reconciling; the outcome is dropped"
        );
        return Ok(Next::AwaitChange.into());
    }
    // Only an outcome whose every effect the caches can confirm later is fingerprinted.
    let children: Option<Vec<ChildRef>> =
        (out.patches.is_empty() && out.foreign_applies.is_empty() && out.children.deletes.is_empty())
            .then(|| out.children.objects.iter().map(|o| child_ref(o, &owner)).collect::<Option<_>>())
            .flatten();
    let keeps_ready = ctx.owns_status && !effects::sets_ready(&out);
    let carried = effects::carry_out(ctx, &owner, out, "reconcile").await;
    if let Some(e) = carried.failure {
        return Err(e);
    }
    ctx.memory.succeeded(&key);
    let next = match carried.result {
        HandlerResult::Requeue { after } => Next::After(after.into()),
        _ => match ctx.spec.every {
            Some(every) => Next::After(every.into()),
            None => Next::AwaitChange,
        },
    };
    let fingerprint = children.and_then(|children| {
        Fingerprint::of(&call.handlers, &owner, call.view.take_recording(), children, next)
            .map(|fp| fp.keeping_ready(keeps_ready))
    });
    ctx.memory.set_fingerprint(&key, fingerprint);
    Ok(next.into())
}

/// Whether `owner` (as cached) still exists as the API server says: `Err(Gone)` when it
/// does not (or another object took its name), `false` when it is being deleted and the
/// cache does not know yet.
async fn confirm(ctx: &Ctx, owner: &Object) -> Result<bool, ReconcileError> {
    let api: Api<DynamicObject> = api_for(&ctx.client, &ctx.primary, ctx.namespaced, owner.namespace());
    let live = api.get_metadata_opt(owner.name()).await.map_err(|source| ReconcileError::Api {
        what: format!("get {}", describe(ctx, owner)),
        error: source,
    })?;
    match live {
        Some(live) if live.metadata.uid.as_deref() == owner.uid() => {
            Ok(live.metadata.deletion_timestamp.is_none() || owner.is_deleting())
        }
        _ => Err(ReconcileError::Gone { object: describe(ctx, owner) }),
    }
}

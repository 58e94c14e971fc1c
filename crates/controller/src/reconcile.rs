//! One reconcile of one primary object, from the handler call to its effects:
//!
//! 1. wait for leadership (not leading: requeue in 5 s, no side effect);
//! 2. add the controller's finalizer when `.finalize()` is declared (the change triggers the
//!    next reconcile); on deletion run `finalize` instead;
//! 3. call the handlers' `reconcile` with the object and a `CacheView`;
//! 4. `Result.error`: nothing is applied or pruned. Otherwise check every object written is
//!    declared, write the finalizer changes, apply the children (pruning former ones unless
//!    the outcome keeps them), merge-patch unowned objects;
//! 5. write the status: the handler's merge patch and conditions, the controller's own
//!    `Reconciled` condition, and `observedGeneration` only when everything succeeded;
//! 6. publish the events, and requeue: `requeue(d)` after `d`, ok after `every` (or on the
//!    next change), failures with backoff (terminal ones not at all).

use std::sync::Arc;
use std::time::{Duration, Instant};

use std::collections::HashSet;

use ctop_applier::{ChildCache as _, ChildRef, StatusPatch, StatusWrite};
use ctop_core::{Condition, ConditionStatus, HandlerCall, HandlerResult, PruneMode, ReconcileOutcome};
use kube::runtime::events::{Event, EventType};
use serde_json::Value;
use tracing::Instrument as _;

use crate::context::Ctx;
use crate::effects::{self, check_outcome, describe, event_note};
use crate::error::ReconcileError;
use crate::fingerprint::Fingerprint;
use crate::health::ReconcileResult;
use crate::object::Object;
use crate::observe::{CacheView, Children};
use crate::queue::Next;
use crate::retry::backoff;
use crate::triggers::object_key;

/// The type of the condition the controller itself keeps on objects of the kinds the
/// operator defines: `True` after a reconcile that fully succeeded, `False` with the error
/// otherwise. The handler's own conditions are left to it.
pub const RECONCILED: &str = "Reconciled";

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
    let running = ctx.own_writes.begin(key.clone(), Some((&ctx.primary_kind, &obj)));
    let done = reconcile_object(obj, ctx).instrument(span.clone()).await;
    drop(running);
    let skipped = matches!(done, Ok(Done { skipped: true, .. }));
    let result = done.map(|d| d.next);
    let took = started.elapsed();
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
    let n = {
        let mut f = ctx.failures.lock();
        let n = f.entry(object_key(obj)).or_insert(0);
        *n = n.saturating_add(1);
        *n
    };
    let delay = backoff(n).max(ctx.retries.reserve());
    ctx.metrics.queue_retry(&ctx.spec.name);
    tracing::warn!(controller = ctx.spec.name, object = object_key(obj), error = %err, retry_in = ?delay, code = err.code_frame().map(tracing::field::display), "reconcile failed");
    Next::After(delay)
}

/// The handler call's input for `object`.
pub(crate) fn call_for(ctx: &Ctx, object: Option<&Object>) -> HandlerCall {
    HandlerCall {
        controller: ctx.spec.index,
        object: object.map(|o| o.to_json(&ctx.primary)),
        observer: Arc::new(CacheView::new(ctx, object)),
    }
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
    let typed = || obj.typed(&ctx.primary);
    let key = object_key(&obj);

    if obj.is_deleting() {
        ctx.fingerprints.set(&key, None);
        let owner = typed();
        let finalizer = finalizer.filter(|f| has_finalizer(&owner, f));
        return crate::finalize::deleting(ctx, &owner, finalizer).await.map(Done::from);
    }
    if let Some(f) = &finalizer
        && !has_finalizer(&obj, f)
    {
        let mut all = obj.finalizers().to_vec();
        all.push(f.clone());
        effects::patch_finalizers(ctx, &typed(), all).await?;
        // The change triggers the next reconcile.
        return Ok(Next::AwaitChange.into());
    }

    let handlers = ctx.handlers.borrow().clone();
    let unchanged = (!ctx.spec.always_run)
        .then(|| {
            ctx.fingerprints.unchanged(&key, &obj, &handlers, &ctx.caches, |uid, children, cache| {
                ctx.applier.children_intact(uid, children, cache)
            })
        })
        .flatten();
    if let Some(next) = unchanged {
        ctx.metrics.reconcile_skipped(&ctx.spec.name);
        return Ok(Done { next, skipped: true });
    }
    let owner = typed();
    let view = Arc::new(CacheView::new(ctx, Some(&owner)));
    let call = HandlerCall {
        controller: ctx.spec.index,
        object: Some(owner.to_json(&ctx.primary)),
        observer: view.clone(),
    };
    let started = Instant::now();
    let out = handlers.reconcile(call).instrument(tracing::info_span!("script", handler = "reconcile")).await;
    ctx.metrics.observe_script(&ctx.spec.name, "reconcile", started.elapsed());
    let out = match out {
        Ok(out) => out,
        Err(e) => {
            let e = ReconcileError::from(e);
            write_status(ctx, &owner, None, Err(&e)).await;
            return Err(e);
        }
    };
    // Deleted while the handler ran: the outcome was computed for the object alive, and
    // applying it could adopt again children an orphaning deletion has just released (the
    // garbage collector would then delete them with the object). The deletion's own
    // reconcile (queued by its watch event) follows instead.
    let latest = ctx.caches.first().and_then(|c| c.store.get(obj.namespace(), obj.name()));
    if latest.is_some_and(|o| o.is_deleting()) {
        tracing::debug!(
            controller = ctx.spec.name,
            object = key,
            "deleted while reconciling; the outcome is dropped"
        );
        return Ok(Next::AwaitChange.into());
    }
    // Only an outcome whose every effect the caches can confirm later is fingerprinted.
    let children: Option<Vec<ChildRef>> = (out.patches.is_empty() && out.children.deletes.is_empty())
        .then(|| out.children.objects.iter().map(|o| child_ref(o, &owner)).collect::<Option<_>>())
        .flatten();
    let (result, failure) = carry_out(ctx, &owner, out, "reconcile").await;
    if let Some(e) = failure {
        return Err(e);
    }
    ctx.failures.lock().remove(&key);
    let next = match result {
        HandlerResult::Requeue { after } => Next::After(after.into()),
        _ => match ctx.spec.every {
            Some(every) => Next::After(every.into()),
            None => Next::AwaitChange,
        },
    };
    let fingerprint = children
        .and_then(|children| Fingerprint::of(&handlers, &owner, view.take_recording(), children, next));
    ctx.fingerprints.set(&key, fingerprint);
    Ok(next.into())
}

/// The reference of a desired child of `owner` (`None` when it lacks its apiVersion, kind
/// or name; the apply refuses it).
fn child_ref(o: &Value, owner: &Object) -> Option<ChildRef> {
    Some(ChildRef {
        api_version: o["apiVersion"].as_str()?.to_owned(),
        kind: o["kind"].as_str()?.to_owned(),
        namespace: o["metadata"]["namespace"]
            .as_str()
            .map(str::to_owned)
            .or_else(|| owner.namespace().map(str::to_owned)),
        name: o["metadata"]["name"].as_str()?.to_owned(),
    })
}

/// Carry out an outcome of `reconcile` (or `finalize`) on `owner`: finalizer changes,
/// children, patches, then the status and the events, whatever failed before. Returns the
/// handler's result and the first failure.
pub(crate) async fn carry_out(
    ctx: &Arc<Ctx>,
    owner: &Object,
    mut out: ReconcileOutcome,
    handler: &'static str,
) -> (HandlerResult, Option<ReconcileError>) {
    let mut failure = match &out.result {
        HandlerResult::Error { message } => {
            Some(ReconcileError::Failed { handler, message: message.clone() })
        }
        _ => None,
    };
    // Nothing is written if any object is of an undeclared kind.
    if failure.is_none()
        && let Err(e) =
            check_outcome(ctx, Some(owner), &out.children.objects, &out.patches, &out.children.deletes).await
    {
        failure = Some(e);
    }
    // The handler's finalizer changes go first: one it adds is in place before any child.
    if failure.is_none()
        && let Err(e) = effects::update_finalizers(ctx, owner, &out.finalizers, None).await
    {
        failure = Some(e);
    }
    let mut applied = true;
    if failure.is_none() {
        // Moved out, not cloned: the children can be most of the call's output budget.
        let objects = std::mem::take(&mut out.children.objects);
        let prune = out.children.prune;
        if let Err(e) = apply_children(ctx, owner, objects, prune).await {
            failure = Some(e);
            applied = false;
        } else if let Err(e) = effects::delete_children(ctx, owner, &out.children.deletes).await {
            failure = Some(e);
        } else if let Err(e) = effects::apply_patches(ctx, Some(owner), &out.patches).await {
            failure = Some(e);
        }
    }
    // A status written for children that could not be applied would describe a world that
    // is not there: after a failed apply only the controller's condition is written.
    let status = if applied { Some(&out) } else { None };
    let status_result = match &failure {
        None => Ok(()),
        Some(e) => Err(e),
    };
    if let Some(e) = write_status(ctx, owner, status, status_result).await
        && failure.is_none()
    {
        failure = Some(e);
    }
    effects::publish_events(ctx, Some(owner), &out.events).await;
    (out.result, failure)
}

/// Apply `objects` as the children of `owner`; with [`PruneMode::Complete`] former
/// children left out are pruned once every apply succeeded.
pub(crate) async fn apply_children(
    ctx: &Ctx,
    owner: &Object,
    objects: Vec<Value>,
    prune: PruneMode,
) -> Result<(), ReconcileError> {
    // A controller that manages no kinds has no children to apply or prune (another
    // controller of the same kind may: the children of an object are one ApplySet).
    if objects.is_empty() && (prune == PruneMode::Keep || ctx.spec.manages.is_empty()) {
        return Ok(());
    }
    let span = tracing::info_span!("apply", children = objects.len());
    let children = Children(&ctx.caches);
    // Children already cached: the echo of their update is not a trigger. A child created
    // now is one: the next reconcile is the first to observe it (getObserved), as a script
    // that reports on its children expects.
    let existing: HashSet<ChildRef> =
        objects.iter().filter_map(|o| child_ref(o, owner).filter(|c| children.get(c).is_some())).collect();
    let report = match prune {
        PruneMode::Complete => ctx.applier.apply_cached(owner, objects, &children).instrument(span).await,
        PruneMode::Keep => ctx.applier.apply_cached_keeping(owner, objects, &children).instrument(span).await,
    }
    .map_err(ReconcileError::Apply)?;
    let primary = format!("{}/{}", ctx.primary.api_version, ctx.primary.kind);
    let me = object_key(owner);
    for version in &report.owner_versions {
        ctx.own_writes.wrote(&primary, owner.namespace(), owner.name(), version.clone(), &me);
    }
    for (child, version) in report.versions.iter().filter(|(c, _)| existing.contains(c)) {
        let kind = format!("{}/{}", child.api_version, child.kind);
        ctx.own_writes.wrote(&kind, child.namespace.as_deref(), &child.name, version.clone(), &me);
    }
    ctx.metrics.applies(&ctx.spec.name, report.applied.len() as u64);
    ctx.metrics.applies_skipped(&ctx.spec.name, report.skipped.len() as u64);
    ctx.metrics.prunes(&ctx.spec.name, report.pruned.len() as u64);
    Ok(())
}

/// Write the status of `owner`: the outcome's merge patch and conditions (when given), the
/// controller's `Reconciled` condition and, when `result` is ok, `observedGeneration`.
/// Only for kinds the operator defines; the write is remembered so its watch event does
/// not trigger another reconcile. Returns the write's failure.
pub(crate) async fn write_status(
    ctx: &Ctx,
    owner: &Object,
    out: Option<&ReconcileOutcome>,
    result: Result<(), &ReconcileError>,
) -> Option<ReconcileError> {
    let mut patch = StatusPatch::default();
    if let Some(out) = out {
        if let Some(fields) = &out.status {
            patch.fields = fields.clone();
        }
        patch.conditions = out.conditions.iter().map(condition_json).collect();
    }
    if ctx.owns_status {
        let own = match result {
            Ok(()) => Condition {
                type_: RECONCILED.into(),
                status: ConditionStatus::True,
                reason: "ReconcileSucceeded".into(),
                message: String::new(),
            },
            Err(e) => Condition {
                type_: RECONCILED.into(),
                status: ConditionStatus::False,
                reason: e.reason().into(),
                message: event_note(&e.to_string()),
            },
        };
        if !patch.conditions.iter().any(|c| c["type"] == RECONCILED) {
            patch.conditions.push(condition_json(&own));
        }
        if result.is_ok() {
            patch.observed_generation = owner.generation();
        }
    } else if patch.fields.is_empty() && patch.conditions.is_empty() {
        return None;
    }
    let written =
        ctx.applier.status_writer().write(owner, patch).instrument(tracing::info_span!("status")).await;
    match written {
        Ok(StatusWrite::Written { resource_version: Some(v) }) => {
            let kind = format!("{}/{}", ctx.primary.api_version, ctx.primary.kind);
            ctx.own_writes.wrote(&kind, owner.namespace(), owner.name(), v, &object_key(owner));
            None
        }
        Ok(_) => None,
        Err(e) => {
            tracing::warn!(controller = ctx.spec.name, object = describe(ctx, owner), error = %e, "cannot write the status");
            Some(ReconcileError::Status(e))
        }
    }
}

fn condition_json(c: &Condition) -> Value {
    serde_json::to_value(c).unwrap_or(Value::Null)
}

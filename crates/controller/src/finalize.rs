//! Reconciles of an object being deleted.
//!
//! With the controller's own finalizer (`.finalize(fn)`), the `finalize` handler runs and
//! its outcome is carried out like a reconcile's: its children are the desired set during
//! deletion, so an empty set prunes every child (unless the deletion orphans them, or the
//! handler returned `Result.keep()`), and `Result.requeue(d)` runs it again after `d` — to
//! wait until the children are gone, say. The finalizer is removed only once `finalize`
//! returned ok and every effect succeeded.
//!
//! With finalizers the script manages itself (`addFinalizer`) and no `.finalize()`, the
//! reconcile handler sees the object on its way out and may remove them; its children are
//! neither applied nor pruned (garbage collection removes them).

use std::sync::Arc;
use std::time::Instant;

use ctop_core::{HandlerResult, PruneMode};
use tracing::Instrument as _;

use crate::context::Ctx;
use crate::effects;
use crate::error::ReconcileError;
use crate::object::Object;
use crate::queue::Next;
use crate::reconcile::{call_for, carry_out};
use crate::triggers::object_key;

/// The finalizer the API server puts on an object deleted with `propagationPolicy: Orphan`:
/// its children must outlive it.
const ORPHAN: &str = "orphan";

/// Reconcile `owner`, which is being deleted; `finalizer` is the controller's own when the
/// object still carries it.
pub(crate) async fn deleting(
    ctx: &Arc<Ctx>,
    owner: &Object,
    finalizer: Option<String>,
) -> Result<Next, ReconcileError> {
    if let Some(f) = finalizer {
        return finalize(ctx, owner, &f).await;
    }
    if !owner.finalizers().is_empty() {
        return script_finalizers(ctx, owner).await;
    }
    forget(ctx, owner);
    Ok(Next::AwaitChange)
}

/// Remember `o` as deleted with `propagationPolicy: Orphan` when it carries the `orphan`
/// finalizer. The garbage collector removes that finalizer once it has released the
/// children, and a reconcile that was running then may have adopted one again: `finalize`
/// must still keep them, so it asks this memory as well as the object (every version of
/// the object passes through the watch, the finalizer's too).
pub(crate) fn note_orphaning(set: &parking_lot::Mutex<std::collections::HashSet<String>>, o: &Object) {
    if o.is_deleting()
        && o.finalizers().iter().any(|f| f == ORPHAN)
        && let Some(uid) = o.uid()
    {
        set.lock().insert(uid.to_owned());
    }
}

/// Drop what is remembered of an object on its way out.
fn forget(ctx: &Ctx, owner: &Object) {
    if let Some(uid) = owner.uid() {
        ctx.orphaning.lock().remove(uid);
        ctx.applier.forget(uid);
        ctx.applier.status_writer().forget(uid);
    }
    ctx.own_writes.forget(&format!("{}/{}", ctx.primary.api_version, ctx.primary.kind), owner);
    ctx.failures.lock().remove(&object_key(owner));
}

async fn finalize(ctx: &Arc<Ctx>, owner: &Object, finalizer: &str) -> Result<Next, ReconcileError> {
    let handlers = ctx.handlers.borrow().clone();
    let started = Instant::now();
    let out = handlers
        .finalize(call_for(ctx, Some(owner)))
        .instrument(tracing::info_span!("script", handler = "finalize"))
        .await;
    ctx.metrics.observe_script(&ctx.spec.name, "finalize", started.elapsed());
    let mut out = out?;
    let orphaned = owner.uid().is_some_and(|uid| ctx.orphaning.lock().contains(uid));
    if orphaned || owner.finalizers().iter().any(|f| f == ORPHAN) {
        // `kubectl delete --cascade=orphan`: the user asked to keep the children.
        out.children.prune = PruneMode::Keep;
    }
    let (result, failure) = carry_out(ctx, owner, out, "finalize").await;
    if let Some(e) = failure {
        return Err(e);
    }
    if let HandlerResult::Requeue { after } = result {
        return Ok(Next::After(after.into()));
    }
    let remaining: Vec<String> = owner.finalizers().iter().filter(|f| *f != finalizer).cloned().collect();
    effects::patch_finalizers(ctx, owner, remaining).await?;
    forget(ctx, owner);
    Ok(Next::AwaitChange)
}

/// A reconcile of an object being deleted that carries finalizers other than the
/// controller's own: its status, patches, events and finalizer changes are written, its
/// children are not applied (nor pruned).
async fn script_finalizers(ctx: &Arc<Ctx>, owner: &Object) -> Result<Next, ReconcileError> {
    let handlers = ctx.handlers.borrow().clone();
    let started = Instant::now();
    let out = handlers
        .reconcile(call_for(ctx, Some(owner)))
        .instrument(tracing::info_span!("script", handler = "reconcile"))
        .await;
    ctx.metrics.observe_script(&ctx.spec.name, "reconcile", started.elapsed());
    let mut out = out?;
    // Children are not applied to an object on its way out.
    out.children.objects.clear();
    out.children.prune = PruneMode::Keep;
    let (result, failure) = carry_out(ctx, owner, out, "reconcile").await;
    if let Some(e) = failure {
        return Err(e);
    }
    Ok(match result {
        HandlerResult::Requeue { after } => Next::After(after.into()),
        _ => Next::AwaitChange,
    })
}

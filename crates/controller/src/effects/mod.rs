//! Carrying out a handler's outcome, shared by `reconcile`, `finalize` and `onStart`: the
//! finalizer changes, the children, the deletions `remove()` asks for, the patches of
//! unowned objects, then the status and the events (whatever failed before them).
//!
//! - `declared`: the check that every object written is of a kind the operator declares;
//! - `children`: children applied (and former ones pruned) through `ctop-applier`;
//! - `finalizers`: finalizer changes as JSON patches that cannot conflict;
//! - `writes`: patches and applies of objects the operator does not own;
//! - `status`: the status merge patch with the controller's `Reconciled` condition;
//! - `events`: the outcome's events.

mod children;
mod declared;
mod events;
mod finalizers;
mod status;
mod writes;

pub(crate) use children::{apply_children, child_ref};
pub(crate) use declared::{Write, check_declared, target_of};
pub(crate) use events::{describe, event_note, publish_events};
pub(crate) use finalizers::{Change, change_finalizers, children_finalizer};
pub use status::{READY, RECONCILED};
pub(crate) use status::{children_versions, ready_condition, sets_ready, write_ready, write_status};
pub(crate) use writes::{apply_foreign, apply_patches, apply_unowned};

use ctop_core::{HandlerResult, ReconcileOutcome};

use crate::context::Ctx;
use crate::error::ReconcileError;
use crate::object::Object;

/// What carrying out an outcome did.
pub(crate) struct Carried {
    /// The handler's result.
    pub(crate) result: HandlerResult,
    /// The first failure.
    pub(crate) failure: Option<ReconcileError>,
    /// Children pruned or deleted (`remove()`).
    pub(crate) pruned: usize,
}

/// Carry out an outcome of `handler` (`reconcile` or `finalize`) on `owner`: finalizer
/// changes, children, deletions, patches, then the status and the events, whatever failed
/// before.
pub(crate) async fn carry_out(
    ctx: &Ctx,
    owner: &Object,
    mut out: ReconcileOutcome,
    handler: &'static str,
) -> Carried {
    let mut failure = match &out.result {
        HandlerResult::Error { message } => {
            Some(ReconcileError::Failed { handler, message: message.clone() })
        }
        _ => None,
    };
    // Nothing is written if any object is of an undeclared kind.
    if failure.is_none()
        && let Err(e) = declared::check_outcome(
            ctx,
            Some(owner),
            &out.children.objects,
            &out.patches,
            &out.foreign_applies,
            &out.children.deletes,
        )
        .await
    {
        failure = Some(e);
    }
    // The handler's finalizer changes go first: one it adds is in place before any child.
    if failure.is_none()
        && let Err(e) = finalizers::update_finalizers(ctx, owner, &out.finalizers).await
    {
        failure = Some(e);
    }
    // The children whose health makes the `Ready` condition, unless the handler sets it.
    let ready_from: Option<Vec<ctop_applier::ChildRef>> =
        (handler == "reconcile" && ctx.owns_status && !status::sets_ready(&out))
            .then(|| out.children.objects.iter().filter_map(|o| child_ref(o, owner)).collect());
    let mut applied = true;
    let mut pruned = 0;
    if failure.is_none() {
        // Moved out, not cloned: the children can be most of the call's output budget.
        let objects = std::mem::take(&mut out.children.objects);
        let prune = out.children.prune;
        match apply_children(ctx, owner, objects, &out.children.adopt, prune).await {
            Err(e) => {
                failure = Some(e);
                applied = false;
            }
            Ok(n) => {
                pruned += n;
                match children::delete_children(ctx, owner, &out.children.deletes).await {
                    Err(e) => failure = Some(e),
                    Ok(n) => {
                        pruned += n;
                        if let Err(e) = apply_patches(ctx, Some(owner), &out.patches).await {
                            failure = Some(e);
                        } else if let Err(e) = apply_foreign(ctx, Some(owner), &out.foreign_applies).await {
                            failure = Some(e);
                        }
                    }
                }
            }
        }
    }
    // An object that is gone has no status to write and nobody to tell.
    if failure.as_ref().is_some_and(ReconcileError::is_gone) {
        return Carried { result: out.result, failure, pruned };
    }
    // A status written for children that could not be applied would describe a world that
    // is not there: after a failed apply only the controller's condition is written.
    let status = if applied { Some(&out) } else { None };
    let status_result = match &failure {
        None => Ok(()),
        Some(e) => Err(e),
    };
    let ready = ready_from.filter(|_| failure.is_none()).map(|c| status::ready_condition(ctx, &c));
    if let Some(e) = write_status(ctx, owner, status, status_result, ready).await
        && failure.is_none()
    {
        failure = Some(e);
    }
    if !failure.as_ref().is_some_and(ReconcileError::is_gone) {
        publish_events(ctx, Some(owner), &out.events).await;
    }
    Carried { result: out.result, failure, pruned }
}

/// `owner` as the applier takes it, from the fields the cache keeps apart (nothing of it is
/// serialized or parsed), with its labels and annotations when `metadata`; `None` without a
/// uid (the applier then words that error itself from the object).
fn owner_of(ctx: &Ctx, owner: &Object, metadata: bool) -> Option<ctop_applier::Owner> {
    let (api_version, kind) = match &owner.types {
        Some(t) => (t.api_version.clone(), t.kind.clone()),
        None => (ctx.primary.api_version.clone(), ctx.primary.kind.clone()),
    };
    let pairs = |p: &crate::object::Pairs| -> Vec<(String, String)> {
        if metadata { p.iter().map(|(k, v)| (k.to_owned(), v.to_owned())).collect() } else { Vec::new() }
    };
    Some(ctop_applier::Owner {
        api_version,
        kind,
        name: owner.name().to_owned(),
        namespace: owner.namespace().map(str::to_owned),
        uid: owner.uid()?.to_owned(),
        resource_version: owner.resource_version().map(str::to_owned),
        labels: pairs(owner.labels()),
        annotations: pairs(owner.annotations()),
    })
}

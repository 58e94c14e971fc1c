//! Calls on an object being deleted, under one rule.
//!
//! The call is `finalize` when the operator declares `.finalize(fn)` and the object still
//! carries the controller's finalizer; otherwise `reconcile` runs (the object carries
//! finalizers of its own, added with `addFinalizer`, or someone else's). Either way the
//! outcome is carried out as during the object's life, and what the call applies is the
//! desired set *during deletion*: applying nothing prunes every child, which is how a
//! teardown waits for its children to go (each child's deletion calls it again).
//!
//! Except:
//! - a deletion with `propagationPolicy: Orphan` (`kubectl delete --cascade=orphan`) keeps
//!   the children as they are: nothing is applied (it would adopt them again, and the
//!   garbage collector would delete them with the object) and nothing is pruned;
//! - a foreground deletion (`--cascade=foreground`): the garbage collector is deleting the
//!   children already, so nothing is applied (it would re-create what it deletes) and
//!   nothing is pruned;
//! - `Result.keep()` applies and prunes nothing, `Result.requeue(d)` calls again after `d`.
//!
//! The controller's finalizer is removed (with a patch that cannot conflict with the
//! deletion itself) once `finalize` returned ok and every effect succeeded; then everything
//! remembered of the object is dropped.
//!
//! Children in other namespaces (tied by label; the garbage collector does not know them)
//! are the controller's to delete: an object that has them carries the children finalizer
//! (see `effects::children_finalizer`). Once no call of the script is pending on it (its
//! `finalize` done, no finalizer a `reconcile` claimed left), the controller prunes every
//! child (applies the empty set), except in an orphaning deletion, which keeps them, and
//! removes that finalizer. An object whose only finalizers are that one and the garbage
//! collector's is not handed to the script at all. A `reconcile` that leaves a finalizer it claims
//! (`addFinalizer`) in place while nothing will call it again (it returned ok, pruned
//! nothing and removed nothing) waits forever: that is reported on the object as a
//! `DeletionStalled` event and condition naming what the object waits for.

use std::sync::Arc;

use ctop_applier::applyset::applyset_id;
use ctop_core::{HandlerResult, PruneMode, ReconcileOutcome};
use kube::api::{Api, DynamicObject};

use crate::call::Call;
use crate::cluster::api_for;
use crate::context::Ctx;
use crate::effects::{self, Change, children_finalizer};
use crate::error::ReconcileError;
use crate::memory::ORPHAN;
use crate::object::{Object, object_key};
use crate::queue::Next;

/// The finalizer the garbage collector puts on an object deleted with
/// `propagationPolicy: Foreground`.
const FOREGROUND: &str = "foregroundDeletion";

/// Children named in a `DeletionStalled` message.
const NAMED: usize = 5;

/// Run the call of `owner`, which is being deleted; `finalizer` is the controller's own
/// when the object still carries it.
pub(crate) async fn deleting(
    ctx: &Arc<Ctx>,
    owner: &Object,
    finalizer: Option<&str>,
) -> Result<Next, ReconcileError> {
    let key = object_key(owner);
    if owner.finalizers().is_empty() {
        // On its way out of the API server: nothing to run, nothing to remember.
        ctx.memory.forget(&key);
        return Ok(Next::AwaitChange);
    }
    let children = children_finalizer(ctx);
    let holds_children = owner.finalizers().contains(&children);
    let only_ours_left = owner.finalizers().iter().all(|f| *f == children || f == ORPHAN || f == FOREGROUND);
    if finalizer.is_none() && holds_children && only_ours_left {
        // Not forgotten here but on the Delete event: a watch event older than this call
        // (the garbage collector removing `orphan`, say) must still find the orphaning
        // remembered, or a second pass would prune what the orphaning deletion keeps.
        release_children(ctx, owner, &children).await?;
        return Ok(Next::AwaitChange);
    }
    let mut call = Call::new(ctx, Some(owner));
    let (handler, out) = match finalizer {
        Some(_) => ("finalize", call.run(ctx, "finalize", |h, c| h.finalize(c)).await?),
        None => ("reconcile", call.run(ctx, "reconcile", |h, c| h.reconcile(c)).await?),
    };
    let mut out = during_deletion(ctx, owner, out);
    if out.children.prune == PruneMode::Complete {
        // This pass may have started from a copy older than another pass's end (see
        // `live_owner`): what it prunes is only pruned if the deletion still asks for it.
        match live_owner(ctx, owner).await? {
            LiveOwner::Gone => return Ok(Next::AwaitChange),
            LiveOwner::Orphaning => keep_children(&mut out),
            LiveOwner::Deleting => {}
        }
    }
    let claimed = out.finalizers.add.clone();
    let removes = !out.finalizers.remove.is_empty();
    let carried = effects::carry_out(ctx, owner, out, handler).await;
    if let Some(e) = carried.failure {
        return Err(e);
    }
    if let HandlerResult::Requeue { after } = carried.result {
        return Ok(Next::After(after.into()));
    }
    if let Some(f) = finalizer {
        let mut remove = vec![f.to_owned()];
        if holds_children {
            prune_children(ctx, owner).await?;
            remove.push(children);
        }
        effects::change_finalizers(ctx, owner, Change { add: &[], remove: &remove }).await?;
        if !holds_children {
            ctx.memory.forget(&key);
        }
        return Ok(Next::AwaitChange);
    }
    let waits_for: Vec<&String> = owner.finalizers().iter().filter(|f| claimed.contains(f)).collect();
    if holds_children && waits_for.is_empty() {
        release_children(ctx, owner, &children).await?;
        return Ok(Next::AwaitChange);
    }
    if !waits_for.is_empty() && !removes && carried.pruned == 0 {
        let e = ReconcileError::DeletionStalled {
            object: effects::describe(ctx, owner),
            finalizers: waits_for.iter().map(|f| (*f).clone()).collect(),
            children: children_left(ctx, owner),
        };
        if let Some(status) = effects::write_status(ctx, owner, None, Err(&e), None).await
            && status.is_gone()
        {
            return Err(status);
        }
        return Err(e);
    }
    Ok(Next::AwaitChange)
}

/// Prune every child of `owner` (unless its deletion orphans them), then remove the
/// children finalizer `f`.
async fn release_children(ctx: &Arc<Ctx>, owner: &Object, f: &str) -> Result<(), ReconcileError> {
    prune_children(ctx, owner).await?;
    effects::change_finalizers(ctx, owner, Change { add: &[], remove: &[f.to_owned()] }).await
}

/// Apply the empty set to `owner`, which prunes every child it has here and in other
/// namespaces; nothing in an orphaning deletion, which keeps them, nor when the owner is
/// gone (see [`live_owner`]).
async fn prune_children(ctx: &Arc<Ctx>, owner: &Object) -> Result<(), ReconcileError> {
    if orphaning(ctx, owner, owner.finalizers()) {
        return Ok(());
    }
    match live_owner(ctx, owner).await? {
        LiveOwner::Deleting => {
            effects::apply_children(ctx, owner, Vec::new(), &[], PruneMode::Complete).await?;
            Ok(())
        }
        LiveOwner::Gone | LiveOwner::Orphaning => Ok(()),
    }
}

/// What the API server says of an owner being deleted, read before a pass prunes its
/// children.
enum LiveOwner {
    /// Gone, or another object of that name: the pass that let it go pruned its children.
    Gone,
    /// Its deletion orphans the children.
    Orphaning,
    /// Still being deleted, and its children with it.
    Deleting,
}

/// Reads `owner` again before its children are pruned. A pass may start from a copy of the
/// owner taken before another pass removed the last finalizer: by the time it prunes, the
/// owner may be gone, its deletion event may have dropped what the controller remembered
/// (that the deletion orphans the children), and the garbage collector may have taken the
/// `orphan` finalizer off already. Pruning then would delete children the user asked to
/// keep.
async fn live_owner(ctx: &Arc<Ctx>, owner: &Object) -> Result<LiveOwner, ReconcileError> {
    let api: Api<DynamicObject> = api_for(&ctx.client, &ctx.primary, ctx.namespaced, owner.namespace());
    let live = api.get_opt(owner.name()).await.map_err(|error| ReconcileError::Api {
        what: format!("read {} before pruning its children", object_key(owner)),
        error,
    })?;
    Ok(match live {
        Some(live) if live.metadata.uid.as_deref() == owner.uid() => {
            if orphaning(ctx, owner, live.metadata.finalizers.as_deref().unwrap_or_default()) {
                LiveOwner::Orphaning
            } else {
                LiveOwner::Deleting
            }
        }
        _ => LiveOwner::Gone,
    })
}

/// Whether the deletion of `owner` orphans its children: remembered from a watch event, or
/// `finalizers` (of some copy of it) still carry `orphan`.
fn orphaning(ctx: &Ctx, owner: &Object, finalizers: &[String]) -> bool {
    ctx.memory.orphaning(&object_key(owner)) || finalizers.iter().any(|f| f == ORPHAN)
}

/// The outcome of a call on `owner`, being deleted, as the deletion allows it (see the
/// module docs).
fn during_deletion(ctx: &Ctx, owner: &Object, mut out: ReconcileOutcome) -> ReconcileOutcome {
    let foreground = owner.finalizers().iter().any(|f| f == FOREGROUND);
    if orphaning(ctx, owner, owner.finalizers()) || foreground {
        keep_children(&mut out);
    }
    out
}

/// The children stay as they are: nothing applied, pruned or deleted.
fn keep_children(out: &mut ReconcileOutcome) {
    out.children.objects.clear();
    out.children.prune = PruneMode::Keep;
    out.children.deletes.clear();
}

/// `Kind name` of the children of `owner` still cached (a few, then how many more).
fn children_left(ctx: &Ctx, owner: &Object) -> Vec<String> {
    let set =
        applyset_id(owner.name(), owner.namespace().unwrap_or(""), &ctx.primary.kind, &ctx.primary.group);
    let mut found = Vec::new();
    for cache in ctx.caches.iter() {
        let Some(sets) = &cache.sets else { continue };
        for (ns, name) in sets.members(&set) {
            let ns = Some(ns.as_str()).filter(|n| cache.namespaced && !n.is_empty());
            if cache.store.get(ns, &name).is_some() {
                found.push(match ns {
                    Some(ns) => format!("{} {ns}/{name}", cache.ar.kind),
                    None => format!("{} {name}", cache.ar.kind),
                });
            }
        }
    }
    found.sort();
    if found.len() > NAMED {
        let more = found.len() - NAMED;
        found.truncate(NAMED);
        found.push(format!("{more} more"));
    }
    found
}

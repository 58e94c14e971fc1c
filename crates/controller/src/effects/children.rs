//! An outcome's children: applied under the owner through `ctop-applier` (pruning former
//! ones per the outcome's [`PruneMode`]), and the ones `remove()` names deleted.

use foldhash::HashSet;

use ctop_applier::{ApplyError, ApplyReport, ChildCache as _, ChildError, ChildFailure, ChildRef, Desired};
use ctop_core::{EventRecord, EventType, PruneMode};
use kube::api::{Api, DynamicObject};
use serde_json::{Value, json};
use tracing::Instrument as _;

use super::declared::target_of;
use super::events::publish_events;
use super::finalizers::{Change, change_finalizers, children_finalizer};
use crate::cluster::api_for;
use crate::context::Ctx;
use crate::error::ReconcileError;
use crate::object::{Object, label_owner, object_key};
use crate::observe::Children;

/// The reference of a desired child of `owner` (`None` when it lacks its apiVersion, kind
/// or name; the apply refuses it).
pub(crate) fn child_ref(o: &Value, owner: &Object) -> Option<ChildRef> {
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

/// Apply `objects` as the children of `owner`; with [`PruneMode::Complete`] former
/// children left out are pruned once every apply succeeded. The objects at the positions
/// `adopt` (and those of a kind declared with `{ adopt: true }`) may take over an existing
/// object that is not a child yet; any other such object is left alone, and that child
/// fails with an `AdoptionRefused` event (see `ctop_applier::Desired`). A child in another
/// namespace than `owner`'s is tied to it by label, not by an owner reference; before the
/// first one is applied, `owner` gets the controller's children finalizer, so that its
/// deletion waits until they are pruned (see `finalize`); a complete pass that wants none
/// and left none removes it. Returns how many were pruned.
pub(crate) async fn apply_children(
    ctx: &Ctx,
    owner: &Object,
    objects: Vec<Value>,
    adopt: &[usize],
    prune: PruneMode,
) -> Result<usize, ReconcileError> {
    // A controller that manages no kinds has no children to apply or prune (another
    // controller of the same kind may: the children of an object are one ApplySet).
    if objects.is_empty() && (prune == PruneMode::Keep || ctx.spec.manages.is_empty()) {
        return Ok(0);
    }
    let span = tracing::info_span!("apply", children = objects.len());
    let children_f = children_finalizer(ctx);
    let elsewhere = owner.namespace().is_some_and(|ns| {
        objects.iter().any(|o| o["metadata"]["namespace"].as_str().is_some_and(|c| !c.is_empty() && c != ns))
    });
    if elsewhere && !owner.is_deleting() && !owner.finalizers().contains(&children_f) {
        change_finalizers(ctx, owner, Change { add: std::slice::from_ref(&children_f), remove: &[] }).await?;
    }
    let children = Children(&ctx.caches);
    // Children already cached: the echo of their update is not a trigger. A child created
    // now is one: the next reconcile is the first to observe it (getObserved), as a script
    // that reports on its children expects.
    let existing: HashSet<ChildRef> =
        objects.iter().filter_map(|o| child_ref(o, owner).filter(|c| children.get(c).is_some())).collect();
    let desired: Vec<Desired> = objects
        .into_iter()
        .enumerate()
        .map(|(i, object)| {
            let kind_adopts = ctx.spec.adopt.iter().any(|k| {
                object["apiVersion"].as_str() == Some(k.api_version.as_str())
                    && object["kind"].as_str() == Some(k.kind.as_str())
            });
            Desired { adopt: kind_adopts || adopt.binary_search(&i).is_ok(), object }
        })
        .collect();
    let complete = prune == PruneMode::Complete;
    let report = match super::owner_of(ctx, owner, true) {
        Some(o) => ctx.applier.apply_cached_to(o, desired, &children, complete).instrument(span).await,
        // No uid: the applier says so in its words.
        None if complete => ctx.applier.apply_cached(owner, desired, &children).instrument(span).await,
        None => ctx.applier.apply_cached_keeping(owner, desired, &children).instrument(span).await,
    };
    let report = match report {
        Ok(report) => report,
        Err(e) => {
            if let ApplyError::Apply { failures, report, .. } = &e {
                adoption_events(ctx, owner, report, failures).await;
            }
            return Err(ReconcileError::from(e));
        }
    };
    adoption_events(ctx, owner, &report, &[]).await;
    // No child elsewhere is wanted any more and the former ones are pruned (none kept with
    // `ctop.dev/prune: "false"`): nothing is left for the finalizer to delete.
    let kept_elsewhere = report.kept.iter().any(|c| c.namespace.as_deref() != owner.namespace());
    if prune == PruneMode::Complete
        && !elsewhere
        && !kept_elsewhere
        && !owner.is_deleting()
        && owner.finalizers().contains(&children_f)
    {
        change_finalizers(ctx, owner, Change { add: &[], remove: std::slice::from_ref(&children_f) }).await?;
    }
    let me = object_key(owner);
    for version in &report.owner_versions {
        ctx.memory.wrote(&me, &ctx.primary_kind, owner.namespace(), owner.name(), version.clone());
    }
    for (child, version) in report.versions.iter().filter(|(c, _)| existing.contains(c)) {
        let kind = ctop_core::kind_key(&child.api_version, &child.kind);
        ctx.memory.wrote(&me, &kind, child.namespace.as_deref(), &child.name, version.clone());
    }
    ctx.memory.note(&me, |d| {
        use crate::history::{Child, ChildAction};
        let child = |action: ChildAction, c: &ChildRef| Child {
            action,
            kind: ctop_core::kind_key(&c.api_version, &c.kind),
            namespace: c.namespace.clone(),
            name: c.name.clone(),
        };
        let applied = report.applied.iter().map(|c| {
            let action = if report.adopted.contains(c) {
                ChildAction::Adopted
            } else if existing.contains(c) {
                ChildAction::Configured
            } else {
                ChildAction::Created
            };
            child(action, c)
        });
        d.children(
            applied
                .chain(report.skipped.iter().map(|c| child(ChildAction::Unchanged, c)))
                .chain(report.pruned.iter().map(|c| child(ChildAction::Pruned, c)))
                .chain(report.kept.iter().map(|c| child(ChildAction::Kept, c))),
        );
    });
    ctx.metrics.applies(&ctx.spec.name, report.applied.len() as u64);
    ctx.metrics.applies_skipped(&ctx.spec.name, report.skipped.len() as u64);
    ctx.metrics.prunes(&ctx.spec.name, report.pruned.len() as u64);
    Ok(report.pruned.len())
}

/// Tell on `owner` which existing objects its apply took over and which it left alone.
async fn adoption_events(ctx: &Ctx, owner: &Object, report: &ApplyReport, failures: &[ChildFailure]) {
    let mut events = Vec::new();
    for child in &report.adopted {
        events.push(EventRecord {
            type_: EventType::Normal,
            reason: "Adopted".into(),
            message: format!("{child} existed and was taken over as a child (adopt: true)"),
            regarding: None,
        });
    }
    for f in failures {
        let ChildError::NotOurs { controlled, .. } = &f.error else { continue };
        let fix = if *controlled {
            String::new()
        } else {
            format!(
                "; to take it over, apply it with {{ adopt: true }} or declare .manages({}, {{ adopt: true }})",
                f.child.kind
            )
        };
        events.push(EventRecord {
            type_: EventType::Warning,
            reason: "AdoptionRefused".into(),
            message: format!("{f}{fix}"),
            regarding: None,
        });
    }
    publish_events(ctx, Some(owner), &events).await;
}

/// Delete the children `deletes` names (`remove()`): each only when the cache holds it as a
/// child controlled by `owner` (or, in another namespace, tied to it by label), with uid and resourceVersion preconditions; anything else
/// (not a child of this object, gone, changed meanwhile) is left alone. Returns how many
/// were deleted.
pub(crate) async fn delete_children(
    ctx: &Ctx,
    owner: &Object,
    deletes: &[ctop_core::ObjectReference],
) -> Result<usize, ReconcileError> {
    let Some(owner_uid) = owner.uid() else { return Ok(0) };
    let mut deleted = 0;
    for r in deletes {
        let obj = json!({
            "apiVersion": r.api_version, "kind": r.kind,
            "metadata": {"name": r.name, "namespace": r.namespace},
        });
        let t = target_of(ctx, "remove", &obj, Some(owner)).await?;
        let key = ctop_core::kind_key(&t.ar.api_version, &t.ar.kind);
        let cached = ctx
            .caches
            .iter()
            .find(|c| c.key == key)
            .and_then(|c| c.store.get(t.namespace.as_deref().filter(|_| c.namespaced), &t.name));
        let Some(child) = cached else { continue };
        let ours = child.owner_references().iter().any(|o| o.controller == Some(true) && o.uid == owner_uid)
            || label_owner(&child, &ctx.primary).is_some_and(|k| k == object_key(owner));
        if !ours {
            tracing::info!(
                controller = ctx.spec.name,
                object = t.describe(),
                "remove: not a child of this object; left alone"
            );
            continue;
        }
        if child.is_deleting() {
            continue;
        }
        let api: Api<DynamicObject> = api_for(&ctx.client, &t.ar, t.namespaced, t.namespace.as_deref());
        match ctop_applier::delete_as_read(&api, &t.name, child.uid(), child.resource_version()).await {
            Ok(ctop_applier::Deletion::Deleted) => {
                ctx.metrics.prunes(&ctx.spec.name, 1);
                ctx.memory.note(&object_key(owner), |d| {
                    d.children([crate::history::Child {
                        action: crate::history::ChildAction::Deleted,
                        kind: key.clone(),
                        namespace: t.namespace.clone(),
                        name: t.name.clone(),
                    }]);
                });
                deleted += 1;
            }
            Ok(ctop_applier::Deletion::Gone | ctop_applier::Deletion::Changed) => {}
            Err(source) => {
                return Err(ReconcileError::Api { what: format!("delete {}", t.describe()), error: source });
            }
        }
    }
    Ok(deleted)
}

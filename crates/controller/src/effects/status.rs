//! An outcome's status: the handler's merge patch and conditions, plus the controller's own
//! `Reconciled` condition and `observedGeneration` on the kinds the operator defines, and
//! their `Ready` condition from the children's health unless the handler sets it.

use ctop_applier::{ChildRef, StatusPatch, StatusTarget, StatusWrite};
use ctop_core::{Condition, ConditionStatus, ReconcileOutcome};
use serde_json::{Map, Value};
use tracing::Instrument as _;

use super::events::{describe, event_note};
use crate::context::Ctx;
use crate::error::ReconcileError;
use crate::object::{Object, object_key};

/// The type of the condition the controller itself keeps on objects of the kinds the
/// operator defines: `True` after a reconcile that fully succeeded, `False` with the error
/// otherwise. The handler's own conditions are left to it.
pub const RECONCILED: &str = "Reconciled";

/// The type of the condition the controller keeps on objects of the kinds the operator
/// defines from the health of their children (kstatus' rules, `ctop-health`), after each
/// successful reconcile whose outcome does not set it: `True` once every child is
/// `Current`, else `False` naming the first child that is not (in the order the handler
/// returned them) with its health as reason (`ChildInProgress`, `ChildFailed`, ...) and
/// message (`Deployment shop: 1 of 2 replicas available`). A child's change re-evaluates
/// it even when the handler is not called again.
pub const READY: &str = "Ready";

/// The `Ready` condition from the health of `children` as the caches hold them (see
/// [`READY`]).
pub(crate) fn ready_condition(ctx: &Ctx, children: &[ChildRef]) -> Condition {
    let blocker = children.iter().find_map(|c| {
        let key = ctop_core::kind_key(&c.api_version, &c.kind);
        let cache = ctx.caches.iter().find(|x| x.key == key)?;
        let found = cache.store.get(c.namespace.as_deref().filter(|_| cache.namespaced), &c.name);
        let health = match &found {
            Some(o) => std::borrow::Cow::Borrowed(o.health(&cache.ar)?),
            None => std::borrow::Cow::Owned(ctop_health::Health::not_found()),
        };
        (!health.is_current()).then(|| (c, health.into_owned()))
    });
    match blocker {
        None => Condition {
            type_: READY.into(),
            status: ConditionStatus::True,
            reason: "ChildrenCurrent".into(),
            message: match children.len() {
                0 => "no children".into(),
                1 => "its child is current".into(),
                n => format!("all {n} children are current"),
            },
        },
        Some((c, health)) => Condition {
            type_: READY.into(),
            status: ConditionStatus::False,
            reason: format!("Child{}", health.status),
            message: event_note(&format!("{} {}: {}", c.kind, c.name, health.message)),
        },
    }
}

/// The resourceVersion of each of `children` in the caches (`None` for one not found): the
/// `Ready` condition [`ready_condition`] gives is the same while these are.
pub(crate) fn children_versions(ctx: &Ctx, children: &[ChildRef]) -> Vec<Option<String>> {
    children
        .iter()
        .map(|c| {
            let key = ctop_core::kind_key(&c.api_version, &c.kind);
            let cache = ctx.caches.iter().find(|x| x.key == key)?;
            let o = cache.store.get(c.namespace.as_deref().filter(|_| cache.namespaced), &c.name)?;
            o.resource_version().map(str::to_owned)
        })
        .collect()
}

/// Whether `out` sets the `Ready` condition itself (then the controller leaves it alone).
pub(crate) fn sets_ready(out: &ReconcileOutcome) -> bool {
    out.conditions.iter().any(|c| c.type_ == READY)
        || out.status.as_ref().is_some_and(|s| {
            s.get("conditions")
                .and_then(Value::as_array)
                .is_some_and(|l| l.iter().any(|c| c["type"] == READY))
        })
}

/// Write the `Ready` condition `ready` alone on `owner` (after a reconcile whose handler was
/// not called: a child's health changed); nothing is sent when it says the same.
pub(crate) async fn write_ready(ctx: &Ctx, owner: &Object, ready: Condition) -> Option<ReconcileError> {
    // The generation the last successful reconcile observed (a skip means the object did not
    // change since): without it the condition would lose its `observedGeneration`, and
    // every skip would write.
    let patch = StatusPatch {
        conditions: vec![condition_json(&ready)],
        observed_generation: owner.generation(),
        ..StatusPatch::default()
    };
    write(ctx, owner, patch).await
}

/// Write the status of `owner`: the outcome's merge patch and conditions (when given), the
/// controller's `Reconciled` condition and, when `result` is ok, `observedGeneration`, and
/// `ready` (see [`READY`]) when given.
/// Only for kinds the operator defines; the write is remembered so its watch event does
/// not trigger another reconcile. Returns the write's failure ([`ReconcileError::Gone`]
/// when the object no longer exists).
pub(crate) async fn write_status(
    ctx: &Ctx,
    owner: &Object,
    out: Option<&ReconcileOutcome>,
    result: Result<(), &ReconcileError>,
    ready: Option<Condition>,
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
        if let Some(ready) = ready.filter(|_| result.is_ok()) {
            patch.conditions.push(condition_json(&ready));
        }
    } else if patch.fields.is_empty() && patch.conditions.is_empty() {
        return None;
    }
    write(ctx, owner, patch).await
}

/// Send `patch`, remembering the version it produced (its watch event is no trigger) and
/// noting the status fields it changed in the reconcile's history.
async fn write(ctx: &Ctx, owner: &Object, patch: StatusPatch) -> Option<ReconcileError> {
    let key = object_key(owner);
    // Parsed once, for the history and the writer: the object is cached as text.
    let before = owner.status_json();
    // The writer works out the status after the patch anyway: the history notes what changes
    // from it (nothing, when nothing is sent).
    let note = |before: &Map<String, Value>, after: &Map<String, Value>| {
        ctx.memory.note(&key, |d| d.status(crate::history::status_changes(before, after)));
    };
    let writer = ctx.applier.status_writer();
    let written = match target(ctx, owner, before) {
        Some(target) => {
            writer.write_to_noting(target, patch, note).instrument(tracing::info_span!("status")).await
        }
        // No uid: the writer says so in its words.
        None => writer.write(owner, patch).instrument(tracing::info_span!("status")).await,
    };
    match written {
        Ok(StatusWrite::Written { resource_version: Some(v) }) => {
            ctx.memory.wrote(&key, &ctx.primary_kind, owner.namespace(), owner.name(), v);
            None
        }
        Ok(_) => None,
        Err(ctop_applier::StatusError::Write { error: kube::Error::Api(s), .. }) if s.code == 404 => {
            Some(ReconcileError::Gone { object: describe(ctx, owner) })
        }
        Err(e) => {
            tracing::warn!(controller = ctx.spec.name, object = describe(ctx, owner), error = %e, "cannot write the status");
            Some(ReconcileError::Status(e))
        }
    }
}

/// What the status writer needs of `owner`, from the fields the cache keeps apart and its
/// `status` as parsed; `None` without a uid.
fn target(ctx: &Ctx, owner: &Object, status: Value) -> Option<StatusTarget> {
    Some(StatusTarget { object: super::owner_of(ctx, owner, false)?, status: Some(status) })
}

fn condition_json(c: &Condition) -> Value {
    serde_json::to_value(c).unwrap_or(Value::Null)
}

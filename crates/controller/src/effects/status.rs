//! An outcome's status: the handler's merge patch and conditions, plus the controller's own
//! `Reconciled` condition and `observedGeneration` on the kinds the operator defines.

use ctop_applier::{StatusPatch, StatusWrite};
use ctop_core::{Condition, ConditionStatus, ReconcileOutcome};
use serde_json::Value;
use tracing::Instrument as _;

use super::events::{describe, event_note};
use crate::context::Ctx;
use crate::error::ReconcileError;
use crate::object::{Object, object_key};

/// The type of the condition the controller itself keeps on objects of the kinds the
/// operator defines: `True` after a reconcile that fully succeeded, `False` with the error
/// otherwise. The handler's own conditions are left to it.
pub const RECONCILED: &str = "Reconciled";

/// Write the status of `owner`: the outcome's merge patch and conditions (when given), the
/// controller's `Reconciled` condition and, when `result` is ok, `observedGeneration`.
/// Only for kinds the operator defines; the write is remembered so its watch event does
/// not trigger another reconcile. Returns the write's failure ([`ReconcileError::Gone`]
/// when the object no longer exists).
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
            ctx.memory.wrote(&object_key(owner), &ctx.primary_kind, owner.namespace(), owner.name(), v);
            None
        }
        Ok(_) => None,
        Err(ctop_applier::StatusError::Write { source: kube::Error::Api(s), .. }) if s.code == 404 => {
            Some(ReconcileError::Gone { object: describe(ctx, owner) })
        }
        Err(e) => {
            tracing::warn!(controller = ctx.spec.name, object = describe(ctx, owner), error = %e, "cannot write the status");
            Some(ReconcileError::Status(e))
        }
    }
}

fn condition_json(c: &Condition) -> Value {
    serde_json::to_value(c).unwrap_or(Value::Null)
}

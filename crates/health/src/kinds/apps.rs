//! `apps`: Deployment, StatefulSet, DaemonSet, ReplicaSet. Their controllers report counts
//! of replicas (pods) in `status`; each rule compares them with what the spec asks, in
//! kstatus' order, and the first shortfall is the answer.

use super::{count, detailed, short};
use crate::Health;
use crate::read::{Malformed, Object};

/// `spec.replicas`, 1 when unset as the controllers read it.
fn desired(o: &Object<'_>) -> Result<i64, Malformed> {
    Ok(o.int("spec.replicas")?.unwrap_or(1))
}

/// A count in `status`, 0 when unset.
fn reported(o: &Object<'_>, field: &str) -> Result<i64, Malformed> {
    Ok(o.int(&format!("status.{field}"))?.unwrap_or(0))
}

/// More pods than asked for: a scale-down or the surge of a rollout still to go.
fn extra(have: i64, want: i64) -> Option<Health> {
    // Saturating: both counts come from the object, and a hostile one must not overflow.
    (have > want).then(|| {
        Health::in_progress(
            "ExtraReplicas",
            format!("{} pending termination", count(have.saturating_sub(want), "extra replica")),
        )
    })
}

/// The first shortfall of `checks`, which are in the order kstatus makes them.
fn first<const N: usize>(checks: [Option<Health>; N]) -> Option<Health> {
    checks.into_iter().flatten().next()
}

/// A Deployment is `Failed` once its rollout passed `spec.progressDeadlineSeconds`, then
/// waits for its replicas to be created, updated, scaled down, available and ready, and
/// for the `Progressing` (the new ReplicaSet is available) and `Available` conditions.
pub(super) fn deployment(o: &Object<'_>) -> Result<Health, Malformed> {
    // Without a deadline (unset, or the "none" value 2^31-1) the controller never reports
    // progress, so there is none to wait for.
    let mut progressed = o.int("spec.progressDeadlineSeconds")?.is_none_or(|d| d == i64::from(i32::MAX));
    let mut available = false;
    for c in o.conditions()? {
        match c.type_ {
            "Progressing" if c.reason == "ProgressDeadlineExceeded" => {
                return Ok(Health::failed(
                    "ProgressDeadlineExceeded",
                    "rollout made no progress within its deadline",
                ));
            }
            "Progressing" => progressed |= c.status == "True" && c.reason == "NewReplicaSetAvailable",
            "Available" => available |= c.status == "True",
            _ => {}
        }
    }
    let want = desired(o)?;
    let replicas = reported(o, "replicas")?;
    let updated = reported(o, "updatedReplicas")?;
    if let Some(shortfall) = first([
        short("ReplicasPending", replicas, want, "replicas created"),
        short("ReplicasNotUpdated", updated, want, "replicas updated"),
        extra(replicas, want),
        short("ReplicasUnavailable", reported(o, "availableReplicas")?, updated, "replicas available"),
        short("ReplicasNotReady", reported(o, "readyReplicas")?, want, "replicas ready"),
    ]) {
        return Ok(shortfall);
    }
    Ok(if !progressed {
        Health::in_progress("Progressing", "rollout in progress, the new replica set is not available yet")
    } else if !available {
        Health::in_progress("DeploymentUnavailable", "the Available condition is not True yet")
    } else {
        Health::current("Available", format!("{} available", count(replicas, "replica")))
    })
}

/// A StatefulSet with the `OnDelete` strategy is its user's to update; otherwise it waits
/// for its replicas to be created and ready and for extra ones to go, then for the
/// replicas above the partition to be updated (with a partition) or for every replica to
/// be at the update revision (without).
pub(super) fn stateful_set(o: &Object<'_>) -> Result<Health, Malformed> {
    if o.string("spec.updateStrategy.type")? == Some("OnDelete") {
        return Ok(Health::current("OnDelete", "OnDelete update strategy, pods are updated when deleted"));
    }
    let want = desired(o)?;
    let replicas = reported(o, "replicas")?;
    if let Some(shortfall) = first([
        short("ReplicasPending", replicas, want, "replicas created"),
        short("ReplicasNotReady", reported(o, "readyReplicas")?, want, "replicas ready"),
        extra(replicas, want),
    ]) {
        return Ok(shortfall);
    }
    let ready = Health::current("Ready", format!("{} ready", count(replicas, "replica")));
    let updated = reported(o, "updatedReplicas")?;
    if let Some(partition) = o.int("spec.updateStrategy.rollingUpdate.partition")? {
        // Only the replicas with an ordinal at or above the partition are updated.
        let above = if partition > 0 { format!(" above partition {partition}") } else { String::new() };
        // Saturating: a negative partition is invalid but may still be in the JSON given.
        let above_partition = want.saturating_sub(partition);
        if let Some(shortfall) = short("ReplicasNotUpdated", updated, above_partition, "replicas updated") {
            return Ok(Health { message: shortfall.message + &above, ..shortfall });
        }
        return Ok(if partition > 0 {
            Health::current("PartitionRolledOut", format!("{} updated{above}", count(updated, "replica")))
        } else {
            ready
        });
    }
    if let Some(shortfall) =
        short("ReplicasNotCurrent", reported(o, "currentReplicas")?, want, "replicas at the current revision")
    {
        return Ok(shortfall);
    }
    let current = o.string("status.currentRevision")?.unwrap_or_default();
    let update = o.string("status.updateRevision")?.unwrap_or_default();
    if current != update {
        return Ok(Health::in_progress(
            "RevisionMismatch",
            format!("current revision {current:?} is not the update revision {update:?} yet"),
        ));
    }
    Ok(ready)
}

/// A DaemonSet must have been observed by its controller (its `status` means nothing
/// before), then waits until every node that should run its pod runs an updated,
/// available and ready one.
pub(super) fn daemon_set(o: &Object<'_>) -> Result<Health, Malformed> {
    if o.int("metadata.generation")?.is_none() {
        return Ok(Health::in_progress(
            "NoGeneration",
            "no metadata.generation yet, the object is not stored",
        ));
    }
    if o.int("status.observedGeneration")?.is_none() {
        return Ok(Health::in_progress("NotObserved", "not yet observed by the DaemonSet controller"));
    }
    let Some(want) = o.int("status.desiredNumberScheduled")? else {
        return Ok(Health::in_progress("NoDesiredNumber", "status.desiredNumberScheduled not set yet"));
    };
    if let Some(shortfall) = first([
        short("PodsNotScheduled", reported(o, "currentNumberScheduled")?, want, "nodes running the pod"),
        short("PodsNotUpdated", reported(o, "updatedNumberScheduled")?, want, "pods updated"),
        short("PodsUnavailable", reported(o, "numberAvailable")?, want, "pods available"),
        short("PodsNotReady", reported(o, "numberReady")?, want, "pods ready"),
    ]) {
        return Ok(shortfall);
    }
    Ok(Health::current("Ready", format!("{} ready", count(want, "pod"))))
}

/// A ReplicaSet whose pods cannot be created (`ReplicaFailure`, e.g. over quota) is
/// `InProgress` with the controller's words; otherwise it waits for its replicas to be
/// labeled, available and ready, and for extra ones to go.
pub(super) fn replica_set(o: &Object<'_>) -> Result<Health, Malformed> {
    if let Some(c) = o.true_condition("ReplicaFailure")? {
        return Ok(Health::in_progress("ReplicaFailure", detailed("pods cannot be created", c.message())));
    }
    let want = desired(o)?;
    let replicas = reported(o, "replicas")?;
    if let Some(shortfall) = first([
        short("ReplicasNotLabeled", reported(o, "fullyLabeledReplicas")?, want, "replicas labeled"),
        short("ReplicasUnavailable", reported(o, "availableReplicas")?, want, "replicas available"),
        short("ReplicasNotReady", reported(o, "readyReplicas")?, want, "replicas ready"),
        extra(replicas, want),
    ]) {
        return Ok(shortfall);
    }
    Ok(Health::current("Available", format!("{} available", count(replicas, "replica"))))
}

#[cfg(test)]
mod tests;

//! `batch`: Job. A Job is `Current` as soon as it has started (it is doing what it was
//! asked) and stays so when it completes; it is `Failed` when its controller gave up.

use super::{count, detailed};
use crate::Health;
use crate::read::{Malformed, Object};

/// A Job's verdict comes from its first `Complete`, `Failed` or `Suspended` condition that
/// is `True` (`Suspended` only while `spec.suspend` is set); without one it is
/// `InProgress` until `status.startTime` is set.
pub(super) fn job(o: &Object<'_>) -> Result<Health, Malformed> {
    let parallelism = o.int("spec.parallelism")?.unwrap_or(1);
    let completions = o.int("spec.completions")?.unwrap_or(parallelism);
    let succeeded = o.int("status.succeeded")?.unwrap_or(0);
    let active = o.int("status.active")?.unwrap_or(0);
    let failed = o.int("status.failed")?.unwrap_or(0);
    let suspended = o.boolean("spec.suspend")?.unwrap_or(false);
    let started = o.string("status.startTime")?.is_some_and(|t| !t.is_empty());
    for c in o.conditions()? {
        if c.is_true("Complete") {
            return Ok(Health::current(
                "JobComplete",
                format!("complete, {succeeded} of {completions} pods succeeded"),
            ));
        }
        if c.is_true("Failed") {
            let message = format!("{} failed, {succeeded} of {completions} succeeded", count(failed, "pod"));
            return Ok(Health::failed("JobFailed", detailed(message, c.message())));
        }
        if c.is_true("Suspended") && suspended {
            return Ok(Health::current("JobSuspended", "suspended"));
        }
    }
    Ok(if started {
        Health::current(
            "JobRunning",
            format!("running, {active} active, {succeeded} succeeded, {failed} failed"),
        )
    } else {
        Health::in_progress("JobNotStarted", "not started yet")
    })
}

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

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use crate::Status::{Current, Failed, InProgress};
    use crate::testing::{Case, check, malformed, object};

    fn job(spec: Value, status: Value) -> Value {
        object("batch/v1", "Job", json!({"spec": spec, "status": status}))
    }

    const STARTED: &str = "2026-06-04T01:17:13Z";

    #[test]
    fn job_by_its_conditions_and_start() {
        let running = |name, object| {
            Case::new(name, object, Current, "JobRunning", "running, 2 active, 3 succeeded, 1 failed")
        };
        check(&[
            // kstatus: jobNoStatus, JobNotStarted.
            Case::new(
                "no status",
                job(json!({}), json!(null)),
                InProgress,
                "JobNotStarted",
                "not started yet",
            ),
            Case::new(
                "an empty startTime",
                job(json!({}), json!({"startTime": ""})),
                InProgress,
                "JobNotStarted",
                "not started yet",
            ),
            // kstatus: jobInProgress: a running Job is doing what it was asked, so Current;
            // conditions that are False say nothing.
            running(
                "running",
                job(
                    json!({"completions": 10, "parallelism": 2}),
                    json!({"startTime": STARTED, "succeeded": 3, "failed": 1, "active": 2, "conditions": [
                        {"type": "Failed", "status": "False"}, {"type": "Complete", "status": "False"}]}),
                ),
            ),
            // Since Kubernetes 1.31 the controller marks FailureTarget before it ends the pods
            // and sets Failed; kstatus waits for Failed.
            running(
                "FailureTarget before Failed",
                job(
                    json!({}),
                    json!({"startTime": STARTED, "succeeded": 3, "failed": 1, "active": 2, "conditions": [
                        {"type": "FailureTarget", "status": "True", "reason": "BackoffLimitExceeded"}]}),
                ),
            ),
            // kstatus: jobComplete; completions default to parallelism.
            Case::new(
                "complete",
                job(
                    json!({}),
                    json!({"succeeded": 1, "conditions": [{"type": "Complete", "status": "True"}]}),
                ),
                Current,
                "JobComplete",
                "complete, 1 of 1 pods succeeded",
            ),
            Case::new(
                "complete, completions from parallelism",
                job(
                    json!({"parallelism": 3}),
                    json!({"startTime": STARTED, "succeeded": 3, "conditions": [{"type": "Complete", "status": "True"}]}),
                ),
                Current,
                "JobComplete",
                "complete, 3 of 3 pods succeeded",
            ),
            // kstatus: jobFailed.
            Case::new(
                "failed",
                job(
                    json!({"completions": 4}),
                    json!({"startTime": STARTED, "succeeded": 3, "failed": 1, "conditions": [
                        {"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded",
                         "message": "Job has reached the specified backoff limit"}]}),
                ),
                Failed,
                "JobFailed",
                "1 pod failed, 3 of 4 succeeded: Job has reached the specified backoff limit",
            ),
            Case::new(
                "failed without a message",
                job(
                    json!({"completions": 2}),
                    json!({"failed": 7, "conditions": [{"type": "Failed", "status": "True"}]}),
                ),
                Failed,
                "JobFailed",
                "7 pods failed, 0 of 2 succeeded",
            ),
            Case::new(
                "the first True condition decides",
                job(
                    json!({}),
                    json!({"succeeded": 1, "conditions": [{"type": "Complete", "status": "True"},
                                                          {"type": "Failed", "status": "True"}]}),
                ),
                Current,
                "JobComplete",
                "complete, 1 of 1 pods succeeded",
            ),
            // Suspended counts only while spec.suspend is set: a resumed Job whose condition
            // is not cleared yet has not started.
            Case::new(
                "suspended",
                job(
                    json!({"suspend": true}),
                    json!({"conditions": [{"type": "Suspended", "status": "True", "reason": "JobSuspended"}]}),
                ),
                Current,
                "JobSuspended",
                "suspended",
            ),
            Case::new(
                "resumed, the condition still True",
                job(
                    json!({"suspend": false}),
                    json!({"conditions": [{"type": "Suspended", "status": "True"}]}),
                ),
                InProgress,
                "JobNotStarted",
                "not started yet",
            ),
            Case::new(
                "suspend asked, not yet done",
                job(json!({"suspend": true}), json!({})),
                InProgress,
                "JobNotStarted",
                "not started yet",
            ),
        ]);
    }

    #[test]
    fn a_cron_job_is_current_once_it_exists() {
        // kstatus: cronjobNoStatus, cronjobWithStatus; its Jobs have their own health.
        let current = |name, object| Case::new(name, object, Current, "Current", "nothing to wait for");
        check(&[
            current("no status", object("batch/v1", "CronJob", json!({"spec": {"schedule": "@hourly"}}))),
            current(
                "with status",
                object("batch/v1", "CronJob", json!({"status": {"active": [{"name": "j"}]}})),
            ),
        ]);
    }

    #[test]
    fn malformed_job_fields() {
        check(&[
            malformed(
                "spec.suspend",
                job(json!({"suspend": "true"}), json!({})),
                "spec.suspend is not a boolean",
            ),
            malformed(
                "status.startTime",
                job(json!({}), json!({"startTime": 0})),
                "status.startTime is not a string",
            ),
            malformed(
                "status.active",
                job(json!({}), json!({"active": "2"})),
                "status.active is not an integer",
            ),
            malformed(
                "spec.completions",
                job(json!({"completions": 1.5}), json!({})),
                "spec.completions is not an integer",
            ),
            malformed(
                "a condition's type",
                job(json!({}), json!({"conditions": [{"type": ["Complete"], "status": "True"}]})),
                "status.conditions[0].type is not a string",
            ),
        ]);
    }
}

//! The `apps` rules case by case. The verdicts and the order of the checks are kstatus'
//! (`core.go`, and the cases of its `status_compute_test.go`); where a case mirrors one of
//! kstatus' its reason is named in a comment, since ours are ctop's own words.

use serde_json::{Value, json};

use crate::Status::{self, Current, Failed, InProgress};
use crate::testing::{Case, check, malformed, object};

fn deployment(spec: Value, status: Value) -> Value {
    object("apps/v1", "Deployment", json!({"spec": spec, "status": status}))
}

/// The conditions of a finished rollout: the new ReplicaSet is available, and so is the
/// Deployment.
fn rolled_out() -> Value {
    json!([
        {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"},
        {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"},
    ])
}

/// A Deployment of two replicas with a deadline, a finished rollout's conditions and
/// `counts` (replicas, updated, available, ready).
fn two_replicas(counts: [i64; 4]) -> Value {
    let [replicas, updated, available, ready] = counts;
    deployment(
        json!({"replicas": 2, "progressDeadlineSeconds": 600}),
        json!({"observedGeneration": 1, "replicas": replicas, "updatedReplicas": updated,
               "availableReplicas": available, "readyReplicas": ready, "conditions": rolled_out()}),
    )
}

#[test]
fn deployment_replica_counts_in_kstatus_order() {
    let counts = |name, counts, status, reason, message| {
        Case::new(name, two_replicas(counts), status, reason, message)
    };
    let waits = |name, c, reason, message| counts(name, c, InProgress, reason, message);
    check(&[
        // kstatus: LessReplicas (spec.replicas defaults to 1, as the controller reads it).
        Case::new(
            "no status",
            deployment(json!({}), json!(null)),
            InProgress,
            "ReplicasPending",
            "0 of 1 replicas created",
        ),
        waits("1 of 2 created", [1, 1, 1, 1], "ReplicasPending", "1 of 2 replicas created"),
        // kstatus: LessUpdated, ExtraPods.
        waits("a rollout under way", [2, 1, 2, 2], "ReplicasNotUpdated", "1 of 2 replicas updated"),
        waits("the surge of a rollout", [3, 2, 2, 2], "ExtraReplicas", "1 extra replica pending termination"),
        waits("a scale-down", [5, 5, 5, 5], "ExtraReplicas", "3 extra replicas pending termination"),
        // kstatus: LessAvailable (counted against the updated replicas), LessReady.
        waits("1 of 2 available", [2, 2, 1, 1], "ReplicasUnavailable", "1 of 2 replicas available"),
        waits("available, not ready", [2, 2, 2, 1], "ReplicasNotReady", "1 of 2 replicas ready"),
        counts("rolled out", [2, 2, 2, 2], Current, "Available", "2 replicas available"),
        Case::new(
            "one replica",
            deployment(
                json!({"replicas": 1}),
                json!({"replicas": 1, "updatedReplicas": 1, "availableReplicas": 1, "readyReplicas": 1,
                       "conditions": rolled_out()}),
            ),
            Current,
            "Available",
            "1 replica available",
        ),
        Case::new(
            "scaled to zero",
            deployment(json!({"replicas": 0}), json!({"conditions": rolled_out()})),
            Current,
            "Available",
            "0 replicas available",
        ),
        Case::new(
            "extensions/v1beta1 has the same rule",
            object(
                "extensions/v1beta1",
                "Deployment",
                json!({"spec": {"replicas": 2}, "status": {"replicas": 1}}),
            ),
            InProgress,
            "ReplicasPending",
            "1 of 2 replicas created",
        ),
    ]);
}

#[test]
fn deployment_conditions_and_deadline() {
    // Every replica created, updated, available and ready: only the conditions decide.
    let with = |spec: Value, conditions: Value| {
        deployment(
            spec,
            json!({"replicas": 2, "updatedReplicas": 2, "availableReplicas": 2, "readyReplicas": 2,
                   "conditions": conditions}),
        )
    };
    let deadline = || json!({"replicas": 2, "progressDeadlineSeconds": 600});
    let progressing = |name, object| {
        Case::new(
            name,
            object,
            InProgress,
            "Progressing",
            "rollout in progress, the new replica set is not available yet",
        )
    };
    let stuck = |name, object| {
        Case::new(
            name,
            object,
            Failed,
            "ProgressDeadlineExceeded",
            "rollout made no progress within its deadline",
        )
    };
    let available = json!({"type": "Available", "status": "True"});
    check(&[
        // kstatus: depNotProgressing, ReplicaSetNotAvailable.
        progressing(
            "counts met, the new ReplicaSet not reported available",
            with(
                deadline(),
                json!([{"type": "Progressing", "status": "False", "reason": "Some reason"}, available]),
            ),
        ),
        progressing(
            "Progressing True while the ReplicaSet is still updated",
            with(
                deadline(),
                json!([{"type": "Progressing", "status": "True", "reason": "ReplicaSetUpdated"}, available]),
            ),
        ),
        progressing("a deadline and no conditions yet", with(deadline(), json!([]))),
        // kstatus: depNoProgressDeadlineSeconds: without a deadline the controller never
        // reports progress, so there is none to wait for; 2^31-1 is its "none".
        Case::new(
            "no deadline, Available",
            with(json!({"replicas": 2}), json!([available])),
            Current,
            "Available",
            "2 replicas available",
        ),
        Case::new(
            "the deadline 2^31-1, Available",
            with(json!({"replicas": 2, "progressDeadlineSeconds": 2_147_483_647}), json!([available])),
            Current,
            "Available",
            "2 replicas available",
        ),
        // kstatus: depNotAvailable, DeploymentNotAvailable.
        Case::new(
            "Available False",
            with(
                deadline(),
                json!([{"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"},
                       {"type": "Available", "status": "False", "reason": "MinimumReplicasUnavailable"}]),
            ),
            InProgress,
            "DeploymentUnavailable",
            "the Available condition is not True yet",
        ),
        // kstatus' Failed: the Progressing condition's reason alone decides, whatever its
        // status and the counts.
        stuck(
            "past the progress deadline",
            with(
                deadline(),
                json!([available, {"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded",
                                   "message": "ReplicaSet \"shop-5d8\" has timed out progressing."}]),
            ),
        ),
        stuck(
            "past the deadline wins over replicas still missing",
            deployment(
                deadline(),
                json!({"replicas": 2, "updatedReplicas": 1, "conditions": [
                    {"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded"}]}),
            ),
        ),
        // Paused: the controller sets Progressing Unknown/DeploymentPaused and stops
        // reporting progress, so kstatus keeps the Deployment InProgress until resumed.
        progressing(
            "paused after its rollout",
            with(
                json!({"replicas": 2, "progressDeadlineSeconds": 600, "paused": true}),
                json!([available, {"type": "Progressing", "status": "Unknown", "reason": "DeploymentPaused"}]),
            ),
        ),
        Case::new(
            "paused in the middle of a rollout",
            deployment(
                json!({"replicas": 2, "paused": true}),
                json!({"replicas": 2, "updatedReplicas": 1, "availableReplicas": 2, "readyReplicas": 2,
                       "conditions": [{"type": "Progressing", "status": "Unknown", "reason": "DeploymentPaused"}]}),
            ),
            InProgress,
            "ReplicasNotUpdated",
            "1 of 2 replicas updated",
        ),
    ]);
}

fn stateful_set(spec: Value, status: Value) -> Value {
    object("apps/v1", "StatefulSet", json!({"spec": spec, "status": status}))
}

/// Four replicas asked for, all created and ready, `current` of them at the current
/// revision and `updated` at the update revision, with those two revisions.
fn four_ready(current: i64, updated: i64, revisions: [&str; 2]) -> Value {
    stateful_set(
        json!({"replicas": 4}),
        json!({"observedGeneration": 1, "replicas": 4, "readyReplicas": 4, "currentReplicas": current,
               "updatedReplicas": updated, "currentRevision": revisions[0], "updateRevision": revisions[1]}),
    )
}

/// Four replicas, all created and ready, `updated` of them updated, with a partition.
fn partitioned(partition: i64, updated: i64) -> Value {
    stateful_set(
        json!({"replicas": 4, "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": partition}}}),
        json!({"replicas": 4, "readyReplicas": 4, "currentReplicas": 4 - updated, "updatedReplicas": updated,
               "currentRevision": "web-1", "updateRevision": "web-2"}),
    )
}

#[test]
fn stateful_set_replicas_revisions_and_partitions() {
    let four = |status: Value| stateful_set(json!({"replicas": 4}), status);
    check(&[
        // kstatus: stsNoStatus and stsBadStatus, LessReplicas.
        Case::new(
            "no status",
            stateful_set(json!({}), json!(null)),
            InProgress,
            "ReplicasPending",
            "0 of 1 replicas created",
        ),
        Case::new(
            "only currentReplicas reported",
            stateful_set(json!({}), json!({"observedGeneration": 1, "currentReplicas": 1})),
            InProgress,
            "ReplicasPending",
            "0 of 1 replicas created",
        ),
        // kstatus: stsLessReady, LessReady (ordered: each pod waits for the one before).
        Case::new(
            "pods coming up one by one",
            four(json!({"replicas": 4, "readyReplicas": 2, "currentReplicas": 4})),
            InProgress,
            "ReplicasNotReady",
            "2 of 4 replicas ready",
        ),
        // kstatus: stsExtraPods.
        Case::new(
            "scaled down, pods still there",
            four(json!({"replicas": 8, "readyReplicas": 4, "currentReplicas": 4})),
            InProgress,
            "ExtraReplicas",
            "4 extra replicas pending termination",
        ),
        // kstatus: stsOK (no revisions reported: both empty, so equal).
        Case::new(
            "all ready, no revisions",
            four(json!({"replicas": 4, "readyReplicas": 4, "currentReplicas": 4})),
            Current,
            "Ready",
            "4 replicas ready",
        ),
        Case::new("rolled out", four_ready(4, 4, ["web-2", "web-2"]), Current, "Ready", "4 replicas ready"),
        // kstatus: stsLessCurrent: an ordered rolling update replaces the highest ordinal
        // first; the pods still at the old revision are not current.
        Case::new(
            "a rolling update half done",
            four_ready(2, 2, ["web-1", "web-2"]),
            InProgress,
            "ReplicasNotCurrent",
            "2 of 4 replicas at the current revision",
        ),
        // kstatus: RevisionMismatch: every pod updated, currentRevision not moved yet.
        Case::new(
            "every pod updated, currentRevision not moved",
            four_ready(4, 4, ["web-1", "web-2"]),
            InProgress,
            "RevisionMismatch",
            "current revision \"web-1\" is not the update revision \"web-2\" yet",
        ),
        // OnDelete: the user replaces pods; kstatus calls it Current whatever the counts.
        Case::new(
            "OnDelete",
            stateful_set(
                json!({"replicas": 3, "updateStrategy": {"type": "OnDelete"}}),
                json!({"replicas": 0}),
            ),
            Current,
            "OnDelete",
            "OnDelete update strategy, pods are updated when deleted",
        ),
        // kstatus: PartitionRollout: only ordinals at or above the partition are updated,
        // and the revisions stay apart by design.
        Case::new(
            "a partition, not yet rolled out",
            partitioned(2, 1),
            InProgress,
            "ReplicasNotUpdated",
            "1 of 2 replicas updated above partition 2",
        ),
        Case::new(
            "a partition rolled out",
            partitioned(2, 2),
            Current,
            "PartitionRolledOut",
            "2 replicas updated above partition 2",
        ),
        Case::new(
            "partition 0, not rolled out",
            partitioned(0, 3),
            InProgress,
            "ReplicasNotUpdated",
            "3 of 4 replicas updated",
        ),
        Case::new(
            "partition 0, rolled out, revisions apart",
            partitioned(0, 4),
            Current,
            "Ready",
            "4 replicas ready",
        ),
        Case::new(
            "a partition above every ordinal",
            partitioned(5, 0),
            Current,
            "PartitionRolledOut",
            "0 replicas updated above partition 5",
        ),
        Case::new(
            "readiness is checked before the partition",
            stateful_set(
                json!({"replicas": 4, "updateStrategy": {"rollingUpdate": {"partition": 2}}}),
                json!({"replicas": 4, "readyReplicas": 3, "updatedReplicas": 2}),
            ),
            InProgress,
            "ReplicasNotReady",
            "3 of 4 replicas ready",
        ),
    ]);
}

fn daemon_set(metadata: Value, status: Value) -> Value {
    object("apps/v1", "DaemonSet", json!({"metadata": metadata, "status": status}))
}

/// An observed DaemonSet at generation 1 that should run on `desired` nodes, with `counts`
/// (current, updated, available, ready).
fn on_nodes(desired: i64, counts: [Value; 4]) -> Value {
    let [current, updated, available, ready] = counts;
    daemon_set(
        json!({"name": "x", "generation": 1}),
        json!({"observedGeneration": 1, "desiredNumberScheduled": desired, "currentNumberScheduled": current,
               "updatedNumberScheduled": updated, "numberAvailable": available, "numberReady": ready}),
    )
}

#[test]
fn daemon_set_pods_per_node() {
    let four = |name, counts: [i64; 4], status: Status, reason, message| {
        Case::new(name, on_nodes(4, counts.map(Value::from)), status, reason, message)
    };
    let gen1 = || json!({"name": "x", "generation": 1});
    check(&[
        // kstatus: dsNoStatus, NoObservedGeneration: a DaemonSet's status means nothing
        // before its controller observed it.
        Case::new(
            "not observed yet",
            daemon_set(gen1(), json!(null)),
            InProgress,
            "NotObserved",
            "not yet observed by the DaemonSet controller",
        ),
        Case::new(
            "no generation: not stored",
            daemon_set(json!({"name": "x"}), json!({"desiredNumberScheduled": 0})),
            InProgress,
            "NoGeneration",
            "no metadata.generation yet, the object is not stored",
        ),
        // kstatus: dsBadStatus.
        Case::new(
            "observed, no desired number",
            daemon_set(gen1(), json!({"observedGeneration": 1, "currentReplicas": 1})),
            InProgress,
            "NoDesiredNumber",
            "status.desiredNumberScheduled not set yet",
        ),
        // kstatus: dsDifferentGeneration (the generic rule).
        Case::new(
            "a newer generation",
            daemon_set(json!({"name": "x", "generation": 2}), json!({"observedGeneration": 1})),
            InProgress,
            "GenerationNotObserved",
            "generation 2 not yet observed, the status is of generation 1",
        ),
        four(
            "a node without its pod",
            [3, 3, 3, 3],
            InProgress,
            "PodsNotScheduled",
            "3 of 4 nodes running the pod",
        ),
        four("a rollout under way", [4, 2, 4, 4], InProgress, "PodsNotUpdated", "2 of 4 pods updated"),
        // kstatus: dsLessAvailable, dsLessReady, dsOK.
        four("pods not available", [4, 4, 2, 4], InProgress, "PodsUnavailable", "2 of 4 pods available"),
        four("pods not ready", [4, 4, 4, 2], InProgress, "PodsNotReady", "2 of 4 pods ready"),
        four("every node runs it", [4, 4, 4, 4], Current, "Ready", "4 pods ready"),
        Case::new("no node matches", on_nodes(0, Default::default()), Current, "Ready", "0 pods ready"),
        Case::new("one node", on_nodes(1, [1, 1, 1, 1].map(Value::from)), Current, "Ready", "1 pod ready"),
        Case::new(
            "extensions/v1beta1 has the same rule",
            object("extensions/v1beta1", "DaemonSet", json!({})),
            InProgress,
            "NotObserved",
            "not yet observed by the DaemonSet controller",
        ),
    ]);
}

fn replica_set(status: Value) -> Value {
    object("apps/v1", "ReplicaSet", json!({"spec": {"replicas": 2}, "status": status}))
}

/// A ReplicaSet of two replicas with `counts` (replicas, labeled, available, ready) and
/// `conditions`.
fn counted_replica_set(counts: [i64; 4], conditions: Value) -> Value {
    let [replicas, labeled, available, ready] = counts;
    replica_set(json!({"observedGeneration": 1, "replicas": replicas, "fullyLabeledReplicas": labeled,
                       "availableReplicas": available, "readyReplicas": ready, "conditions": conditions}))
}

#[test]
fn replica_set_counts_and_replica_failure() {
    let waits = |name, counts, reason, message| {
        Case::new(name, counted_replica_set(counts, json!([])), InProgress, reason, message)
    };
    let failing = |condition: Value| counted_replica_set([2, 2, 2, 2], json!([condition]));
    check(&[
        // kstatus: rsNoStatus, LessLabelled.
        Case::new(
            "no status",
            object("apps/v1", "ReplicaSet", json!({})),
            InProgress,
            "ReplicasNotLabeled",
            "0 of 1 replicas labeled",
        ),
        // kstatus: rsLessAvailable, rsLessReady.
        waits("not available", [2, 2, 1, 2], "ReplicasUnavailable", "1 of 2 replicas available"),
        waits("not ready", [2, 2, 2, 0], "ReplicasNotReady", "0 of 2 replicas ready"),
        waits("extra replicas", [3, 3, 3, 3], "ExtraReplicas", "1 extra replica pending termination"),
        // kstatus: rsOK1, rsOK2.
        Case::new(
            "available",
            counted_replica_set([2, 2, 2, 2], json!(null)),
            Current,
            "Available",
            "2 replicas available",
        ),
        Case::new(
            "ReplicaFailure False is no failure",
            failing(json!({"type": "ReplicaFailure", "status": "False"})),
            Current,
            "Available",
            "2 replicas available",
        ),
        // kstatus: rsReplicaFailure: InProgress, not Failed (a quota may be raised).
        Case::new(
            "pods refused by a quota",
            failing(json!({"type": "ReplicaFailure", "status": "True", "reason": "FailedCreate",
                           "message": "pods \"web-x\" is forbidden: exceeded quota: pods."})),
            InProgress,
            "ReplicaFailure",
            "pods cannot be created: pods \"web-x\" is forbidden: exceeded quota: pods",
        ),
        Case::new(
            "ReplicaFailure without a message",
            failing(json!({"type": "ReplicaFailure", "status": "True"})),
            InProgress,
            "ReplicaFailure",
            "pods cannot be created",
        ),
    ]);
}

#[test]
fn malformed_apps_fields() {
    check(&[
        malformed(
            "Deployment spec.replicas",
            deployment(json!({"replicas": "2"}), json!({})),
            "spec.replicas is not an integer",
        ),
        malformed(
            "Deployment status.availableReplicas",
            deployment(json!({}), json!({"replicas": 1, "updatedReplicas": 1, "availableReplicas": 0.5})),
            "status.availableReplicas is not an integer",
        ),
        malformed(
            "Deployment spec.progressDeadlineSeconds",
            deployment(json!({"progressDeadlineSeconds": "600"}), json!({})),
            "spec.progressDeadlineSeconds is not an integer",
        ),
        malformed(
            "Deployment spec",
            object("apps/v1", "Deployment", json!({"spec": [2]})),
            "spec is not an object",
        ),
        malformed(
            "Deployment condition reason",
            deployment(json!({}), json!({"conditions": [{"type": "Progressing", "reason": false}]})),
            "status.conditions[0].reason is not a string",
        ),
        malformed(
            "StatefulSet spec.updateStrategy.type",
            stateful_set(json!({"updateStrategy": {"type": 1}}), json!({})),
            "spec.updateStrategy.type is not a string",
        ),
        malformed(
            "StatefulSet spec.updateStrategy",
            stateful_set(json!({"updateStrategy": "RollingUpdate"}), json!({})),
            "spec.updateStrategy is not an object",
        ),
        malformed(
            "StatefulSet partition",
            stateful_set(
                json!({"updateStrategy": {"rollingUpdate": {"partition": "2"}}}),
                json!({"replicas": 1, "readyReplicas": 1}),
            ),
            "spec.updateStrategy.rollingUpdate.partition is not an integer",
        ),
        malformed(
            "StatefulSet status.updateRevision",
            stateful_set(
                json!({}),
                json!({"replicas": 1, "readyReplicas": 1, "currentReplicas": 1, "updateRevision": 2}),
            ),
            "status.updateRevision is not a string",
        ),
        malformed(
            "DaemonSet status.desiredNumberScheduled",
            daemon_set(
                json!({"generation": 1}),
                json!({"observedGeneration": 1, "desiredNumberScheduled": "4"}),
            ),
            "status.desiredNumberScheduled is not an integer",
        ),
        malformed(
            "DaemonSet status.numberReady",
            on_nodes(1, [json!(1), json!(1), json!(1), json!(true)]),
            "status.numberReady is not an integer",
        ),
        malformed(
            "ReplicaSet status.fullyLabeledReplicas",
            replica_set(json!({"fullyLabeledReplicas": [2]})),
            "status.fullyLabeledReplicas is not an integer",
        ),
        malformed(
            "ReplicaSet condition status",
            replica_set(json!({"conditions": [{"type": "ReplicaFailure", "status": true}]})),
            "status.conditions[0].status is not a string",
        ),
    ]);
}

#[test]
fn counts_at_the_ends_of_the_integers_do_not_overflow() {
    check(&[
        Case::new(
            "a negative replica count as low as it goes",
            deployment(json!({"replicas": i64::MIN}), json!({"replicas": i64::MAX})),
            InProgress,
            "ExtraReplicas",
            "9223372036854775807 extra replicas pending termination",
        ),
        Case::new(
            "a negative partition as low as it goes",
            stateful_set(
                json!({"replicas": 1, "updateStrategy": {"rollingUpdate": {"partition": i64::MIN}}}),
                json!({"replicas": 1, "readyReplicas": 1, "updatedReplicas": 1}),
            ),
            InProgress,
            "ReplicasNotUpdated",
            "1 of 9223372036854775807 replicas updated",
        ),
    ]);
}

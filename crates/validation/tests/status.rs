//! Writes through the status subresource (`validate_status_update`): the status
//! strategies' checks of apps/v1 kinds (pkg/apis/apps/validation `Validate*StatusUpdate`)
//! and of Pods (core/validation `ValidatePodStatusUpdate`). A status that a controller
//! would normally write gives no causes.

mod common;

use common::*;
use ctop_validation::{KindKey, validate_status_update};
use serde_json::{Value, json};

fn with_status(mut obj: Value, status: Value) -> Value {
    obj["status"] = status;
    obj
}

#[test]
fn normal_statuses_are_valid() {
    let d = with_status(
        deployment(),
        json!({"observedGeneration": 2, "replicas": 3, "updatedReplicas": 3, "readyReplicas": 3, "availableReplicas": 2,
               "unavailableReplicas": 1, "conditions": [{"type": "Available", "status": "True"}]}),
    );
    assert_eq!(errors(&validate_status_update(&DEPLOYMENT, &d, &deployment())), Vec::<String>::new());
    let pod = json!({"metadata": {"name": "p"}, "spec": pod_spec(),
                     "status": {"phase": "Running", "containerStatuses": [{"name": "web", "state": {"running": {}}}]}});
    assert_eq!(errors(&validate_status_update(&POD, &pod, &pod)), Vec::<String>::new());
}

/// ValidateDeploymentStatus: counters non-negative, bounded by replicas and readyReplicas.
#[test]
fn deployment_status_counters() {
    let d = with_status(
        deployment(),
        json!({"replicas": 2, "updatedReplicas": -1, "readyReplicas": 3, "availableReplicas": 3}),
    );
    assert_eq!(
        errors(&validate_status_update(&DEPLOYMENT, &d, &deployment())),
        vec![
            "status.updatedReplicas: Invalid value: -1: must be greater than or equal to 0",
            "status.readyReplicas: Invalid value: 3: cannot be greater than status.replicas",
            "status.availableReplicas: Invalid value: 3: cannot be greater than status.replicas",
        ]
    );
}

/// ValidateStatefulSetStatusUpdate: availableReplicas ≤ readyReplicas, and IsDecremented(collisionCount).
#[test]
fn stateful_set_status_and_collision_count() {
    let sts = KindKey::new("apps", "StatefulSet");
    let old = json!({"status": {"replicas": 3, "collisionCount": 2}});
    let new =
        json!({"status": {"replicas": 3, "readyReplicas": 1, "availableReplicas": 2, "collisionCount": 1}});
    assert_eq!(
        errors(&validate_status_update(&sts, &new, &old)),
        vec![
            "status.availableReplicas: Invalid value: 2: cannot be greater than status.readyReplicas",
            "status.collisionCount: Invalid value: 1: cannot be decremented",
        ]
    );
    let cleared = json!({"status": {"replicas": 3}});
    assert_eq!(
        errors(&validate_status_update(&sts, &cleared, &old)),
        vec!["status.collisionCount: Invalid value: 0: cannot be decremented"]
    );
}

/// ValidateReplicaSetStatus and validateDaemonSetStatus.
#[test]
fn replica_set_and_daemon_set_status() {
    let rs = KindKey::new("apps", "ReplicaSet");
    let new = json!({"status": {"replicas": 1, "fullyLabeledReplicas": 2, "observedGeneration": -1}});
    assert_eq!(
        errors(&validate_status_update(&rs, &new, &json!({}))),
        vec![
            "status.observedGeneration: Invalid value: -1: must be greater than or equal to 0",
            "status.fullyLabeledReplicas: Invalid value: 2: cannot be greater than status.replicas",
        ]
    );
    let ds = KindKey::new("apps", "DaemonSet");
    let new = json!({"status": {"desiredNumberScheduled": 3, "numberReady": -2}});
    assert_eq!(
        errors(&validate_status_update(&ds, &new, &json!({}))),
        vec!["status.numberReady: Invalid value: -2: must be greater than or equal to 0"]
    );
}

/// ValidateContainerStateTransition / ValidateInitContainerStateTransition: with
/// restartPolicy Never a terminated container stays terminated; a sidecar may restart.
#[test]
fn pod_terminated_container_stays_terminated() {
    let mut spec = pod_spec();
    spec["restartPolicy"] = json!("Never");
    spec["initContainers"] = json!([{"name": "init", "image": "busybox"}, {"name": "proxy", "image": "envoy", "restartPolicy": "Always"}]);
    let old = json!({"spec": spec, "status": {
        "containerStatuses": [{"name": "web", "state": {"terminated": {"exitCode": 1}}}],
        "initContainerStatuses": [{"name": "init", "state": {"terminated": {"exitCode": 0}}},
                                  {"name": "proxy", "state": {"terminated": {"exitCode": 1}}}]}});
    let new = json!({"spec": old["spec"].clone(), "status": {
        "nominatedNodeName": "Node_1",
        "containerStatuses": [{"name": "web", "state": {"running": {}}}],
        "initContainerStatuses": [{"name": "init", "state": {"waiting": {}}}, {"name": "proxy", "state": {"running": {}}}]}});
    assert_eq!(
        errors(&validate_status_update(&POD, &new, &old)),
        vec![
            "status.nominatedNodeName: Invalid value: \"Node_1\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
            "status.containerStatuses[0].state: Forbidden: may not be transitioned to non-terminated state",
            "status.initContainerStatuses[0].state: Forbidden: may not be transitioned to non-terminated state",
        ]
    );
    // OnFailure lets a failed container restart.
    let mut old = old;
    old["spec"]["restartPolicy"] = json!("OnFailure");
    let mut new = new;
    new["status"].as_object_mut().map(|s| s.remove("nominatedNodeName"));
    new["status"]["initContainerStatuses"] = json!([]);
    assert_eq!(errors(&validate_status_update(&POD, &new, &old)), Vec::<String>::new());
}

//! The core group's rules case by case, against kstatus' `core.go` and the cases of its
//! `status_compute_test.go` (named in comments; the reasons and messages are ctop's words).

use serde_json::{Value, json};

use crate::Status::{Current, Failed, InProgress, Unknown};
use crate::testing::{Case, check, malformed, object};

fn pod(status: Value) -> Value {
    object("v1", "Pod", json!({"status": status}))
}

/// A Pod in phase `Running` with `conditions` and `containers` (name and waiting reason).
fn running(conditions: Value, containers: &[(&str, &str)]) -> Value {
    let statuses: Vec<Value> = containers
        .iter()
        .map(|(name, waiting)| json!({"name": name, "state": {"waiting": {"reason": waiting}}}))
        .collect();
    pod(json!({"phase": "Running", "conditions": conditions, "containerStatuses": statuses}))
}

#[test]
fn pod_by_phase() {
    let not_ready = json!([{"type": "Ready", "status": "False", "reason": "ContainersNotReady"}]);
    let completed = json!([{"type": "Ready", "status": "False", "reason": "PodCompleted"}]);
    check(&[
        // kstatus: podNoStatus, PodNotObserved.
        Case::new("no status", object("v1", "Pod", json!({})), InProgress, "PodNotObserved", "no phase yet"),
        // kstatus: podReady.
        Case::new(
            "running and ready",
            running(json!([{"type": "Ready", "status": "True"}]), &[]),
            Current,
            "PodReady",
            "running and ready",
        ),
        // kstatus: PodRunningNotReady.
        Case::new(
            "running, not ready",
            running(not_ready.clone(), &[]),
            InProgress,
            "PodNotReady",
            "running but not ready",
        ),
        // kstatus: podCompletedSuccessfully, podCompletedFailed: a Pod that ran to its end is
        // Current either way (nothing more will happen to it).
        Case::new(
            "succeeded",
            pod(json!({"phase": "Succeeded", "conditions": completed})),
            Current,
            "PodSucceeded",
            "completed successfully",
        ),
        Case::new(
            "failed",
            pod(json!({"phase": "Failed", "conditions": completed})),
            Current,
            "PodFailed",
            "completed without success",
        ),
        Case::new(
            "evicted",
            pod(
                json!({"phase": "Failed", "reason": "Evicted", "message": "The node was low on resource: memory."}),
            ),
            Current,
            "PodFailed",
            "completed without success (Evicted)",
        ),
        // kstatus: podUnschedulable, PodUnschedulable (at once: kstatus first waits 15s after
        // creation, which needs a clock; see the crate's docs).
        Case::new(
            "unschedulable",
            pod(json!({"phase": "Pending", "conditions": [
                {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                 "message": "0/3 nodes are available: 3 Insufficient cpu."}]})),
            Failed,
            "PodUnschedulable",
            "cannot be scheduled: 0/3 nodes are available: 3 Insufficient cpu",
        ),
        Case::new(
            "not scheduled for another reason",
            pod(json!({"phase": "Pending", "conditions": [
                {"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}]})),
            InProgress,
            "PodPending",
            "pending",
        ),
        Case::new(
            "scheduled, containers being created",
            pod(json!({"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "True"}],
                       "containerStatuses": [{"name": "app", "state": {"waiting": {"reason": "ContainerCreating"}}}]})),
            InProgress,
            "PodPending",
            "pending",
        ),
        // The API's deprecated phase for a Pod whose node was lost: kstatus has no rule for
        // it (an error there).
        Case::new(
            "phase Unknown",
            pod(json!({"phase": "Unknown"})),
            Unknown,
            "UnknownPhase",
            "unknown phase \"Unknown\"",
        ),
    ]);
}

#[test]
fn pod_containers_in_crash_loop_back_off() {
    let not_ready = json!([{"type": "Ready", "status": "False"}]);
    let looping = |name, object, names| Case::new(name, object, Failed, "ContainerCrashLooping", names);
    check(&[
        // kstatus: podCrashLooping.
        looping(
            "one container",
            running(json!([]), &[("nginx", "CrashLoopBackOff")]),
            "containers in CrashLoopBackOff: nginx",
        ),
        looping(
            "two of three containers",
            running(
                not_ready.clone(),
                &[("app", "CrashLoopBackOff"), ("proxy", ""), ("sidecar", "CrashLoopBackOff")],
            ),
            "containers in CrashLoopBackOff: app, sidecar",
        ),
        // Only a running Pod that is not ready is looked at, and only its containers.
        Case::new(
            "ready wins",
            running(json!([{"type": "Ready", "status": "True"}]), &[("app", "CrashLoopBackOff")]),
            Current,
            "PodReady",
            "running and ready",
        ),
        Case::new(
            "another waiting reason",
            running(not_ready.clone(), &[("app", "ImagePullBackOff")]),
            InProgress,
            "PodNotReady",
            "running but not ready",
        ),
        Case::new(
            "an init container is not looked at",
            pod(json!({"phase": "Running", "initContainerStatuses": [
                {"name": "init", "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]})),
            InProgress,
            "PodNotReady",
            "running but not ready",
        ),
        Case::new(
            "a container without a name is skipped",
            pod(
                json!({"phase": "Running", "containerStatuses": [{"state": {"waiting": {"reason": "CrashLoopBackOff"}}}]}),
            ),
            InProgress,
            "PodNotReady",
            "running but not ready",
        ),
    ]);
}

fn claim(spec: Value, status: Value) -> Value {
    object("v1", "PersistentVolumeClaim", json!({"spec": spec, "status": status}))
}

#[test]
fn persistent_volume_claim_until_bound() {
    check(&[
        // kstatus: pvcNoStatus, pvcBound.
        Case::new("no status", claim(json!({}), json!(null)), InProgress, "NotBound", "not bound yet"),
        Case::new(
            "pending",
            claim(json!({}), json!({"phase": "Pending"})),
            InProgress,
            "NotBound",
            "phase Pending, not Bound yet",
        ),
        // kstatus has no Failed for a claim: a lost one waits like a pending one.
        Case::new(
            "lost",
            claim(json!({}), json!({"phase": "Lost"})),
            InProgress,
            "NotBound",
            "phase Lost, not Bound yet",
        ),
        Case::new(
            "bound",
            claim(json!({"volumeName": "pvc-3f2a"}), json!({"phase": "Bound"})),
            Current,
            "Bound",
            "bound to volume pvc-3f2a",
        ),
        Case::new(
            "bound, no volume named",
            claim(json!({}), json!({"phase": "Bound"})),
            Current,
            "Bound",
            "bound",
        ),
    ]);
}

fn service(spec: Value, status: Value) -> Value {
    object("v1", "Service", json!({"spec": spec, "status": status}))
}

/// A `LoadBalancer` Service with a cluster IP and `ingress` in its status.
fn load_balancer(ingress: Value) -> Value {
    service(
        json!({"type": "LoadBalancer", "clusterIP": "10.96.0.12"}),
        json!({"loadBalancer": {"ingress": ingress}}),
    )
}

#[test]
fn service_by_type() {
    let pending = |name, object| {
        Case::new(
            name,
            object,
            InProgress,
            "LoadBalancerPending",
            "waiting for the load balancer's IP or hostname",
        )
    };
    check(&[
        // kstatus: serviceDefault, serviceNodePort.
        Case::new(
            "no spec",
            service(json!(null), json!(null)),
            Current,
            "Current",
            "type ClusterIP, nothing to wait for",
        ),
        Case::new(
            "an empty type",
            service(json!({"type": ""}), json!(null)),
            Current,
            "Current",
            "type ClusterIP, nothing to wait for",
        ),
        Case::new(
            "NodePort",
            service(json!({"type": "NodePort"}), json!(null)),
            Current,
            "Current",
            "type NodePort, nothing to wait for",
        ),
        Case::new(
            "ExternalName",
            service(json!({"type": "ExternalName", "externalName": "db.example.com"}), json!(null)),
            Current,
            "Current",
            "type ExternalName, nothing to wait for",
        ),
        // kstatus: serviceLBnok.
        Case::new(
            "LoadBalancer without a cluster IP",
            service(json!({"type": "LoadBalancer"}), json!(null)),
            InProgress,
            "NoIPAssigned",
            "no cluster IP assigned yet",
        ),
        // kstatus' serviceLBok is Current with a cluster IP alone; this waits for the load
        // balancer too (the crate's documented difference).
        pending("LoadBalancer, no ingress yet", load_balancer(json!(null))),
        pending("LoadBalancer, an empty ingress list", load_balancer(json!([]))),
        pending(
            "LoadBalancer, ingress without an address",
            load_balancer(json!([{"ip": ""}, {"ports": []}])),
        ),
        Case::new(
            "LoadBalancer with an IP",
            load_balancer(json!([{"ip": "203.0.113.10"}])),
            Current,
            "Ready",
            "load balancer at 203.0.113.10",
        ),
        Case::new(
            "LoadBalancer with a hostname",
            load_balancer(json!([{"ip": "", "hostname": "lb-1.elb.example.com"}])),
            Current,
            "Ready",
            "load balancer at lb-1.elb.example.com",
        ),
        Case::new(
            "the first entry with an address",
            load_balancer(json!([{}, {"ip": "203.0.113.11"}])),
            Current,
            "Ready",
            "load balancer at 203.0.113.11",
        ),
    ]);
}

#[test]
fn secrets_and_config_maps_are_current_once_they_exist() {
    let current = |name, object| Case::new(name, object, Current, "Current", "nothing to wait for");
    check(&[
        current("a Secret", object("v1", "Secret", json!({"data": {"token": "c2VjcmV0"}}))),
        current("a ConfigMap", object("v1", "ConfigMap", json!({"data": {"a": "b"}}))),
        // The rule is the core group's: a custom kind named Secret has the generic rules.
        Case::new(
            "a custom Secret",
            object(
                "vault.example.com/v1",
                "Secret",
                json!({"status": {"conditions": [{"type": "Ready", "status": "False"}]}}),
            ),
            InProgress,
            "NotReady",
            "not ready",
        ),
    ]);
}

#[test]
fn malformed_core_fields() {
    check(&[
        malformed("Pod status.phase", pod(json!({"phase": 3})), "status.phase is not a string"),
        malformed(
            "Pod status.reason",
            pod(json!({"phase": "Failed", "reason": ["Evicted"]})),
            "status.reason is not a string",
        ),
        malformed(
            "Pod containerStatuses",
            pod(json!({"phase": "Running", "containerStatuses": {"app": {}}})),
            "status.containerStatuses is not a list",
        ),
        malformed(
            "a Pod's container status",
            pod(json!({"phase": "Running", "containerStatuses": ["app"]})),
            "status.containerStatuses[0] is not an object",
        ),
        malformed(
            "a Pod's container state",
            pod(
                json!({"phase": "Running", "containerStatuses": [{"name": "a"}, {"name": "b", "state": "waiting"}]}),
            ),
            "status.containerStatuses[1].state is not an object",
        ),
        malformed(
            "a Pod's waiting reason",
            pod(
                json!({"phase": "Running", "containerStatuses": [{"name": "a", "state": {"waiting": {"reason": 5}}}]}),
            ),
            "status.containerStatuses[0].state.waiting.reason is not a string",
        ),
        malformed(
            "a Pod's container name",
            pod(json!({"phase": "Running", "containerStatuses": [{"name": 1}]})),
            "status.containerStatuses[0].name is not a string",
        ),
        malformed(
            "PVC status.phase",
            claim(json!({}), json!({"phase": ["Bound"]})),
            "status.phase is not a string",
        ),
        malformed(
            "PVC spec.volumeName",
            claim(json!({"volumeName": 7}), json!({"phase": "Bound"})),
            "spec.volumeName is not a string",
        ),
        malformed("Service spec.type", service(json!({"type": 1}), json!(null)), "spec.type is not a string"),
        malformed(
            "Service spec.clusterIP",
            service(json!({"type": "LoadBalancer", "clusterIP": 1}), json!(null)),
            "spec.clusterIP is not a string",
        ),
        malformed(
            "Service ingress",
            load_balancer(json!({"ip": "1.2.3.4"})),
            "status.loadBalancer.ingress is not a list",
        ),
        malformed(
            "a Service's ingress entry",
            load_balancer(json!(["1.2.3.4"])),
            "status.loadBalancer.ingress[0] is not an object",
        ),
        malformed(
            "a Service's ingress ip",
            load_balancer(json!([{"ip": 1}])),
            "status.loadBalancer.ingress[0].ip is not a string",
        ),
    ]);
}

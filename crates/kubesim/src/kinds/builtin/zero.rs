//! The Go zero value of a built-in kind: the structs its Go type always holds (a
//! non-pointer struct field is never omitted from JSON), which the real server shows even
//! when nobody wrote them. Server-side apply compares a create against this object (so those
//! structs never get a `".": {}` of their own), and a stored object read back without a
//! status gets [`status`].

use serde_json::{Value, json};

/// The Go zero value of `kind` in `api_version`: only which objects exist matters, and
/// `metadata` holds just the `creationTimestamp: null` of an empty `ObjectMeta`. Custom
/// resources and kinds without such structs start empty.
pub(crate) fn object(api_version: &str, kind: &str) -> Value {
    let group = ctop_core::group_of(api_version);
    let template = json!({"metadata": {"creationTimestamp": null}, "spec": {"containers": null}});
    let spec = match (group, kind) {
        ("", "Pod") => Some(json!({"containers": null})),
        ("apps", "Deployment") => Some(json!({"template": template, "strategy": {}})),
        ("apps", "ReplicaSet") | ("", "ReplicationController") | ("batch", "Job") => {
            Some(json!({"template": template}))
        }
        ("apps", "StatefulSet" | "DaemonSet") => Some(json!({"template": template, "updateStrategy": {}})),
        ("batch", "CronJob") => Some(
            json!({"jobTemplate": {"metadata": {"creationTimestamp": null}, "spec": {"template": template}}}),
        ),
        ("", "PersistentVolumeClaim") => Some(json!({"resources": {}})),
        ("", "Service" | "Namespace" | "PersistentVolume" | "Node")
        | ("networking.k8s.io", "Ingress")
        | ("policy", "PodDisruptionBudget")
        | ("coordination.k8s.io", "Lease") => Some(json!({})),
        _ => None,
    };
    let mut obj = json!({"apiVersion": api_version, "kind": kind});
    if let Some(spec) = spec {
        obj["spec"] = spec;
        if let Some(status) = status(group, kind) {
            obj["status"] = status;
        }
    }
    obj
}

/// The Go zero value of `kind`'s status struct, `None` for kinds without one (a Lease, a
/// custom resource).
pub(crate) fn status(group: &str, kind: &str) -> Option<Value> {
    Some(match (group, kind) {
        ("", "Service") | ("networking.k8s.io", "Ingress") => json!({"loadBalancer": {}}),
        ("", "Node") => json!({"daemonEndpoints": {"kubeletEndpoint": {}}, "nodeInfo": {}}),
        ("coordination.k8s.io", "Lease") => return None,
        _ => json!({}),
    })
}

//! The simulated nodes: Ready, with the capacity, addresses and node info a kubelet
//! reports, each with a Pod CIDR from which its Pods get their IPs.

use serde_json::{Value, json};

/// The name of node `i` (from 1).
pub(crate) fn name(i: usize) -> String {
    format!("kubesim-node-{i}")
}

/// The node's address: `10.0.0.<i+1>`.
pub(crate) fn ip(i: usize) -> String {
    format!("10.0.0.{}", i + 1)
}

/// Pod `n` of node `i` gets `10.244.<i>.<n>` (n from 2; wraps within the /24).
pub(crate) fn pod_ip(i: usize, n: u64) -> String {
    format!("10.244.{}.{}", i % 256, 2 + n % 253)
}

/// `n` Ready nodes; with `control_plane`, the first carries kubeadm's control-plane role
/// labels (it runs the control plane's mirror Pods; like a single-node kind cluster's, it
/// has no taint).
pub(crate) fn nodes(n: usize, control_plane: bool) -> Vec<Value> {
    (1..=n.max(1))
        .map(|i| {
            let mut node = node(i);
            if control_plane && i == 1 {
                node["metadata"]["labels"]["node-role.kubernetes.io/control-plane"] = json!("");
                node["metadata"]["labels"]["node.kubernetes.io/exclude-from-external-load-balancers"] =
                    json!("");
            }
            node
        })
        .collect()
}

fn node(i: usize) -> Value {
    let now = super::now();
    let name = name(i);
    let condition = |type_: &str, status: &str, reason: &str, message: &str| {
        json!({"type": type_, "status": status, "reason": reason, "message": message,
            "lastHeartbeatTime": now, "lastTransitionTime": now})
    };
    let resources = json!({"cpu": "32", "memory": "256Gi", "pods": "110", "ephemeral-storage": "1Ti"});
    json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
                "beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": "amd64", "type": "kubesim",
            },
            "annotations": {"node.alpha.kubernetes.io/ttl": "0"},
        },
        "spec": {"podCIDR": format!("10.244.{i}.0/24"), "podCIDRs": [format!("10.244.{i}.0/24")]},
        "status": {
            "capacity": resources, "allocatable": resources,
            "conditions": [
                condition("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
                condition("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
                condition("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
                condition("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
            ],
            "addresses": [{"type": "InternalIP", "address": ip(i)}, {"type": "Hostname", "address": name}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
                "machineID": "", "systemUUID": "", "bootID": "",
                "kernelVersion": "", "osImage": "kubesim", "containerRuntimeVersion": "kubesim://1.0.0",
                "kubeletVersion": "v1.33.0", "kubeProxyVersion": "",
                "operatingSystem": "linux", "architecture": "amd64",
            },
            "phase": "Running",
        },
    })
}

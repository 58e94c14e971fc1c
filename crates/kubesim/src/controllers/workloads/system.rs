//! The system workloads of a fresh kind cluster (kind v0.29, Kubernetes 1.33), as objects:
//! the control plane's mirror Pods on the first node (etcd, kube-apiserver,
//! kube-controller-manager, kube-scheduler: static Pods the kubelet reports, owned by their
//! Node), CoreDNS (a Deployment of 2 and the `kube-dns` Service), kube-proxy and kindnet
//! (DaemonSets) in `kube-system`, and local-path-provisioner (a Deployment) in
//! `local-path-storage`, with their ServiceAccounts. Their ReplicaSets and Pods come from
//! kubesim's controllers like any other's, so they carry the usual labels, owner
//! references and Ready status; nothing behind them runs (no DNS, no proxy, no
//! provisioning).

use std::sync::Arc;

use serde_json::{Value, json};

use super::{nodes, opts, owner_ref};
use crate::api::Api;
use crate::error::ApiError;

/// The Kubernetes release of the control plane's images.
const RELEASE: &str = "v1.33.0";
/// `system-cluster-critical` and `system-node-critical` (the API server's own classes).
const CLUSTER_CRITICAL: &str = "system-cluster-critical";
const NODE_CRITICAL: &str = "system-node-critical";
/// The tolerations kubeadm gives the control plane's add-ons.
fn addon_tolerations() -> Value {
    json!([
        {"key": "CriticalAddonsOnly", "operator": "Exists"},
        {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"},
    ])
}

/// Seed them; the first node (already seeded) is the control plane's.
pub(crate) async fn seed(api: &Arc<Api>) -> Result<(), ApiError> {
    let node_rt =
        api.registry.get("", "v1", "nodes").ok_or_else(|| ApiError::internal("kubesim serves no nodes"))?;
    let node = api.get(&node_rt, "", &nodes::name(1)).await?;
    let mut objects =
        vec![json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "local-path-storage"}})];
    for (ns, name) in [
        ("kube-system", "coredns"),
        ("kube-system", "kube-proxy"),
        ("kube-system", "kindnet"),
        ("local-path-storage", "local-path-provisioner-service-account"),
    ] {
        objects.push(json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": ns}}));
    }
    objects.extend([kube_dns(), coredns(), kube_proxy(), kindnet(), local_path_provisioner()]);
    objects.extend(
        ["etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"].map(|c| mirror_pod(c, &node)),
    );
    for obj in objects {
        let api_version = obj["apiVersion"].as_str().unwrap_or_default();
        let kind = obj["kind"].as_str().unwrap_or_default();
        let rt = api
            .registry
            .by_kind(api_version, kind)
            .ok_or_else(|| ApiError::internal(format!("kubesim serves no {kind}")))?;
        let ns = obj.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or_default().to_owned();
        let manager = if kind == "Pod" { "kubelet" } else { "kubeadm" };
        api.create(&rt, &ns, obj, &opts(manager)).await?;
    }
    Ok(())
}

fn kube_dns() -> Value {
    json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {
            "name": "kube-dns", "namespace": "kube-system",
            "labels": {"k8s-app": "kube-dns", "kubernetes.io/cluster-service": "true", "kubernetes.io/name": "CoreDNS"},
            "annotations": {"prometheus.io/port": "9153", "prometheus.io/scrape": "true"},
        },
        "spec": {
            "clusterIP": "10.96.0.10",
            "selector": {"k8s-app": "kube-dns"},
            "ports": [
                {"name": "dns", "port": 53, "protocol": "UDP", "targetPort": 53},
                {"name": "dns-tcp", "port": 53, "protocol": "TCP", "targetPort": 53},
                {"name": "metrics", "port": 9153, "protocol": "TCP", "targetPort": 9153},
            ],
        },
    })
}

fn coredns() -> Value {
    let labels = json!({"k8s-app": "kube-dns"});
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "coredns", "namespace": "kube-system", "labels": labels},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": labels},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": "25%"}},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "priorityClassName": CLUSTER_CRITICAL,
                    "serviceAccountName": "coredns",
                    "dnsPolicy": "Default",
                    "nodeSelector": {"kubernetes.io/os": "linux"},
                    "tolerations": addon_tolerations(),
                    "containers": [{
                        "name": "coredns",
                        "image": "registry.k8s.io/coredns/coredns:v1.12.0",
                        "args": ["-conf", "/etc/coredns/Corefile"],
                        "ports": [
                            {"name": "dns", "containerPort": 53, "protocol": "UDP"},
                            {"name": "dns-tcp", "containerPort": 53, "protocol": "TCP"},
                            {"name": "metrics", "containerPort": 9153, "protocol": "TCP"},
                        ],
                        "resources": {"limits": {"memory": "170Mi"}, "requests": {"cpu": "100m", "memory": "70Mi"}},
                    }],
                },
            },
        },
    })
}

fn kube_proxy() -> Value {
    let labels = json!({"k8s-app": "kube-proxy"});
    json!({
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": "kube-proxy", "namespace": "kube-system", "labels": labels},
        "spec": {
            "selector": {"matchLabels": labels},
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "priorityClassName": NODE_CRITICAL,
                    "serviceAccountName": "kube-proxy",
                    "hostNetwork": true,
                    "nodeSelector": {"kubernetes.io/os": "linux"},
                    "tolerations": [{"operator": "Exists"}],
                    "containers": [{
                        "name": "kube-proxy",
                        "image": format!("registry.k8s.io/kube-proxy:{RELEASE}"),
                        "command": ["/usr/local/bin/kube-proxy", "--config=/var/lib/kube-proxy/config.conf", "--hostname-override=$(NODE_NAME)"],
                        "env": [{"name": "NODE_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "spec.nodeName"}}}],
                        "securityContext": {"privileged": true},
                    }],
                },
            },
        },
    })
}

fn kindnet() -> Value {
    let labels = json!({"app": "kindnet", "k8s-app": "kindnet", "tier": "node"});
    json!({
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": "kindnet", "namespace": "kube-system", "labels": labels},
        "spec": {
            "selector": {"matchLabels": {"app": "kindnet"}},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "serviceAccountName": "kindnet",
                    "hostNetwork": true,
                    "tolerations": [{"operator": "Exists"}],
                    "containers": [{
                        "name": "kindnet-cni",
                        "image": "docker.io/kindest/kindnetd:v20250512-df8de77b",
                        "resources": {"limits": {"cpu": "100m", "memory": "50Mi"}, "requests": {"cpu": "100m", "memory": "50Mi"}},
                        "securityContext": {"capabilities": {"add": ["NET_RAW", "NET_ADMIN"]}, "privileged": false},
                    }],
                },
            },
        },
    })
}

fn local_path_provisioner() -> Value {
    let labels = json!({"app": "local-path-provisioner"});
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "local-path-provisioner", "namespace": "local-path-storage"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "serviceAccountName": "local-path-provisioner-service-account",
                    "nodeSelector": {"kubernetes.io/os": "linux"},
                    "tolerations": addon_tolerations(),
                    "containers": [{
                        "name": "local-path-provisioner",
                        "image": "docker.io/kindest/local-path-provisioner:v20250214-acbabc1a",
                        "command": ["local-path-provisioner", "--debug", "start", "--helper-image",
                            "docker.io/kindest/local-path-helper:v20241212-8ac705d0", "--config", "/etc/config/config.json"],
                        "env": [{"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}}],
                    }],
                },
            },
        },
    })
}

/// The mirror Pod of the control plane's static Pod `component` on `node`: named
/// `<component>-<node>`, owned by the Node, with the kubelet's `kubernetes.io/config.*`
/// annotations and kubeadm's labels.
fn mirror_pod(component: &str, node: &Value) -> Value {
    let node_name = node["metadata"]["name"].as_str().unwrap_or_default();
    let host = nodes::ip(1);
    let hash = format!("{:032x}", fnv(&format!("{component}/{node_name}")));
    let mut annotations = json!({
        "kubernetes.io/config.hash": hash, "kubernetes.io/config.mirror": hash,
        "kubernetes.io/config.seen": super::now(), "kubernetes.io/config.source": "file",
    });
    let (image, command) = match component {
        "etcd" => {
            annotations["kubeadm.kubernetes.io/etcd.advertise-client-urls"] =
                json!(format!("https://{host}:2379"));
            (
                "registry.k8s.io/etcd:3.5.21-0".to_owned(),
                json!([
                    "etcd",
                    format!("--advertise-client-urls=https://{host}:2379"),
                    "--data-dir=/var/lib/etcd",
                    format!("--name={node_name}")
                ]),
            )
        }
        "kube-apiserver" => {
            annotations["kubeadm.kubernetes.io/kube-apiserver.advertise-address.endpoint"] =
                json!(format!("{host}:6443"));
            (
                format!("registry.k8s.io/kube-apiserver:{RELEASE}"),
                json!([
                    "kube-apiserver",
                    format!("--advertise-address={host}"),
                    "--authorization-mode=Node,RBAC",
                    "--secure-port=6443",
                    "--service-cluster-ip-range=10.96.0.0/16"
                ]),
            )
        }
        "kube-controller-manager" => (
            format!("registry.k8s.io/kube-controller-manager:{RELEASE}"),
            json!(["kube-controller-manager", "--cluster-cidr=10.244.0.0/16", "--leader-elect=true"]),
        ),
        _ => (
            format!("registry.k8s.io/kube-scheduler:{RELEASE}"),
            json!(["kube-scheduler", "--kubeconfig=/etc/kubernetes/scheduler.conf", "--leader-elect=true"]),
        ),
    };
    let mut owner = owner_ref(node);
    if let Some(o) = owner.as_object_mut() {
        // The kubelet's mirror Pods do not block the Node's deletion.
        o.remove("blockOwnerDeletion");
    }
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": format!("{component}-{node_name}"), "namespace": "kube-system",
            "labels": {"component": component, "tier": "control-plane"},
            "annotations": annotations,
            "ownerReferences": [owner],
        },
        "spec": {
            "nodeName": node_name,
            "hostNetwork": true,
            "priorityClassName": NODE_CRITICAL,
            "tolerations": [{"effect": "NoExecute", "operator": "Exists"}],
            "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [{"name": component, "image": image, "command": command,
                "resources": {"requests": {"cpu": "100m"}}}],
        },
    })
}

/// FNV-1a of `s`, for a stable config hash.
fn fnv(s: &str) -> u128 {
    s.bytes().fold(0x6c62272e07bb014262b821756295c58d, |h: u128, b| {
        (h ^ u128::from(b)).wrapping_mul(0x0000000001000000000000000000013B)
    })
}

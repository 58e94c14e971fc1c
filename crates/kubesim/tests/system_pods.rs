//! A new cluster with workloads holds a kind cluster's system Pods (`Config::system_pods`).

mod common;

use std::time::Duration;

use common::{eventually, start_with};
use ctop_kubesim::{Config, WorkloadConfig};
use k8s_openapi::api::core::v1::{Node, Pod, Service, ServiceAccount};
use kube::ResourceExt as _;
use kube::api::{Api, ListParams};

fn config(nodes: usize, system_pods: bool) -> Config {
    let workloads =
        WorkloadConfig { nodes, pod_start: Duration::from_millis(20), ..WorkloadConfig::default() };
    Config { workloads: Some(workloads), system_pods, ..Config::default() }
}

fn ready(p: &Pod) -> bool {
    p.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// Every Pod of `ns`, once all are Ready.
async fn ready_pods(client: &kube::Client, ns: &str, count: usize) -> Vec<Pod> {
    let api: Api<Pod> = Api::namespaced(client.clone(), ns);
    eventually(10, &format!("{count} Ready Pods in {ns}"), || {
        let api = api.clone();
        async move {
            let pods = api.list(&ListParams::default()).await.ok()?.items;
            (pods.len() == count && pods.iter().all(ready)).then_some(pods)
        }
    })
    .await
}

fn owner(p: &Pod) -> (String, String) {
    let o = p.owner_references().iter().find(|o| o.controller == Some(true)).expect("a controller owner");
    (o.kind.clone(), o.name.clone())
}

/// A fresh kind cluster (kind v0.29, Kubernetes 1.33): kubeadm's control plane runs as
/// static Pods whose mirror Pods the kubelet creates owned by its Node
/// (`pkg/kubelet/pod/mirror_client.go`, `CreateMirrorPod`: `Kind: "Node"`, `Controller:
/// true`, the `kubernetes.io/config.mirror` annotation) with kubeadm's `component` and
/// `tier: control-plane` labels (`cmd/kubeadm/app/util/staticpod/utils.go`,
/// `ComponentPod`); CoreDNS is a Deployment of 2 labelled `k8s-app: kube-dns` with the
/// `kube-dns` Service at the tenth address of the Service range
/// (`cmd/kubeadm/app/phases/addons/dns/manifests.go`); kube-proxy a DaemonSet labelled
/// `k8s-app: kube-proxy` (`cmd/kubeadm/app/phases/addons/proxy/manifests.go`); kind adds
/// kindnet (a DaemonSet) and local-path-provisioner (a Deployment in
/// `local-path-storage`). Pods on the host's network have their node's address.
#[tokio::test(flavor = "multi_thread")]
async fn a_new_cluster_runs_the_system_pods_of_kind() {
    let (_sim, client) = start_with(config(2, true)).await;
    let pods = ready_pods(&client, "kube-system", 4 + 2 + 2 + 2).await;
    let mut names: Vec<String> = pods.iter().map(|p| p.name_any()).collect();
    names.sort();
    for mirror in ["etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"] {
        let name = format!("{mirror}-kubesim-node-1");
        let pod = pods.iter().find(|p| p.name_any() == name).unwrap_or_else(|| panic!("{name} in {names:?}"));
        assert_eq!(owner(pod), ("Node".to_owned(), "kubesim-node-1".to_owned()));
        assert_eq!(pod.labels().get("tier").map(String::as_str), Some("control-plane"));
        assert_eq!(pod.labels().get("component").map(String::as_str), Some(mirror));
        assert!(pod.annotations().contains_key("kubernetes.io/config.mirror"));
        let spec = pod.spec.as_ref().expect("spec");
        assert_eq!((spec.priority, spec.host_network), (Some(2_000_001_000), Some(true)));
        let status = pod.status.as_ref().expect("status");
        assert_eq!(status.pod_ip, status.host_ip, "a host-network Pod has its node's address");
    }
    let coredns: Vec<&Pod> =
        pods.iter().filter(|p| p.labels().get("k8s-app").map(String::as_str) == Some("kube-dns")).collect();
    assert_eq!(coredns.len(), 2, "{names:?}");
    for p in &coredns {
        let (kind, rs) = owner(p);
        assert!(kind == "ReplicaSet" && rs.starts_with("coredns-"), "{rs}");
        assert_eq!(p.spec.as_ref().and_then(|s| s.priority), Some(2_000_000_000));
    }
    for (label, value, daemonset) in [("k8s-app", "kube-proxy", "kube-proxy"), ("app", "kindnet", "kindnet")]
    {
        let on_nodes: Vec<&Pod> =
            pods.iter().filter(|p| p.labels().get(label).map(String::as_str) == Some(value)).collect();
        assert_eq!(on_nodes.len(), 2, "one per node: {names:?}");
        assert!(on_nodes.iter().all(|p| owner(p) == ("DaemonSet".to_owned(), daemonset.to_owned())));
    }
    let storage = ready_pods(&client, "local-path-storage", 1).await;
    assert!(storage[0].name_any().starts_with("local-path-provisioner-"));
    let services: Api<Service> = Api::namespaced(client.clone(), "kube-system");
    let dns = services.get("kube-dns").await.expect("kube-dns");
    assert_eq!(dns.spec.and_then(|s| s.cluster_ip).as_deref(), Some("10.96.0.10"));
    let nodes: Api<Node> = Api::all(client);
    let first = nodes.get("kubesim-node-1").await.expect("node");
    assert!(first.labels().contains_key("node-role.kubernetes.io/control-plane"));
}

/// `system_pods: false` (`ctop sim --no-system-pods`): no Pods until a client makes some.
#[tokio::test(flavor = "multi_thread")]
async fn system_pods_can_be_left_out() {
    let (_sim, client) = start_with(config(1, false)).await;
    // The cluster is up once its node and each namespace's ServiceAccount are there: the
    // system workloads, when on, are made before them.
    let nodes: Api<Node> = Api::all(client.clone());
    let first =
        eventually(10, "the node", || async { nodes.get_opt("kubesim-node-1").await.ok().flatten() }).await;
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), "kube-system");
    eventually(10, "kube-system's ServiceAccount", || async {
        accounts.get_opt("default").await.ok().flatten()
    })
    .await;
    let pods: Api<Pod> = Api::all(client.clone());
    assert!(pods.list(&ListParams::default()).await.expect("list").items.is_empty());
    assert!(!first.labels().contains_key("node-role.kubernetes.io/control-plane"));
}

//! The scheduler and the kubelets of the simulated nodes: a Pod without a node is bound to
//! the node with the fewest Pods (`PodScheduled`), and once it has waited
//! [`WorkloadConfig::pod_start`](super::WorkloadConfig::pod_start) it is `Running` and
//! Ready, with an IP from its node's Pod CIDR and a running status per container, as a
//! kubelet reports it.

use std::time::Instant;

use serde_json::{Value, json};

use super::{Cluster, Next, nodes};
use crate::error::ApiError;
use crate::meta::deleting;
use crate::store::ObjKey;

const SCHEDULER: &str = "default-scheduler";
const KUBELET: &str = "kubelet";

pub(crate) async fn sync(cluster: &Cluster<'_>, key: &ObjKey) -> Result<Next, ApiError> {
    let pods = cluster.rt("", "v1", "pods")?;
    let Some(pod) = cluster.get(&pods, key) else { return Ok(Next::Done) };
    let uid = pod["metadata"]["uid"].as_str().unwrap_or_default().to_owned();
    if deleting(&pod) || matches!(pod["status"]["phase"].as_str(), Some("Running" | "Succeeded" | "Failed")) {
        cluster.starting.lock().remove(&uid);
        return Ok(Next::Done);
    }
    let node = pod["spec"]["nodeName"].as_str().unwrap_or_default().to_owned();
    if node.is_empty() {
        let node = least_loaded(cluster, &pods.store)?;
        cluster.merge(&pods, key, false, &json!({"spec": {"nodeName": node}}), SCHEDULER).await?;
        let scheduled = json!({"status": {"conditions": [
            {"type": "PodScheduled", "status": "True", "lastProbeTime": null, "lastTransitionTime": super::now()},
        ]}});
        cluster.merge(&pods, key, true, &scheduled, SCHEDULER).await?;
        cluster.starting.lock().insert(uid, Instant::now());
        return Ok(Next::After(cluster.config.pod_start));
    }
    let since = *cluster.starting.lock().entry(uid.clone()).or_insert_with(Instant::now);
    let waited = since.elapsed();
    if waited < cluster.config.pod_start {
        return Ok(Next::After(cluster.config.pod_start - waited));
    }
    let index = node.strip_prefix("kubesim-node-").and_then(|i| i.parse::<usize>().ok()).unwrap_or(1);
    let n = cluster.next_ip.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    cluster.merge(&pods, key, true, &running(&pod, index, &nodes::pod_ip(index, n)), KUBELET).await?;
    cluster.starting.lock().remove(&uid);
    Ok(Next::Done)
}

/// The node with the fewest Pods bound to it (the first on a tie).
fn least_loaded(cluster: &Cluster<'_>, pods: &str) -> Result<String, ApiError> {
    let mut load = vec![0usize; cluster.config.nodes.max(1)];
    for pod in cluster.api.store.snapshot(&pods.into(), false).1.values() {
        let node = pod["spec"]["nodeName"].as_str().unwrap_or_default();
        if let Some(i) = node.strip_prefix("kubesim-node-").and_then(|i| i.parse::<usize>().ok())
            && let Some(slot) = load.get_mut(i.saturating_sub(1))
        {
            *slot += 1;
        }
    }
    let (i, _) = load.iter().enumerate().min_by_key(|(_, n)| **n).unwrap_or((0, &0));
    Ok(nodes::name(i + 1))
}

/// The status of a Pod whose containers all run and are ready.
fn running(pod: &Value, node: usize, ip: &str) -> Value {
    let now = super::now();
    let condition = |type_: &str| json!({"type": type_, "status": "True", "lastProbeTime": null, "lastTransitionTime": now});
    let containers = |list: &str| pod["spec"][list].as_array().cloned().unwrap_or_default();
    let statuses: Vec<Value> = containers("containers")
        .iter()
        .map(|c| {
            let name = c["name"].as_str().unwrap_or_default();
            json!({
                "name": name,
                "state": {"running": {"startedAt": now}},
                "lastState": {},
                "ready": true,
                "restartCount": 0,
                "image": c["image"],
                "imageID": format!("kubesim://{}", c["image"].as_str().unwrap_or_default()),
                "containerID": format!("kubesim://{}", crate::meta::new_uid().replace('-', "")),
                "started": true,
            })
        })
        .collect();
    let host = nodes::ip(node);
    let mut status = json!({
        "phase": "Running",
        "conditions": [
            condition("PodReadyToStartContainers"), condition("Initialized"), condition("Ready"),
            condition("ContainersReady"), condition("PodScheduled"),
        ],
        "hostIP": host, "hostIPs": [{"ip": host}],
        "podIP": ip, "podIPs": [{"ip": ip}],
        "startTime": now,
        "containerStatuses": statuses,
        "qosClass": qos_class(&containers("containers")),
    });
    let init = containers("initContainers");
    if !init.is_empty() {
        status["initContainerStatuses"] = init
            .iter()
            .map(|c| {
                json!({
                    "name": c["name"], "image": c["image"], "imageID": "", "ready": true, "restartCount": 0,
                    "started": false, "lastState": {},
                    "state": {"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": now, "finishedAt": now}},
                })
            })
            .collect();
    }
    json!({"status": status})
}

/// `Guaranteed` when every container's CPU and memory limits equal its requests (requests
/// default to limits), `BestEffort` when no container asks for anything, else `Burstable`.
fn qos_class(containers: &[Value]) -> &'static str {
    let mut any = false;
    let mut guaranteed = true;
    for c in containers {
        let r = &c["resources"];
        for res in ["cpu", "memory"] {
            let (limit, request) = (&r["limits"][res], &r["requests"][res]);
            any |= !limit.is_null() || !request.is_null();
            guaranteed &= !limit.is_null() && (request.is_null() || request == limit);
        }
    }
    match (any, guaranteed) {
        (false, _) => "BestEffort",
        (true, true) => "Guaranteed",
        (true, false) => "Burstable",
    }
}

#[cfg(test)]
mod tests {
    use super::qos_class;
    use serde_json::json;

    #[test]
    fn qos_classes() {
        assert_eq!(qos_class(&[json!({"name": "a"})]), "BestEffort");
        let guaranteed = json!({"resources": {"limits": {"cpu": "1", "memory": "1Gi"}}});
        assert_eq!(qos_class(&[guaranteed]), "Guaranteed");
        let burstable = json!({"resources": {"requests": {"cpu": "100m"}}});
        assert_eq!(qos_class(&[burstable]), "Burstable");
    }
}

//! The scheduler and the kubelets of the simulated nodes: a Pod without a node is bound to
//! the next node in turn (`PodScheduled`), and once it has waited
//! [`WorkloadConfig::pod_start`](super::WorkloadConfig::pod_start) it is `Running` and
//! Ready, with an IP from its node's Pod CIDR and a running status per container, as a
//! kubelet reports it. A deleted Pod (its grace period running: `api/graceful.rs`) stays
//! Ready while its containers stop, which takes as long as they took to start (or a
//! stage's `stop=`), and at most the grace period; then the kubelet reports them terminated
//! (exit code 0, or 137 when killed at the end of the grace period) and the Pod in a
//! terminal phase, and removes it (`gracePeriodSeconds: 0`, its uid as precondition).

// Tokio's clock, not the OS's: on a paused runtime (`ctop test`) Pods start on virtual time.
use tokio::time::Instant;

use serde_json::{Value, json};

use super::stages::Outcome;
use super::{Cluster, Next, nodes};
use crate::error::ApiError;
use crate::kinds::meta::deleting;
use crate::store::ObjKey;

const SCHEDULER: &str = "default-scheduler";
const KUBELET: &str = "kubelet";

pub(crate) async fn sync(cluster: &Cluster<'_>, key: &ObjKey) -> Result<Next, ApiError> {
    let pods = cluster.rt("", "v1", "pods")?;
    let Some(pod) = cluster.get(&pods, key) else { return Ok(Next::Done) };
    let uid = pod["metadata"]["uid"].as_str().unwrap_or_default().to_owned();
    let phase = pod["status"]["phase"].as_str().unwrap_or("Pending");
    let grace = pod["metadata"]["deletionGracePeriodSeconds"].as_u64().unwrap_or(0);
    if matches!(phase, "Succeeded" | "Failed") || (deleting(&pod) && grace == 0) {
        // Done, or deleted at once (forced, or held by finalizers past its grace period).
        cluster.starting.lock().remove(&uid);
        cluster.stopping.lock().remove(&uid);
        return Ok(Next::Done);
    }
    let injected = cluster.faults.pod_stages();
    let stage = injected.iter().chain(&cluster.config.stages).find(|s| s.picks(&pod));
    if deleting(&pod) {
        let stop = stage.and_then(|s| s.stop).unwrap_or(cluster.config.pod_start);
        return terminate(cluster, &pods, key, &pod, stop, std::time::Duration::from_secs(grace)).await;
    }
    let outcome = stage.map(|s| s.outcome.clone()).unwrap_or_default();
    let restarts = pod["spec"]["restartPolicy"].as_str().unwrap_or("Always") == "Always";
    let node = pod["spec"]["nodeName"].as_str().unwrap_or_default().to_owned();
    let index = node.strip_prefix("kubesim-node-").and_then(|i| i.parse::<usize>().ok()).unwrap_or(1);
    if phase == "Running" {
        // A Pod that does not restart its containers (a Job's) finishes after running a while.
        if restarts || outcome != Outcome::Ready {
            return Ok(Next::Done);
        }
        let run_for = stage.and_then(|s| s.complete).unwrap_or(cluster.config.job_duration);
        let since = *cluster.starting.lock().entry(uid.clone()).or_insert_with(Instant::now);
        if since.elapsed() < run_for {
            return Ok(Next::After(run_for - since.elapsed()));
        }
        let ip = pod["status"]["podIP"].as_str().unwrap_or_default().to_owned();
        cluster.merge(&pods, key, true, &status(&pod, index, &ip, State::Succeeded), KUBELET).await?;
        cluster.starting.lock().remove(&uid);
        return Ok(Next::Done);
    }
    if node.is_empty() {
        let node = next_node(cluster);
        cluster.bind(&pods, key, &node, SCHEDULER).await?;
        let scheduled = json!({"status": {"conditions": [
            {"type": "PodScheduled", "status": "True", "lastProbeTime": null, "lastTransitionTime": super::now()},
        ]}});
        cluster.merge(&pods, key, true, &scheduled, SCHEDULER).await?;
        cluster.starting.lock().insert(uid, Instant::now());
        return Ok(Next::After(stage.and_then(|s| s.start).unwrap_or(cluster.config.pod_start)));
    }
    let pod_start = stage.and_then(|s| s.start).unwrap_or(cluster.config.pod_start);
    let since = *cluster.starting.lock().entry(uid.clone()).or_insert_with(Instant::now);
    if since.elapsed() < pod_start {
        return Ok(Next::After(pod_start - since.elapsed()));
    }
    let n = cluster.next_ip.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let state = match (outcome, restarts) {
        (Outcome::Ready, _) => State::Running { ready: true },
        (Outcome::NeverReady, _) => State::Running { ready: false },
        (Outcome::Fail, true) => State::CrashLoop,
        (Outcome::Fail, false) => State::Failed,
    };
    let finishes = matches!(state, State::Running { ready: true }) && !restarts;
    // A Pod on the host's network has the node's address.
    let ip = if pod["spec"]["hostNetwork"] == true { nodes::ip(index) } else { nodes::pod_ip(index, n) };
    cluster.merge(&pods, key, true, &status(&pod, index, &ip, state), KUBELET).await?;
    cluster.starting.lock().remove(&uid);
    if finishes {
        cluster.starting.lock().insert(uid, Instant::now());
        return Ok(Next::After(stage.and_then(|s| s.complete).unwrap_or(cluster.config.job_duration)));
    }
    Ok(Next::Done)
}

/// The kubelet's part in a graceful deletion: stop the containers (they take `stop`, and
/// are killed once `grace` is over), report them terminated and the Pod terminal, then
/// remove the Pod. A Pod whose containers never ran is removed at once.
async fn terminate(
    cluster: &Cluster<'_>,
    pods: &crate::kinds::registry::ResourceType,
    key: &ObjKey,
    pod: &Value,
    stop: std::time::Duration,
    grace: std::time::Duration,
) -> Result<Next, ApiError> {
    let uid = pod["metadata"]["uid"].as_str().unwrap_or_default().to_owned();
    let node = pod["spec"]["nodeName"].as_str().unwrap_or_default().to_owned();
    cluster.starting.lock().remove(&uid);
    if pod["status"]["phase"].as_str() == Some("Running") {
        let since = *cluster.stopping.lock().entry(uid.clone()).or_insert_with(Instant::now);
        let wait = stop.min(grace);
        if since.elapsed() < wait {
            return Ok(Next::After(wait - since.elapsed()));
        }
        let index = node.strip_prefix("kubesim-node-").and_then(|i| i.parse::<usize>().ok()).unwrap_or(1);
        let ip = pod["status"]["podIP"].as_str().unwrap_or_default().to_owned();
        let state = State::Stopped { killed: stop > grace };
        cluster.merge(pods, key, true, &status(pod, index, &ip, state), KUBELET).await?;
    }
    cluster.delete_now(pods, pod, &node).await?;
    cluster.stopping.lock().remove(&uid);
    Ok(Next::Done)
}

/// Where the kubelet leaves a Pod's containers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Running {
        ready: bool,
    },
    CrashLoop,
    Failed,
    Succeeded,
    /// Stopped for the Pod's deletion: exited on SIGTERM (0), or killed at the end of the
    /// grace period (137); the Pod is then `Succeeded` or `Failed`.
    Stopped {
        killed: bool,
    },
}

/// The next node in turn (the scheduler spreads Pods over the nodes round-robin: the
/// same spread as "fewest Pods" for Pods that come and go together, at no scan of them).
fn next_node(cluster: &Cluster<'_>) -> String {
    let n = cluster.next_node.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let nodes = u64::try_from(cluster.config.nodes.max(1)).unwrap_or(1);
    nodes::name(usize::try_from(n % nodes).unwrap_or(0) + 1)
}

/// The status a kubelet reports for a Pod whose containers are in `state`.
fn status(pod: &Value, node: usize, ip: &str, state: State) -> Value {
    let now = super::now();
    let containers = |list: &str| pod["spec"][list].as_array().cloned().unwrap_or_default();
    let names: Vec<&str> = pod["spec"]["containers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["name"].as_str())
        .collect();
    let ready = state == State::Running { ready: true };
    let (phase, not_ready) = match state {
        State::Running { .. } | State::CrashLoop => (
            "Running",
            ("ContainersNotReady", format!("containers with unready status: [{}]", names.join(" "))),
        ),
        State::Failed | State::Stopped { killed: true } => ("Failed", ("PodFailed", String::new())),
        State::Succeeded | State::Stopped { killed: false } => ("Succeeded", ("PodCompleted", String::new())),
    };
    let condition = |type_: &str, up: bool| {
        let mut c = json!({"type": type_, "status": if up { "True" } else { "False" }, "lastProbeTime": null, "lastTransitionTime": now});
        if !up {
            c["reason"] = json!(not_ready.0);
            if !not_ready.1.is_empty() {
                c["message"] = json!(not_ready.1);
            }
        }
        c
    };
    // The kubelet names a Pod in its messages as `name_namespace(uid)` (`format.Pod`).
    let pod_name = format!(
        "{}_{}({})",
        pod["metadata"]["name"].as_str().unwrap_or_default(),
        pod["metadata"]["namespace"].as_str().unwrap_or_default(),
        pod["metadata"]["uid"].as_str().unwrap_or_default()
    );
    let mut statuses: Vec<Value> = containers("containers")
        .iter()
        .map(|c| {
            let name = c["name"].as_str().unwrap_or_default();
            let image = c["image"].as_str().unwrap_or_default();
            let terminated = |code: i32, reason: &str| json!({"terminated": {"exitCode": code, "reason": reason, "startedAt": now, "finishedAt": now, "containerID": format!("kubesim://{name}")}});
            let (state, last, restarts, started) = match state {
                State::Running { .. } => (json!({"running": {"startedAt": now}}), json!({}), 0, true),
                State::CrashLoop => (
                    json!({"waiting": {"reason": "CrashLoopBackOff", "message": format!("back-off 10s restarting failed container={name} pod={pod_name}")}}),
                    terminated(1, "Error"),
                    1,
                    false,
                ),
                State::Failed => (terminated(1, "Error"), json!({}), 0, false),
                State::Succeeded | State::Stopped { killed: false } => (terminated(0, "Completed"), json!({}), 0, false),
                State::Stopped { killed: true } => (terminated(137, "Error"), json!({}), 0, false),
            };
            json!({
                "name": name, "state": state, "lastState": last, "ready": ready, "restartCount": restarts,
                "image": image, "imageID": format!("kubesim://{image}"),
                "containerID": format!("kubesim://{}", crate::kinds::meta::new_uid().replace('-', "")),
                "started": started,
            })
        })
        .collect();
    // The kubelet lists container statuses by name.
    statuses.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
    let host = nodes::ip(node);
    let running = matches!(state, State::Running { .. } | State::CrashLoop);
    let mut status = json!({
        "phase": phase,
        "conditions": [
            condition("PodReadyToStartContainers", running), condition("Initialized", true), condition("Ready", ready),
            condition("ContainersReady", ready), condition("PodScheduled", true),
        ],
        "hostIP": host, "hostIPs": [{"ip": host}],
        "podIP": ip, "podIPs": [{"ip": ip}],
        "startTime": pod["status"]["startTime"].as_str().map_or_else(|| json!(now), |t| json!(t)),
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
    use super::{State, qos_class, status};
    use serde_json::json;

    #[test]
    fn a_crashing_container_waits_in_back_off_after_its_last_termination() {
        let pod = json!({"metadata": {"name": "p", "namespace": "ns", "uid": "u1"},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}, "status": {}});
        let s = status(&pod, 1, "10.244.1.2", State::CrashLoop);
        let c = &s["status"]["containerStatuses"][0];
        assert_eq!(s["status"]["phase"], "Running");
        assert_eq!(c["state"]["waiting"]["reason"], "CrashLoopBackOff");
        assert_eq!(
            c["state"]["waiting"]["message"],
            "back-off 10s restarting failed container=c pod=p_ns(u1)"
        );
        assert_eq!(c["lastState"]["terminated"]["reason"], "Error");
        assert_eq!(c["lastState"]["terminated"]["exitCode"], 1);
        assert!(c["lastState"]["terminated"]["finishedAt"].is_string());
        assert_eq!((c["restartCount"].as_i64(), c["ready"].as_bool()), (Some(1), Some(false)));
        let failed = status(&pod, 1, "10.244.1.2", State::Failed);
        let c = &failed["status"]["containerStatuses"][0];
        assert_eq!(failed["status"]["phase"], "Failed");
        assert_eq!(
            (c["state"]["terminated"]["reason"].as_str(), c["state"]["terminated"]["exitCode"].as_i64()),
            (Some("Error"), Some(1))
        );
    }

    #[test]
    fn qos_classes() {
        assert_eq!(qos_class(&[json!({"name": "a"})]), "BestEffort");
        let guaranteed = json!({"resources": {"limits": {"cpu": "1", "memory": "1Gi"}}});
        assert_eq!(qos_class(&[guaranteed]), "Guaranteed");
        let burstable = json!({"resources": {"requests": {"cpu": "100m"}}});
        assert_eq!(qos_class(&[burstable]), "Burstable");
    }
}

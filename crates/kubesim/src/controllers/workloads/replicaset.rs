//! The ReplicaSet controller: as many Pods from the template as `spec.replicas` says
//! (named `<replicaset>-xxxxx`, controlled by it), the surplus deleted (not yet scheduled,
//! then not running, then not ready, then the newest first), and a status that counts them.

use std::sync::Arc;

use jiff::Timestamp;
use serde_json::{Map, Value, json};

use super::{Cluster, Next, owner_ref};
use crate::error::ApiError;
use crate::kinds::meta::deleting;
use crate::store::ObjKey;

const MANAGER: &str = "replicaset-controller";

pub(crate) async fn sync(cluster: &Cluster<'_>, key: &ObjKey) -> Result<Next, ApiError> {
    let Some((sets, rs)) = cluster.live(("apps", "v1", "replicasets"), key)? else { return Ok(Next::Done) };
    let pods_rt = cluster.rt("", "v1", "pods")?;
    let uid = rs["metadata"]["uid"].as_str().unwrap_or_default();
    let pods = active_pods(cluster, &pods_rt, &key.0, uid);
    let desired = usize::try_from(rs["spec"]["replicas"].as_i64().unwrap_or(1)).unwrap_or(0);
    // A Pod the API refuses (invalid, forbidden, or a webhook that fails closed) is reported
    // as the real controller does: a `ReplicaFailure` condition with the API's message, and
    // another try a little later (pkg/controller/replicaset: any error of manageReplicas
    // becomes the FailedCreate condition in calculateStatus, whatever its code).
    let mut failed_create = None;
    if pods.len() < desired {
        for _ in pods.len()..desired {
            match cluster.create(&pods_rt, &key.0, pod_for(&rs), MANAGER).await {
                Ok(_) => {}
                Err(e) if e.code == 409 => return Err(e),
                Err(e) => {
                    failed_create = Some(e.message.clone());
                    break;
                }
            }
        }
    } else if pods.len() > desired {
        let mut ranked = pods.clone();
        ranked.sort_by_key(|p| deletion_rank(p));
        for pod in ranked.iter().take(pods.len() - desired) {
            cluster.delete(&pods_rt, pod).await?;
        }
    }
    let pods = active_pods(cluster, &pods_rt, &key.0, uid);
    let min_ready = rs["spec"]["minReadySeconds"].as_i64().unwrap_or(0);
    let (mut status, wait) = status_of(&rs, &pods, min_ready);
    if let Some(message) = &failed_create {
        let now = super::now();
        let kept = rs["status"]["conditions"]
            .as_array()
            .and_then(|cs| {
                cs.iter().find(|c| c["type"] == "ReplicaFailure" && c["message"] == message.as_str())
            })
            .and_then(|c| c["lastTransitionTime"].as_str().map(str::to_owned));
        status.insert(
            "conditions".into(),
            json!([{"type": "ReplicaFailure", "status": "True", "lastTransitionTime": kept.unwrap_or(now),
                "reason": "FailedCreate", "message": message}]),
        );
    }
    if !same_status(&rs["status"], &status) {
        cluster
            .merge(&sets, key, true, &json!({"status": patch_of(&rs["status"], &status)}), MANAGER)
            .await?;
    }
    if failed_create.is_some() {
        return Ok(Next::After(std::time::Duration::from_secs(5)));
    }
    Ok(wait.map_or(Next::Done, Next::After))
}

/// The Pods controlled by the object with `uid` that are not being deleted or finished
/// (from the store's owner index, not a scan of the namespace).
pub(crate) fn active_pods(
    cluster: &Cluster<'_>,
    pods: &crate::kinds::registry::ResourceType,
    ns: &str,
    uid: &str,
) -> Vec<Arc<Value>> {
    cluster
        .controlled(pods, uid)
        .into_iter()
        .filter(|p| p["metadata"]["namespace"] == ns && !deleting(p))
        .filter(|p| !matches!(p["status"]["phase"].as_str(), Some("Succeeded" | "Failed")))
        .collect()
}

fn pod_for(rs: &Value) -> Value {
    let template = &rs["spec"]["template"];
    let name = rs["metadata"]["name"].as_str().unwrap_or_default();
    let mut meta = template["metadata"].as_object().cloned().unwrap_or_default();
    meta.remove("name");
    meta.insert("generateName".into(), json!(format!("{name}-")));
    meta.insert("namespace".into(), rs["metadata"]["namespace"].clone());
    meta.insert("ownerReferences".into(), json!([owner_ref(rs)]));
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": template["spec"]})
}

/// Lower goes first: unscheduled, then pending, then not ready, then the newest.
fn deletion_rank(pod: &Value) -> (u8, u8, u8, std::cmp::Reverse<String>) {
    let scheduled = u8::from(!pod["spec"]["nodeName"].as_str().unwrap_or_default().is_empty());
    let running = u8::from(pod["status"]["phase"] == "Running");
    let ready = u8::from(ready_since(pod).is_some());
    let created = pod["metadata"]["creationTimestamp"].as_str().unwrap_or_default().to_owned();
    (scheduled, running, ready, std::cmp::Reverse(created))
}

/// When the Pod became Ready, if it is.
pub(crate) fn ready_since(pod: &Value) -> Option<Timestamp> {
    let ready = pod["status"]["conditions"].as_array()?.iter().find(|c| c["type"] == "Ready")?;
    if ready["status"] != "True" {
        return None;
    }
    Some(ready["lastTransitionTime"].as_str().and_then(|t| t.parse().ok()).unwrap_or_else(Timestamp::now))
}

/// Whether the Pod has been Ready for `min_ready` seconds; else how long until it is.
pub(crate) fn available(pod: &Value, min_ready: i64) -> Result<(), Option<std::time::Duration>> {
    let since = ready_since(pod).ok_or(None)?;
    if min_ready <= 0 {
        return Ok(());
    }
    let elapsed = crate::clock::timestamp().duration_since(since).as_secs();
    if elapsed >= min_ready {
        Ok(())
    } else {
        Err(Some(std::time::Duration::from_secs(u64::try_from(min_ready - elapsed).unwrap_or(1))))
    }
}

/// The status for `pods` (and the wait until a ready Pod becomes available).
fn status_of(
    rs: &Value,
    pods: &[Arc<Value>],
    min_ready: i64,
) -> (Map<String, Value>, Option<std::time::Duration>) {
    let labels = rs["spec"]["template"]["metadata"]["labels"].as_object().cloned().unwrap_or_default();
    let fully_labeled =
        pods.iter().filter(|p| labels.iter().all(|(k, v)| p["metadata"]["labels"].get(k) == Some(v))).count();
    let ready = pods.iter().filter(|p| ready_since(p).is_some()).count();
    let mut wait = None;
    let mut available_count = 0;
    for p in pods {
        match available(p, min_ready) {
            Ok(()) => available_count += 1,
            Err(Some(d)) => wait = Some(wait.map_or(d, |w: std::time::Duration| w.min(d))),
            Err(None) => {}
        }
    }
    let mut status = Map::new();
    status.insert("replicas".into(), json!(pods.len()));
    for (field, n) in [
        ("fullyLabeledReplicas", fully_labeled),
        ("readyReplicas", ready),
        ("availableReplicas", available_count),
    ] {
        if n > 0 {
            status.insert(field.into(), json!(n));
        }
    }
    if let Some(g) = rs["metadata"]["generation"].as_i64() {
        status.insert("observedGeneration".into(), json!(g));
    }
    (status, wait)
}

/// Whether the stored status has exactly these counters (conditions aside).
pub(crate) fn same_status(stored: &Value, status: &Map<String, Value>) -> bool {
    let stored = stored.as_object().cloned().unwrap_or_default();
    let strip = |m: &Map<String, Value>| -> Map<String, Value> {
        m.iter().filter(|(k, _)| *k != "conditions").map(|(k, v)| (k.clone(), v.clone())).collect()
    };
    strip(&stored) == strip(status) && stored.get("conditions") == status.get("conditions")
}

/// A merge patch from `stored` to `status`: fields that became zero (and so are omitted)
/// are deleted with `null`.
pub(crate) fn patch_of(stored: &Value, status: &Map<String, Value>) -> Value {
    let mut patch = status.clone();
    for key in stored.as_object().into_iter().flat_map(Map::keys) {
        if !patch.contains_key(key) {
            patch.insert(key.clone(), Value::Null);
        }
    }
    Value::Object(patch)
}

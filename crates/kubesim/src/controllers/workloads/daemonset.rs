//! The DaemonSet controller: one Pod per node whose labels match the template's
//! `nodeSelector` (bound to it directly, as the scheduler would with the controller's node
//! affinity), none elsewhere; a new template replaces the Pods one node at a time once the
//! others are Ready (RollingUpdate, maxUnavailable 1; OnDelete waits for deletions); and the
//! status counts `kubectl rollout status` reads.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::deployment::template_hash;
use super::replicaset::{patch_of, ready_since, same_status};
use super::{Cluster, Next, owner_ref};
use crate::error::ApiError;
use crate::kinds::meta::deleting;
use crate::store::ObjKey;

const MANAGER: &str = "daemon-set-controller";
const REVISION: &str = "controller-revision-hash";

pub(crate) async fn sync(cluster: &Cluster<'_>, key: &ObjKey) -> Result<Next, ApiError> {
    let Some((sets, ds)) = cluster.live(("apps", "v1", "daemonsets"), key)? else { return Ok(Next::Done) };
    let pods_rt = cluster.rt("", "v1", "pods")?;
    let nodes_rt = cluster.rt("", "v1", "nodes")?;
    let uid = ds["metadata"]["uid"].as_str().unwrap_or_default().to_owned();
    let revision = template_hash(&ds["spec"]["template"], 0);
    let selector = ds["spec"]["template"]["spec"]["nodeSelector"].as_object().cloned().unwrap_or_default();
    let nodes: Vec<String> = cluster
        .in_namespace(&nodes_rt, "")
        .iter()
        .filter(|n| selector.iter().all(|(k, v)| n["metadata"]["labels"].get(k) == Some(v)))
        .filter_map(|n| n["metadata"]["name"].as_str().map(str::to_owned))
        .collect();
    let pods = |cluster: &Cluster<'_>| -> Vec<Arc<Value>> {
        cluster.controlled(&pods_rt, &uid).into_iter().filter(|p| !deleting(p)).collect()
    };
    let on = |p: &Value| p["spec"]["nodeName"].as_str().unwrap_or_default().to_owned();
    let current = pods(cluster);
    for node in nodes.iter().filter(|n| !current.iter().any(|p| on(p) == **n)) {
        cluster.create(&pods_rt, &key.0, pod_for(&ds, node, &revision), MANAGER).await?;
    }
    for pod in current.iter().filter(|p| !nodes.contains(&on(p))) {
        cluster.delete(&pods_rt, pod).await?;
    }
    let rolling = ds["spec"]["updateStrategy"]["type"].as_str() != Some("OnDelete");
    let all_ready = current.len() >= nodes.len() && current.iter().all(|p| ready_since(p).is_some());
    if rolling && all_ready {
        let outdated = current.iter().find(|p| p["metadata"]["labels"][REVISION] != revision.as_str());
        if let Some(pod) = outdated {
            cluster.delete(&pods_rt, pod).await?;
        }
    }

    let pods = pods(cluster);
    let count = |f: &dyn Fn(&Value) -> bool| pods.iter().filter(|p| f(p)).count();
    let scheduled = count(&|p| nodes.contains(&on(p)));
    let ready = count(&|p| ready_since(p).is_some());
    let updated = count(&|p| p["metadata"]["labels"][REVISION] == revision.as_str());
    let mut status = Map::new();
    status.insert("currentNumberScheduled".into(), json!(scheduled));
    status.insert("numberMisscheduled".into(), json!(0));
    status.insert("desiredNumberScheduled".into(), json!(nodes.len()));
    status.insert("numberReady".into(), json!(ready));
    status.insert("observedGeneration".into(), ds["metadata"]["generation"].clone());
    for (field, n) in [
        ("updatedNumberScheduled", updated),
        ("numberAvailable", ready),
        ("numberUnavailable", nodes.len().saturating_sub(ready)),
    ] {
        if n > 0 {
            status.insert(field.into(), json!(n));
        }
    }
    if !same_status(&ds["status"], &status) {
        cluster
            .merge(&sets, key, true, &json!({"status": patch_of(&ds["status"], &status)}), MANAGER)
            .await?;
    }
    Ok(Next::Done)
}

fn pod_for(ds: &Value, node: &str, revision: &str) -> Value {
    let template = &ds["spec"]["template"];
    let name = ds["metadata"]["name"].as_str().unwrap_or_default();
    let mut meta = template["metadata"].as_object().cloned().unwrap_or_default();
    meta.remove("name");
    let labels = meta.entry("labels").or_insert_with(|| json!({}));
    labels[REVISION] = json!(revision);
    labels["pod-template-generation"] = json!(ds["metadata"]["generation"].as_i64().unwrap_or(1).to_string());
    meta.insert("generateName".into(), json!(format!("{name}-")));
    meta.insert("namespace".into(), ds["metadata"]["namespace"].clone());
    meta.insert("ownerReferences".into(), json!([owner_ref(ds)]));
    let mut spec = template["spec"].clone();
    spec["nodeName"] = json!(node);
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec})
}

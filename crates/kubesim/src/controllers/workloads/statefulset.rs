//! The StatefulSet controller: Pods `<set>-0`, `<set>-1`, … with stable names, hostnames
//! under `serviceName` and a PersistentVolumeClaim per `volumeClaimTemplates` entry and
//! ordinal (`<claim>-<set>-<ordinal>`, bound to a volume `pvc-<claim uid>` and reported Bound as
//! with a dynamic provisioner, though no PersistentVolume object is made);
//! `OrderedReady` creates each Pod once the ones before it are Ready and removes the
//! highest first, `Parallel` does not wait; a new template rolls out from the highest
//! ordinal down to `partition`, one Pod at a time, and the status carries the revisions
//! `kubectl rollout status` compares.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::deployment::template_hash;
use super::replicaset::{patch_of, ready_since, same_status};
use super::{Cluster, Next, owner_ref};
use crate::error::ApiError;
use crate::kinds::meta::deleting;
use crate::store::ObjKey;

const MANAGER: &str = "statefulset-controller";
const REVISION: &str = "controller-revision-hash";

pub(crate) async fn sync(cluster: &Cluster<'_>, key: &ObjKey) -> Result<Next, ApiError> {
    let Some((sets, sts)) = cluster.live(("apps", "v1", "statefulsets"), key)? else { return Ok(Next::Done) };
    let pods_rt = cluster.rt("", "v1", "pods")?;
    let name = sts["metadata"]["name"].as_str().unwrap_or_default().to_owned();
    let uid = sts["metadata"]["uid"].as_str().unwrap_or_default().to_owned();
    let replicas = usize::try_from(sts["spec"]["replicas"].as_u64().unwrap_or(1)).unwrap_or(1);
    let ordered = sts["spec"]["podManagementPolicy"].as_str() != Some("Parallel");
    let rolling = sts["spec"]["updateStrategy"]["type"].as_str() != Some("OnDelete");
    let partition =
        usize::try_from(sts["spec"]["updateStrategy"]["rollingUpdate"]["partition"].as_u64().unwrap_or(0))
            .unwrap_or(0);
    let revision = format!("{name}-{}", template_hash(&sts["spec"]["template"], 0));

    let pods_by_ordinal = |cluster: &Cluster<'_>| -> Vec<(usize, Arc<Value>)> {
        let mut pods: Vec<(usize, Arc<Value>)> = cluster
            .controlled(&pods_rt, &uid)
            .into_iter()
            .filter(|p| !deleting(p))
            .filter_map(|p| {
                let ordinal =
                    p["metadata"]["name"].as_str()?.strip_prefix(&format!("{name}-"))?.parse().ok()?;
                Some((ordinal, p))
            })
            .collect();
        pods.sort_by_key(|(o, _)| *o);
        pods
    };
    let pods = pods_by_ordinal(cluster);
    let ready = |p: &Value| ready_since(p).is_some();
    // Pods still terminating keep their names: their ordinals are made again once they are
    // gone, and an ordered StatefulSet waits for them first.
    let terminating: Vec<String> = cluster
        .controlled(&pods_rt, &uid)
        .into_iter()
        .filter(|p| deleting(p))
        .filter_map(|p| p["metadata"]["name"].as_str().map(str::to_owned))
        .collect();

    // Create the missing ordinals (in order, waiting for readiness when ordered).
    for ordinal in 0..replicas {
        if pods.iter().any(|(o, _)| *o == ordinal) {
            continue;
        }
        if terminating.contains(&format!("{name}-{ordinal}")) || (ordered && !terminating.is_empty()) {
            if ordered {
                break;
            }
            continue;
        }
        if ordered && pods.iter().any(|(o, p)| *o < ordinal && !ready(p)) {
            break;
        }
        claims(cluster, &sts, ordinal).await?;
        cluster.create(&pods_rt, &key.0, pod_for(&sts, ordinal, &revision), MANAGER).await?;
        if ordered {
            break;
        }
    }
    // Remove the ordinals past `replicas`, the highest first.
    let extra: Vec<&(usize, Arc<Value>)> = pods.iter().rev().filter(|(o, _)| *o >= replicas).collect();
    for (_, pod) in extra.iter().take(if ordered { 1 } else { extra.len() }) {
        cluster.delete(&pods_rt, pod).await?;
    }
    // Roll a new template out: the highest outdated ordinal at or above the partition, once
    // every Pod is Ready.
    let all_ready = pods.len() >= replicas && pods.iter().all(|(_, p)| ready(p));
    if rolling && extra.is_empty() && all_ready {
        let outdated = pods.iter().rev().find(|(o, p)| {
            *o >= partition && *o < replicas && p["metadata"]["labels"][REVISION] != revision.as_str()
        });
        if let Some((_, pod)) = outdated {
            cluster.delete(&pods_rt, pod).await?;
        }
    }

    let pods = pods_by_ordinal(cluster);
    let count = |f: &dyn Fn(&Value) -> bool| pods.iter().filter(|(_, p)| f(p)).count();
    let updated = count(&|p| p["metadata"]["labels"][REVISION] == revision.as_str());
    let ready_count = count(&|p| ready(p));
    let current_revision = if updated == pods.len() && pods.len() >= replicas {
        revision.clone()
    } else {
        sts["status"]["currentRevision"].as_str().map_or_else(|| revision.clone(), str::to_owned)
    };
    let current = count(&|p| p["metadata"]["labels"][REVISION] == current_revision.as_str());
    let mut status = Map::new();
    status.insert("observedGeneration".into(), sts["metadata"]["generation"].clone());
    status.insert("replicas".into(), json!(pods.len()));
    for (field, n) in [
        ("readyReplicas", ready_count),
        ("currentReplicas", current),
        ("updatedReplicas", updated),
        ("availableReplicas", ready_count),
    ] {
        if n > 0 {
            status.insert(field.into(), json!(n));
        }
    }
    status.insert("currentRevision".into(), json!(current_revision));
    status.insert("updateRevision".into(), json!(revision));
    status.insert("collisionCount".into(), json!(0));
    if !same_status(&sts["status"], &status) {
        cluster
            .merge(&sets, key, true, &json!({"status": patch_of(&sts["status"], &status)}), MANAGER)
            .await?;
    }
    Ok(Next::Done)
}

/// The claims of `ordinal`, created when missing and reported Bound.
async fn claims(cluster: &Cluster<'_>, sts: &Value, ordinal: usize) -> Result<(), ApiError> {
    let claims_rt = cluster.rt("", "v1", "persistentvolumeclaims")?;
    let ns = sts["metadata"]["namespace"].as_str().unwrap_or_default();
    let set = sts["metadata"]["name"].as_str().unwrap_or_default();
    for template in sts["spec"]["volumeClaimTemplates"].as_array().into_iter().flatten() {
        let name = format!("{}-{set}-{ordinal}", template["metadata"]["name"].as_str().unwrap_or_default());
        let key = (ns.to_owned(), name.clone());
        if cluster.get(&claims_rt, &key).is_some() {
            continue;
        }
        let labels = sts["spec"]["selector"]["matchLabels"].clone();
        let claim = json!({
            "apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": name, "namespace": ns, "labels": labels},
            "spec": template["spec"],
        });
        let created = cluster.create(&claims_rt, ns, claim, MANAGER).await?;
        // The persistent volume controller binds the claim to the volume a dynamic
        // provisioner names `pvc-<claim uid>`, then reports it Bound.
        let uid = created["metadata"]["uid"].as_str().unwrap_or_default();
        let binding = json!({
            "metadata": {"annotations": {"pv.kubernetes.io/bind-completed": "yes", "pv.kubernetes.io/bound-by-controller": "yes"}},
            "spec": {"volumeName": format!("pvc-{uid}")},
        });
        cluster.merge(&claims_rt, &key, false, &binding, "persistentvolume-binder-controller").await?;
        let bound = json!({"status": {
            "phase": "Bound",
            "accessModes": template["spec"]["accessModes"],
            "capacity": {"storage": template["spec"]["resources"]["requests"]["storage"]},
        }});
        cluster.merge(&claims_rt, &key, true, &bound, "persistentvolume-binder-controller").await?;
    }
    Ok(())
}

fn pod_for(sts: &Value, ordinal: usize, revision: &str) -> Value {
    let template = &sts["spec"]["template"];
    let set = sts["metadata"]["name"].as_str().unwrap_or_default();
    let name = format!("{set}-{ordinal}");
    let mut meta = template["metadata"].as_object().cloned().unwrap_or_default();
    let labels = meta.entry("labels").or_insert_with(|| json!({}));
    labels["statefulset.kubernetes.io/pod-name"] = json!(name);
    labels["apps.kubernetes.io/pod-index"] = json!(ordinal.to_string());
    labels[REVISION] = json!(revision);
    meta.insert("name".into(), json!(name));
    meta.insert("namespace".into(), sts["metadata"]["namespace"].clone());
    meta.insert("ownerReferences".into(), json!([owner_ref(sts)]));
    let mut spec = template["spec"].clone();
    spec["hostname"] = json!(name);
    if let Some(service) = sts["spec"]["serviceName"].as_str() {
        spec["subdomain"] = json!(service);
    }
    for t in sts["spec"]["volumeClaimTemplates"].as_array().into_iter().flatten() {
        let volume = t["metadata"]["name"].as_str().unwrap_or_default();
        let volumes = spec.as_object_mut().map(|m| m.entry("volumes").or_insert_with(|| json!([])));
        if let Some(Value::Array(volumes)) = volumes
            && !volumes.iter().any(|v| v["name"] == volume)
        {
            volumes.push(json!({"name": volume, "persistentVolumeClaim": {"claimName": format!("{volume}-{set}-{ordinal}")}}));
        }
    }
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec})
}

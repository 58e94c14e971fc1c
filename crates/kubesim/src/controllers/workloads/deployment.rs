//! The Deployment controller: one ReplicaSet per Pod template (`<deployment>-<hash>`,
//! labelled and selected by `pod-template-hash`, numbered by the
//! `deployment.kubernetes.io/revision` annotation), rolled out with the RollingUpdate
//! (maxSurge, maxUnavailable) or Recreate strategy, old ReplicaSets kept up to
//! `revisionHistoryLimit`, and the status `kubectl rollout status` reads: the replica
//! counts, `observedGeneration`, and the `Available` and `Progressing` conditions with the
//! real controller's reasons and messages.
//!
//! The hash is FNV-32a of the template as kubesim stores it, encoded with the API server's
//! alphabet: the same shape as a cluster's, not the same value (that one hashes Go's
//! in-memory struct).

use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::replicaset::{active_pods, patch_of, same_status};
use super::{Cluster, Next, owner_ref, scaled};
use crate::error::ApiError;
use crate::kinds::meta::deleting;
use crate::kinds::registry::ResourceType;
use crate::store::ObjKey;

const MANAGER: &str = "deployment-controller";
const HASH_LABEL: &str = "pod-template-hash";
const REVISION: &str = "deployment.kubernetes.io/revision";
const DESIRED: &str = "deployment.kubernetes.io/desired-replicas";
const MAX: &str = "deployment.kubernetes.io/max-replicas";

pub(crate) async fn sync(cluster: &Cluster<'_>, key: &ObjKey) -> Result<Next, ApiError> {
    let Some((deployments, d)) = cluster.live(("apps", "v1", "deployments"), key)? else {
        return Ok(Next::Done);
    };
    let sets = cluster.rt("apps", "v1", "replicasets")?;
    let uid = d["metadata"]["uid"].as_str().unwrap_or_default().to_owned();
    let owned = |cluster: &Cluster<'_>| -> Vec<Arc<Value>> {
        let mut owned: Vec<Arc<Value>> =
            cluster.controlled(&sets, &uid).into_iter().filter(|rs| !deleting(rs)).collect();
        owned.sort_by(|a, b| name_of(a).cmp(name_of(b)));
        owned
    };
    let desired = d["spec"]["replicas"].as_i64().unwrap_or(1);
    let rolling = d["spec"]["strategy"]["type"].as_str() != Some("Recreate");
    let surge = if rolling {
        scaled(&d["spec"]["strategy"]["rollingUpdate"]["maxSurge"], desired, true, 25)
    } else {
        0
    };
    let mut unavailable = if rolling {
        scaled(&d["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"], desired, false, 25)
    } else {
        desired
    };
    if rolling && surge == 0 && unavailable == 0 {
        unavailable = 1;
    }
    let unavailable = unavailable.min(desired);

    let all = owned(cluster);
    let template = &d["spec"]["template"];
    let mut new_rs = all.iter().find(|rs| same_template(&rs["spec"]["template"], template)).cloned();
    let mut created = None;
    let paused = d["spec"]["paused"] == true;
    if new_rs.is_none() && !paused {
        let revision = all.iter().map(|rs| revision_of(rs)).max().unwrap_or(0) + 1;
        let olds_active: i64 = all.iter().map(|rs| replicas(rs)).sum();
        let replicas = if rolling {
            (desired + surge - olds_active).clamp(0, desired)
        } else if olds_active == 0 {
            desired
        } else {
            0
        };
        let collisions = d["status"]["collisionCount"].as_i64().unwrap_or(0);
        let hash = template_hash(template, collisions);
        let rs = new_replica_set(&d, &hash, revision, replicas, desired + surge);
        match cluster.create(&sets, &key.0, rs, MANAGER).await {
            Ok(rs) => {
                created = rs["metadata"]["name"].as_str().map(str::to_owned);
                new_rs = Some(Arc::new(rs));
            }
            Err(e) if e.code == 409 => {
                // A ReplicaSet of that name with another template: count a collision.
                let status = json!({"status": {"collisionCount": collisions + 1}});
                cluster.merge(&deployments, key, true, &status, MANAGER).await?;
                return Ok(Next::Retry);
            }
            Err(e) => return Err(e),
        }
    }
    let olds: Vec<Arc<Value>> = {
        let new_name = new_rs.as_ref().map(|rs| name_of(rs));
        let mut olds: Vec<Arc<Value>> =
            all.iter().filter(|rs| Some(name_of(rs)) != new_name).cloned().collect();
        olds.sort_by_key(|rs| revision_of(rs));
        olds
    };

    if let Some(new) = &new_rs
        && !paused
    {
        let new_replicas = replicas(new);
        let olds_replicas: i64 = olds.iter().map(|rs| replicas(rs)).sum();
        if rolling {
            // Scale the new ReplicaSet up within the surge, the old ones down within the
            // unavailability budget (Kubernetes' NewRSNewReplicas and reconcileOldReplicaSets).
            let total = new_replicas + olds_replicas;
            let target = if olds_replicas == 0 || new_replicas >= desired {
                desired
            } else if total >= desired + surge {
                new_replicas
            } else {
                new_replicas + (desired + surge - total).min(desired - new_replicas)
            };
            if target != new_replicas {
                scale(cluster, &sets, new, target, desired, desired + surge).await?;
            }
            let new_unavailable = (target - available_of(new)).max(0);
            let mut budget = (target + olds_replicas) - (desired - unavailable) - new_unavailable;
            for old in &olds {
                if budget <= 0 {
                    break;
                }
                let r = replicas(old);
                let down = r.min(budget);
                if down > 0 {
                    scale(cluster, &sets, old, r - down, desired, desired + surge).await?;
                    budget -= down;
                }
            }
        } else {
            for old in olds.iter().filter(|rs| replicas(rs) > 0) {
                scale(cluster, &sets, old, 0, desired, desired).await?;
            }
            let pods = cluster.rt("", "v1", "pods")?;
            let old_pods = olds.iter().any(|rs| {
                let uid = rs["metadata"]["uid"].as_str().unwrap_or_default();
                !active_pods(cluster, &pods, &key.0, uid).is_empty()
            });
            if !old_pods && new_replicas != desired {
                scale(cluster, &sets, new, desired, desired, desired).await?;
            }
        }
        let revision = new["metadata"]["annotations"][REVISION].clone();
        if !revision.is_null() && d["metadata"]["annotations"][REVISION] != revision {
            let patch = json!({"metadata": {"annotations": {REVISION: revision}}});
            cluster.merge(&deployments, key, false, &patch, MANAGER).await?;
        }
    }
    cleanup(cluster, &sets, &d, &olds).await?;

    // The status, from the ReplicaSets as they are now.
    let all = owned(cluster);
    let new_now = new_rs.as_ref().and_then(|n| all.iter().find(|rs| name_of(rs) == name_of(n))).cloned();
    let d = cluster.get(&deployments, key).unwrap_or(d);
    let status = status_of(&d, &all, new_now.as_deref(), created.as_deref(), desired, unavailable, paused);
    if !same_status(&d["status"], &status) {
        cluster
            .merge(&deployments, key, true, &json!({"status": patch_of(&d["status"], &status)}), MANAGER)
            .await?;
    }
    Ok(Next::Done)
}

fn name_of(rs: &Value) -> &str {
    rs["metadata"]["name"].as_str().unwrap_or_default()
}

fn replicas(rs: &Value) -> i64 {
    rs["spec"]["replicas"].as_i64().unwrap_or(0)
}

fn available_of(rs: &Value) -> i64 {
    rs["status"]["availableReplicas"].as_i64().unwrap_or(0)
}

fn revision_of(rs: &Value) -> i64 {
    rs["metadata"]["annotations"][REVISION].as_str().and_then(|r| r.parse().ok()).unwrap_or(0)
}

/// Whether a ReplicaSet's template is the Deployment's (ignoring `pod-template-hash`).
fn same_template(rs_template: &Value, template: &Value) -> bool {
    let mut a = rs_template.clone();
    if let Some(labels) = a.pointer_mut("/metadata/labels").and_then(Value::as_object_mut) {
        labels.remove(HASH_LABEL);
        if labels.is_empty() && template.pointer("/metadata/labels").is_none() {
            a["metadata"].as_object_mut().map(|m| m.remove("labels"));
        }
    }
    a == *template
}

async fn scale(
    cluster: &Cluster<'_>,
    sets: &ResourceType,
    rs: &Value,
    to: i64,
    desired: i64,
    max: i64,
) -> Result<(), ApiError> {
    let key = (rs["metadata"]["namespace"].as_str().unwrap_or_default().to_owned(), name_of(rs).to_owned());
    let patch = json!({
        "metadata": {"annotations": {DESIRED: desired.to_string(), MAX: max.to_string()}},
        "spec": {"replicas": to},
    });
    cluster.merge(sets, &key, false, &patch, MANAGER).await.map(|_| ())
}

/// Old ReplicaSets scaled to zero beyond `revisionHistoryLimit` (10 by default) are deleted,
/// the oldest first.
async fn cleanup(
    cluster: &Cluster<'_>,
    sets: &ResourceType,
    d: &Value,
    olds: &[Arc<Value>],
) -> Result<(), ApiError> {
    let limit = usize::try_from(d["spec"]["revisionHistoryLimit"].as_i64().unwrap_or(10)).unwrap_or(0);
    let idle: Vec<&Arc<Value>> = olds
        .iter()
        .filter(|rs| replicas(rs) == 0 && rs["status"]["replicas"].as_i64().unwrap_or(0) == 0)
        .collect();
    for rs in idle.iter().take(idle.len().saturating_sub(limit)) {
        cluster.delete(sets, rs).await?;
    }
    Ok(())
}

fn new_replica_set(d: &Value, hash: &str, revision: i64, replicas: i64, max: i64) -> Value {
    let name = format!("{}-{hash}", d["metadata"]["name"].as_str().unwrap_or_default());
    let mut template = d["spec"]["template"].clone();
    template["metadata"]["labels"][HASH_LABEL] = json!(hash);
    let mut labels = d["spec"]["template"]["metadata"]["labels"].as_object().cloned().unwrap_or_default();
    labels.insert(HASH_LABEL.into(), json!(hash));
    let mut selector = d["spec"]["selector"].clone();
    selector["matchLabels"][HASH_LABEL] = json!(hash);
    let desired = d["spec"]["replicas"].as_i64().unwrap_or(1);
    let mut spec = json!({"replicas": replicas, "selector": selector, "template": template});
    if let Some(m) = d["spec"]["minReadySeconds"].as_i64() {
        spec["minReadySeconds"] = json!(m);
    }
    json!({
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {
            "name": name, "namespace": d["metadata"]["namespace"], "labels": labels,
            "annotations": {REVISION: revision.to_string(), DESIRED: desired.to_string(), MAX: max.to_string()},
            "ownerReferences": [owner_ref(d)],
        },
        "spec": spec,
    })
}

/// `pod-template-hash`: FNV-32a of the template and the collision count, its decimal
/// digits mapped onto the API server's safe alphabet (as `rand.SafeEncodeString`).
pub(crate) fn template_hash(template: &Value, collisions: i64) -> String {
    // FNV-32a by hand: eight lines, and the `fnv` crate has only the 64-bit variant.
    let mut h: u32 = 0x811c_9dc5;
    let mut feed = |bytes: &[u8]| {
        for b in bytes {
            h ^= u32::from(*b);
            h = h.wrapping_mul(0x0100_0193);
        }
    };
    feed(template.to_string().as_bytes());
    if collisions > 0 {
        feed(&u32::try_from(collisions).unwrap_or(0).to_le_bytes());
    }
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    h.to_string().bytes().map(|b| char::from(ALPHABET[usize::from(b) % ALPHABET.len()])).collect()
}

/// The status the real controller computes (`calculateStatus` and `syncRolloutStatus`).
fn status_of(
    d: &Value,
    all: &[Arc<Value>],
    new: Option<&Value>,
    created: Option<&str>,
    desired: i64,
    max_unavailable: i64,
    paused: bool,
) -> Map<String, Value> {
    let sum = |f: &dyn Fn(&Value) -> i64| -> i64 { all.iter().map(|rs| f(rs)).sum() };
    let actual = sum(&|rs| rs["status"]["replicas"].as_i64().unwrap_or(0));
    let ready = sum(&|rs| rs["status"]["readyReplicas"].as_i64().unwrap_or(0));
    let available = sum(&|rs| available_of(rs));
    let total = sum(&|rs| replicas(rs));
    let updated = new.map_or(0, |rs| rs["status"]["replicas"].as_i64().unwrap_or(0));
    let generation = d["metadata"]["generation"].as_i64().unwrap_or(0);
    let mut status = Map::new();
    status.insert("observedGeneration".into(), json!(generation));
    for (field, n) in [
        ("replicas", actual),
        ("updatedReplicas", updated),
        ("readyReplicas", ready),
        ("availableReplicas", available),
        ("unavailableReplicas", (total - available).max(0)),
    ] {
        if n > 0 {
            status.insert(field.into(), json!(n));
        }
    }
    if let Some(c) = d["status"]["collisionCount"].as_i64() {
        status.insert("collisionCount".into(), json!(c));
    }
    let mut conditions: Vec<Value> = d["status"]["conditions"].as_array().cloned().unwrap_or_default();
    // A ReplicaSet that cannot create its Pods says why on the Deployment too.
    let failure = all
        .iter()
        .filter_map(|rs| rs["status"]["conditions"].as_array())
        .flatten()
        .find(|c| c["type"] == "ReplicaFailure" && c["status"] == "True")
        .cloned();
    match failure {
        Some(c) => {
            let (reason, message) =
                (c["reason"].as_str().unwrap_or_default(), c["message"].as_str().unwrap_or_default());
            set_condition(&mut conditions, "ReplicaFailure", "True", reason, message);
        }
        None => conditions.retain(|c| c["type"] != "ReplicaFailure"),
    }
    if available >= desired - max_unavailable {
        set_condition(
            &mut conditions,
            "Available",
            "True",
            "MinimumReplicasAvailable",
            "Deployment has minimum availability.",
        );
    } else {
        set_condition(
            &mut conditions,
            "Available",
            "False",
            "MinimumReplicasUnavailable",
            "Deployment does not have minimum availability.",
        );
    }
    let rs_name = new.map(name_of).unwrap_or_default();
    if paused {
        set_condition(&mut conditions, "Progressing", "Unknown", "DeploymentPaused", "Deployment is paused");
    } else if let Some(name) = created {
        let message = format!("Created new replica set \"{name}\"");
        set_condition(&mut conditions, "Progressing", "True", "NewReplicaSetCreated", &message);
    } else if updated == desired && actual == desired && available == desired && new.is_some() {
        let message = format!("ReplicaSet \"{rs_name}\" has successfully progressed.");
        set_condition(&mut conditions, "Progressing", "True", "NewReplicaSetAvailable", &message);
    } else if new.is_some() {
        let message = format!("ReplicaSet \"{rs_name}\" is progressing.");
        let progressed = d["status"]["updatedReplicas"].as_i64().unwrap_or(0) != updated
            || d["status"]["availableReplicas"].as_i64().unwrap_or(0) != available
            || d["status"]["replicas"].as_i64().unwrap_or(0) != actual;
        let current = conditions.iter().find(|c| c["type"] == "Progressing");
        let same =
            current.is_some_and(|c| c["reason"] == "ReplicaSetUpdated" && c["message"] == message.as_str());
        if progressed || !same {
            set_condition(&mut conditions, "Progressing", "True", "ReplicaSetUpdated", &message);
            // Progress refreshes lastUpdateTime even when the reason stays.
            if let Some(c) = conditions.iter_mut().find(|c| c["type"] == "Progressing") {
                c["lastUpdateTime"] = json!(super::now());
            }
        }
    }
    status.insert("conditions".into(), Value::Array(conditions));
    status
}

/// Set condition `type_`: unchanged when status, reason and message are; a new status
/// moves `lastTransitionTime`, any change `lastUpdateTime`.
fn set_condition(conditions: &mut Vec<Value>, type_: &str, status: &str, reason: &str, message: &str) {
    let now = super::now();
    match conditions.iter_mut().find(|c| c["type"] == type_) {
        Some(c) if c["status"] == status && c["reason"] == reason && c["message"] == message => {}
        Some(c) => {
            if c["status"] != status {
                c["lastTransitionTime"] = json!(now);
            }
            c["status"] = json!(status);
            c["reason"] = json!(reason);
            c["message"] = json!(message);
            c["lastUpdateTime"] = json!(now);
        }
        None => conditions.push(json!({
            "type": type_, "status": status, "lastUpdateTime": now, "lastTransitionTime": now,
            "reason": reason, "message": message,
        })),
    }
}

#[cfg(test)]
mod tests {
    use super::template_hash;
    use serde_json::json;

    #[test]
    fn the_hash_is_stable_safe_and_moves_with_collisions() {
        let t = json!({"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}});
        let h = template_hash(&t, 0);
        assert_eq!(h, template_hash(&t, 0));
        assert!(h.chars().all(|c| "bcdfghjklmnpqrstvwxz2456789".contains(c)), "{h}");
        assert_ne!(h, template_hash(&t, 1));
    }
}

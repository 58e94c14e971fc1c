//! The Job controller: Pods from the template (`<job>-xxxxx`, labelled with the Job's name
//! and uid) until `completions` succeeded, at most `parallelism` at once; more than
//! `backoffLimit` failed Pods fail the Job. The status carries the counts, `startTime`,
//! `completionTime` and the conditions of Kubernetes 1.33 (`SuccessCriteriaMet` then
//! `Complete`; `FailureTarget` then `Failed`), so `kubectl wait --for=condition=complete`
//! works. The simulated kubelet lets such Pods succeed after `job_duration`.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::replicaset::{patch_of, ready_since, same_status};
use super::{Cluster, Next, owner_ref};
use crate::error::ApiError;
use crate::kinds::meta::deleting;
use crate::store::ObjKey;

const MANAGER: &str = "job-controller";

pub(crate) async fn sync(cluster: &Cluster<'_>, key: &ObjKey) -> Result<Next, ApiError> {
    let Some((jobs, job)) = cluster.live(("batch", "v1", "jobs"), key)? else { return Ok(Next::Done) };
    if finished(&job) {
        return Ok(Next::Done);
    }
    let pods_rt = cluster.rt("", "v1", "pods")?;
    let uid = job["metadata"]["uid"].as_str().unwrap_or_default().to_owned();
    let pods = || cluster.controlled(&pods_rt, &uid);
    let phase_count =
        |pods: &[Arc<Value>], phase: &str| pods.iter().filter(|p| p["status"]["phase"] == phase).count();
    let all = pods();
    let succeeded = phase_count(&all, "Succeeded");
    let failed = phase_count(&all, "Failed");
    let active: Vec<&Arc<Value>> = all
        .iter()
        .filter(|p| !deleting(p) && !matches!(p["status"]["phase"].as_str(), Some("Succeeded" | "Failed")))
        .collect();
    let completions = job["spec"]["completions"].as_u64().map(|c| usize::try_from(c).unwrap_or(usize::MAX));
    let parallelism = usize::try_from(job["spec"]["parallelism"].as_u64().unwrap_or(1)).unwrap_or(1);
    let backoff_limit = usize::try_from(job["spec"]["backoffLimit"].as_u64().unwrap_or(6)).unwrap_or(6);
    let suspended = job["spec"]["suspend"] == true;

    let mut conditions: Vec<Value> = job["status"]["conditions"].as_array().cloned().unwrap_or_default();
    let done_by_count = match completions {
        Some(c) => succeeded >= c,
        None => succeeded >= 1 && active.is_empty(),
    };
    let failing = failed > backoff_limit;
    let want = if failing || done_by_count || suspended {
        0
    } else {
        match completions {
            Some(c) => parallelism.min(c - succeeded),
            None if succeeded == 0 => parallelism,
            None => active.len(),
        }
    };
    if active.len() < want {
        for _ in active.len()..want {
            cluster.create(&pods_rt, &key.0, pod_for(&job), MANAGER).await?;
        }
    } else if active.len() > want {
        for pod in active.iter().take(active.len() - want) {
            cluster.delete(&pods_rt, pod).await?;
        }
    }
    let now = super::now();
    let message = "Reached expected number of succeeded pods";
    if done_by_count {
        add_condition(&mut conditions, "SuccessCriteriaMet", "CompletionsReached", message, &now);
        add_condition(&mut conditions, "Complete", "CompletionsReached", message, &now);
    } else if failing {
        let message = "Job has reached the specified backoff limit";
        add_condition(&mut conditions, "FailureTarget", "BackoffLimitExceeded", message, &now);
        add_condition(&mut conditions, "Failed", "BackoffLimitExceeded", message, &now);
    }
    let now_active = pods()
        .iter()
        .filter(|p| !deleting(p) && !matches!(p["status"]["phase"].as_str(), Some("Succeeded" | "Failed")))
        .count();
    let ready = active.iter().filter(|p| ready_since(p).is_some()).count();
    let mut status = Map::new();
    status.insert(
        "startTime".into(),
        job["status"]["startTime"].as_str().map_or_else(|| json!(now), |t| json!(t)),
    );
    for (field, n) in [("active", now_active), ("succeeded", succeeded), ("failed", failed)] {
        if n > 0 {
            status.insert(field.into(), json!(n));
        }
    }
    status.insert("ready".into(), json!(ready));
    status.insert("terminating".into(), json!(0));
    status.insert("uncountedTerminatedPods".into(), json!({}));
    if done_by_count {
        status.insert(
            "completionTime".into(),
            job["status"]["completionTime"].as_str().map_or_else(|| json!(now), |t| json!(t)),
        );
    }
    if !conditions.is_empty() {
        status.insert("conditions".into(), Value::Array(conditions));
    }
    if !same_status(&job["status"], &status) {
        cluster
            .merge(&jobs, key, true, &json!({"status": patch_of(&job["status"], &status)}), MANAGER)
            .await?;
    }
    Ok(Next::Done)
}

/// Whether the Job has a `Complete` or `Failed` condition that is true.
pub(crate) fn finished(job: &Value) -> bool {
    job["status"]["conditions"].as_array().is_some_and(|cs| {
        cs.iter().any(|c| (c["type"] == "Complete" || c["type"] == "Failed") && c["status"] == "True")
    })
}

fn add_condition(conditions: &mut Vec<Value>, type_: &str, reason: &str, message: &str, now: &str) {
    if conditions.iter().any(|c| c["type"] == type_) {
        return;
    }
    conditions.push(json!({
        "type": type_, "status": "True", "lastProbeTime": now, "lastTransitionTime": now,
        "reason": reason, "message": message,
    }));
}

fn pod_for(job: &Value) -> Value {
    let template = &job["spec"]["template"];
    let name = job["metadata"]["name"].as_str().unwrap_or_default();
    let uid = job["metadata"]["uid"].as_str().unwrap_or_default();
    let mut meta = template["metadata"].as_object().cloned().unwrap_or_default();
    meta.remove("name");
    let labels = meta.entry("labels").or_insert_with(|| json!({}));
    for (k, v) in [
        ("batch.kubernetes.io/controller-uid", uid),
        ("batch.kubernetes.io/job-name", name),
        ("controller-uid", uid),
        ("job-name", name),
    ] {
        labels[k] = json!(v);
    }
    meta.insert("generateName".into(), json!(format!("{name}-")));
    meta.insert("namespace".into(), job["metadata"]["namespace"].clone());
    meta.insert("ownerReferences".into(), json!([owner_ref(job)]));
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": template["spec"]})
}

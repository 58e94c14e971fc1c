//! The CronJob controller on the real clock: at each time the schedule names (the latest
//! missed one, within `startingDeadlineSeconds`), a Job `<cronjob>-<minutes since epoch>`
//! from the template, unless `concurrencyPolicy: Forbid` and one still runs (`Replace`
//! deletes it first); `status.active`, `lastScheduleTime` and `lastSuccessfulTime`; finished
//! Jobs kept up to the history limits. Schedules are read by `croner` (POSIX cron with the
//! `@hourly`-style names); `timeZone` is not applied (UTC).

use std::str::FromStr as _;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, SecondsFormat, Utc};
use croner::Cron;
use serde_json::{Map, Value, json};

use super::jobs::finished;
use super::replicaset::{patch_of, same_status};
use super::{Cluster, Next, owner_ref};
use crate::error::ApiError;
use crate::kinds::meta::deleting;
use crate::store::ObjKey;

const MANAGER: &str = "cronjob-controller";

pub(crate) async fn sync(cluster: &Cluster<'_>, key: &ObjKey) -> Result<Next, ApiError> {
    let Some((cronjobs, cj)) = cluster.live(("batch", "v1", "cronjobs"), key)? else { return Ok(Next::Done) };
    let jobs_rt = cluster.rt("batch", "v1", "jobs")?;
    let uid = cj["metadata"]["uid"].as_str().unwrap_or_default().to_owned();
    let owned = || -> Vec<Arc<Value>> {
        let mut jobs: Vec<Arc<Value>> =
            cluster.controlled(&jobs_rt, &uid).into_iter().filter(|j| !deleting(j)).collect();
        jobs.sort_by_key(|j| scheduled_at(j));
        jobs
    };
    let jobs = owned();

    // Finished Jobs beyond the history limits go, the oldest first.
    for (failed, limit) in [(false, "successfulJobsHistoryLimit", 3), (true, "failedJobsHistoryLimit", 1)]
        .map(|(f, k, d)| (f, cj["spec"][k].as_u64().unwrap_or(d)))
    {
        let done: Vec<&Arc<Value>> = jobs.iter().filter(|j| finished(j) && failed_job(j) == failed).collect();
        let extra = done.len().saturating_sub(usize::try_from(limit).unwrap_or(0));
        for j in done.into_iter().take(extra) {
            cluster.delete(&jobs_rt, j).await?;
        }
    }

    let now = chrono::DateTime::<Utc>::from(crate::clock::now());
    let mut next = Next::Done;
    let mut last_schedule = cj["status"]["lastScheduleTime"].as_str().map(str::to_owned);
    let schedule = cj["spec"]["schedule"].as_str().unwrap_or_default();
    match Cron::from_str(schedule) {
        Err(e) => {
            tracing::warn!(cronjob = key.1, schedule, error = %e, "the CronJob's schedule cannot be read; it never runs")
        }
        Ok(cron) if cj["spec"]["suspend"] != true => {
            let since = last_schedule
                .as_deref()
                .or_else(|| cj["metadata"]["creationTimestamp"].as_str())
                .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
                .map_or(now, |t| t.with_timezone(&Utc));
            // The latest time due, as the real controller takes (it skips older misses).
            let mut due = None;
            let mut cursor = since;
            for _ in 0..100 {
                match cron.find_next_occurrence(&cursor, false) {
                    Ok(t) if t <= now => {
                        due = Some(t);
                        cursor = t;
                    }
                    _ => break,
                }
            }
            let deadline = cj["spec"]["startingDeadlineSeconds"].as_i64();
            let in_time = |t: &DateTime<Utc>| deadline.is_none_or(|d| (now - *t).num_seconds() <= d);
            if let Some(t) = due.filter(in_time) {
                let active: Vec<&Arc<Value>> = jobs.iter().filter(|j| !finished(j)).collect();
                match cj["spec"]["concurrencyPolicy"].as_str().unwrap_or("Allow") {
                    "Forbid" if !active.is_empty() => {}
                    policy => {
                        if policy == "Replace" {
                            for j in &active {
                                cluster.delete(&jobs_rt, j).await?;
                            }
                        }
                        match cluster.create(&jobs_rt, &key.0, job_for(&cj, &t), MANAGER).await {
                            Ok(_) => {}
                            Err(e) if e.code == 409 => {}
                            Err(e) => return Err(e),
                        }
                        last_schedule = Some(t.to_rfc3339_opts(SecondsFormat::Secs, true));
                    }
                }
            }
            if let Ok(upcoming) = cron.find_next_occurrence(&now, false) {
                let wait = (upcoming - now).to_std().unwrap_or_default() + Duration::from_millis(50);
                next = Next::After(wait);
            }
        }
        Ok(_) => {}
    }

    let jobs = owned();
    let mut status = Map::new();
    let active: Vec<Value> = jobs
        .iter()
        .filter(|j| !finished(j))
        .map(|j| {
            json!({
                "apiVersion": "batch/v1", "kind": "Job", "name": j["metadata"]["name"],
                "namespace": j["metadata"]["namespace"], "uid": j["metadata"]["uid"],
                "resourceVersion": j["metadata"]["resourceVersion"],
            })
        })
        .collect();
    if !active.is_empty() {
        status.insert("active".into(), Value::Array(active));
    }
    if let Some(t) = last_schedule {
        status.insert("lastScheduleTime".into(), json!(t));
    }
    let succeeded = jobs
        .iter()
        .filter(|j| finished(j) && !failed_job(j))
        .filter_map(|j| j["status"]["completionTime"].as_str())
        .max();
    if let Some(t) = succeeded.or_else(|| cj["status"]["lastSuccessfulTime"].as_str()) {
        status.insert("lastSuccessfulTime".into(), json!(t));
    }
    if !same_status(&cj["status"], &status) {
        cluster
            .merge(&cronjobs, key, true, &json!({"status": patch_of(&cj["status"], &status)}), MANAGER)
            .await?;
    }
    Ok(next)
}

fn failed_job(job: &Value) -> bool {
    job["status"]["conditions"]
        .as_array()
        .is_some_and(|cs| cs.iter().any(|c| c["type"] == "Failed" && c["status"] == "True"))
}

fn scheduled_at(job: &Value) -> String {
    job["metadata"]["annotations"]["batch.kubernetes.io/cronjob-scheduled-timestamp"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn job_for(cj: &Value, at: &DateTime<Utc>) -> Value {
    let template = &cj["spec"]["jobTemplate"];
    let name = format!("{}-{}", cj["metadata"]["name"].as_str().unwrap_or_default(), at.timestamp() / 60);
    let mut meta = template["metadata"].as_object().cloned().unwrap_or_default();
    meta.insert("name".into(), json!(name));
    meta.insert("namespace".into(), cj["metadata"]["namespace"].clone());
    meta.insert("ownerReferences".into(), json!([owner_ref(cj)]));
    let annotations = meta.entry("annotations").or_insert_with(|| json!({}));
    annotations["batch.kubernetes.io/cronjob-scheduled-timestamp"] =
        json!(at.to_rfc3339_opts(SecondsFormat::Secs, true));
    json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "spec": template["spec"]})
}

//! The Pod table (`printPod` in `pkg/printers/internalversion/printers.go`): READY counts
//! ready containers (and started restartable init containers), STATUS is the phase or
//! status reason refined by the init containers (`Init:N/M`, `Init:<reason>`,
//! `Init:ExitCode:N`, `Init:Signal:N`), then by the containers from the last one up
//! (a waiting reason such as `CrashLoopBackOff`, a terminated reason such as `Error`, or
//! `ExitCode:N` / `Signal:N`; `Completed` turns back into `Running` or `NotReady` while a
//! container still runs), `Terminating` while it is deleted; RESTARTS adds
//! `(<age> ago)` of the last container termination. Finished Pods' rows carry the
//! `Completed` condition.

use serde_json::{Value, json};

use super::format::{age, deleting, items, name, since, text, time};
use super::{Column, Printer, Row, age_col, col, docs, name_col, wide};
use k8s_openapi::api::core::v1 as core;

pub(super) fn printers() -> Vec<Printer> {
    vec![Printer { group: "", kind: "Pod", columns, row }]
}

fn columns() -> Vec<Column> {
    vec![
        name_col(),
        col("Ready", "string", "The aggregate readiness state of this pod for accepting traffic."),
        col("Status", "string", "The aggregate status of the containers in this pod."),
        col(
            "Restarts",
            "string",
            "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.",
        ),
        age_col(),
        wide("IP", "string", docs::field::<core::PodStatus>("podIP")),
        wide("Node", "string", docs::field::<core::PodSpec>("nodeName")),
        wide("Nominated Node", "string", docs::field::<core::PodStatus>("nominatedNodeName")),
        wide("Readiness Gates", "string", docs::field::<core::PodSpec>("readinessGates")),
    ]
}

/// Whether an init container keeps running beside the others (`restartPolicy: Always`).
fn restartable(pod: &Value, name: &str) -> bool {
    items(pod, "/spec/initContainers")
        .iter()
        .any(|c| c["name"].as_str() == Some(name) && c["restartPolicy"] == "Always")
}

fn condition_true(pod: &Value, type_: &str) -> bool {
    items(pod, "/status/conditions").iter().any(|c| c["type"] == type_ && c["status"] == "True")
}

/// The time a container last terminated, from its `lastState`.
fn last_termination(c: &Value) -> Option<jiff::Timestamp> {
    time(c, "/lastState/terminated/finishedAt")
}

/// `Signal:N` or `ExitCode:N` of a terminated state without a reason.
fn exit(terminated: &Value) -> String {
    match terminated["signal"].as_i64().filter(|s| *s != 0) {
        Some(signal) => format!("Signal:{signal}"),
        None => format!("ExitCode:{}", terminated["exitCode"].as_i64().unwrap_or(0)),
    }
}

fn reason_of(terminated: &Value) -> Option<&str> {
    terminated["reason"].as_str().filter(|r| !r.is_empty())
}

fn row(pod: &Value) -> Row {
    let phase = text(pod, "/status/phase");
    let mut reason = match text(pod, "/status/reason") {
        r if r.is_empty() => phase.clone(),
        r => r,
    };
    if items(pod, "/status/conditions")
        .iter()
        .any(|c| c["type"] == "PodScheduled" && c["reason"] == "SchedulingGated")
    {
        reason = "SchedulingGated".into();
    }
    let init_specs = items(pod, "/spec/initContainers");
    let total = items(pod, "/spec/containers").len()
        + init_specs.iter().filter(|c| c["restartPolicy"] == "Always").count();
    let mut ready = 0;
    let mut restarts = 0;
    let mut last_restart: Option<jiff::Timestamp> = None;
    let mut sidecar_restarts = 0;
    let mut sidecar_last_restart: Option<jiff::Timestamp> = None;

    let mut initializing = false;
    for (i, c) in items(pod, "/status/initContainerStatuses").iter().enumerate() {
        let count = c["restartCount"].as_i64().unwrap_or(0);
        restarts += count;
        last_restart = last_restart.max(last_termination(c));
        let name = c["name"].as_str().unwrap_or_default();
        let sidecar = restartable(pod, name);
        if sidecar {
            sidecar_restarts += count;
            sidecar_last_restart = sidecar_last_restart.max(last_termination(c));
        }
        let terminated = c.pointer("/state/terminated").filter(|t| t.is_object());
        let waiting = c.pointer("/state/waiting").filter(|w| w.is_object());
        if terminated.is_some_and(|t| t["exitCode"].as_i64().unwrap_or(0) == 0) {
            continue;
        }
        if sidecar && c["started"] == true {
            if c["ready"] == true {
                ready += 1;
            }
            continue;
        }
        if let Some(t) = terminated {
            reason = match reason_of(t) {
                Some(r) => format!("Init:{r}"),
                None => format!("Init:{}", exit(t)),
            };
        } else if let Some(w) =
            waiting.and_then(|w| w["reason"].as_str()).filter(|r| !r.is_empty() && *r != "PodInitializing")
        {
            reason = format!("Init:{w}");
        } else {
            reason = format!("Init:{i}/{}", init_specs.len());
        }
        initializing = true;
        break;
    }

    if !initializing || condition_true(pod, "Initialized") {
        restarts = sidecar_restarts;
        last_restart = sidecar_last_restart;
        let mut has_running = false;
        let mut error_reason = None;
        for c in items(pod, "/status/containerStatuses").iter().rev() {
            restarts += c["restartCount"].as_i64().unwrap_or(0);
            last_restart = last_restart.max(last_termination(c));
            let waiting =
                c.pointer("/state/waiting/reason").and_then(Value::as_str).filter(|r| !r.is_empty());
            let terminated = c.pointer("/state/terminated").filter(|t| t.is_object());
            if let Some(w) = waiting {
                reason = w.to_owned();
            } else if let Some(t) = terminated {
                reason = reason_of(t).map_or_else(|| exit(t), str::to_owned);
                if t["exitCode"].as_i64().unwrap_or(0) != 0 {
                    error_reason = Some(reason.clone());
                }
            } else if c["ready"] == true && c.pointer("/state/running").is_some_and(Value::is_object) {
                has_running = true;
                ready += 1;
            }
        }
        if reason == "Completed" {
            if has_running && condition_true(pod, "Ready") {
                reason = "Running".into();
            } else if let Some(e) = error_reason {
                reason = e;
            } else if has_running {
                reason = "NotReady".into();
            }
        }
    }

    if deleting(pod) && text(pod, "/status/reason") == "NodeLost" {
        reason = "Unknown".into();
    } else if deleting(pod) && !matches!(phase.as_str(), "Succeeded" | "Failed") {
        reason = "Terminating".into();
    }

    let restarts_cell = match last_restart {
        Some(t) if restarts != 0 => format!("{restarts} ({} ago)", since(Some(t))),
        _ => restarts.to_string(),
    };
    let or_none = |s: String| if s.is_empty() { "<none>".to_owned() } else { s };
    let gates = items(pod, "/spec/readinessGates");
    let readiness_gates = if gates.is_empty() {
        "<none>".to_owned()
    } else {
        let conditions = items(pod, "/status/conditions");
        let met = gates
            .iter()
            .filter(|g| {
                conditions
                    .iter()
                    .find(|c| c["type"] == g["conditionType"])
                    .is_some_and(|c| c["status"] == "True")
            })
            .count();
        format!("{met}/{}", gates.len())
    };
    let conditions = match phase.as_str() {
        "Succeeded" => Some(
            json!([{"type": "Completed", "status": "True", "reason": "Succeeded", "message": "The pod has completed successfully."}]),
        ),
        "Failed" => Some(
            json!([{"type": "Completed", "status": "True", "reason": "Failed", "message": "The pod failed."}]),
        ),
        _ => None,
    };
    Row {
        cells: vec![
            name(pod),
            json!(format!("{ready}/{total}")),
            json!(reason),
            json!(restarts_cell),
            age(pod),
            json!(or_none(text(pod, "/status/podIPs/0/ip"))),
            json!(or_none(text(pod, "/spec/nodeName"))),
            json!(or_none(text(pod, "/status/nominatedNodeName"))),
            json!(readiness_gates),
        ],
        conditions,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(spec: Value, status: Value) -> Value {
        json!({"metadata": {"name": "p", "creationTimestamp": "2020-01-01T00:00:00Z"}, "spec": spec, "status": status})
    }

    fn one(status: Value) -> Value {
        pod(json!({"containers": [{"name": "c"}]}), status)
    }

    fn cells(p: &Value) -> (String, String, String) {
        let r = row(p);
        let s = |i: usize| r.cells[i].as_str().unwrap_or_default().to_owned();
        (s(1), s(2), s(3))
    }

    #[test]
    fn a_running_ready_pod() {
        let p = one(json!({"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}],
            "containerStatuses": [{"name": "c", "ready": true, "restartCount": 0, "state": {"running": {}}}],
            "podIPs": [{"ip": "10.0.0.1"}]}));
        assert_eq!(cells(&p), ("1/1".into(), "Running".into(), "0".into()));
        assert_eq!(row(&p).cells[5], "10.0.0.1");
        assert_eq!(row(&p).cells[6], "<none>");
        assert!(row(&p).conditions.is_none());
    }

    #[test]
    fn a_failed_container_shows_its_terminated_reason_or_exit_code() {
        let failed = |terminated: Value| {
            one(
                json!({"phase": "Failed", "containerStatuses": [{"name": "c", "ready": false, "restartCount": 0, "state": {"terminated": terminated}}]}),
            )
        };
        assert_eq!(cells(&failed(json!({"exitCode": 1, "reason": "Error"}))).1, "Error");
        assert_eq!(cells(&failed(json!({"exitCode": 3}))).1, "ExitCode:3");
        assert_eq!(cells(&failed(json!({"exitCode": 137, "signal": 9}))).1, "Signal:9");
        let r = row(&failed(json!({"exitCode": 1, "reason": "Error"})));
        assert_eq!(
            r.conditions,
            Some(
                json!([{"type": "Completed", "status": "True", "reason": "Failed", "message": "The pod failed."}])
            )
        );
    }

    #[test]
    fn a_crashing_container_shows_its_waiting_reason_and_when_it_last_restarted() {
        let finished = (crate::clock::timestamp() - jiff::SignedDuration::from_secs(5)).to_string();
        let p = one(
            json!({"phase": "Running", "containerStatuses": [{"name": "c", "ready": false, "restartCount": 2,
            "state": {"waiting": {"reason": "CrashLoopBackOff"}},
            "lastState": {"terminated": {"exitCode": 1, "reason": "Error", "finishedAt": finished}}}]}),
        );
        let (ready, status, restarts) = cells(&p);
        assert_eq!((ready.as_str(), status.as_str()), ("0/1", "CrashLoopBackOff"));
        assert!(restarts == "2 (5s ago)" || restarts == "2 (6s ago)", "{restarts}");
    }

    #[test]
    fn completed_turns_back_into_running_or_not_ready_while_a_container_runs() {
        let status = |ready_condition: &str| {
            json!({"phase": "Running", "conditions": [{"type": "Ready", "status": ready_condition}], "containerStatuses": [
                {"name": "a", "ready": true, "restartCount": 0, "state": {"running": {}}},
                {"name": "b", "ready": false, "restartCount": 0, "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}},
            ]})
        };
        let spec = json!({"containers": [{"name": "a"}, {"name": "b"}]});
        assert_eq!(cells(&pod(spec.clone(), status("True"))).1, "Running");
        assert_eq!(cells(&pod(spec.clone(), status("False"))).1, "NotReady");
        let mut failed = status("False");
        failed["containerStatuses"][0] = json!({"name": "a", "ready": false, "restartCount": 0, "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}});
        failed["containerStatuses"][1] = json!({"name": "b", "ready": false, "restartCount": 0, "state": {"terminated": {"exitCode": 2, "reason": "Error"}}});
        // The containers are read from the last one up: `Completed` of the first one gives
        // way to the error of the second.
        assert_eq!(cells(&pod(spec, failed)).1, "Error");
    }

    #[test]
    fn init_containers_show_their_progress() {
        let spec = json!({"initContainers": [{"name": "i1"}, {"name": "i2"}], "containers": [{"name": "c"}]});
        let status = |i1: Value, i2: Value| {
            json!({"phase": "Pending", "initContainerStatuses": [
                {"name": "i1", "restartCount": 0, "state": i1}, {"name": "i2", "restartCount": 0, "state": i2}]})
        };
        let done = json!({"terminated": {"exitCode": 0, "reason": "Completed"}});
        let waiting = json!({"waiting": {"reason": "PodInitializing"}});
        assert_eq!(cells(&pod(spec.clone(), status(done.clone(), waiting.clone()))).1, "Init:1/2");
        assert_eq!(cells(&pod(spec.clone(), status(waiting.clone(), waiting))).1, "Init:0/2");
        let crash = json!({"waiting": {"reason": "CrashLoopBackOff"}});
        assert_eq!(cells(&pod(spec.clone(), status(done.clone(), crash))).1, "Init:CrashLoopBackOff");
        let failed = json!({"terminated": {"exitCode": 2}});
        assert_eq!(cells(&pod(spec.clone(), status(failed, done.clone()))).1, "Init:ExitCode:2");
        let signalled = json!({"terminated": {"exitCode": 2, "signal": 15}});
        assert_eq!(cells(&pod(spec.clone(), status(signalled, done.clone()))).1, "Init:Signal:15");
        let oom = json!({"terminated": {"exitCode": 137, "reason": "OOMKilled"}});
        assert_eq!(cells(&pod(spec, status(oom, done))).1, "Init:OOMKilled");
    }

    #[test]
    fn a_started_sidecar_counts_as_a_container() {
        let spec = json!({"initContainers": [{"name": "side", "restartPolicy": "Always"}], "containers": [{"name": "c"}]});
        let status = json!({"phase": "Running", "conditions": [{"type": "Initialized", "status": "True"}, {"type": "Ready", "status": "True"}],
            "initContainerStatuses": [{"name": "side", "started": true, "ready": true, "restartCount": 1, "state": {"running": {}}}],
            "containerStatuses": [{"name": "c", "ready": true, "restartCount": 0, "state": {"running": {}}}]});
        let (ready, status, restarts) = cells(&pod(spec, status));
        assert_eq!((ready.as_str(), status.as_str(), restarts.as_str()), ("2/2", "Running", "1"));
    }

    #[test]
    fn deletion_gated_pods_and_readiness_gates() {
        let mut p = one(json!({"phase": "Running"}));
        p["metadata"]["deletionTimestamp"] = json!("2020-01-01T00:00:00Z");
        assert_eq!(cells(&p).1, "Terminating");
        p["status"]["reason"] = json!("NodeLost");
        assert_eq!(cells(&p).1, "Unknown");
        let gated = one(
            json!({"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}]}),
        );
        assert_eq!(cells(&gated).1, "SchedulingGated");
        let mut gates =
            one(json!({"phase": "Running", "conditions": [{"type": "www.example.com/a", "status": "True"}]}));
        gates["spec"]["readinessGates"] =
            json!([{"conditionType": "www.example.com/a"}, {"conditionType": "www.example.com/b"}]);
        assert_eq!(row(&gates).cells[8], "1/2");
        assert_eq!(row(&one(json!({}))).cells[8], "<none>");
    }
}

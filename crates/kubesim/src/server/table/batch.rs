//! The tables of Jobs and CronJobs (`printJob`, `printCronJob` in
//! `pkg/printers/internalversion/printers.go`): a Job's STATUS from its conditions,
//! COMPLETIONS as `succeeded/completions`, DURATION from start to completion (or to now);
//! a CronJob's schedule, time zone, suspension, active Jobs and last schedule. The
//! `batch/v1beta1` documentation the Go printer cites for the CronJob columns is read
//! from `batch/v1`.

use serde_json::{Value, json};

use super::format::{
    age, containers, deleting, format_selector, go_bool, human_duration, int, items, name, seconds_between,
    since, text, time,
};
use super::{Column, Printer, Row, age_col, col, containers_cols, docs, name_col, wide};
use k8s_openapi::api::batch::v1 as batch;

pub(super) fn printers() -> Vec<Printer> {
    vec![
        Printer { group: "batch", kind: "Job", columns: job_columns, row: job },
        Printer { group: "batch", kind: "CronJob", columns: cronjob_columns, row: cronjob },
    ]
}

fn template_cols() -> [Column; 3] {
    let [containers, images] = containers_cols();
    [containers, images, wide("Selector", "string", docs::field::<batch::JobSpec>("selector"))]
}

fn job_columns() -> Vec<Column> {
    let mut cols = vec![
        name_col(),
        col("Status", "string", "Status of the job."),
        col("Completions", "string", docs::field::<batch::JobStatus>("succeeded")),
        col("Duration", "string", "Time required to complete the job."),
        age_col(),
    ];
    cols.extend(template_cols());
    cols
}

/// Whether the Job's condition `type_` is true (the first condition of that type decides).
fn condition(job: &Value, type_: &str) -> bool {
    items(job, "/status/conditions")
        .iter()
        .find(|c| c["type"] == type_)
        .is_some_and(|c| c["status"] == "True")
}

fn job(o: &Value) -> Row {
    let succeeded = int(o, "/status/succeeded");
    let completions = match o.pointer("/spec/completions").and_then(Value::as_i64) {
        Some(c) => format!("{succeeded}/{c}"),
        None => match int(o, "/spec/parallelism") {
            p if p > 1 => format!("{succeeded}/1 of {p}"),
            _ => format!("{succeeded}/1"),
        },
    };
    let duration = match (time(o, "/status/startTime"), time(o, "/status/completionTime")) {
        (None, _) => String::new(),
        (Some(start), None) => since(Some(start)),
        (Some(start), Some(end)) => human_duration(seconds_between(start, end)),
    };
    let status = if condition(o, "Complete") {
        "Complete"
    } else if condition(o, "Failed") {
        "Failed"
    } else if deleting(o) {
        "Terminating"
    } else if condition(o, "Suspended") {
        "Suspended"
    } else if condition(o, "FailureTarget") {
        "FailureTarget"
    } else if condition(o, "SuccessCriteriaMet") {
        "SuccessCriteriaMet"
    } else {
        "Running"
    };
    let [names, images] = containers(o, "/spec/template/spec/containers");
    vec![
        name(o),
        json!(status),
        json!(completions),
        json!(duration),
        age(o),
        names,
        images,
        json!(format_selector(o.pointer("/spec/selector"))),
    ]
    .into()
}

fn cronjob_columns() -> Vec<Column> {
    let (spec, status) = (docs::field::<batch::CronJobSpec>, docs::field::<batch::CronJobStatus>);
    let mut cols = vec![
        name_col(),
        col("Schedule", "string", spec("schedule")),
        col("Timezone", "string", spec("timeZone")),
        col("Suspend", "boolean", spec("suspend")),
        col("Active", "integer", status("active")),
        col("Last Schedule", "string", status("lastScheduleTime")),
        age_col(),
    ];
    cols.extend(template_cols());
    cols
}

fn cronjob(o: &Value) -> Row {
    let last = match time(o, "/status/lastScheduleTime") {
        Some(t) => since(Some(t)),
        None => "<none>".into(),
    };
    let suspend = o.pointer("/spec/suspend").and_then(Value::as_bool).map_or("<unset>", go_bool);
    let time_zone = o.pointer("/spec/timeZone").and_then(Value::as_str).unwrap_or("<none>");
    let [names, images] = containers(o, "/spec/jobTemplate/spec/template/spec/containers");
    vec![
        name(o),
        json!(text(o, "/spec/schedule")),
        json!(time_zone),
        json!(suspend),
        json!(items(o, "/status/active").len()),
        json!(last),
        age(o),
        names,
        images,
        json!(format_selector(o.pointer("/spec/jobTemplate/spec/selector"))),
    ]
    .into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_status_completions_and_duration() {
        let j = |conditions: Value| {
            json!({"spec": {"completions": 2}, "status": {"succeeded": 1, "startTime": "2020-01-01T00:00:00Z",
                "completionTime": "2020-01-01T00:02:05Z", "conditions": conditions}})
        };
        let cells = job(&j(
            json!([{"type": "SuccessCriteriaMet", "status": "True"}, {"type": "Complete", "status": "True"}]),
        ))
        .cells;
        assert_eq!(cells[1..4], [json!("Complete"), json!("1/2"), json!("2m5s")]);
        assert_eq!(job(&j(json!([{"type": "FailureTarget", "status": "True"}]))).cells[1], "FailureTarget");
        assert_eq!(job(&j(json!([{"type": "Suspended", "status": "True"}]))).cells[1], "Suspended");
        assert_eq!(job(&j(json!([{"type": "Complete", "status": "False"}]))).cells[1], "Running");
        let parallel = json!({"spec": {"parallelism": 3}});
        assert_eq!(job(&parallel).cells[2..4], [json!("0/1 of 3"), json!("")]);
    }

    #[test]
    fn cronjob_cells() {
        let c = json!({"spec": {"schedule": "0 * * * *", "suspend": false, "jobTemplate": {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}}},
            "status": {"active": [{"name": "j"}]}});
        let cells = cronjob(&c).cells;
        assert_eq!(
            cells[1..6],
            [json!("0 * * * *"), json!("<none>"), json!("False"), json!(1), json!("<none>")]
        );
        assert_eq!(cells[7..], [json!("c"), json!("i"), json!("<none>")]);
    }
}

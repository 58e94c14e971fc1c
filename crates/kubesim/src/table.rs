//! `Table` responses for `kubectl get` (`Accept: application/json;as=Table;v=v1;g=meta.k8s.io`):
//! Name and Age for every kind, a few well-known columns for common built-ins, and
//! `additionalPrinterColumns` for custom resources.

use serde_json::{Value, json};

use crate::printer_columns::{column_cell, json_path};
use crate::registry::ResourceType;

/// `PartialObjectMetadata` of an object.
pub fn partial(obj: &Value) -> Value {
    json!({
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": obj.get("metadata").cloned().unwrap_or_else(|| json!({})),
    })
}

/// How `includeObject` asks rows to carry their object.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Include {
    /// No object.
    None,
    /// `PartialObjectMetadata` (the default).
    #[default]
    Metadata,
    /// The whole object.
    Object,
}

/// Go's `duration.HumanDuration`, as kubectl prints ages.
pub fn human_duration(secs: i64) -> String {
    if secs < -1 {
        return "<invalid>".into();
    }
    let s = secs.max(0);
    let m = s / 60;
    let h = s / 3600;
    let d = h / 24;
    let y = d / 365;
    if s < 120 {
        format!("{s}s")
    } else if m < 10 {
        if s % 60 == 0 { format!("{m}m") } else { format!("{m}m{}s", s % 60) }
    } else if m < 180 {
        format!("{m}m")
    } else if h < 8 {
        if m % 60 == 0 { format!("{h}h") } else { format!("{h}h{}m", m % 60) }
    } else if h < 48 {
        format!("{h}h")
    } else if h < 24 * 8 {
        if h % 24 == 0 { format!("{d}d") } else { format!("{d}d{}h", h % 24) }
    } else if d < 365 * 2 {
        format!("{d}d")
    } else if y < 8 {
        format!("{y}y{}d", d % 365)
    } else {
        format!("{y}y")
    }
}

fn age(obj: &Value) -> String {
    let Some(ts) = obj.pointer("/metadata/creationTimestamp").and_then(Value::as_str) else {
        return "<unknown>".into();
    };
    match ts.parse::<jiff::Timestamp>() {
        Ok(t) => human_duration(jiff::Timestamp::now().as_second() - t.as_second()),
        Err(_) => "<unknown>".into(),
    }
}

fn col(name: &str, ty: &str, desc: &str, priority: i64) -> Value {
    let format = if name == "Name" { "name" } else { "" };
    json!({"name": name, "type": ty, "format": format, "description": desc, "priority": priority})
}

fn count(v: Option<&Value>) -> i64 {
    v.and_then(Value::as_object).map_or(0, |m| i64::try_from(m.len()).unwrap_or(i64::MAX))
}

fn int(obj: &Value, p: &str) -> i64 {
    obj.pointer(p).and_then(Value::as_i64).unwrap_or(0)
}

fn text(obj: &Value, p: &str) -> String {
    obj.pointer(p).and_then(Value::as_str).unwrap_or_default().to_owned()
}

fn age_col() -> Value {
    col(
        "Age",
        "string",
        "CreationTimestamp is a timestamp representing the server time when this object was created.",
        0,
    )
}

/// The events table: no leading Name column, newest timestamp first.
fn event_table(objects: &[Value], list_meta: Value, include: Include) -> Value {
    let columns = vec![
        col("Last Seen", "string", "Time when this Event was last seen", 0),
        col(
            "Type",
            "string",
            "Type of this event (Normal, Warning), new types could be added in the future.",
            0,
        ),
        col(
            "Reason",
            "string",
            "This should be a short, machine understandable string that gives the reason for this event being generated.",
            0,
        ),
        col("Object", "string", "The object this Event is about.", 0),
        col("Message", "string", "A human-readable description of the status of this operation.", 0),
        col("Name", "string", "Name must be unique within a namespace.", 1),
    ];
    let rows: Vec<Value> = objects
        .iter()
        .map(|o| {
            let last = ["/lastTimestamp", "/eventTime", "/metadata/creationTimestamp"]
                .iter()
                .filter_map(|p| o.pointer(p).and_then(Value::as_str))
                .find_map(|t| t.parse::<jiff::Timestamp>().ok())
                .map_or_else(|| "<unknown>".to_owned(), |t| human_duration(jiff::Timestamp::now().as_second() - t.as_second()));
            let object = format!("{}/{}", text(o, "/involvedObject/kind").to_lowercase(), text(o, "/involvedObject/name"));
            let mut r = json!({"cells": [last, text(o, "/type"), text(o, "/reason"), object, text(o, "/message"), text(o, "/metadata/name")]});
            attach(&mut r, o, include);
            r
        })
        .collect();
    json!({"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": list_meta, "columnDefinitions": columns, "rows": rows})
}

fn attach(row: &mut Value, o: &Value, include: Include) {
    match include {
        Include::None => {}
        Include::Metadata => row["object"] = partial(o),
        Include::Object => row["object"] = o.clone(),
    }
}

/// Columns and a cell renderer for one kind.
type Columns = (Vec<Value>, Box<dyn Fn(&Value) -> Vec<Value>>);

fn builtin_columns(rt: &ResourceType) -> Option<Columns> {
    let cols: Columns = match (rt.group.as_str(), rt.kind.as_str()) {
        ("", "ConfigMap") => (
            vec![col("Data", "string", "Number of keys", 0)],
            Box::new(|o| vec![json!(count(o.get("data")) + count(o.get("binaryData")))]),
        ),
        ("", "Secret") => (
            vec![
                col("Type", "string", "The type of the secret", 0),
                col("Data", "string", "Number of keys", 0),
            ],
            Box::new(|o| vec![json!(text(o, "/type")), json!(count(o.get("data")))]),
        ),
        ("", "Namespace") => (
            vec![col("Status", "string", "The status of the namespace", 0)],
            Box::new(|o| vec![json!(text(o, "/status/phase"))]),
        ),
        ("", "Service") => (
            vec![
                col("Type", "string", "The type of the service", 0),
                col("Cluster-IP", "string", "The cluster IP", 0),
                col("External-IP", "string", "External IPs", 0),
                col("Port(s)", "string", "Ports", 0),
            ],
            Box::new(|o| {
                let ports: Vec<String> = o
                    .pointer("/spec/ports")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .map(|p| format!("{}/{}", p["port"], p["protocol"].as_str().unwrap_or("TCP")))
                    .collect();
                let ip = text(o, "/spec/clusterIP");
                vec![
                    json!(text(o, "/spec/type")),
                    json!(if ip.is_empty() { "<none>".to_owned() } else { ip }),
                    json!("<none>"),
                    json!(if ports.is_empty() { "<none>".to_owned() } else { ports.join(",") }),
                ]
            }),
        ),
        ("apps", "Deployment") => (
            vec![
                col("Ready", "string", "Number of the pod with ready state", 0),
                col(
                    "Up-to-date",
                    "string",
                    "Total number of non-terminated pods targeted by this deployment that have the desired template spec.",
                    0,
                ),
                col(
                    "Available",
                    "string",
                    "Total number of available pods (ready for at least minReadySeconds) targeted by this deployment.",
                    0,
                ),
                age_col(),
                col("Containers", "string", "Names of each container in the template.", 1),
                col("Images", "string", "Images referenced by each container in the template.", 1),
                col(
                    "Selector",
                    "string",
                    "Label selector for pods. Existing ReplicaSets whose pods are selected by this will be the ones affected by this deployment.",
                    1,
                ),
            ],
            Box::new(|o| {
                let containers: Vec<&Value> = o
                    .pointer("/spec/template/spec/containers")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .collect();
                let names: Vec<&str> = containers.iter().filter_map(|c| c["name"].as_str()).collect();
                let images: Vec<&str> = containers.iter().filter_map(|c| c["image"].as_str()).collect();
                let selector: Vec<String> = o
                    .pointer("/spec/selector/matchLabels")
                    .and_then(Value::as_object)
                    .into_iter()
                    .flatten()
                    .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
                    .collect();
                vec![
                    json!(format!("{}/{}", int(o, "/status/readyReplicas"), int(o, "/spec/replicas"))),
                    json!(int(o, "/status/updatedReplicas")),
                    json!(int(o, "/status/availableReplicas")),
                    json!(age(o)),
                    json!(names.join(",")),
                    json!(images.join(",")),
                    json!(selector.join(",")),
                ]
            }),
        ),
        ("", "Pod") => (
            vec![
                col("Ready", "string", "The aggregate readiness state of this pod for accepting traffic.", 0),
                col("Status", "string", "The aggregate status of the containers in this pod.", 0),
                col(
                    "Restarts",
                    "string",
                    "The number of times the containers in this pod have been restarted.",
                    0,
                ),
                age_col(),
                col("IP", "string", "IP address allocated to the pod.", 1),
                col("Node", "string", "Name of the node the pod is assigned to.", 1),
            ],
            Box::new(|o| {
                let total = o.pointer("/spec/containers").and_then(Value::as_array).map_or(0, Vec::len);
                let statuses = o.pointer("/status/containerStatuses").and_then(Value::as_array);
                let ready =
                    statuses.into_iter().flatten().filter(|c| c["ready"].as_bool() == Some(true)).count();
                let restarts: i64 =
                    statuses.into_iter().flatten().filter_map(|c| c["restartCount"].as_i64()).sum();
                let or_none = |s: String| if s.is_empty() { "<none>".to_owned() } else { s };
                vec![
                    json!(format!("{ready}/{total}")),
                    json!(text(o, "/status/phase")),
                    json!(restarts),
                    json!(age(o)),
                    json!(or_none(text(o, "/status/podIP"))),
                    json!(or_none(text(o, "/spec/nodeName"))),
                ]
            }),
        ),
        ("coordination.k8s.io", "Lease") => (
            vec![col("Holder", "string", "The holder of the lease", 0)],
            Box::new(|o| vec![json!(text(o, "/spec/holderIdentity"))]),
        ),
        _ => return None,
    };
    Some(cols)
}

fn crd_columns(rt: &ResourceType) -> Option<Columns> {
    let printer = rt.crd.as_ref()?.printer_columns.clone();
    if printer.is_empty() {
        return None;
    }
    let defs = printer
        .iter()
        .map(|c| {
            let mut d = col(
                c["name"].as_str().unwrap_or_default(),
                c["type"].as_str().unwrap_or("string"),
                c["description"].as_str().unwrap_or_default(),
                c["priority"].as_i64().unwrap_or(0),
            );
            if let Some(f) = c["format"].as_str() {
                d["format"] = json!(f);
            }
            d
        })
        .collect();
    Some((
        defs,
        Box::new(move |o| {
            printer
                .iter()
                .map(|c| {
                    let path = c["jsonPath"].as_str().unwrap_or_default();
                    let v = json_path(o, path);
                    let column_type = c["type"].as_str().unwrap_or("string");
                    match v.as_ref().and_then(|v| column_cell(column_type, v)) {
                        None => Value::Null,
                        // The table convertor shows a date as an age, `<invalid>` when it
                        // does not parse.
                        Some(Value::String(ts)) if column_type == "date" => {
                            match ts.parse::<jiff::Timestamp>() {
                                Ok(t) => {
                                    json!(human_duration(jiff::Timestamp::now().as_second() - t.as_second()))
                                }
                                Err(_) => json!("<invalid>"),
                            }
                        }
                        Some(cell) => cell,
                    }
                })
                .collect()
        }),
    ))
}

/// A Table of `objects` (already in the served version).
pub fn table(rt: &ResourceType, objects: &[Value], list_meta: Value, include: Include) -> Value {
    if rt.kind == "Event" && rt.group.is_empty() {
        return event_table(objects, list_meta, include);
    }
    let (extra_cols, cells) = crd_columns(rt)
        .or_else(|| builtin_columns(rt))
        .unwrap_or_else(|| (Vec::new(), Box::new(|_| Vec::new())));
    let mut columns = vec![col("Name", "string", "Name must be unique within a namespace.", 0)];
    columns.extend(extra_cols);
    let has_age = columns.iter().any(|c| c["name"] == "Age");
    if !has_age {
        columns.push(col(
            "Age",
            "string",
            "CreationTimestamp is a timestamp representing the server time when this object was created.",
            0,
        ));
    }
    let rows: Vec<Value> = objects
        .iter()
        .map(|o| {
            let mut row = vec![json!(text(o, "/metadata/name"))];
            row.extend(cells(o));
            if !has_age {
                row.push(json!(age(o)));
            }
            let mut r = json!({"cells": row});
            attach(&mut r, o, include);
            r
        })
        .collect();
    json!({"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": list_meta, "columnDefinitions": columns, "rows": rows})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_durations_match_kubectl() {
        assert_eq!(human_duration(5), "5s");
        assert_eq!(human_duration(119), "119s");
        assert_eq!(human_duration(150), "2m30s");
        assert_eq!(human_duration(600), "10m");
        assert_eq!(human_duration(3 * 3600 + 60), "3h1m");
        assert_eq!(human_duration(30 * 3600), "30h");
        assert_eq!(human_duration(3 * 86400), "3d");
        assert_eq!(human_duration(400 * 86400), "400d");
        assert_eq!(human_duration(-5), "<invalid>");
    }
}

//! The tables of the `apps` kinds (`printDeployment`, `printReplicaSet`,
//! `printStatefulSet`, `printDaemonSet`, `printControllerRevision` in
//! `pkg/printers/internalversion/printers.go`). The Go printers describe some columns with
//! the `extensions/v1beta1` types' documentation; where that text is not kubesim's to
//! read, the `apps/v1` field's documentation describes the column.

use serde_json::{Value, json};

use super::format::{age, containers, format_selector, int, labels, name, selector};
use super::{Column, Printer, Row, age_col, col, containers_cols, docs, name_col, wide};
use k8s_openapi::api::apps::v1 as apps;
use k8s_openapi::api::core::v1 as core;

pub(super) fn printers() -> Vec<Printer> {
    let p = |kind, columns, row| Printer { group: "apps", kind, columns, row };
    vec![
        p("Deployment", deployment_columns, deployment),
        p("ReplicaSet", replicaset_columns, replicaset),
        p("StatefulSet", statefulset_columns, statefulset),
        p("DaemonSet", daemonset_columns, daemonset),
        p("ControllerRevision", revision_columns, revision),
    ]
}

/// The Containers, Images and Selector wide columns.
fn template_cols(selector_doc: String) -> [Column; 3] {
    let [containers, images] = containers_cols();
    [containers, images, wide("Selector", "string", selector_doc)]
}

fn deployment_columns() -> Vec<Column> {
    let mut cols = vec![
        name_col(),
        col("Ready", "string", "Number of the pod with ready state"),
        col(
            "Up-to-date",
            "string",
            "Total number of non-terminated pods targeted by this deployment that have the desired template spec.",
        ),
        col(
            "Available",
            "string",
            "Total number of available pods (ready for at least minReadySeconds) targeted by this deployment.",
        ),
        age_col(),
    ];
    cols.extend(template_cols(
        "Label selector for pods. Existing ReplicaSets whose pods are selected by this will be the ones affected by this deployment.".into(),
    ));
    cols
}

fn deployment(o: &Value) -> Row {
    let [names, images] = containers(o, "/spec/template/spec/containers");
    let selector = selector(o.pointer("/spec/selector")).unwrap_or_else(|| "<invalid>".into());
    vec![
        name(o),
        json!(format!("{}/{}", int(o, "/status/readyReplicas"), int(o, "/spec/replicas"))),
        json!(int(o, "/status/updatedReplicas")),
        json!(int(o, "/status/availableReplicas")),
        age(o),
        names,
        images,
        json!(selector),
    ]
    .into()
}

fn replicaset_columns() -> Vec<Column> {
    let (spec, status) = (docs::field::<apps::ReplicaSetSpec>, docs::field::<apps::ReplicaSetStatus>);
    let mut cols = vec![
        name_col(),
        col("Desired", "integer", spec("replicas")),
        col("Current", "integer", status("replicas")),
        col("Ready", "integer", status("readyReplicas")),
        age_col(),
    ];
    cols.extend(template_cols(spec("selector")));
    cols
}

fn replicaset(o: &Value) -> Row {
    replicated(o, format_selector(o.pointer("/spec/selector")))
}

/// The row of a ReplicaSet or ReplicationController: desired, current and ready replicas,
/// age, then the template's containers and the `selector` the kind prints its way.
pub(super) fn replicated(o: &Value, selector: String) -> Row {
    let [names, images] = containers(o, "/spec/template/spec/containers");
    vec![
        name(o),
        json!(int(o, "/spec/replicas")),
        json!(int(o, "/status/replicas")),
        json!(int(o, "/status/readyReplicas")),
        age(o),
        names,
        images,
        json!(selector),
    ]
    .into()
}

fn statefulset_columns() -> Vec<Column> {
    let [containers, images] = containers_cols();
    vec![
        name_col(),
        col("Ready", "string", "Number of the pod with ready state"),
        age_col(),
        containers,
        images,
    ]
}

fn statefulset(o: &Value) -> Row {
    let [names, images] = containers(o, "/spec/template/spec/containers");
    let ready = format!("{}/{}", int(o, "/status/readyReplicas"), int(o, "/spec/replicas"));
    vec![name(o), json!(ready), age(o), names, images].into()
}

fn daemonset_columns() -> Vec<Column> {
    let status = docs::field::<apps::DaemonSetStatus>;
    let mut cols = vec![
        name_col(),
        col("Desired", "integer", status("desiredNumberScheduled")),
        col("Current", "integer", status("currentNumberScheduled")),
        col("Ready", "integer", status("numberReady")),
        col("Up-to-date", "integer", status("updatedNumberScheduled")),
        col("Available", "integer", status("numberAvailable")),
        col("Node Selector", "string", docs::field::<core::PodSpec>("nodeSelector")),
        age_col(),
    ];
    cols.extend(template_cols(docs::field::<apps::DaemonSetSpec>("selector")));
    cols
}

fn daemonset(o: &Value) -> Row {
    let [names, images] = containers(o, "/spec/template/spec/containers");
    let count = |field: &str| json!(int(o, &format!("/status/{field}")));
    vec![
        name(o),
        count("desiredNumberScheduled"),
        count("currentNumberScheduled"),
        count("numberReady"),
        count("updatedNumberScheduled"),
        count("numberAvailable"),
        json!(labels(o, "/spec/template/spec/nodeSelector")),
        age(o),
        names,
        images,
        json!(format_selector(o.pointer("/spec/selector"))),
    ]
    .into()
}

fn revision_columns() -> Vec<Column> {
    vec![
        name_col(),
        col("Controller", "string", "Controller of the object"),
        col("Revision", "string", docs::field::<apps::ControllerRevision>("revision")),
        age_col(),
    ]
}

/// CONTROLLER is the controlling owner as `kind.group/name`, lower case.
fn revision(o: &Value) -> Row {
    let owner = o
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|r| r["controller"] == true);
    let controller = owner.map_or_else(
        || "<none>".to_owned(),
        |r| {
            let kind = r["kind"].as_str().unwrap_or_default();
            let group = ctop_core::group_of(r["apiVersion"].as_str().unwrap_or_default());
            let group_kind = if group.is_empty() { kind.to_owned() } else { format!("{kind}.{group}") };
            match group_kind.as_str() {
                "" => r["name"].as_str().unwrap_or_default().to_owned(),
                gk => format!("{}/{}", gk.to_lowercase(), r["name"].as_str().unwrap_or_default()),
            }
        },
    );
    vec![name(o), json!(controller), json!(int(o, "/revision")), age(o)].into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workload_rows() {
        let template =
            json!({"spec": {"containers": [{"name": "a", "image": "x:1"}, {"name": "b", "image": "y:2"}]}});
        let rs = json!({"metadata": {"name": "rs"}, "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "a"}}, "template": template},
            "status": {"replicas": 3, "readyReplicas": 2}});
        assert_eq!(replicaset(&rs).cells[1..4], [json!(3), json!(3), json!(2)]);
        assert_eq!(replicaset(&rs).cells[5..], [json!("a,b"), json!("x:1,y:2"), json!("app=a")]);
        let sts = json!({"spec": {"replicas": 3, "template": template}, "status": {"readyReplicas": 1}});
        assert_eq!(statefulset(&sts).cells[1], "1/3");
        let ds = json!({"spec": {"template": template}, "status": {"desiredNumberScheduled": 2, "numberAvailable": 1}});
        let cells = daemonset(&ds).cells;
        assert_eq!(cells[1..7], [json!(2), json!(0), json!(0), json!(0), json!(1), json!("<none>")]);
        assert_eq!(cells[10], "<none>");
        let d = json!({"spec": {"replicas": 2, "selector": {}}, "status": {"readyReplicas": 1}});
        assert_eq!(deployment(&d).cells[1], "1/2");
        assert_eq!(deployment(&d).cells[7], "");
    }

    #[test]
    fn revisions_name_their_controller() {
        let r = json!({"metadata": {"ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db", "controller": true}]}, "revision": 2});
        assert_eq!(revision(&r).cells[1..3], [json!("statefulset.apps/db"), json!(2)]);
        assert_eq!(revision(&json!({})).cells[1], "<none>");
    }
}

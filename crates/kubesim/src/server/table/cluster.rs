//! The tables of the policy, autoscaling, storage, scheduling, RBAC binding, lease and
//! admission kinds (`printPodDisruptionBudget`, `printHorizontalPodAutoscaler`,
//! `printStorageClass`, `printPriorityClass`, `printRoleBinding`,
//! `printClusterRoleBinding`, `printLease`, `printMutatingWebhook`,
//! `printValidatingWebhook` in `pkg/printers/internalversion/printers.go`). Roles and
//! ClusterRoles have no printer: the default table describes them. The
//! `autoscaling/v2beta1` and `rbac/v1beta1` documentation the Go printer cites is read
//! from the GA types.

use serde_json::{Value, json};

use super::format::{age, int, items, len, name, text};
use super::{Column, Printer, Row, age_col, col, docs, name_col, wide};
use k8s_openapi::api::autoscaling::v2 as autoscaling;
use k8s_openapi::api::storage::v1 as storage;
use k8s_openapi::api::{coordination::v1 as coordination, rbac::v1 as rbac, scheduling::v1 as scheduling};

pub(super) fn printers() -> Vec<Printer> {
    let p = |group, kind, columns, row| Printer { group, kind, columns, row };
    let admission = "admissionregistration.k8s.io";
    vec![
        p("policy", "PodDisruptionBudget", pdb_columns, pdb),
        p("autoscaling", "HorizontalPodAutoscaler", hpa_columns, hpa),
        p("storage.k8s.io", "StorageClass", storage_class_columns, storage_class),
        p("scheduling.k8s.io", "PriorityClass", priority_class_columns, priority_class),
        p("rbac.authorization.k8s.io", "RoleBinding", || binding_columns("roleBinding"), binding),
        p(
            "rbac.authorization.k8s.io",
            "ClusterRoleBinding",
            || binding_columns("clusterRoleBinding"),
            binding,
        ),
        p("coordination.k8s.io", "Lease", lease_columns, |o| {
            vec![name(o), json!(text(o, "/spec/holderIdentity")), age(o)].into()
        }),
        p(admission, "MutatingWebhookConfiguration", webhook_columns, webhooks),
        p(admission, "ValidatingWebhookConfiguration", webhook_columns, webhooks),
    ]
}

fn pdb_columns() -> Vec<Column> {
    vec![
        name_col(),
        col("Min Available", "string", "The minimum number of pods that must be available."),
        col("Max Unavailable", "string", "The maximum number of pods that may be unavailable."),
        col(
            "Allowed Disruptions",
            "integer",
            "Calculated number of pods that may be disrupted at this time.",
        ),
        age_col(),
    ]
}

/// An int-or-string as Go's `IntOrString.String()` prints it, `N/A` when unset.
fn int_or_string(o: &Value, pointer: &str) -> String {
    match o.pointer(pointer) {
        Some(Value::Number(n)) => n.to_string(),
        Some(Value::String(s)) => s.clone(),
        _ => "N/A".into(),
    }
}

fn pdb(o: &Value) -> Row {
    vec![
        name(o),
        json!(int_or_string(o, "/spec/minAvailable")),
        json!(int_or_string(o, "/spec/maxUnavailable")),
        json!(int(o, "/status/disruptionsAllowed")),
        age(o),
    ]
    .into()
}

fn hpa_columns() -> Vec<Column> {
    let (spec, status) = (
        docs::field::<autoscaling::HorizontalPodAutoscalerSpec>,
        docs::field::<autoscaling::HorizontalPodAutoscalerStatus>,
    );
    vec![
        name_col(),
        col("Reference", "string", spec("scaleTargetRef")),
        col("Targets", "string", spec("metrics")),
        col("MinPods", "string", spec("minReplicas")),
        col("MaxPods", "string", spec("maxReplicas")),
        col("Replicas", "string", status("currentReplicas")),
        age_col(),
    ]
}

/// A quantity field as stored.
fn quantity(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        _ => "0".into(),
    }
}

/// `formatHPAMetrics`: `current/target` per metric (`<unknown>` before a measurement),
/// at most two, then `+ N more...`; `<none>` without metrics.
fn hpa_metrics(o: &Value) -> String {
    let specs = items(o, "/spec/metrics");
    if specs.is_empty() {
        return "<none>".into();
    }
    let statuses = items(o, "/status/currentMetrics");
    let mut list: Vec<String> = Vec::new();
    for (i, spec) in specs.iter().enumerate() {
        let current = |source: &str, field: &str| {
            statuses
                .get(i)
                .and_then(|s| s.get(source))
                .filter(|s| s.is_object())
                .and_then(|s| s["current"].get(field))
                .filter(|v| !v.is_null())
        };
        let unknown = || "<unknown>".to_owned();
        let entry = match spec["type"].as_str().unwrap_or_default() {
            source @ ("External" | "Object") => {
                let key = if source == "External" { "external" } else { "object" };
                let target = &spec[key]["target"];
                if target["averageValue"].is_null() {
                    let now = current(key, "value").map_or_else(unknown, quantity);
                    format!("{now}/{}", quantity(&target["value"]))
                } else {
                    let now = current(key, "averageValue").map_or_else(unknown, quantity);
                    format!("{now}/{} (avg)", quantity(&target["averageValue"]))
                }
            }
            "Pods" => {
                let now = current("pods", "averageValue").map_or_else(unknown, quantity);
                format!("{now}/{}", quantity(&spec["pods"]["target"]["averageValue"]))
            }
            source @ ("Resource" | "ContainerResource") => {
                let key = if source == "Resource" { "resource" } else { "containerResource" };
                let target = &spec[key]["target"];
                let resource = spec[key]["name"].as_str().unwrap_or_default();
                if target["averageValue"].is_null() {
                    let now = current(key, "averageUtilization")
                        .and_then(Value::as_i64)
                        .map_or_else(unknown, |u| format!("{u}%"));
                    let want = target["averageUtilization"]
                        .as_i64()
                        .map_or_else(|| "<auto>".to_owned(), |u| format!("{u}%"));
                    format!("{resource}: {now}/{want}")
                } else {
                    let now = current(key, "averageValue").map_or_else(unknown, quantity);
                    format!("{resource}: {now}/{}", quantity(&target["averageValue"]))
                }
            }
            _ => "<unknown type>".into(),
        };
        list.push(entry);
    }
    const MAX: usize = 2;
    let count = list.len();
    list.truncate(MAX);
    let joined = list.join(", ");
    if count > MAX { format!("{joined} + {} more...", count - MAX) } else { joined }
}

fn hpa(o: &Value) -> Row {
    let reference =
        format!("{}/{}", text(o, "/spec/scaleTargetRef/kind"), text(o, "/spec/scaleTargetRef/name"));
    let min = o
        .pointer("/spec/minReplicas")
        .and_then(Value::as_i64)
        .map_or_else(|| "<unset>".to_owned(), |m| m.to_string());
    vec![
        name(o),
        json!(reference),
        json!(hpa_metrics(o)),
        json!(min),
        json!(int(o, "/spec/maxReplicas")),
        json!(int(o, "/status/currentReplicas")),
        age(o),
    ]
    .into()
}

fn storage_class_columns() -> Vec<Column> {
    let class = docs::field::<storage::StorageClass>;
    vec![
        name_col(),
        col("Provisioner", "string", class("provisioner")),
        col("ReclaimPolicy", "string", class("reclaimPolicy")),
        col("VolumeBindingMode", "string", class("volumeBindingMode")),
        col("AllowVolumeExpansion", "string", class("allowVolumeExpansion")),
        age_col(),
    ]
}

/// NAME gets ` (default)` for the default class (`storageutil.IsDefaultAnnotation`).
fn storage_class(o: &Value) -> Row {
    let annotation = |key: &str| {
        o.pointer("/metadata/annotations").and_then(|a| a.get(key)).and_then(Value::as_str) == Some("true")
    };
    let default = annotation("storageclass.kubernetes.io/is-default-class")
        || annotation("storageclass.beta.kubernetes.io/is-default-class");
    let name = format!("{}{}", text(o, "/metadata/name"), if default { " (default)" } else { "" });
    let or = |p: &str, fallback: &str| o.pointer(p).and_then(Value::as_str).unwrap_or(fallback).to_owned();
    vec![
        json!(name),
        json!(text(o, "/provisioner")),
        json!(or("/reclaimPolicy", "Delete")),
        json!(or("/volumeBindingMode", "Immediate")),
        json!(o.pointer("/allowVolumeExpansion").and_then(Value::as_bool).unwrap_or(false)),
        age(o),
    ]
    .into()
}

fn priority_class_columns() -> Vec<Column> {
    let class = docs::field::<scheduling::PriorityClass>;
    vec![
        name_col(),
        col("Value", "integer", class("value")),
        col("Global-Default", "boolean", class("globalDefault")),
        age_col(),
        col("PreemptionPolicy", "string", class("preemptionPolicy")),
    ]
}

fn priority_class(o: &Value) -> Row {
    vec![
        name(o),
        json!(int(o, "/value")),
        json!(o.pointer("/globalDefault").and_then(Value::as_bool).unwrap_or(false)),
        age(o),
        json!(text(o, "/preemptionPolicy")),
    ]
    .into()
}

fn binding_columns(kind: &str) -> Vec<Column> {
    // The Go printers cite the roleRef of `RoleBinding` and `ClusterRoleBinding`; both
    // document it alike.
    let role_ref = if kind == "roleBinding" {
        docs::field::<rbac::RoleBinding>("roleRef")
    } else {
        docs::field::<rbac::ClusterRoleBinding>("roleRef")
    };
    let (users, groups, sas): (&'static str, &'static str, &'static str) = if kind == "roleBinding" {
        ("Users in the roleBinding", "Groups in the roleBinding", "ServiceAccounts in the roleBinding")
    } else {
        (
            "Users in the clusterRoleBinding",
            "Groups in the clusterRoleBinding",
            "ServiceAccounts in the clusterRoleBinding",
        )
    };
    vec![
        name_col(),
        col("Role", "string", role_ref),
        age_col(),
        wide("Users", "string", users),
        wide("Groups", "string", groups),
        wide("ServiceAccounts", "string", sas),
    ]
}

/// ROLE is `Kind/name`; the wide columns list the subjects by kind (`rbac.SubjectsStrings`).
fn binding(o: &Value) -> Row {
    let (mut users, mut groups, mut sas) = (Vec::new(), Vec::new(), Vec::new());
    for s in items(o, "/subjects") {
        let n = s["name"].as_str().unwrap_or_default().to_owned();
        match s["kind"].as_str().unwrap_or_default() {
            "ServiceAccount" => sas.push(format!("{}/{n}", s["namespace"].as_str().unwrap_or_default())),
            "User" => users.push(n),
            "Group" => groups.push(n),
            _ => {}
        }
    }
    let role = format!("{}/{}", text(o, "/roleRef/kind"), text(o, "/roleRef/name"));
    vec![
        name(o),
        json!(role),
        age(o),
        json!(users.join(", ")),
        json!(groups.join(", ")),
        json!(sas.join(", ")),
    ]
    .into()
}

fn lease_columns() -> Vec<Column> {
    vec![
        name_col(),
        col("Holder", "string", docs::field::<coordination::LeaseSpec>("holderIdentity")),
        age_col(),
    ]
}

fn webhook_columns() -> Vec<Column> {
    vec![
        name_col(),
        col(
            "Webhooks",
            "integer",
            "Webhooks indicates the number of webhooks registered in this configuration",
        ),
        age_col(),
    ]
}

fn webhooks(o: &Value) -> Row {
    vec![name(o), json!(len(o, "/webhooks")), age(o)].into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hpa_targets() {
        let h = json!({"spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 5, "metrics": [
            {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}},
            {"type": "Pods", "pods": {"target": {"averageValue": "1k"}}},
            {"type": "External", "external": {"target": {"value": "3"}}},
        ]}, "status": {"currentMetrics": [{"type": "Resource", "resource": {"current": {"averageUtilization": 12}}}]}});
        let cells = hpa(&h).cells;
        assert_eq!(
            cells[1..6],
            [
                json!("Deployment/web"),
                json!("cpu: 12%/80%, <unknown>/1k + 1 more..."),
                json!("<unset>"),
                json!(5),
                json!(0)
            ]
        );
        assert_eq!(hpa_metrics(&json!({})), "<none>");
    }

    #[test]
    fn bindings_classes_and_budgets() {
        let b = json!({"roleRef": {"kind": "ClusterRole", "name": "view"}, "subjects": [
            {"kind": "User", "name": "u"}, {"kind": "ServiceAccount", "namespace": "ns", "name": "sa"}, {"kind": "Group", "name": "g"}, {"kind": "User", "name": "v"}]});
        assert_eq!(binding(&b).cells[3..], [json!("u, v"), json!("g"), json!("ns/sa")]);
        assert_eq!(binding(&b).cells[1], "ClusterRole/view");
        let sc = json!({"metadata": {"name": "std", "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}}, "provisioner": "p"});
        assert_eq!(
            storage_class(&sc).cells[..5],
            [json!("std (default)"), json!("p"), json!("Delete"), json!("Immediate"), json!(false)]
        );
        let pdb_ = json!({"spec": {"minAvailable": "50%"}, "status": {"disruptionsAllowed": 1}});
        assert_eq!(pdb(&pdb_).cells[1..4], [json!("50%"), json!("N/A"), json!(1)]);
    }
}

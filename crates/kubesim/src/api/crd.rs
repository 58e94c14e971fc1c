//! CustomResourceDefinitions as objects: what the API server checks and sets when one is
//! written (names, versions, the structural schema; the `Established` and `NamesAccepted`
//! conditions).

use ctop_schema as schema;
use serde_json::{Value, json};

use super::{Api, status_cause};
use crate::error::StatusCause;
use crate::meta::{self, deleting};

impl Api {
    pub(super) fn crd_terminating(&self, crd_name: &str) -> bool {
        self.store
            .get("apiextensions.k8s.io/customresourcedefinitions", &(String::new(), crd_name.to_owned()))
            .is_some_and(|c| deleting(&c))
    }
}

/// Fill a CRD's status: accepted names, stored versions, Established.
pub(super) fn establish_crd(crd: &mut Value) {
    let mut names = crd.pointer("/spec/names").cloned().unwrap_or_else(|| json!({}));
    let kind = names["kind"].as_str().unwrap_or_default().to_owned();
    if names.get("singular").is_none() {
        names["singular"] = json!(kind.to_lowercase());
    }
    if names.get("listKind").is_none() {
        names["listKind"] = json!(format!("{kind}List"));
    }
    crd["spec"]["names"] = names.clone();
    let storage: Vec<Value> = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|v| v["storage"].as_bool() == Some(true))
        .map(|v| v["name"].clone())
        .collect();
    let mut stored: Vec<Value> =
        crd.pointer("/status/storedVersions").and_then(Value::as_array).cloned().unwrap_or_default();
    for s in storage {
        if !stored.contains(&s) {
            stored.push(s);
        }
    }
    let previous: Vec<Value> =
        crd.pointer("/status/conditions").and_then(Value::as_array).cloned().unwrap_or_default();
    let since = |t: &str| {
        previous
            .iter()
            .find(|c| c["type"] == t && c["status"] == "True")
            .and_then(|c| c["lastTransitionTime"].as_str().map(str::to_owned))
            .unwrap_or_else(meta::now)
    };
    let terminating = deleting(crd);
    let mut conditions = vec![
        json!({"type": "NamesAccepted", "status": "True", "reason": "NoConflicts", "message": "no conflicts found", "lastTransitionTime": since("NamesAccepted")}),
        json!({"type": "Established", "status": "True", "reason": "InitialNamesAccepted", "message": "the initial names have been accepted", "lastTransitionTime": since("Established")}),
    ];
    if terminating {
        conditions.push(json!({"type": "Terminating", "status": "True", "reason": "InstanceDeletionInProgress", "message": "CustomResource deletion is in progress", "lastTransitionTime": since("Terminating")}));
    }
    crd["status"] = json!({"acceptedNames": names, "storedVersions": stored, "conditions": conditions});
}

/// The checks the API server makes on a CRD body.
pub(super) fn validate_crd(crd: &Value) -> Vec<StatusCause> {
    let mut causes = Vec::new();
    let cause = |reason: &str, field: &str, message: String| StatusCause {
        reason: reason.into(),
        message,
        field: field.into(),
    };
    let spec = &crd["spec"];
    let group = spec["group"].as_str().unwrap_or_default();
    let plural = spec.pointer("/names/plural").and_then(Value::as_str).unwrap_or_default();
    let name = crd.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
    if group.is_empty() {
        causes.push(cause("FieldValueRequired", "spec.group", "Required value".into()));
    } else if !group.contains('.') {
        causes.push(cause(
            "FieldValueInvalid",
            "spec.group",
            format!("Invalid value: {}: should be a domain with at least one dot", json!(group)),
        ));
    }
    if plural.is_empty() {
        causes.push(cause("FieldValueRequired", "spec.names.plural", "Required value".into()));
    }
    if spec.pointer("/names/kind").and_then(Value::as_str).is_none_or(str::is_empty) {
        causes.push(cause("FieldValueRequired", "spec.names.kind", "Required value".into()));
    }
    if !group.is_empty() && !plural.is_empty() && name != format!("{plural}.{group}") {
        causes.push(cause(
            "FieldValueInvalid",
            "metadata.name",
            format!("Invalid value: {}: must be spec.names.plural+\".\"+spec.group", json!(name)),
        ));
    }
    match spec["scope"].as_str() {
        Some("Namespaced" | "Cluster") => {}
        Some(other) => causes.push(cause(
            "FieldValueNotSupported",
            "spec.scope",
            format!("Unsupported value: {}: supported values: \"Cluster\", \"Namespaced\"", json!(other)),
        )),
        None => causes.push(cause("FieldValueRequired", "spec.scope", "Required value".into())),
    }
    let versions = spec["versions"].as_array().cloned().unwrap_or_default();
    if versions.is_empty() {
        causes.push(cause(
            "FieldValueInvalid",
            "spec.versions",
            "Invalid value: null: must have exactly one version marked as storage version".into(),
        ));
    } else if versions.iter().filter(|v| v["storage"].as_bool() == Some(true)).count() != 1 {
        causes.push(cause(
            "FieldValueInvalid",
            "spec.versions",
            format!(
                "Invalid value: {}: must have exactly one version marked as storage version",
                json!(versions)
            ),
        ));
    }
    for (i, v) in versions.iter().enumerate() {
        let base = format!("spec.versions[{i}].schema.openAPIV3Schema");
        match v.pointer("/schema/openAPIV3Schema") {
            None | Some(Value::Null) => {
                causes.push(cause("FieldValueRequired", &base, "Required value: schemas are required".into()))
            }
            Some(s) => causes.extend(schema::check_structural(s, &base).into_iter().map(status_cause)),
        }
    }
    causes
}

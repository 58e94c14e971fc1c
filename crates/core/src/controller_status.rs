//! `ControllerStatus` (`controllerstatuses.ctop.dev`): each running controller's health as a
//! cluster object, so `kubectl get controllerstatuses -A` shows every operator's controllers,
//! whether they are Ready, and their last errors (the Δ-controller `ControllerStatus`: a
//! `Ready` condition and a rolling buffer of the last 10 errors, newest first).
//!
//! The controller writes one per controller, named `<operator>-<controller>`, in the
//! operator's namespace; `ctop manifests`, `ctop dev` and `ctop run --install-crds` install
//! the CRD [`crd`] describes.

use serde_json::{Value, json};

/// The API group.
pub const GROUP: &str = "ctop.dev";
/// The version.
pub const VERSION: &str = "v1alpha1";
/// The kind.
pub const KIND: &str = "ControllerStatus";
/// The plural resource name.
pub const PLURAL: &str = "controllerstatuses";
/// The label naming the operator an object belongs to.
pub const OPERATOR_LABEL: &str = "ctop.dev/operator";

/// The CRD of `ControllerStatus`.
#[must_use]
pub fn crd() -> Value {
    let condition = json!({
        "type": "object",
        "required": ["type", "status"],
        "properties": {
            "type": {"type": "string"},
            "status": {"type": "string", "enum": ["True", "False", "Unknown"]},
            "reason": {"type": "string"},
            "message": {"type": "string"},
            "lastTransitionTime": {"type": "string", "format": "date-time"}
        }
    });
    // A sharded operator's ring, as its sharder sees it (`ctop run --sharding`).
    let member = json!({
        "type": "object",
        "required": ["name"],
        "properties": {
            "name": {"type": "string"},
            "holder": {"type": "string"},
            "objects": {"type": "integer"},
            "lease": {"type": "string"},
            "leaseDurationSeconds": {"type": "integer"},
            "live": {"type": "boolean"},
            "fenced": {"type": "boolean"}
        }
    });
    let sharding = json!({
        "type": "object",
        "properties": {
            "ring": {"type": "string"},
            "sharder": {"type": "string"},
            "members": {"type": "array", "items": member,
                "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]}
        }
    });
    // The storage migration of the controller's resource (`ctop run --migrate-storage`).
    let migration = json!({
        "type": "object",
        "properties": {
            "resource": {"type": "string"},
            "phase": {"type": "string", "enum": ["Waiting", "Running", "Done", "Failed"]},
            "to": {"type": "string"},
            "storedVersions": {"type": "array", "items": {"type": "string"}},
            "migrated": {"type": "integer"},
            "message": {"type": "string"}
        }
    });
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{PLURAL}.{GROUP}")},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {
                "plural": PLURAL, "singular": "controllerstatus", "kind": KIND,
                "shortNames": ["cts"], "categories": ["ctop"]
            },
            "versions": [{
                "name": VERSION, "served": true, "storage": true,
                "additionalPrinterColumns": [
                    {"name": "Operator", "type": "string", "jsonPath": ".spec.operator"},
                    {"name": "Controller", "type": "string", "jsonPath": ".spec.controller"},
                    {"name": "Ready", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Ready\")].status"},
                    {"name": "Reason", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Ready\")].reason"},
                    {"name": "Last Error", "type": "string", "jsonPath": ".status.lastErrors[0]", "priority": 1},
                    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}
                ],
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "spec": {"type": "object", "properties": {
                            "operator": {"type": "string"},
                            "controller": {"type": "string"}
                        }},
                        "status": {"type": "object", "properties": {
                            "conditions": {"type": "array", "items": condition,
                                "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]},
                            "lastErrors": {"type": "array", "items": {"type": "string"}, "maxItems": 10},
                            "cachesSynced": {"type": "boolean"},
                            "sharding": sharding,
                            "storageMigration": migration
                        }}
                    }
                }}
            }]
        }
    })
}

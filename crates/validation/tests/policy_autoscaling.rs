//! PodDisruptionBudget (pkg/apis/policy/validation) and HorizontalPodAutoscaler v2
//! (pkg/apis/autoscaling/validation): normal objects give no causes; each rule's cause is
//! worded as the named Go function words it.

mod common;

use common::*;
use ctop_validation::{validate, validate_status_update, validate_update};
use serde_json::{Value, json};

fn pdb(spec: Value) -> Value {
    json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "web"}, "spec": spec})
}

#[test]
fn pdb_min_available_one_is_valid() {
    let ok = pdb(json!({"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}));
    assert_eq!(errors(&validate(&PDB, &ok)), Vec::<String>::new());
    let ok = pdb(json!({"maxUnavailable": "25%", "unhealthyPodEvictionPolicy": "AlwaysAllow"}));
    assert_eq!(errors(&validate(&PDB, &ok)), Vec::<String>::new());
}

/// ValidatePodDisruptionBudgetSpec: not both; ValidatePositiveIntOrPercent and
/// IsNotMoreThan100Percent; unhealthyPodEvictionPolicy enum (sorted).
#[test]
fn pdb_rules() {
    let bad =
        pdb(json!({"minAvailable": -1, "maxUnavailable": "150%", "unhealthyPodEvictionPolicy": "Never"}));
    assert_eq!(
        errors(&validate(&PDB, &bad)),
        vec![
            "spec: Invalid value: policy.PodDisruptionBudgetSpec{MinAvailable:intstr.IntOrString{Type:0, IntVal:-1, StrVal:\"\"}, MaxUnavailable:intstr.IntOrString{Type:1, IntVal:0, StrVal:\"150%\"}}: minAvailable and maxUnavailable cannot be both set",
            "spec.minAvailable: Invalid value: -1: must be greater than or equal to 0",
            "spec.maxUnavailable: Invalid value: intstr.IntOrString{Type:1, IntVal:0, StrVal:\"150%\"}: must not be greater than 100%",
            "spec.unhealthyPodEvictionPolicy: Unsupported value: \"Never\": supported values: \"AlwaysAllow\", \"IfHealthyBudget\"",
        ]
    );
    let bad = pdb(json!({"minAvailable": "half", "selector": {"matchLabels": {"app": "-x"}}}));
    assert_eq!(
        errors(&validate(&PDB, &bad)),
        vec![
            "spec.minAvailable: Invalid value: intstr.IntOrString{Type:1, IntVal:0, StrVal:\"half\"}: a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')",
            "spec.selector.matchLabels: Invalid value: \"-x\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
        ]
    );
}

/// A HorizontalPodAutoscaler as kubesim stores it (minReplicas defaulted).
fn hpa() -> Value {
    json!({
        "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "minReplicas": 1, "maxReplicas": 10,
            "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 70}}}],
        },
    })
}

#[test]
fn hpa_on_cpu_utilization_is_valid() {
    assert_eq!(errors(&validate(&HPA, &hpa())), Vec::<String>::new());
    let mut h = hpa();
    h["spec"].as_object_mut().map(|s| s.remove("metrics"));
    h["spec"]["behavior"] =
        json!({"scaleDown": {"stabilizationWindowSeconds": 300}, "scaleUp": {"selectPolicy": "Max"}});
    assert_eq!(errors(&validate(&HPA, &h)), Vec::<String>::new());
}

/// validateHorizontalPodAutoscalerSpec and ValidateCrossVersionObjectReference.
#[test]
fn hpa_replicas_and_target() {
    let mut h = hpa();
    h["spec"]["minReplicas"] = json!(0);
    h["spec"]["maxReplicas"] = json!(0);
    h["spec"]["scaleTargetRef"] = json!({"kind": "Deployment", "name": "a/b"});
    assert_eq!(
        errors(&validate(&HPA, &h)),
        vec![
            "spec.minReplicas: Invalid value: 0: must be greater than or equal to 1",
            "spec.maxReplicas: Invalid value: 0: must be greater than 0",
            "spec.scaleTargetRef.name: Invalid value: \"a/b\": may not contain '/'",
            "spec.metrics: Forbidden: must specify at least one Object or External metric to support scaling to zero replicas",
        ]
    );
    let mut h = hpa();
    h["spec"]["minReplicas"] = json!(5);
    h["spec"]["maxReplicas"] = json!(3);
    h["spec"]["scaleTargetRef"] = json!({});
    assert_eq!(
        errors(&validate(&HPA, &h)),
        vec![
            "spec.maxReplicas: Invalid value: 3: must be greater than or equal to `minReplicas`",
            "spec.scaleTargetRef.kind: Required value",
            "spec.scaleTargetRef.name: Required value",
        ]
    );
    // An object stored with minReplicas 0 may keep it (ValidateHorizontalPodAutoscalerUpdate).
    let mut old = hpa();
    old["spec"]["minReplicas"] = json!(0);
    old["spec"]["metrics"] = json!([{"type": "External", "external": {"metric": {"name": "queue"}, "target": {"type": "Value", "value": "10"}}}]);
    assert_eq!(errors(&validate_update(&HPA, &old, &old)), Vec::<String>::new());
}

/// validateMetricSpec, validateMetricTarget and the per-source rules.
#[test]
fn hpa_metric_rules() {
    let mut h = hpa();
    h["spec"]["metrics"] = json!([
        {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization"}}},
        {"type": "Pods", "pods": {"metric": {"name": "rps"}, "target": {"type": "Average", "averageValue": "0"}}},
        {"type": "Object", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "1Gi", "averageUtilization": 0}}},
        {"type": "Memory"},
    ]);
    assert_eq!(
        errors(&validate(&HPA, &h)),
        vec![
            "spec.metrics[0].resource.target.averageUtilization: Required value: must set either a target raw value or a target utilization",
            "spec.metrics[1].pods.target.type: Invalid value: \"Average\": must be either Utilization, Value, or AverageValue",
            "spec.metrics[1].pods.target.averageValue: Invalid value: 0: must be positive",
            "spec.metrics[2].resource.target.averageUtilization: Invalid value: 0: must be greater than 0",
            "spec.metrics[2].resource.target.averageValue: Forbidden: may not set both a target raw value and a target utilization",
            "spec.metrics[2].object: Required value: must populate information for the given metric source",
            "spec.metrics[3].type: Unsupported value: \"Memory\": supported values: \"ContainerResource\", \"External\", \"Object\", \"Pods\", \"Resource\"",
            "spec.metrics[3].type: Unsupported value: \"Memory\": supported values: \"ContainerResource\", \"External\", \"Object\", \"Pods\", \"Resource\"",
        ]
    );
}

/// validateScalingRules and validateScalingPolicy.
#[test]
fn hpa_behavior_rules() {
    let mut h = hpa();
    h["spec"]["behavior"] = json!({
        "scaleUp": {"stabilizationWindowSeconds": 4000, "selectPolicy": "Any", "policies": []},
        "scaleDown": {"policies": [{"type": "Replicas", "value": 0, "periodSeconds": 3600}]},
    });
    assert_eq!(
        errors(&validate(&HPA, &h)),
        vec![
            "spec.behavior.scaleUp.stabilizationWindowSeconds: Invalid value: 4000: must be less than or equal to 3600",
            "spec.behavior.scaleUp.selectPolicy: Unsupported value: \"Any\": supported values: \"Disabled\", \"Max\", \"Min\"",
            "spec.behavior.scaleUp.policies: Required value: must specify at least one Policy",
            "spec.behavior.scaleDown.policies[0].type: Unsupported value: \"Replicas\": supported values: \"Percent\", \"Pods\"",
            "spec.behavior.scaleDown.policies[0].value: Invalid value: 0: must be greater than zero",
            "spec.behavior.scaleDown.policies[0].periodSeconds: Invalid value: 3600: must be less than or equal to 1800",
        ]
    );
}

/// ValidateHorizontalPodAutoscalerStatusUpdate and ValidatePodDisruptionBudgetStatusUpdate.
#[test]
fn hpa_and_pdb_status() {
    let mut h = hpa();
    h["status"] = json!({"currentReplicas": -1, "desiredReplicas": 2});
    assert_eq!(
        errors(&validate_status_update(&HPA, &h, &hpa())),
        vec!["status.currentReplicas: Invalid value: -1: must be greater than or equal to 0"]
    );
    let mut p = pdb(json!({"minAvailable": 1}));
    p["status"] = json!({
        "disruptionsAllowed": -1, "currentHealthy": 1, "desiredHealthy": 1, "expectedPods": 1,
        "conditions": [{"type": "DisruptionAllowed", "status": "Yes", "reason": "", "lastTransitionTime": "2025-01-01T00:00:00Z"}],
    });
    assert_eq!(
        errors(&validate_status_update(&PDB, &p, &p)),
        vec![
            "status.conditions[0].status: Unsupported value: \"Yes\": supported values: \"False\", \"True\", \"Unknown\"",
            "status.conditions[0].reason: Required value: must be set",
            "status.disruptionsAllowed: Invalid value: -1: must be greater than or equal to 0",
        ]
    );
}

//! The autoscaling group (pkg/apis/autoscaling/validation/validation.go), for the
//! autoscaling/v2 HorizontalPodAutoscaler: `validateHorizontalPodAutoscalerSpec` (replica
//! bounds, `ValidateCrossVersionObjectReference` of the target, `validateMetrics` and
//! `validateBehavior`) and `ValidateHorizontalPodAutoscalerStatusUpdate`.
//!
//! kubesim defaults `minReplicas` to 1; the server also defaults `metrics` (CPU at 80%)
//! and, inside a given `behavior`, each scaling rule's missing `policies`,
//! `selectPolicy` and `stabilizationWindowSeconds`. Those are absent here, so an absent
//! `policies` is read as the default (only an explicit `[]` is Required) and absent
//! metrics pass. HPAScaleToZero is alpha in 1.33: `minReplicas` must be at least 1
//! unless the stored object already has 0. Left out: the scaleTargetRef `apiVersion`
//! check of later releases, the alpha `tolerance` field, and the resource-name rules of a
//! ContainerResource metric beyond Required.

use serde_json::Value;

use crate::field::{
    Cause, Path, forbid, int, invalid_int, invalid_str, list, req, set, sorted, string, unsupported,
};
use crate::meta::non_negative;
use crate::names;
use crate::quantity::Quantity;

/// `MaxPeriodSeconds` and `MaxStabilizationWindowSeconds`.
const MAX_PERIOD_SECONDS: i64 = 1800;
const MAX_STABILIZATION_WINDOW_SECONDS: i64 = 3600;

/// `validMetricSourceTypes`, as `sets.List` returns them.
const METRIC_SOURCE_TYPES: [&str; 5] = ["ContainerResource", "External", "Object", "Pods", "Resource"];

/// `ValidateHorizontalPodAutoscaler` (`old` is `None`) or `...Update`.
pub(crate) fn validate_hpa(hpa: &Value, old: Option<&Value>) -> Vec<Cause> {
    let spec = hpa.get("spec").unwrap_or(&Value::Null);
    let p = Path::new("spec");
    let old_zero = old.and_then(|o| o.pointer("/spec/minReplicas")).and_then(Value::as_i64) == Some(0);
    let lower = if old_zero { 0 } else { 1 };
    let mut out = Vec::new();
    let min = int(spec, "minReplicas");
    if let Some(min) = min.filter(|m| *m < lower) {
        out.push(invalid_int(
            &p.child("minReplicas"),
            min,
            &format!("must be greater than or equal to {lower}"),
        ));
    }
    let max = int(spec, "maxReplicas").unwrap_or(0);
    if max < 1 {
        out.push(invalid_int(&p.child("maxReplicas"), max, "must be greater than 0"));
    }
    if min.is_some_and(|m| max < m) {
        out.push(invalid_int(&p.child("maxReplicas"), max, "must be greater than or equal to `minReplicas`"));
    }
    out.extend(object_reference(
        spec.get("scaleTargetRef").unwrap_or(&Value::Null),
        &p.child("scaleTargetRef"),
    ));
    let metrics = list(spec, "metrics");
    let mp = p.child("metrics");
    for (i, metric) in metrics.iter().enumerate() {
        out.extend(validate_metric(metric, &mp.index(i)));
    }
    if min == Some(0) && !metrics.iter().any(|m| matches!(string(m, "type"), "Object" | "External")) {
        out.push(forbid(
            &mp,
            "must specify at least one Object or External metric to support scaling to zero replicas",
        ));
    }
    if let Some(behavior) = set(spec, "behavior") {
        for key in ["scaleUp", "scaleDown"] {
            if let Some(rules) = set(behavior, key) {
                out.extend(scaling_rules(rules, &p.child("behavior").child(key)));
            }
        }
    }
    out
}

/// `ValidateCrossVersionObjectReference`: `kind` and `name` set and usable in a path.
fn object_reference(r: &Value, p: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    for key in ["kind", "name"] {
        let value = string(r, key);
        if value.is_empty() {
            out.push(req(&p.child(key), ""));
        } else {
            out.extend(names::path_segment_name(value).iter().map(|m| invalid_str(&p.child(key), value, m)));
        }
    }
    out
}

/// `validateMetricSpec`: the type, its source (only the first one present is checked),
/// and no other source.
fn validate_metric(m: &Value, p: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    let ty = string(m, "type");
    let valid_types: Vec<String> = METRIC_SOURCE_TYPES.iter().map(|s| (*s).to_owned()).collect();
    if ty.is_empty() {
        out.push(req(&p.child("type"), "must specify a metric source type"));
    }
    if !METRIC_SOURCE_TYPES.contains(&ty) {
        out.push(unsupported(&p.child("type"), ty, &valid_types));
    }
    let mut present = Vec::new();
    for key in ["object", "external", "pods", "resource", "containerResource"] {
        let Some(src) = set(m, key) else { continue };
        present.push(key);
        if present.len() > 1 {
            continue;
        }
        let sp = p.child(key);
        out.extend(match key {
            "object" => object_source(src, &sp),
            "external" => external_source(src, &sp),
            "pods" => pods_source(src, &sp),
            "resource" => resource_source(src, &sp, false),
            _ => resource_source(src, &sp, true),
        });
    }
    let expected = match ty {
        "Object" => "object",
        "Pods" => "pods",
        "Resource" => "resource",
        "External" => "external",
        "ContainerResource" => "containerResource",
        _ => {
            out.push(unsupported(&p.child("type"), ty, &valid_types));
            ""
        }
    };
    if !expected.is_empty() && !present.contains(&expected) {
        out.push(req(&p.child(expected), "must populate information for the given metric source"));
    }
    if present.len() != 1 {
        // Go ranges over a set here: the order of these causes is not fixed there.
        let mut others: Vec<&str> = present.into_iter().filter(|k| *k != expected).collect();
        others.sort_unstable();
        for key in others {
            out.push(forbid(&p.child(key), "must populate the given metric source only"));
        }
    }
    out
}

/// `validateObjectSource`.
fn object_source(src: &Value, p: &Path) -> Vec<Cause> {
    let mut out =
        object_reference(src.get("describedObject").unwrap_or(&Value::Null), &p.child("describedObject"));
    out.extend(metric_identifier(src.get("metric").unwrap_or(&Value::Null), &p.child("metric")));
    let target = src.get("target").unwrap_or(&Value::Null);
    out.extend(metric_target(target, &p.child("target")));
    if set(target, "value").is_none() && set(target, "averageValue").is_none() {
        out.push(req(
            &p.child("target").child("averageValue"),
            "must set either a target value or averageValue",
        ));
    }
    out
}

/// `validateExternalSource`.
fn external_source(src: &Value, p: &Path) -> Vec<Cause> {
    let mut out = metric_identifier(src.get("metric").unwrap_or(&Value::Null), &p.child("metric"));
    let target = src.get("target").unwrap_or(&Value::Null);
    let tp = p.child("target");
    out.extend(metric_target(target, &tp));
    out.extend(one_target(
        target,
        &tp,
        ("value", "averageValue"),
        ("averageValue", "must set either a target value for metric or a per-pod target"),
        ("value", "may not set both a target value for metric and a per-pod target"),
    ));
    out
}

/// The two-target rule of an External or (Container)Resource source: one of the two
/// keys is set (else Required at `missing.0`), not both (else Forbidden at `both.0`).
fn one_target(
    t: &Value,
    p: &Path,
    keys: (&str, &str),
    missing: (&str, &str),
    both: (&str, &str),
) -> Option<Cause> {
    match (set(t, keys.0), set(t, keys.1)) {
        (None, None) => Some(req(&p.child(missing.0), missing.1)),
        (Some(_), Some(_)) => Some(forbid(&p.child(both.0), both.1)),
        _ => None,
    }
}

/// `validatePodsSource`.
fn pods_source(src: &Value, p: &Path) -> Vec<Cause> {
    let mut out = metric_identifier(src.get("metric").unwrap_or(&Value::Null), &p.child("metric"));
    let target = src.get("target").unwrap_or(&Value::Null);
    out.extend(metric_target(target, &p.child("target")));
    if set(target, "averageValue").is_none() {
        out.push(req(
            &p.child("target").child("averageValue"),
            "must specify a positive target averageValue",
        ));
    }
    out
}

/// `validateResourceSource` and (`container: true`) `validateContainerResourceSource`.
fn resource_source(src: &Value, p: &Path, container: bool) -> Vec<Cause> {
    let mut out = Vec::new();
    if string(src, "name").is_empty() {
        out.push(req(&p.child("name"), "must specify a resource name"));
    }
    if container {
        let name = string(src, "container");
        if name.is_empty() {
            out.push(req(&p.child("container"), "must specify a container"));
        } else {
            out.extend(
                names::dns1123_label(name).iter().map(|m| invalid_str(&p.child("container"), name, m)),
            );
        }
    }
    let target = src.get("target").unwrap_or(&Value::Null);
    let tp = p.child("target");
    out.extend(metric_target(target, &tp));
    out.extend(one_target(
        target,
        &tp,
        ("averageUtilization", "averageValue"),
        ("averageUtilization", "must set either a target raw value or a target utilization"),
        ("averageValue", "may not set both a target raw value and a target utilization"),
    ));
    out
}

/// `validateMetricTarget`: the type, positive quantities, utilization above 0.
fn metric_target(t: &Value, p: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    let ty = string(t, "type");
    if ty.is_empty() {
        out.push(req(&p.child("type"), "must specify a metric target type"));
    }
    if !matches!(ty, "Utilization" | "Value" | "AverageValue") {
        out.push(invalid_str(&p.child("type"), ty, "must be either Utilization, Value, or AverageValue"));
    }
    for key in ["value", "averageValue"] {
        if let Some(q) = set(t, key).and_then(Value::as_str).and_then(Quantity::parse)
            && (q.is_negative() || q.is_zero())
        {
            // `*resource.Quantity` is a Stringer: printed as its canonical form, unquoted.
            out.push(crate::field::invalid(
                p.child(key).as_str(),
                crate::field::Bad::Raw(q.canonical()),
                "must be positive",
            ));
        }
    }
    if let Some(u) = int(t, "averageUtilization").filter(|u| *u < 1) {
        out.push(invalid_int(&p.child("averageUtilization"), u, "must be greater than 0"));
    }
    out
}

/// `validateMetricIdentifier`.
fn metric_identifier(id: &Value, p: &Path) -> Vec<Cause> {
    let name = string(id, "name");
    if name.is_empty() {
        return vec![req(&p.child("name"), "must specify a metric name")];
    }
    names::path_segment_name(name).iter().map(|m| invalid_str(&p.child("name"), name, m)).collect()
}

/// `validateScalingRules` and `validateScalingPolicy`.
fn scaling_rules(rules: &Value, p: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    if let Some(w) = int(rules, "stabilizationWindowSeconds") {
        let wp = p.child("stabilizationWindowSeconds");
        if w < 0 {
            out.push(invalid_int(&wp, w, "must be greater than or equal to zero"));
        }
        if w > MAX_STABILIZATION_WINDOW_SECONDS {
            out.push(invalid_int(
                &wp,
                w,
                &format!("must be less than or equal to {MAX_STABILIZATION_WINDOW_SECONDS}"),
            ));
        }
    }
    if let Some(select) = set(rules, "selectPolicy").and_then(Value::as_str)
        && !crate::enums::SCALING_POLICY_SELECT.contains(&select)
    {
        out.push(unsupported(&p.child("selectPolicy"), select, &sorted(crate::enums::SCALING_POLICY_SELECT)));
    }
    let pp = p.child("policies");
    // SetDefaults_HorizontalPodAutoscalerBehavior fills a nil list; an explicit [] stays.
    if rules.get("policies").is_some_and(|v| v.as_array().is_some_and(Vec::is_empty)) {
        out.push(req(&pp, "must specify at least one Policy"));
    }
    for (i, policy) in list(rules, "policies").iter().enumerate() {
        let ip = pp.index(i);
        let ty = string(policy, "type");
        if !crate::enums::HPA_SCALING_POLICY_TYPE.contains(&ty) {
            out.push(unsupported(&ip.child("type"), ty, &sorted(crate::enums::HPA_SCALING_POLICY_TYPE)));
        }
        let value = int(policy, "value").unwrap_or(0);
        if value <= 0 {
            out.push(invalid_int(&ip.child("value"), value, "must be greater than zero"));
        }
        let period = int(policy, "periodSeconds").unwrap_or(0);
        if period <= 0 {
            out.push(invalid_int(&ip.child("periodSeconds"), period, "must be greater than zero"));
        }
        if period > MAX_PERIOD_SECONDS {
            out.push(invalid_int(
                &ip.child("periodSeconds"),
                period,
                &format!("must be less than or equal to {MAX_PERIOD_SECONDS}"),
            ));
        }
    }
    out
}

/// `ValidateHorizontalPodAutoscalerStatusUpdate`: the replica counts are not negative.
pub(crate) fn validate_hpa_status(hpa: &Value) -> Vec<Cause> {
    let status = hpa.get("status").unwrap_or(&Value::Null);
    let p = Path::new("status");
    ["currentReplicas", "desiredReplicas"].iter().filter_map(|k| non_negative(status, k, &p)).collect()
}

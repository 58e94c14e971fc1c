//! The policy group (pkg/apis/policy/validation/validation.go): a PodDisruptionBudget's
//! spec (`ValidatePodDisruptionBudgetSpec`, create and update alike) and its status
//! (`ValidatePodDisruptionBudgetStatusUpdate`, policy/v1).
//!
//! When both `minAvailable` and `maxUnavailable` are set the server prints the whole
//! `policy.PodDisruptionBudgetSpec` with `%#v`, pointer addresses included; the cause
//! here has the same field and reason and shows the two values instead.

use serde_json::Value;

use crate::apps::int_or_percent;
use crate::enums;
use crate::field::{Bad, Cause, Path, go_int_or_string, invalid, set, sorted, unsupported};
use crate::meta::{non_negative, validate_label_selector};

/// `ValidatePodDisruptionBudgetSpec`.
pub(crate) fn validate_pdb(pdb: &Value) -> Vec<Cause> {
    let spec = pdb.get("spec").unwrap_or(&Value::Null);
    let p = Path::new("spec");
    let mut out = Vec::new();
    let min = set(spec, "minAvailable");
    let max = set(spec, "maxUnavailable");
    if let (Some(min), Some(max)) = (min, max) {
        out.push(invalid(
            p.as_str(),
            Bad::Raw(format!(
                "policy.PodDisruptionBudgetSpec{{MinAvailable:{}, MaxUnavailable:{}}}",
                go_int_or_string(min),
                go_int_or_string(max)
            )),
            "minAvailable and maxUnavailable cannot be both set",
        ));
    }
    for (key, value) in [("minAvailable", min), ("maxUnavailable", max)] {
        if value.is_some() {
            out.extend(int_or_percent(value, &p.child(key), true));
        }
    }
    if let Some(sel) = set(spec, "selector") {
        out.extend(validate_label_selector(sel, &p.child("selector")));
    }
    if let Some(policy) = set(spec, "unhealthyPodEvictionPolicy") {
        let policy = policy.as_str().unwrap_or_default();
        if !enums::UNHEALTHY_POD_EVICTION_POLICY_TYPE.contains(&policy) {
            out.push(unsupported(
                &p.child("unhealthyPodEvictionPolicy"),
                policy,
                &sorted(enums::UNHEALTHY_POD_EVICTION_POLICY_TYPE),
            ));
        }
    }
    out
}

/// `ValidatePodDisruptionBudgetStatusUpdate` for policy/v1: the conditions and the
/// counters.
pub(crate) fn validate_pdb_status(pdb: &Value) -> Vec<Cause> {
    let status = pdb.get("status").unwrap_or(&Value::Null);
    let p = Path::new("status");
    let mut out = crate::meta::validate_conditions(status, &p.child("conditions"));
    for key in ["disruptionsAllowed", "currentHealthy", "desiredHealthy", "expectedPods"] {
        out.extend(non_negative(status, key, &p));
    }
    out
}

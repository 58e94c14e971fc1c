//! Where a pod may run: `validateAffinity` (node affinity's `NodeSelectorRequirement`s,
//! pod affinity and anti-affinity terms) and `validateTopologySpreadConstraints` of
//! core/validation/validation.go. Left out: node `matchFields` requirements, the
//! `matchLabelKeys`/`mismatchLabelKeys` rules, and a term's `namespaces` names.

use serde_json::Value;

use crate::field::{
    Bad, Cause, Path, duplicate, forbid, int, invalid_int, invalid_str, list, req, set, sorted, string,
    unsupported,
};
use crate::meta::{label_name, validate_label_selector};

/// `validateAffinity`.
pub(crate) fn validate_affinity(affinity: &Value, p: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    if let Some(node) = set(affinity, "nodeAffinity") {
        let np = p.child("nodeAffinity");
        if let Some(required) = set(node, "requiredDuringSchedulingIgnoredDuringExecution") {
            let rp = np.child("requiredDuringSchedulingIgnoredDuringExecution");
            let terms = list(required, "nodeSelectorTerms");
            if terms.is_empty() {
                out.push(req(&rp.child("nodeSelectorTerms"), "must have at least one node selector term"));
            }
            for (i, term) in terms.iter().enumerate() {
                out.extend(node_selector_term(term, &rp.child("nodeSelectorTerms").index(i)));
            }
        }
        let pp = np.child("preferredDuringSchedulingIgnoredDuringExecution");
        for (i, pref) in list(node, "preferredDuringSchedulingIgnoredDuringExecution").iter().enumerate() {
            out.extend(weight(pref, &pp.index(i)));
            out.extend(node_selector_term(
                pref.get("preference").unwrap_or(&Value::Null),
                &pp.index(i).child("preference"),
            ));
        }
    }
    for key in ["podAffinity", "podAntiAffinity"] {
        let Some(pa) = set(affinity, key) else { continue };
        let ap = p.child(key);
        let rp = ap.child("requiredDuringSchedulingIgnoredDuringExecution");
        for (i, term) in list(pa, "requiredDuringSchedulingIgnoredDuringExecution").iter().enumerate() {
            out.extend(pod_affinity_term(term, &rp.index(i)));
        }
        let wp = ap.child("preferredDuringSchedulingIgnoredDuringExecution");
        for (i, weighted) in list(pa, "preferredDuringSchedulingIgnoredDuringExecution").iter().enumerate() {
            out.extend(weight(weighted, &wp.index(i)));
            let term = weighted.get("podAffinityTerm").unwrap_or(&Value::Null);
            out.extend(pod_affinity_term(term, &wp.index(i).child("podAffinityTerm")));
        }
    }
    out
}

/// The weight of a preferred term: 1 to 100.
fn weight(v: &Value, p: &Path) -> Option<Cause> {
    let w = int(v, "weight").unwrap_or(0);
    (!(1..=100).contains(&w)).then(|| invalid_int(&p.child("weight"), w, "must be in the range 1-100"))
}

/// `ValidateNodeSelectorTerm` (its `matchExpressions`).
fn node_selector_term(term: &Value, p: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    for (j, rq) in list(term, "matchExpressions").iter().enumerate() {
        out.extend(node_selector_requirement(rq, &p.child("matchExpressions").index(j)));
    }
    out
}

/// `ValidateNodeSelectorRequirement`.
fn node_selector_requirement(rq: &Value, p: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    let values = list(rq, "values").len();
    match string(rq, "operator") {
        "In" | "NotIn" if values == 0 => {
            out.push(req(&p.child("values"), "must be specified when `operator` is 'In' or 'NotIn'"));
        }
        "Exists" | "DoesNotExist" if values > 0 => out.push(forbid(
            &p.child("values"),
            "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
        )),
        "Gt" | "Lt" if values != 1 => out
            .push(req(&p.child("values"), "must be specified single value when `operator` is 'Lt' or 'Gt'")),
        "In" | "NotIn" | "Exists" | "DoesNotExist" | "Gt" | "Lt" => {}
        op => out.push(invalid_str(&p.child("operator"), op, "not a valid selector operator")),
    }
    out.extend(label_name(string(rq, "key"), &p.child("key")));
    out
}

/// `validatePodAffinityTerm`: the selectors, then a topology key that is set (an empty
/// one also fails the label-name check) and a qualified name.
fn pod_affinity_term(term: &Value, p: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    for key in ["labelSelector", "namespaceSelector"] {
        if let Some(sel) = set(term, key) {
            out.extend(validate_label_selector(sel, &p.child(key)));
        }
    }
    let key = string(term, "topologyKey");
    if key.is_empty() {
        out.push(req(&p.child("topologyKey"), "can not be empty"));
    }
    out.extend(label_name(key, &p.child("topologyKey")));
    out
}

/// `validateTopologySpreadConstraints`.
pub(crate) fn validate_topology_spread(constraints: &[Value], p: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    for (i, c) in constraints.iter().enumerate() {
        let cp = p.index(i);
        let skew = int(c, "maxSkew").unwrap_or(0);
        if skew <= 0 {
            out.push(invalid_int(&cp.child("maxSkew"), skew, "must be greater than zero"));
        }
        let key = string(c, "topologyKey");
        if key.is_empty() {
            out.push(req(&cp.child("topologyKey"), "can not be empty"));
        }
        let action = string(c, "whenUnsatisfiable");
        if !matches!(action, "DoNotSchedule" | "ScheduleAnyway") {
            out.push(unsupported(
                &cp.child("whenUnsatisfiable"),
                action,
                &sorted(&["DoNotSchedule", "ScheduleAnyway"]),
            ));
        }
        let repeated = constraints[i + 1..]
            .iter()
            .any(|o| string(o, "topologyKey") == key && string(o, "whenUnsatisfiable") == action);
        if repeated {
            out.push(duplicate(
                cp.child("{topologyKey, whenUnsatisfiable}").as_str(),
                Bad::Str(format!("{{{key}, {action}}}")),
            ));
        }
        if let Some(min) = int(c, "minDomains") {
            let mp = cp.child("minDomains");
            if min <= 0 {
                out.push(invalid_int(&mp, min, "must be greater than zero"));
            }
            if action != "DoNotSchedule" {
                out.push(invalid_int(
                    &mp,
                    min,
                    &format!("can only use minDomains if whenUnsatisfiable=DoNotSchedule, not {action}"),
                ));
            }
        }
        for key in ["nodeAffinityPolicy", "nodeTaintsPolicy"] {
            if let Some(policy) = set(c, key).and_then(Value::as_str)
                && !matches!(policy, "Honor" | "Ignore")
            {
                out.push(unsupported(&cp.child(key), policy, &sorted(&["Honor", "Ignore"])));
            }
        }
        if let Some(sel) = set(c, "labelSelector") {
            out.extend(validate_label_selector(sel, &cp.child("labelSelector")));
        }
    }
    out
}

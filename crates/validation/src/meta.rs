//! Metadata and label selectors inside specs: `ValidateLabels`, `ValidateAnnotations`,
//! `ValidateTemplateObjectMeta`, `ValidateLabelSelector` (metav1 validation), the
//! selector-matches-template check of every workload, and `ValidateImmutableField` for
//! selectors. Object metadata itself is kubesim's (`meta::validate_metadata`).

use serde_json::Value;

use crate::field::{
    Bad, Cause, Path, forbid, go_label_selector, go_string_map, invalid, invalid_str, list, object, req,
    string, string_map,
};
use crate::names;

/// `unversionedvalidation.ValidateLabels`: every error at the map's path.
pub(crate) fn validate_labels(v: &Value, key: &str, p: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    for (k, val) in string_map(v, key) {
        out.extend(label_name(k, p));
        for m in names::label_value(val) {
            out.push(invalid_str(p, val, &m));
        }
    }
    out
}

/// `ValidateLabelName`.
pub(crate) fn label_name(k: &str, p: &Path) -> Vec<Cause> {
    names::qualified_name(k).iter().map(|m| invalid_str(p, k, m)).collect()
}

/// `ValidateAnnotations`: keys are qualified names (case-insensitive), 256 KiB in total.
pub(crate) fn validate_annotations(v: &Value, key: &str, p: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    let pairs = string_map(v, key);
    for (k, _) in &pairs {
        for m in names::qualified_name(&k.to_lowercase()) {
            out.push(invalid_str(p, k, &m));
        }
    }
    let total: usize = pairs.iter().map(|(k, v)| k.len() + v.len()).sum();
    if total > 256 * 1024 {
        out.push(ctop_schema::causes::cause(
            ctop_schema::FIELD_VALUE_TOO_LONG,
            p.as_str(),
            "Too long".to_owned(),
            "may not be more than 262144 bytes",
        ));
    }
    out
}

/// `ValidateTemplateObjectMeta` (a PVC template's metadata): annotations and labels, and
/// no other metadata field.
pub(crate) fn validate_template_object_meta(meta: &Value, p: &Path) -> Vec<Cause> {
    let mut out = validate_annotations(meta, "annotations", &p.child("annotations"));
    out.extend(validate_labels(meta, "labels", &p.child("labels")));
    if let Some(m) = meta.as_object() {
        for (k, v) in m {
            let empty = match v {
                Value::Null => true,
                Value::String(s) => s.is_empty(),
                Value::Array(a) => a.is_empty(),
                Value::Object(o) => o.is_empty(),
                _ => false,
            };
            if k != "labels" && k != "annotations" && !empty {
                out.push(forbid(&p.child(k), "cannot be set"));
            }
        }
    }
    out
}

/// `ValidateLabelSelector` with `AllowInvalidLabelValueInSelector: false`.
pub(crate) fn validate_label_selector(sel: &Value, p: &Path) -> Vec<Cause> {
    let mut out = validate_labels(sel, "matchLabels", &p.child("matchLabels"));
    for (i, expr) in list(sel, "matchExpressions").iter().enumerate() {
        let ep = p.child("matchExpressions").index(i);
        let values = list(expr, "values");
        match string(expr, "operator") {
            "In" | "NotIn" => {
                if values.is_empty() {
                    out.push(req(
                        &ep.child("values"),
                        "must be specified when `operator` is 'In' or 'NotIn'",
                    ));
                }
            }
            "Exists" | "DoesNotExist" => {
                if !values.is_empty() {
                    out.push(forbid(
                        &ep.child("values"),
                        "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                    ));
                }
            }
            op => out.push(invalid_str(&ep.child("operator"), op, "not a valid selector operator")),
        }
        out.extend(label_name(string(expr, "key"), &ep.child("key")));
        for (j, value) in values.iter().enumerate() {
            let value = value.as_str().unwrap_or_default();
            for m in names::label_value(value) {
                out.push(invalid_str(&ep.child("values").index(j), value, &m));
            }
        }
    }
    out
}

/// Whether `metav1.LabelSelectorAsSelector` accepts the selector (an unknown operator, or
/// In/NotIn without values, or Exists with values, makes it fail).
pub(crate) fn selector_parses(sel: &Value) -> bool {
    list(sel, "matchExpressions").iter().all(|e| {
        let n = list(e, "values").len();
        match string(e, "operator") {
            "In" | "NotIn" => n > 0,
            "Exists" | "DoesNotExist" => n == 0,
            _ => false,
        }
    })
}

/// Whether the selector matches the labels (an empty selector matches everything).
pub(crate) fn selector_matches(sel: &Value, labels: Option<&Value>) -> bool {
    let get = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
    let by_labels = string_map(sel, "matchLabels").iter().all(|(k, v)| get(k) == Some(*v));
    let by_exprs = list(sel, "matchExpressions").iter().all(|e| {
        let key = string(e, "key");
        let values: Vec<&str> = list(e, "values").iter().filter_map(Value::as_str).collect();
        match string(e, "operator") {
            "In" => get(key).is_some_and(|v| values.contains(&v)),
            "NotIn" => get(key).is_none_or(|v| !values.contains(&v)),
            "Exists" => get(key).is_some(),
            "DoesNotExist" => get(key).is_none(),
            _ => false,
        }
    });
    by_labels && by_exprs
}

/// Whether the selector selects nothing in particular (`labels.Selector.Empty()`).
pub(crate) fn selector_empty(sel: &Value) -> bool {
    object(sel, "matchLabels").is_none_or(|m| m.is_empty()) && list(sel, "matchExpressions").is_empty()
}

/// `` spec.template.metadata.labels: Invalid value: map[string]string{...}: `selector` does not match template `labels` ``.
pub(crate) fn template_labels_mismatch(template: &Value, p: &Path) -> Cause {
    let labels = template.pointer("/metadata/labels");
    invalid(p.as_str(), Bad::Raw(go_string_map(labels)), "`selector` does not match template `labels`")
}

/// `ValidateImmutableField` of a `*metav1.LabelSelector`.
pub(crate) fn immutable_selector(new: Option<&Value>, old: Option<&Value>, p: &Path) -> Option<Cause> {
    let norm = |v: Option<&Value>| v.filter(|v| !v.is_null()).cloned();
    if norm(new) == norm(old) {
        return None;
    }
    let bad = match new.filter(|v| !v.is_null()) {
        Some(sel) => Bad::Raw(go_label_selector(sel)),
        None => Bad::Data(Value::Null),
    };
    Some(invalid(p.as_str(), bad, "field is immutable"))
}

/// `ValidateNonnegativeField` of an optional integer field.
pub(crate) fn non_negative(v: &Value, key: &str, p: &Path) -> Option<Cause> {
    let n = crate::field::int(v, key)?;
    (n < 0).then(|| crate::field::invalid_int(&p.child(key), n, "must be greater than or equal to 0"))
}

const CONDITION_REASON_FMT: &str = "[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?";
const CONDITION_REASON_MSG: &str = "a condition reason must start with alphabetic character, optionally followed by a string of alphanumeric characters or '_,:', and must end with an alphanumeric character or '_'";

/// `metav1validation.ValidateConditions` of `status.conditions` (`metav1.Condition`s):
/// unique types, each a qualified name; status True/False/Unknown; a reason that is set
/// and well formed; lastTransitionTime set. (The TooLong checks of reason and message are
/// left out.)
pub(crate) fn validate_conditions(status: &Value, p: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for (i, c) in list(status, "conditions").iter().enumerate() {
        let cp = p.index(i);
        let ty = string(c, "type");
        if !seen.insert(ty) {
            out.push(crate::field::duplicate(cp.child("type").as_str(), Bad::Str(ty.to_owned())));
        }
        out.extend(label_name(ty, &cp.child("type")));
        let st = string(c, "status");
        if !matches!(st, "True" | "False" | "Unknown") {
            out.push(crate::field::unsupported(
                &cp.child("status"),
                st,
                &crate::field::listed(&["False", "True", "Unknown"]),
            ));
        }
        if let Some(g) = crate::field::int(c, "observedGeneration").filter(|g| *g < 0) {
            out.push(crate::field::invalid_int(
                &cp.child("observedGeneration"),
                g,
                "must be greater than or equal to zero",
            ));
        }
        if string(c, "lastTransitionTime").is_empty() {
            out.push(req(&cp.child("lastTransitionTime"), "must be set"));
        }
        let reason = string(c, "reason");
        if reason.is_empty() {
            out.push(req(&cp.child("reason"), "must be set"));
        } else if !condition_reason_shape(reason) {
            out.push(invalid_str(
                &cp.child("reason"),
                reason,
                &names::regex_error(
                    CONDITION_REASON_MSG,
                    CONDITION_REASON_FMT,
                    &["my_name", "MY_NAME", "MyName", "ReasonA,ReasonB", "ReasonA:ReasonB"],
                ),
            ));
        }
    }
    out
}

/// `[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?`
fn condition_reason_shape(s: &str) -> bool {
    let b = s.as_bytes();
    let Some((&first, rest)) = b.split_first() else { return false };
    first.is_ascii_alphabetic()
        && rest.iter().all(|&c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b',' | b':'))
        && rest.last().is_none_or(|&c| c.is_ascii_alphanumeric() || c == b'_')
}

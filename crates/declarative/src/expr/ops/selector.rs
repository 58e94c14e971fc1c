//! `@selector: [selector, labels]`: whether a Kubernetes label selector matches a label
//! set. The selector is `{matchLabels, matchExpressions}` or, short, a plain label map;
//! its keys, values and operators are checked as Kubernetes checks them ([`super::label_syntax`]),
//! all before any label is compared.

use serde_json::{Map, Value};

use super::super::convert::{as_map, as_n_list, format_float};
use super::label_syntax::check_requirement;
use crate::jsonpath::kind;

pub(crate) fn apply(v: &Value) -> Result<Value, String> {
    let args = as_n_list(v, 2)?;
    if args[0].is_null() || args[1].is_null() {
        return Ok(Value::Bool(false));
    }
    let selector = as_map(&args[0]).map_err(|m| format!("the selector: {m}"))?;
    let labels = as_map(&args[1]).map_err(|m| format!("the labels: {m}"))?;
    Ok(Value::Bool(matches(selector, labels)?))
}

/// A label value as text, as Go's `%v` writes it (numbers in their shortest form, `null`
/// as `<nil>`, which no label value may be).
fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "<nil>".to_string(),
        Value::Number(n) if n.is_f64() => format_float(n.as_f64().unwrap_or_default()),
        other => other.to_string(),
    }
}

/// One requirement of the selector: a key, an operator (`=` for `matchLabels`), values.
type Requirement = (String, String, Vec<String>);

/// The selector's requirements, each checked as apimachinery checks it: `matchLabels`
/// first, then `matchExpressions`, the first fault an error.
fn requirements(selector: &Map<String, Value>) -> Result<Vec<Requirement>, String> {
    let match_labels = selector.get("matchLabels").and_then(Value::as_object);
    let expressions = selector.get("matchExpressions").and_then(Value::as_array);
    let plain = if match_labels.is_none() && expressions.is_none() { Some(selector) } else { match_labels };
    let mut out: Vec<Requirement> =
        plain.into_iter().flatten().map(|(k, v)| (k.clone(), "=".to_string(), vec![text(v)])).collect();
    for (i, e) in expressions.into_iter().flatten().enumerate() {
        let e =
            e.as_object().ok_or_else(|| format!("matchExpressions[{i}] is {}, expected a map", kind(e)))?;
        let key = e.get("key").and_then(Value::as_str).unwrap_or_default();
        let op = e.get("operator").and_then(Value::as_str).unwrap_or_default();
        if !matches!(op, "In" | "NotIn" | "Exists" | "DoesNotExist") {
            return Err(format!("unknown label selector operator {op}"));
        }
        let values = e.get("values").and_then(Value::as_array).into_iter().flatten().map(text).collect();
        out.push((key.to_string(), op.to_string(), values));
    }
    for (key, op, values) in &out {
        check_requirement(key, op, values).map_err(|m| format!("invalid label selector: {m}"))?;
    }
    Ok(out)
}

fn matches(selector: &Map<String, Value>, labels: &Map<String, Value>) -> Result<bool, String> {
    let reqs = requirements(selector)?;
    Ok(reqs.iter().all(|(key, op, values)| {
        let has = labels.get(key).map(text);
        match op.as_str() {
            "=" | "In" => has.is_some_and(|h| values.contains(&h)),
            "NotIn" => has.is_none_or(|h| !values.contains(&h)),
            "Exists" => has.is_some(),
            _ => has.is_none(),
        }
    }))
}

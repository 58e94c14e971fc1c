//! `@selector: [selector, labels]`: whether a Kubernetes label selector matches a label
//! set. The selector is `{matchLabels, matchExpressions}` or, short, a plain label map.

use serde_json::{Map, Value};

use super::super::convert::{as_map, as_n_list};
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

/// A label value as text (numbers and booleans as written).
fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn matches(selector: &Map<String, Value>, labels: &Map<String, Value>) -> Result<bool, String> {
    let label = |k: &str| labels.get(k).map(text);
    let match_labels = selector.get("matchLabels").and_then(Value::as_object);
    let expressions = selector.get("matchExpressions").and_then(Value::as_array);
    let plain = if match_labels.is_none() && expressions.is_none() { Some(selector) } else { match_labels };
    for (k, v) in plain.into_iter().flatten() {
        if label(k) != Some(text(v)) {
            return Ok(false);
        }
    }
    let mut ok = true;
    for e in expressions.into_iter().flatten() {
        let e = e.as_object().ok_or_else(|| format!("a match expression is {}, expected a map", kind(e)))?;
        let key = e.get("key").and_then(Value::as_str).unwrap_or_default();
        let op = e.get("operator").and_then(Value::as_str).unwrap_or_default();
        let values: Vec<String> =
            e.get("values").and_then(Value::as_array).into_iter().flatten().map(text).collect();
        let has = label(key);
        ok &= match op {
            "In" | "NotIn" if values.is_empty() => {
                return Err(format!("operator {op} of key {key:?} needs values"));
            }
            "Exists" | "DoesNotExist" if !values.is_empty() => {
                return Err(format!("operator {op} of key {key:?} takes no values"));
            }
            "In" => has.is_some_and(|h| values.contains(&h)),
            "NotIn" => has.is_none_or(|h| !values.contains(&h)),
            "Exists" => has.is_some(),
            "DoesNotExist" => has.is_none(),
            other => return Err(format!("unknown label selector operator {other:?}")),
        };
    }
    Ok(ok)
}

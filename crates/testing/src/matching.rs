//! Partial matching: does an object have the fields an expectation names? Start with
//! [`partial_match`], which lists every [`Mismatch`] (none: it matches).
//!
//! The rules, as the test format documents them:
//! - a mapping matches when every key it names matches (other keys are ignored); `null`
//!   means the key has no value: it is absent, null, or an empty list or mapping (the API
//!   server leaves empty lists out, as Go's `omitempty` does);
//! - a list of scalars matches exactly: same length, same values, same order;
//! - a list with mappings in it matches when each expected element matches a different
//!   element of the actual list, in any order (extra elements are ignored): this is how
//!   `status.conditions` or `spec.template.spec.containers` are checked by a few fields;
//! - scalars match when equal; numbers by value (`1` matches `1.0`).

use std::fmt;

use serde_json::Value;

/// One field that does not match.
#[derive(Clone, Debug, PartialEq)]
pub struct Mismatch {
    /// Where, as `status.conditions[type=Ready].status`.
    pub path: String,
    /// What the expectation says.
    pub expected: Value,
    /// What the object has (`None`: the field is missing).
    pub actual: Option<Value>,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = if self.path.is_empty() { "the object" } else { &self.path };
        match (&self.expected, &self.actual) {
            (Value::Null, Some(a)) => write!(f, "{path}: expected no value, got {}", compact(a)),
            (e, None) => write!(f, "{path}: expected {}, but it is missing", compact(e)),
            (e, Some(a)) => write!(f, "{path}: expected {}, got {}", compact(e), compact(a)),
        }
    }
}

/// A value on one line, shortened past 200 characters.
pub fn compact(v: &Value) -> String {
    let text = v.to_string();
    if text.len() > 200 {
        let cut = text.floor_char_boundary(200);
        format!("{}…", &text[..cut])
    } else {
        text
    }
}

/// Every way `actual` fails to have what `expected` names (empty: it matches).
pub fn partial_match(expected: &Value, actual: &Value) -> Vec<Mismatch> {
    let mut out = Vec::new();
    walk(String::new(), expected, Some(actual), &mut out);
    out
}

/// Whether `actual` has what `expected` names.
#[cfg(test)]
fn matches(expected: &Value, actual: &Value) -> bool {
    partial_match(expected, actual).is_empty()
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() { key.to_owned() } else { format!("{path}.{key}") }
}

/// How an element of a list is named in a path: by its `type` or `name` when it has one.
fn element(path: &str, i: usize, e: &Value) -> String {
    for key in ["type", "name"] {
        if let Some(k) = e.get(key).and_then(Value::as_str) {
            return format!("{path}[{key}={k}]");
        }
    }
    format!("{path}[{i}]")
}

fn walk(path: String, expected: &Value, actual: Option<&Value>, out: &mut Vec<Mismatch>) {
    match (expected, actual) {
        (Value::Null, None | Some(Value::Null)) => {}
        (Value::Null, Some(Value::Array(a))) if a.is_empty() => {}
        (Value::Null, Some(Value::Object(a))) if a.is_empty() => {}
        (Value::Null, Some(a)) => out.push(Mismatch { path, expected: Value::Null, actual: Some(a.clone()) }),
        (e, None) => out.push(Mismatch { path, expected: e.clone(), actual: None }),
        (Value::Object(em), Some(Value::Object(am))) => {
            for (k, ev) in em {
                walk(join(&path, k), ev, am.get(k), out);
            }
        }
        (Value::Array(el), Some(Value::Array(al))) if el.iter().any(|e| e.is_object() || e.is_array()) => {
            let mut used = vec![false; al.len()];
            for (i, e) in el.iter().enumerate() {
                let found = al.iter().enumerate().find(|(j, a)| !used[*j] && partial_match(e, a).is_empty());
                match found {
                    Some((j, _)) => used[j] = true,
                    None => {
                        // Report against the closest unused element, so the message says what differs.
                        let closest = al
                            .iter()
                            .enumerate()
                            .filter(|(j, _)| !used[*j])
                            .map(|(_, a)| (partial_match(e, a), a))
                            // The element of the same type or name first, then the nearest.
                            .min_by_key(|(m, a)| (!same_identity(e, a), m.len()));
                        let at = element(&path, i, e);
                        match closest {
                            Some((mismatches, _)) if mismatches.len() < count_leaves(e) => {
                                for m in mismatches {
                                    let rest = m.path;
                                    out.push(Mismatch { path: join(&at, &rest), ..m });
                                }
                            }
                            _ => out.push(Mismatch { path: at, expected: e.clone(), actual: None }),
                        }
                    }
                }
            }
        }
        (e, Some(a)) if scalar_eq(e, a) => {}
        (e, Some(a)) => out.push(Mismatch { path, expected: e.clone(), actual: Some(a.clone()) }),
    }
}

/// Whether `e` and `a` have the same `type` (or, without one, `name`).
fn same_identity(e: &Value, a: &Value) -> bool {
    ["type", "name"].iter().find_map(|k| e.get(*k).map(|v| a.get(*k) == Some(v))).unwrap_or(false)
}

/// Equal values, numbers compared by value.
fn scalar_eq(e: &Value, a: &Value) -> bool {
    match (e, a) {
        (Value::Number(x), Value::Number(y)) => {
            x == y || x.as_f64().zip(y.as_f64()).is_some_and(|(x, y)| x == y)
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| scalar_eq(x, y))
        }
        _ => e == a,
    }
}

/// How many scalar fields `v` names (a mapping of one field counts 1).
fn count_leaves(v: &Value) -> usize {
    match v {
        Value::Object(m) => m.values().map(count_leaves).sum::<usize>().max(1),
        Value::Array(l) => l.iter().map(count_leaves).sum::<usize>().max(1),
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn mappings_match_on_the_keys_named() {
        let actual = json!({"spec": {"replicas": 2, "image": "nginx"}, "status": {"ready": true}});
        assert!(matches(&json!({"spec": {"replicas": 2}}), &actual));
        assert!(matches(&json!({"spec": {"replicas": 2.0}}), &actual), "numbers by value");
        let m = partial_match(&json!({"spec": {"replicas": 3, "paused": true}}), &actual);
        let text: Vec<String> = m.iter().map(ToString::to_string).collect();
        assert_eq!(
            text,
            ["spec.paused: expected true, but it is missing", "spec.replicas: expected 3, got 2"]
        );
    }

    #[test]
    fn null_means_absent() {
        let actual = json!({"status": {"errorMessage": "boom"}});
        assert!(matches(&json!({"status": {"other": null}}), &actual));
        assert!(matches(&json!({"finalizers": null}), &json!({"finalizers": []})), "empty is no value");
        let m = partial_match(&json!({"status": {"errorMessage": null}}), &actual);
        assert_eq!(m[0].to_string(), "status.errorMessage: expected no value, got \"boom\"");
    }

    #[test]
    fn scalar_lists_match_exactly() {
        let actual = json!({"people": ["janed", "johnd"]});
        assert!(matches(&json!({"people": ["janed", "johnd"]}), &actual));
        assert!(!matches(&json!({"people": ["johnd", "janed"]}), &actual), "order counts");
        assert!(!matches(&json!({"people": ["janed"]}), &actual), "length counts");
        assert!(matches(&json!({"people": []}), &json!({"people": []})));
    }

    #[test]
    fn lists_of_mappings_match_as_unordered_subsets() {
        let actual = json!({"conditions": [
            {"type": "Reconciled", "status": "True", "reason": "ReconcileSucceeded"},
            {"type": "Ready", "status": "False", "reason": "Progressing"},
        ]});
        assert!(matches(&json!({"conditions": [{"type": "Ready", "status": "False"}]}), &actual));
        assert!(matches(
            &json!({"conditions": [{"type": "Ready"}, {"type": "Reconciled", "status": "True"}]}),
            &actual
        ));
        // Two expected elements cannot both match the one actual element.
        assert!(!matches(&json!({"conditions": [{"type": "Ready"}, {"type": "Ready"}]}), &actual));
        let m = partial_match(&json!({"conditions": [{"type": "Ready", "status": "True"}]}), &actual);
        assert_eq!(m.len(), 1, "{m:?}");
        assert_eq!(m[0].to_string(), "conditions[type=Ready].status: expected \"True\", got \"False\"");
        let m = partial_match(&json!({"conditions": [{"type": "Available"}]}), &actual);
        assert_eq!(
            m[0].to_string(),
            "conditions[type=Available]: expected {\"type\":\"Available\"}, but it is missing"
        );
    }

    #[test]
    fn a_type_mismatch_is_reported_at_its_path() {
        let m = partial_match(&json!({"spec": {"ports": [{"port": 80}]}}), &json!({"spec": {"ports": "80"}}));
        assert_eq!(m[0].path, "spec.ports");
        assert!(!matches(&json!({"a": "1"}), &json!({"a": 1})), "a string is not a number");
    }
}

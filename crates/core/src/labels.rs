//! Label selectors as the API server reads them: the `labelSelector` query string
//! (`app=web,tier!=db,env in (a,b),!legacy`) and the `metav1.LabelSelector` object
//! (`matchLabels` and `matchExpressions`), with the server's grammar and messages.
//!
//! Start with [`LabelSelector::parse`] and [`LabelSelector::matches_with`]. kubesim uses
//! it to answer filtered lists and watches; the runtime uses it to filter events of a
//! shared watch client-side.

use serde_json::Value;

/// Why a label selector string could not be parsed; holds the offending requirement.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("unable to parse requirement: {0}")]
pub struct LabelSelectorError(pub String);

/// One requirement of a label selector.
#[derive(Clone, Debug, PartialEq, Eq)]
enum LabelReq {
    Eq(String, String),
    NotEq(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    NotExists(String),
}

/// A parsed label selector; all requirements must hold.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LabelSelector(Vec<LabelReq>);

/// Split on commas that are not inside parentheses.
fn split_top(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

fn valid_key(k: &str) -> bool {
    let name = k.rsplit_once('/').map_or(k, |(_, n)| n);
    !name.is_empty()
        && name.len() <= 63
        && name.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric())
}

fn valid_value(v: &str) -> bool {
    v.is_empty()
        || (v.len() <= 63
            && v.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
            && v.starts_with(|c: char| c.is_ascii_alphanumeric())
            && v.ends_with(|c: char| c.is_ascii_alphanumeric()))
}

impl LabelSelector {
    /// Parse `app=web,tier!=db,env in (a,b),!legacy`.
    pub fn parse(s: &str) -> Result<Self, LabelSelectorError> {
        let mut reqs = Vec::new();
        let s = s.trim();
        if s.is_empty() {
            return Ok(Self::default());
        }
        for part in split_top(s) {
            let p = part.trim();
            let err = || LabelSelectorError(p.to_owned());
            let req = if let Some(k) = p.strip_prefix('!') {
                LabelReq::NotExists(k.trim().to_owned())
            } else if let Some((k, v)) = p.split_once("!=") {
                LabelReq::NotEq(k.trim().to_owned(), v.trim().to_owned())
            } else if let Some((k, v)) = p.split_once("==") {
                LabelReq::Eq(k.trim().to_owned(), v.trim().to_owned())
            } else if let Some((k, v)) = p.split_once('=') {
                LabelReq::Eq(k.trim().to_owned(), v.trim().to_owned())
            } else if let Some((k, set)) = split_set(p, " notin ") {
                LabelReq::NotIn(k, set.ok_or_else(err)?)
            } else if let Some((k, set)) = split_set(p, " in ") {
                LabelReq::In(k, set.ok_or_else(err)?)
            } else {
                LabelReq::Exists(p.to_owned())
            };
            let (key, values): (&str, Vec<&str>) = match &req {
                LabelReq::Eq(k, v) | LabelReq::NotEq(k, v) => (k, vec![v.as_str()]),
                LabelReq::In(k, vs) | LabelReq::NotIn(k, vs) => (k, vs.iter().map(String::as_str).collect()),
                LabelReq::Exists(k) | LabelReq::NotExists(k) => (k, vec![]),
            };
            if !valid_key(key) || !values.iter().all(|v| valid_value(v)) {
                return Err(err());
            }
            reqs.push(req);
        }
        Ok(Self(reqs))
    }

    /// Build from a `metav1.LabelSelector` object (`matchLabels` + `matchExpressions`).
    /// The error is the API server's message for a malformed requirement.
    pub fn from_object(sel: &Value) -> Result<Self, String> {
        let mut reqs = Vec::new();
        let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
        for (k, v) in sel.get("matchLabels").and_then(Value::as_object).into_iter().flatten() {
            reqs.push(LabelReq::Eq(k.clone(), text(v)));
        }
        for e in sel.get("matchExpressions").and_then(Value::as_array).into_iter().flatten() {
            let key = text(&e["key"]);
            let values: Vec<String> = e["values"].as_array().into_iter().flatten().map(text).collect();
            let op = e["operator"].as_str().unwrap_or_default();
            match op {
                "In" | "NotIn" if values.is_empty() => {
                    return Err("for 'in', 'notin' operators, values set can't be empty".into());
                }
                "Exists" | "DoesNotExist" if !values.is_empty() => {
                    return Err("values set must be empty for exists and does not exist".into());
                }
                _ => {}
            }
            reqs.push(match op {
                "In" => LabelReq::In(key, values),
                "NotIn" => LabelReq::NotIn(key, values),
                "Exists" => LabelReq::Exists(key),
                "DoesNotExist" => LabelReq::NotExists(key),
                other => return Err(format!("{other:?} is not a valid label selector operator")),
            });
        }
        Ok(Self(reqs))
    }

    /// Whether labels given as a lookup function satisfy the selector.
    pub fn matches_with<'a>(&self, get: impl Fn(&str) -> Option<&'a str>) -> bool {
        self.0.iter().all(|r| match r {
            LabelReq::Eq(k, v) => get(k) == Some(v.as_str()),
            LabelReq::NotEq(k, v) => get(k) != Some(v.as_str()),
            LabelReq::In(k, vs) => get(k).is_some_and(|x| vs.iter().any(|v| v == x)),
            LabelReq::NotIn(k, vs) => get(k).is_none_or(|x| !vs.iter().any(|v| v == x)),
            LabelReq::Exists(k) => get(k).is_some(),
            LabelReq::NotExists(k) => get(k).is_none(),
        })
    }

    /// Whether the selector selects everything.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether an object's `metadata.labels` satisfy the selector.
    pub fn matches(&self, labels: Option<&Value>) -> bool {
        self.matches_with(|k| labels.and_then(|l| l.get(k)).and_then(Value::as_str))
    }
}

fn split_set(p: &str, op: &str) -> Option<(String, Option<Vec<String>>)> {
    let (k, rest) = p.split_once(op)?;
    let rest = rest.trim();
    let inner = rest.strip_prefix('(').and_then(|r| r.strip_suffix(')'));
    let set = inner.map(|i| i.split(',').map(|v| v.trim().to_owned()).filter(|v| !v.is_empty()).collect());
    Some((k.trim().to_owned(), set))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn label_selector_grammar() {
        let labels = json!({"app": "web", "env": "prod"});
        let m = |s: &str| LabelSelector::parse(s).expect("valid").matches(Some(&labels));
        assert!(m("app=web"));
        assert!(m("app==web,env=prod"));
        assert!(!m("app!=web"));
        assert!(m("env in (prod, staging)"));
        assert!(!m("env notin (prod)"));
        assert!(m("app"));
        assert!(m("!legacy"));
        assert!(!m("!app"));
        assert!(m("tier notin (db)"));
        assert!(LabelSelector::parse("app=we b").is_err());
        assert!(LabelSelector::parse("env in prod").is_err());
    }

    #[test]
    fn label_selector_from_object() {
        let sel = json!({"matchLabels": {"a": "1"}, "matchExpressions": [{"key": "b", "operator": "In", "values": ["x"]}]});
        let s = LabelSelector::from_object(&sel).expect("valid");
        let bad = json!({"matchExpressions": [{"key": "b", "operator": "In"}]});
        assert_eq!(
            LabelSelector::from_object(&bad).err().as_deref(),
            Some("for 'in', 'notin' operators, values set can't be empty")
        );
        assert!(s.matches(Some(&json!({"a": "1", "b": "x"}))));
        assert!(!s.matches(Some(&json!({"a": "1"}))));
    }
}

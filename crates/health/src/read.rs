//! Reading an object's fields by path, with JSON `null` taken as absent (as the API server
//! does) and a value of the wrong type reported as [`Malformed`] rather than defaulted.

use std::fmt;

use serde_json::Value;

/// A field that is there but holds the wrong type of value: the object cannot be judged.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Malformed {
    /// Where, as `status.conditions[2].type`.
    path: String,
    /// What it should have been, with its article: `an integer`.
    expected: &'static str,
}

impl Malformed {
    fn new(path: impl Into<String>, expected: &'static str) -> Malformed {
        Malformed { path: path.into(), expected }
    }

    /// The same field, named from a value that holds the one it was read from.
    pub(crate) fn within(self, prefix: &str) -> Malformed {
        Malformed { path: format!("{prefix}.{}", self.path), ..self }
    }
}

impl fmt::Display for Malformed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} is not {}", self.path, self.expected)
    }
}

/// The value at a dotted `path` below `value`; `None` when a step is missing or `null`.
pub(crate) fn get<'a>(value: &'a Value, path: &str) -> Result<Option<&'a Value>, Malformed> {
    let mut at = value;
    let mut walked = 0;
    for step in path.split('.') {
        match at {
            Value::Null => return Ok(None),
            Value::Object(map) => match map.get(step) {
                Some(next) => at = next,
                None => return Ok(None),
            },
            // The step before this one (`walked` counts its dot), or the value itself.
            _ if walked == 0 => return Err(Malformed::new("the value", "an object")),
            _ => return Err(Malformed::new(&path[..walked - 1], "an object")),
        }
        walked += step.len() + 1;
    }
    Ok((!at.is_null()).then_some(at))
}

/// An integer field (a count, a generation).
pub(crate) fn int(value: &Value, path: &str) -> Result<Option<i64>, Malformed> {
    get(value, path)?.map(|v| v.as_i64().ok_or_else(|| Malformed::new(path, "an integer"))).transpose()
}

/// A string field.
pub(crate) fn string<'a>(value: &'a Value, path: &str) -> Result<Option<&'a str>, Malformed> {
    get(value, path)?.map(|v| v.as_str().ok_or_else(|| Malformed::new(path, "a string"))).transpose()
}

/// A boolean field.
pub(crate) fn boolean(value: &Value, path: &str) -> Result<Option<bool>, Malformed> {
    get(value, path)?.map(|v| v.as_bool().ok_or_else(|| Malformed::new(path, "a boolean"))).transpose()
}

/// A list field; absent is empty.
pub(crate) fn list<'a>(value: &'a Value, path: &str) -> Result<&'a [Value], Malformed> {
    match get(value, path)? {
        None => Ok(&[]),
        Some(v) => v.as_array().map(Vec::as_slice).ok_or_else(|| Malformed::new(path, "a list")),
    }
}

/// The entries of a list field that must hold objects, each with its path
/// (`status.containerStatuses[1]`) to name it in a [`Malformed`] below it.
pub(crate) fn entries<'a>(value: &'a Value, path: &str) -> Result<Vec<(String, &'a Value)>, Malformed> {
    list(value, path)?
        .iter()
        .enumerate()
        .map(|(i, entry)| {
            let at = format!("{path}[{i}]");
            if entry.is_object() { Ok((at, entry)) } else { Err(Malformed::new(at, "an object")) }
        })
        .collect()
}

/// One entry of `status.conditions`, with absent fields empty as kstatus reads them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Condition<'a> {
    pub(crate) type_: &'a str,
    pub(crate) status: &'a str,
    pub(crate) reason: &'a str,
    pub(crate) message: &'a str,
}

impl<'a> Condition<'a> {
    /// Whether the condition is `type_` with status `True`.
    pub(crate) fn is_true(&self, type_: &str) -> bool {
        self.type_ == type_ && self.status == "True"
    }

    /// The condition's reason, or `fallback` when it gives none.
    pub(crate) fn reason_or<'b>(&'b self, fallback: &'b str) -> &'b str {
        if self.reason.is_empty() { fallback } else { self.reason }
    }

    /// The condition's message, trimmed and without a final period, to go into ours.
    pub(crate) fn message(&self) -> &'a str {
        let text = self.message.trim();
        text.strip_suffix('.').unwrap_or(text).trim_end()
    }

    /// [`Condition::message`], or `fallback` when it is empty.
    pub(crate) fn message_or(&self, fallback: &str) -> String {
        let text = self.message();
        if text.is_empty() { fallback.to_owned() } else { text.to_owned() }
    }
}

/// An object [`crate::health`] can judge: JSON with string `apiVersion` and `kind`.
pub(crate) struct Object<'a> {
    pub(crate) value: &'a Value,
    /// The API group: `apps`, `batch`, `""` for the core group.
    pub(crate) group: &'a str,
    pub(crate) kind: &'a str,
}

impl<'a> Object<'a> {
    /// Checks that `value` is an object with a string `apiVersion` and `kind`; the error
    /// says what is missing.
    pub(crate) fn new(value: &'a Value) -> Result<Object<'a>, String> {
        let map = value.as_object().ok_or("not an object")?;
        let text = |name: &str| match map.get(name) {
            None | Some(Value::Null) => Err(format!("the object has no {name}")),
            Some(Value::String(s)) => Ok(s.as_str()),
            Some(_) => Err(format!("the object's {name} is not a string")),
        };
        let api_version = text("apiVersion")?;
        let kind = text("kind")?;
        let group = ctop_core::group_of(api_version);
        Ok(Object { value, group, kind })
    }

    pub(crate) fn int(&self, path: &str) -> Result<Option<i64>, Malformed> {
        int(self.value, path)
    }

    pub(crate) fn string(&self, path: &str) -> Result<Option<&'a str>, Malformed> {
        string(self.value, path)
    }

    pub(crate) fn boolean(&self, path: &str) -> Result<Option<bool>, Malformed> {
        boolean(self.value, path)
    }

    pub(crate) fn list(&self, path: &str) -> Result<&'a [Value], Malformed> {
        list(self.value, path)
    }

    /// `status.conditions`, in their order. Every object's are read (by the generic rules),
    /// so malformed conditions make any object `Unknown`, as they make kstatus fail.
    pub(crate) fn conditions(&self) -> Result<Vec<Condition<'a>>, Malformed> {
        entries(self.value, "status.conditions")?
            .into_iter()
            .map(|(at, entry)| {
                let text = |name: &str| {
                    string(entry, name).map(Option::unwrap_or_default).map_err(|e| e.within(&at))
                };
                Ok(Condition {
                    type_: text("type")?,
                    status: text("status")?,
                    reason: text("reason")?,
                    message: text("message")?,
                })
            })
            .collect()
    }

    /// The first condition of `type_` whose status is `True`.
    pub(crate) fn true_condition(&self, type_: &str) -> Result<Option<Condition<'a>>, Malformed> {
        Ok(self.conditions()?.into_iter().find(|c| c.is_true(type_)))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn paths_read_through_objects_and_stop_at_null() {
        let v = json!({"status": {"replicas": 3, "phase": "Bound", "gone": null, "ok": true}, "spec": null});
        assert_eq!(int(&v, "status.replicas"), Ok(Some(3)));
        assert_eq!(string(&v, "status.phase"), Ok(Some("Bound")));
        assert_eq!(boolean(&v, "status.ok"), Ok(Some(true)));
        assert_eq!(int(&v, "status.gone"), Ok(None));
        assert_eq!(int(&v, "status.missing"), Ok(None));
        assert_eq!(int(&v, "spec.replicas"), Ok(None));
        assert_eq!(list(&v, "status.list"), Ok(&[][..]));
    }

    #[test]
    fn a_value_of_the_wrong_type_is_named_by_its_path() {
        let v = json!({"status": {"replicas": "3", "half": 1.5, "phase": 1, "conditions": {}}, "spec": "x"});
        let err = |r: Result<Option<i64>, Malformed>| r.expect_err("malformed").to_string();
        assert_eq!(err(int(&v, "status.replicas")), "status.replicas is not an integer");
        assert_eq!(err(int(&v, "status.half")), "status.half is not an integer");
        assert_eq!(err(int(&v, "spec.replicas")), "spec is not an object");
        assert_eq!(err(int(&v, "status.phase.x.y")), "status.phase is not an object");
        assert_eq!(
            string(&v, "status.phase").expect_err("malformed").to_string(),
            "status.phase is not a string"
        );
        assert_eq!(
            list(&v, "status.conditions").expect_err("malformed").to_string(),
            "status.conditions is not a list"
        );
    }

    #[test]
    fn conditions_read_as_kstatus_reads_them() {
        let v = json!({"apiVersion": "example.com/v1", "kind": "Thing", "status": {"conditions": [
            {"type": "Ready", "status": "False", "reason": "Waiting", "message": "Waiting for the database. "},
            {"type": "Synced"},
        ]}});
        let object = Object::new(&v).expect("an object");
        assert_eq!((object.group, object.kind), ("example.com", "Thing"));
        let conditions = object.conditions().expect("readable");
        assert_eq!(conditions.len(), 2);
        assert_eq!(conditions[0].message_or("x"), "Waiting for the database");
        assert_eq!(
            (conditions[1].status, conditions[1].reason_or("None"), conditions[1].message_or("none")),
            ("", "None", "none".to_owned())
        );
        let bad = json!({"apiVersion": "v1", "kind": "Thing", "status": {"conditions": [{"type": "Ready"}, {"type": true}]}});
        let err = Object::new(&bad).expect("an object").conditions().expect_err("malformed");
        assert_eq!(err.to_string(), "status.conditions[1].type is not a string");
        let bad = json!({"apiVersion": "v1", "kind": "Thing", "status": {"conditions": ["Ready"]}});
        let err = Object::new(&bad).expect("an object").conditions().expect_err("malformed");
        assert_eq!(err.to_string(), "status.conditions[0] is not an object");
    }
}

//! Round trips of an object through the versions of its resource: converted to every other
//! version and back, it must come back unchanged, or a field was lost on the way (a
//! conversion that drops what its version cannot hold must keep it, e.g. in an annotation, as
//! the kubebuilder book's conversions do). `ctop test`'s `conversion-round-trip` oracle and
//! `ctop check` (on every sample) run [`ScriptHandlers::round_trip`].

use ctop_core::ResourceSpec;
use serde_json::Value;

use crate::ScriptHandlers;

/// Why an object does not survive a round trip.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum RoundTripError {
    /// A conversion failed.
    #[error("converting it to {to} failed: {message}")]
    Failed {
        /// The `apiVersion` it was converted to.
        to: String,
        /// The script's error.
        message: String,
    },
    /// It came back different.
    #[error("{path} {} on the way through {via} and back", change(.before.as_ref(), .after.as_ref()))]
    Changed {
        /// The `apiVersion` it went through.
        via: String,
        /// The first field that differs, e.g. `spec.schedule.timeZone`.
        path: String,
        /// Its value before (`None`: absent).
        before: Option<Value>,
        /// Its value after.
        after: Option<Value>,
    },
}

fn change(before: Option<&Value>, after: Option<&Value>) -> String {
    match (before, after) {
        (Some(b), None) => format!("was lost (it was {b})"),
        (None, Some(a)) => format!("appeared ({a})"),
        (Some(b), Some(a)) => format!("changed from {b} to {a}"),
        (None, None) => "changed".into(),
    }
}

impl ScriptHandlers {
    /// Convert `object` (of `resource`, in any of its versions) to each other version of the
    /// resource and back to its own, and check it comes back unchanged.
    ///
    /// # Errors
    /// The first conversion that failed, or the first field that came back different.
    pub fn round_trip(&self, resource: &ResourceSpec, object: &Value) -> Result<(), RoundTripError> {
        let own = object["apiVersion"].as_str().unwrap_or_default().to_owned();
        for version in resource.all_versions() {
            let via = resource.api_version_of(&version.name);
            if via == own {
                continue;
            }
            let convert = |to: &str, obj: &Value| {
                let mut out = self
                    .convert(to, std::slice::from_ref(obj))
                    .map_err(|message| RoundTripError::Failed { to: to.to_owned(), message })?;
                Ok::<Value, RoundTripError>(out.pop().unwrap_or(Value::Null))
            };
            let there = convert(&via, object)?;
            let back = convert(&own, &there)?;
            if let Some((path, before, after)) = first_difference(object, &back, "") {
                return Err(RoundTripError::Changed { via, path, before, after });
            }
        }
        Ok(())
    }
}

/// The first path (`a.b[2].c`) where `a` and `b` differ, with the values there.
fn first_difference(a: &Value, b: &Value, path: &str) -> Option<(String, Option<Value>, Option<Value>)> {
    let here = |p: &str| if p.is_empty() { "the object".to_owned() } else { p.to_owned() };
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
            keys.sort();
            keys.dedup();
            keys.into_iter().find_map(|k| {
                let p = if path.is_empty() { k.clone() } else { format!("{path}.{k}") };
                match (x.get(k), y.get(k)) {
                    (Some(v), Some(w)) => first_difference(v, w, &p),
                    (v, w) => Some((p, v.cloned(), w.cloned())),
                }
            })
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .find_map(|(i, (v, w))| first_difference(v, w, &format!("{path}[{i}]"))),
        _ if a == b => None,
        _ => Some((here(path), Some(a.clone()), Some(b.clone()))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_first_difference_names_the_field() {
        let a = json!({"spec": {"schedule": {"minute": "1", "timeZone": "UTC"}, "list": [1, 2]}});
        let lost = json!({"spec": {"schedule": {"minute": "1"}, "list": [1, 2]}});
        assert_eq!(
            first_difference(&a, &lost, ""),
            Some(("spec.schedule.timeZone".into(), Some(json!("UTC")), None))
        );
        let item = json!({"spec": {"schedule": {"minute": "1", "timeZone": "UTC"}, "list": [1, 3]}});
        assert_eq!(
            first_difference(&a, &item, ""),
            Some(("spec.list[1]".into(), Some(json!(2)), Some(json!(3))))
        );
        assert_eq!(first_difference(&a, &a.clone(), ""), None);
        let e = RoundTripError::Changed {
            via: "batch.example.com/v1".into(),
            path: "spec.schedule.timeZone".into(),
            before: Some(json!("UTC")),
            after: None,
        };
        assert_eq!(
            e.to_string(),
            r#"spec.schedule.timeZone was lost (it was "UTC") on the way through batch.example.com/v1 and back"#
        );
    }
}

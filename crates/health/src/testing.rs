//! Table-driven checks of [`crate::health`] for the tests of every module.

use serde_json::{Value, json};

use crate::{Status, health};

/// One row of a table: an object and the health it must get.
pub(crate) struct Case {
    name: &'static str,
    object: Value,
    status: Status,
    reason: &'static str,
    message: &'static str,
}

impl Case {
    pub(crate) fn new(
        name: &'static str,
        object: Value,
        status: Status,
        reason: &'static str,
        message: &'static str,
    ) -> Case {
        Case { name, object, status, reason, message }
    }
}

/// A case of a field of the wrong type: `Unknown`, reason `MalformedField`, and `message`
/// naming the field.
pub(crate) fn malformed(name: &'static str, object: Value, message: &'static str) -> Case {
    Case::new(name, object, Status::Unknown, "MalformedField", message)
}

/// Judges every case and fails naming each one that came out otherwise.
pub(crate) fn check(cases: &[Case]) {
    let wrong: Vec<String> = cases
        .iter()
        .filter_map(|case| {
            let got = health(&case.object);
            let want = (case.status, case.reason, case.message);
            (want != (got.status, got.reason.as_str(), got.message.as_str())).then(|| {
                format!("{}: want {want:?}, got {:?}", case.name, (got.status, got.reason, got.message))
            })
        })
        .collect();
    assert!(wrong.is_empty(), "{} of {} cases wrong:\n{}", wrong.len(), cases.len(), wrong.join("\n"));
}

/// An object of `apiVersion` and `kind` named `x` at generation 1, with the fields of
/// `rest` (`spec`, `status`, `metadata` replaces the default).
pub(crate) fn object(api_version: &str, kind: &str, rest: Value) -> Value {
    let mut out =
        json!({"apiVersion": api_version, "kind": kind, "metadata": {"name": "x", "generation": 1}});
    if let (Some(out), Value::Object(rest)) = (out.as_object_mut(), rest) {
        out.extend(rest);
    }
    out
}

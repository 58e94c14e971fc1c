//! Label and field selectors, parsed from the `labelSelector` and `fieldSelector` query
//! parameters with the real grammar and error messages. The label grammar lives in
//! `ctop-core` (the runtime filters shared watches with it too).

use serde_json::Value;

pub use ctop_core::LabelSelector;

/// Why a field selector could not be parsed (answered as 400 BadRequest).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SelectorError {
    /// The field selector is malformed.
    #[error("invalid field selector: {0}")]
    Field(String),
    /// The field selector names a field this kind does not support.
    #[error("field label not supported: {0}")]
    UnsupportedField(String),
}

/// A parsed field selector: `metadata.name=x,status.phase!=Running`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldSelector(Vec<(String, bool, String)>);

impl FieldSelector {
    /// Parse and check the fields against those `kind` supports.
    pub fn parse(s: &str, kind: &str) -> Result<Self, SelectorError> {
        let mut out = Vec::new();
        let s = s.trim();
        if s.is_empty() {
            return Ok(Self::default());
        }
        for part in s.split(',') {
            let (field, eq, value) = if let Some((f, v)) = part.split_once("!=") {
                (f, false, v)
            } else if let Some((f, v)) = part.split_once("==") {
                (f, true, v)
            } else if let Some((f, v)) = part.split_once('=') {
                (f, true, v)
            } else {
                return Err(SelectorError::Field(format!(
                    "invalid selector: '{part}'; can't understand '{part}'"
                )));
            };
            let field = field.trim();
            if !supported_field(kind, field) {
                return Err(SelectorError::UnsupportedField(field.to_owned()));
            }
            out.push((field.to_owned(), eq, value.trim().to_owned()));
        }
        Ok(Self(out))
    }

    /// Whether `obj` satisfies every requirement.
    pub fn matches(&self, obj: &Value) -> bool {
        self.0.iter().all(|(field, eq, value)| {
            let v = field_value(obj, field);
            (v.as_deref() == Some(value.as_str()) || (v.is_none() && value.is_empty())) == *eq
        })
    }

    /// The value required for `metadata.name`, when the selector pins one (used to
    /// answer single-object watches quickly).
    pub fn pinned_name(&self) -> Option<&str> {
        self.0.iter().find(|(f, eq, _)| f == "metadata.name" && *eq).map(|(_, _, v)| v.as_str())
    }
}

fn supported_field(kind: &str, field: &str) -> bool {
    if matches!(field, "metadata.name" | "metadata.namespace") {
        return true;
    }
    let extra: &[&str] = match kind {
        "Pod" => &[
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.nominatedNodeName",
        ],
        "Event" => &[
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source",
            "type",
            "regarding.kind",
            "regarding.name",
            "regarding.namespace",
            "regarding.uid",
        ],
        "Secret" => &["type"],
        "Namespace" => &["status.phase"],
        "Node" => &["spec.unschedulable"],
        "Job" => &["status.successful"],
        "ReplicaSet" | "ReplicationController" => &["status.replicas"],
        _ => &[],
    };
    extra.contains(&field)
}

fn field_value(obj: &Value, field: &str) -> Option<String> {
    let mut cur = obj;
    let path = match field {
        "source" => "source.component",
        f => f,
    };
    for seg in path.split('.') {
        cur = cur.get(seg)?;
    }
    match cur {
        Value::String(s) => Some(s.clone()),
        Value::Null => None,
        other => Some(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn field_selectors() {
        let pod = json!({"metadata": {"name": "p", "namespace": "default"}, "status": {"phase": "Running"}});
        let s = FieldSelector::parse("metadata.name=p,status.phase!=Pending", "Pod").expect("valid");
        assert!(s.matches(&pod));
        assert_eq!(s.pinned_name(), Some("p"));
        assert_eq!(
            FieldSelector::parse("spec.foo=x", "ConfigMap"),
            Err(SelectorError::UnsupportedField("spec.foo".into()))
        );
    }
}

//! Object metadata rules shared by every kind: names, labels, timestamps, generated names.

use ctop_core::is_dns_label;
use rand::RngExt as _;
use serde_json::{Value, json};

use crate::error::StatusCause;

/// The string at `key` of a JSON object, or `""` when it is absent or not a string.
pub(crate) fn str_at<'v>(value: &'v Value, key: &str) -> &'v str {
    value.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// The string at a JSON `pointer` (`/metadata/name`), or `""` when it is absent or not a
/// string.
pub(crate) fn str_at_pointer<'v>(value: &'v Value, pointer: &str) -> &'v str {
    value.pointer(pointer).and_then(Value::as_str).unwrap_or_default()
}

/// The current time as the API server writes `creationTimestamp` (RFC 3339, seconds, UTC).
pub fn now() -> String {
    crate::clock::timestamp().strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// A `generateName` suffix: five characters from the API server's alphabet.
pub fn name_suffix() -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut rng = rand::rng();
    (0..5).map(|_| char::from(ALPHABET[rng.random_range(0..ALPHABET.len())])).collect()
}

/// The finalizers of an object.
pub fn finalizers(obj: &Value) -> Vec<String> {
    obj.pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect())
        .unwrap_or_default()
}

/// Whether deletion of an object is pending (it has a `deletionTimestamp`).
pub fn deleting(obj: &Value) -> bool {
    obj.pointer("/metadata/deletionTimestamp").is_some_and(|v| !v.is_null())
}

/// Drop the metadata collections that are empty or null, as the API server does: it keeps
/// `metadata` in Go's `ObjectMeta` (`k8s.io/apimachinery/pkg/apis/meta/v1/types.go`, whose
/// `labels`, `annotations`, `ownerReferences`, `finalizers` and `managedFields` are
/// `omitempty`). Built-in objects are encoded from that type; a custom resource's metadata
/// is round-tripped through it on every decode (`apiextensions-apiserver`
/// `pkg/apiserver/schema/objectmeta/coerce.go`: `GetObjectMeta`, then `SetObjectMeta`, whose
/// `runtime.DefaultUnstructuredConverter.ToUnstructured` skips zero `omitempty` fields in
/// `k8s.io/apimachinery/pkg/runtime/converter.go`). So a server-side apply that removes the
/// last label leaves no `labels: {}` behind, and a JSON patch that empties the finalizers
/// leaves no `finalizers: []`.
pub fn omit_empty(obj: &mut Value) {
    const COLLECTIONS: [&str; 5] =
        ["labels", "annotations", "ownerReferences", "finalizers", "managedFields"];
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        for f in COLLECTIONS {
            let empty = match meta.get(f) {
                Some(Value::Null) => true,
                Some(Value::Object(m)) => m.is_empty(),
                Some(Value::Array(a)) => a.is_empty(),
                _ => false,
            };
            if empty {
                meta.remove(f);
            }
        }
    }
}

/// A fresh uid (v4).
pub fn new_uid() -> String {
    uuid::Uuid::new_v4().to_string()
}

const SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const DNS1035_MSG: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";

/// RFC 1123 subdomain as Kubernetes checks it: the regex's dot-separated parts, 253
/// characters in all (a part alone is not limited to 63, unlike a DNS label).
fn is_subdomain(s: &str) -> bool {
    s.len() <= 253 && subdomain_shape(s)
}

/// The regex of an RFC 1123 subdomain, without its length limit.
fn subdomain_shape(s: &str) -> bool {
    !s.is_empty()
        && s.split('.').all(|part| {
            !part.is_empty()
                && part.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !part.starts_with('-')
                && !part.ends_with('-')
        })
}

/// apimachinery's `IsDNS1035Label`: what is wrong with `s` as a DNS-1035 label, in its words.
pub fn dns1035_label_errors(s: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if s.len() > 63 {
        errors.push("must be no more than 63 characters".to_owned());
    }
    let regex_ok = s.starts_with(|c: char| c.is_ascii_lowercase())
        && s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.ends_with('-');
    if !regex_ok {
        errors.push(DNS1035_MSG.to_owned());
    }
    errors
}

/// apimachinery's `IsDNS1123Subdomain`: what is wrong with `s` as a subdomain, in its words.
pub fn dns1123_subdomain_errors(s: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if s.len() > 253 {
        errors.push("must be no more than 253 characters".to_owned());
    }
    if !subdomain_shape(s) {
        errors.push(SUBDOMAIN_MSG.to_owned());
    }
    errors
}

/// Which name rule a kind follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NameRule {
    /// RFC 1123 subdomain (most kinds).
    Subdomain,
    /// RFC 1123 label (Namespace).
    Label,
    /// RFC 1035 label (Service).
    Dns1035,
    /// Any path segment (RBAC kinds allow `system:foo`).
    PathSegment,
}

/// The name rule of a kind.
pub fn name_rule(group: &str, kind: &str) -> NameRule {
    match (group, kind) {
        ("", "Namespace") => NameRule::Label,
        ("", "Service") => NameRule::Dns1035,
        ("rbac.authorization.k8s.io", _) => NameRule::PathSegment,
        _ => NameRule::Subdomain,
    }
}

/// Problems with `metadata.name`, `labels` and `annotations`.
pub fn validate_metadata(meta: &Value, rule: NameRule) -> Vec<StatusCause> {
    let mut causes = Vec::new();
    let invalid = |field: &str, value: &str, msg: &str| StatusCause {
        reason: "FieldValueInvalid".into(),
        message: format!("Invalid value: {}: {msg}", json!(value)),
        field: field.into(),
    };
    if let Some(name) = meta.get("name").and_then(Value::as_str) {
        let problem = match rule {
            NameRule::Subdomain if !is_subdomain(name) => Some(SUBDOMAIN_MSG),
            NameRule::Label if !is_dns_label(name) => Some(LABEL_MSG),
            NameRule::Dns1035
                if !is_dns_label(name) || !name.starts_with(|c: char| c.is_ascii_lowercase()) =>
            {
                Some(DNS1035_MSG)
            }
            NameRule::PathSegment if name == "." || name == ".." || name.contains(['/', '%']) => {
                Some("may not contain '/' or '%'")
            }
            _ => None,
        };
        if let Some(msg) = problem {
            causes.push(invalid("metadata.name", name, msg));
        }
    }
    if let Some(labels) = meta.get("labels").and_then(Value::as_object) {
        for (k, v) in labels {
            if !qualified_name_ok(k) {
                causes.push(invalid("metadata.labels", k, "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"));
            }
            match v.as_str() {
                Some(s) if label_value_ok(s) => {}
                _ => {
                    let shown = v.as_str().map_or_else(|| v.to_string(), str::to_owned);
                    causes.push(invalid("metadata.labels", &shown, "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"));
                }
            }
        }
    }
    // apimachinery's ValidateFinalizerName (api/validation/objectmeta.go): each finalizer is
    // a qualified name, reported on `metadata.finalizers` with IsQualifiedName's message.
    for f in meta.get("finalizers").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str)
    {
        if !qualified_name_ok(f) {
            causes.push(invalid("metadata.finalizers", f, "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"));
        }
    }
    if let Some(ann) = meta.get("annotations").and_then(Value::as_object) {
        for (k, v) in ann {
            if !qualified_name_ok(k) {
                causes.push(invalid("metadata.annotations", k, "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"));
            }
            if !v.is_string() {
                causes.push(StatusCause {
                    reason: "FieldValueTypeInvalid".into(),
                    message: format!("Invalid value: {v}: must be a string"),
                    field: format!("metadata.annotations.{k}"),
                });
            }
        }
    }
    causes
}

fn label_value_ok(v: &str) -> bool {
    v.is_empty()
        || (v.len() <= 63
            && v.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
            && v.starts_with(|c: char| c.is_ascii_alphanumeric())
            && v.ends_with(|c: char| c.is_ascii_alphanumeric()))
}

fn qualified_name_ok(k: &str) -> bool {
    let (prefix, name) = match k.rsplit_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, k),
    };
    prefix.is_none_or(is_subdomain) && !name.is_empty() && label_value_ok(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_kind_rules() {
        let bad = |name: &str, rule| !validate_metadata(&json!({"name": name}), rule).is_empty();
        assert!(!bad("web-1.example", NameRule::Subdomain));
        assert!(bad("Web", NameRule::Subdomain));
        assert!(bad("a.b", NameRule::Label));
        assert!(bad("1abc", NameRule::Dns1035));
        assert!(!bad("system:discovery", NameRule::PathSegment));
        let causes = validate_metadata(&json!({"name": "Bad"}), NameRule::Subdomain);
        assert_eq!(causes[0].field, "metadata.name");
        assert!(causes[0].message.starts_with("Invalid value: \"Bad\": a lowercase RFC 1123 subdomain"));
    }

    #[test]
    fn labels_are_checked() {
        assert!(
            validate_metadata(&json!({"labels": {"app.kubernetes.io/name": "web"}}), NameRule::Subdomain)
                .is_empty()
        );
        assert_eq!(validate_metadata(&json!({"labels": {"app": "has space"}}), NameRule::Subdomain).len(), 1);
        assert_eq!(validate_metadata(&json!({"labels": {"app": 3}}), NameRule::Subdomain).len(), 1);
    }

    #[test]
    fn finalizers_are_qualified_names() {
        let ok = json!({"finalizers": ["children.ctop.dev/webapp", "kubernetes", "foregroundDeletion"]});
        assert!(validate_metadata(&ok, NameRule::Subdomain).is_empty());
        let causes =
            validate_metadata(&json!({"finalizers": ["children.ctop.dev/my op"]}), NameRule::Subdomain);
        assert_eq!(causes.len(), 1);
        assert_eq!(causes[0].field, "metadata.finalizers");
        assert!(causes[0].message.starts_with("Invalid value: \"children.ctop.dev/my op\": name part must"));
    }

    #[test]
    fn generated_suffix_uses_alphabet() {
        let s = name_suffix();
        assert_eq!(s.len(), 5);
        assert!(s.bytes().all(|b| b"bcdfghjklmnpqrstvwxz2456789".contains(&b)));
    }
}

#[cfg(test)]
mod subdomain_tests {
    #[test]
    fn a_subdomain_part_may_be_longer_than_a_label() {
        let long = format!("nginx-deployment-{}-5999959f9c", "a".repeat(36));
        assert!(long.len() > 63);
        assert!(super::is_subdomain(&long));
        assert!(!super::is_dns_label(&long));
        assert!(!super::is_subdomain(&"a".repeat(254)));
        assert!(!super::is_subdomain("a..b") && !super::is_subdomain("-a") && !super::is_subdomain("A"));
    }
}

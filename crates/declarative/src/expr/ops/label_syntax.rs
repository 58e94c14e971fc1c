//! The syntax of label keys and values, checked as Kubernetes' apimachinery checks a
//! label selector's requirements (`metav1.LabelSelectorAsSelector`, which Δ-controller's
//! `@selector` calls): a key is a qualified name (`[prefix/]name`), a value is empty or a
//! name, and each operator takes the values it takes. The messages use apimachinery's
//! words, so an operator author sees what `kubectl` and Δ-controller would say.

/// `[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?`: a qualified name's name part, and every
/// non-empty label value.
const NAME_REGEX: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const NAME_RULE: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const VALUE_REGEX: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const VALUE_RULE: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const SUBDOMAIN_REGEX: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const SUBDOMAIN_RULE: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
/// The longest name part and label value.
const MAX_NAME: usize = 63;
/// The longest key prefix.
const MAX_SUBDOMAIN: usize = 253;

/// A rule broken, with examples and the regular expression, as apimachinery words it.
fn regex_error(rule: &str, regex: &str, examples: &[&str]) -> String {
    let examples: Vec<String> = examples.iter().map(|e| format!("'{e}', ")).collect();
    format!("{rule} (e.g. {}regex used for validation is '{regex}')", examples.join("or "))
}

fn too_long(max: usize) -> String {
    format!("must be no more than {max} characters")
}

/// Whether `s` is non-empty, starts and ends with a character `edge` accepts, and has
/// only characters `edge` or `inner` accept.
fn shaped(s: &str, edge: fn(char) -> bool, inner: fn(char) -> bool) -> bool {
    let (Some(first), Some(last)) = (s.chars().next(), s.chars().last()) else { return false };
    edge(first) && edge(last) && s.chars().all(|c| edge(c) || inner(c))
}

fn is_name(s: &str) -> bool {
    shaped(s, |c| c.is_ascii_alphanumeric(), |c| matches!(c, '-' | '_' | '.'))
}

fn is_subdomain(s: &str) -> bool {
    s.split('.').all(|label| shaped(label, |c| c.is_ascii_lowercase() || c.is_ascii_digit(), |c| c == '-'))
}

/// What is wrong with a label key (a qualified name); empty when nothing.
pub(super) fn key_errors(key: &str) -> Vec<String> {
    let name_examples = ["MyName", "my.name", "123-abc"];
    let mut errs = Vec::new();
    let parts: Vec<&str> = key.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else {
                if prefix.len() > MAX_SUBDOMAIN {
                    errs.push(format!("prefix part {}", too_long(MAX_SUBDOMAIN)));
                }
                if !is_subdomain(prefix) {
                    let e = regex_error(SUBDOMAIN_RULE, SUBDOMAIN_REGEX, &["example.com"]);
                    errs.push(format!("prefix part {e}"));
                }
            }
            *name
        }
        _ => {
            let e = regex_error(NAME_RULE, NAME_REGEX, &name_examples);
            return vec![format!(
                "a qualified name {e} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
            )];
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_string());
    } else if name.len() > MAX_NAME {
        errs.push(format!("name part {}", too_long(MAX_NAME)));
    }
    if !is_name(name) {
        errs.push(format!("name part {}", regex_error(NAME_RULE, NAME_REGEX, &name_examples)));
    }
    errs
}

/// What is wrong with a label value; empty when nothing.
pub(super) fn value_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > MAX_NAME {
        errs.push(too_long(MAX_NAME));
    }
    if !value.is_empty() && !is_name(value) {
        errs.push(regex_error(VALUE_RULE, VALUE_REGEX, &["MyValue", "my_value", "12345"]));
    }
    errs
}

/// Checks one requirement (`key`, an operator, its values) as apimachinery's
/// `labels.NewRequirement` does; `Err` is its message, all faults listed.
pub(super) fn check_requirement(key: &str, op: &str, values: &[String]) -> Result<(), String> {
    let mut faults = Vec::new();
    let invalid_values = || {
        let quoted: Vec<String> = values.iter().map(|v| format!("{v:?}")).collect();
        if values.is_empty() {
            "[]string(nil)".to_string()
        } else {
            format!("[]string{{{}}}", quoted.join(", "))
        }
    };
    let errs = key_errors(key);
    if !errs.is_empty() {
        faults.push(format!("key: Invalid value: {key:?}: {}", errs.join("; ")));
    }
    let count_fault = match op {
        "In" | "NotIn" if values.is_empty() => Some("for 'in', 'notin' operators, values set can't be empty"),
        "=" if values.len() != 1 => Some("exact-match compatibility requires one single value"),
        "Exists" | "DoesNotExist" if !values.is_empty() => {
            Some("values set must be empty for exists and does not exist")
        }
        _ => None,
    };
    if let Some(f) = count_fault {
        faults.push(format!("values: Invalid value: {}: {f}", invalid_values()));
    }
    for (i, v) in values.iter().enumerate() {
        let errs = value_errors(v);
        if !errs.is_empty() {
            faults.push(format!("values[{i}][{key}]: Invalid value: {v:?}: {}", errs.join("; ")));
        }
    }
    match faults.len() {
        0 => Ok(()),
        1 => Err(faults.remove(0)),
        _ => Err(format!("[{}]", faults.join(", "))),
    }
}

#[cfg(test)]
mod tests {
    use super::{check_requirement, key_errors, value_errors};

    #[test]
    fn keys() {
        for ok in ["app", "app.kubernetes.io/name", "a", "A-b_c.d", "example.com/X"] {
            assert!(key_errors(ok).is_empty(), "{ok}");
        }
        assert_eq!(key_errors("-app").len(), 1);
        assert_eq!(key_errors("").len(), 2, "empty and not matching");
        assert!(key_errors("Example.com/x")[0].starts_with("prefix part a lowercase RFC 1123 subdomain"));
        assert!(key_errors("/x")[0].starts_with("prefix part must be non-empty"));
        assert!(key_errors("a/b/c")[0].starts_with("a qualified name must consist"));
        assert!(key_errors(&"x".repeat(64))[0].contains("no more than 63 characters"));
    }

    #[test]
    fn values() {
        for ok in ["", "nginx", "1.2.3", "a_b"] {
            assert!(value_errors(ok).is_empty(), "{ok}");
        }
        assert!(value_errors("has space")[0].starts_with("a valid label must be an empty string"));
        assert_eq!(value_errors(&format!("{}-", "x".repeat(64))).len(), 2);
    }

    #[test]
    fn requirements() {
        let vals = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(check_requirement("app", "In", &vals(&["a"])).is_ok());
        assert_eq!(
            check_requirement("app", "In", &[]).unwrap_err(),
            "values: Invalid value: []string(nil): for 'in', 'notin' operators, values set can't be empty"
        );
        assert_eq!(
            check_requirement("app", "Exists", &vals(&["a"])).unwrap_err(),
            "values: Invalid value: []string{\"a\"}: values set must be empty for exists and does not exist"
        );
        let e = check_requirement("bad key", "In", &vals(&["ok", "not ok"])).unwrap_err();
        assert!(e.starts_with("[key: Invalid value: \"bad key\": name part must consist"), "{e}");
        assert!(e.contains(", values[1][bad key]: Invalid value: \"not ok\": a valid label"), "{e}");
    }
}

//! Label and field selectors, parsed from the `labelSelector` and `fieldSelector` query
//! parameters with the real grammar and error messages. The label grammar lives in
//! `ctop-core` (the runtime filters shared watches with it too).

use serde_json::Value;

pub use ctop_core::LabelSelector;

/// Parse a `labelSelector` query parameter, refusing an empty term in the words of
/// apimachinery's `labels/selector.go` parser (`found '', expected: identifier after ','`
/// for a trailing comma, `found ',', ...` for two commas in a row or a leading one), which
/// unlike the field selector's parser does not skip them. Other terms are parsed by
/// `ctop-core`'s grammar, which reports them in its own words.
pub fn parse_labels(s: &str) -> Result<LabelSelector, String> {
    let terms = split_label_terms(s);
    let blank = |t: &str| t.trim_matches([' ', '\t', '\r', '\n']).is_empty();
    if terms.len() > 1
        && let Some(i) = terms.iter().position(|t| blank(t))
    {
        if i == 0 {
            return Err("found ',', expected: !, identifier, or 'end of string'".to_owned());
        }
        // A term before the empty one that does not parse is reported first.
        LabelSelector::parse(&terms[..i].join(",")).map_err(|e| e.to_string())?;
        let found = if i + 1 == terms.len() { "" } else { "," };
        return Err(format!("found '{found}', expected: identifier after ','"));
    }
    LabelSelector::parse(s).map_err(|e| e.to_string())
}

/// The terms of a label selector: split on the commas outside parentheses.
fn split_label_terms(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
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

/// Why a field selector could not be parsed (answered as 400 BadRequest), in the words of
/// apimachinery's `fields/selector.go` and of the API server's field label conversion.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SelectorError {
    /// A term has no `=`, `==` or `!=`.
    #[error("invalid selector: '{selector}'; can't understand '{term}'")]
    Term {
        /// The whole selector, as the request gave it.
        selector: String,
        /// The term that has no operator.
        term: String,
    },
    /// A value holds a backslash that escapes neither `\\`, `,` nor `=`.
    #[error("invalid field selector: invalid escape sequence: {0}")]
    Escape(String),
    /// A value holds an unescaped `,` or `=` (Go prints the rune as its number).
    #[error("invalid field selector: unescaped character in value: {}", u32::from(*.0))]
    Unescaped(char),
    /// The field selector names a field this kind does not support.
    #[error("field label not supported: {0}")]
    UnsupportedField(String),
}

/// A parsed field selector: `metadata.name=x,status.phase!=Running`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldSelector(Vec<(String, bool, String)>);

impl FieldSelector {
    /// Parse as `fields.ParseSelector` does, then check the fields against those `kind`
    /// supports (the API server's field label conversion). Terms are split on unescaped
    /// commas and sorted; empty terms are skipped (`metadata.name=x,` selects like
    /// `metadata.name=x`); nothing is trimmed; values are unescaped.
    pub fn parse(s: &str, kind: &str) -> Result<Self, SelectorError> {
        let mut terms = split_terms(s);
        terms.sort_unstable();
        let mut out = Vec::new();
        for term in terms.into_iter().filter(|t| !t.is_empty()) {
            let Some((field, eq, value)) = split_term(term) else {
                return Err(SelectorError::Term { selector: s.to_owned(), term: term.to_owned() });
            };
            out.push((field.to_owned(), eq, unescape(value)?));
        }
        if let Some((field, _, _)) = out.iter().find(|(f, _, _)| !supported_field(kind, f)) {
            return Err(SelectorError::UnsupportedField(field.clone()));
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

/// `splitTerms`: the terms between commas a backslash does not escape (the backslash kept).
fn split_terms(s: &str) -> Vec<&str> {
    if s.is_empty() {
        return Vec::new();
    }
    let mut terms = Vec::new();
    let (mut start, mut escaped) = (0, false);
    for (i, c) in s.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            ',' => {
                terms.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    terms.push(&s[start..]);
    terms
}

/// `splitTerm`: the field, whether the operator is an equality, and the literal value, split
/// at the first operator (`!=`, `==`, `=`, tried in that order at each position).
fn split_term(term: &str) -> Option<(&str, bool, &str)> {
    for (i, _) in term.char_indices() {
        let rest = &term[i..];
        for (op, eq) in [("!=", false), ("==", true), ("=", true)] {
            if let Some(value) = rest.strip_prefix(op) {
                return Some((&term[..i], eq, value));
            }
        }
    }
    None
}

/// `UnescapeValue`: `\\`, `\,` and `\=` stand for themselves; any other escape, a trailing
/// backslash, or a bare `,` or `=` is refused.
fn unescape(value: &str) -> Result<String, SelectorError> {
    let mut out = String::with_capacity(value.len());
    let mut escaped = false;
    for c in value.chars() {
        if escaped {
            if !matches!(c, '\\' | ',' | '=') {
                return Err(SelectorError::Escape(format!("\\{c}")));
            }
            out.push(c);
            escaped = false;
            continue;
        }
        match c {
            '\\' => escaped = true,
            ',' | '=' => return Err(SelectorError::Unescaped(c)),
            c => out.push(c),
        }
    }
    if escaped {
        return Err(SelectorError::Escape("\\".to_owned()));
    }
    Ok(out)
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

    /// apimachinery `pkg/fields/selector.go` (`parseSelector`, `splitTerms`, `splitTerm`,
    /// `UnescapeValue`): empty terms are skipped, terms are sorted before the first bad one
    /// is named, the whole selector is quoted, and values unescape `\\`, `\,` and `\=`.
    #[test]
    fn field_selector_grammar_of_apimachinery() {
        let pod = json!({"metadata": {"name": "a,b", "namespace": "default"}});
        let parse = |s: &str| FieldSelector::parse(s, "Pod");
        assert_eq!(parse("metadata.name=x,"), parse("metadata.name=x"));
        assert_eq!(parse(",,"), Ok(FieldSelector::default()));
        assert!(parse(r"metadata.name=a\,b").expect("escaped comma").matches(&pod));
        assert_eq!(
            parse("zz,metadata.name=x,aa").map(|_| ()).map_err(|e| e.to_string()),
            Err("invalid selector: 'zz,metadata.name=x,aa'; can't understand 'aa'".into())
        );
        assert_eq!(
            parse(r"metadata.name=a\b").map_err(|e| e.to_string()),
            Err(r"invalid field selector: invalid escape sequence: \b".into())
        );
        assert_eq!(
            parse("metadata.name=a=b").map_err(|e| e.to_string()),
            Err("invalid field selector: unescaped character in value: 61".into())
        );
        // A parse error anywhere comes before an unsupported field, which is named in
        // sorted order; nothing is trimmed.
        assert_eq!(parse("spec.b=1,spec.a=1"), Err(SelectorError::UnsupportedField("spec.a".into())));
        assert_eq!(parse("metadata.name =x"), Err(SelectorError::UnsupportedField("metadata.name ".into())));
    }

    /// apimachinery `pkg/labels/selector.go` `(*Parser).parse`: an empty term is an error.
    #[test]
    fn label_selector_empty_terms_are_refused() {
        assert_eq!(parse_labels("app=x,").err().as_deref(), Some("found '', expected: identifier after ','"));
        assert_eq!(
            parse_labels("app=x, ").err().as_deref(),
            Some("found '', expected: identifier after ','")
        );
        assert_eq!(
            parse_labels("a=x,,b=y").err().as_deref(),
            Some("found ',', expected: identifier after ','")
        );
        assert_eq!(
            parse_labels(",a=x").err().as_deref(),
            Some("found ',', expected: !, identifier, or 'end of string'")
        );
        assert!(parse_labels("env in (a,b),tier=x").is_ok());
        assert!(parse_labels(" ").expect("blank").is_empty());
    }
}

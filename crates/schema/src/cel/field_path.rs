//! A rule's `fieldPath` (`.spec.list`, `.map['key.with.dots']`) checked against the
//! schema and normalized to `field.Path` form (`spec.list`, `map[key.with.dots]`), as
//! `ValidFieldPath` in `apiextensions-apiserver/pkg/apiserver/schema/cel/validation.go`
//! does: named fields must be properties, other names are `additionalProperties` keys,
//! list indices are not allowed.

use serde_json::Value;

use crate::access::{addl_schema, get, has_addl, prop};

/// Why a `fieldPath` is not valid (the server only says `fieldPath must be a valid path`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum FieldPathError {
    /// The path names a field the schema does not have.
    #[error("does not refer to a valid field")]
    NoSuchField,
    /// The path is malformed.
    #[error("{0}")]
    Syntax(&'static str),
}

/// Splits on `.`, `[` and `]`, keeping single-quoted strings whole.
fn tokens(path: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = path.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' if cur.is_empty() => {
                cur.push(c);
                let mut prev = c;
                for n in chars.by_ref() {
                    cur.push(n);
                    if n == '\'' && prev != '\\' {
                        break;
                    }
                    prev = n;
                }
                out.push(std::mem::take(&mut cur));
            }
            '.' | '[' | ']' => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
                out.push(c.to_string());
            }
            _ => cur.push(c),
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// `unescapeSingleQuote`.
fn unescape(s: &str) -> Result<String, FieldPathError> {
    let mut out = String::new();
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        out.push(match chars.next() {
            Some('a') => '\u{7}',
            Some('b') => '\u{8}',
            Some('f') => '\u{c}',
            Some('n') => '\n',
            Some('r') => '\r',
            Some('t') => '\t',
            Some('v') => '\u{b}',
            Some('\'') => '\'',
            Some('\\') => '\\',
            _ => return Err(FieldPathError::Syntax("invalid string literal")),
        });
    }
    Ok(out)
}

/// The normalized `field.Path` string of `path` under `schema`.
pub(crate) fn normalize(path: &str, schema: &Value) -> Result<String, FieldPathError> {
    let mut s = schema;
    let mut out = String::new();
    let toks = tokens(path);
    let mut it = toks.iter();
    while let Some(t) = it.next() {
        let name = match t.as_str() {
            "[" => {
                let q = it.next().ok_or(FieldPathError::Syntax("unexpected end of JSON path"))?;
                if q.len() < 2 || !q.starts_with('\'') || !q.ends_with('\'') {
                    return Err(FieldPathError::Syntax("expected single quoted string"));
                }
                let name = unescape(&q[1..q.len() - 1])?;
                if it.next().map(String::as_str) != Some("]") {
                    return Err(FieldPathError::Syntax("expected ]"));
                }
                name
            }
            "." => it.next().ok_or(FieldPathError::Syntax("unexpected end of JSON path"))?.clone(),
            _ => return Err(FieldPathError::Syntax("expected [ or .")),
        };
        if get(s, "properties").is_some_and(|p| !p.is_null()) {
            s = prop(s, &name).ok_or(FieldPathError::NoSuchField)?;
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(&name);
        } else if has_addl(s) {
            out.push_str(&format!("[{name}]"));
            s = addl_schema(s).ok_or(FieldPathError::NoSuchField)?;
        } else {
            return Err(FieldPathError::NoSuchField);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn paths_normalize_like_valid_field_path() {
        let s = json!({"type": "object", "properties": {
            "a": {"type": "object", "properties": {"b": {"type": "string"}}},
            "m": {"type": "object", "additionalProperties": {"type": "object", "properties": {"x": {"type": "string"}}}},
        }});
        assert_eq!(normalize(".a.b", &s).as_deref(), Ok("a.b"));
        assert_eq!(normalize(".m['k.1'].x", &s).as_deref(), Ok("m[k.1].x"));
        assert_eq!(normalize("['a']", &s).as_deref(), Ok("a"));
        assert_eq!(normalize(".nope", &s), Err(FieldPathError::NoSuchField));
        assert!(normalize(".a[0]", &s).is_err());
        assert!(normalize("a", &s).is_err());
    }
}

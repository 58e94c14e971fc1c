//! `additionalPrinterColumns`: the `client-go/util/jsonpath` subset a column's
//! `jsonPath` may use ([`JsonPath`], [`json_path`]) and the cell the server's table
//! convertor renders for a value ([`column_cell`], from
//! `apiextensions-apiserver/pkg/registry/customresource/tableconvertor`).

use ctop_schema::go;
use serde_json::Value;

/// A printer-column JSONPath that could not be parsed (the server rejects such a
/// column with `unrecognized column definition`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unrecognized JSONPath {path:?}: {reason}")]
pub struct JsonPathError {
    /// The path as given.
    pub path: String,
    /// What is wrong with it.
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq)]
enum Seg {
    Field(String),
    Wildcard,
    Index(i64),
    Filter { lhs: Vec<String>, cmp: Option<(String, Value)> },
}

/// A parsed printer-column JSONPath (`client-go/util/jsonpath` subset): `.a.b`, `['a']`,
/// `[0]` (negative counts from the end), `[*]`, `.*`, `\.` escapes in names, and
/// filters `[?(@.x.y == "v")]` (`==`, `!=`, `<`, `<=`, `>`, `>=`, or bare existence).
#[derive(Debug, Clone, PartialEq)]
pub struct JsonPath {
    segs: Vec<Seg>,
}

impl JsonPath {
    /// Parses `path`, with or without the surrounding `{}` and a leading `$`.
    ///
    /// # Errors
    /// [`JsonPathError`] when the path uses unsupported syntax (recursive
    /// descent, slices, unions) or is malformed.
    pub fn parse(path: &str) -> Result<JsonPath, JsonPathError> {
        let err = |reason: &str| JsonPathError { path: path.to_owned(), reason: reason.to_owned() };
        let mut p = path.trim();
        if let Some(inner) = p.strip_prefix('{') {
            p = inner.strip_suffix('}').ok_or_else(|| err("unclosed {"))?.trim();
        }
        p = p.strip_prefix('$').unwrap_or(p);
        let chars: Vec<char> = p.chars().collect();
        let mut segs = Vec::new();
        let mut i = 0;
        while i < chars.len() {
            match chars[i] {
                '.' => {
                    i += 1;
                    match chars.get(i) {
                        Some('.') => return Err(err("recursive descent (..) is not supported")),
                        Some('*') => {
                            segs.push(Seg::Wildcard);
                            i += 1;
                        }
                        _ => {
                            let mut name = String::new();
                            while let Some(&c) = chars.get(i) {
                                if c == '.' || c == '[' {
                                    break;
                                }
                                if c == '\\' && chars.get(i + 1).is_some() {
                                    name.push(chars[i + 1]);
                                    i += 2;
                                    continue;
                                }
                                name.push(c);
                                i += 1;
                            }
                            if !name.is_empty() {
                                segs.push(Seg::Field(name));
                            }
                        }
                    }
                }
                '[' => {
                    let start = i + 1;
                    let mut depth = 0;
                    let mut quote: Option<char> = None;
                    let mut end = None;
                    for (j, &c) in chars.iter().enumerate().skip(start) {
                        match (quote, c) {
                            (Some(q), c) if c == q => quote = None,
                            (Some(_), _) => {}
                            (None, '\'' | '"') => quote = Some(c),
                            (None, '(') => depth += 1,
                            (None, ')') => depth -= 1,
                            (None, ']') if depth == 0 => {
                                end = Some(j);
                                break;
                            }
                            _ => {}
                        }
                    }
                    let end = end.ok_or_else(|| err("unclosed ["))?;
                    let inner: String = chars[start..end].iter().collect();
                    segs.push(parse_bracket(inner.trim()).map_err(|r| err(&r))?);
                    i = end + 1;
                }
                c if c.is_whitespace() => i += 1,
                _ => return Err(err("expected . or [")),
            }
        }
        Ok(JsonPath { segs })
    }

    /// All values the path selects, in order (missing keys select nothing).
    #[must_use]
    pub fn find<'a>(&self, obj: &'a Value) -> Vec<&'a Value> {
        eval_segs(&self.segs, vec![obj])
    }
}

fn parse_bracket(inner: &str) -> Result<Seg, String> {
    if inner == "*" {
        return Ok(Seg::Wildcard);
    }
    if let Some(q) = unquote(inner) {
        return Ok(Seg::Field(q));
    }
    if let Ok(i) = inner.parse::<i64>() {
        return Ok(Seg::Index(i));
    }
    let Some(expr) = inner.strip_prefix('?').map(str::trim) else {
        return Err(format!("unsupported subscript [{inner}]"));
    };
    let expr = expr
        .strip_prefix('(')
        .and_then(|e| e.strip_suffix(')'))
        .ok_or_else(|| "filter must be ?(...)".to_owned())?
        .trim();
    let rest = expr.strip_prefix('@').ok_or_else(|| "filter must start with @".to_owned())?;
    let op_at = rest.find(['=', '!', '<', '>']);
    let (lhs, cmp) = match op_at {
        None => (rest.trim(), None),
        Some(at) => {
            let (l, r) = rest.split_at(at);
            let op_len = if r[1..].starts_with('=') { 2 } else { 1 };
            let (op, lit) = r.split_at(op_len);
            if !matches!(op, "==" | "!=" | "<" | "<=" | ">" | ">=") {
                return Err(format!("unsupported operator {op}"));
            }
            let lit = lit.trim();
            let value = match unquote(lit) {
                Some(s) => Value::String(s),
                None => serde_json::from_str(lit).map_err(|_| format!("bad literal {lit}"))?,
            };
            (l.trim(), Some((op.to_owned(), value)))
        }
    };
    let lhs: Vec<String> = lhs.split('.').filter(|s| !s.is_empty()).map(str::to_owned).collect();
    Ok(Seg::Filter { lhs, cmp })
}

fn unquote(s: &str) -> Option<String> {
    let q = s.chars().next().filter(|c| *c == '\'' || *c == '"')?;
    s.strip_prefix(q)?.strip_suffix(q).map(str::to_owned)
}

fn eval_segs<'a>(segs: &[Seg], mut cur: Vec<&'a Value>) -> Vec<&'a Value> {
    for seg in segs {
        let mut next = Vec::new();
        for v in cur {
            match (seg, v) {
                (Seg::Field(f), Value::Object(m)) => next.extend(m.get(f)),
                (Seg::Wildcard, Value::Object(m)) => next.extend(m.values()),
                (Seg::Wildcard, Value::Array(a)) => next.extend(a.iter()),
                (Seg::Index(i), Value::Array(a)) => {
                    let len = i64::try_from(a.len()).unwrap_or(i64::MAX);
                    let at = if *i < 0 { len + i } else { *i };
                    if let Ok(at) = usize::try_from(at) {
                        next.extend(a.get(at));
                    }
                }
                (Seg::Filter { lhs, cmp }, Value::Array(a)) => {
                    next.extend(a.iter().filter(|item| filter_matches(item, lhs, cmp.as_ref())));
                }
                _ => {}
            }
        }
        cur = next;
    }
    cur
}

fn filter_matches(item: &Value, lhs: &[String], cmp: Option<&(String, Value)>) -> bool {
    let segs: Vec<Seg> = lhs.iter().map(|s| Seg::Field(s.clone())).collect();
    let found = eval_segs(&segs, vec![item]);
    let Some(v) = found.first() else { return false };
    let Some((op, lit)) = cmp else { return true };
    let ord = match (v, lit) {
        (Value::String(a), Value::String(b)) => Some(a.cmp(b)),
        (Value::Number(_), Value::Number(_)) => {
            v.as_f64().zip(lit.as_f64()).and_then(|(a, b)| a.partial_cmp(&b))
        }
        (Value::Bool(a), Value::Bool(b)) => Some(a.cmp(b)),
        _ => None,
    };
    match (op.as_str(), ord) {
        ("==", Some(o)) => o.is_eq(),
        ("!=", Some(o)) => o.is_ne(),
        ("!=", None) => true,
        ("<", Some(o)) => o.is_lt(),
        ("<=", Some(o)) => o.is_le(),
        (">", Some(o)) => o.is_gt(),
        (">=", Some(o)) => o.is_ge(),
        _ => false,
    }
}

/// The first value a printer-column JSONPath (e.g. `.spec.replicas` or
/// `.status.conditions[?(@.type=="Ready")].status`) selects in `obj`, as the server's
/// table convertor takes it; `None` when nothing matches or the path is invalid.
#[must_use]
pub fn json_path(obj: &Value, path: &str) -> Option<Value> {
    JsonPath::parse(path).ok()?.find(obj).first().map(|v| (*v).clone())
}

/// The table cell for a column of `column_type` holding `value` (from [`json_path`]),
/// as the server's table convertor renders it: `string` columns print the value as
/// kubectl's JSONPath printer does (strings raw, lists and maps as JSON, numbers with
/// Go's `%v`), `integer` truncates floats, `number` widens integers, `boolean` keeps
/// bools; other JSON types give `None` (an empty cell). `date` columns return the raw
/// timestamp string: turning it into an age needs the current time, left to the caller.
#[must_use]
pub fn column_cell(column_type: &str, value: &Value) -> Option<Value> {
    match (column_type, value) {
        (_, Value::Null) => None,
        ("string", Value::String(s)) => Some(Value::String(s.clone())),
        ("string", Value::Array(_) | Value::Object(_)) => Some(Value::String(go::json(value))),
        ("string", Value::Bool(b)) => Some(Value::String(b.to_string())),
        ("string", Value::Number(n)) => Some(Value::String(match n.as_i64() {
            Some(i) => i.to_string(),
            None => go::float(n.as_f64()?),
        })),
        ("integer", Value::Number(n)) => Some(Value::from(match n.as_i64() {
            Some(i) => i,
            None => n.as_f64()? as i64,
        })),
        ("number", Value::Number(_)) => value.as_f64().map(Value::from),
        ("boolean", Value::Bool(_)) | ("date", Value::String(_)) => Some(value.clone()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn json_path_for_printer_columns() {
        let obj = json!({"spec": {"replicas": 3, "a.b": "dotted", "list": [1, 2, 3]},
            "status": {"conditions": [{"type": "Synced", "status": "False"}, {"type": "Ready", "status": "True"}]}});
        assert_eq!(json_path(&obj, ".spec.replicas"), Some(json!(3)));
        assert_eq!(json_path(&obj, "{.spec.replicas}"), Some(json!(3)));
        assert_eq!(json_path(&obj, r#".status.conditions[?(@.type=="Ready")].status"#), Some(json!("True")));
        assert_eq!(json_path(&obj, ".status.conditions[?(@.type=='Gone')].status"), None);
        assert_eq!(json_path(&obj, ".spec.list[-1]"), Some(json!(3)));
        assert_eq!(json_path(&obj, ".spec.list[*]"), Some(json!(1)));
        assert_eq!(json_path(&obj, r".spec.a\.b"), Some(json!("dotted")));
        assert_eq!(json_path(&obj, ".spec['a.b']"), Some(json!("dotted")));
        assert_eq!(json_path(&obj, ".spec.missing.deeper"), None);
        assert_eq!(json_path(&obj, ".status.conditions[?(@.status)].type"), Some(json!("Synced")));
        assert!(matches!(JsonPath::parse("..spec"), Err(JsonPathError { .. })));
        assert!(JsonPath::parse(".spec[1:2]").is_err());
    }

    #[test]
    fn column_cells_render_like_the_table_convertor() {
        assert_eq!(column_cell("string", &json!("x")), Some(json!("x")));
        assert_eq!(
            column_cell("string", &json!({"b": 1, "a": [true]})),
            Some(json!(r#"{"a":[true],"b":1}"#))
        );
        assert_eq!(column_cell("string", &json!(1e6)), Some(json!("1e+06")));
        assert_eq!(column_cell("string", &json!(7)), Some(json!("7")));
        assert_eq!(column_cell("integer", &json!(2.9)), Some(json!(2)));
        assert_eq!(column_cell("number", &json!(2)), Some(json!(2.0)));
        assert_eq!(column_cell("integer", &json!("2")), None);
        assert_eq!(column_cell("boolean", &json!(true)), Some(json!(true)));
        assert_eq!(column_cell("string", &Value::Null), None);
    }
}

//! From a `serde_json::Value` to the [`Expr`] AST.

use std::sync::Arc;

use serde_json::Value;

use super::{Expr, Node, Op, PathRef, Setter, Text};
use crate::error::{Error, Result};
use crate::jsonpath::JsonPath;

pub(super) fn parse(value: &Value, path: &Arc<str>) -> Result<Expr> {
    let node = match value {
        Value::Null => Node::Null,
        Value::Bool(b) => Node::Bool(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => Node::Int(i),
            None => Node::Float(n.as_f64().unwrap_or_default()),
        },
        Value::String(s) => Node::Text(text(s)),
        Value::Array(items) => Node::List(
            items
                .iter()
                .enumerate()
                .map(|(i, v)| parse(v, &Arc::from(format!("{path}[{i}]"))))
                .collect::<Result<_>>()?,
        ),
        Value::Object(map) => {
            if let (1, Some((key, arg))) = (map.len(), map.iter().next())
                && key.starts_with('@')
            {
                let op = Op::from_name(key).ok_or_else(|| Error::Parse {
                    path: path.to_string(),
                    message: format!("unknown operator {key:?}"),
                })?;
                let arg = parse(arg, &Arc::from(format!("{path}.{key}")))?;
                if let (Op::List, Node::List(_)) = (op, &arg.node) {
                    return Ok(Expr { node: arg.node, path: path.clone() });
                }
                Node::Op(op, Box::new(arg))
            } else {
                let mut entries = Vec::with_capacity(map.len());
                for (key, v) in map {
                    let child = if let Some(rest) = key.strip_prefix("$.") {
                        format!("{path}.{rest}")
                    } else {
                        format!("{path}.{key}")
                    };
                    entries.push((setter(key), parse(v, &Arc::from(child))?));
                }
                // Root merges first, so that `$.`-copies never undo the other keys.
                entries.sort_by_key(|(s, _)| !matches!(s, Setter::Root));
                Node::Dict(entries)
            }
        }
    };
    Ok(Expr { node, path: path.clone() })
}

fn text(s: &str) -> Text {
    if s == "@now" {
        return Text::Now;
    }
    if !s.starts_with('$') {
        return Text::Plain(s.to_string());
    }
    Text::Path(path_ref(s))
}

/// Parses a `$`/`$$` string; `$.` and `$$.` mean the root.
pub(crate) fn path_ref(s: &str) -> PathRef {
    let subject = s.starts_with("$$");
    let body = if subject { &s[1..] } else { s };
    let body = if body == "$." { "$" } else { body };
    PathRef { text: s.to_string(), subject, parsed: JsonPath::parse(body) }
}

fn setter(key: &str) -> Setter {
    match key {
        "$" | "$." => Setter::Root,
        k if k.starts_with('$') => Setter::Path(path_ref(k)),
        k => Setter::Key(k.to_string()),
    }
}

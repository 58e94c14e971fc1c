//! `@project: <map expression>` builds a new document; `@project: [<map>, …]` builds one
//! from each and merges them in order (maps deeply, lists appended, later scalars win).

use serde_json::Value;

use crate::error::{Error, Result};
use crate::expr::Expr;
use crate::jsonpath::kind;

pub(super) fn apply(expr: &Expr, doc: &Value) -> Result<Value> {
    let err = |message: String| Error::Stage { path: expr.path().to_string(), message };
    match expr.evaluate(doc)? {
        v @ Value::Object(_) => Ok(v),
        Value::Array(parts) => {
            let mut out: Option<Value> = None;
            for (i, part) in parts.into_iter().enumerate() {
                if !part.is_object() {
                    return Err(err(format!("item {} is {}, expected a map", i + 1, kind(&part))));
                }
                out = Some(match out {
                    None => part,
                    Some(acc) => merge(acc, part),
                });
            }
            out.ok_or_else(|| err("the list of maps is empty".to_string()))
        }
        other => Err(err(format!("the result is {}, expected a map or a list of maps", kind(&other)))),
    }
}

/// Merges `b` into `a`: maps key by key, lists appended, anything else replaced by `b`.
fn merge(a: Value, b: Value) -> Value {
    match (a, b) {
        (Value::Object(mut a), Value::Object(b)) => {
            for (k, vb) in b {
                let merged = match a.remove(&k) {
                    Some(va) => merge(va, vb),
                    None => vb,
                };
                a.insert(k, merged);
            }
            Value::Object(a)
        }
        (Value::Array(mut a), Value::Array(b)) => {
            a.extend(b);
            Value::Array(a)
        }
        (_, b) => b,
    }
}

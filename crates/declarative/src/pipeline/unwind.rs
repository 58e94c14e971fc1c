//! `@unwind: "$.path"` (also `@demux`): one document per item of the list at the path,
//! with the item in place of the list and `-<index>` appended to `metadata.name`.

use serde_json::Value;

use crate::error::{Error, Result};
use crate::expr::Expr;
use crate::jsonpath::{JsonPath, kind};

pub(super) fn apply(expr: &Expr, path: &JsonPath, doc: &Value) -> Result<Vec<Value>> {
    let err = |message: String| Error::Stage { path: expr.path().to_string(), message };
    let items = match expr.evaluate(doc)? {
        Value::Null => return Ok(Vec::new()),
        Value::Array(items) => items,
        other => return Err(err(format!("the value at the path is {}, expected a list", kind(&other)))),
    };
    let name = match doc.pointer("/metadata/name") {
        Some(Value::String(s)) => s.clone(),
        Some(other) => return Err(err(format!("metadata.name is {}, expected a string", kind(other)))),
        None => return Err(err("the document has no metadata.name to number the items with".to_string())),
    };
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        let mut copy = doc.clone();
        path.set(&mut copy, &item).map_err(err)?;
        if let Some(meta) = copy.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.insert("name".to_string(), Value::String(format!("{name}-{i}")));
        }
        out.push(copy);
    }
    Ok(out)
}

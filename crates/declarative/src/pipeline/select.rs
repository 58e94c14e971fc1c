//! `@select: <expression>`: keeps the documents for which the expression is `true`.

use serde_json::Value;

use crate::error::{Error, Result};
use crate::expr::{Expr, as_bool};

pub(super) fn apply(expr: &Expr, doc: Value) -> Result<Vec<Value>> {
    let keep = as_bool(&expr.evaluate(&doc)?).map_err(|m| Error::Stage {
        path: expr.path().to_string(),
        message: format!("the condition must be a boolean: {m}"),
    })?;
    Ok(if keep { vec![doc] } else { Vec::new() })
}

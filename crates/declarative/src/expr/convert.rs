//! Argument coercions shared by the operators; each returns a message on failure, which
//! the operator wraps with its name and path.
//!
//! They follow Δ-controller's: an integer is also accepted as a float, a string that
//! spells a number is accepted as one, and a number is accepted where a string is wanted.

use serde_json::{Map, Number, Value};

use crate::jsonpath::kind;

/// Numbers of one kind: all integers, or (when any is not) all floats.
pub(crate) enum Nums {
    Ints(Vec<i64>),
    Floats(Vec<f64>),
}

/// A boolean; `null` is an error, not `false`.
pub(crate) fn as_bool(v: &Value) -> Result<bool, String> {
    match v {
        Value::Bool(b) => Ok(*b),
        other => Err(format!("argument is {}, expected a boolean", kind(other))),
    }
}

/// An integer, or a string that spells one.
pub(crate) fn as_int(v: &Value) -> Result<i64, String> {
    match v {
        Value::Number(n) if let Some(i) = n.as_i64() => Ok(i),
        Value::String(s) => s.parse().map_err(|_| format!("argument {s:?} is not an integer")),
        other => Err(format!("argument is {}, expected an integer", kind(other))),
    }
}

/// Names the `i`th (from 0) argument in a message about "argument".
pub(crate) fn nth(i: usize, message: &str) -> String {
    message.replacen("argument", &format!("argument {}", i + 1), 1)
}

/// A float: any number, or a string that spells one.
pub(crate) fn as_float(v: &Value) -> Result<f64, String> {
    match v {
        Value::Number(n) => n.as_f64().ok_or_else(|| "argument is not a number".to_string()),
        Value::String(s) => s.parse().map_err(|_| format!("argument {s:?} is not a number")),
        other => Err(format!("argument is {}, expected a number", kind(other))),
    }
}

/// A string; numbers are written out in decimal.
pub(crate) fn as_string(v: &Value) -> Result<String, String> {
    match v {
        Value::String(s) => Ok(s.clone()),
        Value::Number(n) => Ok(match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => i.to_string(),
            (None, Some(u)) => u.to_string(),
            _ => format_float(n.as_f64().unwrap_or_default()),
        }),
        other => Err(format!("argument is {}, expected a string", kind(other))),
    }
}

/// A float in its shortest form: `2` for 2.0, `1.5`, `1e+21` past 1e21 (as Go's `%v`).
pub(crate) fn format_float(f: f64) -> String {
    if f.fract() == 0.0 && f.abs() < 1e21 {
        format!("{f:.0}")
    } else {
        let s = format!("{f}");
        if f.abs() >= 1e21 { format!("{f:e}").replace('e', "e+") } else { s }
    }
}

/// A list.
pub(crate) fn as_list(v: &Value) -> Result<&Vec<Value>, String> {
    match v {
        Value::Array(items) => Ok(items),
        other => Err(format!("argument is {}, expected a list", kind(other))),
    }
}

/// A map.
pub(crate) fn as_map(v: &Value) -> Result<&Map<String, Value>, String> {
    match v {
        Value::Object(m) => Ok(m),
        other => Err(format!("argument is {}, expected a map", kind(other))),
    }
}

/// A list of two (or `n`) items.
pub(crate) fn as_n_list(v: &Value, n: usize) -> Result<&Vec<Value>, String> {
    let items = as_list(v)?;
    if items.len() == n { Ok(items) } else { Err(format!("expected {n} arguments, got {}", items.len())) }
}

/// A list of integers (or strings that spell them).
pub(crate) fn as_int_list(v: &Value) -> Result<Vec<i64>, String> {
    as_list(v)?.iter().enumerate().map(|(i, x)| as_int(x).map_err(|e| nth(i, &e))).collect()
}

/// A list of numbers: integers when all are, floats otherwise.
pub(crate) fn as_nums(v: &Value) -> Result<Nums, String> {
    let items = as_list(v)?;
    if let Ok(ints) = items.iter().map(as_int).collect::<Result<Vec<_>, _>>() {
        return Ok(Nums::Ints(ints));
    }
    items
        .iter()
        .enumerate()
        .map(|(i, x)| as_float(x).map_err(|e| nth(i, &e)))
        .collect::<Result<Vec<_>, _>>()
        .map(Nums::Floats)
}

/// Exactly two numbers of one kind.
pub(crate) fn as_num_pair(v: &Value) -> Result<Nums, String> {
    let nums = as_nums(v)?;
    let n = match &nums {
        Nums::Ints(v) => v.len(),
        Nums::Floats(v) => v.len(),
    };
    if n == 2 { Ok(nums) } else { Err(format!("expected 2 arguments, got {n}")) }
}

/// A float as a value; NaN and the infinities, which JSON cannot hold, are errors.
pub(crate) fn float_value(f: f64) -> Result<Value, String> {
    Number::from_f64(f).map(Value::Number).ok_or_else(|| format!("result {f} is not a finite number"))
}

//! Conversions (`@bool @int @float @string @list @dict`), strings and lists (`@concat
//! @len @range`), `@rnd`, and the dispatch to `@selector` and `@hash`.

use rand::RngExt as _;
use serde_json::Value;

use super::super::Op;
use super::super::convert::{
    as_bool, as_float, as_int, as_int_list, as_list, as_map, as_string, float_value, nth,
};

/// The conversion operators over an evaluated argument.
pub(crate) fn convert(op: Op, v: Value) -> Result<Value, String> {
    Ok(match op {
        Op::Bool => Value::Bool(as_bool(&v)?),
        Op::Int => Value::from(as_int(&v)?),
        Op::Float => float_value(as_float(&v)?)?,
        Op::String => Value::String(as_string(&v)?),
        Op::List => {
            as_list(&v)?;
            match v {
                Value::Array(mut items) if items.len() == 1 && items[0].is_array() => {
                    items.pop().unwrap_or_default()
                }
                other => other,
            }
        }
        Op::Dict => {
            as_map(&v)?;
            v
        }
        _ => return Err("not a conversion operator".to_string()),
    })
}

/// The other operators over an evaluated argument.
pub(crate) fn apply(op: Op, v: &Value) -> Result<Value, String> {
    match op {
        Op::Concat => {
            let mut out = String::new();
            for (i, item) in as_list(v)?.iter().enumerate() {
                out.push_str(&as_string(item).map_err(|m| nth(i, &m))?);
            }
            Ok(Value::String(out))
        }
        Op::Len => Ok(Value::from(as_list(v)?.len())),
        Op::Range => {
            let args = as_int_list(v)?;
            let [start, end] = args[..] else {
                return Err(format!("expected 2 arguments [start, end], got {}", args.len()));
            };
            Ok(Value::Array((start..end).map(Value::from).collect()))
        }
        Op::Rnd => {
            let args = as_int_list(v)?;
            let [min, max] = args[..] else {
                return Err(format!("expected 2 arguments [min, max], got {}", args.len()));
            };
            if max <= min {
                return Err(format!("empty range: [{min}, {max})"));
            }
            Ok(Value::from(rand::rng().random_range(min..max)))
        }
        Op::Selector => super::selector::apply(v),
        Op::Hash => Ok(Value::String(super::hash::hash_value(v))),
        _ => Err("not an operator of this family".to_string()),
    }
}

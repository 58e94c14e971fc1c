//! Comparisons (`@lt @lte @gt @gte`) and arithmetic (`@abs @ceil @floor @add @sub @mul
//! @div @sum @min @max`). Integers stay integers (wrapping on overflow, as Go's do) unless
//! any argument is a float; `@div`, `@abs`, `@ceil` and `@floor` always give floats.

use std::cmp::Ordering;

use serde_json::Value;

use super::super::Op;
use super::super::convert::{Nums, as_float, as_n_list, as_num_pair, as_nums, float_value};

pub(crate) fn apply(op: Op, v: &Value) -> Result<Value, String> {
    match op {
        Op::Lt | Op::Lte | Op::Gt | Op::Gte => {
            let ord = match as_num_pair(v)? {
                Nums::Ints(x) => Some(x[0].cmp(&x[1])),
                Nums::Floats(x) => x[0].partial_cmp(&x[1]),
            };
            Ok(Value::Bool(match op {
                Op::Lt => ord == Some(Ordering::Less),
                Op::Lte => matches!(ord, Some(Ordering::Less | Ordering::Equal)),
                Op::Gt => ord == Some(Ordering::Greater),
                _ => matches!(ord, Some(Ordering::Greater | Ordering::Equal)),
            }))
        }
        Op::Abs => float_value(as_float(v)?.abs()),
        Op::Ceil => float_value(as_float(v)?.ceil()),
        Op::Floor => float_value(as_float(v)?.floor()),
        Op::Add | Op::Sub | Op::Mul => match as_num_pair(v)? {
            Nums::Ints(x) => Ok(Value::from(match op {
                Op::Add => x[0].wrapping_add(x[1]),
                Op::Sub => x[0].wrapping_sub(x[1]),
                _ => x[0].wrapping_mul(x[1]),
            })),
            Nums::Floats(x) => float_value(match op {
                Op::Add => x[0] + x[1],
                Op::Sub => x[0] - x[1],
                _ => x[0] * x[1],
            }),
        },
        Op::Div => {
            let args = as_n_list(v, 2)?;
            let a = as_float(&args[0]).map_err(|m| format!("argument 1: {m}"))?;
            let b = as_float(&args[1]).map_err(|m| format!("argument 2: {m}"))?;
            if b == 0.0 {
                return Err("division by zero".to_string());
            }
            float_value(a / b)
        }
        Op::Sum => match as_nums(v)? {
            Nums::Ints(x) => Ok(Value::from(x.iter().fold(0i64, |a, b| a.wrapping_add(*b)))),
            Nums::Floats(x) => float_value(x.iter().sum()),
        },
        Op::Min | Op::Max => {
            let pick_max = op == Op::Max;
            match as_nums(v)? {
                Nums::Ints(x) => Ok(if pick_max { x.iter().max() } else { x.iter().min() }
                    .map_or(Value::Null, |i| Value::from(*i))),
                Nums::Floats(x) => {
                    let best =
                        x.iter().copied().reduce(|a, b| if (b > a) == pick_max && b != a { b } else { a });
                    best.map_or(Ok(Value::Null), float_value)
                }
            }
        }
        _ => Err("not an arithmetic operator".to_string()),
    }
}

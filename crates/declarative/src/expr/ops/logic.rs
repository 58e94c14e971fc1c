//! Control flow (`@cond @definedOr @switch @and @or`), predicates over a list
//! (`@filter @any @all @none @map`) and unary/binary tests (`@isnil @exists @not @eq @in`).

use serde_json::Value;

use super::super::convert::{as_bool, as_list, as_n_list};
use super::super::eval::Ctx;
use super::super::{Expr, Op};
use crate::error::Result;

/// The operators that evaluate only the arguments they need.
pub(crate) fn control(e: &Expr, op: Op, arg: &Expr, ctx: &Ctx<'_>) -> Result<Value> {
    let args = arg.items();
    let boolean = |v: &Value, what: &str| as_bool(v).map_err(|m| e.fail(op, format!("{what}: {m}")));
    match op {
        Op::Cond => {
            if !(2..=3).contains(&args.len()) {
                return Err(e.fail(
                    op,
                    format!("expected 2 (if, then) or 3 (if, then, else) arguments, got {}", args.len()),
                ));
            }
            if boolean(&args[0].eval(ctx)?, "the condition")? {
                args[1].eval(ctx)
            } else {
                args.get(2).map_or(Ok(Value::Null), |x| x.eval(ctx))
            }
        }
        Op::DefinedOr => {
            if args.len() != 2 {
                return Err(e.fail(op, format!("expected 2 arguments, got {}", args.len())));
            }
            match args[0].eval(ctx)? {
                Value::Null => args[1].eval(ctx),
                v => Ok(v),
            }
        }
        Op::Switch => {
            if args.is_empty() {
                return Err(e.fail(op, "expected at least one [case, value] pair"));
            }
            for (i, pair) in args.iter().enumerate() {
                let [case, value] = pair.items() else {
                    return Err(e.fail(
                        op,
                        format!("pair {}: expected [case, value], got {} items", i + 1, pair.items().len()),
                    ));
                };
                if boolean(&case.eval(ctx)?, &format!("case {}", i + 1))? {
                    return value.eval(ctx);
                }
            }
            Ok(Value::Null)
        }
        Op::And | Op::Or => {
            let stop = op == Op::Or;
            for (i, a) in args.iter().enumerate() {
                if boolean(&a.eval(ctx)?, &format!("argument {}", i + 1))? == stop {
                    return Ok(Value::Bool(stop));
                }
            }
            Ok(Value::Bool(!stop))
        }
        _ => Err(e.fail(op, "not a control operator")),
    }
}

/// `[function, list]`: runs the function over each item, as `$$`.
pub(crate) fn over_list(e: &Expr, op: Op, arg: &Expr, ctx: &Ctx<'_>) -> Result<Value> {
    let [func, list] = arg.items() else {
        return Err(e.fail(op, format!("expected 2 arguments [expression, list], got {}", arg.items().len())));
    };
    let list = list.eval(ctx)?;
    let items = as_list(&list).map_err(|m| e.fail(op, format!("argument 2: {m}")))?;
    let mut kept = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let v = func.eval(&Ctx { object: ctx.object, subject: Some(item) })?;
        if op == Op::Map {
            kept.push(v);
            continue;
        }
        let b = as_bool(&v).map_err(|m| e.fail(op, format!("item {}: {m}", i + 1)))?;
        match op {
            Op::Filter if b => kept.push(item.clone()),
            Op::Any if b => return Ok(Value::Bool(true)),
            Op::All if !b => return Ok(Value::Bool(false)),
            Op::None if b => return Ok(Value::Bool(false)),
            _ => {}
        }
    }
    Ok(match op {
        Op::Filter | Op::Map => Value::Array(kept),
        Op::Any => Value::Bool(false),
        _ => Value::Bool(true),
    })
}

/// Tests on an evaluated argument.
pub(crate) fn unary(op: Op, v: &Value) -> Result<Value, String> {
    Ok(Value::Bool(match op {
        Op::IsNil => v.is_null(),
        Op::Exists => !v.is_null(),
        Op::Not => !as_bool(v)?,
        Op::Eq => {
            let args = as_n_list(v, 2)?;
            !args[0].is_null() && !args[1].is_null() && args[0] == args[1]
        }
        Op::In => {
            let args = as_n_list(v, 2)?;
            let list = as_list(&args[1]).map_err(|m| format!("argument 2: {m}"))?;
            list.contains(&args[0])
        }
        _ => return Err("not a test operator".to_string()),
    }))
}

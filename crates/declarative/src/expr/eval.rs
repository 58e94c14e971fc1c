//! The evaluator: literals, strings and JSONPath getters, lists, map builders, and the
//! dispatch of operators to [`super::ops`].

use serde_json::{Map, Value};

use super::{Expr, Node, Op, PathRef, Setter, Text};
use crate::error::{Error, Result};

/// What `$` and `$$` refer to.
pub(crate) struct Ctx<'a> {
    pub(crate) object: &'a Value,
    pub(crate) subject: Option<&'a Value>,
}

impl Expr {
    pub(crate) fn eval(&self, ctx: &Ctx<'_>) -> Result<Value> {
        match &self.node {
            Node::Null => Ok(Value::Null),
            Node::Bool(b) => Ok(Value::Bool(*b)),
            Node::Int(i) => Ok(Value::from(*i)),
            Node::Float(f) => Ok(Value::from(*f)),
            Node::Text(Text::Plain(s)) => Ok(Value::String(s.clone())),
            Node::Text(Text::Now) => Ok(Value::String(now())),
            Node::Text(Text::Path(p)) => self.get(p, ctx),
            Node::List(items) => {
                let values = items.iter().map(|e| e.eval(ctx)).collect::<Result<Vec<_>>>()?;
                Ok(Value::Array(unpack(values)))
            }
            Node::Dict(entries) => self.build_map(entries, ctx),
            Node::Op(op, arg) => self.apply(*op, arg, ctx),
        }
    }

    /// Reads a JSONPath from the object (or, for `$$`, the subject).
    pub(crate) fn get(&self, p: &PathRef, ctx: &Ctx<'_>) -> Result<Value> {
        let path = p.parsed.as_ref().map_err(|message| self.path_error(p, message))?;
        let root = if p.subject {
            ctx.subject.ok_or_else(|| {
                self.path_error(
                    p,
                    "\"$$\" refers to the item of @filter, @map, @any, @all or @none, and there is none here",
                )
            })?
        } else {
            ctx.object
        };
        Ok(path.get_first(root).cloned().unwrap_or(Value::Null))
    }

    fn path_error(&self, p: &PathRef, message: &str) -> Error {
        Error::JsonPath {
            path: self.path.to_string(),
            jsonpath: p.text.clone(),
            message: message.to_string(),
        }
    }

    /// Builds a map from `{key: expression}` entries, writing `$`-keys as JSONPaths.
    fn build_map(&self, entries: &[(Setter, Expr)], ctx: &Ctx<'_>) -> Result<Value> {
        let mut out = Value::Object(Map::new());
        for (setter, expr) in entries {
            let value = expr.eval(ctx)?;
            match setter {
                Setter::Key(k) => {
                    if let Value::Object(m) = &mut out {
                        m.insert(k.clone(), value);
                    }
                }
                Setter::Root => {
                    let Value::Object(v) = value else {
                        return Err(Error::Set {
                            path: expr.path.to_string(),
                            jsonpath: "$.".to_string(),
                            message: format!(
                                "only a map can be copied to the root, got {}",
                                crate::jsonpath::kind(&value)
                            ),
                        });
                    };
                    if let Value::Object(m) = &mut out {
                        m.extend(v);
                    }
                }
                Setter::Path(p) => {
                    let err = |message: String| Error::Set {
                        path: expr.path.to_string(),
                        jsonpath: p.text.clone(),
                        message,
                    };
                    if p.subject {
                        return Err(err("a setter cannot write to \"$$\"".to_string()));
                    }
                    let path = p.parsed.as_ref().map_err(|m| err(format!("invalid JSONPath: {m}")))?;
                    path.set(&mut out, &value).map_err(err)?;
                }
            }
        }
        Ok(out)
    }

    /// An evaluation error of operator `op` standing at this node.
    pub(crate) fn fail(&self, op: Op, message: impl Into<String>) -> Error {
        Error::Eval { path: self.path.to_string(), op: op.name().to_string(), message: message.into() }
    }

    fn apply(&self, op: Op, arg: &Expr, ctx: &Ctx<'_>) -> Result<Value> {
        use super::ops::{arith, logic, misc};
        match op {
            Op::Noop => Ok(Value::Null),
            Op::Cond | Op::DefinedOr | Op::Switch | Op::And | Op::Or => logic::control(self, op, arg, ctx),
            Op::Filter | Op::Any | Op::All | Op::None | Op::Map => logic::over_list(self, op, arg, ctx),
            _ => {
                let v = arg.eval(ctx)?;
                let wrap = |r: std::result::Result<Value, String>| r.map_err(|m| self.fail(op, m));
                match op {
                    Op::Bool | Op::Int | Op::Float | Op::String | Op::List | Op::Dict => {
                        wrap(misc::convert(op, v)).and_then(|v| self.deref_string(op, v, ctx))
                    }
                    Op::IsNil | Op::Exists | Op::Not | Op::Eq | Op::In => wrap(logic::unary(op, &v)),
                    Op::Selector | Op::Hash | Op::Concat | Op::Len | Op::Rnd | Op::Range => {
                        wrap(misc::apply(op, &v))
                    }
                    _ => wrap(arith::apply(op, &v)),
                }
            }
        }
    }

    /// `{"@string": …}` reads its result as a JSONPath when it starts with `$`, and as
    /// the current time when it is `@now`.
    fn deref_string(&self, op: Op, v: Value, ctx: &Ctx<'_>) -> Result<Value> {
        match (op, &v) {
            (Op::String, Value::String(s)) if s.starts_with('$') => self.get(&super::parse::path_ref(s), ctx),
            (Op::String, Value::String(s)) if s == "@now" => Ok(Value::String(now())),
            _ => Ok(v),
        }
    }
}

/// A list of one list is that list: `{"@len": ["$.spec.items"]}` counts the items.
fn unpack(mut values: Vec<Value>) -> Vec<Value> {
    if values.len() == 1
        && let Some(Value::Array(_)) = values.first()
        && let Some(Value::Array(inner)) = values.pop()
    {
        return inner;
    }
    values
}

/// The current UTC time, to the second, as RFC 3339.
fn now() -> String {
    chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

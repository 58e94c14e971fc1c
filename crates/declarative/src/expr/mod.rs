//! Expressions: the typed AST ([`Expr`]), its parser and its evaluator.
//!
//! Start at [`Expr::parse`] (a `serde_json::Value`, as read from YAML or JSON, to an AST,
//! once) and [`Expr::evaluate`] (the AST over an object, many times). The shapes:
//!
//! * `true`, `1`, `1.5`, `null` are themselves; a string is itself unless it starts with
//!   `$` (a JSONPath read from the object, `$$` from the item of `@filter`/`@map`/…) or is
//!   `"@now"` (the current UTC time, RFC 3339).
//! * a list is a list of expressions (`@list`);
//! * a map with a single `@`-key is an operator applied to the key's value; any other map
//!   builds a map (`@dict`), where a key that starts with `$` is a JSONPath *setter*
//!   (`{"$.metadata.name": "x"}` writes `{"metadata": {"name": "x"}}`).
//!
//! [`parse`] turns values into the AST, [`eval`] walks it, [`convert`] holds the argument
//! coercions that all operators share, and [`ops`] the operators by family.

mod convert;
mod eval;
mod ops;
mod parse;

use std::sync::Arc;

use serde_json::Value;

use crate::error::Result;
use crate::jsonpath::JsonPath;

pub(crate) use convert::as_bool;
pub(crate) use ops::go_json;

/// A parsed expression: build it with [`Expr::parse`], run it with [`Expr::evaluate`].
#[derive(Debug, Clone, PartialEq)]
pub struct Expr {
    pub(crate) node: Node,
    /// Where the expression stands in the YAML, for errors.
    pub(crate) path: Arc<str>,
}

/// The kinds of expression.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Node {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Text(Text),
    List(Vec<Expr>),
    Dict(Vec<(Setter, Expr)>),
    Op(Op, Box<Expr>),
}

/// A string literal: plain text, `@now`, or a JSONPath getter.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Text {
    Plain(String),
    Now,
    Path(PathRef),
}

/// A JSONPath as written, parsed once; a parse error is kept to be reported when the
/// path is evaluated, as a path in a branch never taken is no error.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PathRef {
    pub(crate) text: String,
    /// `true` for `$$`: the item of the enclosing `@filter`/`@map`/`@any`/`@all`/`@none`.
    pub(crate) subject: bool,
    pub(crate) parsed: Result<JsonPath, String>,
}

/// A key of a map expression.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Setter {
    /// A plain key, written as is (dots and all).
    Key(String),
    /// `$.` or `$`: the value (a map) is merged into the map being built.
    Root,
    /// A JSONPath written through.
    Path(PathRef),
}

macro_rules! ops {
    ($($variant:ident => $name:literal),* $(,)?) => {
        /// The operators.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub(crate) enum Op { $($variant),* }

        impl Op {
            /// The operator as written (`@has` is reported as `@exists`).
            pub(crate) fn name(self) -> &'static str {
                match self { $(Op::$variant => $name),* }
            }

            fn from_name(name: &str) -> Option<Op> {
                match name {
                    "@has" => Some(Op::Exists),
                    "@demux" | "@mux" => None,
                    $($name => Some(Op::$variant),)*
                    _ => None,
                }
            }
        }
    };
}

ops! {
    Bool => "@bool", Int => "@int", Float => "@float", String => "@string", List => "@list",
    Dict => "@dict", Noop => "@noop", Cond => "@cond", DefinedOr => "@definedOr",
    Switch => "@switch", And => "@and", Or => "@or", Not => "@not", Filter => "@filter",
    Any => "@any", All => "@all", None => "@none", Map => "@map", IsNil => "@isnil",
    Exists => "@exists", Eq => "@eq", Lt => "@lt", Lte => "@lte", Gt => "@gt", Gte => "@gte",
    Selector => "@selector", Abs => "@abs", Ceil => "@ceil", Floor => "@floor", Add => "@add",
    Sub => "@sub", Mul => "@mul", Div => "@div", Sum => "@sum", Min => "@min", Max => "@max",
    Len => "@len", In => "@in", Concat => "@concat", Range => "@range", Rnd => "@rnd",
    Hash => "@hash",
}

impl Expr {
    /// Parses an expression; `path` names where it stands in the YAML (e.g.
    /// `pipeline[1].@project`) and prefixes every error it will report.
    pub fn parse(value: &Value, path: &str) -> Result<Expr> {
        parse::parse(value, &Arc::from(path))
    }

    /// Evaluates the expression over `object` (what `$` refers to).
    pub fn evaluate(&self, object: &Value) -> Result<Value> {
        self.eval(&eval::Ctx { object, subject: None })
    }

    /// Evaluates with `subject` as what `$$` refers to.
    pub fn evaluate_with_subject(&self, object: &Value, subject: &Value) -> Result<Value> {
        self.eval(&eval::Ctx { object, subject: Some(subject) })
    }

    /// Where the expression stands in the YAML.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The JSONPath when the expression is a plain `$`-path string.
    pub(crate) fn as_path(&self) -> Option<&PathRef> {
        match &self.node {
            Node::Text(Text::Path(p)) => Some(p),
            _ => None,
        }
    }

    /// The arguments of an operator that takes a list: the items of a literal list, or
    /// the expression itself.
    pub(crate) fn items(&self) -> &[Expr] {
        match &self.node {
            Node::List(items) => items,
            _ => std::slice::from_ref(self),
        }
    }

    /// `(operator, argument)` when the expression is an operator.
    pub(crate) fn as_op(&self) -> Option<(Op, &Expr)> {
        match &self.node {
            Node::Op(op, arg) => Some((*op, arg)),
            _ => None,
        }
    }
}

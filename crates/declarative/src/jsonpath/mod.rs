//! JSONPath in the dialect Δ-controller uses (that of Go's `ohler55/ojg`), by hand.
//!
//! Start at [`JsonPath::parse`], then [`JsonPath::get_first`] (what a `"$.a.b"` string
//! evaluates to: the first match, or nothing) and [`JsonPath::set`] (what a `"$.a.b"` key
//! of a map does: write, creating maps and arrays on the way).
//!
//! Why by hand: the Rust JSONPath crates follow RFC 9535 (`serde_json_path`) or Goessner
//! with their own extensions (`jsonpath-rust`); none writes through a path creating the
//! maps and arrays it lacks, as ojg's `Set` does, and RFC 9535 has no `in` operator in
//! filters. The dialect here:
//!
//! | syntax | meaning |
//! |---|---|
//! | `$` / `@` | the root / the current item (`@` only inside filters) |
//! | `.name`, `['name']`, `["name"]` | a key of a map (brackets for keys with `.`, `/`, `[`) |
//! | `[2]`, `[-1]` | an item of a list (negative from the end) |
//! | `.*`, `[*]` | every item of a list or value of a map |
//! | `..name` | `name` at any depth (getters only) |
//! | `[1,3]`, `['a','b']` | several items or keys |
//! | `[1:3]`, `[::2]` | a slice |
//! | `[?(@.a == 'x')]`, `[?@.a > 1]` | the items a filter keeps |
//!
//! Filters compare with `== != < <= > >=`, test membership with `in [..]` (a literal list
//! or a path to one), match a regular expression with `=~ /re/`, test existence with a
//! bare path, and combine with `&& || !` and parentheses. Numbers compare by value
//! (`1 == 1.0`), strings by bytes.

mod get;
mod parse;
mod set;

pub use set::kind;

use serde_json::Value;

/// A parsed JSONPath.
#[derive(Debug, Clone, PartialEq)]
pub struct JsonPath {
    /// `true` for `@`-rooted paths (inside filters), `false` for `$`.
    pub(crate) relative: bool,
    pub(crate) segments: Vec<Segment>,
}

/// One step of a path.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Segment {
    Key(String),
    Index(i64),
    Wildcard,
    /// `..` followed by the step it applies at every depth.
    Descent(Box<Segment>),
    Union(Vec<Selector>),
    Slice(Option<i64>, Option<i64>, Option<i64>),
    Filter(Box<Filter>),
}

/// An item of a union: a key or an index.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Selector {
    Key(String),
    Index(i64),
}

/// A filter expression.
#[derive(Debug, Clone)]
pub(crate) enum Filter {
    Or(Box<Filter>, Box<Filter>),
    And(Box<Filter>, Box<Filter>),
    Not(Box<Filter>),
    Compare(Operand, CompareOp, Operand),
    In(Operand, Operand),
    Regex(Operand, regex::Regex),
    Exists(Operand),
}

impl PartialEq for Filter {
    fn eq(&self, other: &Self) -> bool {
        format!("{self:?}") == format!("{other:?}")
    }
}

/// A comparison of a filter.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum CompareOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

/// A side of a comparison.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Operand {
    Path(JsonPath),
    Literal(Value),
}

impl JsonPath {
    /// Parses a path that starts with `$` (or `@`).
    pub fn parse(text: &str) -> Result<JsonPath, String> {
        parse::parse(text)
    }

    /// Every value the path selects in `root`, in document order.
    pub fn get_all<'a>(&self, root: &'a Value) -> Vec<&'a Value> {
        get::get_all(self, root, root)
    }

    /// The first value the path selects in `root`, if any.
    pub fn get_first<'a>(&self, root: &'a Value) -> Option<&'a Value> {
        self.get_all(root).into_iter().next()
    }

    /// Writes `value` at every place the path selects in `target`, creating the maps
    /// (for keys) and lists (for indexes, padded with `null`) that are missing on the way.
    /// The root path `$` replaces `target` itself.
    pub fn set(&self, target: &mut Value, value: &Value) -> Result<(), String> {
        set::set(&self.segments, target, value)
    }

    /// The path's first key, if it starts with one (`$.Pod.spec` → `Pod`).
    pub fn first_key(&self) -> Option<&str> {
        match self.segments.first() {
            Some(Segment::Key(k)) => Some(k),
            _ => None,
        }
    }

    /// `true` when the path is the root (`$`).
    pub fn is_root(&self) -> bool {
        self.segments.is_empty()
    }
}

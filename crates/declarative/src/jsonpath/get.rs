//! Reading through a path: every match, in document order.

use std::cmp::Ordering;

use serde_json::Value;

use super::{CompareOp, Filter, JsonPath, Operand, Segment, Selector};

/// Every value `path` selects; `current` is what `@` means, `root` what `$` means.
pub(super) fn get_all<'a>(path: &JsonPath, current: &'a Value, root: &'a Value) -> Vec<&'a Value> {
    let start = if path.relative { current } else { root };
    let mut matches = vec![start];
    for seg in &path.segments {
        let mut next = Vec::new();
        for v in matches {
            step(seg, v, root, &mut next);
        }
        matches = next;
    }
    matches
}

/// Resolves a possibly negative index against a length.
pub(super) fn index(i: i64, len: usize) -> Option<usize> {
    let len = i64::try_from(len).ok()?;
    let i = if i < 0 { len + i } else { i };
    (0..len).contains(&i).then(|| usize::try_from(i).ok()).flatten()
}

/// The children of a list or a map, in order.
pub(super) fn children(v: &Value) -> Vec<&Value> {
    match v {
        Value::Array(items) => items.iter().collect(),
        Value::Object(map) => map.values().collect(),
        _ => Vec::new(),
    }
}

/// The indexes a slice selects in a list of `len` items.
pub(super) fn slice_indexes(
    start: Option<i64>,
    end: Option<i64>,
    step: Option<i64>,
    len: usize,
) -> Vec<usize> {
    let n = i64::try_from(len).unwrap_or(i64::MAX);
    let step = step.unwrap_or(1);
    let norm = |i: i64| if i < 0 { (n + i).max(0) } else { i.min(n) };
    let mut out = Vec::new();
    if step > 0 {
        let (mut i, end) = (norm(start.unwrap_or(0)), norm(end.unwrap_or(n)));
        while i < end {
            out.extend(usize::try_from(i).ok());
            i += step;
        }
    } else if step < 0 {
        let mut i = start.map_or(n - 1, |s| if s < 0 { n + s } else { s.min(n - 1) });
        let end = end.map_or(-1, |e| if e < 0 { (n + e).max(-1) } else { e });
        while i > end && i >= 0 {
            out.extend(usize::try_from(i).ok());
            i += step;
        }
    }
    out
}

fn step<'a>(seg: &Segment, v: &'a Value, root: &'a Value, out: &mut Vec<&'a Value>) {
    match seg {
        Segment::Key(k) => out.extend(v.as_object().and_then(|m| m.get(k))),
        Segment::Index(i) => {
            if let Value::Array(items) = v {
                out.extend(index(*i, items.len()).map(|i| &items[i]));
            }
        }
        Segment::Wildcard => out.extend(children(v)),
        Segment::Descent(inner) => {
            step(inner, v, root, out);
            for c in children(v) {
                step(seg, c, root, out);
            }
        }
        Segment::Union(items) => {
            for sel in items {
                match sel {
                    Selector::Key(k) => step(&Segment::Key(k.clone()), v, root, out),
                    Selector::Index(i) => step(&Segment::Index(*i), v, root, out),
                }
            }
        }
        Segment::Slice(start, end, stride) => {
            if let Value::Array(items) = v {
                out.extend(slice_indexes(*start, *end, *stride, items.len()).into_iter().map(|i| &items[i]));
            }
        }
        Segment::Filter(f) => out.extend(children(v).into_iter().filter(|c| matches(f, c, root))),
    }
}

/// Whether `current` passes the filter.
pub(super) fn matches(f: &Filter, current: &Value, root: &Value) -> bool {
    match f {
        Filter::Or(a, b) => matches(a, current, root) || matches(b, current, root),
        Filter::And(a, b) => matches(a, current, root) && matches(b, current, root),
        Filter::Not(a) => !matches(a, current, root),
        Filter::Exists(op) => match operand(op, current, root) {
            Some(Value::Bool(b)) => b,
            Some(_) => true,
            None => false,
        },
        Filter::Regex(op, re) => {
            matches!(operand(op, current, root), Some(Value::String(s)) if re.is_match(&s))
        }
        Filter::In(left, right) => {
            let (Some(l), Some(Value::Array(list))) =
                (operand(left, current, root), operand(right, current, root))
            else {
                return false;
            };
            list.iter().any(|item| compare(&l, item) == Some(Ordering::Equal))
        }
        Filter::Compare(left, op, right) => {
            let (l, r) = (operand(left, current, root), operand(right, current, root));
            let ord = match (&l, &r) {
                (Some(l), Some(r)) => compare(l, r),
                (None, None) => Some(Ordering::Equal),
                _ => None,
            };
            match op {
                CompareOp::Eq => ord == Some(Ordering::Equal),
                CompareOp::Ne => ord != Some(Ordering::Equal),
                CompareOp::Lt => ord == Some(Ordering::Less),
                CompareOp::Le => matches!(ord, Some(Ordering::Less | Ordering::Equal)),
                CompareOp::Gt => ord == Some(Ordering::Greater),
                CompareOp::Ge => matches!(ord, Some(Ordering::Greater | Ordering::Equal)),
            }
        }
    }
}

fn operand(op: &Operand, current: &Value, root: &Value) -> Option<Value> {
    match op {
        Operand::Literal(v) => Some(v.clone()),
        Operand::Path(p) => get_all(p, current, root).into_iter().next().cloned(),
    }
}

/// Orders two values of a filter: numbers by value, strings by bytes, anything else only
/// equal or not.
fn compare(a: &Value, b: &Value) -> Option<Ordering> {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(x), Some(y)) => Some(x.cmp(&y)),
            _ => x.as_f64()?.partial_cmp(&y.as_f64()?),
        },
        (Value::String(x), Value::String(y)) => Some(x.cmp(y)),
        _ => (a == b).then_some(Ordering::Equal),
    }
}

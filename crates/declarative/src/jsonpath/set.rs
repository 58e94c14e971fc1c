//! Writing through a path, creating what is missing on the way (ojg's `Set`).

use serde_json::{Map, Value};

use super::Segment;
use super::get::{index, slice_indexes};

/// Writes `value` at every place `segs` selects below `target`.
pub(super) fn set(segs: &[Segment], target: &mut Value, value: &Value) -> Result<(), String> {
    let Some((seg, rest)) = segs.split_first() else {
        *target = value.clone();
        return Ok(());
    };
    match seg {
        Segment::Key(k) => {
            if target.is_null() {
                *target = Value::Object(Map::new());
            }
            let Value::Object(map) = target else {
                return Err(format!("key {k:?} of {}, which is not a map", kind(target)));
            };
            if rest.is_empty() {
                map.insert(k.clone(), value.clone());
                return Ok(());
            }
            match map.get_mut(k) {
                Some(child) => set(rest, child, value),
                None if creates(rest) => set(rest, map.entry(k.clone()).or_insert(Value::Null), value),
                None => Ok(()),
            }
        }
        Segment::Index(i) => {
            if target.is_null() {
                *target = Value::Array(Vec::new());
            }
            let Value::Array(items) = target else {
                return Err(format!("index {i} of {}, which is not a list", kind(target)));
            };
            let at = match index(*i, items.len()) {
                Some(at) => at,
                None if *i >= 0 => {
                    let at = usize::try_from(*i).map_err(|_| format!("index {i} is too large"))?;
                    if !rest.is_empty() && !creates(rest) {
                        return Ok(());
                    }
                    items.resize(at + 1, Value::Null);
                    at
                }
                None => return Err(format!("index {i} is before the start of a list of {}", items.len())),
            };
            set(rest, &mut items[at], value)
        }
        Segment::Wildcard => each(target, |_| true, rest, value),
        Segment::Union(sels) => {
            for sel in sels {
                let single = match sel {
                    super::Selector::Key(k) => Segment::Key(k.clone()),
                    super::Selector::Index(i) => Segment::Index(*i),
                };
                let mut path = vec![single];
                path.extend_from_slice(rest);
                set(&path, target, value)?;
            }
            Ok(())
        }
        Segment::Slice(start, end, stride) => {
            if let Value::Array(items) = target {
                for i in slice_indexes(*start, *end, *stride, items.len()) {
                    set(rest, &mut items[i], value)?;
                }
            }
            Ok(())
        }
        Segment::Filter(f) => {
            let root = target.clone();
            each(target, |c| super::get::matches(f, c, &root), rest, value)
        }
        Segment::Descent(_) => Err("'..' cannot be written to".to_string()),
    }
}

/// Whether the rest of a path creates the container it needs (a key or an index).
fn creates(rest: &[Segment]) -> bool {
    matches!(rest.first(), Some(Segment::Key(_) | Segment::Index(_)))
}

/// Sets below every child of a list or map that `keep` accepts.
fn each(
    target: &mut Value,
    keep: impl Fn(&Value) -> bool,
    rest: &[Segment],
    value: &Value,
) -> Result<(), String> {
    let children: Vec<&mut Value> = match target {
        Value::Array(items) => items.iter_mut().collect(),
        Value::Object(map) => map.values_mut().collect(),
        _ => Vec::new(),
    };
    for child in children {
        if keep(child) {
            set(rest, child, value)?;
        }
    }
    Ok(())
}

/// The JSON type of a value, for messages ("a map", "an integer", …).
pub fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_f64() => "a float",
        Value::Number(_) => "an integer",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a map",
    }
}

//! `@gather: [<key expression>, "$.path"]` (also `@mux`): groups the documents by the key
//! and emits one document per group, with the list of every member's value at the path.
//!
//! The state is each group's members (documents with their counts). A change rebuilds
//! only the groups it touches: `-` the group's old document, `+` its new one. The values
//! are sorted (numbers and strings by value, anything else by its JSON), and the
//! document that carries them is the member whose JSON sorts first, so the result does
//! not depend on the order the events came in.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use serde_json::Value;

use super::zset::{ZSet, key_of};
use crate::error::{Error, Result};
use crate::expr::{Expr, go_json};
use crate::jsonpath::JsonPath;

/// A member of a group: the document, its value at the path, and its count.
type Members = BTreeMap<String, (Value, Value, i64)>;

/// The groups of one `@gather` stage, by the canonical JSON of their key.
#[derive(Debug, Default, Clone)]
pub(super) struct Gather {
    groups: BTreeMap<String, Members>,
}

/// What a change does to the groups, to be committed once the whole event succeeded.
pub(super) type Staged = Vec<(String, Option<Members>)>;

impl Gather {
    /// The output change for an input change, and the groups as they will be.
    pub(super) fn apply(
        &self,
        key: &Expr,
        value: &Expr,
        path: &JsonPath,
        input: ZSet,
    ) -> Result<(ZSet, Staged)> {
        let mut touched: BTreeMap<String, Members> = BTreeMap::new();
        for (doc, count) in input.into_iter() {
            let k = key.evaluate(&doc)?;
            let v = value.evaluate(&doc)?;
            if k.is_null() || v.is_null() {
                continue;
            }
            let gk = key_of(&k);
            let members = touched
                .entry(gk.clone())
                .or_insert_with(|| self.groups.get(&gk).cloned().unwrap_or_default());
            let entry = members.entry(key_of(&doc)).or_insert((doc, v, 0));
            entry.2 += count;
            if entry.2 <= 0 {
                let dk = key_of(&entry.0);
                members.remove(&dk);
            }
        }
        let mut out = ZSet::default();
        let mut staged = Vec::new();
        for (gk, members) in touched {
            if let Some(old) = self.groups.get(&gk) {
                out.add(output(old, path, value)?, -1);
            }
            if members.is_empty() {
                staged.push((gk, None));
            } else {
                out.add(output(&members, path, value)?, 1);
                staged.push((gk, Some(members)));
            }
        }
        Ok((out, staged))
    }

    pub(super) fn commit(&mut self, staged: Staged) {
        for (gk, members) in staged {
            match members {
                Some(m) => self.groups.insert(gk, m),
                None => self.groups.remove(&gk),
            };
        }
    }
}

/// A group's document: its first member with the sorted values at the path.
fn output(members: &Members, path: &JsonPath, value: &Expr) -> Result<Value> {
    let mut values = Vec::new();
    for (_, v, count) in members.values() {
        for _ in 0..*count {
            values.push(v.clone());
        }
    }
    values.sort_by(order);
    let mut doc = members.values().next().map(|(d, _, _)| d.clone()).unwrap_or_default();
    path.set(&mut doc, &Value::Array(values))
        .map_err(|message| Error::Stage { path: value.path().to_string(), message })?;
    Ok(doc)
}

/// Numbers of one kind and strings by value; anything else by Go's JSON of it.
fn order(a: &Value, b: &Value) -> Ordering {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) if x.is_f64() == y.is_f64() => match (x.as_i64(), y.as_i64()) {
            (Some(x), Some(y)) => x.cmp(&y),
            _ => x.as_f64().partial_cmp(&y.as_f64()).unwrap_or(Ordering::Equal),
        },
        (Value::String(x), Value::String(y)) => x.cmp(y),
        _ => go_json(a).cmp(&go_json(b)),
    }
}

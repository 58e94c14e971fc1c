//! Updates of a valid value: one field given another valid value, an optional field
//! added or removed, an item or map entry added or removed. Start at [`mutate`]: it lists
//! the changes the schema allows on the current value ([`Change`]), applies one at
//! random, and keeps the result when the server's pipeline accepts it and it differs
//! (a replaced item can repeat another of a `set` list, a new value can equal the old).

use serde_json::Value;

use super::place::{Seg, Server, at_mut, children};
use super::{Gen, counts, get, list, map_values, props};
use crate::fuzz::rng::Rng;

/// How many changes are drawn before `current` is returned unchanged.
const TRIES: usize = 32;

/// One change at a place of the value.
enum Change<'s> {
    /// A new valid value for the node.
    Replace(&'s Value),
    /// An absent property added.
    Add(String, &'s Value),
    /// An optional (or defaulted) property removed.
    Remove(String),
    /// An item added to an array (the array's schema).
    AddItem(&'s Value),
    /// An item removed.
    RemoveItem(usize),
    /// An entry added to a map (the values' schema).
    AddEntry(&'s Value),
    /// An entry removed.
    RemoveEntry(String),
}

pub(super) fn mutate(schema: &Value, current: &Value, rng: &mut Rng) -> Value {
    let mut changes = Vec::new();
    collect(current, schema, Vec::new(), &mut changes);
    let server = Server::new(schema);
    let mut g = Gen { rng, optional: 50 };
    for _ in 0..TRIES {
        let i = usize::try_from(g.rng.below(changes.len() as u64)).unwrap_or(0);
        let Some((at, change)) = changes.get(i) else { break };
        let mut next = current.clone();
        let Some(node) = at_mut(&mut next, at) else { continue };
        apply(node, change, &mut g);
        if next != *current && server.refusals(&next).is_empty() {
            return next;
        }
    }
    current.clone()
}

fn apply(node: &mut Value, change: &Change<'_>, g: &mut Gen<'_>) {
    match change {
        Change::Replace(s) => *node = g.value(s),
        Change::Add(k, s) => {
            let v = g.value(s);
            if let Some(m) = node.as_object_mut() {
                m.insert(k.clone(), v);
            }
        }
        Change::Remove(k) | Change::RemoveEntry(k) => {
            if let Some(m) = node.as_object_mut() {
                m.remove(k);
            }
        }
        Change::AddItem(s) => {
            let have = node.as_array().cloned().unwrap_or_default();
            let n = have.len() as u64 + 1;
            *node = g.items(s, have, Some(n)).into();
        }
        Change::RemoveItem(i) => {
            if let Some(a) = node.as_array_mut()
                && *i < a.len()
            {
                a.remove(*i);
            }
        }
        Change::AddEntry(s) => {
            if let Some(m) = node.as_object_mut() {
                let k = format!("{}-{}", super::strings::map_key(g.rng, m.len()), m.len());
                let v = g.value(s);
                m.entry(k).or_insert(v);
            }
        }
    }
}

/// Every change the schema allows on `v` (a value of `s` at `here`).
fn collect<'s>(v: &Value, s: &'s Value, here: Vec<Seg>, out: &mut Vec<(Vec<Seg>, Change<'s>)>) {
    out.push((here.clone(), Change::Replace(s)));
    match v {
        Value::Array(a) => {
            let (lo, hi) = counts(s, "minItems", "maxItems");
            if (a.len() as u64) < hi {
                out.push((here.clone(), Change::AddItem(s)));
            }
            if (a.len() as u64) > lo {
                for i in 0..a.len() {
                    out.push((here.clone(), Change::RemoveItem(i)));
                }
            }
        }
        Value::Object(m) => {
            let required = list(s, "required");
            if let Some(ps) = props(s) {
                for (k, p) in ps {
                    let needed = required.iter().any(|r| r.as_str() == Some(k));
                    if !m.contains_key(k) {
                        out.push((here.clone(), Change::Add(k.clone(), p)));
                    } else if !needed || get(p, "default").is_some() {
                        out.push((here.clone(), Change::Remove(k.clone())));
                    }
                }
            }
            if let Some(a) = map_values(s) {
                let (lo, hi) = counts(s, "minProperties", "maxProperties");
                if (m.len() as u64) < hi {
                    out.push((here.clone(), Change::AddEntry(a)));
                }
                if (m.len() as u64) > lo {
                    for k in m.keys().filter(|k| props(s).is_none_or(|ps| !ps.contains_key(*k))) {
                        out.push((here.clone(), Change::RemoveEntry(k.clone())));
                    }
                }
            }
        }
        _ => {}
    }
    for (seg, x, cs) in children(v, s) {
        let mut at = here.clone();
        at.push(seg);
        collect(x, cs, at, out);
    }
}

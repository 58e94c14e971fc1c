//! Field paths and sets of them, as structured-merge-diff's `fieldpath` keeps them: a path
//! element ([`Pe`]: field, list-map key, set value, index), the order the real server sorts
//! them in, and [`Set`], the tree of owned paths that `fieldsV1` encodes.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};

use ctop_schema::go::{json as go_json, quote as go_quote};
use serde_json::{Map, Value, json};

use super::Scope;

/// One step of a field path.
#[derive(Clone, Debug)]
pub(super) enum Pe {
    /// A field of an object.
    Field(String),
    /// A list-map item, by its key fields sorted by name.
    Key(Vec<(String, Value)>),
    /// A set item, by value.
    Val(Value),
    /// An item by position (only ever read from stored `fieldsV1`).
    Index(usize),
}

impl Pe {
    pub(super) fn rank(&self) -> u8 {
        match self {
            Pe::Field(_) => 0,
            Pe::Key(_) => 1,
            Pe::Val(_) => 2,
            Pe::Index(_) => 3,
        }
    }

    /// The `fieldsV1` key.
    pub(super) fn encode(&self) -> String {
        match self {
            Pe::Field(f) => format!("f:{f}"),
            Pe::Key(fields) => {
                let parts: Vec<String> =
                    fields.iter().map(|(n, v)| format!("{}:{}", go_json(&json!(n)), go_json(v))).collect();
                format!("k:{{{}}}", parts.join(","))
            }
            Pe::Val(v) => format!("v:{}", go_json(v)),
            Pe::Index(i) => format!("i:{i}"),
        }
    }

    /// Parses a `fieldsV1` key; `Ok(None)` for a kind this version does not know.
    pub(super) fn decode(key: &str) -> Result<Option<Pe>, String> {
        let Some((kind, rest)) = key.split_once(':') else {
            return Ok(None);
        };
        let json = |s: &str| serde_json::from_str::<Value>(s).map_err(|e| format!("{key}: {e}"));
        Ok(Some(match kind {
            "f" => Pe::Field(rest.to_owned()),
            "v" => Pe::Val(json(rest)?),
            "k" => match json(rest)? {
                Value::Object(m) => Pe::Key(m.into_iter().collect()),
                _ => return Err(format!("{key}: a key must be a JSON object")),
            },
            "i" => Pe::Index(rest.parse().map_err(|e| format!("{key}: {e}"))?),
            _ => return Ok(None),
        }))
    }

    /// The element as printed in paths (`.name`, `[name="x"]`, `[="v"]`, `[0]`).
    pub(super) fn display(&self) -> String {
        match self {
            Pe::Field(f) => format!(".{f}"),
            Pe::Key(fields) => {
                let parts: Vec<String> =
                    fields.iter().map(|(n, v)| format!("{n}={}", value_string(v))).collect();
                format!("[{}]", parts.join(","))
            }
            Pe::Val(v) => format!("[={}]", value_string(v)),
            Pe::Index(i) => format!("[{i}]"),
        }
    }
}

impl Ord for Pe {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (Pe::Field(a), Pe::Field(b)) => a.cmp(b),
            (Pe::Key(a), Pe::Key(b)) => {
                for ((an, av), (bn, bv)) in a.iter().zip(b) {
                    let c = an.cmp(bn).then_with(|| cmp_values(av, bv));
                    if c != Ordering::Equal {
                        return c;
                    }
                }
                a.len().cmp(&b.len())
            }
            (Pe::Val(a), Pe::Val(b)) => cmp_values(a, b),
            (Pe::Index(a), Pe::Index(b)) => a.cmp(b),
            _ => self.rank().cmp(&other.rank()),
        }
    }
}

impl PartialOrd for Pe {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Pe {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Pe {}

/// The total order structured-merge-diff puts on values: numbers, strings, booleans,
/// lists, maps, null.
pub(super) fn cmp_values(a: &Value, b: &Value) -> Ordering {
    let rank = |v: &Value| match v {
        Value::Number(_) => 0,
        Value::String(_) => 1,
        Value::Bool(_) => 2,
        Value::Array(_) => 3,
        Value::Object(_) => 4,
        Value::Null => 5,
    };
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(i), Some(j)) => i.cmp(&j),
            _ => x.as_f64().partial_cmp(&y.as_f64()).unwrap_or(Ordering::Equal),
        },
        (Value::String(x), Value::String(y)) => x.cmp(y),
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        (Value::Array(x), Value::Array(y)) => x
            .iter()
            .zip(y)
            .map(|(p, q)| cmp_values(p, q))
            .find(|c| c.is_ne())
            .unwrap_or(x.len().cmp(&y.len())),
        (Value::Object(x), Value::Object(y)) => x
            .iter()
            .zip(y)
            .map(|((kp, vp), (kq, vq))| kp.cmp(kq).then_with(|| cmp_values(vp, vq)))
            .find(|c| c.is_ne())
            .unwrap_or(x.len().cmp(&y.len())),
        _ => rank(a).cmp(&rank(b)),
    }
}

/// A set of field paths: `members` are owned here, `children` hold owned paths below
/// (never empty).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Set {
    pub(super) members: BTreeSet<Pe>,
    pub(super) children: BTreeMap<Pe, Set>,
}

impl Set {
    pub(super) fn is_empty(&self) -> bool {
        self.members.is_empty() && self.children.is_empty()
    }

    pub(super) fn insert(&mut self, path: &[Pe]) {
        match path {
            [] => {}
            [pe] => {
                self.members.insert(pe.clone());
            }
            [pe, rest @ ..] => self.children.entry(pe.clone()).or_default().insert(rest),
        }
    }

    pub(super) fn has(&self, path: &[Pe]) -> bool {
        match path {
            [] => false,
            [pe] => self.members.contains(pe),
            [pe, rest @ ..] => self.children.get(pe).is_some_and(|c| c.has(rest)),
        }
    }

    pub(super) fn union(&self, other: &Set) -> Set {
        let mut out = self.clone();
        out.members.extend(other.members.iter().cloned());
        for (pe, child) in &other.children {
            let merged = match out.children.get(pe) {
                Some(mine) => mine.union(child),
                None => child.clone(),
            };
            out.children.insert(pe.clone(), merged);
        }
        out
    }

    pub(super) fn intersection(&self, other: &Set) -> Set {
        let members = self.members.intersection(&other.members).cloned().collect();
        let children = self
            .children
            .iter()
            .filter_map(|(pe, c)| Some((pe.clone(), c.intersection(other.children.get(pe)?))))
            .filter(|(_, c)| !c.is_empty())
            .collect();
        Set { members, children }
    }

    /// Member-wise difference: a parent minus a child keeps the parent.
    pub(super) fn difference(&self, other: &Set) -> Set {
        let members = self.members.difference(&other.members).cloned().collect();
        let children = self
            .children
            .iter()
            .map(|(pe, c)| {
                (pe.clone(), other.children.get(pe).map_or_else(|| c.clone(), |o| c.difference(o)))
            })
            .filter(|(_, c)| !c.is_empty())
            .collect();
        Set { members, children }
    }

    /// Like [`Set::difference`], but a member of `other` also removes everything below it.
    pub(super) fn recursive_difference(&self, other: &Set) -> Set {
        let members = self.members.difference(&other.members).cloned().collect();
        let children = self
            .children
            .iter()
            .filter(|(pe, _)| !other.members.contains(pe))
            .map(|(pe, c)| {
                (pe.clone(), other.children.get(pe).map_or_else(|| c.clone(), |o| c.recursive_difference(o)))
            })
            .filter(|(_, c)| !c.is_empty())
            .collect();
        Set { members, children }
    }

    /// Adds every field that has owned paths below it as a member (every object field is a
    /// "named" field here, as in a struct).
    pub(super) fn ensure_named(&self) -> Set {
        let mut members = self.members.clone();
        members.extend(self.children.keys().filter(|pe| matches!(pe, Pe::Field(_))).cloned());
        let children = self.children.iter().map(|(pe, c)| (pe.clone(), c.ensure_named())).collect();
        Set { members, children }
    }

    /// Every member path, members of a level before its children (the real iteration order).
    pub(super) fn paths(&self) -> Vec<Vec<Pe>> {
        let mut out: Vec<Vec<Pe>> = self.members.iter().map(|pe| vec![pe.clone()]).collect();
        for (pe, child) in &self.children {
            for mut rest in child.paths() {
                rest.insert(0, pe.clone());
                out.push(rest);
            }
        }
        out
    }

    pub(super) fn to_json(&self) -> Value {
        let mut out = Map::new();
        for pe in self.members.iter().chain(self.children.keys()) {
            let mut node = match self.children.get(pe) {
                Some(child) => child.to_json(),
                None => json!({}),
            };
            if self.members.contains(pe)
                && let Value::Object(m) = &mut node
                && self.children.contains_key(pe)
            {
                m.insert(".".into(), json!({}));
            }
            out.insert(pe.encode(), node);
        }
        Value::Object(out)
    }

    pub(super) fn from_json(v: &Value) -> Result<Set, String> {
        let Value::Object(m) = v else {
            return Err(format!("expected a JSON object, got {v}"));
        };
        let mut set = Set::default();
        for (key, child) in m {
            if key == "." {
                continue;
            }
            let Some(pe) = Pe::decode(key)? else { continue };
            let Value::Object(cm) = child else {
                return Err(format!("{key}: expected a JSON object"));
            };
            let below = Set::from_json(child)?;
            if cm.contains_key(".") || below.is_empty() {
                set.members.insert(pe.clone());
            }
            if !below.is_empty() {
                set.children.insert(pe, below);
            }
        }
        Ok(set)
    }
}

/// The paths nobody owns (the real strip set, plus the deletion markers).
pub(super) fn strip_set() -> Set {
    let mut set = Set::default();
    for f in ["apiVersion", "kind", "metadata"] {
        set.insert(&[Pe::Field(f.into())]);
    }
    for f in [
        "name",
        "namespace",
        "creationTimestamp",
        "selfLink",
        "uid",
        "clusterName",
        "generation",
        "managedFields",
        "resourceVersion",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
    ] {
        set.insert(&[Pe::Field("metadata".into()), Pe::Field(f.into())]);
    }
    set
}

/// The top-level fields a request of this scope may not touch.
pub(super) fn ignored_set(scope: Scope, objects: &[&Value]) -> Set {
    let mut set = Set::default();
    match scope {
        Scope::All => {}
        Scope::NoStatus => set.insert(&[Pe::Field("status".into())]),
        Scope::StatusOnly => {
            for key in objects.iter().filter_map(|o| o.as_object()).flat_map(|m| m.keys()) {
                if key != "status" {
                    set.insert(&[Pe::Field(key.clone())]);
                }
            }
        }
    }
    set
}

pub(super) fn scoped_config(cfg: &Map<String, Value>, scope: Scope) -> Value {
    let keep = |k: &str| match scope {
        Scope::All => true,
        Scope::NoStatus => k != "status",
        Scope::StatusOnly => matches!(k, "status" | "apiVersion" | "kind"),
    };
    Value::Object(cfg.iter().filter(|(k, _)| keep(k)).map(|(k, v)| (k.clone(), v.clone())).collect())
}

pub(super) fn path_string(path: &[Pe]) -> String {
    path.iter().map(Pe::display).collect()
}

// ---------------------------------------------------------------------------------------

pub(super) fn at(path: &[Pe], message: &str) -> String {
    if path.is_empty() { message.to_owned() } else { format!("{}: {message}", path_string(path)) }
}

/// A value as structured-merge-diff prints it inside paths.
pub(super) fn value_string(v: &Value) -> String {
    match v {
        Value::String(s) => go_quote(s),
        other => go_json(other),
    }
}

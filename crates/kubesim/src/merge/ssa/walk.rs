//! Walks over two objects with the kind's list types (structured-merge-diff's `typed`):
//! the set of paths a configuration names, the diff of two objects, and the merge of an
//! applied configuration into the live object with conflict detection and removal of what
//! an applier stopped naming. Start at [`Walk::apply_core`].

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use serde_json::{Map, Value, json};

use ctop_schema::go::quote as go_quote;

use super::Manager;
use super::compat::LAST_APPLIED_POINTER;
use super::fieldpath::{Pe, Set, at, cmp_values, strip_set};
use super::managed::{Entry, Id, Managed, Owned};
use crate::kinds::meta::str_at_pointer;
use crate::merge::shape::{ListType, Shape};

pub(super) static NULL: Value = Value::Null;

/// Adds, changes and removals between two objects.
#[derive(Default, Debug)]
pub(super) struct Diff {
    pub(super) modified: Set,
    pub(super) added: Set,
    pub(super) removed: Set,
}

impl Diff {
    pub(super) fn exclude(&mut self, ignored: &Set) {
        self.modified = self.modified.recursive_difference(ignored);
        self.added = self.added.recursive_difference(ignored);
        self.removed = self.removed.recursive_difference(ignored);
    }

    pub(super) fn touched(&self) -> Set {
        self.modified.union(&self.added)
    }
}

/// How a node is walked, from the JSON types on both sides (null fits anything).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Leaf,
    Map,
    List,
    Mismatch,
}

pub(super) fn kind_of(l: Option<&Value>, r: Option<&Value>) -> Kind {
    let of = |v: Option<&Value>| match v {
        None | Some(Value::Null) => None,
        Some(Value::Object(_)) => Some(Kind::Map),
        Some(Value::Array(_)) => Some(Kind::List),
        Some(_) => Some(Kind::Leaf),
    };
    match (of(l), of(r)) {
        (Some(a), Some(b)) if a != b => Kind::Mismatch,
        (Some(k), _) | (None, Some(k)) => k,
        (None, None) => Kind::Leaf,
    }
}

pub(super) fn field_path(path: &[Pe]) -> Vec<&str> {
    path.iter().filter_map(|pe| if let Pe::Field(f) = pe { Some(f.as_str()) } else { None }).collect()
}

pub(super) struct Walk<'s> {
    pub(super) shape: &'s dyn Shape,
}

impl Walk<'_> {
    pub(super) fn list_type(&self, path: &[Pe]) -> ListType {
        match self.shape.list_type(&field_path(path)) {
            ListType::Map(keys) if keys.is_empty() => ListType::Set,
            other => other,
        }
    }

    pub(super) fn atomic_map(&self, path: &[Pe]) -> bool {
        self.shape.atomic_map(&field_path(path))
    }

    /// The path element naming `item` in a granular list, or why it cannot be named.
    pub(super) fn item_pe(list: &ListType, item: &Value) -> Result<Pe, String> {
        match (list, item) {
            (ListType::Map(_), Value::Null) => {
                Err("associative list with keys may not have a null element".into())
            }
            (ListType::Map(keys), Value::Object(m)) => {
                let mut fields = Vec::new();
                for key in keys {
                    match m.get(key) {
                        Some(v) => fields.push((key.clone(), v.clone())),
                        // The schema default of every built-in `protocol` list key.
                        None if key == "protocol" => fields.push((key.clone(), json!("TCP"))),
                        None => {
                            return Err(format!(
                                "associative list with keys has an element that omits key field {} (and doesn't have default value)",
                                go_quote(key)
                            ));
                        }
                    }
                }
                fields.sort_by(|a, b| a.0.cmp(&b.0));
                Ok(Pe::Key(fields))
            }
            (ListType::Map(_), _) => Err("associative list with keys may not have non-map elements".into()),
            (_, Value::Object(_)) => {
                Err("associative list without keys has an element that's a map type".into())
            }
            (_, Value::Array(_)) => Err("not supported: associative list with lists as elements".into()),
            (_, Value::Null) => {
                Err("associative list without keys has an element that's an explicit null".into())
            }
            (_, v) => Ok(Pe::Val(v.clone())),
        }
    }

    /// The fields `v` sets (ToFieldSet). `strict` reports duplicate list keys.
    pub(super) fn to_set(
        &self,
        path: &mut Vec<Pe>,
        v: &Value,
        set: &mut Set,
        errors: &mut Vec<String>,
        strict: bool,
    ) {
        match v {
            Value::Object(m) => {
                if self.atomic_map(path) {
                    set.insert(path);
                    return;
                }
                for (k, child) in m {
                    path.push(Pe::Field(k.clone()));
                    self.to_set(path, child, set, errors, strict);
                    // An empty map is owned as a leaf (null is, as a scalar): that is how
                    // an applier keeps `field: {}` (typed/tofieldset.go, visitMapItems).
                    if child.as_object().is_some_and(Map::is_empty) {
                        set.insert(path);
                    }
                    path.pop();
                }
            }
            Value::Array(items) => {
                let list = self.list_type(path);
                if list == ListType::Atomic {
                    set.insert(path);
                    return;
                }
                let mut seen = BTreeSet::new();
                for (i, item) in items.iter().enumerate() {
                    let pe = match Self::item_pe(&list, item) {
                        Ok(pe) => pe,
                        Err(e) => {
                            errors.push(at(path, &format!("element {i}: {e}")));
                            continue;
                        }
                    };
                    if strict && !seen.insert(pe.clone()) {
                        errors.push(at(path, &format!("duplicate entries for key {}", pe.display())));
                        continue;
                    }
                    path.push(pe);
                    self.to_set(path, item, set, errors, strict);
                    set.insert(path);
                    path.pop();
                }
            }
            _ => set.insert(path),
        }
    }

    /// The set of a stored object (duplicates and bad items tolerated).
    pub(super) fn fields(&self, v: &Value) -> Set {
        let mut set = Set::default();
        self.to_set(&mut Vec::new(), v, &mut set, &mut Vec::new(), false);
        set
    }

    /// Merges `r` (applied) over `l` (live). A map or list empty or null on both sides is
    /// a leaf that takes `r`; an applied null over a live map or list with content merges
    /// nothing into it, so the live content stays until pruned (typed/merge.go, doMap and
    /// doList with emptyPromoteToLeaf).
    pub(super) fn merge(&self, path: &mut Vec<Pe>, l: Option<&Value>, r: Option<&Value>) -> Option<Value> {
        let Some(r) = r else { return l.cloned() };
        match kind_of(l, Some(r)) {
            Kind::Map if !self.atomic_map(path) => {
                let (lm, rm) = (l.and_then(Value::as_object), r.as_object());
                let empty = |m: Option<&Map<String, Value>>| m.is_none_or(Map::is_empty);
                if empty(lm) && empty(rm) {
                    return Some(r.clone());
                }
                let mut out = Map::new();
                let keys: BTreeSet<&String> = lm.into_iter().chain(rm).flat_map(Map::keys).collect();
                for k in keys {
                    path.push(Pe::Field(k.clone()));
                    let child = self.merge(path, lm.and_then(|m| m.get(k)), rm.and_then(|m| m.get(k)));
                    path.pop();
                    if let Some(child) = child {
                        out.insert(k.clone(), child);
                    }
                }
                Some(Value::Object(out))
            }
            Kind::List => {
                let list = self.list_type(path);
                let la = l.and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
                let ra = r.as_array().map_or(&[][..], Vec::as_slice);
                if list == ListType::Atomic || (la.is_empty() && ra.is_empty()) {
                    return Some(r.clone());
                }
                Some(self.merge_list(path, &list, la, ra))
            }
            _ => Some(r.clone()),
        }
    }

    /// Merges list items by key (structured-merge-diff's order): live items keep their
    /// order, new applied items go right after the applied item before them, and items
    /// both sides have are emitted in the applied order, a live item waiting until the
    /// applied items before it are out. Live `[a, b, c]` + applied `[c, d, a]` gives
    /// `[b, c, d, a]`; live `[x, s]` + applied `[y, s]` gives `[x, y, s]`.
    pub(super) fn merge_list(
        &self,
        path: &mut Vec<Pe>,
        list: &ListType,
        la: &[Value],
        ra: &[Value],
    ) -> Value {
        let rhs: Vec<(Pe, &Value)> =
            ra.iter().filter_map(|v| Self::item_pe(list, v).ok().map(|pe| (pe, v))).collect();
        let mut robs: BTreeMap<&Pe, &Value> = BTreeMap::new();
        for (pe, v) in &rhs {
            robs.entry(pe).or_insert(*v);
        }
        let lhs: Vec<(Option<Pe>, &Value)> = la.iter().map(|v| (Self::item_pe(list, v).ok(), v)).collect();
        // A key that appears twice in the live list is merged as if its value were null.
        let mut lobs: BTreeMap<&Pe, &Value> = BTreeMap::new();
        for (pe, v) in &lhs {
            if let Some(pe) = pe {
                lobs.entry(pe).and_modify(|seen| *seen = &NULL).or_insert(*v);
            }
        }
        let mut shared: VecDeque<&Pe> =
            rhs.iter().map(|(pe, _)| pe).filter(|pe| lobs.contains_key(pe)).collect();
        let mut next = shared.pop_front();
        let mut done: BTreeSet<&Pe> = BTreeSet::new();
        let mut out = Vec::new();
        let item =
            |path: &mut Vec<Pe>, pe: &Pe, l: Option<&Value>, r: Option<&Value>, out: &mut Vec<Value>| {
                path.push(pe.clone());
                out.extend(self.merge(path, l, r));
                path.pop();
            };
        let (mut li, mut ri) = (0, 0);
        while li < lhs.len() || ri < rhs.len() {
            if let (Some((Some(lpe), _)), Some((rpe, rv))) = (lhs.get(li), rhs.get(ri)) {
                if lpe == rpe {
                    done.insert(lpe);
                    item(path, lpe, lobs.get(lpe).copied(), Some(rv), &mut out);
                    li += 1;
                    ri += 1;
                    next = shared.pop_front();
                    continue;
                }
                if robs.contains_key(lpe) && next.is_some_and(|n| n != lpe) {
                    li += 1;
                    continue;
                }
            }
            if let Some((lpe, lv)) = lhs.get(li) {
                match lpe {
                    None => {
                        out.push((*lv).clone());
                        li += 1;
                        continue;
                    }
                    Some(pe) if !robs.contains_key(pe) => {
                        item(path, pe, Some(lv), None, &mut out);
                        li += 1;
                        continue;
                    }
                    Some(pe) if done.contains(pe) => {
                        li += 1;
                        continue;
                    }
                    Some(_) => {}
                }
            }
            if let Some((rpe, rv)) = rhs.get(ri) {
                done.insert(rpe);
                item(path, rpe, lobs.get(rpe).copied(), Some(rv), &mut out);
                ri += 1;
                if next == Some(rpe) {
                    next = shared.pop_front();
                }
            }
        }
        Value::Array(out)
    }

    pub(super) fn diff(&self, l: &Value, r: &Value) -> Diff {
        let mut d = Diff::default();
        self.compare(&mut Vec::new(), Some(l), Some(r), &mut d);
        d
    }

    /// Whether a container is compared as one value (atomic, or empty on both sides).
    pub(super) fn is_leaf(&self, path: &[Pe], kind: Kind, l: Option<&Value>, r: Option<&Value>) -> bool {
        let empty = |v: Option<&Value>| match v {
            Some(Value::Object(m)) => m.is_empty(),
            Some(Value::Array(a)) => a.is_empty(),
            _ => true,
        };
        match kind {
            Kind::Map => self.atomic_map(path) || (empty(l) && empty(r)),
            Kind::List => self.list_type(path) == ListType::Atomic || (empty(l) && empty(r)),
            _ => true,
        }
    }

    pub(super) fn compare(&self, path: &mut Vec<Pe>, l: Option<&Value>, r: Option<&Value>, d: &mut Diff) {
        let kind = kind_of(l, r);
        if kind == Kind::Mismatch {
            // A type change: the old children go, the node itself is modified.
            let lk = kind_of(l, None);
            if lk != Kind::Leaf && !self.is_leaf(path, lk, l, None) {
                self.compare_children(path, lk, l, None, d);
            }
            d.modified.insert(path);
            return;
        }
        if self.is_leaf(path, kind, l, r) {
            match (l, r) {
                (None, Some(_)) => d.added.insert(path),
                (Some(_), None) => d.removed.insert(path),
                (Some(a), Some(b)) if cmp_values(a, b).is_ne() => d.modified.insert(path),
                _ => {}
            }
            return;
        }
        self.compare_children(path, kind, l, r, d);
        if l.is_none() {
            d.added.insert(path);
        } else if r.is_none() {
            d.removed.insert(path);
        }
    }

    pub(super) fn compare_children(
        &self,
        path: &mut Vec<Pe>,
        kind: Kind,
        l: Option<&Value>,
        r: Option<&Value>,
        d: &mut Diff,
    ) {
        if kind == Kind::Map {
            let (lm, rm) = (l.and_then(Value::as_object), r.and_then(Value::as_object));
            let keys: BTreeSet<&String> = lm.into_iter().chain(rm).flat_map(Map::keys).collect();
            for k in keys {
                path.push(Pe::Field(k.clone()));
                self.compare(path, lm.and_then(|m| m.get(k)), rm.and_then(|m| m.get(k)), d);
                path.pop();
            }
            return;
        }
        let list = self.list_type(path);
        let mut order: Vec<Pe> = Vec::new();
        let mut lmap: BTreeMap<Pe, Vec<&Value>> = BTreeMap::new();
        let mut rmap: BTreeMap<Pe, Vec<&Value>> = BTreeMap::new();
        for item in l.and_then(Value::as_array).into_iter().flatten() {
            if let Ok(pe) = Self::item_pe(&list, item) {
                if !lmap.contains_key(&pe) {
                    order.push(pe.clone());
                }
                lmap.entry(pe).or_default().push(item);
            }
        }
        for item in r.and_then(Value::as_array).into_iter().flatten() {
            if let Ok(pe) = Self::item_pe(&list, item) {
                if !lmap.contains_key(&pe) && !rmap.contains_key(&pe) {
                    order.push(pe.clone());
                }
                rmap.entry(pe).or_default().push(item);
            }
        }
        for pe in order {
            let ls = lmap.get(&pe).map_or(&[][..], Vec::as_slice);
            let rs = rmap.get(&pe).map_or(&[][..], Vec::as_slice);
            path.push(pe);
            match (ls.len(), rs.len()) {
                (0 | 1, 0 | 1) => self.compare(path, ls.first().copied(), rs.first().copied(), d),
                (a, b) if a >= 2 && b >= 2 => {
                    if a != b || ls.iter().zip(rs).any(|(x, y)| x != y) {
                        d.modified.insert(path);
                    }
                }
                (a, _) if a >= 2 => {
                    if let Some(first) = rs.first() {
                        self.compare(path, None, Some(first), d);
                    }
                    d.removed.insert(path);
                }
                _ => {
                    if let Some(first) = ls.first() {
                        self.compare(path, Some(first), None, d);
                    }
                    d.added.insert(path);
                }
            }
            path.pop();
        }
    }

    /// `v` without the members of `set` (RemoveItems). A map or list left with nothing
    /// (or empty or atomic to begin with) becomes null, and its parent keeps the key or
    /// the item with that null: kube-apiserver v1.32 and v1.33 (structured-merge-diff
    /// v4) and v1.36 patch releases since the revert of structured-merge-diff#306
    /// (v6.3.3, v6.4.2) do so (typed/remove.go, doMap and doList). The null then reaches
    /// validation: a non-nullable object field fails with `must be of type object: "null"`.
    pub(super) fn remove(&self, path: &mut Vec<Pe>, v: &Value, set: &Set) -> Value {
        match v {
            Value::Object(m) => {
                if m.is_empty() || self.atomic_map(path) {
                    return Value::Null;
                }
                let mut out = Map::new();
                for (k, child) in m {
                    let pe = Pe::Field(k.clone());
                    if set.members.contains(&pe) {
                        continue;
                    }
                    let kept = match set.children.get(&pe) {
                        Some(below) => {
                            path.push(pe);
                            let kept = self.remove(path, child, below);
                            path.pop();
                            kept
                        }
                        None => child.clone(),
                    };
                    out.insert(k.clone(), kept);
                }
                if out.is_empty() { Value::Null } else { Value::Object(out) }
            }
            Value::Array(items) => {
                let list = self.list_type(path);
                if items.is_empty() || list == ListType::Atomic {
                    return Value::Null;
                }
                let mut out = Vec::new();
                for item in items {
                    let Ok(pe) = Self::item_pe(&list, item) else {
                        out.push(item.clone());
                        continue;
                    };
                    if set.members.contains(&pe) {
                        continue;
                    }
                    match set.children.get(&pe) {
                        Some(below) => {
                            path.push(pe);
                            out.push(self.remove(path, item, below));
                            path.pop();
                        }
                        None => out.push(item.clone()),
                    }
                }
                if out.is_empty() { Value::Null } else { Value::Array(out) }
            }
            other => other.clone(),
        }
    }

    pub(super) fn remove_root(&self, v: &Value, set: &Set) -> Value {
        match self.remove(&mut Vec::new(), v, set) {
            Value::Null => json!({}),
            kept => kept,
        }
    }

    /// Removes what the applier owned last time (`last`), owns no longer and nobody else
    /// owns, with the structs that only held such fields (the real three-step prune).
    pub(super) fn prune(&self, merged: &Value, managed: &Managed, last: &Set) -> Value {
        let last = last.ensure_named();
        let first = self.remove_root(merged, &last);
        let owned = managed.values().fold(Set::default(), |acc, e| acc.union(&e.set)).ensure_named();
        let merged_fields = self.fields(merged).ensure_named();
        let keep = self.fields(&first).ensure_named().union(&owned);
        let second = self.remove_root(merged, &merged_fields.difference(&keep));
        let gone = merged_fields.difference(&self.fields(&second).ensure_named()).intersection(&last);
        self.remove_root(merged, &gone)
    }

    /// Merge, prune, find conflicts, move ownership. Conflicts come back as (owner, path).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn apply_core(
        &self,
        live: &Value,
        config: &Value,
        applied: &Set,
        mut managed: Managed,
        mgr: &Manager<'_>,
        force: bool,
        ignored: &Set,
    ) -> Result<(Value, Managed), Vec<Owned>> {
        let merged = self.merge(&mut Vec::new(), Some(live), Some(config)).unwrap_or_else(|| json!({}));
        let me = Id::apply(mgr);
        let (last, time) = managed.get(&me).map(|e| (e.set.clone(), e.time.clone())).unwrap_or_default();
        managed.insert(me.clone(), Entry { set: applied.clone(), api_version: mgr.api_version.into(), time });
        let object = if last.is_empty() { merged } else { self.prune(&merged, &managed, &last) };
        let mut diff = self.diff(live, &object);
        diff.exclude(ignored);
        let touched = diff.touched();
        let conflicts: Vec<(Id, Set)> = managed
            .iter()
            .filter(|(id, _)| **id != me)
            .map(|(id, e)| (id.clone(), e.set.intersection(&touched)))
            .filter(|(_, c)| !c.is_empty())
            .collect();
        if !force && !conflicts.is_empty() {
            let mut flat: Vec<Owned> = conflicts
                .into_iter()
                .flat_map(|(id, c)| c.paths().into_iter().map(move |p| (id.clone(), p)))
                .collect();
            flat.sort_by_cached_key(|(id, _)| id.json());
            return Err(flat);
        }
        for (id, taken) in conflicts {
            if let Some(e) = managed.get_mut(&id) {
                e.set = e.set.difference(&taken);
            }
        }
        for (id, e) in managed.iter_mut() {
            if *id != me {
                e.set = e.set.difference(&diff.removed);
            }
        }
        if let Some(e) = managed.get_mut(&me) {
            e.set = e.set.difference(&strip_set());
        }
        managed.retain(|_, e| !e.set.is_empty());
        if live == &object {
            return Ok((live.clone(), managed));
        }
        if let Some(e) = managed.get_mut(&me) {
            e.time = Some(mgr.time.into());
        }
        Ok((object, managed))
    }

    /// The fields kubectl's client-side apply annotation set and that still hold their
    /// value: kubectl's first server-side apply may take them over without conflict.
    pub(super) fn last_applied_fields(&self, live: &Value, mgr: &Manager<'_>) -> Option<Set> {
        let text = live.pointer(LAST_APPLIED_POINTER)?.as_str()?;
        let last: Value = serde_json::from_str(text).ok()?;
        if str_at_pointer(&last, "/apiVersion") != mgr.api_version
            || str_at_pointer(&last, "/kind").is_empty()
        {
            return None;
        }
        let (mut set, mut errors) = (Set::default(), Vec::new());
        self.to_set(&mut Vec::new(), &last, &mut set, &mut errors, true);
        if !errors.is_empty() {
            return None;
        }
        let d = self.diff(&last, live);
        Some(set.difference(&d.modified).difference(&d.added).difference(&d.removed))
    }
}

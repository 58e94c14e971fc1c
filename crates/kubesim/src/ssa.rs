//! Server-side apply and `metadata.managedFields`, the way kube-apiserver's field manager
//! (structured-merge-diff plus the apiserver's wrappers around it) does them.
//!
//! Start at [`apply`] (a `PATCH` with `application/apply-patch+yaml`) and [`update`] (every
//! other write: create, `PUT`, merge/JSON/strategic patches, after the patch has been
//! applied). Both take and return whole objects as [`serde_json::Value`] and rewrite
//! `metadata.managedFields`; list merging follows the kind's [`Shape`].
//!
//! What the real server does, and this module copies:
//!
//! * Ownership is a set of field paths per manager, stored as `fieldsV1`: `f:<field>`,
//!   `k:{"key":value}` for list-map items, `v:<json>` for set items, `".": {}` when the
//!   manager owns a node that also has owned children, `{}` for leaves. Atomic lists and
//!   maps are one leaf. `apiVersion`, `kind` and the server-set parts of `metadata` are
//!   never owned.
//! * An applier owns exactly what its last configuration named. Applying changes a field
//!   another manager owns only if forced; otherwise the request fails with a 409 whose
//!   message is [`conflict_message`]. Equal values are shared, not conflicts. Fields the
//!   applier named last time, no longer names and nobody else owns are removed, together
//!   with the structs that only held them.
//! * Any other write gives the fields it changed to `(manager, "Update", apiVersion)` and
//!   takes them from everybody else; it never conflicts. A client may rewrite
//!   `managedFields` itself; `[]` or `[{}]` clears them and an object without any stops
//!   being tracked until the next apply.
//! * Entries are sorted like the real server (Apply before Update, then by time, manager,
//!   apiVersion, subresource); at most ten Update entries are kept, the oldest being merged
//!   into `ancient-changes`. A write that changes nothing keeps the old timestamps.
//!
//! The objects given to [`update`] should already be defaulted (the real server defaults
//! while decoding, so defaulted fields belong to the writer); the result of [`apply`] still
//! needs defaulting (the real server defaults after merging, and nobody owns those fields).

use ctop_schema::go::{json as go_json, json_type, quote as go_quote};
use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

use serde_json::{Map, Value, json};

use crate::shape::{ListType, Shape};

/// Which top-level fields a request may own and change (the registry's reset fields).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// The whole object: kinds without a status subresource.
    All,
    /// The main resource of a kind with a status subresource: `status` is ignored, neither
    /// merged nor owned, and an update keeps the old `status`.
    NoStatus,
    /// The `status` subresource: only `status` is taken, everything else stays as it was.
    StatusOnly,
}

/// Who is writing, and when.
#[derive(Clone, Copy, Debug)]
pub struct Manager<'a> {
    /// The field manager (`?fieldManager=`, or the user-agent-derived default).
    pub name: &'a str,
    /// The request's group/version, e.g. `apps/v1` or `v1`.
    pub api_version: &'a str,
    /// The subresource written to (`Some("status")`), `None` for the main resource.
    pub subresource: Option<&'a str>,
    /// The current time, RFC 3339 in whole seconds (`2024-05-01T10:00:00Z`).
    pub time: &'a str,
}

/// One field that an apply would take from another manager.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Conflict {
    /// The other manager's name (`managedFields[].manager`).
    pub manager: String,
    /// The field, e.g. `.spec.replicas` or `.spec.containers[name="app"].image`.
    pub field: String,
    /// The real `details.causes[].message`, e.g. `conflict with "kubectl" using apps/v1`
    /// (Update managers carry their API version; appliers are named alone).
    pub message: String,
    /// The real server's manager identifier (the entry as compact JSON without fields or
    /// time); [`conflict_message`] groups and sorts managers by it.
    pub identifier: String,
}

/// Why [`apply`] or [`update`] refused a request. [`SsaError::code`] and
/// [`SsaError::status`] give the HTTP answer the real server sends.
#[derive(Debug, thiserror::Error)]
pub enum SsaError {
    /// The apply would change fields other managers own and was not forced (409 Conflict).
    #[error("{}", conflict_message(.conflicts))]
    Conflict {
        /// Every conflicting field, grouped by manager.
        conflicts: Vec<Conflict>,
    },
    /// The apply configuration carried `metadata.managedFields` (400 BadRequest).
    #[error("metadata.managedFields must be nil")]
    ManagedFieldsInApply,
    /// The apply configuration's apiVersion/kind is not the endpoint's (400 BadRequest);
    /// the payload is Go's rendering of the configuration's GroupVersionKind.
    #[error("invalid object type: {0}")]
    InvalidObjectType(String),
    /// The request body is not a JSON object (400 BadRequest).
    #[error("error decoding YAML: {0}")]
    InvalidBody(String),
    /// The live object's `managedFields` could not be decoded (500).
    #[error("failed to decode managed fields: {0}")]
    BadManagedFields(String),
    /// The apply configuration does not fit the kind's list types: a list-map item without
    /// its key, a null or non-object item, duplicate keys (500, reason empty, as the real
    /// server's `failed to create typed patch object` error).
    #[error("{0}")]
    InvalidConfig(String),
}

impl SsaError {
    /// The HTTP status code the real server answers with.
    #[must_use]
    pub fn code(&self) -> u16 {
        match self {
            Self::Conflict { .. } => 409,
            Self::ManagedFieldsInApply | Self::InvalidObjectType(_) | Self::InvalidBody(_) => 400,
            Self::BadManagedFields(_) | Self::InvalidConfig(_) => 500,
        }
    }

    /// The `reason` of the real `Status` (empty for the 500s, whose reason is unknown).
    #[must_use]
    pub fn reason(&self) -> &'static str {
        match self.code() {
            409 => "Conflict",
            400 => "BadRequest",
            _ => "",
        }
    }
}

/// The real top-level message of a 409 apply conflict:
/// `Apply failed with 1 conflict: conflict with "mgr" using apps/v1: .spec.replicas`, or for
/// several, `Apply failed with 2 conflicts: conflicts with "a":\n- .spec.x\nconflicts with
/// "b" using v1:\n- .spec.y` (managers sorted by identifier, fields in set order).
#[must_use]
pub fn conflict_message(conflicts: &[Conflict]) -> String {
    if let [only] = conflicts {
        return format!("Apply failed with 1 conflict: {}: {}", only.message, only.field);
    }
    let mut groups: BTreeMap<&str, Vec<&Conflict>> = BTreeMap::new();
    for c in conflicts {
        groups.entry(c.identifier.as_str()).or_default().push(c);
    }
    let mut lines = Vec::new();
    for group in groups.values() {
        let who = group[0].message.strip_prefix("conflict with ").unwrap_or(&group[0].message);
        lines.push(format!("conflicts with {who}:"));
        lines.extend(group.iter().map(|c| format!("- {}", c.field)));
    }
    format!("Apply failed with {} conflicts: {}", conflicts.len(), lines.join("\n"))
}

/// Server-side apply: merges `config` into `live` (`None` when the apply creates the
/// object) for `mgr`, prunes what `mgr` stopped applying, and returns the new whole object
/// with `metadata.managedFields` updated. Fails on conflicts unless `force`.
///
/// # Errors
/// See [`SsaError`]: conflicts, a malformed configuration, or undecodable live
/// `managedFields`.
pub fn apply(
    live: Option<&Value>,
    config: &Value,
    mgr: &Manager<'_>,
    force: bool,
    shape: &dyn Shape,
    scope: Scope,
) -> Result<Value, SsaError> {
    let Value::Object(cfg) = config else {
        return Err(SsaError::InvalidBody(not_a_map(config)));
    };
    let (api_version, kind) = (str_at(config, "/apiVersion"), str_at(config, "/kind"));
    if api_version != mgr.api_version || live.is_some_and(|l| str_at(l, "/kind") != kind) {
        return Err(SsaError::InvalidObjectType(gvk_string(api_version, kind)));
    }
    if config.pointer("/metadata/managedFields").is_some_and(|m| !m.is_null()) {
        return Err(SsaError::ManagedFieldsInApply);
    }
    let walk = Walk { shape };
    let mut errors = Vec::new();
    let mut applied = Set::default();
    walk.to_set(&mut Vec::new(), config, &mut applied, &mut errors, true);
    if !errors.is_empty() {
        return Err(SsaError::InvalidConfig(format!(
            "failed to create typed patch object ({}): {}",
            gvknn(config),
            join_errors(&errors)
        )));
    }

    let mut live_obj = live.cloned().unwrap_or_else(|| json!({}));
    drop_managed_fields(&mut live_obj);
    let mut managed = decode_managed(live.and_then(|l| l.pointer("/metadata/managedFields")))
        .map_err(SsaError::BadManagedFields)?;
    let ignored = ignored_set(scope, &[&live_obj, config]);
    if managed.is_empty() && live.is_some() {
        // The real server first gives every existing field to "before-first-apply".
        let base = empty_object(api_version, kind);
        let mut diff = walk.diff(&base, &live_obj);
        diff.exclude(&ignored);
        let owned = diff.touched().difference(&diff.removed).recursive_difference(&ignored);
        let owned = owned.difference(&strip_set());
        if !owned.is_empty() {
            let id = Id::update("before-first-apply", mgr);
            let entry =
                Entry { set: owned, api_version: mgr.api_version.into(), time: Some(mgr.time.into()) };
            managed.insert(id, entry);
        }
    }

    let scoped = scoped_config(cfg, scope);
    let applied = applied.recursive_difference(&ignored);
    let run = |force| walk.apply_core(&live_obj, &scoped, &applied, managed.clone(), mgr, force, &ignored);
    let (mut object, managed) = match run(force) {
        Ok(done) => done,
        Err(conflicts) => {
            // kubectl's own server-side apply may take over what its client-side apply
            // annotation says it set.
            let allowed = (mgr.name == "kubectl").then(|| walk.last_applied_fields(&live_obj, mgr)).flatten();
            match allowed {
                Some(allowed) => {
                    let rest: Vec<_> = conflicts.into_iter().filter(|(_, p)| !allowed.has(p)).collect();
                    if !rest.is_empty() {
                        return Err(conflict_error(rest));
                    }
                    run(true).map_err(conflict_error)?
                }
                None => return Err(conflict_error(conflicts)),
            }
        }
    };
    set_managed_fields(&mut object, &managed);
    if mgr.name == "kubectl" {
        sync_last_applied(&mut object, config);
    }
    if let Some(live) = live {
        keep_old_timestamps(live, &mut object);
    }
    Ok(object)
}

/// Any write other than apply: `new` is the whole object as the client's request made it
/// (after patching and defaulting), `old` the stored object (`None` on create). Gives the
/// changed fields to `(mgr, "Update", apiVersion, subresource)`, takes them from everybody
/// else and returns `new` with `metadata.managedFields` rewritten. Out-of-scope parts are
/// taken from `old` (see [`Scope`]).
///
/// `new.metadata.managedFields` written by the client: absent or undecodable keeps `old`'s;
/// `[]` or `[{}]` clears them (and an existing object then stays untracked); anything else
/// decodable replaces them before this write is tracked. Subresource writes always keep
/// `old`'s.
///
/// # Errors
/// [`SsaError::InvalidBody`] when `new` is not an object; nothing else fails.
pub fn update(
    old: Option<&Value>,
    new: Value,
    mgr: &Manager<'_>,
    shape: &dyn Shape,
    scope: Scope,
) -> Result<Value, SsaError> {
    if !new.is_object() {
        return Err(SsaError::InvalidBody(not_a_map(&new)));
    }
    let mut new = new;
    let client_fields = new.pointer("/metadata/managedFields").cloned();
    drop_managed_fields(&mut new);
    match (scope, old) {
        (Scope::NoStatus, _) => set_top(&mut new, "status", old.and_then(|o| o.get("status")).cloned()),
        (Scope::StatusOnly, Some(o)) => {
            let status = new.get("status").cloned();
            new = o.clone();
            drop_managed_fields(&mut new);
            set_top(&mut new, "status", status);
        }
        _ => {}
    }
    let old_fields = old.and_then(|o| o.pointer("/metadata/managedFields"));
    let from_old = || decode_managed(old_fields).unwrap_or_default();
    let managed = if mgr.subresource.is_some() {
        from_old()
    } else if is_reset(client_fields.as_ref()) {
        Managed::new()
    } else {
        match decode_managed(client_fields.as_ref()) {
            Ok(m) if !m.is_empty() => m,
            _ => from_old(),
        }
    };
    let creating = old.is_none_or(|o| str_at(o, "/metadata/uid").is_empty());
    if managed.is_empty() && !creating {
        return Ok(new);
    }

    let walk = Walk { shape };
    let old_obj = match old {
        Some(o) => {
            let mut o = o.clone();
            drop_managed_fields(&mut o);
            o
        }
        None => empty_object(str_at(&new, "/apiVersion"), str_at(&new, "/kind")),
    };
    let ignored = ignored_set(scope, &[&old_obj, &new]);
    let mut diff = walk.diff(&old_obj, &new);
    diff.exclude(&ignored);
    let touched = diff.touched();
    let mut managed = managed;
    for entry in managed.values_mut() {
        entry.set = entry.set.difference(&touched).difference(&diff.removed);
    }
    managed.retain(|_, e| !e.set.is_empty());
    let taken = touched.difference(&diff.removed).recursive_difference(&ignored).difference(&strip_set());
    if !taken.is_empty() {
        let me = Id::update(mgr.name, mgr);
        let set = match managed.get(&me) {
            Some(previous) => taken.union(&previous.set),
            None => taken,
        };
        managed.insert(me, Entry { set, api_version: mgr.api_version.into(), time: Some(mgr.time.into()) });
    }
    cap_update_managers(&mut managed, 10);
    set_managed_fields(&mut new, &managed);
    if let Some(old) = old {
        keep_old_timestamps(old, &mut new);
    }
    Ok(new)
}

// ---------------------------------------------------------------------------------------
// Path elements and field sets (structured-merge-diff's `fieldpath`).

/// One step of a field path.
#[derive(Clone, Debug)]
enum Pe {
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
    fn rank(&self) -> u8 {
        match self {
            Pe::Field(_) => 0,
            Pe::Key(_) => 1,
            Pe::Val(_) => 2,
            Pe::Index(_) => 3,
        }
    }

    /// The `fieldsV1` key.
    fn encode(&self) -> String {
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
    fn decode(key: &str) -> Result<Option<Pe>, String> {
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
    fn display(&self) -> String {
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
fn cmp_values(a: &Value, b: &Value) -> Ordering {
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
struct Set {
    members: BTreeSet<Pe>,
    children: BTreeMap<Pe, Set>,
}

impl Set {
    fn is_empty(&self) -> bool {
        self.members.is_empty() && self.children.is_empty()
    }

    fn insert(&mut self, path: &[Pe]) {
        match path {
            [] => {}
            [pe] => {
                self.members.insert(pe.clone());
            }
            [pe, rest @ ..] => self.children.entry(pe.clone()).or_default().insert(rest),
        }
    }

    fn has(&self, path: &[Pe]) -> bool {
        match path {
            [] => false,
            [pe] => self.members.contains(pe),
            [pe, rest @ ..] => self.children.get(pe).is_some_and(|c| c.has(rest)),
        }
    }

    fn union(&self, other: &Set) -> Set {
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

    fn intersection(&self, other: &Set) -> Set {
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
    fn difference(&self, other: &Set) -> Set {
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
    fn recursive_difference(&self, other: &Set) -> Set {
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
    fn ensure_named(&self) -> Set {
        let mut members = self.members.clone();
        members.extend(self.children.keys().filter(|pe| matches!(pe, Pe::Field(_))).cloned());
        let children = self.children.iter().map(|(pe, c)| (pe.clone(), c.ensure_named())).collect();
        Set { members, children }
    }

    /// Every member path, members of a level before its children (the real iteration order).
    fn paths(&self) -> Vec<Vec<Pe>> {
        let mut out: Vec<Vec<Pe>> = self.members.iter().map(|pe| vec![pe.clone()]).collect();
        for (pe, child) in &self.children {
            for mut rest in child.paths() {
                rest.insert(0, pe.clone());
                out.push(rest);
            }
        }
        out
    }

    fn to_json(&self) -> Value {
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

    fn from_json(v: &Value) -> Result<Set, String> {
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
fn strip_set() -> Set {
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
fn ignored_set(scope: Scope, objects: &[&Value]) -> Set {
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

fn scoped_config(cfg: &Map<String, Value>, scope: Scope) -> Value {
    let keep = |k: &str| match scope {
        Scope::All => true,
        Scope::NoStatus => k != "status",
        Scope::StatusOnly => matches!(k, "status" | "apiVersion" | "kind"),
    };
    Value::Object(cfg.iter().filter(|(k, _)| keep(k)).map(|(k, v)| (k.clone(), v.clone())).collect())
}

fn path_string(path: &[Pe]) -> String {
    path.iter().map(Pe::display).collect()
}

// ---------------------------------------------------------------------------------------
// managedFields entries.

/// A manager's identity: appliers by (name, subresource), updaters also by apiVersion.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Id {
    manager: String,
    apply: bool,
    /// Empty for appliers.
    api_version: String,
    subresource: String,
}

impl Id {
    fn apply(mgr: &Manager<'_>) -> Id {
        let subresource = mgr.subresource.unwrap_or_default().to_owned();
        Id { manager: mgr.name.into(), apply: true, api_version: String::new(), subresource }
    }

    fn update(name: &str, mgr: &Manager<'_>) -> Id {
        let subresource = mgr.subresource.unwrap_or_default().to_owned();
        Id { manager: name.into(), apply: false, api_version: mgr.api_version.into(), subresource }
    }

    /// The real identifier: the entry as Go marshals it without fields and time.
    fn json(&self) -> String {
        let mut parts = Vec::new();
        if !self.manager.is_empty() {
            parts.push(format!("\"manager\":{}", go_json(&json!(self.manager))));
        }
        parts.push(format!("\"operation\":\"{}\"", if self.apply { "Apply" } else { "Update" }));
        if !self.api_version.is_empty() {
            parts.push(format!("\"apiVersion\":{}", go_json(&json!(self.api_version))));
        }
        if !self.subresource.is_empty() {
            parts.push(format!("\"subresource\":{}", go_json(&json!(self.subresource))));
        }
        format!("{{{}}}", parts.join(","))
    }

    /// How conflict messages name the manager.
    fn print(&self) -> String {
        let mut out = go_quote(&self.manager);
        if !self.subresource.is_empty() {
            out.push_str(&format!(" with subresource {}", go_quote(&self.subresource)));
        }
        if !self.apply {
            out.push_str(&format!(" using {}", self.api_version));
        }
        out
    }
}

#[derive(Clone, Debug)]
struct Entry {
    set: Set,
    api_version: String,
    time: Option<String>,
}

type Managed = BTreeMap<Id, Entry>;

/// A field and who owns it (one conflict).
type Owned = (Id, Vec<Pe>);

fn decode_managed(fields: Option<&Value>) -> Result<Managed, String> {
    let entries = match fields {
        None | Some(Value::Null) => return Ok(Managed::new()),
        Some(Value::Array(entries)) => entries,
        Some(other) => {
            return Err(format!("json: cannot unmarshal {} into []ManagedFieldsEntry", json_type(other)));
        }
    };
    let mut out = Managed::new();
    for (i, entry) in entries.iter().enumerate() {
        let Value::Object(e) = entry else {
            return Err(format!("json: cannot unmarshal {} into ManagedFieldsEntry", json_type(entry)));
        };
        let text = |key: &str| match e.get(key) {
            None | Some(Value::Null) => Ok(String::new()),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(v) => {
                Err(format!("json: cannot unmarshal {} into field {key} of type string", json_type(v)))
            }
        };
        let apply = match text("operation")?.as_str() {
            "Apply" => true,
            "Update" => false,
            _ => return Err("operation must be `Apply` or `Update`".into()),
        };
        let api_version = text("apiVersion")?;
        if api_version.is_empty() {
            return Err("apiVersion must not be empty".into());
        }
        match text("fieldsType")?.as_str() {
            "FieldsV1" => {}
            "" => return Err(format!("missing fieldsType in managed fields entry {i}")),
            other => {
                return Err(format!("invalid fieldsType {} in managed fields entry {i}", go_quote(other)));
            }
        }
        let set = match e.get("fieldsV1") {
            None | Some(Value::Null) => Set::default(),
            Some(f) => Set::from_json(f).map_err(|err| {
                format!(
                    "error decoding versioned set from managed fields entry {i}: error decoding set: {err}"
                )
            })?,
        };
        let id = Id {
            manager: text("manager")?,
            apply,
            api_version: if apply { String::new() } else { api_version.clone() },
            subresource: text("subresource")?,
        };
        let time = Some(text("time")?).filter(|t| !t.is_empty());
        out.insert(id, Entry { set, api_version, time });
    }
    Ok(out)
}

/// `[]` and `[{}]` written by a client clear managedFields.
fn is_reset(fields: Option<&Value>) -> bool {
    match fields {
        Some(Value::Array(a)) => match a.as_slice() {
            [] => true,
            [Value::Object(o)] => o.is_empty(),
            _ => false,
        },
        _ => false,
    }
}

fn set_managed_fields(obj: &mut Value, managed: &Managed) {
    drop_managed_fields(obj);
    if managed.is_empty() {
        return;
    }
    let mut rows: Vec<(&Id, &Entry)> = managed.iter().collect();
    rows.sort_by(|(a, ea), (b, eb)| {
        (!a.apply, unix_seconds(ea.time.as_deref()), &a.manager, &ea.api_version, &a.subresource).cmp(&(
            !b.apply,
            unix_seconds(eb.time.as_deref()),
            &b.manager,
            &eb.api_version,
            &b.subresource,
        ))
    });
    let entries: Vec<Value> = rows
        .into_iter()
        .map(|(id, e)| {
            let mut m = Map::new();
            if !id.manager.is_empty() {
                m.insert("manager".into(), json!(id.manager));
            }
            m.insert("operation".into(), json!(if id.apply { "Apply" } else { "Update" }));
            m.insert("apiVersion".into(), json!(e.api_version));
            if let Some(t) = &e.time {
                m.insert("time".into(), json!(t));
            }
            m.insert("fieldsType".into(), json!("FieldsV1"));
            m.insert("fieldsV1".into(), e.set.to_json());
            if !id.subresource.is_empty() {
                m.insert("subresource".into(), json!(id.subresource));
            }
            Value::Object(m)
        })
        .collect();
    if let Some(Value::Object(meta)) = obj.get_mut("metadata") {
        meta.insert("managedFields".into(), Value::Array(entries));
    } else if let Value::Object(o) = obj {
        o.insert("metadata".into(), json!({ "managedFields": entries }));
    }
}

/// Keeps at most `max` Update entries by merging the oldest into per-version
/// `ancient-changes` entries.
fn cap_update_managers(managed: &mut Managed, max: usize) {
    let mut updaters: Vec<Id> = managed.keys().filter(|id| !id.apply).cloned().collect();
    if updaters.len() <= max {
        return;
    }
    let when = |id: &Id| unix_seconds(managed.get(id).and_then(|e| e.time.as_deref()));
    updaters.sort_by_cached_key(|id| (when(id), id.json()));
    let mut first_of_version: BTreeMap<String, Id> = BTreeMap::new();
    let mut length = updaters.len();
    for id in updaters {
        if length <= max {
            break;
        }
        let Some(entry) = managed.get(&id).cloned() else {
            continue;
        };
        let Some(first) = first_of_version.get(&entry.api_version) else {
            first_of_version.insert(entry.api_version.clone(), id);
            continue;
        };
        let bucket = Id {
            manager: "ancient-changes".into(),
            apply: false,
            api_version: entry.api_version.clone(),
            subresource: String::new(),
        };
        if !managed.contains_key(&bucket)
            && let Some(moved) = managed.remove(first)
        {
            managed.insert(bucket.clone(), moved);
        }
        let previous = managed.get(&bucket).map(|b| b.set.clone()).unwrap_or_default();
        let merged =
            Entry { set: entry.set.union(&previous), api_version: entry.api_version, time: entry.time };
        managed.insert(bucket, merged);
        managed.remove(&id);
        length -= 1;
    }
}

/// When only timestamps in managedFields changed, the real server keeps the old ones so a
/// no-op write does not bump the resourceVersion.
fn keep_old_timestamps(old: &Value, new: &mut Value) {
    let (Some(Value::Array(before)), Some(Value::Array(after))) =
        (old.pointer("/metadata/managedFields"), new.pointer("/metadata/managedFields"))
    else {
        return;
    };
    if before.len() != after.len() || after.is_empty() {
        return;
    }
    if before.iter().zip(after).all(|(a, b)| a.get("time") == b.get("time")) {
        return;
    }
    let untimed = |e: &Value| {
        let mut e = e.clone();
        if let Value::Object(m) = &mut e {
            m.remove("time");
        }
        e
    };
    if before.iter().zip(after).any(|(a, b)| untimed(a) != untimed(b)) {
        return;
    }
    let (mut o, mut n) = (old.clone(), new.clone());
    drop_managed_fields(&mut o);
    drop_managed_fields(&mut n);
    if o != n {
        return;
    }
    let restored: Vec<Value> = before
        .iter()
        .zip(after)
        .map(|(b, a)| {
            let mut a = untimed(a);
            if let (Value::Object(m), Some(t)) = (&mut a, b.get("time")) {
                m.insert("time".into(), t.clone());
            }
            a
        })
        .collect();
    if let Some(Value::Object(meta)) = new.get_mut("metadata") {
        meta.insert("managedFields".into(), Value::Array(restored));
    }
}

/// Seconds since the epoch of an RFC 3339 time (0 when absent or unreadable, like a nil
/// time in the real sort).
fn unix_seconds(time: Option<&str>) -> i64 {
    time.and_then(|t| t.parse::<jiff::Timestamp>().ok()).map_or(0, jiff::Timestamp::as_second)
}

// ---------------------------------------------------------------------------------------
// Walks over objects with the kind's list types (structured-merge-diff's `typed`).

static NULL: Value = Value::Null;

/// Adds, changes and removals between two objects.
#[derive(Default, Debug)]
struct Diff {
    modified: Set,
    added: Set,
    removed: Set,
}

impl Diff {
    fn exclude(&mut self, ignored: &Set) {
        self.modified = self.modified.recursive_difference(ignored);
        self.added = self.added.recursive_difference(ignored);
        self.removed = self.removed.recursive_difference(ignored);
    }

    fn touched(&self) -> Set {
        self.modified.union(&self.added)
    }
}

/// How a node is walked, from the JSON types on both sides (null fits anything).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Leaf,
    Map,
    List,
    Mismatch,
}

fn kind_of(l: Option<&Value>, r: Option<&Value>) -> Kind {
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

fn field_path(path: &[Pe]) -> Vec<&str> {
    path.iter().filter_map(|pe| if let Pe::Field(f) = pe { Some(f.as_str()) } else { None }).collect()
}

struct Walk<'s> {
    shape: &'s dyn Shape,
}

impl Walk<'_> {
    fn list_type(&self, path: &[Pe]) -> ListType {
        match self.shape.list_type(&field_path(path)) {
            ListType::Map(keys) if keys.is_empty() => ListType::Set,
            other => other,
        }
    }

    fn atomic_map(&self, path: &[Pe]) -> bool {
        self.shape.atomic_map(&field_path(path))
    }

    /// The path element naming `item` in a granular list, or why it cannot be named.
    fn item_pe(list: &ListType, item: &Value) -> Result<Pe, String> {
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
    fn to_set(&self, path: &mut Vec<Pe>, v: &Value, set: &mut Set, errors: &mut Vec<String>, strict: bool) {
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
    fn fields(&self, v: &Value) -> Set {
        let mut set = Set::default();
        self.to_set(&mut Vec::new(), v, &mut set, &mut Vec::new(), false);
        set
    }

    /// Merges `r` (applied) over `l` (live). A map or list empty or null on both sides is
    /// a leaf that takes `r`; an applied null over a live map or list with content merges
    /// nothing into it, so the live content stays until pruned (typed/merge.go, doMap and
    /// doList with emptyPromoteToLeaf).
    fn merge(&self, path: &mut Vec<Pe>, l: Option<&Value>, r: Option<&Value>) -> Option<Value> {
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
    fn merge_list(&self, path: &mut Vec<Pe>, list: &ListType, la: &[Value], ra: &[Value]) -> Value {
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

    fn diff(&self, l: &Value, r: &Value) -> Diff {
        let mut d = Diff::default();
        self.compare(&mut Vec::new(), Some(l), Some(r), &mut d);
        d
    }

    /// Whether a container is compared as one value (atomic, or empty on both sides).
    fn is_leaf(&self, path: &[Pe], kind: Kind, l: Option<&Value>, r: Option<&Value>) -> bool {
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

    fn compare(&self, path: &mut Vec<Pe>, l: Option<&Value>, r: Option<&Value>, d: &mut Diff) {
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

    fn compare_children(
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
    fn remove(&self, path: &mut Vec<Pe>, v: &Value, set: &Set) -> Value {
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

    fn remove_root(&self, v: &Value, set: &Set) -> Value {
        match self.remove(&mut Vec::new(), v, set) {
            Value::Null => json!({}),
            kept => kept,
        }
    }

    /// Removes what the applier owned last time (`last`), owns no longer and nobody else
    /// owns, with the structs that only held such fields (the real three-step prune).
    fn prune(&self, merged: &Value, managed: &Managed, last: &Set) -> Value {
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
    fn apply_core(
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
    fn last_applied_fields(&self, live: &Value, mgr: &Manager<'_>) -> Option<Set> {
        let text = live.pointer(LAST_APPLIED_POINTER)?.as_str()?;
        let last: Value = serde_json::from_str(text).ok()?;
        if str_at(&last, "/apiVersion") != mgr.api_version || str_at(&last, "/kind").is_empty() {
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

// ---------------------------------------------------------------------------------------
// Small helpers.

const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";
const LAST_APPLIED_POINTER: &str = "/metadata/annotations/kubectl.kubernetes.io~1last-applied-configuration";

/// kubectl's server-side apply keeps an existing client-side annotation in step with what
/// it applied.
fn sync_last_applied(obj: &mut Value, config: &Value) {
    if obj.pointer(LAST_APPLIED_POINTER).is_none() {
        return;
    }
    let mut cfg = config.clone();
    if let Some(Value::Object(a)) = cfg.pointer_mut("/metadata/annotations") {
        a.remove(LAST_APPLIED);
    }
    let text = format!("{}\n", go_json(&cfg));
    if let Some(Value::Object(annotations)) = obj.pointer_mut("/metadata/annotations") {
        annotations.insert(LAST_APPLIED.into(), json!(text));
        let size: usize = annotations.iter().map(|(k, v)| k.len() + v.as_str().map_or(0, str::len)).sum();
        if size > 256 * 1024 {
            annotations.remove(LAST_APPLIED);
        }
    }
}

/// What a freshly made object of the kind looks like: the real server compares creates
/// against the Go zero value, in which some structs always exist, so they never get a
/// `".": {}` of their own. Only which objects exist matters; `metadata` is never owned.
fn empty_object(api_version: &str, kind: &str) -> Value {
    let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
    let template = json!({"metadata": {"creationTimestamp": null}, "spec": {"containers": null}});
    let mut obj = match (group, kind) {
        ("", "Pod") => json!({"spec": {"containers": null}, "status": {}}),
        ("apps", "Deployment") => {
            json!({"spec": {"template": template, "strategy": {}}, "status": {}})
        }
        ("apps", "ReplicaSet") | ("", "ReplicationController") => {
            json!({"spec": {"template": template}, "status": {}})
        }
        ("apps", "StatefulSet" | "DaemonSet") => {
            json!({"spec": {"template": template, "updateStrategy": {}}, "status": {}})
        }
        ("batch", "Job") => json!({"spec": {"template": template}, "status": {}}),
        ("batch", "CronJob") => json!({
            "spec": {"jobTemplate": {"metadata": {"creationTimestamp": null}, "spec": {"template": template}}},
            "status": {}
        }),
        ("", "Service") | ("networking.k8s.io", "Ingress") => {
            json!({"spec": {}, "status": {"loadBalancer": {}}})
        }
        ("", "PersistentVolumeClaim") => json!({"spec": {"resources": {}}, "status": {}}),
        ("", "Namespace" | "PersistentVolume") | ("policy", "PodDisruptionBudget") => {
            json!({"spec": {}, "status": {}})
        }
        ("", "Node") => {
            json!({"spec": {}, "status": {"daemonEndpoints": {"kubeletEndpoint": {}}, "nodeInfo": {}}})
        }
        ("coordination.k8s.io", "Lease") => json!({"spec": {}}),
        // Custom resources and kinds without such structs start empty.
        _ => json!({}),
    };
    if let Value::Object(o) = &mut obj {
        o.insert("apiVersion".into(), json!(api_version));
        o.insert("kind".into(), json!(kind));
    }
    obj
}

fn drop_managed_fields(obj: &mut Value) {
    if let Some(Value::Object(meta)) = obj.get_mut("metadata") {
        meta.remove("managedFields");
    }
}

fn set_top(obj: &mut Value, key: &str, value: Option<Value>) {
    if let Value::Object(o) = obj {
        match value {
            Some(v) => o.insert(key.into(), v),
            None => o.remove(key),
        };
    }
}

fn str_at<'v>(v: &'v Value, pointer: &str) -> &'v str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or_default()
}

fn gvk_string(api_version: &str, kind: &str) -> String {
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    format!("{group}/{version}, Kind={kind}")
}

/// `namespace/name; group/version, Kind=kind`, as the real errors name an object.
fn gvknn(obj: &Value) -> String {
    let (ns, name) = (str_at(obj, "/metadata/namespace"), str_at(obj, "/metadata/name"));
    format!("{ns}/{name}; {}", gvk_string(str_at(obj, "/apiVersion"), str_at(obj, "/kind")))
}

fn at(path: &[Pe], message: &str) -> String {
    if path.is_empty() { message.to_owned() } else { format!("{}: {message}", path_string(path)) }
}

fn join_errors(errors: &[String]) -> String {
    match errors {
        [one] => one.clone(),
        _ => format!("errors:\n  {}", errors.join("\n  ")),
    }
}

fn conflict_error(conflicts: Vec<Owned>) -> SsaError {
    let conflicts = conflicts
        .into_iter()
        .map(|(id, path)| Conflict {
            manager: id.manager.clone(),
            field: path_string(&path),
            message: format!("conflict with {}", id.print()),
            identifier: id.json(),
        })
        .collect();
    SsaError::Conflict { conflicts }
}

fn not_a_map(v: &Value) -> String {
    format!(
        "error unmarshaling JSON: while decoding JSON: json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
        json_type(v)
    )
}

/// A value as structured-merge-diff prints it inside paths.
fn value_string(v: &Value) -> String {
    match v {
        Value::String(s) => go_quote(s),
        other => go_json(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shape::{MergeStrategy, builtin_shape};

    const T0: &str = "2024-01-01T00:00:00Z";
    const T1: &str = "2024-01-01T00:00:01Z";
    const T2: &str = "2024-01-01T00:00:02Z";
    const CR: &str = "example.com/v1";

    /// A custom resource: `spec.items` keyed by name, `spec.tags` a set, `spec.args`
    /// atomic, `spec.selector` an atomic map.
    struct TestShape;

    impl Shape for TestShape {
        fn list_type(&self, path: &[&str]) -> ListType {
            match path {
                ["spec", "items"] => ListType::Map(vec!["name".into()]),
                ["spec", "tags"] | ["metadata", "finalizers"] => ListType::Set,
                _ => ListType::Atomic,
            }
        }
        fn merge_strategy(&self, _: &[&str]) -> MergeStrategy {
            MergeStrategy::Replace
        }
        fn atomic_map(&self, path: &[&str]) -> bool {
            path == ["spec", "selector"]
        }
    }

    fn mgr(name: &'static str, time: &'static str) -> Manager<'static> {
        Manager { name, api_version: CR, subresource: None, time }
    }

    fn widget(spec: Value) -> Value {
        json!({"apiVersion": CR, "kind": "Widget", "metadata": {"name": "w", "namespace": "ns"}, "spec": spec})
    }

    fn ok_apply(live: Option<&Value>, cfg: &Value, m: &Manager<'_>, force: bool) -> Value {
        apply(live, cfg, m, force, &TestShape, Scope::All).unwrap()
    }

    fn entries(obj: &Value) -> Vec<Value> {
        obj.pointer("/metadata/managedFields").and_then(Value::as_array).cloned().unwrap_or_default()
    }

    fn fields(obj: &Value, manager: &str, op: &str) -> Value {
        entries(obj)
            .into_iter()
            .find(|e| e["manager"] == manager && e["operation"] == op)
            .map(|e| e["fieldsV1"].clone())
            .unwrap_or(Value::Null)
    }

    fn conflicts_of(err: SsaError) -> Vec<Conflict> {
        match err {
            SsaError::Conflict { conflicts } => conflicts,
            other => panic!("expected a conflict, got {other:?}"),
        }
    }

    fn deployment_config(replicas: i64) -> Value {
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "app", "image": "nginx", "ports": [{"containerPort": 80}]}]}
                }
            }
        })
    }

    fn apps(name: &'static str, time: &'static str) -> Manager<'static> {
        Manager { name, api_version: "apps/v1", subresource: None, time }
    }

    #[test]
    fn create_by_apply_owns_exactly_the_config_in_the_real_format() {
        let cfg = deployment_config(1);
        let out = apply(None, &cfg, &apps("mgr", T0), false, &builtin_shape("Deployment"), Scope::NoStatus)
            .unwrap();
        let mut without = out.clone();
        drop_managed_fields(&mut without);
        assert_eq!(without, cfg);
        assert_eq!(
            entries(&out),
            vec![json!({
                "manager": "mgr", "operation": "Apply", "apiVersion": "apps/v1", "time": T0,
                "fieldsType": "FieldsV1",
                "fieldsV1": {
                    "f:metadata": {"f:labels": {"f:app": {}}},
                    "f:spec": {
                        "f:replicas": {}, "f:selector": {},
                        "f:template": {
                            "f:metadata": {"f:labels": {"f:app": {}}},
                            "f:spec": {"f:containers": {"k:{\"name\":\"app\"}": {
                                ".": {}, "f:image": {}, "f:name": {},
                                "f:ports": {"k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}}}
                            }}}
                        }
                    }
                }
            })]
        );
    }

    #[test]
    fn kubectl_create_fields_match_the_real_update_format() {
        let new = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "default", "uid": "u1", "labels": {"app": "web"}},
            "spec": {
                "replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {
                        "containers": [{"name": "app", "image": "nginx", "resources": {},
                                        "ports": [{"containerPort": 80, "protocol": "TCP"}]}],
                        "restartPolicy": "Always"
                    }
                }
            },
            "status": {"replicas": 3}
        });
        let m = Manager { name: "kubectl-create", api_version: "apps/v1", subresource: None, time: T0 };
        let out = update(None, new, &m, &builtin_shape("Deployment"), Scope::NoStatus).unwrap();
        assert!(out.get("status").is_none(), "status is dropped on create");
        let expected = json!({
            "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
            "f:spec": {
                "f:replicas": {}, "f:selector": {},
                "f:strategy": {"f:rollingUpdate": {".": {}, "f:maxSurge": {}, "f:maxUnavailable": {}}, "f:type": {}},
                "f:template": {
                    "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                    "f:spec": {
                        "f:containers": {"k:{\"name\":\"app\"}": {
                            ".": {}, "f:image": {}, "f:name": {}, "f:resources": {},
                            "f:ports": {".": {}, "k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {
                                ".": {}, "f:containerPort": {}, "f:protocol": {}
                            }}
                        }},
                        "f:restartPolicy": {}
                    }
                }
            }
        });
        assert_eq!(fields(&out, "kubectl-create", "Update"), expected);
        assert_eq!(entries(&out)[0]["apiVersion"], "apps/v1");
        // A custom resource has no zero value with structs in it: spec itself is new.
        let cr = update(None, widget(json!({"size": 1})), &mgr("c", T0), &TestShape, Scope::All).unwrap();
        assert_eq!(fields(&cr, "c", "Update"), json!({"f:spec": {".": {}, "f:size": {}}}));
    }

    #[test]
    fn reapplying_over_a_defaulted_object_keeps_the_defaults() {
        let shape = builtin_shape("Deployment");
        let cfg = deployment_config(1);
        let mut live = apply(None, &cfg, &apps("mgr", T0), false, &shape, Scope::NoStatus).unwrap();
        // What the registry's defaulting adds afterwards: owned by nobody.
        live["spec"]["revisionHistoryLimit"] = json!(10);
        live["spec"]["strategy"] = json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%"}});
        live["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"] = json!("Always");
        live["spec"]["template"]["spec"]["containers"][0]["ports"][0]["protocol"] = json!("TCP");
        live["status"] = json!({"replicas": 1});
        let again = apply(Some(&live), &cfg, &apps("mgr", T1), false, &shape, Scope::NoStatus).unwrap();
        assert_eq!(again, live);
        // Scaling through apply changes only replicas, and the entry's time.
        let scaled =
            apply(Some(&live), &deployment_config(3), &apps("mgr", T1), false, &shape, Scope::NoStatus)
                .unwrap();
        let mut expected = live.clone();
        expected["spec"]["replicas"] = json!(3);
        expected["metadata"]["managedFields"][0]["time"] = json!(T1);
        assert_eq!(scaled, expected);
    }

    #[test]
    fn reapplying_the_same_config_changes_nothing() {
        let cfg = widget(json!({"size": 1, "items": [{"name": "a", "v": 1}]}));
        let first = ok_apply(None, &cfg, &mgr("a", T0), false);
        let again = ok_apply(Some(&first), &cfg, &mgr("a", T1), false);
        assert_eq!(again, first);
    }

    #[test]
    fn dropping_a_field_removes_it_unless_someone_else_owns_it() {
        let live = ok_apply(
            None,
            &widget(json!({"size": 1, "color": "red", "shape": "round"})),
            &mgr("a", T0),
            false,
        );
        // b shares ownership of color by applying the same value.
        let live = ok_apply(Some(&live), &widget(json!({"color": "red"})), &mgr("b", T1), false);
        let out = ok_apply(Some(&live), &widget(json!({"size": 1})), &mgr("a", T2), false);
        assert_eq!(out["spec"], json!({"size": 1, "color": "red"}));
        assert_eq!(fields(&out, "a", "Apply"), json!({"f:spec": {"f:size": {}}}));
        assert_eq!(fields(&out, "b", "Apply"), json!({"f:spec": {"f:color": {}}}));
        // a no longer applying spec at all: its field goes, b's keeps spec alive.
        let bare = json!({"apiVersion": CR, "kind": "Widget", "metadata": {"name": "w"}});
        let out = ok_apply(Some(&out), &bare, &mgr("a", T2), false);
        assert_eq!(out["spec"], json!({"color": "red"}));
        assert_eq!(fields(&out, "a", "Apply"), Value::Null, "an empty set drops the entry");
    }

    #[test]
    fn dropping_the_last_owned_field_of_a_struct_removes_the_struct() {
        let live = ok_apply(None, &widget(json!({"size": 1, "extra": {"a": 1}})), &mgr("a", T0), false);
        let out = ok_apply(Some(&live), &widget(json!({"size": 1})), &mgr("a", T1), false);
        assert_eq!(out["spec"], json!({"size": 1}));
        assert_eq!(out["metadata"]["managedFields"][0]["time"], T1);
    }

    #[test]
    fn conflicting_appliers_fail_with_the_real_message_and_equal_values_are_shared() {
        let live = ok_apply(None, &widget(json!({"replicas": 1})), &mgr("a", T0), false);
        let err =
            apply(Some(&live), &widget(json!({"replicas": 2})), &mgr("b", T1), false, &TestShape, Scope::All)
                .unwrap_err();
        assert_eq!(err.code(), 409);
        assert_eq!(err.to_string(), "Apply failed with 1 conflict: conflict with \"a\": .spec.replicas");
        let shared = ok_apply(Some(&live), &widget(json!({"replicas": 1})), &mgr("b", T1), false);
        assert_eq!(fields(&shared, "a", "Apply"), json!({"f:spec": {"f:replicas": {}}}));
        assert_eq!(fields(&shared, "b", "Apply"), json!({"f:spec": {"f:replicas": {}}}));
        // Unchanged object: the new entry carries no time, and sorts first.
        let names: Vec<Value> = entries(&shared).iter().map(|e| e["manager"].clone()).collect();
        assert_eq!(names, vec![json!("b"), json!("a")]);
        assert!(entries(&shared)[0].get("time").is_none());
    }

    #[test]
    fn force_moves_ownership() {
        let live = ok_apply(None, &widget(json!({"replicas": 1, "size": 3})), &mgr("a", T0), false);
        let out = ok_apply(Some(&live), &widget(json!({"replicas": 2})), &mgr("b", T1), true);
        assert_eq!(out["spec"], json!({"replicas": 2, "size": 3}));
        assert_eq!(fields(&out, "a", "Apply"), json!({"f:spec": {"f:size": {}}}));
        assert_eq!(fields(&out, "b", "Apply"), json!({"f:spec": {"f:replicas": {}}}));
        // a re-applying its old value now conflicts with b.
        let err = apply(
            Some(&out),
            &widget(json!({"replicas": 1, "size": 3})),
            &mgr("a", T2),
            false,
            &TestShape,
            Scope::All,
        )
        .unwrap_err();
        assert_eq!(conflicts_of(err)[0].manager, "b");
    }

    #[test]
    fn an_update_takes_fields_and_a_later_apply_conflicts_with_it() {
        let live = ok_apply(None, &widget(json!({"replicas": 1, "paused": false})), &mgr("a", T0), false);
        let mut edited = live.clone();
        edited["spec"]["replicas"] = json!(5);
        let after = update(Some(&live), edited, &mgr("kubectl-edit", T1), &TestShape, Scope::All).unwrap();
        assert_eq!(fields(&after, "a", "Apply"), json!({"f:spec": {"f:paused": {}}}));
        assert_eq!(fields(&after, "kubectl-edit", "Update"), json!({"f:spec": {"f:replicas": {}}}));
        let ops: Vec<Value> = entries(&after).iter().map(|e| e["operation"].clone()).collect();
        assert_eq!(ops, vec![json!("Apply"), json!("Update")], "Apply entries sort first");
        let err = apply(
            Some(&after),
            &widget(json!({"replicas": 1, "paused": false})),
            &mgr("a", T2),
            false,
            &TestShape,
            Scope::All,
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "Apply failed with 1 conflict: conflict with \"kubectl-edit\" using example.com/v1: .spec.replicas"
        );
    }

    #[test]
    fn several_conflicts_are_grouped_by_manager() {
        let live =
            ok_apply(None, &widget(json!({"replicas": 1, "paused": false, "size": 1})), &mgr("a", T0), false);
        let mut edited = live.clone();
        edited["spec"]["replicas"] = json!(5);
        edited["spec"]["size"] = json!(2);
        let live = update(Some(&live), edited, &mgr("b", T1), &TestShape, Scope::All).unwrap();
        let live = ok_apply(Some(&live), &widget(json!({"paused": true})), &mgr("c", T1), true);
        let err = apply(
            Some(&live),
            &widget(json!({"replicas": 1, "paused": false, "size": 1})),
            &mgr("a", T2),
            false,
            &TestShape,
            Scope::All,
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "Apply failed with 3 conflicts: conflicts with \"b\" using example.com/v1:\n- .spec.replicas\n- .spec.size\nconflicts with \"c\":\n- .spec.paused"
        );
    }

    #[test]
    fn containers_merge_by_name_and_each_manager_owns_its_own() {
        let shape = builtin_shape("Deployment");
        let cfg = |name: &str, image: &str| {
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
                   "spec": {"template": {"spec": {"containers": [{"name": name, "image": image}]}}}})
        };
        let live = apply(None, &cfg("a", "img-a"), &apps("one", T0), false, &shape, Scope::NoStatus).unwrap();
        let live =
            apply(Some(&live), &cfg("b", "img-b"), &apps("two", T1), false, &shape, Scope::NoStatus).unwrap();
        assert_eq!(
            live["spec"]["template"]["spec"]["containers"],
            json!([{"name": "a", "image": "img-a"}, {"name": "b", "image": "img-b"}])
        );
        assert_eq!(
            fields(&live, "two", "Apply")["f:spec"]["f:template"]["f:spec"]["f:containers"],
            json!({"k:{\"name\":\"b\"}": {".": {}, "f:image": {}, "f:name": {}}})
        );
        // "one" changing b's image conflicts on the item's field, with the real path.
        let err = apply(Some(&live), &cfg("b", "other"), &apps("one", T2), false, &shape, Scope::NoStatus)
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "Apply failed with 1 conflict: conflict with \"two\": .spec.template.spec.containers[name=\"b\"].image"
        );
        // "one" dropping container a removes it; b stays.
        let none = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}});
        let out = apply(Some(&live), &none, &apps("one", T2), false, &shape, Scope::NoStatus).unwrap();
        assert_eq!(out["spec"]["template"]["spec"]["containers"], json!([{"name": "b", "image": "img-b"}]));
    }

    #[test]
    fn list_map_merge_order_follows_the_real_algorithm() {
        let items = |names: &[&str]| json!(names.iter().map(|n| json!({"name": n})).collect::<Vec<_>>());
        let live = ok_apply(None, &widget(json!({"items": items(&["a", "b", "c"])})), &mgr("x", T0), false);
        let out =
            ok_apply(Some(&live), &widget(json!({"items": items(&["c", "d", "a"])})), &mgr("y", T1), false);
        assert_eq!(out["spec"]["items"], items(&["b", "c", "d", "a"]));
        let out = ok_apply(Some(&live), &widget(json!({"items": items(&["z", "b"])})), &mgr("y", T1), false);
        assert_eq!(out["spec"]["items"], items(&["a", "z", "b", "c"]));
    }

    #[test]
    fn sets_are_unions_and_each_applier_removes_only_its_own_items() {
        let with = |tags: Value| widget(json!({"tags": tags}));
        let live = ok_apply(None, &with(json!(["x", "shared"])), &mgr("a", T0), false);
        let live = ok_apply(Some(&live), &with(json!(["y", "shared"])), &mgr("b", T1), false);
        // Live order is kept, but new items land where the applied order puts them.
        assert_eq!(live["spec"]["tags"], json!(["x", "y", "shared"]));
        assert_eq!(
            fields(&live, "b", "Apply"),
            json!({"f:spec": {"f:tags": {"v:\"shared\"": {}, "v:\"y\"": {}}}})
        );
        let out = ok_apply(Some(&live), &with(json!([])), &mgr("a", T2), false);
        assert_eq!(out["spec"]["tags"], json!(["y", "shared"]));
    }

    #[test]
    fn finalizers_set_on_a_deployment() {
        let shape = builtin_shape("Deployment");
        let cfg = |f: Value| json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "finalizers": f}});
        let live =
            apply(None, &cfg(json!(["a.io/x"])), &apps("one", T0), false, &shape, Scope::NoStatus).unwrap();
        let live =
            apply(Some(&live), &cfg(json!(["b.io/y"])), &apps("two", T1), false, &shape, Scope::NoStatus)
                .unwrap();
        assert_eq!(live["metadata"]["finalizers"], json!(["a.io/x", "b.io/y"]));
        assert_eq!(
            fields(&live, "one", "Apply"),
            json!({"f:metadata": {"f:finalizers": {"v:\"a.io/x\"": {}}}})
        );
        let gone = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}});
        let out = apply(Some(&live), &gone, &apps("one", T2), false, &shape, Scope::NoStatus).unwrap();
        assert_eq!(out["metadata"]["finalizers"], json!(["b.io/y"]));
    }

    #[test]
    fn an_applied_empty_map_is_owned_and_a_map_emptied_by_pruning_becomes_null() {
        // The CronJob case: the applier keeps `jobTemplate: {}` but no longer applies
        // what was inside. The real server owns `f:jobTemplate` as a leaf and leaves a
        // null where the emptied map was (tofieldset.go, remove.go).
        let full = widget(json!({"schedule": "a", "jobTemplate": {"spec": {"template": {"x": 1}}}}));
        let live = ok_apply(None, &full, &mgr("a", T0), false);
        let out =
            ok_apply(Some(&live), &widget(json!({"schedule": "b", "jobTemplate": {}})), &mgr("a", T1), true);
        assert_eq!(out["spec"], json!({"schedule": "b", "jobTemplate": null}));
        assert_eq!(fields(&out, "a", "Apply"), json!({"f:spec": {"f:jobTemplate": {}, "f:schedule": {}}}));

        // A map the object did not have is created as `{}`, and owned.
        let out = ok_apply(None, &widget(json!({"jobTemplate": {}})), &mgr("a", T0), false);
        assert_eq!(out["spec"], json!({"jobTemplate": {}}));
        assert_eq!(fields(&out, "a", "Apply"), json!({"f:spec": {"f:jobTemplate": {}}}));
        let again = ok_apply(Some(&out), &widget(json!({"jobTemplate": {}})), &mgr("a", T1), false);
        assert_eq!(again, out, "re-applying {{}} changes nothing");

        // metadata.labels: {} the same way.
        let cfg = json!({"apiVersion": CR, "kind": "Widget", "metadata": {"name": "w", "labels": {}}});
        let out = ok_apply(None, &cfg, &mgr("a", T0), false);
        assert_eq!(out["metadata"]["labels"], json!({}));
        assert_eq!(fields(&out, "a", "Apply"), json!({"f:metadata": {"f:labels": {}}}));
        let labelled =
            json!({"apiVersion": CR, "kind": "Widget", "metadata": {"name": "w", "labels": {"k": "v"}}});
        let live = ok_apply(None, &labelled, &mgr("a", T0), false);
        let out = ok_apply(Some(&live), &cfg, &mgr("a", T1), false);
        assert_eq!(out["metadata"]["labels"], Value::Null, "emptied by pruning: null");
    }

    #[test]
    fn emptying_an_applied_map_leaves_a_null_that_a_metadata_update_keeps() {
        // The cronjob example's sequence: `jobTemplate.spec` applied with content, then as
        // `{}`. structured-merge-diff merges `{}` into the live map (merge.go: not both
        // empty), prunes what the manager no longer applies (update.go, prune), and
        // removing every key of a map leaves a null (remove.go, doMap), owned as a leaf.
        let full =
            widget(json!({"jobTemplate": {"spec": {"template": {"spec": {"containers": [{"name": "c"}]}}}}}));
        let live = ok_apply(None, &full, &mgr("a", T0), false);
        let emptied =
            ok_apply(Some(&live), &widget(json!({"jobTemplate": {"spec": {}}})), &mgr("a", T1), false);
        assert_eq!(emptied["spec"], json!({"jobTemplate": {"spec": null}}));
        assert_eq!(fields(&emptied, "a", "Apply"), json!({"f:spec": {"f:jobTemplate": {"f:spec": {}}}}));
        // The API server stores it as a read gives it back (the schema drops that null,
        // api::validate::as_read_back); a metadata-only update of that object leaves the
        // spec and the Apply entry alone.
        let mut stored = emptied.clone();
        stored["spec"] = json!({"jobTemplate": {}});
        let mut annotated = stored.clone();
        annotated["metadata"]["annotations"] = json!({"a": "b"});
        let out = update(Some(&stored), annotated, &mgr("kubectl-annotate", T2), &TestShape, Scope::All)
            .expect("a metadata update");
        assert_eq!(out["spec"], stored["spec"]);
        assert_eq!(fields(&out, "a", "Apply"), fields(&emptied, "a", "Apply"));
        assert_eq!(
            fields(&out, "kubectl-annotate", "Update"),
            json!({"f:metadata": {"f:annotations": {".": {}, "f:a": {}}}})
        );
        // Applying the same `{}` again over the read-back object makes it `{}` (both sides
        // empty: a leaf), as on the real server, where that write also counts as a change.
        let again = ok_apply(Some(&out), &widget(json!({"jobTemplate": {"spec": {}}})), &mgr("a", T2), false);
        assert_eq!(again["spec"], json!({"jobTemplate": {"spec": {}}}));
    }

    #[test]
    fn an_applied_empty_list_is_owned_only_when_atomic() {
        // An empty set or map list names no item, so nothing is owned (tofieldset.go,
        // doList); created, it stays as applied.
        let out = ok_apply(None, &widget(json!({"size": 1, "tags": [], "args": []})), &mgr("a", T0), false);
        assert_eq!(out["spec"], json!({"size": 1, "tags": [], "args": []}));
        assert_eq!(fields(&out, "a", "Apply"), json!({"f:spec": {"f:args": {}, "f:size": {}}}));
        // Over items the applier no longer applies, the unowned list goes whole (the
        // field is a member of the merged set and of nobody's).
        let cfg = widget(json!({"size": 1, "tags": ["x"], "items": [{"name": "i"}]}));
        let live = ok_apply(None, &cfg, &mgr("a", T0), false);
        let out =
            ok_apply(Some(&live), &widget(json!({"size": 1, "tags": [], "items": []})), &mgr("a", T1), false);
        assert_eq!(out["spec"], json!({"size": 1}));
    }

    #[test]
    fn an_applied_null_over_a_live_map_merges_nothing_into_it() {
        // typed/merge.go: a null over a map with content is not a leaf; what goes is what
        // pruning takes, and what another manager owns stays.
        let live = ok_apply(None, &widget(json!({"extra": {"a": 1}})), &mgr("a", T0), false);
        let live = ok_apply(Some(&live), &widget(json!({"extra": {"b": 2}})), &mgr("b", T1), false);
        let out = ok_apply(Some(&live), &widget(json!({"extra": null})), &mgr("a", T2), false);
        assert_eq!(out["spec"], json!({"extra": {"b": 2}}));
        assert_eq!(fields(&out, "a", "Apply"), json!({"f:spec": {"f:extra": {}}}));
    }

    #[test]
    fn atomic_lists_and_maps_are_replaced_and_owned_whole() {
        let live = ok_apply(
            None,
            &widget(json!({"args": [1, 2], "selector": {"a": "1", "b": "2"}})),
            &mgr("a", T0),
            false,
        );
        assert_eq!(fields(&live, "a", "Apply"), json!({"f:spec": {"f:args": {}, "f:selector": {}}}));
        let err =
            apply(Some(&live), &widget(json!({"args": [3]})), &mgr("b", T1), false, &TestShape, Scope::All)
                .unwrap_err();
        assert_eq!(conflicts_of(err)[0].field, ".spec.args");
        let out =
            ok_apply(Some(&live), &widget(json!({"args": [3], "selector": {"c": "3"}})), &mgr("b", T1), true);
        assert_eq!(out["spec"], json!({"args": [3], "selector": {"c": "3"}}));
        assert_eq!(fields(&out, "a", "Apply"), Value::Null);
    }

    #[test]
    fn status_is_outside_the_main_resource_and_alone_in_the_subresource() {
        let shape = builtin_shape("Deployment");
        let mut cfg = deployment_config(1);
        cfg["status"] = json!({"replicas": 7});
        let live = apply(None, &cfg, &apps("mgr", T0), false, &shape, Scope::NoStatus).unwrap();
        assert!(live.get("status").is_none());
        assert!(fields(&live, "mgr", "Apply").get("f:status").is_none());

        let status_mgr =
            Manager { name: "ctrl", api_version: "apps/v1", subresource: Some("status"), time: T1 };
        let mut status_cfg = deployment_config(9);
        status_cfg["status"] =
            json!({"replicas": 1, "conditions": [{"type": "Available", "status": "True"}]});
        let out = apply(Some(&live), &status_cfg, &status_mgr, false, &shape, Scope::StatusOnly).unwrap();
        assert_eq!(out["spec"], live["spec"], "spec untouched by the status subresource");
        assert_eq!(out["status"]["replicas"], 1);
        let e = entries(&out).into_iter().find(|e| e["manager"] == "ctrl").unwrap();
        assert_eq!(e["subresource"], "status");
        assert_eq!(
            e["fieldsV1"],
            json!({"f:status": {"f:conditions": {"k:{\"type\":\"Available\"}": {".": {}, "f:status": {}, "f:type": {}}}, "f:replicas": {}}})
        );
        // Someone else applying status conflicts with the subresource manager by name.
        let other = Manager { name: "other", api_version: "apps/v1", subresource: Some("status"), time: T2 };
        let mut other_cfg = deployment_config(1);
        other_cfg["status"] = json!({"replicas": 2});
        let err = apply(Some(&out), &other_cfg, &other, false, &shape, Scope::StatusOnly).unwrap_err();
        assert_eq!(
            err.to_string(),
            "Apply failed with 1 conflict: conflict with \"ctrl\" with subresource \"status\": .status.replicas"
        );

        // Updates: the main resource keeps the old status, the subresource the old rest.
        let mut new = out.clone();
        new["status"]["replicas"] = json!(42);
        new["spec"]["replicas"] = json!(3);
        let main = update(Some(&out), new.clone(), &apps("edit", T2), &shape, Scope::NoStatus).unwrap();
        assert_eq!(main["status"], out["status"]);
        assert_eq!(fields(&main, "edit", "Update"), json!({"f:spec": {"f:replicas": {}}}));
        let st_mgr =
            Manager { name: "kubelet", api_version: "apps/v1", subresource: Some("status"), time: T2 };
        let st = update(Some(&out), new, &st_mgr, &shape, Scope::StatusOnly).unwrap();
        assert_eq!(st["spec"], out["spec"]);
        assert_eq!(st["status"]["replicas"], 42);
        let e = entries(&st).into_iter().find(|e| e["manager"] == "kubelet").unwrap();
        assert_eq!(
            (e["subresource"].clone(), e["fieldsV1"].clone()),
            (json!("status"), json!({"f:status": {"f:replicas": {}}}))
        );
        assert_eq!(
            fields(&st, "ctrl", "Apply")["f:status"].get("f:replicas"),
            None,
            "taken from the applier"
        );
    }

    #[test]
    fn managed_fields_reset_and_untracked_objects() {
        let mut live = ok_apply(None, &widget(json!({"size": 1})), &mgr("a", T0), false);
        live["metadata"]["uid"] = json!("u1");
        let mut new = live.clone();
        new["metadata"]["managedFields"] = json!([{}]);
        new["spec"]["size"] = json!(2);
        let reset = update(Some(&live), new, &mgr("edit", T1), &TestShape, Scope::All).unwrap();
        assert!(reset.pointer("/metadata/managedFields").is_none());
        assert_eq!(reset["spec"]["size"], 2);
        // An untracked existing object stays untracked through updates...
        let mut next = reset.clone();
        next["spec"]["size"] = json!(3);
        let still = update(Some(&reset), next, &mgr("edit", T1), &TestShape, Scope::All).unwrap();
        assert!(still.pointer("/metadata/managedFields").is_none());
        // ...and an empty list resets too (the real isResetManagedFields).
        let mut empty = live.clone();
        empty["metadata"]["managedFields"] = json!([]);
        let cleared = update(Some(&live), empty, &mgr("edit", T1), &TestShape, Scope::All).unwrap();
        assert!(cleared.pointer("/metadata/managedFields").is_none());
        // The next apply gives every existing field to "before-first-apply" first.
        let err =
            apply(Some(&still), &widget(json!({"size": 9})), &mgr("a", T2), false, &TestShape, Scope::All)
                .unwrap_err();
        assert_eq!(
            err.to_string(),
            "Apply failed with 1 conflict: conflict with \"before-first-apply\" using example.com/v1: .spec.size"
        );
        let out = ok_apply(Some(&still), &widget(json!({"size": 3})), &mgr("a", T2), false);
        assert_eq!(fields(&out, "a", "Apply"), json!({"f:spec": {"f:size": {}}}));
        assert_eq!(fields(&out, "before-first-apply", "Update"), json!({"f:spec": {".": {}, "f:size": {}}}));
    }

    #[test]
    fn clients_may_rewrite_managed_fields_and_garbage_is_ignored() {
        let mut live = update(
            None,
            widget(json!({"size": 1})),
            &mgr("kubectl-client-side-apply", T0),
            &TestShape,
            Scope::All,
        )
        .unwrap();
        live["metadata"]["uid"] = json!("u1");
        // kubectl's migration: the same fields, now as an Apply entry of "kubectl".
        let mut migrated = live.clone();
        migrated["metadata"]["managedFields"][0]["manager"] = json!("kubectl");
        migrated["metadata"]["managedFields"][0]["operation"] = json!("Apply");
        let out = update(Some(&live), migrated, &mgr("kubectl", T1), &TestShape, Scope::All).unwrap();
        assert_eq!(entries(&out).len(), 1);
        assert_eq!(fields(&out, "kubectl", "Apply"), json!({"f:spec": {".": {}, "f:size": {}}}));
        // Undecodable managedFields from a client fall back to the stored ones.
        let mut bad = live.clone();
        bad["metadata"]["managedFields"] = json!([{"manager": "x", "operation": "Delete"}]);
        let kept = update(Some(&live), bad, &mgr("y", T1), &TestShape, Scope::All).unwrap();
        assert_eq!(entries(&kept), entries(&live));
        // Absent managedFields keep the stored ones and track the change.
        let mut plain = live.clone();
        drop_managed_fields(&mut plain);
        plain["spec"]["color"] = json!("red");
        let tracked = update(Some(&live), plain, &mgr("y", T1), &TestShape, Scope::All).unwrap();
        assert_eq!(fields(&tracked, "y", "Update"), json!({"f:spec": {"f:color": {}}}));
        assert_eq!(
            fields(&tracked, "kubectl-client-side-apply", "Update"),
            json!({"f:spec": {".": {}, "f:size": {}}})
        );
    }

    #[test]
    fn updates_move_changed_fields_and_drop_removed_ones() {
        let live = ok_apply(
            None,
            &widget(json!({"items": [{"name": "a", "v": 1}, {"name": "b", "v": 2}], "size": 1})),
            &mgr("a", T0),
            false,
        );
        let mut new = live.clone();
        new["spec"]["items"] = json!([{"name": "a", "v": 1}]);
        new["spec"]["size"] = json!(2);
        let out = update(Some(&live), new, &mgr("u", T1), &TestShape, Scope::All).unwrap();
        assert_eq!(
            fields(&out, "a", "Apply"),
            json!({"f:spec": {"f:items": {"k:{\"name\":\"a\"}": {".": {}, "f:name": {}, "f:v": {}}}}})
        );
        assert_eq!(fields(&out, "u", "Update"), json!({"f:spec": {"f:size": {}}}));
        // A no-op update later keeps everything, timestamps included.
        let same = update(Some(&out), out.clone(), &mgr("u", T2), &TestShape, Scope::All).unwrap();
        assert_eq!(same, out);
        // A second change by the same updater adds to its entry and bumps its time.
        let mut more = out.clone();
        more["spec"]["color"] = json!("blue");
        let more = update(Some(&out), more, &mgr("u", T2), &TestShape, Scope::All).unwrap();
        assert_eq!(fields(&more, "u", "Update"), json!({"f:spec": {"f:color": {}, "f:size": {}}}));
        assert_eq!(entries(&more)[1]["time"], T2);
    }

    #[test]
    fn update_managers_are_capped_at_ten() {
        let mut live = widget(json!({}));
        let names: Vec<String> = (0..11).map(|i| format!("m{i:02}")).collect();
        let times: Vec<String> = (0..11).map(|i| format!("2024-01-01T00:00:{i:02}Z")).collect();
        for (i, (name, time)) in names.iter().zip(&times).enumerate() {
            let mut new = live.clone();
            new["spec"][format!("f{i}")] = json!(i);
            let m = Manager { name, api_version: CR, subresource: None, time };
            live = update(Some(&live).filter(|_| i > 0), new, &m, &TestShape, Scope::All).unwrap();
            live["metadata"]["uid"] = json!("u");
        }
        let all = entries(&live);
        assert_eq!(all.len(), 10);
        let names: Vec<&str> = all.iter().filter_map(|e| e["manager"].as_str()).collect();
        assert_eq!(names[..2], ["ancient-changes", "m02"], "m00 and m01 were merged, keeping m01's time");
        let ancient = &all[0];
        assert_eq!(ancient["time"], "2024-01-01T00:00:01Z");
        assert_eq!(ancient["fieldsV1"], json!({"f:spec": {".": {}, "f:f0": {}, "f:f1": {}}}));
    }

    #[test]
    fn kubectl_takes_over_from_client_side_apply() {
        let annotation = format!(
            "{}\n",
            json!({"apiVersion": CR, "kind": "Widget", "metadata": {"name": "w"}, "spec": {"replicas": 1}})
        );
        let mut obj = widget(json!({"replicas": 1}));
        obj["metadata"]["annotations"] = json!({ LAST_APPLIED: annotation });
        let mut live =
            update(None, obj, &mgr("kubectl-client-side-apply", T0), &TestShape, Scope::All).unwrap();
        live["metadata"]["uid"] = json!("u1");
        let cfg = widget(json!({"replicas": 2}));
        let err = apply(Some(&live), &cfg, &mgr("someone", T1), false, &TestShape, Scope::All).unwrap_err();
        assert_eq!(conflicts_of(err).len(), 1);
        let out = ok_apply(Some(&live), &cfg, &mgr("kubectl", T1), false);
        assert_eq!(out["spec"]["replicas"], 2);
        assert_eq!(out["metadata"]["annotations"][LAST_APPLIED], json!(format!("{}\n", go_json(&cfg))));
        assert_eq!(fields(&out, "kubectl", "Apply"), json!({"f:spec": {"f:replicas": {}}}));
    }

    #[test]
    fn malformed_requests_are_refused_like_the_real_server() {
        let shape = builtin_shape("Deployment");
        let mut cfg = deployment_config(1);
        cfg["metadata"]["managedFields"] = json!([]);
        let err = apply(None, &cfg, &apps("m", T0), false, &shape, Scope::NoStatus).unwrap_err();
        assert_eq!((err.code(), err.to_string()), (400, "metadata.managedFields must be nil".into()));

        let err = apply(None, &json!([1]), &apps("m", T0), false, &shape, Scope::NoStatus).unwrap_err();
        assert_eq!(err.code(), 400);
        assert!(err.to_string().starts_with("error decoding YAML: "));

        let err =
            apply(None, &widget(json!({})), &apps("m", T0), false, &shape, Scope::NoStatus).unwrap_err();
        assert_eq!(err.to_string(), "invalid object type: example.com/v1, Kind=Widget");

        let mut cfg = deployment_config(1);
        cfg["spec"]["template"]["spec"]["containers"] = json!([{"image": "x"}]);
        let err = apply(None, &cfg, &apps("m", T0), false, &shape, Scope::NoStatus).unwrap_err();
        assert_eq!((err.code(), err.reason()), (500, ""));
        assert_eq!(
            err.to_string(),
            "failed to create typed patch object (default/web; apps/v1, Kind=Deployment): .spec.template.spec.containers: element 0: associative list with keys has an element that omits key field \"name\" (and doesn't have default value)"
        );
        cfg["spec"]["template"]["spec"]["containers"] =
            json!([{"name": "a", "env": [{"name": "X"}, {"name": "X"}]}, {"name": "a"}, null]);
        let err = apply(None, &cfg, &apps("m", T0), false, &shape, Scope::NoStatus).unwrap_err();
        assert_eq!(
            err.to_string(),
            "failed to create typed patch object (default/web; apps/v1, Kind=Deployment): errors:\n  .spec.template.spec.containers[name=\"a\"].env: duplicate entries for key [name=\"X\"]\n  .spec.template.spec.containers: duplicate entries for key [name=\"a\"]\n  .spec.template.spec.containers: element 2: associative list with keys may not have a null element"
        );

        let mut live =
            apply(None, &deployment_config(1), &apps("m", T0), false, &shape, Scope::NoStatus).unwrap();
        live["metadata"]["managedFields"][0]["fieldsType"] = json!("FieldsV2");
        let err = apply(Some(&live), &deployment_config(1), &apps("m", T1), false, &shape, Scope::NoStatus)
            .unwrap_err();
        assert_eq!(err.code(), 500);
        assert_eq!(
            err.to_string(),
            "failed to decode managed fields: invalid fieldsType \"FieldsV2\" in managed fields entry 0"
        );
        assert!(matches!(
            update(None, json!("x"), &apps("m", T0), &shape, Scope::All),
            Err(SsaError::InvalidBody(_))
        ));
    }

    #[test]
    fn fields_v1_round_trips_and_paths_print_like_the_real_ones() {
        let raw = json!({
            "f:spec": {".": {}, "f:ports": {"k:{\"port\":80,\"protocol\":\"TCP\"}": {".": {}, "f:port": {}}},
                       "f:tags": {"v:\"a<b\"": {}}, "i:3": {}, "x:unknown": {}}
        });
        let set = Set::from_json(&raw).unwrap();
        let mut expected = raw.clone();
        expected["f:spec"].as_object_mut().unwrap().remove("x:unknown");
        let out = set.to_json();
        assert_eq!(out["f:spec"]["f:tags"], json!({"v:\"a\\u003cb\"": {}}), "Go escapes < in keys");
        expected["f:spec"]["f:tags"] = json!({"v:\"a\\u003cb\"": {}});
        assert_eq!(out, expected);
        let paths: Vec<String> = set.paths().iter().map(|p| path_string(p)).collect();
        assert_eq!(
            paths,
            // Members of a level come before its children, as the real iteration does.
            vec![
                ".spec",
                ".spec[3]",
                ".spec.ports[port=80,protocol=\"TCP\"]",
                ".spec.ports[port=80,protocol=\"TCP\"].port",
                ".spec.tags[=\"a<b\"]"
            ]
        );
        assert!(Set::from_json(&json!({"f:a": "x"})).is_err());
        assert!(Set::from_json(&json!({"k:{bad": {}})).is_err());
    }

    #[test]
    fn times_sort_numerically_and_parse_offsets() {
        assert_eq!(unix_seconds(Some("1970-01-01T00:00:00Z")), 0);
        assert_eq!(unix_seconds(Some("2024-01-01T00:00:00Z")), 1_704_067_200);
        assert_eq!(unix_seconds(Some("2024-01-01T01:00:00+01:00")), 1_704_067_200);
        assert_eq!(unix_seconds(Some("garbage")), 0);
        assert_eq!(unix_seconds(None), 0);
    }
}

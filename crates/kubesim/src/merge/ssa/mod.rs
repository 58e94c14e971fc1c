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

use std::collections::BTreeMap;

use ctop_schema::go::json_type;
use serde_json::{Value, json};

use crate::kinds::meta::str_at_pointer;
use crate::merge::shape::Shape;

mod compat;
mod fieldpath;
mod managed;
#[cfg(test)]
mod tests;
mod walk;

use crate::kinds::builtin::zero;
use compat::sync_last_applied;
use fieldpath::{Set, ignored_set, path_string, scoped_config, strip_set};
use managed::{
    Entry, Id, Managed, Owned, cap_update_managers, decode_managed, drop_managed_fields, is_reset,
    keep_old_timestamps, set_managed_fields,
};
use walk::Walk;

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
    let (api_version, kind) = (str_at_pointer(config, "/apiVersion"), str_at_pointer(config, "/kind"));
    if api_version != mgr.api_version || live.is_some_and(|l| str_at_pointer(l, "/kind") != kind) {
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
        let base = zero::object(api_version, kind);
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
    let creating = old.is_none_or(|o| str_at_pointer(o, "/metadata/uid").is_empty());
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
        None => zero::object(str_at_pointer(&new, "/apiVersion"), str_at_pointer(&new, "/kind")),
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

fn set_top(obj: &mut Value, key: &str, value: Option<Value>) {
    if let Value::Object(o) = obj {
        match value {
            Some(v) => o.insert(key.into(), v),
            None => o.remove(key),
        };
    }
}

fn gvk_string(api_version: &str, kind: &str) -> String {
    let (group, version) = ctop_core::split_api_version(api_version);
    format!("{group}/{version}, Kind={kind}")
}

/// `namespace/name; group/version, Kind=kind`, as the real errors name an object.
fn gvknn(obj: &Value) -> String {
    let (ns, name) = (str_at_pointer(obj, "/metadata/namespace"), str_at_pointer(obj, "/metadata/name"));
    format!("{ns}/{name}; {}", gvk_string(str_at_pointer(obj, "/apiVersion"), str_at_pointer(obj, "/kind")))
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

//! `metadata.managedFields`: who owns what ([`Id`], [`Entry`]), decoded from and encoded to
//! the stored entries, sorted, capped at ten Update managers and kept stable when a write
//! changes nothing.

use std::collections::BTreeMap;

use ctop_schema::go::{json as go_json, json_type, quote as go_quote};
use serde_json::{Map, Value, json};

use super::Manager;
use super::fieldpath::{Pe, Set};

/// A manager's identity: appliers by (name, subresource), updaters also by apiVersion.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Id {
    pub(super) manager: String,
    pub(super) apply: bool,
    /// Empty for appliers.
    pub(super) api_version: String,
    pub(super) subresource: String,
}

impl Id {
    pub(super) fn apply(mgr: &Manager<'_>) -> Id {
        let subresource = mgr.subresource.unwrap_or_default().to_owned();
        Id { manager: mgr.name.into(), apply: true, api_version: String::new(), subresource }
    }

    pub(super) fn update(name: &str, mgr: &Manager<'_>) -> Id {
        let subresource = mgr.subresource.unwrap_or_default().to_owned();
        Id { manager: name.into(), apply: false, api_version: mgr.api_version.into(), subresource }
    }

    /// The real identifier: the entry as Go marshals it without fields and time.
    pub(super) fn json(&self) -> String {
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
    pub(super) fn print(&self) -> String {
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
pub(super) struct Entry {
    pub(super) set: Set,
    pub(super) api_version: String,
    pub(super) time: Option<String>,
}

pub(super) type Managed = BTreeMap<Id, Entry>;

/// A field and who owns it (one conflict).
pub(super) type Owned = (Id, Vec<Pe>);

pub(super) fn decode_managed(fields: Option<&Value>) -> Result<Managed, String> {
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
pub(super) fn is_reset(fields: Option<&Value>) -> bool {
    match fields {
        Some(Value::Array(a)) => match a.as_slice() {
            [] => true,
            [Value::Object(o)] => o.is_empty(),
            _ => false,
        },
        _ => false,
    }
}

pub(super) fn set_managed_fields(obj: &mut Value, managed: &Managed) {
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
pub(super) fn cap_update_managers(managed: &mut Managed, max: usize) {
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
pub(super) fn keep_old_timestamps(old: &Value, new: &mut Value) {
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
pub(super) fn unix_seconds(time: Option<&str>) -> i64 {
    time.and_then(|t| t.parse::<jiff::Timestamp>().ok()).map_or(0, jiff::Timestamp::as_second)
}

pub(super) fn drop_managed_fields(obj: &mut Value) {
    if let Some(Value::Object(meta)) = obj.get_mut("metadata") {
        meta.remove("managedFields");
    }
}

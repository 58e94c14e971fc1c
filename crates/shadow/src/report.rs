//! What the shadow would have written to the live cluster: [`build`] turns the overlay's
//! request writes and the live versions of the objects the mirror copied into a
//! [`ShadowReport`], grouped by the object that owns each write. Pure functions.
//!
//! The report compares *end states*, not each write: for every object the shadow wrote, its
//! last state in the overlay against its live version. Created in the overlay and absent
//! live: **create**; deleted in the overlay and present live: **delete**; in both and
//! different outside what the server sets (`resourceVersion`, `managedFields`,
//! `generation`, `uid`, `creationTimestamp`): **change**, field by field. An apply that
//! changed nothing the user sees is no write. Events the shadow recorded are listed as
//! such; its own bookkeeping (Leases, controller statuses, the CRDs it installed in the
//! overlay) is left out.

use std::collections::{BTreeMap, BTreeSet};

use ctop_core::diff::{FieldChange, field_changes};
use ctop_kubesim::{RequestWrite, WriteEvent};
use serde::Serialize;
use serde_json::Value;

/// An object of the live cluster: `(apiVersion, kind, namespace, name)`.
pub type Key = (String, String, Option<String>, String);

/// Kinds whose writes are the shadow's own bookkeeping, never reported.
const OWN_KINDS: &[(&str, &str)] = &[
    ("coordination.k8s.io", "Lease"),
    ("ctop.dev", "ControllerStatus"),
    ("apiextensions.k8s.io", "CustomResourceDefinition"),
];

/// What the shadow would do to one object.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Action {
    /// Create it (absent live).
    Create,
    /// Change it.
    Change,
    /// Delete it.
    Delete,
}

impl Action {
    fn verb(self) -> &'static str {
        match self {
            Action::Create => "create",
            Action::Change => "change",
            Action::Delete => "delete",
        }
    }
}

/// One object the shadow would write.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WouldWrite {
    /// Create, change or delete.
    pub action: Action,
    /// `apiVersion/kind`, e.g. `v1/Service`.
    pub kind: String,
    /// Its namespace.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Its name.
    pub name: String,
    /// For a change: the fields that differ from the live object (before: live).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fields: Vec<FieldChange>,
}

/// An event the shadow recorded.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct WouldRecord {
    /// `Normal` or `Warning`.
    #[serde(rename = "type")]
    pub type_: String,
    /// Its reason.
    pub reason: String,
    /// Its message (the `note` of an events.k8s.io event).
    pub message: String,
}

/// The object a write is about: its owner (by owner reference or `ctop.dev/owner`), or
/// itself.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Owner {
    /// Its kind (without the version: owner references and annotations name it so).
    pub kind: String,
    /// Its namespace.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Its name.
    pub name: String,
}

impl std::fmt::Display for Owner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.namespace {
            Some(ns) => write!(f, "{} {ns}/{}", self.kind, self.name),
            None => write!(f, "{} {}", self.kind, self.name),
        }
    }
}

/// What the shadow would write under one owner.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OwnerReport {
    /// The owner.
    pub owner: Owner,
    /// The objects it would write, the owner's own status first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub writes: Vec<WouldWrite>,
    /// The events it would record.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<WouldRecord>,
}

/// The shadow's report.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ShadowReport {
    /// The live cluster's server.
    pub live: String,
    /// Whether the mirror has copied everything and the shadow has been quiet (no write) for
    /// the quiet period: the report is what the new version would do.
    pub converged: bool,
    /// How long since the shadow's last write, in milliseconds.
    pub quiet_ms: u64,
    /// The shadow's request writes so far (its bookkeeping included).
    pub requests: usize,
    /// Writes dropped from the overlay's log (the report is then incomplete).
    pub dropped: u64,
    /// What it would write, by owner.
    pub owners: Vec<OwnerReport>,
    /// One finding a line: `would delete v1/Service on 2 of 2 WebApps`.
    pub summary: Vec<String>,
}

/// The report of `writes` (the overlay's request writes since the shadow started, oldest
/// first) against `live` (the mirror's copy of each live object); `primaries` are the
/// controllers' primary kinds as `apiVersion/kind`, whose live objects the summary counts.
#[must_use]
pub fn build(writes: &[RequestWrite], live: &BTreeMap<Key, Value>, primaries: &[String]) -> ShadowReport {
    // The last write of each object, and the events in order.
    let mut last: BTreeMap<Key, &RequestWrite> = BTreeMap::new();
    let mut events: Vec<(Option<Owner>, WouldRecord)> = Vec::new();
    for w in writes {
        let group = ctop_core::group_of(&w.api_version);
        if OWN_KINDS.contains(&(group, w.kind.as_str())) {
            continue;
        }
        if w.kind == "Event" {
            if w.event != WriteEvent::Deleted {
                events.push(event_of(&w.object));
            }
            continue;
        }
        last.insert((w.api_version.clone(), w.kind.clone(), w.namespace.clone(), w.name.clone()), w);
    }
    let mut owners: BTreeMap<Owner, OwnerReport> = BTreeMap::new();
    fn entry(owners: &mut BTreeMap<Owner, OwnerReport>, owner: Owner) -> &mut OwnerReport {
        owners.entry(owner.clone()).or_insert_with(|| OwnerReport {
            owner,
            writes: Vec::new(),
            events: Vec::new(),
        })
    }
    for (key, w) in &last {
        let before = live.get(key);
        let write = match (w.event, before) {
            (WriteEvent::Deleted, None) => continue,
            (WriteEvent::Deleted, Some(_)) => would(Action::Delete, key, Vec::new()),
            (_, None) => would(Action::Create, key, Vec::new()),
            (_, Some(before)) => {
                let fields = field_changes(&visible(before), &visible(&w.object));
                if fields.is_empty() {
                    continue;
                }
                would(Action::Change, key, fields)
            }
        };
        let source =
            if w.event == WriteEvent::Deleted { w.old.as_deref().unwrap_or(&w.object) } else { &w.object };
        entry(&mut owners, owner_of(source, key)).writes.push(write);
    }
    for (owner, event) in events {
        if let Some(owner) = owner {
            entry(&mut owners, owner).events.push(event);
        }
    }
    let mut owners: Vec<OwnerReport> = owners.into_values().collect();
    for o in &mut owners {
        // The owner's own write (its status) first, then its children by kind and name.
        let own = (o.owner.kind.clone(), o.owner.name.clone());
        o.writes
            .sort_by_key(|w| (kind_of(&w.kind) != own.0 || w.name != own.1, w.kind.clone(), w.name.clone()));
    }
    let summary = summary(&owners, live, primaries);
    ShadowReport { requests: writes.len(), owners, summary, ..ShadowReport::default() }
}

fn would(action: Action, key: &Key, fields: Vec<FieldChange>) -> WouldWrite {
    WouldWrite {
        action,
        kind: format!("{}/{}", key.0, key.1),
        namespace: key.2.clone(),
        name: key.3.clone(),
        fields,
    }
}

/// `kind` of an `apiVersion/kind`.
fn kind_of(kind: &str) -> &str {
    kind.rsplit_once('/').map_or(kind, |(_, k)| k)
}

/// The object without what the API server sets on every write.
fn visible(o: &Value) -> Value {
    let mut o = o.clone();
    if let Some(meta) = o.get_mut("metadata").and_then(Value::as_object_mut) {
        for field in
            ["resourceVersion", "managedFields", "generation", "uid", "creationTimestamp", "selfLink"]
        {
            meta.remove(field);
        }
    }
    o
}

/// Who `o` (the object at `key`) belongs to: its controller owner reference (or first), the
/// `ctop.dev/owner` annotation (`Kind.group namespace/name`), or itself.
fn owner_of(o: &Value, key: &Key) -> Owner {
    let refs = o.pointer("/metadata/ownerReferences").and_then(Value::as_array);
    let by_ref = refs.and_then(|r| {
        r.iter().find(|r| r.get("controller").and_then(Value::as_bool) == Some(true)).or_else(|| r.first())
    });
    if let Some(r) = by_ref {
        return Owner {
            kind: r.get("kind").and_then(Value::as_str).unwrap_or_default().to_owned(),
            namespace: key.2.clone(),
            name: r.get("name").and_then(Value::as_str).unwrap_or_default().to_owned(),
        };
    }
    let annotation = o.pointer("/metadata/annotations/ctop.dev~1owner").and_then(Value::as_str);
    if let Some((kind, place)) = annotation.and_then(|a| a.split_once(' ')) {
        let kind = kind.split_once('.').map_or(kind, |(k, _)| k);
        let (namespace, name) = match place.split_once('/') {
            Some((ns, name)) => (Some(ns.to_owned()), name),
            None => (None, place),
        };
        return Owner { kind: kind.to_owned(), namespace, name: name.to_owned() };
    }
    Owner { kind: key.1.clone(), namespace: key.2.clone(), name: key.3.clone() }
}

/// An event's owner (the object it regards) and its words, from either events API.
fn event_of(e: &Value) -> (Option<Owner>, WouldRecord) {
    let text = |p: &str| e.pointer(p).and_then(Value::as_str).map(str::to_owned);
    let regarding = e.get("regarding").or_else(|| e.get("involvedObject"));
    let owner = regarding.and_then(|r| {
        Some(Owner {
            kind: r.get("kind")?.as_str()?.to_owned(),
            namespace: r.get("namespace").and_then(Value::as_str).map(str::to_owned),
            name: r.get("name")?.as_str()?.to_owned(),
        })
    });
    let record = WouldRecord {
        type_: text("/type").unwrap_or_else(|| "Normal".into()),
        reason: text("/reason").unwrap_or_default(),
        message: text("/note").or_else(|| text("/message")).unwrap_or_default(),
    };
    (owner, record)
}

/// One line per (action, kind) and per changed field of the owners' own objects, counted
/// over the live objects of the owners' kind: `would delete v1/Service on 2 of 2 WebApps`.
fn summary(owners: &[OwnerReport], live: &BTreeMap<Key, Value>, primaries: &[String]) -> Vec<String> {
    let mut findings: BTreeMap<(String, String), BTreeSet<&Owner>> = BTreeMap::new();
    for o in owners {
        for w in &o.writes {
            let own = kind_of(&w.kind) == o.owner.kind && w.name == o.owner.name;
            if own && w.action == Action::Change {
                for f in &w.fields {
                    let field = f.path.split('.').take(2).collect::<Vec<_>>().join(".");
                    findings
                        .entry((o.owner.kind.clone(), format!("change {field}")))
                        .or_default()
                        .insert(&o.owner);
                }
            } else {
                findings
                    .entry((o.owner.kind.clone(), format!("{} {}", w.action.verb(), w.kind)))
                    .or_default()
                    .insert(&o.owner);
            }
        }
        // A Warning is how a failing reconcile shows (a write the API server refused): each
        // reason on a line of its own.
        for e in &o.events {
            let finding = format!("record {} {} events", e.type_, e.reason);
            findings.entry((o.owner.kind.clone(), finding)).or_default().insert(&o.owner);
        }
    }
    let mut out: Vec<String> = findings
        .into_iter()
        .map(|((kind, finding), owners)| {
            let of_kind = primaries
                .iter()
                .find(|p| kind_of(p) == kind)
                .map(|p| live.keys().filter(|k| format!("{}/{}", k.0, k.1) == *p).count());
            match of_kind {
                Some(total) => format!("would {finding} on {} of {total} {kind} objects", owners.len()),
                None => format!(
                    "would {finding} on {} {kind} object{}",
                    owners.len(),
                    if owners.len() == 1 { "" } else { "s" }
                ),
            }
        })
        .collect();
    if out.is_empty() {
        out.push("would write nothing".to_owned());
    }
    out
}

#[cfg(test)]
mod tests;

//! Writing status through the status subresource: merge patches, sent only when they change
//! something.
//!
//! A reconcile names the status fields it knows about, not the whole status, so status is
//! **merge-patched** (RFC 7386), not server-side applied: a field set by one reconcile and
//! not repeated by the next stays (with server-side apply it would silently disappear), a
//! `null` deletes a field, and conditions are merged into the live list by `type`. Fields
//! other writers set are left alone either way.

use foldhash::HashMap;
use std::sync::Arc;

use kube::Client;
use kube::api::{Patch, PatchParams};
use parking_lot::Mutex;
use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::answer::Answer;
use crate::discovery::{Discovery, code, is_missing};
use crate::error::StatusError;
use crate::object::ObjectInfo;

/// How many resourceVersions of an object are remembered as older than this writer's last
/// write (the versions a lagging cache may still hand in).
const SUPERSEDED_LIMIT: usize = 8;

/// A change to an object's status, for [`StatusWriter::write`].
///
/// ```
/// use ctop_applier::StatusPatch;
/// use serde_json::json;
///
/// let patch = StatusPatch::default()
///     .with_field("phase", json!("Ready"))
///     .with_field("lastError", serde_json::Value::Null) // deletes status.lastError
///     .with_condition(json!({"type": "Ready", "status": "True", "reason": "Applied"}))
///     .with_observed_generation(3);
/// assert_eq!(patch.conditions.len(), 1);
/// assert!(!patch.is_empty());
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StatusPatch {
    /// RFC 7386 merge patch of `status` fields: given fields are set (objects merge
    /// recursively), `null` deletes a field, fields not named are kept.
    pub fields: Map<String, Value>,
    /// Conditions to set, merged BY `type` into the live `status.conditions` list (a type
    /// not named keeps its live entry; order: live order, new types appended). Each is an
    /// object with a string `type` (and, by convention, `status`, `reason`, `message`); it
    /// replaces the live entry of its type whole. When a type is named twice, the later
    /// entry wins. Applied after `fields`.
    pub conditions: Vec<Value>,
    /// `Some(g)`: set `status.observedGeneration = g`. `None`: leave it as it is (the
    /// controller advances it only when the whole reconcile succeeded).
    pub observed_generation: Option<i64>,
}

impl StatusPatch {
    /// A patch setting (or, with `null`, deleting) these status fields.
    #[must_use]
    pub fn from_fields(fields: Map<String, Value>) -> Self {
        Self { fields, ..Self::default() }
    }

    /// This patch also setting `status.<name>` to `value` (`null` deletes it).
    #[must_use]
    pub fn with_field(mut self, name: impl Into<String>, value: Value) -> Self {
        self.fields.insert(name.into(), value);
        self
    }

    /// This patch also setting the condition `condition` (merged by its `type`).
    #[must_use]
    pub fn with_condition(mut self, condition: Value) -> Self {
        self.conditions.push(condition);
        self
    }

    /// This patch also setting `status.observedGeneration` (and the `observedGeneration` of
    /// its conditions that name none) to `generation`.
    #[must_use]
    pub const fn with_observed_generation(mut self, generation: i64) -> Self {
        self.observed_generation = Some(generation);
        self
    }

    /// `true` when the patch changes nothing whatever the live status.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.fields.is_empty() && self.conditions.is_empty() && self.observed_generation.is_none()
    }
}

/// What [`StatusWriter::write`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StatusWrite {
    /// The patch was sent.
    Written {
        /// The object's `resourceVersion` after the write, as the API server answered it:
        /// the watch event carrying it is this write coming back.
        resource_version: Option<String>,
    },
    /// The live status already said the same: nothing was sent.
    Unchanged,
}

impl StatusWrite {
    /// `true` when a patch was sent.
    #[must_use]
    pub const fn is_written(&self) -> bool {
        matches!(self, Self::Written { .. })
    }
}

/// Writes objects' status through the status subresource, only when it changes.
///
/// Each [`StatusPatch`] is sent as a JSON merge patch (RFC 7386) of the `status`
/// subresource, without a resourceVersion precondition, so fields set by earlier writes and
/// not named now are kept, `null` deletes a field, and fields other writers set are left
/// alone. Conditions are merged into the live `status.conditions` by `type`; the merged
/// list is sent whole (a merge patch replaces lists). On the way each condition given gets:
///
/// - a `lastTransitionTime` when it has none: the live condition's of the same type when its
///   `status` did not change, otherwise now;
/// - `observedGeneration: g` when the patch sets `status.observedGeneration = g` and the
///   condition names none.
///
/// Nothing is sent when the status after the patch would equal the live one, and the body
/// holds only what changes. The writer remembers its last write per object (by uid): an
/// object handed in from a cache that has not seen that write yet (same resourceVersion as
/// before it) is compared with what the server answered instead, and a patch the server
/// already answered without taking in full (a CRD schema pruning a field) is not sent again
/// while the live status stays as answered.
///
/// Cheap to clone; clones share their memory of past writes.
#[derive(Clone)]
pub struct StatusWriter {
    client: Client,
    field_manager: Arc<str>,
    discovery: Arc<Discovery>,
    /// Shared (`Arc`), so that a write reads its object's entry without copying the
    /// statuses in it, and replaces it whole when it is answered.
    memory: Arc<Mutex<HashMap<String, Arc<Written>>>>,
}

impl std::fmt::Debug for StatusWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StatusWriter").field("field_manager", &self.field_manager).finish_non_exhaustive()
    }
}

/// The object whose status [`StatusWriter::write_to`] writes, as read (ideally from a cache):
/// its identity as an [`Owner`](crate::Owner) (labels and annotations are not read) and its
/// status.
#[derive(Clone, Debug, PartialEq)]
pub struct StatusTarget {
    /// Its `apiVersion`, `kind`, name, namespace, uid (what the writer remembers its last
    /// write by) and `resourceVersion` as read.
    pub object: crate::Owner,
    /// Its `status` as read (`None` or `null`: it has none).
    pub status: Option<Value>,
}

/// What [`StatusWriter::write_to_noting`] tells: the status before and after a patch.
type Note<'a> = dyn FnOnce(&Map<String, Value>, &Map<String, Value>) + Send + 'a;

impl From<StatusTarget> for ObjectInfo {
    fn from(target: StatusTarget) -> Self {
        Self { status: target.status.filter(|s| !s.is_null()), ..ObjectInfo::from(target.object) }
    }
}

/// The last write for one object.
#[derive(Clone, Debug)]
struct Written {
    /// resourceVersions of the object older than this write: a live object at one of
    /// them comes from a cache that has not seen the write.
    superseded: Vec<String>,
    /// The status expected after the write (stands in for a stale live object when
    /// looking up transition times).
    expected: Value,
    /// The status the server answered with.
    stored: Map<String, Value>,
    /// The resourceVersion the server answered with.
    stored_version: Option<String>,
}

impl StatusWriter {
    /// A writer naming `field_manager` as the manager of its writes. (An
    /// [`Applier`](crate::Applier) hands out one sharing its discovery cache:
    /// [`Applier::status_writer`](crate::Applier::status_writer).)
    #[must_use]
    pub fn new(client: Client, field_manager: &str) -> Self {
        let discovery = Arc::new(Discovery::new(client.clone()));
        Self::with_discovery(client, field_manager, discovery)
    }

    pub(crate) fn with_discovery(client: Client, field_manager: &str, discovery: Arc<Discovery>) -> Self {
        Self { client, field_manager: field_manager.into(), discovery, memory: Arc::default() }
    }

    /// Apply `patch` to the status of `object` (as read from the API server, ideally from
    /// a cache), sending a merge patch only when that changes something.
    ///
    /// Returns [`StatusWrite::Written`] with the resourceVersion the server answered, or
    /// [`StatusWrite::Unchanged`] when nothing was sent.
    pub async fn write<K: Serialize + Sync>(
        &self,
        object: &K,
        patch: StatusPatch,
    ) -> Result<StatusWrite, StatusError> {
        let info =
            ObjectInfo::of(object).map_err(|(object, reason)| StatusError::Invalid { object, reason })?;
        self.write_info(info, patch, None).await
    }

    /// [`StatusWriter::write`] for a caller that already holds the object's identity and
    /// status apart (a cache of JSON text): nothing of the object is serialized or parsed
    /// again.
    pub async fn write_to(
        &self,
        target: StatusTarget,
        patch: StatusPatch,
    ) -> Result<StatusWrite, StatusError> {
        self.write_info(ObjectInfo::from(target), patch, None).await
    }

    /// [`StatusWriter::write_to`], telling `note` the status before and after the patch when
    /// it changes something (before it is sent), from the writer's own plan: for a caller
    /// that keeps a record of its writes.
    pub async fn write_to_noting(
        &self,
        target: StatusTarget,
        patch: StatusPatch,
        note: impl FnOnce(&Map<String, Value>, &Map<String, Value>) + Send,
    ) -> Result<StatusWrite, StatusError> {
        self.write_info(ObjectInfo::from(target), patch, Some(Box::new(note))).await
    }

    async fn write_info(
        &self,
        mut info: ObjectInfo,
        patch: StatusPatch,
        note: Option<Box<Note<'_>>>,
    ) -> Result<StatusWrite, StatusError> {
        let last = self.memory.lock().get(&info.uid).cloned();
        let live = match info.status.take() {
            Some(Value::Object(status)) => status,
            _ => Map::new(),
        };
        // A cache that has not seen our last write yet: what the server answered is newer.
        let stale = last.as_ref().filter(|w| {
            info.resource_version
                .as_ref()
                .is_some_and(|rv| w.superseded.contains(rv) && w.stored_version.as_ref() != Some(rv))
        });
        let base = stale.map_or(live, |w| w.stored.clone());
        let now = jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string();
        let planned = plan(&base, patch, last.as_ref().map(|w| &w.expected), &now)
            .map_err(|reason| StatusError::Invalid { object: info.describe(), reason })?;
        if planned.patch.is_empty() {
            return Ok(StatusWrite::Unchanged);
        }
        if let Some(note) = note {
            note(&base, &planned.status);
        }
        let expected = Value::Object(planned.status);
        // Compared as values (key order does not matter to `Value`'s equality), not hashed:
        // both sides are at hand, and a status is small.
        if last.as_ref().is_some_and(|w| w.expected == expected && w.stored == base) {
            // The last write aimed at this very status and the server answered with the
            // one it still holds: it does not keep part of it (e.g. a schema prunes a
            // field), and sending the patch again would change nothing.
            return Ok(StatusWrite::Unchanged);
        }

        let resolved = match self.discovery.kind(&info.api_version, &info.kind).await {
            Ok(r) => r,
            Err(source) => {
                let what = format!("{} {}", info.api_version, info.kind);
                return Err(if is_missing(&source) {
                    StatusError::Discovery {
                        what: format!("{what} (not served: is its CRD installed?)"),
                        error: source,
                    }
                } else {
                    StatusError::Discovery { what, error: source }
                });
            }
        };
        if !resolved.status {
            return Err(StatusError::NoStatusSubresource { kind: info.describe() });
        }
        let body = json!({ "status": planned.patch });
        let params =
            PatchParams { field_manager: Some(self.field_manager.to_string()), ..PatchParams::default() };
        let answered: Answer<Value> = resolved
            .patch(
                &self.client,
                info.namespace.as_deref(),
                Some("status"),
                &info.name,
                &params,
                &Patch::Merge(&body),
            )
            .await
            .map_err(|source| {
                if code(&source) == Some(404) {
                    self.memory.lock().remove(&info.uid);
                }
                StatusError::Write { object: info.describe(), error: source }
            })?;
        let stored = match answered.status {
            Some(Value::Object(status)) => status,
            _ => Map::new(),
        };
        let stored_version = answered.metadata.resource_version;
        // Versions a lagging cache may still hand in: the one this write was based on (for
        // a stale object, also every version before the answer it stood in for).
        let mut superseded = stale.map(|w| w.superseded.clone()).unwrap_or_default();
        for rv in info.resource_version.into_iter().chain(stale.and_then(|w| w.stored_version.clone())) {
            if !superseded.contains(&rv) {
                superseded.push(rv);
            }
        }
        if superseded.len() > SUPERSEDED_LIMIT {
            superseded.drain(..superseded.len() - SUPERSEDED_LIMIT);
        }
        let written = Written { superseded, expected, stored, stored_version: stored_version.clone() };
        self.memory.lock().insert(info.uid, Arc::new(written));
        Ok(StatusWrite::Written { resource_version: stored_version })
    }

    /// Drop what is remembered of an object (call it when the object is deleted).
    pub fn forget(&self, uid: &str) {
        self.memory.lock().remove(uid);
    }

    /// The objects this writer remembers a write of (see [`StatusWriter::forget`]).
    #[must_use]
    pub fn remembered(&self) -> usize {
        self.memory.lock().len()
    }
}

/// What a [`StatusPatch`] makes of a status.
#[derive(Debug, PartialEq)]
struct Planned {
    /// The status after the patch.
    status: Map<String, Value>,
    /// The merge patch from the status before to `status`: only what changes.
    patch: Map<String, Value>,
}

/// Apply `patch` to `base` (the live status): merge `fields`, merge the conditions in by
/// `type` with `lastTransitionTime` and `observedGeneration` filled in, set
/// `observedGeneration`. A condition keeps the transition time of the live one of its type
/// when its status did not change; `last` (the status expected after this writer's last
/// write) stands in when the live object predates that write. On error: what is wrong.
fn plan(
    base: &Map<String, Value>,
    patch: StatusPatch,
    last: Option<&Value>,
    now: &str,
) -> Result<Planned, String> {
    let StatusPatch { fields, conditions, observed_generation } = patch;
    let mut status = base.clone();
    merge(&mut status, fields);

    if !conditions.is_empty() {
        let mut list = match status.remove("conditions") {
            Some(Value::Array(list)) => list,
            _ => Vec::new(),
        };
        for (index, condition) in conditions.into_iter().enumerate() {
            let Value::Object(mut c) = condition else {
                return Err(format!("condition #{index} is not a JSON object"));
            };
            let Some(kind) = c.get("type").filter(|t| t.as_str().is_some_and(|t| !t.is_empty())).cloned()
            else {
                return Err(format!("condition #{index} has no type (a non-empty string)"));
            };
            if c.get("lastTransitionTime").is_none_or(Value::is_null) {
                let state = c.get("status").cloned().unwrap_or(Value::Null);
                let since = [base.get("conditions"), last.and_then(|l| l.get("conditions"))]
                    .into_iter()
                    .find_map(|conditions| transition_time(conditions, &kind, &state))
                    .unwrap_or_else(|| now.into());
                c.insert("lastTransitionTime".into(), since);
            }
            if let Some(g) = observed_generation
                && c.get("observedGeneration").is_none_or(Value::is_null)
            {
                c.insert("observedGeneration".into(), g.into());
            }
            match list.iter_mut().find(|live| live.get("type") == Some(&kind)) {
                Some(live) => *live = Value::Object(c),
                None => list.push(Value::Object(c)),
            }
        }
        status.insert("conditions".into(), Value::Array(list));
    }
    if let Some(g) = observed_generation {
        status.insert("observedGeneration".into(), g.into());
    }
    let patch = diff(base, &status);
    Ok(Planned { status, patch })
}

/// RFC 7386: apply the merge patch `patch` to the object `target`.
fn merge(target: &mut Map<String, Value>, patch: Map<String, Value>) {
    for (key, value) in patch {
        match value {
            Value::Null => {
                target.remove(&key);
            }
            Value::Object(inner) => {
                let slot = target.entry(key).or_insert_with(|| Value::Object(Map::new()));
                if !slot.is_object() {
                    *slot = Value::Object(Map::new());
                }
                if let Value::Object(slot) = slot {
                    merge(slot, inner);
                }
            }
            other => {
                target.insert(key, other);
            }
        }
    }
}

/// RFC 7386: the merge patch that turns `from` into `to` (changed fields, `null` for
/// removed ones; objects compared field by field, anything else replaced whole).
fn diff(from: &Map<String, Value>, to: &Map<String, Value>) -> Map<String, Value> {
    let mut patch = Map::new();
    for (key, new) in to {
        match (from.get(key), new) {
            (Some(old), new) if old == new => {}
            (Some(Value::Object(old)), Value::Object(new)) => {
                patch.insert(key.clone(), Value::Object(diff(old, new)));
            }
            _ => {
                patch.insert(key.clone(), new.clone());
            }
        }
    }
    for key in from.keys() {
        if !to.contains_key(key) {
            patch.insert(key.clone(), Value::Null);
        }
    }
    patch
}

/// The `lastTransitionTime` of the condition `kind` in `status` when it has status `state`.
fn transition_time(conditions: Option<&Value>, kind: &Value, state: &Value) -> Option<Value> {
    conditions?
        .as_array()?
        .iter()
        .find(|c| c.get("type") == Some(kind))
        .filter(|c| c.get("status").unwrap_or(&Value::Null) == state)?
        .get("lastTransitionTime")
        .filter(|t| t.is_string())
        .cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: &str = "2025-05-05T00:00:00Z";

    fn map(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => Map::new(),
        }
    }

    fn fields(v: Value) -> StatusPatch {
        StatusPatch::from_fields(map(v))
    }

    #[test]
    fn fields_merge_and_null_deletes() {
        let live = map(json!({"a": 1, "nested": {"x": 1, "y": 2}, "list": [1, 2], "gone": "soon"}));
        let patch =
            fields(json!({"b": 2, "nested": {"y": null, "z": 3}, "list": [3], "gone": null, "absent": null}));
        let planned = plan(&live, patch, None, NOW).expect("plan");
        assert_eq!(
            Value::Object(planned.status),
            json!({"a": 1, "b": 2, "nested": {"x": 1, "z": 3}, "list": [3]})
        );
        assert_eq!(
            Value::Object(planned.patch),
            json!({"b": 2, "nested": {"y": null, "z": 3}, "list": [3], "gone": null}),
            "only what changes; deleting an absent field is no change"
        );

        let planned = plan(&live, fields(json!({"a": 1, "nested": {"x": 1}})), None, NOW).expect("plan");
        assert!(planned.patch.is_empty(), "nothing changes: {:?}", planned.patch);
        assert!(plan(&live, StatusPatch::default(), None, NOW).expect("plan").patch.is_empty());
    }

    #[test]
    fn conditions_merge_by_type_and_keep_transition_times() {
        let live = map(json!({"phase": "Pending", "conditions": [
            {"type": "Ready", "status": "False", "lastTransitionTime": "2024-01-01T00:00:00Z"},
            {"type": "Synced", "status": "True", "lastTransitionTime": "2024-01-02T00:00:00Z", "reason": "Old"},
            {"type": "Other", "status": "True", "lastTransitionTime": "2024-01-03T00:00:00Z"},
        ]}));
        let patch = StatusPatch::default()
            .with_condition(json!({"type": "Ready", "status": "True", "reason": "Up"}))
            .with_condition(json!({"type": "Synced", "status": "True", "reason": "New"}))
            .with_condition(json!({"type": "New", "status": "Unknown"}))
            .with_condition(
                json!({"type": "Given", "status": "True", "lastTransitionTime": "2020-01-01T00:00:00Z"}),
            )
            .with_condition(json!({"type": "Stamped", "status": "True", "observedGeneration": 1}))
            .with_observed_generation(4);
        let planned = plan(&live, patch, None, NOW).expect("plan");
        let conditions = json!([
            {"type": "Ready", "status": "True", "reason": "Up", "lastTransitionTime": NOW, "observedGeneration": 4},
            {"type": "Synced", "status": "True", "reason": "New", "lastTransitionTime": "2024-01-02T00:00:00Z", "observedGeneration": 4},
            {"type": "Other", "status": "True", "lastTransitionTime": "2024-01-03T00:00:00Z"},
            {"type": "New", "status": "Unknown", "lastTransitionTime": NOW, "observedGeneration": 4},
            {"type": "Given", "status": "True", "lastTransitionTime": "2020-01-01T00:00:00Z", "observedGeneration": 4},
            {"type": "Stamped", "status": "True", "observedGeneration": 1, "lastTransitionTime": NOW},
        ]);
        assert_eq!(
            Value::Object(planned.status),
            json!({"phase": "Pending", "observedGeneration": 4, "conditions": conditions})
        );
        assert_eq!(
            Value::Object(planned.patch),
            json!({"observedGeneration": 4, "conditions": conditions}),
            "the list is sent whole"
        );
    }

    #[test]
    fn without_a_generation_observed_generation_is_left_alone() {
        let live = map(json!({"observedGeneration": 2, "conditions": [
            {"type": "Ready", "status": "True", "lastTransitionTime": "2024-01-01T00:00:00Z", "observedGeneration": 2}]}));
        let patch = StatusPatch::default().with_condition(json!({"type": "Ready", "status": "True"}));
        let planned = plan(&live, patch, None, NOW).expect("plan");
        assert_eq!(planned.status["observedGeneration"], 2);
        assert_eq!(
            planned.status["conditions"],
            json!([{"type": "Ready", "status": "True", "lastTransitionTime": "2024-01-01T00:00:00Z"}]),
            "the caller's condition replaces the live one whole"
        );
    }

    #[test]
    fn the_last_write_stands_in_for_a_stale_live_object() {
        let stale = map(
            json!({"conditions": [{"type": "Ready", "status": "False", "lastTransitionTime": "2024-01-01T00:00:00Z"}]}),
        );
        let expected = json!({"conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2025-01-01T00:00:00Z"}]});
        let patch = StatusPatch::default().with_condition(json!({"type": "Ready", "status": "True"}));
        let planned = plan(&stale, patch, Some(&expected), "2026-01-01T00:00:00Z").expect("plan");
        assert_eq!(planned.status["conditions"][0]["lastTransitionTime"], "2025-01-01T00:00:00Z");
        assert!(!planned.status.contains_key("observedGeneration"), "no generation, no observedGeneration");
    }

    #[test]
    fn repeated_types_keep_the_last_and_bad_conditions_are_refused() {
        let patch = StatusPatch::default()
            .with_condition(json!({"type": "Ready", "status": "False"}))
            .with_condition(json!({"type": "Ready", "status": "True"}));
        let planned = plan(&Map::new(), patch, None, NOW).expect("plan");
        assert_eq!(
            planned.status["conditions"],
            json!([{"type": "Ready", "status": "True", "lastTransitionTime": NOW}])
        );

        let err = plan(&Map::new(), StatusPatch::default().with_condition(json!("Ready")), None, NOW);
        assert!(err.is_err_and(|e| e.contains("not a JSON object")));
        let err =
            plan(&Map::new(), StatusPatch::default().with_condition(json!({"status": "True"})), None, NOW);
        assert!(err.is_err_and(|e| e.contains("no type")));
    }
}

//! Writing status through the status subresource, only when it changed.

use std::collections::HashMap;
use std::sync::Arc;

use kube::api::{Patch, PatchParams};
use kube::{Client, Resource};
use parking_lot::Mutex;
use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::discovery::{Discovery, code, is_missing};
use crate::error::StatusError;
use crate::fingerprint::{Fingerprint, fingerprint};
use crate::object::ObjectInfo;

/// What [`StatusWriter::write`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StatusWrite {
    /// The status was written.
    Written,
    /// The live status already said the same: nothing was sent.
    Unchanged,
}

/// Writes objects' status through the status subresource, only when it changed.
///
/// The status given is the status this writer's field manager wants; it is sent as a
/// server-side apply of the `status` subresource, so fields it stops setting are removed and
/// fields other managers set are left alone. On the way:
///
/// - `status.observedGeneration` is set to the object's `metadata.generation`;
/// - each entry of `status.conditions` (a list of objects with `type` and `status`) without a
///   `lastTransitionTime` gets one: the live condition's when its `status` did not change,
///   otherwise now.
///
/// Nothing is written when the live status already contains everything computed, or when
/// neither the computed status nor the live one changed since this writer's last write (so a
/// CRD schema that drops a field does not cause a write on every pass).
///
/// Cheap to clone; clones share their memory of past writes.
#[derive(Clone)]
pub struct StatusWriter {
    client: Client,
    field_manager: Arc<str>,
    discovery: Arc<Discovery>,
    memory: Arc<Mutex<HashMap<String, Written>>>,
}

impl std::fmt::Debug for StatusWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StatusWriter").field("field_manager", &self.field_manager).finish_non_exhaustive()
    }
}

/// The last write for one object.
#[derive(Clone, Debug)]
struct Written {
    /// The status computed and sent.
    sent: Value,
    sent_hash: Fingerprint,
    /// The status the server answered with.
    stored_hash: Fingerprint,
}

impl StatusWriter {
    /// A writer using `field_manager` for its server-side applies. (An
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

    /// Make the status of `object` (as read from the API server, ideally from a cache)
    /// `status`, writing only when that changes something.
    pub async fn write<K: Resource + Serialize + Sync>(
        &self,
        object: &K,
        status: Value,
    ) -> Result<StatusWrite, StatusError> {
        let info =
            ObjectInfo::of(object).map_err(|(object, reason)| StatusError::Invalid { object, reason })?;
        let Value::Object(status) = status else {
            return Err(StatusError::Invalid {
                object: info.describe(),
                reason: "the status is not a JSON object".into(),
            });
        };
        let last = self.memory.lock().get(&info.uid).cloned();
        let now = jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string();
        let live = info.status.as_ref();
        let computed = compute(status, info.generation, live, last.as_ref().map(|w| &w.sent), &now);
        let computed_hash = fingerprint(&computed);
        let live_hash = fingerprint(live.unwrap_or(&Value::Null));
        let unchanged = match &last {
            Some(w) if w.sent_hash == computed_hash => w.stored_hash == live_hash || covers(live, &computed),
            Some(_) => false,
            None => covers(live, &computed),
        };
        if unchanged {
            return Ok(StatusWrite::Unchanged);
        }

        let resolved = match self.discovery.kind(&info.api_version, &info.kind).await {
            Ok(r) => r,
            Err(source) => {
                let what = format!("{} {}", info.api_version, info.kind);
                return Err(if is_missing(&source) {
                    StatusError::Discovery {
                        what: format!("{what} (not served: is its CRD installed?)"),
                        source,
                    }
                } else {
                    StatusError::Discovery { what, source }
                });
            }
        };
        if !resolved.status {
            return Err(StatusError::NoStatusSubresource { kind: info.describe() });
        }
        let mut metadata = Map::new();
        metadata.insert("name".into(), info.name.clone().into());
        if let Some(ns) = &info.namespace {
            metadata.insert("namespace".into(), ns.clone().into());
        }
        let body = json!({
            "apiVersion": info.api_version,
            "kind": info.kind,
            "metadata": metadata,
            "status": computed,
        });
        let params = PatchParams::apply(&self.field_manager).force();
        let stored = resolved
            .api(&self.client, info.namespace.as_deref())
            .patch_status(&info.name, &params, &Patch::Apply(&body))
            .await
            .map_err(|source| {
                if code(&source) == Some(404) {
                    self.memory.lock().remove(&info.uid);
                }
                StatusError::Write { object: info.describe(), source }
            })?;
        let stored_hash = fingerprint(stored.data.get("status").unwrap_or(&Value::Null));
        let Value::Object(mut body) = body else { return Ok(StatusWrite::Written) };
        let sent = body.remove("status").unwrap_or(Value::Null);
        self.memory.lock().insert(info.uid, Written { sent, sent_hash: computed_hash, stored_hash });
        Ok(StatusWrite::Written)
    }

    /// Drop what is remembered of an object (call it when the object is deleted).
    pub fn forget(&self, uid: &str) {
        self.memory.lock().remove(uid);
    }
}

/// The status to send: `desired` with `observedGeneration` and conditions'
/// `lastTransitionTime` filled in. A condition keeps the live one's transition time when its
/// status did not change; `last_sent` stands in when the live object predates our last write.
fn compute(
    mut desired: Map<String, Value>,
    generation: Option<i64>,
    live: Option<&Value>,
    last_sent: Option<&Value>,
    now: &str,
) -> Value {
    if let Some(g) = generation {
        desired.insert("observedGeneration".into(), g.into());
    }
    if let Some(Value::Array(conditions)) = desired.get_mut("conditions") {
        for condition in conditions.iter_mut() {
            let Value::Object(c) = condition else { continue };
            if c.get("lastTransitionTime").is_some_and(|t| !t.is_null()) {
                continue;
            }
            let (Some(kind), Some(state)) = (c.get("type").cloned(), c.get("status").cloned()) else {
                continue;
            };
            let since = [live, last_sent]
                .into_iter()
                .flatten()
                .find_map(|status| transition_time(status, &kind, &state))
                .unwrap_or_else(|| now.into());
            c.insert("lastTransitionTime".into(), since);
        }
    }
    Value::Object(desired)
}

/// The `lastTransitionTime` of the condition `kind` in `status` when it has status `state`.
fn transition_time(status: &Value, kind: &Value, state: &Value) -> Option<Value> {
    status
        .get("conditions")?
        .as_array()?
        .iter()
        .find(|c| c.get("type") == Some(kind))
        .filter(|c| c.get("status") == Some(state))?
        .get("lastTransitionTime")
        .filter(|t| t.is_string())
        .cloned()
}

/// Whether `live` already holds every field of `want` (objects compared key by key, other
/// values exactly; a `null` in `want` matches an absent field).
fn covers(live: Option<&Value>, want: &Value) -> bool {
    match (want, live) {
        (Value::Null, None | Some(Value::Null)) => true,
        (Value::Object(want), Some(Value::Object(live))) => want.iter().all(|(k, w)| covers(live.get(k), w)),
        (want, Some(live)) => want == live,
        (_, None) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => Map::new(),
        }
    }

    #[test]
    fn transition_times_move_only_with_status() {
        let live = json!({"conditions": [
            {"type": "Ready", "status": "False", "lastTransitionTime": "2024-01-01T00:00:00Z"},
            {"type": "Synced", "status": "True", "lastTransitionTime": "2024-01-02T00:00:00Z"},
        ]});
        let desired = map(json!({"phase": "Running", "conditions": [
            {"type": "Ready", "status": "True", "reason": "Up"},
            {"type": "Synced", "status": "True"},
            {"type": "New", "status": "Unknown"},
            {"type": "Given", "status": "True", "lastTransitionTime": "2020-01-01T00:00:00Z"},
        ]}));
        let out = compute(desired, Some(4), Some(&live), None, "2025-05-05T00:00:00Z");
        assert_eq!(
            out,
            json!({"phase": "Running", "observedGeneration": 4, "conditions": [
                {"type": "Ready", "status": "True", "reason": "Up", "lastTransitionTime": "2025-05-05T00:00:00Z"},
                {"type": "Synced", "status": "True", "lastTransitionTime": "2024-01-02T00:00:00Z"},
                {"type": "New", "status": "Unknown", "lastTransitionTime": "2025-05-05T00:00:00Z"},
                {"type": "Given", "status": "True", "lastTransitionTime": "2020-01-01T00:00:00Z"},
            ]})
        );
    }

    #[test]
    fn last_write_stands_in_for_a_stale_live_object() {
        let stale = json!({"conditions": [{"type": "Ready", "status": "False", "lastTransitionTime": "2024-01-01T00:00:00Z"}]});
        let sent = json!({"conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2025-01-01T00:00:00Z"}]});
        let out = compute(
            map(json!({"conditions": [{"type": "Ready", "status": "True"}]})),
            None,
            Some(&stale),
            Some(&sent),
            "2026-01-01T00:00:00Z",
        );
        assert_eq!(out["conditions"][0]["lastTransitionTime"], "2025-01-01T00:00:00Z");
        assert!(out.get("observedGeneration").is_none(), "no generation, no observedGeneration");
    }

    #[test]
    fn covers_compares_objects_by_key() {
        let live = json!({"a": 1, "b": {"c": [1, 2], "d": "x"}, "other": true});
        assert!(covers(Some(&live), &json!({"a": 1, "b": {"c": [1, 2]}})));
        assert!(covers(Some(&live), &json!({"gone": null})));
        assert!(!covers(Some(&live), &json!({"b": {"c": [1]}})));
        assert!(!covers(Some(&live), &json!({"a": 2})));
        assert!(!covers(None, &json!({"a": 1})));
    }
}

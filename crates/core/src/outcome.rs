//! What a handler returns, typed: the contract between whatever computes the desired state
//! (a script, or a Rust reconciler) and the controller that carries it out.
//!
//! A reconcile produces a [`ReconcileOutcome`]: the desired [`Children`] with their
//! [`PruneMode`], a status merge patch, conditions, events, finalizer changes, merge
//! patches of objects the operator does not own, and the [`HandlerResult`]. `finalize`
//! produces the same shape ([`FinalizeOutcome`]), a mapper a [`MapOutcome`], an admission
//! handler an [`AdmissionOutcome`]. [`ReconcileOutcome::from_output`] and its siblings read
//! the JSON the SDK's `__ct_dispatch` returns, so nothing downstream reads that JSON by key.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::Duration;

/// What the script's output could not be read as.
#[derive(Debug, thiserror::Error)]
#[error("the {handler} handler returned an output ctop cannot read")]
pub struct OutcomeError {
    /// The handler.
    pub handler: &'static str,
    /// What did not fit.
    #[source]
    pub source: serde_json::Error,
}

/// What becomes of former children that the desired set no longer names.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum PruneMode {
    /// The children are the complete desired set: what was applied before and is missing
    /// now is deleted, once every apply succeeded.
    #[default]
    Complete,
    /// Apply the children given and delete nothing (`Result.keep()`): an early return, for
    /// instance on an invalid spec, leaves the existing children alone.
    Keep,
}

/// The children a handler wants, each a full object (`apiVersion`, `kind`,
/// `metadata.name`), server-side applied with an owner reference to the object handled.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Children {
    /// The desired objects, in the order the handler applied them.
    pub objects: Vec<Value>,
    /// What happens to former children left out.
    pub prune: PruneMode,
    /// Children to delete (`remove()`), once the applies succeeded; only children of the
    /// object handled are deleted.
    pub deletes: Vec<ObjectReference>,
    /// Positions in `objects` of the children that may take over an existing object of
    /// their name that is not already a child (`apply(obj, { adopt: true })`), in order.
    pub adopt: Vec<usize>,
}

/// `True`, `False` or `Unknown`, as Kubernetes conditions say it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ConditionStatus {
    /// The condition holds.
    True,
    /// It does not.
    False,
    /// It cannot be told.
    Unknown,
}

/// One condition of the handled object's `status.conditions`, set by type.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Condition {
    /// The condition's type, e.g. `Ready`.
    #[serde(rename = "type")]
    pub type_: String,
    /// Whether it holds.
    pub status: ConditionStatus,
    /// A CamelCase reason.
    pub reason: String,
    /// A human message.
    #[serde(default)]
    pub message: String,
}

/// `Normal` or `Warning`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum EventType {
    /// Something happened as it should.
    #[default]
    Normal,
    /// Something went wrong or needs attention.
    Warning,
}

/// The object an event is about, when it is not the handled object.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectReference {
    /// `group/version`.
    #[serde(default)]
    pub api_version: Option<String>,
    /// Kind.
    #[serde(default)]
    pub kind: Option<String>,
    /// Name.
    #[serde(default)]
    pub name: Option<String>,
    /// Namespace, for namespaced kinds.
    #[serde(default)]
    pub namespace: Option<String>,
    /// Uid.
    #[serde(default)]
    pub uid: Option<String>,
}

/// A Kubernetes Event to record.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventRecord {
    /// Normal or Warning.
    #[serde(rename = "type", default)]
    pub type_: EventType,
    /// A CamelCase reason.
    pub reason: String,
    /// A human message.
    #[serde(default)]
    pub message: String,
    /// What the event is about; `None` means the handled object.
    #[serde(default)]
    pub regarding: Option<ObjectReference>,
}

/// Finalizers the handler added to or removed from the handled object.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FinalizerChanges {
    /// Added (ignored on an object being deleted: the API server refuses new ones).
    #[serde(default)]
    pub add: Vec<String>,
    /// Removed.
    #[serde(default)]
    pub remove: Vec<String>,
}

impl FinalizerChanges {
    /// Whether nothing changes.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.add.is_empty() && self.remove.is_empty()
    }
}

/// How a handler ended.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum HandlerResult {
    /// Done: next run on the next change (or the controller's period).
    #[default]
    Ok,
    /// Done for now: run again after this long.
    Requeue {
        /// The delay.
        after: Duration,
    },
    /// Failed: nothing is applied or pruned; retried with backoff.
    Error {
        /// Why, as the handler said it.
        message: String,
    },
}

/// A server-side apply of an object the operator does not own, under the field manager
/// `manager` (forced: the fields it names are taken from other managers). Applying the
/// object with fewer fields later drops the ones left out; applying only `apiVersion`,
/// `kind` and the name drops everything the manager contributed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ForeignApply {
    /// The field manager, e.g. `<operator>-<controller>`.
    pub manager: String,
    /// The applied configuration: `apiVersion`, `kind`, `metadata.name` (and namespace),
    /// and the fields this manager owns.
    pub object: Value,
}

/// What one reconcile wants done.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ReconcileOutcome {
    /// The desired children.
    pub children: Children,
    /// Merge patches of objects the operator does not own (no owner reference, never
    /// pruned); each names its object by `apiVersion`, `kind` and `metadata.name`.
    pub patches: Vec<Value>,
    /// Server-side applies of objects the operator does not own, each under a field manager
    /// of its own (no owner reference, never pruned): what one manager applied and leaves out
    /// next time is removed by the server. The declarative operators' `Patcher` targets use
    /// them; scripts do not produce them. Checked like [`ReconcileOutcome::patches`].
    pub foreign_applies: Vec<ForeignApply>,
    /// A JSON merge patch of the handled object's `status`: named fields are set, `null`
    /// deletes one, fields not named are kept. `None`: the handler set no status.
    pub status: Option<Map<String, Value>>,
    /// Conditions to set on the handled object, by type.
    pub conditions: Vec<Condition>,
    /// Events to record.
    pub events: Vec<EventRecord>,
    /// Finalizer changes on the handled object.
    pub finalizers: FinalizerChanges,
    /// How the handler ended.
    pub result: HandlerResult,
}

/// What `finalize` wants done while its object is being deleted: the same parts as a
/// reconcile. Its children are the desired set during deletion (an empty set prunes every
/// child, unless the deletion orphans them or the handler kept them); the controller's
/// finalizer is removed once the handler returns [`HandlerResult::Ok`] and its effects
/// succeeded.
pub type FinalizeOutcome = ReconcileOutcome;

/// What an `onStart` handler wants done: its children are applied without an owner and
/// never pruned; it has no status.
pub type StartOutcome = ReconcileOutcome;

/// One primary object a mapper named.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MapRequest {
    /// Its name.
    pub name: String,
    /// Its namespace, for a namespaced primary kind.
    #[serde(default)]
    pub namespace: Option<String>,
}

/// What a `.watches()` mapper returned: the primary objects to reconcile.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MapOutcome {
    /// The objects, without duplicates.
    pub requests: Vec<MapRequest>,
}

/// What an admission handler (`validate` or `mutate`) decided.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AdmissionOutcome {
    /// Whether the request is admitted.
    pub allowed: bool,
    /// Why not (or a note when allowed).
    pub message: Option<String>,
    /// Warnings shown to the client.
    pub warnings: Vec<String>,
    /// For `mutate`: the object as it should be stored.
    pub object: Option<Value>,
}

// ───────────────────────── reading the SDK's output ─────────────────────────

/// The output of `__ct_dispatch` as the SDK writes it (`crates/runtime/sdk/ctop.js`,
/// `newOutput` and `normalizeResult`).
#[derive(Deserialize)]
struct Wire {
    #[serde(default)]
    applies: Vec<Value>,
    #[serde(default)]
    patches: Vec<Value>,
    #[serde(default, rename = "foreignApplies")]
    foreign_applies: Vec<ForeignApply>,
    #[serde(default)]
    deletes: Vec<WireRef>,
    #[serde(default)]
    adopt: Vec<usize>,
    #[serde(default)]
    status: Option<Map<String, Value>>,
    #[serde(default)]
    conditions: Vec<Condition>,
    #[serde(default)]
    events: Vec<EventRecord>,
    #[serde(default)]
    finalizers: FinalizerChanges,
    #[serde(default)]
    result: Option<WireResult>,
}

/// An object named as `{apiVersion, kind, metadata: {name, namespace?}}`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireRef {
    api_version: String,
    kind: String,
    metadata: WireMeta,
}

#[derive(Deserialize)]
struct WireMeta {
    name: String,
    #[serde(default)]
    namespace: Option<String>,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
enum WireResult {
    Ok {
        #[serde(default)]
        keep: bool,
    },
    Requeue {
        after: Duration,
        #[serde(default)]
        keep: bool,
    },
    Error {
        #[serde(default)]
        message: String,
    },
}

/// Moves the field `key` out of the object `output` when `fits` it; `None` (and `output`
/// unchanged) otherwise.
fn take(output: &mut Value, key: &str, fits: fn(&Value) -> bool) -> Option<Value> {
    let map = output.as_object_mut()?;
    if !map.get(key).is_some_and(fits) {
        return None;
    }
    map.remove(key)
}

impl ReconcileOutcome {
    /// Read the output of a `reconcile`, `finalize` or `onStart` call.
    pub fn from_output(handler: &'static str, mut output: Value) -> Result<Self, OutcomeError> {
        // serde_json builds every map of a `Value` anew when it reads one out of a `Value`:
        // the children, the patches and the status, most of an output, are moved out as they
        // are. A part of another shape stays for serde to read, and to refuse in its words.
        let applies = take(&mut output, "applies", Value::is_array);
        let patches = take(&mut output, "patches", Value::is_array);
        let status = take(&mut output, "status", Value::is_object);
        let mut w: Wire =
            serde_json::from_value(output).map_err(|source| OutcomeError { handler, source })?;
        if let Some(Value::Array(applies)) = applies {
            w.applies = applies;
        }
        if let Some(Value::Array(patches)) = patches {
            w.patches = patches;
        }
        if let Some(Value::Object(status)) = status {
            w.status = Some(status);
        }
        let (result, keep) = match w.result {
            None => (HandlerResult::Ok, false),
            Some(WireResult::Ok { keep }) => (HandlerResult::Ok, keep),
            Some(WireResult::Requeue { after, keep }) => (HandlerResult::Requeue { after }, keep),
            Some(WireResult::Error { message }) => (HandlerResult::Error { message }, false),
        };
        Ok(Self {
            children: Children {
                objects: w.applies,
                prune: if keep { PruneMode::Keep } else { PruneMode::Complete },
                deletes: w
                    .deletes
                    .into_iter()
                    .map(|r| ObjectReference {
                        api_version: Some(r.api_version),
                        kind: Some(r.kind),
                        name: Some(r.metadata.name),
                        namespace: r.metadata.namespace,
                        uid: None,
                    })
                    .collect(),
                adopt: w.adopt,
            },
            patches: w.patches,
            foreign_applies: w.foreign_applies,
            status: w.status,
            conditions: w.conditions,
            events: w.events,
            finalizers: w.finalizers,
            result,
        })
    }
}

impl ReconcileOutcome {
    /// The outcome as the SDK's output JSON: the inverse of [`ReconcileOutcome::from_output`]
    /// (`from_output(o.to_output()) == o`). serde_json keeps object keys sorted, so equal
    /// outcomes give equal text: recordings store outcomes in this form and compare them so.
    #[must_use]
    pub fn to_output(&self) -> Value {
        let keep = self.children.prune == PruneMode::Keep;
        let result = match &self.result {
            HandlerResult::Ok => serde_json::json!({"type": "ok", "keep": keep}),
            HandlerResult::Requeue { after } => {
                serde_json::json!({"type": "requeue", "after": after, "keep": keep})
            }
            HandlerResult::Error { message } => serde_json::json!({"type": "error", "message": message}),
        };
        let deletes: Vec<Value> = self
            .children
            .deletes
            .iter()
            .map(|r| {
                let mut metadata = Map::new();
                metadata.insert("name".into(), r.name.clone().unwrap_or_default().into());
                if let Some(ns) = &r.namespace {
                    metadata.insert("namespace".into(), ns.clone().into());
                }
                serde_json::json!({
                    "apiVersion": r.api_version.clone().unwrap_or_default(),
                    "kind": r.kind.clone().unwrap_or_default(),
                    "metadata": metadata,
                })
            })
            .collect();
        let mut out = serde_json::json!({
            "applies": self.children.objects,
            "patches": self.patches,
            "deletes": deletes,
            "adopt": self.children.adopt,
            "status": self.status,
            "conditions": self.conditions,
            "events": self.events,
            "finalizers": self.finalizers,
            "result": result,
        });
        // Only when there are some: the outputs of scripts keep their text.
        if !self.foreign_applies.is_empty()
            && let Some(map) = out.as_object_mut()
        {
            map.insert("foreignApplies".into(), serde_json::json!(self.foreign_applies));
        }
        out
    }
}

impl MapOutcome {
    /// The outcome as the mapper's output JSON, the inverse of [`MapOutcome::from_output`].
    #[must_use]
    pub fn to_output(&self) -> Value {
        serde_json::json!({ "requests": self.requests })
    }

    /// Read the output of a mapper call.
    pub fn from_output(output: Value) -> Result<Self, OutcomeError> {
        #[derive(Deserialize)]
        struct W {
            #[serde(default)]
            requests: Vec<MapRequest>,
        }
        let w: W =
            serde_json::from_value(output).map_err(|source| OutcomeError { handler: "mapper", source })?;
        Ok(Self { requests: w.requests })
    }
}

impl AdmissionOutcome {
    /// Read the output of a `validate` or `mutate` call.
    pub fn from_output(handler: &'static str, output: Value) -> Result<Self, OutcomeError> {
        #[derive(Deserialize)]
        struct W {
            #[serde(default = "yes")]
            allowed: bool,
            #[serde(default)]
            message: Option<String>,
            #[serde(default)]
            warnings: Vec<String>,
            #[serde(default)]
            object: Option<Value>,
        }
        fn yes() -> bool {
            true
        }
        let w: W = serde_json::from_value(output).map_err(|source| OutcomeError { handler, source })?;
        Ok(Self { allowed: w.allowed, message: w.message, warnings: w.warnings, object: w.object })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_reconcile_output_reads_as_its_parts() {
        let out = json!({
            "applies": [{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "a"}}],
            "patches": [],
            "status": {"phase": "Ready", "gone": null},
            "conditions": [{"type": "Ready", "status": "True", "reason": "Ready", "message": ""}],
            "events": [{"type": "Warning", "reason": "Bad", "message": "m",
                        "regarding": {"apiVersion": "v1", "kind": "Secret", "name": "a"}}],
            "finalizers": {"add": ["x"], "remove": []},
            "result": {"type": "requeue", "after": "30s"}
        });
        let o = ReconcileOutcome::from_output("reconcile", out).expect("reads");
        assert_eq!(o.children.objects.len(), 1);
        assert_eq!(o.children.prune, PruneMode::Complete);
        assert!(o.children.deletes.is_empty());
        let removed = ReconcileOutcome::from_output(
            "finalize",
            json!({"deletes": [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "ns"}}]}),
        )
        .expect("reads");
        assert_eq!(removed.children.deletes[0].name.as_deref(), Some("a"));
        assert_eq!(o.status.as_ref().and_then(|s| s.get("gone")), Some(&Value::Null));
        assert_eq!(o.conditions[0].status, ConditionStatus::True);
        assert_eq!(o.events[0].type_, EventType::Warning);
        assert_eq!(o.events[0].regarding.as_ref().and_then(|r| r.name.as_deref()), Some("a"));
        assert_eq!(o.finalizers.add, ["x"]);
        assert_eq!(o.result, HandlerResult::Requeue { after: "30s".parse().expect("duration") });
    }

    #[test]
    fn parts_of_the_wrong_shape_are_refused_in_serdes_words() {
        let cases = [
            (json!({"applies": {"kind": "Secret"}}), "invalid type: map, expected a sequence"),
            (json!({"patches": "x"}), "invalid type: string \"x\", expected a sequence"),
            (json!({"status": [1]}), "invalid type: sequence, expected a map"),
        ];
        for (out, want) in cases {
            let e = ReconcileOutcome::from_output("reconcile", out).err().map(|e| e.source.to_string());
            assert_eq!(e.as_deref(), Some(want));
        }
        let none = ReconcileOutcome::from_output("reconcile", json!({"status": null})).expect("reads");
        assert_eq!(none.status, None);
    }

    #[test]
    fn keep_changes_the_prune_mode_and_an_error_never_keeps() {
        let kept =
            ReconcileOutcome::from_output("reconcile", json!({"result": {"type": "ok", "keep": true}}))
                .expect("reads");
        assert_eq!((kept.children.prune, kept.result), (PruneMode::Keep, HandlerResult::Ok));
        let failed =
            ReconcileOutcome::from_output("reconcile", json!({"result": {"type": "error", "message": "no"}}))
                .expect("reads");
        assert_eq!(failed.result, HandlerResult::Error { message: "no".into() });
        assert_eq!(
            ReconcileOutcome::from_output("reconcile", json!({})).expect("reads").result,
            HandlerResult::Ok
        );
    }

    #[test]
    fn an_outcome_written_as_output_reads_back_the_same() {
        let out = json!({
            "applies": [{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "a"}}],
            "patches": [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "p"}}],
            "foreignApplies": [{"manager": "op-c", "object": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}}],
            "deletes": [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "ns"}}],
            "adopt": [0],
            "status": {"phase": "Ready", "gone": null},
            "conditions": [{"type": "Ready", "status": "False", "reason": "Waiting", "message": "m"}],
            "events": [{"type": "Warning", "reason": "Bad", "message": "m"}],
            "finalizers": {"add": ["x"], "remove": ["y"]},
            "result": {"type": "requeue", "after": "1m30s", "keep": true}
        });
        let o = ReconcileOutcome::from_output("reconcile", out).expect("reads");
        assert_eq!(o.foreign_applies[0].manager, "op-c");
        let again = ReconcileOutcome::from_output("reconcile", o.to_output()).expect("reads back");
        assert_eq!(again, o);
        assert!(ReconcileOutcome::default().to_output().get("foreignApplies").is_none());
        for result in [json!({"type": "ok"}), json!({"type": "error", "message": "no"})] {
            let o = ReconcileOutcome::from_output("reconcile", json!({"result": result})).expect("reads");
            assert_eq!(ReconcileOutcome::from_output("reconcile", o.to_output()).expect("reads back"), o);
        }
        let m =
            MapOutcome::from_output(json!({"requests": [{"name": "a", "namespace": "ns"}]})).expect("reads");
        assert_eq!(MapOutcome::from_output(m.to_output()).expect("reads back"), m);
    }

    #[test]
    fn a_malformed_output_names_the_handler() {
        let e = ReconcileOutcome::from_output("finalize", json!({"result": {"type": "later"}}))
            .expect_err("unknown result");
        assert!(e.to_string().starts_with("the finalize handler returned"), "{e}");
    }

    #[test]
    fn mapper_and_admission_outputs_read() {
        let m =
            MapOutcome::from_output(json!({"requests": [{"name": "a", "namespace": "ns"}, {"name": "b"}]}))
                .expect("reads");
        assert_eq!(m.requests[1], MapRequest { name: "b".into(), namespace: None });
        let a = AdmissionOutcome::from_output("validate", json!({"allowed": false, "message": "no"}))
            .expect("reads");
        assert!(!a.allowed);
        let m = AdmissionOutcome::from_output("mutate", json!({"object": {"a": 1}})).expect("reads");
        assert!(m.allowed && m.object.is_some());
    }
}

//! What differs between two outcomes of one recorded call: the recorded one and the one a
//! script gives in replay, both in the SDK's output form (`ReconcileOutcome::to_output`).
//! Pure functions; [`diff`] is the entry.
//!
//! Children are matched by `apiVersion`, kind, namespace and name (a child without a
//! namespace is in its owner's, as the controller places it): only in the replay is
//! **added**, in both and different is **changed** (field by field), only in the recording
//! is **pruned** when the replay's prune mode is complete, **kept** when it kept the rest
//! (`Result.keep()`). The status merge patches are compared field by field, conditions by
//! type. Patches, deletes, events, finalizers and the result compare as a whole.

pub use ctop_core::diff::FieldChange;
use ctop_core::diff::{clip, field_changes_at as fields};
use serde::Serialize;
use serde_json::Value;

/// A child named by its identity.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ChildKey {
    /// `apiVersion/kind`, e.g. `v1/Service`.
    pub kind: String,
    /// Its namespace (`None` for a cluster-scoped child, or one the handler left to default).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Its name.
    pub name: String,
}

impl std::fmt::Display for ChildKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.namespace {
            Some(ns) => write!(f, "{} {ns}/{}", self.kind, self.name),
            None => write!(f, "{} {}", self.kind, self.name),
        }
    }
}

/// What became of one child.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "change", rename_all = "camelCase")]
pub enum ChildChange {
    /// Only the replay applies it.
    Added {
        /// The child.
        child: ChildKey,
    },
    /// Both apply it, differently.
    Changed {
        /// The child.
        child: ChildKey,
        /// What differs.
        fields: Vec<FieldChange>,
    },
    /// Only the recording applied it, and the replay prunes what it leaves out.
    Pruned {
        /// The child.
        child: ChildKey,
    },
    /// Only the recording applied it, and the replay keeps what it leaves out.
    Kept {
        /// The child.
        child: ChildKey,
    },
}

impl ChildChange {
    /// The child it is about.
    #[must_use]
    pub fn child(&self) -> &ChildKey {
        match self {
            ChildChange::Added { child }
            | ChildChange::Changed { child, .. }
            | ChildChange::Pruned { child }
            | ChildChange::Kept { child } => child,
        }
    }

    /// `adds`, `changes`, `prunes` or `keeps`.
    #[must_use]
    pub fn verb(&self) -> &'static str {
        match self {
            ChildChange::Added { .. } => "adds",
            ChildChange::Changed { .. } => "changes",
            ChildChange::Pruned { .. } => "prunes",
            ChildChange::Kept { .. } => "no longer applies (kept)",
        }
    }
}

/// Everything that differs between a recorded outcome and a replayed one.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct OutcomeDiff {
    /// The children, in child order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub children: Vec<ChildChange>,
    /// The status patch, field by field (conditions by type).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub status: Vec<FieldChange>,
    /// Other parts that differ as a whole: `patches`, `deletes`, `events`, `finalizers`,
    /// `result`, with both values.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub other: Vec<FieldChange>,
}

impl OutcomeDiff {
    /// Whether nothing differs.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.children.is_empty() && self.status.is_empty() && self.other.is_empty()
    }
}

/// The differences from the `recorded` outcome to the `replayed` one (both SDK output
/// JSON), for a call about an object in `namespace`.
#[must_use]
pub fn diff(recorded: &Value, replayed: &Value, namespace: Option<&str>) -> OutcomeDiff {
    let mut out = OutcomeDiff { children: children(recorded, replayed, namespace), ..OutcomeDiff::default() };
    let status = |o: &Value| o.get("status").cloned().filter(|s| !s.is_null()).unwrap_or(Value::Null);
    fields("", &status(recorded), &status(replayed), &mut out.status);
    conditions(recorded.get("conditions"), replayed.get("conditions"), &mut out.status);
    for part in ["patches", "deletes", "events", "finalizers", "result"] {
        let (b, a) = (recorded.get(part), replayed.get(part));
        if b != a {
            out.other.push(FieldChange { path: part.to_owned(), before: b.map(clip), after: a.map(clip) });
        }
    }
    out
}

/// Whether the output kept the children it left out (`Result.keep()`).
fn keeps(output: &Value) -> bool {
    output.pointer("/result/keep").and_then(Value::as_bool).unwrap_or(false)
}

fn children(recorded: &Value, replayed: &Value, namespace: Option<&str>) -> Vec<ChildChange> {
    let keyed = |o: &Value| -> Vec<(ChildKey, Value)> {
        o.get("applies")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|c| (child_key(c, namespace), c.clone()))
            .collect()
    };
    let (before, after) = (keyed(recorded), keyed(replayed));
    let mut out = Vec::new();
    for (key, b) in &before {
        match after.iter().find(|(k, _)| k == key) {
            Some((_, a)) if a == b => {}
            Some((_, a)) => {
                let mut changes = Vec::new();
                fields("", b, a, &mut changes);
                out.push(ChildChange::Changed { child: key.clone(), fields: changes });
            }
            None if keeps(replayed) => out.push(ChildChange::Kept { child: key.clone() }),
            None => out.push(ChildChange::Pruned { child: key.clone() }),
        }
    }
    for (key, _) in &after {
        if !before.iter().any(|(k, _)| k == key) {
            out.push(ChildChange::Added { child: key.clone() });
        }
    }
    out
}

/// A child's identity; one without a namespace is in the owner's `namespace`.
fn child_key(child: &Value, namespace: Option<&str>) -> ChildKey {
    let text = |p: &str| child.pointer(p).and_then(Value::as_str);
    ChildKey {
        kind: ctop_core::kind_key(text("/apiVersion").unwrap_or_default(), text("/kind").unwrap_or_default()),
        namespace: text("/metadata/namespace").or(namespace).map(str::to_owned),
        name: text("/metadata/name").unwrap_or_default().to_owned(),
    }
}

/// Conditions compared by type: one that stays, field by field; one that comes or goes,
/// whole.
fn conditions(before: Option<&Value>, after: Option<&Value>, out: &mut Vec<FieldChange>) {
    let by_type = |list: Option<&Value>| -> Vec<(String, Value)> {
        list.and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|c| Some((c.get("type")?.as_str()?.to_owned(), c.clone())))
            .collect()
    };
    let (b, a) = (by_type(before), by_type(after));
    let mut types: Vec<&String> = b.iter().chain(a.iter()).map(|(t, _)| t).collect();
    types.sort();
    types.dedup();
    for t in types {
        let x = b.iter().find(|(k, _)| k == t).map(|(_, v)| v);
        let y = a.iter().find(|(k, _)| k == t).map(|(_, v)| v);
        let path = format!("conditions[{t}]");
        match (x, y) {
            (Some(x), Some(y)) => fields(&path, x, y, out),
            (x, y) => out.push(FieldChange { path, before: x.map(clip), after: y.map(clip) }),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn service(name: &str, port: u16) -> Value {
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": {"ports": [{"port": port}]}})
    }

    fn output(applies: Vec<Value>, status: Value, keep: bool) -> Value {
        json!({"applies": applies, "patches": [], "deletes": [], "adopt": [], "status": status,
               "conditions": [], "events": [], "finalizers": {"add": [], "remove": []},
               "result": {"type": "ok", "keep": keep}})
    }

    #[test]
    fn equal_outcomes_have_no_difference() {
        let o = output(vec![service("a", 80)], json!({"phase": "Ready"}), false);
        assert!(diff(&o, &o, Some("default")).is_empty());
    }

    #[test]
    fn a_child_left_out_is_pruned_or_kept_and_a_new_one_added() {
        let v1 = output(vec![service("a", 80), service("b", 80)], Value::Null, false);
        let pruned =
            diff(&v1, &output(vec![service("a", 80), service("c", 80)], Value::Null, false), Some("ns"));
        let b = ChildKey { kind: "v1/Service".into(), namespace: Some("ns".into()), name: "b".into() };
        let c = ChildKey { name: "c".into(), ..b.clone() };
        assert_eq!(
            pruned.children,
            [ChildChange::Pruned { child: b.clone() }, ChildChange::Added { child: c }]
        );
        let kept = diff(&v1, &output(vec![service("a", 80)], Value::Null, true), Some("ns"));
        assert_eq!(kept.children, [ChildChange::Kept { child: b }]);
        // The result's keep flag differs too, and says so.
        assert_eq!(kept.other[0].path, "result");
    }

    #[test]
    fn a_changed_child_names_the_field_with_both_values() {
        let d = diff(
            &output(vec![service("a", 80)], Value::Null, false),
            &output(vec![service("a", 8080)], Value::Null, false),
            None,
        );
        let [ChildChange::Changed { fields, .. }] = d.children.as_slice() else { panic!("{d:?}") };
        assert_eq!(fields.len(), 1);
        assert_eq!(fields[0].to_string(), "spec.ports[0].port: 80 → 8080");
    }

    #[test]
    fn a_renamed_status_field_shows_as_gone_and_new() {
        let d = diff(
            &output(vec![], json!({"phase": "Running", "replicas": 2}), false),
            &output(vec![], json!({"state": "Running", "replicas": 2}), false),
            None,
        );
        let shown: Vec<String> = d.status.iter().map(ToString::to_string).collect();
        assert_eq!(shown, ["phase: \"Running\" → (absent)", "state: (absent) → \"Running\""]);
        let none =
            diff(&output(vec![], Value::Null, false), &output(vec![], json!({"a": {"b": 1}}), false), None);
        assert_eq!(none.status[0].to_string(), "a: (absent) → {\"b\":1}");
    }

    #[test]
    fn conditions_compare_by_type() {
        let mut v1 = output(vec![], Value::Null, false);
        let mut v2 = v1.clone();
        v1["conditions"] = json!([{"type": "A", "status": "True", "reason": "R", "message": ""},
                                  {"type": "B", "status": "True", "reason": "R", "message": ""}]);
        v2["conditions"] = json!([{"type": "B", "status": "False", "reason": "R", "message": ""},
                                  {"type": "A", "status": "True", "reason": "R", "message": ""}]);
        let d = diff(&v1, &v2, None);
        let shown: Vec<String> = d.status.iter().map(ToString::to_string).collect();
        assert_eq!(shown, ["conditions[B].status: \"True\" → \"False\""]);
    }
}

//! The cluster as a test reads it: a [`Snapshot`] of the kinds that matter (plain JSON,
//! taken by [`crate::World::snapshot`]) and what it means for the operator: which objects
//! are its primaries ([`Snapshot::primaries`]) and which are their children
//! ([`Snapshot::children_of`]). The golden files and the oracles are functions of it.

use std::collections::BTreeSet;

use ctop_applier::applyset::{ID_LABEL, PART_OF_LABEL};
use ctop_core::{OperatorSpec, group_of};
use serde_json::Value;

use crate::format::ObjectRef;
use crate::golden::Detail;
use crate::record::CallObject;

/// Objects of the kinds a test looks at, and every Event.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    /// The objects, each with `apiVersion` and `kind`.
    pub objects: Vec<Value>,
    /// `events.k8s.io/v1` Events.
    pub events: Vec<Value>,
}

/// `apiVersion`, `kind`, namespace and name of an object.
pub fn identity(o: &Value) -> (&str, &str, &str, &str) {
    fn s(v: &Value) -> &str {
        v.as_str().unwrap_or_default()
    }
    (s(&o["apiVersion"]), s(&o["kind"]), s(&o["metadata"]["namespace"]), s(&o["metadata"]["name"]))
}

/// `Kind namespace/name` of an object, for messages.
pub fn describe(o: &Value) -> String {
    let (_, kind, ns, name) = identity(o);
    if ns.is_empty() { format!("{kind} {name}") } else { format!("{kind} {ns}/{name}") }
}

/// Whether `o` is the object `r` names (`r` without a namespace names `default`, or a
/// cluster-scoped object).
pub fn is(o: &Value, r: &ObjectRef) -> bool {
    let (api_version, kind, ns, name) = identity(o);
    kind == r.kind
        && name == r.name
        && r.api_version.as_deref().is_none_or(|v| v == api_version)
        && (ns.is_empty() || ns == r.namespace.as_deref().unwrap_or("default"))
}

/// The controller owner reference of `o`, if it has one.
pub fn controller_owner(o: &Value) -> Option<&Value> {
    o["metadata"]["ownerReferences"].as_array()?.iter().find(|r| r["controller"] == true)
}

impl Snapshot {
    /// The object `r` names.
    pub fn find(&self, r: &ObjectRef) -> Option<&Value> {
        self.objects.iter().find(|o| is(o, r))
    }

    /// The objects the operator handles: those of a controller's primary kind that it
    /// reconciled (`handled`), and those of a kind the script defines that the test applied
    /// (a built-in object the test applied may be outside what the operator selects).
    pub fn primaries<'a>(
        &'a self,
        spec: &OperatorSpec,
        handled: &BTreeSet<CallObject>,
        applied: &[ObjectRef],
    ) -> Vec<&'a Value> {
        self.objects
            .iter()
            .filter(|o| {
                let (api_version, kind, ns, name) = identity(o);
                let primary_kind =
                    spec.controllers.iter().any(|c| c.for_.api_version == api_version && c.for_.kind == kind);
                let own_kind = spec.resources.iter().any(|r| r.api_version == api_version && r.kind == kind);
                primary_kind
                    && (handled.iter().any(|h| {
                        h.api_version == api_version && h.kind == kind && h.namespace == ns && h.name == name
                    }) || (own_kind && applied.iter().any(|r| is(o, r))))
            })
            .collect()
    }

    /// The children of `parent`: the objects the operator applied for it, which carry its
    /// ApplySet label (ctop labels every child it applies). Objects a built-in controller
    /// made for it (a StatefulSet's Pods) are not.
    pub fn children_of<'a>(&'a self, parent: &Value) -> Vec<&'a Value> {
        let Some(id) = parent["metadata"]["labels"][ID_LABEL].as_str() else { return Vec::new() };
        self.objects.iter().filter(|o| o["metadata"]["labels"][PART_OF_LABEL].as_str() == Some(id)).collect()
    }

    /// Objects carrying an ApplySet part-of label that no object in `parents` has as its id.
    pub fn labelled_without_parent<'a>(&'a self, parents: &[&Value]) -> Vec<&'a Value> {
        let ids: BTreeSet<&str> =
            parents.iter().filter_map(|p| p["metadata"]["labels"][ID_LABEL].as_str()).collect();
        self.objects
            .iter()
            .filter(|o| o["metadata"]["labels"][PART_OF_LABEL].as_str().is_some_and(|id| !ids.contains(id)))
            .collect()
    }

    /// What a golden file shows of this snapshot: every object of a kind the script
    /// defines and every child of a primary in full; the other objects the test applied
    /// by their metadata.
    pub fn golden_objects(
        &self,
        spec: &OperatorSpec,
        primaries: &[&Value],
        applied: &[ObjectRef],
    ) -> Vec<(Value, Detail)> {
        let mut out: Vec<(Value, Detail)> = Vec::new();
        let mut shown = BTreeSet::new();
        let mut show = |o: &Value, d: Detail, out: &mut Vec<(Value, Detail)>| {
            let (a, k, n, m) = identity(o);
            if shown.insert((a.to_owned(), k.to_owned(), n.to_owned(), m.to_owned())) {
                out.push((o.clone(), d));
            }
        };
        for o in &self.objects {
            let (api_version, kind, ..) = identity(o);
            if spec.resources.iter().any(|r| r.api_version == api_version && r.kind == kind) {
                show(o, Detail::Full, &mut out);
            }
        }
        for p in primaries {
            for c in self.children_of(p) {
                show(c, Detail::Full, &mut out);
            }
        }
        for o in &self.objects {
            if applied.iter().any(|r| is(o, r)) {
                show(o, Detail::Metadata, &mut out);
            }
        }
        out
    }

    /// Events about `o`: by group, kind, namespace and name (a kind is its group and its
    /// name: events about a built-in `batch/v1` CronJob are not about a custom `CronJob` of
    /// the same name). An event whose `regarding` has no `apiVersion` matches any group.
    pub fn events_about<'a>(&'a self, o: &Value) -> Vec<&'a Value> {
        let (api_version, kind, ns, name) = identity(o);
        self.events
            .iter()
            .filter(|e| {
                let r = &e["regarding"];
                r["kind"] == kind
                    && r["name"] == name
                    && r["namespace"].as_str().unwrap_or_default() == ns
                    && r["apiVersion"].as_str().is_none_or(|v| group_of(v) == group_of(api_version))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn spec() -> OperatorSpec {
        serde_json::from_value(json!({
            "resources": [],
            "controllers": [{"index": 0, "name": "webapp", "for": {"apiVersion": "apps.example.com/v1", "kind": "WebApp"},
                "handlers": ["reconcile"]}],
        }))
        .expect("spec")
    }

    #[test]
    fn children_are_found_by_their_applyset_label() {
        let parent = json!({"apiVersion": "apps.example.com/v1", "kind": "WebApp",
            "metadata": {"name": "shop", "namespace": "default", "uid": "u1", "labels": {ID_LABEL: "applyset-x-v1"}}});
        let by_label = json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "t", "namespace": "default", "labels": {PART_OF_LABEL: "applyset-x-v1"}}});
        // Owned, but not applied by the operator (a built-in controller made it).
        let by_owner = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "s", "namespace": "default", "ownerReferences": [{"uid": "u1", "controller": true}]}});
        let stray = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "namespace": "default", "labels": {PART_OF_LABEL: "applyset-gone-v1"}}});
        let snap = Snapshot { objects: vec![parent.clone(), by_label, by_owner, stray], events: vec![] };
        let names: Vec<String> = snap.children_of(&parent).iter().map(|o| describe(o)).collect();
        assert_eq!(names, ["Secret default/t"]);
        let left: Vec<String> =
            snap.labelled_without_parent(&[&parent]).iter().map(|o| describe(o)).collect();
        assert_eq!(left, ["ConfigMap default/c"]);
        let handled = BTreeSet::from([CallObject {
            api_version: "apps.example.com/v1".into(),
            kind: "WebApp".into(),
            namespace: "default".into(),
            name: "shop".into(),
        }]);
        assert_eq!(snap.primaries(&spec(), &handled, &[]).len(), 1);
        assert!(snap.primaries(&spec(), &BTreeSet::new(), &[]).is_empty());
        let r = ObjectRef::from_value(&json!("WebApp/shop")).expect("ref");
        assert!(is(&parent, &r) && snap.find(&r).is_some());
    }

    #[test]
    fn events_are_about_a_kind_of_one_group() {
        let tutorial = json!({"apiVersion": "batch.tutorial.kubebuilder.io/v1", "kind": "CronJob",
            "metadata": {"name": "c", "namespace": "default"}});
        let event = |api_version: Option<&str>, reason: &str| {
            let mut regarding = json!({"kind": "CronJob", "name": "c", "namespace": "default"});
            if let Some(v) = api_version {
                regarding["apiVersion"] = json!(v);
            }
            json!({"type": "Warning", "reason": reason, "regarding": regarding})
        };
        let snap = Snapshot {
            objects: vec![tutorial.clone()],
            events: vec![
                event(Some("batch/v1"), "Builtin"),
                event(Some("batch.tutorial.kubebuilder.io/v1"), "Tutorial"),
                event(Some("batch.tutorial.kubebuilder.io/v2"), "OtherVersion"),
                event(None, "NoVersion"),
            ],
        };
        let reasons: Vec<&Value> = snap.events_about(&tutorial).iter().map(|e| &e["reason"]).collect();
        assert_eq!(reasons, ["Tutorial", "OtherVersion", "NoVersion"]);
    }
}

//! The oracles: properties every operator must have, checked on every test without being
//! asked (a test turns one off with `oracles: { NAME: "reason" }`). Start with [`Oracle`],
//! which lists them.
//!
//! Three are plain functions of the cluster state, checked after every step
//! ([`after_step`]): children have their primary as controller owner, `observedGeneration`
//! is current once quiet, and no failed reconcile goes unreported. One runs the script's
//! conversions after every step ([`round_trips`]): every object of a resource with several
//! versions survives a round trip through each of them. Three act on the world
//! after the last step ([`crate::perturb`]): a reconcile with nothing changed writes
//! nothing, a failed apply prunes nothing, and deleting the primaries leaves no child and
//! no finalizer behind.

use std::collections::BTreeMap;
use std::fmt;

use ctop_core::OperatorSpec;
use serde_json::Value;

use crate::record::{Call, CallObject};
use crate::state::{Snapshot, controller_owner, describe, identity};

/// One oracle.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Oracle {
    /// Every child (an object carrying a primary's ApplySet label) has that primary as its
    /// controller owner; a child in another namespace than its primary, which no owner
    /// reference can reach, names it in its `ctop.dev/owner` annotation instead.
    ControllerOwner,
    /// A primary whose last reconcile succeeded has `status.observedGeneration` equal to
    /// its `metadata.generation`.
    ObservedGeneration,
    /// A failed reconcile is reported: a Warning event on the object and, on the script's
    /// own kinds, a `Reconciled` condition that is `False`.
    ErrorsReported,
    /// A reconcile of an object that did not change (only an annotation the script does not
    /// read) writes nothing: no child, no status.
    Idempotence,
    /// A reconcile whose apply fails prunes nothing: a stale child survives it, and the
    /// operator recovers once the API works again.
    FailedApplyPrunesNothing,
    /// Deleting the primaries leaves none of them, none of their children and none of the
    /// operator's finalizers behind.
    DeletionCleansUp,
    /// Every object of a resource with several versions, converted to each other version and
    /// back, comes back unchanged (the field lost is named).
    ConversionRoundTrip,
}

impl Oracle {
    /// Every oracle, in the order they run.
    pub const ALL: [Oracle; 7] = [
        Oracle::ControllerOwner,
        Oracle::ObservedGeneration,
        Oracle::ErrorsReported,
        Oracle::Idempotence,
        Oracle::FailedApplyPrunesNothing,
        Oracle::DeletionCleansUp,
        Oracle::ConversionRoundTrip,
    ];

    /// Its name in a test file.
    pub fn name(self) -> &'static str {
        match self {
            Oracle::ControllerOwner => "controller-owner",
            Oracle::ObservedGeneration => "observed-generation",
            Oracle::ErrorsReported => "errors-reported",
            Oracle::Idempotence => "idempotence",
            Oracle::FailedApplyPrunesNothing => "failed-apply-prunes-nothing",
            Oracle::DeletionCleansUp => "deletion-cleans-up",
            Oracle::ConversionRoundTrip => "conversion-round-trip",
        }
    }
}

impl fmt::Display for Oracle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Oracle {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        Oracle::ALL.into_iter().find(|o| o.name() == s).ok_or_else(|| {
            format!("oracles: no oracle {s:?}; the oracles are {}", Oracle::ALL.map(Oracle::name).join(", "))
        })
    }
}

/// An oracle that does not hold.
#[derive(Clone, Debug, PartialEq)]
pub struct Violation {
    /// Which.
    pub oracle: Oracle,
    /// What does not hold, naming the object.
    pub message: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "oracle {}: {}", self.oracle, self.message)
    }
}

/// Whether `o` is of a kind the script defines with a status subresource.
fn own_with_status(spec: &OperatorSpec, o: &Value) -> bool {
    let (api_version, kind, ..) = identity(o);
    spec.resources.iter().any(|r| r.api_version == api_version && r.kind == kind && r.status_subresource)
}

/// The `Reconciled` condition's status of `o`.
fn reconciled(o: &Value) -> Option<&str> {
    o["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == ctop_controller::reconcile::RECONCILED)?["status"]
        .as_str()
}

/// [`Oracle::ConversionRoundTrip`] on `objects`: those of the script's resources with several
/// versions are converted by `script` to each other version and back. Blocks on the script.
pub fn round_trips(script: &ctop_runtime::ScriptHandlers, objects: &[Value]) -> Vec<Violation> {
    let spec = script.script().spec();
    objects
        .iter()
        .filter_map(|o| {
            let (api_version, kind, ..) = identity(o);
            let group = ctop_core::group_of(api_version);
            let resource = spec.converting().find(|r| r.group == group && r.kind == kind)?;
            let e = script.round_trip(resource, o).err()?;
            Some(Violation { oracle: Oracle::ConversionRoundTrip, message: format!("{}: {e}", describe(o)) })
        })
        .collect()
}

/// The oracles checked after each step: [`Oracle::ControllerOwner`],
/// [`Oracle::ObservedGeneration`] and [`Oracle::ErrorsReported`], on `primaries` (the
/// objects the operator handles), with the last call about each object.
pub fn after_step(
    spec: &OperatorSpec,
    snapshot: &Snapshot,
    primaries: &[&Value],
    last_calls: &BTreeMap<CallObject, Call>,
) -> Vec<Violation> {
    let mut out = Vec::new();
    for p in primaries {
        controller_owner_of_children(snapshot, p, &mut out);
        if own_with_status(spec, p)
            && p["metadata"]["deletionTimestamp"].is_null()
            && reconciled(p) == Some("True")
            && p["status"]["observedGeneration"] != p["metadata"]["generation"]
        {
            out.push(Violation {
                oracle: Oracle::ObservedGeneration,
                message: format!(
                    "{} is quiet and Reconciled, but status.observedGeneration is {} and metadata.generation {}",
                    describe(p),
                    p["status"]["observedGeneration"],
                    p["metadata"]["generation"]
                ),
            });
        }
    }
    errors_reported(spec, snapshot, primaries, last_calls, &mut out);
    out
}

fn controller_owner_of_children(snapshot: &Snapshot, p: &Value, out: &mut Vec<Violation>) {
    let (api_version, kind, _, name) = identity(p);
    let uid = p["metadata"]["uid"].as_str().unwrap_or_default();
    let namespace = p["metadata"]["namespace"].as_str();
    for c in snapshot.children_of(p) {
        let elsewhere = namespace.is_some() && c["metadata"]["namespace"].as_str() != namespace;
        let named = c["metadata"]["annotations"][ctop_applier::applyset::OWNER_ANNOTATION]
            .as_str()
            .and_then(ctop_applier::applyset::owner_named)
            .is_some_and(|(ns, n)| Some(ns) == namespace && n == name);
        let ok = (elsewhere && named)
            || controller_owner(c).is_some_and(|r| {
                r["uid"] == uid && r["kind"] == kind && r["name"] == name && r["apiVersion"] == api_version
            });
        if !ok {
            let owner = controller_owner(c).map_or_else(
                || "none".to_owned(),
                |r| format!("{} {}", r["kind"].as_str().unwrap_or("?"), r["name"].as_str().unwrap_or("?")),
            );
            out.push(Violation {
                oracle: Oracle::ControllerOwner,
                message: format!(
                    "{} is a child of {} but its controller owner is {owner}",
                    describe(c),
                    describe(p)
                ),
            });
        }
    }
}

fn errors_reported(
    spec: &OperatorSpec,
    snapshot: &Snapshot,
    primaries: &[&Value],
    last_calls: &BTreeMap<CallObject, Call>,
    out: &mut Vec<Violation>,
) {
    for p in primaries {
        let (api_version, kind, ns, name) = identity(p);
        let key = CallObject {
            api_version: api_version.to_owned(),
            kind: kind.to_owned(),
            namespace: ns.to_owned(),
            name: name.to_owned(),
        };
        let failure = last_calls.get(&key).and_then(|c| c.failed().map(str::to_owned));
        let failed_status = own_with_status(spec, p) && reconciled(p) == Some("False");
        if failure.is_none() && !failed_status {
            continue;
        }
        let warned = snapshot.events_about(p).iter().any(|e| e["type"] == "Warning");
        let why = failure.clone().unwrap_or_else(|| "its Reconciled condition is False".into());
        if !warned {
            out.push(Violation {
                oracle: Oracle::ErrorsReported,
                message: format!(
                    "{}'s last reconcile failed ({why}) but no Warning event is about it",
                    describe(p)
                ),
            });
        }
        if failure.is_some() && own_with_status(spec, p) && reconciled(p) != Some("False") {
            out.push(Violation {
                oracle: Oracle::ErrorsReported,
                message: format!(
                    "{}'s last reconcile failed ({why}) but its Reconciled condition is {}",
                    describe(p),
                    reconciled(p).unwrap_or("missing")
                ),
            });
        }
    }
}

/// The paths at which `before` and `after` differ (at most `limit`), as `spec.replicas`.
pub fn changed_paths(before: &Value, after: &Value, limit: usize) -> Vec<String> {
    fn walk(path: &str, a: &Value, b: &Value, out: &mut Vec<String>, limit: usize) {
        if out.len() >= limit || a == b {
            return;
        }
        match (a, b) {
            (Value::Object(x), Value::Object(y)) => {
                let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
                for k in keys {
                    let p = if path.is_empty() { k.clone() } else { format!("{path}.{k}") };
                    walk(&p, x.get(k).unwrap_or(&Value::Null), y.get(k).unwrap_or(&Value::Null), out, limit);
                }
            }
            _ => out.push(if path.is_empty() { "the object".into() } else { path.to_owned() }),
        }
    }
    let mut out = Vec::new();
    walk("", before, after, &mut out, limit);
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::record::Ended;

    fn spec() -> OperatorSpec {
        serde_json::from_value(json!({
            "resources": [{"apiVersion": "apps.example.com/v1", "group": "apps.example.com", "version": "v1",
                "kind": "WebApp", "plural": "webapps", "singular": "webapp", "scope": "Namespaced",
                "schema": {}, "statusSubresource": true}],
            "controllers": [{"index": 0, "name": "webapp", "for": {"apiVersion": "apps.example.com/v1", "kind": "WebApp"},
                "handlers": ["reconcile"]}],
        }))
        .expect("spec")
    }

    fn webapp(generation: i64, observed: i64, reconciled: &str) -> Value {
        json!({"apiVersion": "apps.example.com/v1", "kind": "WebApp",
            "metadata": {"name": "shop", "namespace": "default", "uid": "u1", "generation": generation,
                "labels": {"applyset.kubernetes.io/id": "applyset-a-v1"}},
            "status": {"observedGeneration": observed, "conditions": [{"type": "Reconciled", "status": reconciled}]}})
    }

    fn child(owner_uid: &str) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "shop", "namespace": "default",
                "labels": {"applyset.kubernetes.io/part-of": "applyset-a-v1"},
                "ownerReferences": [{"apiVersion": "apps.example.com/v1", "kind": "WebApp", "name": "shop",
                    "uid": owner_uid, "controller": true}]}})
    }

    fn names(v: &[Violation]) -> Vec<String> {
        v.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn a_healthy_state_holds() {
        let p = webapp(2, 2, "True");
        let snap = Snapshot { objects: vec![p.clone(), child("u1")], events: vec![] };
        assert!(after_step(&spec(), &snap, &[&p], &BTreeMap::new()).is_empty());
    }

    #[test]
    fn a_child_owned_by_someone_else_and_a_stale_generation_are_caught() {
        let p = webapp(3, 2, "True");
        let snap = Snapshot { objects: vec![p.clone(), child("someone-else")], events: vec![] };
        let v = names(&after_step(&spec(), &snap, &[&p], &BTreeMap::new()));
        assert_eq!(
            v,
            [
                "oracle controller-owner: Deployment default/shop is a child of WebApp default/shop but its controller owner is WebApp shop",
                "oracle observed-generation: WebApp default/shop is quiet and Reconciled, but status.observedGeneration is 2 and metadata.generation 3",
            ]
        );
        // A failed reconcile leaves observedGeneration behind by design.
        let failing = webapp(3, 2, "False");
        let warned = json!({"type": "Warning", "regarding": {"kind": "WebApp", "name": "shop", "namespace": "default"}});
        let snap = Snapshot { objects: vec![failing.clone()], events: vec![warned] };
        assert!(after_step(&spec(), &snap, &[&failing], &BTreeMap::new()).is_empty());
    }

    #[test]
    fn an_unreported_failure_is_caught() {
        let p = webapp(1, 1, "True");
        let key = CallObject {
            api_version: "apps.example.com/v1".into(),
            kind: "WebApp".into(),
            namespace: "default".into(),
            name: "shop".into(),
        };
        let call = Call {
            handler: "reconcile",
            controller: 0,
            object: Some(key.clone()),
            at: std::time::Duration::ZERO,
            ended: Ended::Failed("boom".into()),
            finalizers_added: vec![],
        };
        let snap = Snapshot { objects: vec![p.clone()], events: vec![] };
        let v = names(&after_step(&spec(), &snap, &[&p], &BTreeMap::from([(key, call)])));
        assert_eq!(
            v,
            [
                "oracle errors-reported: WebApp default/shop's last reconcile failed (boom) but no Warning event is about it",
                "oracle errors-reported: WebApp default/shop's last reconcile failed (boom) but its Reconciled condition is True",
            ]
        );
    }

    #[test]
    fn names_parse_and_changed_paths_are_listed() {
        assert_eq!("idempotence".parse::<Oracle>(), Ok(Oracle::Idempotence));
        assert!("idempotency".parse::<Oracle>().unwrap_err().contains("the oracles are controller-owner"));
        let a = json!({"spec": {"replicas": 1, "image": "x"}, "status": {"phase": "A"}});
        let b = json!({"spec": {"replicas": 2, "image": "x"}, "status": {"phase": "B"}});
        assert_eq!(changed_paths(&a, &b, 10), ["spec.replicas", "status.phase"]);
        assert_eq!(changed_paths(&a, &b, 1), ["spec.replicas"]);
    }
}

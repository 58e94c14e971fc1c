//! Conversions between the version an object is stored in and the version a client asked
//! for: `apiVersion` rewriting for CRD versions (conversion strategy `None`), and the two
//! Event APIs (`v1` and `events.k8s.io/v1`), which share one store.

use serde_json::{Map, Value};

use crate::kinds::builtin::zero;
use crate::kinds::registry::ResourceType;

/// Field pairs `(core v1, events.k8s.io/v1)` that only differ by name.
const EVENT_FIELDS: &[(&str, &str)] = &[
    ("involvedObject", "regarding"),
    ("message", "note"),
    ("reportingComponent", "reportingController"),
    ("source", "deprecatedSource"),
    ("firstTimestamp", "deprecatedFirstTimestamp"),
    ("lastTimestamp", "deprecatedLastTimestamp"),
    ("count", "deprecatedCount"),
];

fn rename(obj: &mut Map<String, Value>, from: &str, to: &str) {
    if let Some(v) = obj.remove(from) {
        obj.insert(to.to_owned(), v);
    }
}

/// Turn a stored object into the form `rt` serves.
pub fn to_served(rt: &ResourceType, obj: &Value) -> Value {
    let mut out = obj.clone();
    out_in_place(rt, &mut out);
    out
}

/// Like [`to_served`], in place.
pub fn out_in_place(rt: &ResourceType, out: &mut Value) {
    if let Some(map) = out.as_object_mut() {
        map.insert("apiVersion".into(), Value::String(rt.api_version()));
        map.insert("kind".into(), Value::String(rt.kind.clone()));
        // A built-in kind's status is a struct in Go, which JSON never omits: an object
        // written without one reads back with an empty one (as its strategy leaves it).
        // (A volume and a claim come with the phase their strategy sets.)
        if rt.crd.is_none() && rt.status && !map.contains_key("status") {
            let empty = match rt.kind.as_str() {
                "PersistentVolume" | "PersistentVolumeClaim" => Some(serde_json::json!({"phase": "Pending"})),
                _ => zero::status(&rt.group, &rt.kind),
            };
            if let Some(empty) = empty {
                map.insert("status".into(), empty);
            }
        }
        // Integer status fields without `omitempty` in Go are written even when zero.
        let zeros = always_written(&rt.group, &rt.kind);
        if !zeros.is_empty()
            && let Some(status) = map.get_mut("status").and_then(Value::as_object_mut)
        {
            for field in zeros {
                status.entry(*field).or_insert(Value::from(0));
            }
        }
        if rt.kind == "Event" && rt.group == "events.k8s.io" {
            for (core, ev) in EVENT_FIELDS {
                rename(map, core, ev);
            }
            let src = map.get("deprecatedSource").cloned().unwrap_or(Value::Null);
            if let Some(host) = src.get("host").cloned() {
                map.entry("reportingInstance").or_insert(host);
            }
            if let Some(c) = src.get("component").cloned() {
                map.entry("reportingController").or_insert(c);
            }
        }
    }
}

/// Turn an object written through `rt` into its stored form.
pub fn to_stored(rt: &ResourceType, mut obj: Value) -> Value {
    if rt.kind == "Event"
        && rt.group == "events.k8s.io"
        && let Some(map) = obj.as_object_mut()
    {
        for (core, ev) in EVENT_FIELDS {
            rename(map, ev, core);
        }
        map.insert("apiVersion".into(), Value::String("v1".into()));
    }
    obj
}

/// The integer status fields a built-in kind always serialises (no `omitempty` in its Go
/// type), so typed clients that require them find a 0.
fn always_written(group: &str, kind: &str) -> &'static [&'static str] {
    match (group, kind) {
        ("apps", "DaemonSet") => {
            &["currentNumberScheduled", "numberMisscheduled", "desiredNumberScheduled", "numberReady"]
        }
        ("apps", "ReplicaSet") | ("", "ReplicationController") => &["replicas"],
        ("apps", "StatefulSet") => &["replicas", "availableReplicas"],
        ("policy", "PodDisruptionBudget") => {
            &["disruptionsAllowed", "currentHealthy", "desiredHealthy", "expectedPods"]
        }
        ("autoscaling", "HorizontalPodAutoscaler") => &["desiredReplicas"],
        _ => &[],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::registry::Registry;
    use serde_json::json;

    #[test]
    fn events_round_trip_between_apis() {
        let reg = Registry::with_builtins();
        let new = reg.get("events.k8s.io", "v1", "events").expect("served");
        let core = reg.get("", "v1", "events").expect("served");
        let written = json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "note": "hi", "regarding": {"name": "x"}, "reportingController": "ctop"});
        let stored = to_stored(&new, written);
        assert_eq!(stored["message"], "hi");
        assert_eq!(stored["involvedObject"]["name"], "x");
        let as_core = to_served(&core, &stored);
        assert_eq!(as_core["apiVersion"], "v1");
        assert_eq!(as_core["reportingComponent"], "ctop");
        let back = to_served(&new, &stored);
        assert_eq!(back["note"], "hi");
        assert_eq!(back["regarding"]["name"], "x");
    }
}

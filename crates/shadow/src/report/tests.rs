use std::sync::Arc;

use ctop_kubesim::WriteCause;
use serde_json::json;

use super::*;

fn write(seq: u64, event: WriteEvent, object: Value) -> RequestWrite {
    let text = |p: &str| object.pointer(p).and_then(Value::as_str).map(str::to_owned);
    RequestWrite {
        seq,
        resource_version: seq + 100,
        event,
        api_version: text("/apiVersion").unwrap_or_default(),
        kind: text("/kind").unwrap_or_default(),
        namespace: text("/metadata/namespace"),
        name: text("/metadata/name").unwrap_or_default(),
        uid: format!("uid-{seq}"),
        old: (event == WriteEvent::Deleted).then(|| Arc::new(object.clone())),
        object: Arc::new(object),
        field_manager: Some("webapp".into()),
        user: None,
        cause: WriteCause::Request,
    }
}

fn key(o: &Value) -> Key {
    let text = |p: &str| o.pointer(p).and_then(Value::as_str).map(str::to_owned);
    (
        text("/apiVersion").unwrap_or_default(),
        text("/kind").unwrap_or_default(),
        text("/metadata/namespace"),
        text("/metadata/name").unwrap_or_default(),
    )
}

fn app(name: &str, phase: &str) -> Value {
    json!({"apiVersion": "apps.example.com/v1", "kind": "WebApp",
           "metadata": {"name": name, "namespace": "default", "uid": format!("app-{name}"), "resourceVersion": "1"},
           "status": {"phase": phase}})
}

fn service(owner: &str, port: u16, rv: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Service",
           "metadata": {"name": owner, "namespace": "default", "resourceVersion": rv,
                        "ownerReferences": [{"apiVersion": "apps.example.com/v1", "kind": "WebApp", "name": owner,
                                             "uid": format!("app-{owner}"), "controller": true}]},
           "spec": {"ports": [{"port": port}]}})
}

fn live(objects: &[Value]) -> BTreeMap<Key, Value> {
    objects.iter().map(|o| (key(o), o.clone())).collect()
}

const PRIMARIES: &[&str] = &["apps.example.com/v1/WebApp"];

fn primaries() -> Vec<String> {
    PRIMARIES.iter().map(|p| (*p).to_owned()).collect()
}

#[test]
fn an_unchanged_rewrite_is_no_write() {
    let live = live(&[app("a", "Running"), service("a", 80, "5")]);
    // Only resourceVersion and managedFields moved.
    let mut again = service("a", 80, "9");
    again["metadata"]["managedFields"] = json!([{"manager": "webapp"}]);
    let r = build(&[write(1, WriteEvent::Modified, again)], &live, &primaries());
    assert!(r.owners.is_empty(), "{r:?}");
    assert_eq!(r.summary, ["would write nothing"]);
    assert_eq!(r.requests, 1);
}

#[test]
fn deletes_creates_and_changes_are_grouped_by_owner_and_counted() {
    let live =
        live(&[app("a", "Running"), app("b", "Running"), service("a", 80, "5"), service("b", 80, "6")]);
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "a-config", "namespace": "default",
                                 "ownerReferences": [{"kind": "WebApp", "name": "a", "controller": true}]}});
    let writes = [
        write(1, WriteEvent::Deleted, service("a", 80, "5")),
        write(2, WriteEvent::Deleted, service("b", 80, "6")),
        write(3, WriteEvent::Added, cm),
        write(4, WriteEvent::Modified, app("a", "Pending")),
        // Created and deleted in the overlay only: nothing live changes.
        write(5, WriteEvent::Added, service("c", 80, "7")),
        write(6, WriteEvent::Deleted, service("c", 80, "7")),
    ];
    let r = build(&writes, &live, &primaries());
    let a = &r.owners[0];
    assert_eq!(a.owner.to_string(), "WebApp default/a");
    let shown: Vec<String> =
        a.writes.iter().map(|w| format!("{:?} {} {}", w.action, w.kind, w.name)).collect();
    assert_eq!(
        shown,
        ["Change apps.example.com/v1/WebApp a", "Create v1/ConfigMap a-config", "Delete v1/Service a"]
    );
    assert_eq!(a.writes[0].fields[0].to_string(), "status.phase: \"Running\" → \"Pending\"");
    assert_eq!(r.owners.len(), 2, "{r:?}");
    assert_eq!(
        r.summary,
        [
            "would change status.phase on 1 of 2 WebApp objects",
            "would create v1/ConfigMap on 1 of 2 WebApp objects",
            "would delete v1/Service on 2 of 2 WebApp objects",
        ]
    );
}

#[test]
fn an_annotated_child_and_an_event_find_their_owner_and_bookkeeping_is_left_out() {
    let elsewhere = json!({"apiVersion": "v1", "kind": "ConfigMap",
                           "metadata": {"name": "x", "namespace": "other",
                                        "annotations": {"ctop.dev/owner": "WebApp.apps.example.com default/a"}}});
    let event = json!({"apiVersion": "events.k8s.io/v1", "kind": "Event",
                       "metadata": {"name": "a.1", "namespace": "default"},
                       "type": "Warning", "reason": "Failed", "note": "boom",
                       "regarding": {"kind": "WebApp", "namespace": "default", "name": "a"}});
    let lease = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                       "metadata": {"name": "webapp", "namespace": "default"}});
    let writes = [
        write(1, WriteEvent::Added, elsewhere),
        write(2, WriteEvent::Added, event),
        write(3, WriteEvent::Added, lease),
    ];
    let r = build(&writes, &live(&[app("a", "Running")]), &primaries());
    assert_eq!(r.owners.len(), 1, "{r:?}");
    let a = &r.owners[0];
    assert_eq!(a.owner.to_string(), "WebApp default/a");
    assert_eq!(a.writes[0].namespace.as_deref(), Some("other"));
    assert_eq!(
        a.events,
        [WouldRecord { type_: "Warning".into(), reason: "Failed".into(), message: "boom".into() }]
    );
}

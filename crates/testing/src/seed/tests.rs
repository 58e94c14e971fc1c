use std::collections::BTreeMap;

use ctop_recording::{CallRecord, CallResult, Header, Redaction};
use serde_json::json;

use super::*;

fn call(seq: u64, handler: HandlerKind, object: Option<Value>, tape: Vec<TapeEntry>) -> CallRecord {
    CallRecord {
        seq,
        at: "2026-01-01T00:00:00.000Z".into(),
        at_ms: 0,
        handler,
        controller: 0,
        controller_name: "webapp".into(),
        script: "sha".into(),
        object: object.map(|o| o.to_string()),
        tape,
        result: CallResult::Outcome(json!({})),
        took_ms: 0.0,
        runtime: None,
    }
}

fn recording(calls: Vec<CallRecord>) -> Recording {
    Recording {
        header: Header {
            format: (1, 0),
            ctop: "test".into(),
            sdk_sha256: "sdk".into(),
            recording_id: "id".into(),
            part: 1,
            started: "2026-01-01T00:00:00.000Z".into(),
            operator: "webapp".into(),
            redaction: Redaction::Masked,
            tz: None,
        },
        scripts: BTreeMap::new(),
        env: json!({}),
        values: json!({}),
        calls,
        dropped: 0,
        complete: true,
        notes: Vec::new(),
    }
}

fn webapp(rv: &str, replicas: u64, phase: &str) -> Value {
    json!({"apiVersion": "apps.example.com/v1", "kind": "WebApp",
           "metadata": {"name": "shop", "namespace": "prod", "uid": "w-1", "resourceVersion": rv, "generation": 2},
           "spec": {"replicas": replicas}, "status": {"phase": phase}})
}

fn get(kind: &str, name: &str, answer: Option<Value>) -> TapeEntry {
    TapeEntry::Get {
        kind: kind.into(),
        namespace: Some("prod".into()),
        name: name.into(),
        answer: Some(answer.map(|a| a.to_string())),
    }
}

fn names(seeds: &[Seed]) -> Vec<(Role, String)> {
    seeds.iter().map(|s| (s.role, describe(&s.object))).collect()
}

#[test]
fn the_last_version_of_each_object_is_seeded_in_dependency_order() {
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "shop", "namespace": "prod", "uid": "d-1",
                     "ownerReferences": [{"apiVersion": "apps.example.com/v1", "kind": "WebApp", "name": "shop", "uid": "w-1", "controller": true}]},
        "spec": {"replicas": 2}, "status": {"availableReplicas": 2}});
    let calls = vec![
        call(
            1,
            HandlerKind::Reconcile,
            Some(webapp("1", 2, "Pending")),
            vec![
                get("apps/v1/Deployment", "shop", None),
                // A list's items may lack their type: the tape's kind gives it.
                TapeEntry::List {
                    kind: "v1/ConfigMap".into(),
                    answer: Some(
                        json!([{"metadata": {"name": "settings", "namespace": "prod"}, "data": {"a": "1"}}])
                            .to_string(),
                    ),
                },
                TapeEntry::List {
                    kind: "v1/Namespace".into(),
                    answer: Some(json!([{"metadata": {"name": "prod"}}]).to_string()),
                },
            ],
        ),
        call(
            2,
            HandlerKind::Reconcile,
            Some(webapp("2", 3, "Running")),
            vec![
                get("apps/v1/Deployment", "shop", Some(deployment)),
                // Not a JSON array: no objects, and no error.
                TapeEntry::List { kind: "v1/Secret".into(), answer: Some("not json".into()) },
                TapeEntry::List { kind: "v1/Pod".into(), answer: None },
            ],
        ),
        // A mapper's object is what it watches, not a primary.
        call(
            3,
            HandlerKind::Map(0),
            Some(
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "watched", "namespace": "prod"}}),
            ),
            vec![],
        ),
        call(4, HandlerKind::OnStart, None, vec![]),
    ];
    let seeds = collect(&recording(calls)).expect("collects");
    assert_eq!(
        names(&seeds),
        [
            (Role::Foundation, "Namespace prod".to_owned()),
            (Role::Read, "ConfigMap prod/settings".to_owned()),
            (Role::Read, "ConfigMap prod/watched".to_owned()),
            (Role::Primary, "WebApp prod/shop".to_owned()),
            (Role::Child, "Deployment prod/shop".to_owned()),
        ]
    );
    let app = &seeds[3];
    assert_eq!(app.object["spec"]["replicas"], 3, "the later call's version");
    assert_eq!(app.status, Some(json!({"phase": "Running"})));
    assert_eq!(app.object.get("status"), None);
    assert_eq!(app.object["metadata"], json!({"name": "shop", "namespace": "prod"}));
    assert_eq!(app.uid.as_deref(), Some("w-1"));
    let child = &seeds[4];
    assert_eq!(child.owners[0]["uid"], "w-1");
    assert_eq!(child.object["metadata"].get("ownerReferences"), None);
    assert_eq!(seeds[1].object["apiVersion"], "v1");
    assert_eq!(seeds[1].status, None);
}

#[test]
fn server_set_fields_are_stripped_and_kept_aside() {
    let mut meta = serde_json::Map::new();
    for key in SERVER_SET {
        meta.insert(key.into(), json!("x"));
    }
    meta.insert("name".into(), json!("a"));
    meta.insert("labels".into(), json!({"applyset.kubernetes.io/part-of": "applyset-x-v1"}));
    meta.insert("finalizers".into(), json!(["example.com/hold"]));
    meta.insert("ownerReferences".into(), json!([{"uid": "o-1"}]));
    meta.insert("deletionTimestamp".into(), json!("2026-01-01T00:00:00Z"));
    let o =
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"k": "v"}, "status": {}});
    let s = strip(o, Role::Child);
    assert_eq!(
        s.object,
        json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"k": "v"},
               "metadata": {"name": "a", "labels": {"applyset.kubernetes.io/part-of": "applyset-x-v1"}, "finalizers": ["example.com/hold"]}})
    );
    assert_eq!((s.uid.as_deref(), s.owners.len(), s.deleting, s.status), (Some("x"), 1, true, None));
    // A Service's allocated address is the cluster's to give; a headless one keeps `None`.
    let svc = |ip: &str| {
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
                                "spec": {"clusterIP": ip, "clusterIPs": [ip], "ports": [{"port": 80}]}})
    };
    assert_eq!(strip(svc("10.96.0.12"), Role::Child).object["spec"], json!({"ports": [{"port": 80}]}));
    assert_eq!(strip(svc("None"), Role::Child).object["spec"]["clusterIP"], "None");
}

#[test]
fn a_child_is_owned_by_a_seeded_object_or_carries_an_applyset_label() {
    let uids: HashSet<String> = ["w-1".to_owned()].into();
    let owned = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "ownerReferences": [{"uid": "w-1"}]}});
    let elsewhere = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "ownerReferences": [{"uid": "rs-9"}]}});
    let labelled = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "t", "labels": {"applyset.kubernetes.io/part-of": "x"}}});
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "c"}});
    assert_eq!(role_of(&owned, false, &uids), Role::Child);
    assert_eq!(role_of(&elsewhere, false, &uids), Role::Read);
    assert_eq!(role_of(&labelled, false, &uids), Role::Child);
    assert_eq!(role_of(&owned, true, &uids), Role::Primary);
    assert_eq!(role_of(&crd, false, &uids), Role::Foundation);
}

#[test]
fn an_object_that_is_not_json_names_its_call() {
    let mut bad = call(7, HandlerKind::Reconcile, None, vec![]);
    bad.object = Some("{not json".into());
    let e = collect(&recording(vec![bad])).expect_err("not JSON");
    assert_eq!(e.to_string(), "call 7 of the recording holds its object that is not JSON");
    let answer = call(
        8,
        HandlerKind::Reconcile,
        None,
        vec![TapeEntry::Get {
            kind: "v1/Secret".into(),
            namespace: Some("prod".into()),
            name: "t".into(),
            answer: Some(Some("{".into())),
        }],
    );
    let e = collect(&recording(vec![answer])).expect_err("not JSON");
    assert_eq!(
        e.to_string(),
        "call 8 of the recording holds the answer to `get v1/Secret prod/t` that is not JSON"
    );
}

#[test]
fn a_crd_defines_its_kind_in_each_of_its_versions() {
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "certificates.cert-manager.io"},
        "spec": {"group": "cert-manager.io", "names": {"kind": "Certificate"}, "versions": [{"name": "v1"}, {"name": "v1beta1"}]}});
    assert!(defines(&crd, "cert-manager.io/v1", "Certificate"));
    assert!(defines(&crd, "cert-manager.io/v1beta1", "Certificate"));
    assert!(!defines(&crd, "cert-manager.io/v2", "Certificate"));
    assert!(!defines(&crd, "cert-manager.io/v1", "Issuer"));
}

use chrono::{DateTime, Utc};
use ctop_controller::history::{Child, ChildAction, Ended, FieldChange, Reconcile, Trigger};
use ctop_controller::inspect::EventSummary;
use ctop_controller::inspect::api::HistoryAnswer;
use ctop_controller::inspect::tree::Node;
use serde_json::{Value, json};

use super::{Trace, seconds};

fn now() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-11-29T12:00:00Z").map(|t| t.with_timezone(&Utc)).unwrap_or_default()
}

fn webapp() -> Value {
    json!({
        "apiVersion": "demo.ctop.dev/v1", "kind": "WebApp",
        "metadata": {"name": "shop", "namespace": "default", "generation": 2},
        "status": {"observedGeneration": 2, "conditions": [
            {"type": "Reconciled", "status": "True", "reason": "ReconcileSucceeded", "message": ""},
            {"type": "Ready", "status": "False", "reason": "ChildInProgress",
             "message": "Deployment shop: 1 of 2 replicas available"},
        ]},
    })
}

fn tree() -> Node {
    let deployment = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "shop", "namespace": "default", "generation": 1},
        "spec": {"replicas": 2},
        "status": {"observedGeneration": 1, "replicas": 2, "updatedReplicas": 2, "readyReplicas": 1,
                   "availableReplicas": 1},
    });
    let pod = |name: &str, ready: &str| {
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
               "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": ready}]}})
    };
    let service = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "shop", "namespace": "default"},
                         "spec": {"type": "ClusterIP", "clusterIP": "10.0.0.1"}});
    let mut rs = Node::of(&json!({"apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": "shop-7d9c", "namespace": "default", "generation": 1},
        "spec": {"replicas": 2},
        "status": {"observedGeneration": 1, "replicas": 2, "readyReplicas": 1, "availableReplicas": 1,
                   "fullyLabeledReplicas": 2}}));
    rs.children = vec![Node::of(&pod("shop-7d9c-a", "True")), Node::of(&pod("shop-7d9c-b", "False"))];
    let mut d = Node::of(&deployment);
    d.children = vec![rs];
    let mut root = Node::of(&webapp());
    root.children = vec![d, Node::of(&service)];
    root
}

fn history() -> HistoryAnswer {
    let first = Reconcile {
        started: "2026-11-29T11:59:00Z".into(),
        took_ms: 12.4,
        triggers: vec![Trigger::Started],
        more_triggers: 0,
        generation: Some(2),
        resource_version: Some("7".into()),
        reads: Vec::new(),
        more_reads: 0,
        children: vec![
            Child {
                action: ChildAction::Created,
                kind: "apps/v1/Deployment".into(),
                namespace: Some("default".into()),
                name: "shop".into(),
            },
            Child {
                action: ChildAction::Unchanged,
                kind: "v1/Service".into(),
                namespace: Some("default".into()),
                name: "shop".into(),
            },
        ],
        more_children: 0,
        status: vec![FieldChange {
            path: "conditions[Ready]".into(),
            before: None,
            after: Some(
                json!({"status": "False", "reason": "ChildInProgress", "message": "Deployment shop: 0 of 2 replicas available"}),
            ),
        }],
        events: Vec::new(),
        ended: Ended::Succeeded { next_in_seconds: Some(300.0) },
    };
    let second = Reconcile {
        started: "2026-11-29T11:59:55Z".into(),
        took_ms: 3.0,
        triggers: vec![Trigger::Child {
            kind: "apps/v1/Deployment".into(),
            namespace: Some("default".into()),
            name: "shop".into(),
            deleted: false,
        }],
        children: Vec::new(),
        status: Vec::new(),
        ended: Ended::Failed {
            reason: "ScriptError".into(),
            message: "TypeError: cannot read property 'x' of undefined".into(),
            code_frame: Some("  12 | const x = spec.a.x;\n     |                 ^".into()),
            terminal: false,
        },
        ..first.clone()
    };
    HistoryAnswer { history: vec![first, second], skipped: 4 }
}

#[test]
fn renders_the_whole_trace() {
    let trace = Trace {
        object: webapp(),
        tree: tree(),
        events: vec![EventSummary {
            type_: "Warning".into(),
            reason: "ScriptError".into(),
            message: "TypeError: cannot read property 'x' of undefined".into(),
            count: 2,
            last_seen: Some("2026-11-29T11:59:55Z".into()),
        }],
        history: Ok(history()),
        problems: Vec::new(),
        last: 5,
        now: now(),
    };
    let want = "\
WebApp default/shop
  CONDITION   STATUS  REASON              MESSAGE
  Reconciled  True    ReconcileSucceeded
  Ready       False   ChildInProgress     Deployment shop: 1 of 2 replicas available

NAME                        HEALTH      REASON               MESSAGE
WebApp/shop                 InProgress  ChildInProgress      Deployment shop: 1 of 2 replicas available
├── Deployment/shop         InProgress  ReplicasUnavailable  1 of 2 replicas available
│   └── ReplicaSet/shop-7d9c  InProgress  ReplicasUnavailable  1 of 2 replicas available
";
    let got = trace.render();
    // The tree's NAME column is as wide as its widest cell: compare line by line from the
    // parts that do not depend on it.
    assert!(got.starts_with(&want[..want.find("\nNAME").unwrap_or(0)]), "got:\n{got}");
    for line in [
        "├── Deployment/shop",
        "│   └── ReplicaSet/shop-7d9c",
        "│       ├── Pod/shop-7d9c-a",
        "│       └── Pod/shop-7d9c-b",
        "└── Service/shop",
        "RECONCILES (last 2 of 2 kept; 4 skipped, nothing they read had changed)",
        "  1m ago  took 12ms  generation 2  succeeded, again in 5m",
        "      why:      the operator started and listed it",
        "      children: created apps/v1/Deployment default/shop",
        "                1 unchanged",
        "      status:   conditions[Ready]: (none) → False (ChildInProgress): Deployment shop: 0 of 2 replicas available",
        "  5s ago  took 3ms  generation 2  FAILED ScriptError: TypeError: cannot read property 'x' of undefined",
        "        12 | const x = spec.a.x;",
        "      why:      its child apps/v1/Deployment default/shop changed",
        "EVENTS",
        "  AGE  TYPE     REASON       MESSAGE",
        "  5s   Warning  ScriptError  TypeError: cannot read property 'x' of undefined (x2)",
    ] {
        assert!(got.lines().any(|l| l.starts_with(line)), "no line starting {line:?} in:\n{got}");
    }
    let pod_b = got.lines().find(|l| l.contains("Pod/shop-7d9c-b")).unwrap_or_default();
    assert!(pod_b.contains("InProgress"), "an unready Pod is InProgress: {pod_b}");
    let names: Vec<usize> = got
        .lines()
        .filter(|l| l.contains("Deployment/shop "))
        .map(|l| l.find("InProgress").unwrap_or(0))
        .collect();
    assert!(names.iter().all(|&c| c > 0), "columns line up: {got}");
}

#[test]
fn without_an_operator_says_why() {
    let trace = Trace {
        object: webapp(),
        tree: Node::of(&webapp()),
        events: Vec::new(),
        history: Err("no operator at http://127.0.0.1:8081 (start one, or pass --operator URL)".into()),
        problems: vec!["cannot list the events: forbidden".into()],
        last: 5,
        now: now(),
    };
    let got = trace.render();
    assert!(got.contains("RECONCILES: not shown: no operator at http://127.0.0.1:8081"), "{got}");
    assert!(got.contains("EVENTS: none"), "{got}");
    assert!(got.contains("warning: cannot list the events: forbidden"), "{got}");
}

#[test]
fn durations_as_kubectl_prints_them() {
    assert_eq!(seconds(0.4), "0s");
    assert_eq!(seconds(45.0), "45s");
    assert_eq!(seconds(300.0), "5m");
    assert_eq!(seconds(330.0), "5m30s");
    assert_eq!(seconds(7200.0), "2h");
    assert_eq!(seconds(7500.0), "2h5m");
}

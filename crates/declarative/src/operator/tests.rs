//! The handlers against a cache in memory: catch-up from lists, a broken controller next
//! to a working one, a run-time error that leaves the view as it was.

use std::sync::{Arc, Mutex};

use ctop_core::{HandlerCall, Handlers, Observer, PruneMode};
use serde_json::{Value, json};

use super::{Operator, OperatorHandlers};

/// Caches by kind key.
#[derive(Default)]
struct Caches(Mutex<Vec<(String, Value)>>);

impl Caches {
    fn put(&self, kind: &str, obj: Value) {
        let mut c = self.0.lock().expect("lock");
        let name = obj["metadata"]["name"].clone();
        c.retain(|(k, o)| !(k == kind && o["metadata"]["name"] == name));
        c.push((kind.to_string(), obj));
    }
    fn remove(&self, kind: &str, name: &str) {
        self.0.lock().expect("lock").retain(|(k, o)| !(k == kind && o["metadata"]["name"] == name));
    }
}

impl Observer for Caches {
    fn list(&self, kind: &str) -> Option<String> {
        let c = self.0.lock().expect("lock");
        Some(Value::Array(c.iter().filter(|(k, _)| k == kind).map(|(_, o)| o.clone()).collect()).to_string())
    }
    fn get(&self, kind: &str, _: Option<&str>, name: &str) -> Option<Option<String>> {
        let c = self.0.lock().expect("lock");
        Some(c.iter().find(|(k, o)| k == kind && o["metadata"]["name"] == name).map(|(_, o)| o.to_string()))
    }
}

const OP: &str = r#"
apiVersion: dcontroller.io/v1alpha1
kind: Operator
metadata: {name: demo, uid: u1}
spec:
  controllers:
    - name: copy
      sources: [{apiGroup: "", kind: ConfigMap}]
      pipeline:
        - "@project":
            metadata: {name: {"@concat": ["$.metadata.name", "-copy"]}, namespace: "$.metadata.namespace"}
            data: {n: {"@add": ["$.data.n", 1]}}
      target: {kind: Copy}
    - name: broken
      sources: [{apiGroup: "", kind: ConfigMap}]
      pipeline: [{"@nope": 1}]
      target: {kind: Other}
"#;

fn call(obj: &Value, caches: &Arc<Caches>) -> HandlerCall {
    HandlerCall { controller: 0, object: Some(obj.to_string()), observer: caches.clone() }
}

#[tokio::test]
async fn views_follow_the_caches_and_errors_stay_with_their_controller() {
    let op = Operator::from_yaml(OP).expect("operator");
    let object = op.object.clone();
    let h = OperatorHandlers::new(op).expect("handlers");
    let caches = Arc::new(Caches::default());
    caches.put(
        "v1/ConfigMap",
        json!({"metadata": {"name": "a", "namespace": "ns", "resourceVersion": "1"}, "data": {"n": 1}}),
    );
    let out = h.reconcile(call(&object, &caches)).await.expect("reconcile");
    assert_eq!(out.children.objects.len(), 1);
    assert_eq!(out.children.objects[0]["metadata"]["name"], "a-copy");
    assert_eq!(out.children.objects[0]["apiVersion"], "demo.view.dcontroller.io/v1alpha1");
    assert_eq!(out.children.objects[0]["data"]["n"], 2);
    // The broken controller keeps whatever it made, and says why in the status.
    assert_eq!(out.children.prune, PruneMode::Keep);
    let status = Value::Object(out.status.clone().expect("status"));
    assert_eq!(status["controllers"][0]["conditions"][0]["status"], "True");
    let broken = &status["controllers"][1];
    assert_eq!(broken["conditions"][0]["reason"], "NotReady");
    let message = broken["conditions"][0]["message"].as_str().expect("message");
    assert!(message.starts_with("controller \"broken\": pipeline[0]"), "{message}");
    assert!(message.contains("@nope"), "{message}");
    let reasons =
        |o: &ctop_core::ReconcileOutcome| o.events.iter().map(|e| e.reason.clone()).collect::<Vec<_>>();
    assert_eq!(reasons(&out), ["InvalidController"]);

    // A type error at run time: named, the view stays as it was, the other object goes on.
    caches.put(
        "v1/ConfigMap",
        json!({"metadata": {"name": "a", "namespace": "ns", "resourceVersion": "2"}, "data": {"n": "x"}}),
    );
    caches.put(
        "v1/ConfigMap",
        json!({"metadata": {"name": "b", "namespace": "ns", "resourceVersion": "3"}, "data": {"n": 5}}),
    );
    let out = h.reconcile(call(&object, &caches)).await.expect("reconcile");
    let names: Vec<_> = out
        .children
        .objects
        .iter()
        .map(|o| (o["metadata"]["name"].clone(), o["data"]["n"].clone()))
        .collect();
    assert_eq!(names, [(json!("a-copy"), json!(2)), (json!("b-copy"), json!(6))]);
    let status = Value::Object(out.status.clone().expect("status"));
    let copy = &status["controllers"][0];
    assert_eq!(copy["conditions"][0]["status"], "Unknown");
    let err = copy["lastErrors"][0].as_str().expect("an error");
    assert!(err.starts_with("controller \"copy\": pipeline[0].@project.data.n: @add:"), "{err}");
    assert_eq!(
        reasons(&out),
        ["ControllerFailed"],
        "a new error is an Event, the broken controller told once"
    );
    let again = h.reconcile(call(&object, &caches)).await.expect("reconcile");
    assert!(again.events.is_empty(), "an error is told once: {:?}", again.events);

    // Deleted: the view follows, and the running controller's dropped child is deleted
    // although the broken one keeps the rest (its target is of another kind).
    caches.remove("v1/ConfigMap", "a");
    let copy = "demo.view.dcontroller.io/v1alpha1/Copy";
    caches.put(
        copy,
        json!({"metadata": {"name": "a-copy", "namespace": "ns", "ownerReferences": [{"uid": "u1"}]}}),
    );
    caches.put(copy, json!({"metadata": {"name": "not-mine", "namespace": "ns"}}));
    let out = h.reconcile(call(&object, &caches)).await.expect("reconcile");
    assert_eq!(out.children.objects.len(), 1);
    assert_eq!(out.children.deletes.len(), 1);
    assert_eq!(out.children.deletes[0].name.as_deref(), Some("a-copy"));
    let status = Value::Object(out.status.clone().expect("status"));
    assert_eq!(status["controllers"][0]["conditions"][0]["status"], "True");
    assert_eq!(status["controllers"][0]["lastErrors"].as_array().map(Vec::len), Some(1));
}

#[tokio::test]
async fn a_fresh_process_catches_up_from_the_lists() {
    let op = Operator::from_yaml(
        &OP.replace("    - name: broken", "    - name: unused").replace("\"@nope\": 1", "\"@select\": true"),
    )
    .expect("operator");
    let object = op.object.clone();
    let caches = Arc::new(Caches::default());
    caches.put(
        "v1/ConfigMap",
        json!({"metadata": {"name": "a", "namespace": "ns", "resourceVersion": "1"}, "data": {"n": 1}}),
    );
    let first = OperatorHandlers::new(op.clone()).expect("handlers");
    let out = first.reconcile(call(&object, &caches)).await.expect("reconcile");
    assert_eq!(out.children.prune, PruneMode::Complete);
    assert_eq!(out.children.objects.len(), 1 + 1);
    // Down while `a` went: a new process gives the complete set without it, and the
    // controller prunes the rest.
    caches.remove("v1/ConfigMap", "a");
    let second = OperatorHandlers::new(op).expect("handlers");
    let out = second.reconcile(call(&object, &caches)).await.expect("reconcile");
    assert!(out.children.objects.is_empty());
    assert_eq!(out.children.prune, PruneMode::Complete);
}

#[tokio::test]
async fn on_start_applies_the_operator_and_events_map_to_it() {
    let op = Operator::from_yaml(OP).expect("operator");
    let h = OperatorHandlers::new(op).expect("handlers");
    let caches = Arc::new(Caches::default());
    let start = h
        .on_start(HandlerCall { controller: 0, object: None, observer: caches.clone() })
        .await
        .expect("start");
    assert_eq!(start.foreign_applies[0].object["metadata"]["name"], "demo");
    let m = h.map(0, call(&json!({}), &caches)).await.expect("map");
    assert_eq!(m.requests[0].name, "demo");
}

#[tokio::test]
async fn a_one_shot_source_gives_one_trigger_object() {
    let op = Operator::from_yaml(
        r#"
apiVersion: dcontroller.io/v1alpha1
kind: Operator
metadata: {name: demo, uid: u1}
spec:
  controllers:
    - name: init
      sources: [{kind: Start, type: OneShot}, {kind: Tick, type: Periodic, parameters: {period: 10m}}]
      pipeline:
        - "@project": {metadata: {name: {"@concat": ["made-by-", "$.metadata.name"]}, namespace: ns}}
      target: {kind: Marker}
"#,
    )
    .expect("operator");
    let object = op.object.clone();
    let h = OperatorHandlers::new(op).expect("handlers");
    let spec = &ctop_core::Handlers::spec(&h).controllers[0];
    assert_eq!((spec.every, spec.always_run), (Some(ctop_core::Duration::from_secs(600)), true));
    let caches = Arc::new(Caches::default());
    for _ in 0..2 {
        let out = h.reconcile(call(&object, &caches)).await.expect("reconcile");
        let names: Vec<_> = out.children.objects.iter().map(|o| o["metadata"]["name"].clone()).collect();
        assert_eq!(names, [json!("made-by-one-shot-trigger")]);
    }
}

#[tokio::test]
async fn errors_name_the_controller_the_stage_and_the_expression() {
    let op = Operator::from_yaml(
        r#"
apiVersion: dcontroller.io/v1alpha1
kind: Operator
metadata: {name: demo, uid: u1}
spec:
  controllers:
    - name: unknown-op
      sources: [{apiGroup: "", kind: ConfigMap}]
      pipeline: [{"@project": {metadata: {name: {"@frobnicate": 1}}}}]
      target: {kind: A}
    - name: out-of-order
      sources: [{apiGroup: "", kind: ConfigMap}]
      pipeline: [{"@select": true}, {"@join": true}]
      target: {kind: B}
    - name: bad-path
      sources: [{apiGroup: "", kind: ConfigMap}]
      pipeline: [{"@project": {metadata: {name: "$.metadata[", namespace: ns}}}]
      target: {kind: C}
"#,
    )
    .expect("operator");
    let object = op.object.clone();
    let h = OperatorHandlers::new(op).expect("handlers");
    let caches = Arc::new(Caches::default());
    caches.put("v1/ConfigMap", json!({"metadata": {"name": "a", "namespace": "ns", "resourceVersion": "1"}}));
    let out = h.reconcile(call(&object, &caches)).await.expect("reconcile");
    let status = Value::Object(out.status.expect("status"));
    let message = |i: usize| {
        status["controllers"][i]["conditions"][0]["message"].as_str().unwrap_or_default().to_string()
    };
    assert_eq!(
        message(0),
        "controller \"unknown-op\": pipeline[0].@project.metadata.name: unknown operator \"@frobnicate\""
    );
    assert_eq!(status["controllers"][0]["conditions"][0]["status"], "False");
    assert!(
        message(1)
            .starts_with("controller \"out-of-order\": pipeline[1].@join: @join must be the first stage"),
        "{}",
        message(1)
    );
    assert_eq!(status["controllers"][2]["conditions"][0]["status"], "Unknown");
    assert!(
        message(2).starts_with(
            "controller \"bad-path\": pipeline[0].@project.metadata.name: invalid JSONPath \"$.metadata[\""
        ),
        "{}",
        message(2)
    );
}

#[tokio::test]
async fn after_a_restart_a_failing_objects_output_is_kept() {
    let yaml =
        OP.replace("    - name: broken", "    - name: fine").replace("\"@nope\": 1", "\"@select\": true");
    let op = Operator::from_yaml(&yaml).expect("operator");
    let object = op.object.clone();
    let caches = Arc::new(Caches::default());
    // The output made before the restart, and an input that now fails (`@add` of a string).
    caches.put(
        "v1/ConfigMap",
        json!({"metadata": {"name": "a", "namespace": "ns", "resourceVersion": "2"}, "data": {"n": "x"}}),
    );
    let copy = "demo.view.dcontroller.io/v1alpha1/Copy";
    caches.put(
        copy,
        json!({"metadata": {"name": "a-copy", "namespace": "ns", "ownerReferences": [{"uid": "u1"}]}}),
    );
    let out = OperatorHandlers::new(op)
        .expect("handlers")
        .reconcile(call(&object, &caches))
        .await
        .expect("reconcile");
    assert_eq!(out.children.prune, PruneMode::Keep);
    assert!(out.children.deletes.is_empty(), "{:?}", out.children.deletes);
}

//! `POST /convert` over real TLS on loopback, driven by a Rust `ConversionScript`: the
//! answers (one object or a batch, in the review's own version), every failure answered as a
//! `Failure` the API server can show (a throw, the server's deadline, busy slots, a wrong
//! number of objects), 400 for what is no ConversionReview, and 404 when nothing converts.
#![allow(clippy::unwrap_used)]

mod support;

use std::net::SocketAddr;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use ctop_core::OperatorSpec;
use ctop_webhook::{
    Admission, AdmissionCall, CONVERSION_PATH, ConversionScript, FailurePolicy, HookError, Route, SelfIssued,
    ServerConfig, TlsSource,
};
use serde_json::{Value, json};
use support::{allowed, client_config, connect, converting_spec, post, single_version_spec};
use tokio::sync::mpsc;

/// Blocks the conversions that wait on it until it is opened.
#[derive(Default)]
struct Gate {
    open: Mutex<bool>,
    opened: Condvar,
}

impl Gate {
    fn wait(&self) {
        let mut open = self.open.lock().unwrap();
        while !*open {
            open = self.opened.wait(open).unwrap();
        }
    }

    fn open(&self) {
        *self.open.lock().unwrap() = true;
        self.opened.notify_all();
    }
}

/// Converts Widgets by setting their `apiVersion`; the first object's `spec.color` picks a
/// misbehaviour: `throw` fails, `wait` tells the test it started and waits for the gate,
/// `short` drops the last object, `text` answers a string for it.
struct Widgets {
    gate: Arc<Gate>,
    started: mpsc::UnboundedSender<()>,
}

impl ConversionScript for Widgets {
    fn convert(&self, desired: &str, objects: &[Value]) -> Result<Vec<Value>, HookError> {
        let mut converted: Vec<Value> = objects
            .iter()
            .map(|o| {
                let mut o = o.clone();
                o["apiVersion"] = json!(desired);
                o
            })
            .collect();
        match objects[0]["spec"]["color"].as_str().unwrap_or_default() {
            "throw" => {
                return Err(HookError::Failed("Error: no colour for red (at operator.ct:7:11)".into()));
            }
            "wait" => {
                let _ = self.started.send(());
                self.gate.wait();
            }
            "short" => {
                converted.pop();
            }
            "text" => {
                if let Some(last) = converted.last_mut() {
                    *last = json!("a widget");
                }
            }
            _ => {}
        }
        Ok(converted)
    }
}

fn widget(version: &str, name: &str, color: &str) -> Value {
    json!({"apiVersion": format!("demo.ctop.dev/{version}"), "kind": "Widget",
        "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}")},
        "spec": {"color": color}})
}

fn review(api_version: &str, uid: &str, desired: &str, objects: &[Value]) -> Vec<u8> {
    serde_json::to_vec(&json!({"apiVersion": api_version, "kind": "ConversionReview",
        "request": {"uid": uid, "desiredAPIVersion": desired, "objects": objects}}))
    .unwrap()
}

fn v1_review(uid: &str, desired: &str, objects: &[Value]) -> Vec<u8> {
    review("apiextensions.k8s.io/v1", uid, desired, objects)
}

/// The `response` of a v1 ConversionReview answer.
fn response(bytes: &[u8]) -> Value {
    let v: Value = serde_json::from_slice(bytes).unwrap();
    assert_eq!(v["apiVersion"], "apiextensions.k8s.io/v1", "{v}");
    assert_eq!(v["kind"], "ConversionReview");
    v["response"].clone()
}

fn failure(uid: &str, message: &str) -> Value {
    json!({"uid": uid, "convertedObjects": [], "result": {"status": "Failure", "message": message}})
}

struct Server {
    addr: SocketAddr,
    ca: String,
    admission: Admission,
    gate: Arc<Gate>,
    started: mpsc::UnboundedReceiver<()>,
}

impl Server {
    async fn client(&self) -> hyper::client::conn::http1::SendRequest<http_body_util::Full<bytes::Bytes>> {
        connect(self.addr, client_config(&self.ca)).await.unwrap()
    }
}

/// Serve `spec`'s conversions (and no admission route) within `config`.
async fn start(spec: &OperatorSpec, config: ServerConfig) -> Server {
    start_with(spec, config, &[]).await
}

/// Serve `spec`'s conversions and `routes` within `config`; the admission handler behind the
/// routes tells the test it started and waits for the gate, then allows.
async fn start_with(spec: &OperatorSpec, config: ServerConfig, routes: &[Route]) -> Server {
    let gate = Arc::new(Gate::default());
    let (tx, started) = mpsc::unbounded_channel();
    let held = (gate.clone(), tx.clone());
    let validate = move |_: &AdmissionCall<'_>| {
        let _ = held.1.send(());
        held.0.wait();
        Ok(allowed())
    };
    let admission = Admission::new(Arc::new(validate), routes, config);
    admission.set_conversion(Arc::new(Widgets { gate: gate.clone(), started: tx }), spec);
    let issued = SelfIssued::issue(&["127.0.0.1".to_owned()]).unwrap();
    let ca = issued.ca_pem.clone();
    let bound = ctop_webhook::bind(
        "127.0.0.1:0".parse().unwrap(),
        &TlsSource::SelfIssued(issued),
        admission.router(),
    )
    .await
    .unwrap();
    let addr = bound.local_addr().unwrap();
    tokio::spawn(bound.run(std::future::pending()));
    Server { addr, ca, admission, gate, started }
}

fn config() -> ServerConfig {
    ServerConfig {
        timeout: Duration::from_millis(300),
        failure_policy: FailurePolicy::Fail,
        ..ServerConfig::default()
    }
}

#[tokio::test]
async fn converts_one_object_and_a_batch_in_order() {
    let server = start(&converting_spec(&["reconcile"]), config()).await;
    let mut c = server.client().await;
    let (status, bytes) =
        post(&mut c, CONVERSION_PATH, v1_review("u1", "demo.ctop.dev/v2", &[widget("v1", "a", "blue")]))
            .await;
    assert_eq!(status, 200);
    assert_eq!(
        response(&bytes),
        json!({"uid": "u1", "convertedObjects": [widget("v2", "a", "blue")], "result": {"status": "Success"}})
    );

    // A list converts in one review: every object, in the order sent.
    let batch: Vec<Value> =
        (0..5).map(|i| widget(if i % 2 == 0 { "v1" } else { "v2" }, &format!("w{i}"), "green")).collect();
    let (status, bytes) = post(&mut c, CONVERSION_PATH, v1_review("u2", "demo.ctop.dev/v1", &batch)).await;
    assert_eq!(status, 200);
    let r = response(&bytes);
    assert_eq!(r["result"], json!({"status": "Success"}));
    let want: Vec<Value> = (0..5).map(|i| widget("v1", &format!("w{i}"), "green")).collect();
    assert_eq!(r["convertedObjects"], json!(want));

    // An empty list needs no script.
    let (_, bytes) = post(&mut c, CONVERSION_PATH, v1_review("u3", "demo.ctop.dev/v1", &[])).await;
    assert_eq!(
        response(&bytes),
        json!({"uid": "u3", "convertedObjects": [], "result": {"status": "Success"}})
    );
}

#[tokio::test]
async fn a_v1beta1_review_is_answered_in_v1beta1() {
    let server = start(&converting_spec(&["reconcile"]), config()).await;
    let mut c = server.client().await;
    let body = review("apiextensions.k8s.io/v1beta1", "b1", "demo.ctop.dev/v2", &[widget("v1", "a", "blue")]);
    let (status, bytes) = post(&mut c, CONVERSION_PATH, body).await;
    assert_eq!(status, 200);
    let v: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(
        v,
        json!({"apiVersion": "apiextensions.k8s.io/v1beta1", "kind": "ConversionReview", "response": {
            "uid": "b1", "convertedObjects": [widget("v2", "a", "blue")], "result": {"status": "Success"}}})
    );
}

#[tokio::test]
async fn a_throwing_script_or_a_wrong_result_is_a_failure_with_its_message() {
    let server = start(&converting_spec(&["reconcile"]), config()).await;
    let mut c = server.client().await;
    let (status, bytes) =
        post(&mut c, CONVERSION_PATH, v1_review("t1", "demo.ctop.dev/v2", &[widget("v1", "a", "throw")]))
            .await;
    assert_eq!(status, 200, "the API server reads the message from a 200");
    assert_eq!(response(&bytes), failure("t1", "Error: no colour for red (at operator.ct:7:11)"));

    let two = [widget("v1", "a", "short"), widget("v1", "b", "blue")];
    let (status, bytes) = post(&mut c, CONVERSION_PATH, v1_review("t2", "demo.ctop.dev/v2", &two)).await;
    assert_eq!(status, 200);
    assert_eq!(response(&bytes), failure("t2", "the conversion returned 1 objects for the 2 it was sent"));

    let two = [widget("v1", "a", "text"), widget("v1", "b", "blue")];
    let (_, bytes) = post(&mut c, CONVERSION_PATH, v1_review("t3", "demo.ctop.dev/v2", &two)).await;
    assert_eq!(
        response(&bytes),
        failure("t3", r#"the conversion returned a non-object for object 1: "a widget""#)
    );

    // And the server goes on converting.
    let (_, bytes) =
        post(&mut c, CONVERSION_PATH, v1_review("t4", "demo.ctop.dev/v2", &[widget("v1", "a", "blue")]))
            .await;
    assert_eq!(response(&bytes)["result"]["status"], "Success");
}

#[tokio::test]
async fn a_slow_conversion_fails_at_the_deadline_and_the_server_keeps_serving() {
    let mut server =
        start(&converting_spec(&["reconcile"]), ServerConfig { concurrency: 1, ..config() }).await;
    let mut c = server.client().await;
    let (status, bytes) =
        post(&mut c, CONVERSION_PATH, v1_review("s1", "demo.ctop.dev/v2", &[widget("v1", "a", "wait")]))
            .await;
    assert_eq!(status, 200);
    assert_eq!(response(&bytes), failure("s1", "the convert handler did not answer within 300ms"));
    server.started.recv().await.unwrap();
    // The late conversion holds the only slot until it returns; then the slot is free again.
    server.gate.open();
    let (_, bytes) =
        post(&mut c, CONVERSION_PATH, v1_review("s2", "demo.ctop.dev/v2", &[widget("v1", "a", "blue")]))
            .await;
    assert_eq!(response(&bytes)["result"], json!({"status": "Success"}));
}

#[tokio::test]
async fn busy_slots_are_a_failure_once_the_deadline_passes() {
    let mut server =
        start(&converting_spec(&["reconcile"]), ServerConfig { concurrency: 1, ..config() }).await;
    let mut first = server.client().await;
    let waiting = tokio::spawn(async move {
        post(&mut first, CONVERSION_PATH, v1_review("b1", "demo.ctop.dev/v2", &[widget("v1", "a", "wait")]))
            .await
    });
    server.started.recv().await.unwrap();
    let mut second = server.client().await;
    let (status, bytes) =
        post(&mut second, CONVERSION_PATH, v1_review("b2", "demo.ctop.dev/v2", &[widget("v1", "b", "blue")]))
            .await;
    assert_eq!(status, 200);
    assert_eq!(response(&bytes), failure("b2", "all 1 handler slots stayed busy for 300ms"));
    server.gate.open();
    let (_, bytes) = waiting.await.unwrap();
    assert_eq!(response(&bytes), failure("b1", "the convert handler did not answer within 300ms"));
}

/// Admission handlers and conversions take turns in the same slots: a validate call holding
/// the only slot keeps a conversion out until the deadline.
#[tokio::test]
async fn admission_and_conversion_share_the_slots() {
    let routes = support::widget_routes();
    let mut server =
        start_with(&converting_spec(&["reconcile"]), ServerConfig { concurrency: 1, ..config() }, &routes)
            .await;
    let mut first = server.client().await;
    let validating = tokio::spawn(async move {
        let review = ctop_webhook::review_for("a1", "CREATE", &support::widget("blue"), None);
        post(&mut first, "/validate/demo.ctop.dev/v1/widgets", serde_json::to_vec(&review).unwrap()).await
    });
    server.started.recv().await.unwrap();
    let mut second = server.client().await;
    let (_, bytes) =
        post(&mut second, CONVERSION_PATH, v1_review("c1", "demo.ctop.dev/v2", &[widget("v1", "a", "blue")]))
            .await;
    assert_eq!(response(&bytes), failure("c1", "all 1 handler slots stayed busy for 300ms"));
    server.gate.open();
    let (status, _) = validating.await.unwrap();
    assert_eq!(status, 200);
}

#[tokio::test]
async fn malformed_reviews_get_400_with_the_reason() {
    let server = start(&converting_spec(&["reconcile"]), config()).await;
    let mut c = server.client().await;
    let cases: [(Vec<u8>, &str); 5] = [
        (b"{\"apiVersion\": ".to_vec(), "not JSON"),
        (review("admission.k8s.io/v1", "u", "demo.ctop.dev/v2", &[]), "admission.k8s.io/v1"),
        (
            br#"{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"desiredAPIVersion":"demo.ctop.dev/v2"}}"#
                .to_vec(),
            "request.uid",
        ),
        (
            br#"{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"u","objects":[]}}"#
                .to_vec(),
            "request.desiredAPIVersion",
        ),
        (v1_review("u", "demo.ctop.dev/v2", &[json!(1)]), "request.objects[0] is not an object"),
    ];
    for (body, why) in cases {
        let (status, bytes) = post(&mut c, CONVERSION_PATH, body).await;
        let text = String::from_utf8_lossy(&bytes);
        assert_eq!(status, 400, "{text}");
        assert!(text.starts_with("malformed ConversionReview: ") && text.contains(why), "{text}");
    }
}

#[tokio::test]
async fn without_versions_to_convert_the_path_is_a_404() {
    let server = start(&single_version_spec(&["reconcile"]), config()).await;
    let mut c = server.client().await;
    let body = v1_review("n1", "demo.ctop.dev/v2", &[widget("v1", "a", "blue")]);
    let (status, bytes) = post(&mut c, CONVERSION_PATH, body.clone()).await;
    assert_eq!(status, 404, "{}", String::from_utf8_lossy(&bytes));

    // A reload that adds a version serves it from the next request on, and one that removes
    // it takes it away again.
    let gate = server.gate.clone();
    let script = Arc::new(Widgets { gate, started: mpsc::unbounded_channel().0 });
    server.admission.set_conversion(script.clone(), &converting_spec(&["reconcile"]));
    let (status, _) = post(&mut c, CONVERSION_PATH, body.clone()).await;
    assert_eq!(status, 200);
    server.admission.set_conversion(script, &single_version_spec(&["reconcile"]));
    let (status, _) = post(&mut c, CONVERSION_PATH, body).await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn a_body_over_the_limit_gets_413_stating_the_limit() {
    let server = start(&converting_spec(&["reconcile"]), ServerConfig { max_body: 1000, ..config() }).await;
    let mut c = server.client().await;
    let mut big = widget("v1", "a", "blue");
    big["spec"]["padding"] = json!("x".repeat(2000));
    let (status, bytes) = post(&mut c, CONVERSION_PATH, v1_review("l1", "demo.ctop.dev/v2", &[big])).await;
    assert_eq!(status, 413);
    assert_eq!(String::from_utf8_lossy(&bytes), "Request entity too large: limit is 1000\n");
}

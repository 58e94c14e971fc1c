//! The webhook server over real TLS on loopback, driven by a Rust `AdmissionScript`: the
//! answers, and what it does with bad input (malformed or wrong reviews, huge bodies, slow
//! and failing handlers, plain HTTP, expired and reloaded certificates).
#![allow(clippy::unwrap_used)]

mod support;

use std::time::Duration;

use base64::Engine as _;
use ctop_core::AdmissionOutcome;
use ctop_webhook::{
    AdmissionCall, FailurePolicy, HandlerKind, HookError, ServerConfig, TlsSource, review_for,
};
use serde_json::{Value, json};
use support::{
    allowed_with, client_config, connect, denied, mutated, post, start, start_with, widget, widget_routes,
};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

const VALIDATE: &str = "/validate/demo.ctop.dev/v1/widgets";
const MUTATE: &str = "/mutate/demo.ctop.dev/v1/widgets";

/// Like the test operator: red is denied, `throw` fails, `slow` sleeps; mutate labels.
fn handlers(call: &AdmissionCall<'_>) -> Result<AdmissionOutcome, HookError> {
    let color = call.object["spec"]["color"].as_str().unwrap_or_default();
    match color {
        "throw" => return Err(HookError::Failed("Error: boom (at operator.ct:3:9)".into())),
        "slow" => std::thread::sleep(Duration::from_secs(2)),
        _ => {}
    }
    Ok(match call.handler {
        HandlerKind::Validate if color == "red" => denied("no red"),
        HandlerKind::Validate => match call.old_object {
            Some(old) if old["spec"]["color"] != call.object["spec"]["color"] => {
                denied(format!("was {}", old["spec"]["color"]))
            }
            _ => allowed_with(&["checked"]),
        },
        HandlerKind::Mutate => {
            let mut o = call.object.clone();
            o["metadata"]["labels"] = json!({"team": "core"});
            mutated(o)
        }
    })
}

fn config(policy: FailurePolicy) -> ServerConfig {
    ServerConfig { timeout: Duration::from_millis(500), failure_policy: policy, ..ServerConfig::default() }
}

fn body(v: &Value) -> Vec<u8> {
    serde_json::to_vec(v).unwrap()
}

fn response(bytes: &[u8]) -> Value {
    let v: Value = serde_json::from_slice(bytes).unwrap();
    assert_eq!(v["apiVersion"], "admission.k8s.io/v1");
    assert_eq!(v["kind"], "AdmissionReview");
    v["response"].clone()
}

#[tokio::test]
async fn validates_with_messages_warnings_and_old_object() {
    let (addr, ca) = start(handlers, &widget_routes(), config(FailurePolicy::Fail)).await;
    let mut c = connect(addr, client_config(&ca)).await.unwrap();
    let (status, bytes) =
        post(&mut c, VALIDATE, body(&review_for("u1", "CREATE", &widget("red"), None))).await;
    assert_eq!(status, 200);
    assert_eq!(
        response(&bytes),
        json!({"uid": "u1", "allowed": false, "status": {"code": 403, "message": "no red", "reason": "Forbidden"}})
    );
    let (_, bytes) = post(&mut c, VALIDATE, body(&review_for("u2", "CREATE", &widget("blue"), None))).await;
    assert_eq!(response(&bytes), json!({"uid": "u2", "allowed": true, "warnings": ["checked"]}));
    let update = review_for("u3", "UPDATE", &widget("green"), Some(&widget("blue")));
    let (_, bytes) = post(&mut c, VALIDATE, body(&update)).await;
    assert_eq!(response(&bytes)["status"]["message"], "was \"blue\"");
    // DELETE carries no object: allowed without calling the handler.
    let delete = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {"uid": "u4", "operation": "DELETE", "object": null, "oldObject": widget("red")}});
    let (_, bytes) = post(&mut c, VALIDATE, body(&delete)).await;
    assert_eq!(response(&bytes), json!({"uid": "u4", "allowed": true}));
}

#[tokio::test]
async fn mutations_are_answered_as_json_patches() {
    let (addr, ca) = start(handlers, &widget_routes(), config(FailurePolicy::Fail)).await;
    let mut c = connect(addr, client_config(&ca)).await.unwrap();
    let original = widget("blue");
    let (status, bytes) = post(&mut c, MUTATE, body(&review_for("m1", "CREATE", &original, None))).await;
    assert_eq!(status, 200);
    let r = response(&bytes);
    assert_eq!(r["allowed"], true);
    assert_eq!(r["patchType"], "JSONPatch");
    let raw = base64::engine::general_purpose::STANDARD.decode(r["patch"].as_str().unwrap()).unwrap();
    let patch: json_patch::Patch = serde_json::from_slice(&raw).unwrap();
    let mut patched = original.clone();
    json_patch::patch(&mut patched, &patch).unwrap();
    assert_eq!(patched["metadata"]["labels"], json!({"team": "core"}));
    assert_eq!(patched["spec"], original["spec"]);
}

#[tokio::test]
async fn malformed_reviews_get_400_with_the_reason() {
    let (addr, ca) = start(handlers, &widget_routes(), config(FailurePolicy::Fail)).await;
    let mut c = connect(addr, client_config(&ca)).await.unwrap();
    let (status, bytes) = post(&mut c, VALIDATE, b"{\"apiVersion\": ".to_vec()).await;
    assert_eq!(status, 400);
    assert!(String::from_utf8_lossy(&bytes).contains("not JSON"), "{}", String::from_utf8_lossy(&bytes));

    let mut v1beta1 = review_for("u", "CREATE", &widget("blue"), None);
    v1beta1["apiVersion"] = json!("admission.k8s.io/v1beta1");
    let (status, bytes) = post(&mut c, VALIDATE, body(&v1beta1)).await;
    assert_eq!(status, 400);
    assert!(String::from_utf8_lossy(&bytes).contains("admission.k8s.io/v1beta1"));

    let (status, bytes) = post(
        &mut c,
        VALIDATE,
        br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"object":{}}}"#.to_vec(),
    )
    .await;
    assert_eq!(status, 400);
    assert!(String::from_utf8_lossy(&bytes).contains("uid"));

    let (status, _) =
        post(&mut c, "/validate/other/v1/things", body(&review_for("u", "CREATE", &widget("b"), None))).await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn a_10_mb_body_is_refused_with_413_stating_the_limit() {
    let (addr, ca) = start(handlers, &widget_routes(), config(FailurePolicy::Fail)).await;
    let mut c = connect(addr, client_config(&ca)).await.unwrap();
    let mut big = widget("blue");
    big["spec"]["padding"] = json!("x".repeat(10 * 1024 * 1024));
    let (status, answer) = post(&mut c, VALIDATE, body(&review_for("u", "CREATE", &big, None))).await;
    assert_eq!(status, 413);
    // The API server's words for its own limit.
    assert_eq!(String::from_utf8_lossy(&answer), "Request entity too large: limit is 3145728\n");
    // The server is still there.
    let mut c = connect(addr, client_config(&ca)).await.unwrap();
    let (status, _) = post(&mut c, VALIDATE, body(&review_for("u", "CREATE", &widget("blue"), None))).await;
    assert_eq!(status, 200);
}

/// A chunked body (no Content-Length to refuse up front) is cut off at the limit with the
/// same answer.
#[tokio::test]
async fn a_chunked_body_over_the_limit_gets_413_stating_the_limit() {
    let cfg = ServerConfig { max_body: 1000, ..config(FailurePolicy::Fail) };
    let (addr, ca) = start(handlers, &widget_routes(), cfg).await;
    let mut tls = support::connect_tls(addr, client_config(&ca)).await.unwrap();
    let chunk = "x".repeat(600);
    let request = format!(
        "POST {VALIDATE} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n{len:x}\r\n{chunk}\r\n{len:x}\r\n{chunk}\r\n0\r\n\r\n",
        len = chunk.len()
    );
    tls.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    let _ = tls.read_to_end(&mut answer).await;
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(answer.ends_with("\r\n\r\nRequest entity too large: limit is 1000\n"), "{answer}");
}

#[tokio::test]
async fn slow_and_failing_handlers_follow_the_failure_policy() {
    for policy in [FailurePolicy::Fail, FailurePolicy::Ignore] {
        let (addr, ca) = start(handlers, &widget_routes(), config(policy)).await;
        let mut c = connect(addr, client_config(&ca)).await.unwrap();
        for (color, why) in [("throw", "Error: boom"), ("slow", "did not answer within 500ms")] {
            let (status, bytes) =
                post(&mut c, VALIDATE, body(&review_for("u", "CREATE", &widget(color), None))).await;
            assert_eq!(status, 200);
            let r = response(&bytes);
            match policy {
                FailurePolicy::Fail => {
                    assert_eq!(r["allowed"], false);
                    assert_eq!(r["status"]["code"], 500);
                    let message = r["status"]["message"].as_str().unwrap();
                    assert!(
                        message.contains(why) && message.contains("validate handler of widget"),
                        "{message}"
                    );
                }
                FailurePolicy::Ignore => {
                    assert_eq!(r["allowed"], true);
                    assert!(r["warnings"][0].as_str().unwrap().contains(why), "{r}");
                    assert!(r.get("patch").is_none());
                }
            }
        }
        let (_, bytes) =
            post(&mut c, VALIDATE, body(&review_for("u", "CREATE", &widget("blue"), None))).await;
        assert_eq!(response(&bytes)["allowed"], true, "the server keeps serving");
    }
}

#[tokio::test]
async fn busy_slots_time_out_instead_of_queueing_forever() {
    let cfg = ServerConfig { concurrency: 1, ..config(FailurePolicy::Fail) };
    let (addr, ca) = start(handlers, &widget_routes(), cfg).await;
    let tls = client_config(&ca);
    let mut a = connect(addr, tls.clone()).await.unwrap();
    let mut b = connect(addr, tls).await.unwrap();
    let slow = tokio::spawn(async move {
        post(&mut a, VALIDATE, body(&review_for("a", "CREATE", &widget("slow"), None))).await
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    let (_, bytes) = post(&mut b, VALIDATE, body(&review_for("b", "CREATE", &widget("blue"), None))).await;
    let r = response(&bytes);
    assert_eq!(r["allowed"], false);
    assert!(r["status"]["message"].as_str().unwrap().contains("handler slots stayed busy"), "{r}");
    let (_, bytes) = slow.await.unwrap();
    assert!(response(&bytes)["status"]["message"].as_str().unwrap().contains("did not answer"));
}

#[tokio::test]
async fn plain_http_on_the_tls_port_gets_a_400() {
    let (addr, _) = start(handlers, &widget_routes(), config(FailurePolicy::Fail)).await;
    let mut tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    tcp.write_all(
        b"POST /validate/demo.ctop.dev/v1/widgets HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}",
    )
    .await
    .unwrap();
    let mut answer = String::new();
    tcp.read_to_string(&mut answer).await.unwrap();
    assert!(answer.starts_with("HTTP/1.1 400 Bad Request"), "{answer}");
    assert!(answer.contains("HTTP request to an HTTPS server"), "{answer}");
}

/// A CA and a leaf for 127.0.0.1 valid `from`..`until` (years), as PEM (ca, cert, key).
fn issue(not_before: (i32, u8, u8), not_after: (i32, u8, u8)) -> (String, String, String) {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair, date_time_ymd};
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_key = KeyPair::generate().unwrap();
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca, ca_key);
    let mut leaf = CertificateParams::new(vec!["127.0.0.1".to_owned()]).unwrap();
    leaf.not_before = date_time_ymd(not_before.0, not_before.1, not_before.2);
    leaf.not_after = date_time_ymd(not_after.0, not_after.1, not_after.2);
    let key = KeyPair::generate().unwrap();
    let cert = leaf.signed_by(&key, &issuer).unwrap();
    (ca_cert.pem(), cert.pem(), key.serialize_pem())
}

#[tokio::test]
async fn an_expired_certificate_is_refused_by_clients_and_a_renewed_one_is_picked_up() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = (dir.path().join("tls.crt"), dir.path().join("tls.key"));
    let (ca, expired_cert, expired_key) = issue((2020, 1, 1), (2021, 1, 1));
    std::fs::write(&cert, expired_cert).unwrap();
    std::fs::write(&key, expired_key).unwrap();
    let tls =
        TlsSource::Files { cert: cert.clone(), key: key.clone(), reload_every: Duration::from_millis(100) };
    let addr = start_with(handlers, &widget_routes(), config(FailurePolicy::Fail), &tls).await;
    let err = connect(addr, client_config(&ca)).await.expect_err("an expired certificate is refused");
    assert!(err.to_lowercase().contains("expired"), "{err}");

    // cert-manager renews the Secret: new files, picked up without a restart.
    let (new_ca, fresh_cert, fresh_key) = issue((2020, 1, 1), (2100, 1, 1));
    std::fs::write(&key, fresh_key).unwrap();
    std::fs::write(&cert, fresh_cert).unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let mut c = loop {
        match connect(addr, client_config(&new_ca)).await {
            Ok(c) => break c,
            Err(e) => {
                assert!(
                    tokio::time::Instant::now() < deadline,
                    "the renewed certificate was not loaded: {e}"
                );
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    };
    let (status, _) = post(&mut c, VALIDATE, body(&review_for("u", "CREATE", &widget("blue"), None))).await;
    assert_eq!(status, 200);
}

/// The generated configurations (Service endpoint, CA patched in) called by kubesim's
/// admission client exactly as the API server calls webhooks: the certificate must be valid
/// for `<service>.<namespace>.svc`, denials carry the script's message, patches apply.
#[tokio::test]
async fn kubesim_calls_the_generated_configurations() {
    use ctop_kubesim::{AdmissionAttributes as Attributes, Operation, WebhookCaller as Caller};
    use ctop_webhook::{ConfigurationOptions, Endpoint, SelfIssued, configurations};

    let issued = SelfIssued::issue(&["op-webhook.op-system.svc".to_owned()]).unwrap();
    let ca = issued.ca_pem.clone();
    let routes = widget_routes();
    let addr =
        start_with(handlers, &routes, config(FailurePolicy::Fail), &TlsSource::SelfIssued(issued)).await;
    let options = ConfigurationOptions {
        name: "op".into(),
        endpoint: Endpoint::Service { namespace: "op-system".into(), name: "op-webhook".into(), port: 443 },
        ca_bundle: Some(ca),
        failure_policy: FailurePolicy::Fail,
        timeout_seconds: 5,
        labels: serde_json::Map::new(),
        annotations: serde_json::Map::new(),
    };
    let docs = configurations(&routes, &options);
    let (validating, mutating) = (&docs[0..1], &docs[1..2]);
    let caller = Caller::new([("op-system/op-webhook".to_owned(), addr.to_string())].into_iter().collect());
    let attrs = |color: &str, old: Option<&str>| Attributes {
        operation: if old.is_some() { Operation::Update } else { Operation::Create },
        group: "demo.ctop.dev".into(),
        version: "v1".into(),
        kind: "Widget".into(),
        resource: "widgets".into(),
        namespace: "default".into(),
        name: "w".into(),
        object: Some(widget(color)),
        old_object: old.map(widget),
        namespace_labels: Some(Default::default()),
        ..Attributes::default()
    };
    let (mutated, _) = caller.mutate(mutating, &attrs("blue", None)).await.unwrap();
    assert_eq!(mutated.unwrap()["metadata"]["labels"], json!({"team": "core"}));
    let warnings = caller.validate(validating, &attrs("blue", None)).await.unwrap();
    assert_eq!(warnings, ["checked"]);
    let denied = caller.validate(validating, &attrs("red", None)).await.unwrap_err();
    assert_eq!(denied.code(), 403);
    assert!(
        denied.status()["message"]
            .as_str()
            .unwrap()
            .contains(r#"admission webhook "validate.widgets.demo.ctop.dev" denied the request: no red"#),
        "{}",
        denied.status()
    );
    let update = caller.validate(validating, &attrs("green", Some("blue"))).await.unwrap_err();
    assert!(update.status()["message"].as_str().unwrap().contains("was \"blue\""));
}

/// Idle connections are closed, and no more than `max_connections` are served at once: a
/// further client waits until a slot frees (here the idle time frees it before the shed
/// grace would let the idle connection be shed).
#[tokio::test]
async fn connections_are_bounded_in_number_and_idle_time() {
    use ctop_webhook::ConnectionLimits;
    let limits = ConnectionLimits {
        max_connections: 1,
        idle_timeout: Duration::from_millis(300),
        handshake_timeout: Duration::from_secs(5),
        shed_grace: Duration::from_secs(5),
        ..ConnectionLimits::default()
    };
    let (addr, ca) =
        support::start_with_limits(handlers, &widget_routes(), config(FailurePolicy::Fail), limits).await;
    let tls = client_config(&ca);

    let mut first = connect(addr, tls.clone()).await.unwrap();
    let (status, _) =
        post(&mut first, VALIDATE, body(&review_for("a", "CREATE", &widget("blue"), None))).await;
    assert_eq!(status, 200);
    // The only slot is taken: a second client cannot finish its handshake yet.
    let second = tokio::spawn({
        let tls = tls.clone();
        async move { connect(addr, tls).await }
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!second.is_finished(), "a second connection was served beyond max_connections");
    // After 300 ms of silence the first connection is closed, freeing the slot.
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert!(first.is_closed() || first.ready().await.is_err(), "the idle connection is still open");
    let mut second = tokio::time::timeout(Duration::from_secs(5), second).await.unwrap().unwrap().unwrap();
    let (status, _) =
        post(&mut second, VALIDATE, body(&review_for("b", "CREATE", &widget("blue"), None))).await;
    assert_eq!(status, 200);
}

/// On shutdown the server stops accepting, closes idle keep-alive connections, lets the
/// request in flight finish, and then returns.
#[tokio::test]
async fn shutdown_finishes_requests_in_flight() {
    use ctop_webhook::{Admission, SelfIssued};
    let issued = SelfIssued::issue(&["127.0.0.1".to_owned()]).unwrap();
    let ca = issued.ca_pem.clone();
    let called = std::sync::Arc::new(tokio::sync::Notify::new());
    let script = {
        let called = called.clone();
        move |call: &AdmissionCall<'_>| {
            if call.object["spec"]["color"] == "slow" {
                called.notify_one();
                std::thread::sleep(Duration::from_millis(300));
            }
            handlers(call)
        }
    };
    let cfg = ServerConfig { timeout: Duration::from_secs(5), ..config(FailurePolicy::Fail) };
    let app = Admission::new(std::sync::Arc::new(script), &widget_routes(), cfg).router();
    let bound = ctop_webhook::bind("127.0.0.1:0".parse().unwrap(), &TlsSource::SelfIssued(issued), app)
        .await
        .unwrap();
    let addr = bound.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(bound.run(async {
        let _ = stopped.await;
    }));
    let tls = client_config(&ca);
    let mut idle = connect(addr, tls.clone()).await.unwrap();
    let (status, _) =
        post(&mut idle, VALIDATE, body(&review_for("a", "CREATE", &widget("blue"), None))).await;
    assert_eq!(status, 200);
    let mut busy = connect(addr, tls.clone()).await.unwrap();
    let in_flight = tokio::spawn(async move {
        post(&mut busy, VALIDATE, body(&review_for("b", "CREATE", &widget("slow"), None))).await
    });
    called.notified().await;
    stop.send(()).unwrap();
    let (status, bytes) = in_flight.await.unwrap();
    assert_eq!(status, 200);
    assert_eq!(response(&bytes)["uid"], "b");
    tokio::time::timeout(Duration::from_secs(5), server)
        .await
        .expect("the server did not stop")
        .unwrap()
        .unwrap();
    assert!(idle.ready().await.is_err(), "the idle connection is still open");
    assert!(connect(addr, tls).await.is_err(), "the server still accepts connections");
}

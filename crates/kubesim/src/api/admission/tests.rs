//! Tests of admission: webhook calls over real TLS, certificates, denials, patches, failure policies.

use super::matching::{namespace_matches, rule_matches, selector_matches};
use super::*;
use std::net::SocketAddr;
use std::sync::Arc;

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
use rustls_pki_types::PrivateKeyDer;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use crate::api::webhook::test_server::{Ca, Handler, ca, serve, server_tls};
use crate::api::webhook::{
    clean_path, go_duration, join_host_port, resolve_loopback, rfc3339, split_host_port,
};

const SVC: &str = "hook.webhooks.svc";

/// A well-formed v1 response echoing the request uid.
fn respond(req: &Value, response: Value) -> (u16, Value) {
    let mut response = response;
    response["uid"] = req["request"]["uid"].clone();
    (200, json!({ "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response }))
}

fn handler(f: impl Fn(&Value) -> (u16, Value) + Send + Sync + 'static) -> Handler {
    Arc::new(f)
}

fn allow_all() -> Handler {
    handler(|req| respond(req, json!({ "allowed": true })))
}

fn patcher(patch: Value) -> Handler {
    handler(move |req| {
        let encoded = BASE64.encode(patch.to_string());
        respond(req, json!({ "allowed": true, "patchType": "JSONPatch", "patch": encoded }))
    })
}

/// A webhook for pods CREATE on service `webhooks/hook`, path `/hook`; `extra` is merged in.
fn hook(name: &str, ca: &Ca, extra: Value) -> Value {
    let mut hook = json!({
        "name": name,
        "clientConfig": {
            "service": { "namespace": "webhooks", "name": "hook", "path": "/hook" },
            "caBundle": BASE64.encode(&ca.pem),
        },
        "rules": [{ "operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"] }],
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    });
    for (k, v) in extra.as_object().unwrap() {
        hook[k] = v.clone();
    }
    hook
}

fn config(kind: &str, name: &str, hooks: Vec<Value>) -> Value {
    json!({ "apiVersion": "admissionregistration.k8s.io/v1", "kind": kind, "metadata": { "name": name }, "webhooks": hooks })
}

fn vwc(hooks: Vec<Value>) -> Vec<Value> {
    vec![config("ValidatingWebhookConfiguration", "validators", hooks)]
}

fn caller(port: u16) -> Caller {
    Caller::new(HashMap::from([("webhooks/hook".to_string(), format!("127.0.0.1:{port}"))]))
}

fn pod_create() -> Attributes {
    Attributes {
        operation: Operation::Create,
        version: "v1".into(),
        kind: "Pod".into(),
        resource: "pods".into(),
        namespace: "default".into(),
        name: "web".into(),
        object: Some(
            json!({ "apiVersion": "v1", "kind": "Pod", "metadata": { "name": "web", "namespace": "default", "labels": { "app": "web" } } }),
        ),
        options: json!({ "apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions" }),
        user: UserInfo {
            username: "alice".into(),
            uid: "u-1".into(),
            groups: vec!["system:authenticated".into()],
        },
        namespace_labels: Some(BTreeMap::from([("team".to_string(), "a".to_string())])),
        ..Attributes::default()
    }
}

fn call_failure(err: AdmissionError) -> String {
    match err {
        AdmissionError::CallFailed { message, .. } => message,
        other => panic!("expected a call failure, got {other:?}"),
    }
}

#[tokio::test]
async fn allowed_request_sends_a_v1_admission_review() {
    let ca = ca("ca");
    let (port, log) = serve(server_tls(&ca, &[SVC], false), Duration::ZERO, allow_all()).await;
    let warnings = caller(port)
        .validate(&vwc(vec![hook("v.example.com", &ca, json!({}))]), &pod_create())
        .await
        .unwrap();
    assert!(warnings.is_empty());
    let seen = log.all();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].uri, "/hook?timeout=10s");
    assert_eq!(seen[0].host, "hook.webhooks.svc:443");
    let body = &seen[0].body;
    assert_eq!(body["apiVersion"], "admission.k8s.io/v1");
    assert_eq!(body["kind"], "AdmissionReview");
    let req = &body["request"];
    let uid = req["uid"].as_str().unwrap();
    assert_eq!(uid.len(), 36);
    assert_eq!(&uid[14..15], "4");
    assert_eq!(req["kind"], json!({ "group": "", "version": "v1", "kind": "Pod" }));
    assert_eq!(req["resource"], json!({ "group": "", "version": "v1", "resource": "pods" }));
    assert_eq!(req["requestKind"], req["kind"]);
    assert_eq!(req["requestResource"], req["resource"]);
    assert_eq!(req["operation"], "CREATE");
    assert_eq!(req["name"], "web");
    assert_eq!(req["namespace"], "default");
    assert!(req.get("subResource").is_none());
    assert_eq!(
        req["userInfo"],
        json!({ "username": "alice", "uid": "u-1", "groups": ["system:authenticated"] })
    );
    assert_eq!(req["object"]["metadata"]["labels"]["app"], "web");
    assert_eq!(req["oldObject"], Value::Null);
    assert_eq!(req["dryRun"], false);
    assert_eq!(req["options"]["kind"], "CreateOptions");
}

/// The error of a validating webhook that answers every review with `response`.
async fn denial(ca: &Ca, response: Value) -> AdmissionError {
    let deny = handler(move |req| respond(req, response.clone()));
    let (port, _) = serve(server_tls(ca, &[SVC], false), Duration::ZERO, deny).await;
    caller(port).validate(&vwc(vec![hook("v.example.com", ca, json!({}))]), &pod_create()).await.unwrap_err()
}

#[tokio::test]
async fn denial_carries_the_webhook_message_code_and_reason() {
    let ca = ca("ca");
    let err =
        denial(&ca, json!({ "allowed": false, "status": { "message": "replicas must be >= 1" } })).await;
    assert_eq!(
        err.to_string(),
        "admission webhook \"v.example.com\" denied the request: replicas must be >= 1"
    );
    assert_eq!(err.code(), 400, "codes below 400 become 400");
    assert_eq!(err.reason(), "");
    let status = err.status();
    assert_eq!(status["kind"], "Status");
    assert_eq!(status["status"], "Failure");
    assert_eq!(status["code"], 400);
    assert!(status.get("reason").is_none());

    let forbid = json!({ "allowed": false, "status": { "code": 403, "reason": "Forbidden", "details": { "name": "web" } } });
    let err = denial(&ca, forbid).await;
    assert_eq!(err.to_string(), "admission webhook \"v.example.com\" denied the request: Forbidden");
    assert_eq!((err.code(), err.reason()), (403, "Forbidden"));
    assert_eq!(err.status()["details"], json!({ "name": "web" }));

    let err = denial(&ca, json!({})).await;
    assert_eq!(err.to_string(), "admission webhook \"v.example.com\" denied the request without explanation");
}

#[tokio::test]
async fn mutations_chain_in_configuration_name_order() {
    let ca = ca("ca");
    let tls = server_tls(&ca, &[SVC, "127.0.0.1"], false);
    let (port_a, log_a) = serve(
        tls.clone(),
        Duration::ZERO,
        patcher(json!([{ "op": "add", "path": "/metadata/labels/injected", "value": "yes" }])),
    )
    .await;
    let (port_b, log_b) = serve(tls, Duration::ZERO, handler(|req| {
        // The second webhook sees the first one's change.
        let seen = req["request"]["object"]["metadata"]["labels"]["injected"].as_str().unwrap_or("missing").to_string();
        let patch = json!([{ "op": "add", "path": "/metadata/annotations", "value": { "saw": seen } }]);
        respond(req, json!({ "allowed": true, "patchType": "JSONPatch", "patch": BASE64.encode(patch.to_string()), "warnings": ["b ran"] }))
    })).await;
    let url_b = json!({ "clientConfig": { "url": format!("https://127.0.0.1:{port_b}/mutate"), "caBundle": BASE64.encode(&ca.pem) } });
    let configs = vec![
        config("MutatingWebhookConfiguration", "z-second", vec![hook("b.example.com", &ca, url_b)]),
        config("MutatingWebhookConfiguration", "a-first", vec![hook("a.example.com", &ca, json!({}))]),
    ];
    let (object, warnings) = caller(port_a).mutate(&configs, &pod_create()).await.unwrap();
    let object = object.unwrap();
    assert_eq!(object["metadata"]["labels"]["injected"], "yes");
    assert_eq!(object["metadata"]["annotations"]["saw"], "yes");
    assert_eq!(warnings, vec!["b ran".to_string()]);
    assert_eq!((log_a.count(), log_b.count()), (1, 1));
    let seen_b = &log_b.all()[0];
    assert_eq!(seen_b.uri, "/mutate?timeout=10s");
    assert_eq!(seen_b.host, format!("127.0.0.1:{port_b}"));
}

#[tokio::test]
async fn if_needed_webhooks_are_reinvoked_once_after_a_later_change() {
    let ca = ca("ca");
    let tls = server_tls(&ca, &[SVC], false);
    let (port, log) = serve(tls, Duration::ZERO, handler(|req| {
        let labels = &req["request"]["object"]["metadata"]["labels"];
        let patch = if labels.get("second").is_some() || labels.get("first").is_none() {
            json!([{ "op": "add", "path": "/metadata/labels/first", "value": format!("{}", labels.as_object().unwrap().len()) }])
        } else {
            json!([{ "op": "add", "path": "/metadata/labels/second", "value": "x" }])
        };
        respond(req, json!({ "allowed": true, "patchType": "JSONPatch", "patch": BASE64.encode(patch.to_string()) }))
    })).await;
    for (policy, calls, first) in [("IfNeeded", 3, "3"), ("Never", 2, "1")] {
        let before = log.count();
        let hooks = vec![
            hook("first.example.com", &ca, json!({ "reinvocationPolicy": policy })),
            hook("second.example.com", &ca, json!({})),
        ];
        let configs = vec![config("MutatingWebhookConfiguration", "m", hooks)];
        let (object, _) = caller(port).mutate(&configs, &pod_create()).await.unwrap();
        let labels = &object.unwrap()["metadata"]["labels"];
        assert_eq!(log.count() - before, calls, "{policy}");
        assert_eq!(labels["first"], first, "{policy}");
        assert_eq!(labels["second"], "x");
    }
}

#[tokio::test]
async fn non_matching_rules_and_selectors_skip_the_call() {
    let ca = ca("ca");
    let (port, log) = serve(server_tls(&ca, &[SVC], false), Duration::ZERO, allow_all()).await;
    let misses = [
        json!({ "rules": [{ "operations": ["UPDATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"] }] }),
        json!({ "rules": [{ "operations": ["*"], "apiGroups": ["apps"], "apiVersions": ["*"], "resources": ["*"] }] }),
        json!({ "rules": [{ "operations": ["*"], "apiGroups": ["*"], "apiVersions": ["v2"], "resources": ["*"] }] }),
        json!({ "rules": [{ "operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["pods/status"] }] }),
        json!({ "rules": [{ "operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"], "scope": "Cluster" }] }),
        json!({ "namespaceSelector": { "matchLabels": { "team": "b" } } }),
        json!({ "namespaceSelector": { "matchExpressions": [{ "key": "team", "operator": "NotIn", "values": ["a"] }] } }),
        json!({ "objectSelector": { "matchExpressions": [{ "key": "app", "operator": "DoesNotExist" }] } }),
    ];
    let caller = caller(port);
    for extra in misses {
        caller.validate(&vwc(vec![hook("v.example.com", &ca, extra.clone())]), &pod_create()).await.unwrap();
        assert_eq!(log.count(), 0, "{extra}");
    }
    let hits = [
        json!({ "rules": [{ "operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"], "scope": "Namespaced" }] }),
        json!({ "namespaceSelector": { "matchExpressions": [{ "key": "team", "operator": "In", "values": ["a", "b"] }] } }),
        json!({ "objectSelector": { "matchLabels": { "app": "web" } } }),
    ];
    for (i, extra) in hits.into_iter().enumerate() {
        caller.validate(&vwc(vec![hook("v.example.com", &ca, extra.clone())]), &pod_create()).await.unwrap();
        assert_eq!(log.count(), i + 1, "{extra}");
    }
}

#[test]
fn rules_follow_the_real_matcher() {
    let rule = |resources: Value, scope: Value| json!({ "operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": resources, "scope": scope });
    let mut status = pod_create();
    status.subresource = "status".into();
    status.operation = Operation::Update;
    assert!(!rule_matches(&rule(json!(["pods"]), Value::Null), &status, "v1"));
    assert!(!rule_matches(&rule(json!(["*"]), Value::Null), &status, "v1"));
    assert!(rule_matches(&rule(json!(["pods/status"]), Value::Null), &status, "v1"));
    assert!(rule_matches(&rule(json!(["*/status"]), Value::Null), &status, "v1"));
    assert!(rule_matches(&rule(json!(["*/*"]), Value::Null), &status, "v1"));
    assert!(rule_matches(&rule(json!(["pods/*"]), json!("*")), &status, "v1"));
    assert!(!rule_matches(&rule(json!(["pods/scale"]), Value::Null), &status, "v1"));

    let ns = Attributes {
        version: "v1".into(),
        kind: "Namespace".into(),
        resource: "namespaces".into(),
        namespace: "team-a".into(),
        name: "team-a".into(),
        ..Attributes::default()
    };
    assert!(rule_matches(&rule(json!(["namespaces"]), json!("Cluster")), &ns, "v1"));
    assert!(!rule_matches(&rule(json!(["namespaces"]), json!("Namespaced")), &ns, "v1"));
    let node = Attributes {
        version: "v1".into(),
        kind: "Node".into(),
        resource: "nodes".into(),
        ..Attributes::default()
    };
    assert!(rule_matches(&rule(json!(["nodes"]), json!("Cluster")), &node, "v1"));
    assert!(!rule_matches(&rule(json!(["nodes"]), json!("Namespaced")), &node, "v1"));
    assert!(!rule_matches(&rule(json!(["nodes"]), json!("Bogus")), &node, "v1"));
}

#[test]
fn selectors_and_namespace_lookup() {
    let labels = BTreeMap::from([("env".to_string(), "prod".to_string())]);
    let expr = |op: &str, values: Value| json!({ "matchExpressions": [{ "key": "env", "operator": op, "values": values }] });
    assert_eq!(selector_matches(&expr("In", json!(["prod"])), &labels), Ok(true));
    assert_eq!(selector_matches(&expr("NotIn", json!(["prod"])), &labels), Ok(false));
    assert_eq!(
        selector_matches(
            &json!({ "matchExpressions": [{ "key": "x", "operator": "NotIn", "values": ["a"] }] }),
            &labels
        ),
        Ok(true)
    );
    assert_eq!(selector_matches(&expr("Exists", Value::Null), &labels), Ok(true));
    assert_eq!(selector_matches(&expr("DoesNotExist", Value::Null), &labels), Ok(false));
    assert_eq!(
        selector_matches(&expr("Near", Value::Null), &labels),
        Err("\"Near\" is not a valid label selector operator".into())
    );

    // Cluster-scoped objects other than namespaces always match a namespace selector.
    let spec = json!({ "namespaceSelector": { "matchLabels": { "env": "prod" } } });
    let node = Attributes { resource: "nodes".into(), ..Attributes::default() };
    assert_eq!(namespace_matches(&spec, &node, None), Ok(true));
    // A Namespace being created is matched on its own labels.
    let ns = Attributes {
        resource: "namespaces".into(),
        namespace: "n".into(),
        name: "n".into(),
        ..Attributes::default()
    };
    let obj = json!({ "metadata": { "name": "n", "labels": { "env": "prod" } } });
    assert_eq!(namespace_matches(&spec, &ns, Some(&obj)), Ok(true));
    // A missing namespace is a 404 only when the selector is not empty.
    let mut pod = pod_create();
    pod.namespace_labels = None;
    let err = namespace_matches(&spec, &pod, pod.object.as_ref()).unwrap_err();
    assert_eq!((err.code(), err.to_string()), (404, "namespaces \"default\" not found".to_string()));
    assert_eq!(err.status()["details"], json!({ "name": "default", "kind": "namespaces" }));
    assert_eq!(namespace_matches(&json!({ "namespaceSelector": {} }), &pod, None), Ok(true));
}

#[tokio::test]
async fn failure_policy_decides_on_a_dead_port() {
    let ca = ca("ca");
    let dead = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = dead.local_addr().unwrap().port();
    drop(dead);
    let caller = caller(port);
    let err =
        caller.validate(&vwc(vec![hook("v.example.com", &ca, json!({}))]), &pod_create()).await.unwrap_err();
    assert_eq!((err.code(), err.reason()), (500, "InternalError"));
    let expected = format!(
        "failed calling webhook \"v.example.com\": failed to call webhook: Post \"https://hook.webhooks.svc:443/hook?timeout=10s\": dial tcp 127.0.0.1:{port}: connect: connection refused"
    );
    assert_eq!(err.to_string(), format!("Internal error occurred: {expected}"));
    assert_eq!(err.status()["details"]["causes"][0]["message"], json!(expected));
    assert_eq!(call_failure(err), expected);

    let ignore = hook("v.example.com", &ca, json!({ "failurePolicy": "Ignore" }));
    assert_eq!(caller.validate(&vwc(vec![ignore.clone()]), &pod_create()).await, Ok(vec![]));
    let configs = vec![config("MutatingWebhookConfiguration", "m", vec![ignore])];
    let (object, _) = caller.mutate(&configs, &pod_create()).await.unwrap();
    assert_eq!(object, pod_create().object);
}

#[tokio::test]
async fn unknown_service_fails_the_dial() {
    let ca = ca("ca");
    let err = Caller::new(HashMap::new())
        .validate(&vwc(vec![hook("v.example.com", &ca, json!({}))]), &pod_create())
        .await
        .unwrap_err();
    assert!(call_failure(err).ends_with("/hook?timeout=10s\": service \"hook\" not found"));
}

#[tokio::test]
async fn slow_webhooks_time_out() {
    let ca = ca("ca");
    let (port, log) = serve(server_tls(&ca, &[SVC], false), Duration::from_secs(3), allow_all()).await;
    let caller = caller(port);
    let slow = hook("v.example.com", &ca, json!({ "timeoutSeconds": 1 }));
    let started = std::time::Instant::now();
    let err = caller.validate(&vwc(vec![slow.clone()]), &pod_create()).await.unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(
        call_failure(err),
        "failed calling webhook \"v.example.com\": failed to call webhook: Post \"https://hook.webhooks.svc:443/hook?timeout=1s\": context deadline exceeded"
    );
    assert_eq!(log.all()[0].uri, "/hook?timeout=1s");
    let mut ignore = slow;
    ignore["failurePolicy"] = json!("Ignore");
    assert_eq!(caller.validate(&vwc(vec![ignore]), &pod_create()).await, Ok(vec![]));
}

#[tokio::test]
async fn certificates_must_chain_to_the_ca_bundle_and_match_the_host() {
    let (ca, other) = (ca("ca"), ca("other"));
    let prefix = "failed calling webhook \"v.example.com\": failed to call webhook: Post \"https://hook.webhooks.svc:443/hook?timeout=10s\": tls: failed to verify certificate: x509: ";
    let cases = [
        (server_tls(&other, &[SVC], false), "certificate signed by unknown authority".to_string()),
        (
            server_tls(&ca, &["other.webhooks.svc", "alt.webhooks.svc"], false),
            format!("certificate is valid for other.webhooks.svc, alt.webhooks.svc, not {SVC}"),
        ),
        (
            server_tls(&ca, &[SVC], true),
            "certificate has expired or is not yet valid: current time ".to_string(),
        ),
    ];
    for (tls, reason) in cases {
        let (port, log) = serve(tls, Duration::ZERO, allow_all()).await;
        let err = caller(port)
            .validate(&vwc(vec![hook("v.example.com", &ca, json!({}))]), &pod_create())
            .await
            .unwrap_err();
        let message = call_failure(err);
        assert!(message.starts_with(&format!("{prefix}{reason}")), "{message}");
        assert_eq!(log.count(), 0);
    }
    let (port, _) = serve(server_tls(&ca, &[SVC], true), Duration::ZERO, allow_all()).await;
    let err = caller(port)
        .validate(&vwc(vec![hook("v.example.com", &ca, json!({}))]), &pod_create())
        .await
        .unwrap_err();
    assert!(call_failure(err).ends_with(" is after 2001-01-01T00:00:00Z"));

    let mut no_pem = hook("v.example.com", &ca, json!({}));
    no_pem["clientConfig"]["caBundle"] = json!(BASE64.encode("not pem"));
    let err = caller(1).validate(&vwc(vec![no_pem]), &pod_create()).await.unwrap_err();
    assert_eq!(
        call_failure(err),
        "failed calling webhook \"v.example.com\": could not get REST client: unable to load root certificates: unable to parse bytes as PEM block"
    );
}

/// One self-signed certificate marked as a CA, serving as its own `caBundle` (as kopf
/// makes them), for `names`: its PEM for the bundle and the server's TLS config.
fn self_signed_ca_leaf(names: &[&str], expired: bool) -> (Ca, Arc<rustls::ServerConfig>) {
    let mut params = CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, names[0]);
    if expired {
        params.not_before = rcgen::date_time_ymd(2000, 1, 1);
        params.not_after = rcgen::date_time_ymd(2001, 1, 1);
    }
    let key = KeyPair::generate().unwrap();
    let cert = params.self_signed(&key).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![cert.der().clone()], PrivateKeyDer::Pkcs8(key.serialize_der().into()))
        .unwrap();
    (Ca { pem: cert.pem(), issuer: Issuer::new(params, key) }, Arc::new(config))
}

/// Go accepts a leaf that is itself one of the trusted roots without looking at its CA
/// flag (WebPKI would refuse it as `CaUsedAsEndEntity`); its names and dates still count.
#[tokio::test]
async fn a_self_signed_ca_certificate_that_is_its_own_ca_bundle_is_trusted_like_go_does() {
    let call = async |bundle: &Ca, tls: Arc<rustls::ServerConfig>| {
        let (port, log) = serve(tls, Duration::ZERO, allow_all()).await;
        let hooks = vwc(vec![hook("v.example.com", bundle, json!({}))]);
        let result = caller(port).validate(&hooks, &pod_create()).await;
        (result, log.count())
    };
    let (own, tls) = self_signed_ca_leaf(&[SVC], false);
    assert_eq!(call(&own, tls).await, (Ok(vec![]), 1));

    let prefix = "failed calling webhook \"v.example.com\": failed to call webhook: Post \"https://hook.webhooks.svc:443/hook?timeout=10s\": tls: failed to verify certificate: x509: ";
    let (wrong_name, tls) = self_signed_ca_leaf(&["other.webhooks.svc"], false);
    let (result, _) = call(&wrong_name, tls).await;
    assert_eq!(
        call_failure(result.unwrap_err()),
        format!("{prefix}certificate is valid for other.webhooks.svc, not {SVC}")
    );
    let (expired, tls) = self_signed_ca_leaf(&[SVC], true);
    let message = call_failure(call(&expired, tls).await.0.unwrap_err());
    assert!(
        message.starts_with(&format!("{prefix}certificate has expired or is not yet valid")),
        "{message}"
    );
    // Trusted as a root only when it is the very certificate in the bundle (here the
    // difference from Go is said in the message).
    let (_, tls) = self_signed_ca_leaf(&[SVC], false);
    let message = call_failure(call(&own, tls).await.0.unwrap_err());
    assert!(message.starts_with(&format!("{prefix}a CA certificate is served")), "{message}");
}

#[tokio::test]
async fn plain_http_endpoints_are_call_failures() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut tcp, _)) = listener.accept().await {
            let mut buf = [0u8; 1024];
            let _ = tcp.read(&mut buf).await;
            let _ = tcp.write_all(b"HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n").await;
        }
    });
    let ca = ca("ca");
    let err = caller(port)
        .validate(&vwc(vec![hook("v.example.com", &ca, json!({}))]), &pod_create())
        .await
        .unwrap_err();
    assert!(
        call_failure(err).ends_with("/hook?timeout=10s\": http: server gave HTTP response to HTTPS client")
    );
}

#[tokio::test]
async fn malformed_responses_are_call_failures() {
    let ca = ca("ca");
    let cases: Vec<(Handler, &str)> = vec![
        (
            handler(|_| {
                (
                    200,
                    json!({ "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": { "uid": "wrong", "allowed": true } }),
                )
            }),
            "expected response.uid=\"",
        ),
        (
            handler(|req| (200, json!({ "response": { "uid": req["request"]["uid"], "allowed": true } }))),
            "received invalid webhook response: expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got /, Kind=",
        ),
        (
            handler(|_| (200, json!({ "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview" }))),
            "received invalid webhook response: webhook response was absent",
        ),
        (
            handler(|req| {
                respond(
                    req,
                    json!({ "allowed": true, "patchType": "JSONPatch", "patch": BASE64.encode("[]") }),
                )
            }),
            "received invalid webhook response: validating webhook may not return response.patch",
        ),
        (
            handler(|req| respond(req, json!({ "allowed": "yes" }))),
            "failed to call webhook: json: cannot unmarshal string into Go struct field AdmissionResponse.response.allowed of type bool",
        ),
        (
            handler(|_| (404, json!({}))),
            "failed to call webhook: the server could not find the requested resource",
        ),
        (
            handler(|_| (500, json!({ "kind": "Status", "status": "Failure", "message": "boom" }))),
            "failed to call webhook: boom",
        ),
    ];
    for (h, expected) in cases {
        let (port, _) = serve(server_tls(&ca, &[SVC], false), Duration::ZERO, h).await;
        let err = caller(port)
            .validate(&vwc(vec![hook("v.example.com", &ca, json!({}))]), &pod_create())
            .await
            .unwrap_err();
        let message = call_failure(err);
        assert!(message.contains(expected), "{message}");
        if expected.starts_with("expected response.uid") {
            assert!(message.ends_with("got \"wrong\""), "{message}");
        }
    }
    let mut old = hook("v.example.com", &ca, json!({}));
    old["admissionReviewVersions"] = json!(["v2"]);
    let err = caller(1).validate(&vwc(vec![old]), &pod_create()).await.unwrap_err();
    assert!(call_failure(err).ends_with(
        "could not create admission objects: webhook does not accept known AdmissionReview versions (v1, v1beta1)"
    ));
}

#[tokio::test]
async fn mutating_response_checks() {
    let ca = ca("ca");
    let mcfg = |extra: Value| {
        vec![config("MutatingWebhookConfiguration", "m", vec![hook("m.example.com", &ca, extra)])]
    };
    let no_type = handler(|req| respond(req, json!({ "allowed": true, "patch": BASE64.encode("[]") })));
    let (port, _) = serve(server_tls(&ca, &[SVC], false), Duration::ZERO, no_type).await;
    let err = caller(port).mutate(&mcfg(json!({})), &pod_create()).await.unwrap_err();
    assert!(call_failure(err).ends_with(
        "received invalid webhook response: webhook returned response.patch but not response.patchType"
    ));

    let bad_op = patcher(json!([{ "op": "replace", "path": "/spec/missing", "value": 1 }]));
    let (port, _) = serve(server_tls(&ca, &[SVC], false), Duration::ZERO, bad_op).await;
    let err =
        caller(port).mutate(&mcfg(json!({ "failurePolicy": "Ignore" })), &pod_create()).await.unwrap_err();
    assert!(
        matches!(err, AdmissionError::Internal { .. }),
        "patch errors ignore the failure policy: {err:?}"
    );

    let add = patcher(json!([{ "op": "add", "path": "/metadata/labels/x", "value": "y" }]));
    let (port, _) = serve(server_tls(&ca, &[SVC], false), Duration::ZERO, add).await;
    let mut delete = pod_create();
    delete.operation = Operation::Delete;
    delete.old_object = delete.object.take();
    let rules = json!({ "rules": [{ "operations": ["DELETE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"] }] });
    let err = caller(port).mutate(&mcfg(rules), &delete).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "Internal error occurred: admission webhook \"m.example.com\" attempted to modify the object, which is not supported for this operation"
    );
}

#[tokio::test]
async fn dry_run_needs_side_effect_free_webhooks() {
    let ca = ca("ca");
    let (port, log) = serve(server_tls(&ca, &[SVC], false), Duration::ZERO, allow_all()).await;
    let mut attrs = pod_create();
    attrs.dry_run = true;
    let some = hook("v.example.com", &ca, json!({ "sideEffects": "Some", "failurePolicy": "Ignore" }));
    let err = caller(port).validate(&vwc(vec![some]), &attrs).await.unwrap_err();
    assert_eq!(err, AdmissionError::DryRunUnsupported { webhook: "v.example.com".into() });
    assert_eq!((err.code(), err.reason()), (400, "BadRequest"));
    assert_eq!(err.to_string(), "admission webhook \"v.example.com\" does not support dry run");
    assert_eq!(log.count(), 0);
    let ok = hook("v.example.com", &ca, json!({ "sideEffects": "NoneOnDryRun" }));
    caller(port).validate(&vwc(vec![ok]), &attrs).await.unwrap();
    assert_eq!(log.all()[0].body["request"]["dryRun"], true);
}

#[tokio::test]
async fn warnings_are_collected_even_on_denial() {
    let ca = ca("ca");
    let warn = handler(|req| respond(req, json!({ "allowed": true, "warnings": ["first", "second"] })));
    let (port_a, _) = serve(server_tls(&ca, &[SVC], false), Duration::ZERO, warn).await;
    let deny = handler(|req| {
        respond(
            req,
            json!({ "allowed": false, "warnings": ["why"], "status": { "code": 422, "message": "no" } }),
        )
    });
    let (port_b, _) = serve(server_tls(&ca, &[SVC, "127.0.0.1"], false), Duration::ZERO, deny).await;
    let url = json!({ "clientConfig": { "url": format!("https://127.0.0.1:{port_b}/deny"), "caBundle": BASE64.encode(&ca.pem) } });
    let hooks = vec![hook("a.example.com", &ca, json!({})), hook("b.example.com", &ca, url)];
    let mut warnings = Vec::new();
    let err =
        caller(port_a).validate_into(&vwc(hooks.clone()), &pod_create(), &mut warnings).await.unwrap_err();
    assert_eq!(err.code(), 422);
    assert_eq!(warnings, vec!["first", "second", "why"]);
    assert_eq!(
        caller(port_a).validate(&vwc(hooks[..1].to_vec()), &pod_create()).await.unwrap(),
        vec!["first", "second"]
    );
}

#[tokio::test]
async fn webhook_configurations_are_exempt() {
    let ca = ca("ca");
    let (port, log) = serve(server_tls(&ca, &[SVC], false), Duration::ZERO, allow_all()).await;
    let attrs = Attributes {
        group: "admissionregistration.k8s.io".into(),
        version: "v1".into(),
        kind: "ValidatingWebhookConfiguration".into(),
        resource: "validatingwebhookconfigurations".into(),
        ..Attributes::default()
    };
    let all = json!({ "rules": [{ "operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"] }] });
    caller(port).validate(&vwc(vec![hook("v.example.com", &ca, all)]), &attrs).await.unwrap();
    assert_eq!(log.count(), 0);
}

#[test]
fn helpers_match_go_formats() {
    assert_eq!(go_duration(Duration::from_secs(10)), "10s");
    assert_eq!(go_duration(Duration::from_millis(1500)), "2s");
    assert_eq!(go_duration(Duration::from_secs(90)), "1m30s");
    assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
    assert_eq!(rfc3339(978_307_200), "2001-01-01T00:00:00Z");
    assert_eq!(rfc3339(1_709_210_096), "2024-02-29T12:34:56Z");
    assert_eq!(clean_path(""), "/");
    assert_eq!(clean_path("/a//b/../c/"), "/a/c");
    assert_eq!(split_host_port("[::1]:8443"), Ok(("::1", Some(8443))));
    assert_eq!(join_host_port("::1", 443), "[::1]:443");
    assert!(resolve_loopback("10.0.0.1", 443).is_err());
    assert_eq!(resolve_loopback("localhost", 1), Ok(SocketAddr::from(([127, 0, 0, 1], 1))));
}

/// A converter that records each conversion in an annotation, `"v2>v1"` style, or fails
/// when asked for `fail_to`.
struct Tagging {
    fail_to: Option<&'static str>,
}

impl VersionConverter for Tagging {
    fn convert<'a>(
        &'a self,
        object: &'a Value,
        version: &'a str,
    ) -> Pin<Box<dyn Future<Output = Result<Value, String>> + Send + 'a>> {
        Box::pin(async move {
            if self.fail_to == Some(version) {
                return Err(format!("cannot convert to {version}"));
            }
            let mut out = object.clone();
            let from = str_at(object, "apiVersion").rsplit_once('/').map_or("", |(_, v)| v).to_owned();
            let trail = object.pointer("/metadata/annotations/trail").and_then(Value::as_str).unwrap_or("");
            out["metadata"]["annotations"]["trail"] = json!(format!("{trail}{from}>{version};"));
            out["apiVersion"] = json!(format!("stable.example.com/{version}"));
            Ok(out)
        })
    }
}

fn crontab_update() -> Attributes {
    let crontab = |minute: &str| {
        json!({ "apiVersion": "stable.example.com/v2", "kind": "CronTab",
                "metadata": { "name": "c", "namespace": "default" }, "spec": { "minute": minute } })
    };
    Attributes {
        operation: Operation::Update,
        group: "stable.example.com".into(),
        version: "v2".into(),
        kind: "CronTab".into(),
        resource: "crontabs".into(),
        namespace: "default".into(),
        name: "c".into(),
        object: Some(crontab("2")),
        old_object: Some(crontab("1")),
        options: json!({ "apiVersion": "meta.k8s.io/v1", "kind": "UpdateOptions" }),
        namespace_labels: Some(BTreeMap::new()),
        equivalent_versions: vec!["v1".into(), "v2".into()],
        ..Attributes::default()
    }
}

fn v1_crontab_hook(ca: &Ca, extra: Value) -> Value {
    let mut rules = json!({ "rules": [{ "operations": ["UPDATE"], "apiGroups": ["stable.example.com"], "apiVersions": ["v1"], "resources": ["crontabs"] }] });
    for (k, v) in extra.as_object().unwrap() {
        rules[k] = v.clone();
    }
    hook("h.example.com", ca, rules)
}

#[tokio::test]
async fn an_equivalent_version_gets_the_objects_converted_and_its_patch_back() {
    let ca = ca("ca");
    let label = json!([{ "op": "add", "path": "/metadata/labels", "value": { "seen": "v1" } }]);
    let (port, log) = serve(server_tls(&ca, &[SVC], false), Duration::ZERO, patcher(label)).await;
    let configs = vec![config("MutatingWebhookConfiguration", "m", vec![v1_crontab_hook(&ca, json!({}))])];
    let mut warnings = Vec::new();
    let converter = Tagging { fail_to: None };
    let out = caller(port)
        .mutate_converting(&configs, &crontab_update(), &converter, &mut warnings)
        .await
        .unwrap()
        .unwrap();
    // Called in v1, the request's v2 in requestKind; both objects converted to v1.
    let req = &log.all()[0].body["request"];
    assert_eq!(req["kind"], json!({ "group": "stable.example.com", "version": "v1", "kind": "CronTab" }));
    assert_eq!(req["resource"]["version"], "v1");
    assert_eq!(req["requestKind"]["version"], "v2");
    assert_eq!(
        req["requestResource"],
        json!({ "group": "stable.example.com", "version": "v2", "resource": "crontabs" })
    );
    assert_eq!(req["object"]["apiVersion"], "stable.example.com/v1");
    assert_eq!(req["object"]["metadata"]["annotations"]["trail"], "v2>v1;");
    assert_eq!(req["oldObject"]["spec"]["minute"], "1");
    assert_eq!(req["oldObject"]["metadata"]["annotations"]["trail"], "v2>v1;");
    // The patched object comes back to v2.
    assert_eq!(out["apiVersion"], "stable.example.com/v2");
    assert_eq!(out["metadata"]["labels"], json!({ "seen": "v1" }));
    assert_eq!(out["metadata"]["annotations"]["trail"], "v2>v1;v1>v2;");

    // matchPolicy Exact keeps it to the versions its rules name.
    let exact = vec![config(
        "MutatingWebhookConfiguration",
        "m",
        vec![v1_crontab_hook(&ca, json!({ "matchPolicy": "Exact" }))],
    )];
    let unchanged =
        caller(port).mutate_converting(&exact, &crontab_update(), &converter, &mut warnings).await.unwrap();
    assert_eq!(unchanged, crontab_update().object);
    assert_eq!(log.count(), 1);

    // Validating webhooks get the converted objects too; a failed conversion is an internal error.
    let validators = vwc(vec![v1_crontab_hook(&ca, json!({}))]);
    let (vport, vlog) = serve(server_tls(&ca, &[SVC], false), Duration::ZERO, allow_all()).await;
    caller(vport)
        .validate_converting(&validators, &crontab_update(), &converter, &mut warnings)
        .await
        .unwrap();
    assert_eq!(vlog.all()[0].body["request"]["object"]["metadata"]["annotations"]["trail"], "v2>v1;");
    let failing = Tagging { fail_to: Some("v1") };
    let err = caller(vport)
        .validate_converting(&validators, &crontab_update(), &failing, &mut warnings)
        .await
        .unwrap_err();
    assert_eq!((err.code(), err.reason()), (500, "InternalError"));
    assert_eq!(err.to_string(), "Internal error occurred: cannot convert to v1");
    // A change that cannot go back to the request's version fails with the converter's words.
    let back = Tagging { fail_to: Some("v2") };
    let err =
        caller(port).mutate_converting(&configs, &crontab_update(), &back, &mut warnings).await.unwrap_err();
    assert_eq!((err.code(), err.reason(), err.to_string()), (500, "", "cannot convert to v2".to_owned()));
}

//! Admission webhooks called by kubesim like the real API server: over TLS verified with
//! the configuration's caBundle, mutating before validating, denials with the real
//! message, and failurePolicy for unreachable webhooks.

mod common;

use std::collections::HashMap;

use axum::Json;
use axum::routing::post;
use base64::Engine as _;
use common::{api_err, start};
use ctop_kubesim::{ServingCert, TlsListener};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Client;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

/// A webhook server on loopback: `/validate` denies ConfigMaps whose data has `bad`,
/// `/mutate` adds the label `mutated=yes` and, on updates, records the old value of `v`.
async fn webhook_server() -> (String, String) {
    webhook_server_for(&["127.0.0.1"]).await
}

/// Like [`webhook_server`], with a certificate for `hosts`.
async fn webhook_server_for(hosts: &[&str]) -> (String, String) {
    let hosts: Vec<String> = hosts.iter().map(|h| (*h).to_owned()).collect();
    let cert = ServingCert::issue(&hosts).expect("cert");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let tls = TlsListener::new(listener, cert.acceptor().expect("acceptor")).expect("tls");
    let app = axum::Router::new()
        .route(
            "/validate",
            post(|Json(review): Json<Value>| async move {
                let req = &review["request"];
                let bad = req["object"]["data"].get("bad").is_some();
                let mut response = json!({"uid": req["uid"], "allowed": !bad});
                if bad {
                    response["status"] = json!({"code": 403, "reason": "Forbidden", "message": "data.bad is not allowed"});
                }
                Json(json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}))
            }),
        )
        .route(
            "/mutate",
            post(|Json(review): Json<Value>| async move {
                let req = &review["request"];
                let mut ops = vec![];
                if req["object"]["metadata"].get("labels").is_none() {
                    ops.push(json!({"op": "add", "path": "/metadata/labels", "value": {}}));
                }
                ops.push(json!({"op": "add", "path": "/metadata/labels/mutated", "value": "yes"}));
                if let Some(old) = req["oldObject"]["data"]["v"].as_str() {
                    ops.push(json!({"op": "add", "path": "/metadata/annotations", "value": {"previous": old}}));
                }
                let patch = base64::engine::general_purpose::STANDARD.encode(serde_json::to_vec(&ops).expect("json"));
                Json(json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                    "response": {"uid": req["uid"], "allowed": true, "patchType": "JSONPatch", "patch": patch, "warnings": ["mutated by test"]}}))
            }),
        );
    tokio::spawn(async move {
        let _ = axum::serve(tls, app).await;
    });
    (format!("https://{addr}"), cert.ca_pem)
}

fn webhook_config(kind: &str, name: &str, url: &str, ca_pem: &str, policy: &str) -> Value {
    let hook_name = format!("{name}.example.com");
    json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": kind,
        "metadata": {"name": name},
        "webhooks": [{
            "name": hook_name,
            "clientConfig": {"url": url, "caBundle": base64::engine::general_purpose::STANDARD.encode(ca_pem)},
            "rules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}],
            "failurePolicy": policy,
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
            "timeoutSeconds": 2,
            "objectSelector": {"matchExpressions": [{"key": "skip-webhooks", "operator": "DoesNotExist"}]},
        }]
    })
}

async fn install(client: &Client, config: Value) {
    let kind = config["kind"].as_str().expect("kind").to_owned();
    let gvk = kube::api::GroupVersionKind::gvk("admissionregistration.k8s.io", "v1", &kind);
    let plural = format!("{}s", kind.to_lowercase());
    let api: Api<kube::api::DynamicObject> =
        Api::all_with(client.clone(), &kube::api::ApiResource::from_gvk_with_plural(&gvk, &plural));
    let obj = serde_json::from_value(config).expect("config");
    api.create(&PostParams::default(), &obj).await.expect("install webhook configuration");
}

fn cm(name: &str, data: Value) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name}, "data": data})).expect("cm")
}

#[tokio::test(flavor = "multi_thread")]
async fn mutating_then_validating_webhooks_over_tls() {
    let (_sim, client) = start().await;
    let (url, ca) = webhook_server().await;
    install(
        &client,
        webhook_config("MutatingWebhookConfiguration", "mutate", &format!("{url}/mutate"), &ca, "Fail"),
    )
    .await;
    install(
        &client,
        webhook_config("ValidatingWebhookConfiguration", "validate", &format!("{url}/validate"), &ca, "Fail"),
    )
    .await;
    let api: Api<ConfigMap> = Api::default_namespaced(client);

    let created = api.create(&PostParams::default(), &cm("ok", json!({"v": "1"}))).await.expect("allowed");
    assert_eq!(created.metadata.labels.unwrap_or_default().get("mutated").map(String::as_str), Some("yes"));

    let denied = api_err(api.create(&PostParams::default(), &cm("no", json!({"bad": "x"}))).await);
    assert_eq!(denied.code, 403);
    assert_eq!(
        denied.message,
        "admission webhook \"validate.example.com\" denied the request: data.bad is not allowed"
    );

    // Updates see the old object.
    let updated = api
        .patch("ok", &PatchParams::default(), &Patch::Merge(json!({"data": {"v": "2"}})))
        .await
        .expect("update allowed");
    assert_eq!(
        updated.metadata.annotations.unwrap_or_default().get("previous").map(String::as_str),
        Some("1")
    );

    // An object the selectors exclude is not sent at all.
    let mut skipped = cm("skipped", json!({"bad": "x"}));
    skipped.metadata.labels = Some([("skip-webhooks".to_owned(), "true".to_owned())].into());
    let s = api.create(&PostParams::default(), &skipped).await.expect("not matched, not denied");
    assert!(!s.metadata.labels.unwrap_or_default().contains_key("mutated"));
    api.delete("ok", &DeleteParams::default()).await.expect("delete is not matched by the rules");
}

#[tokio::test(flavor = "multi_thread")]
async fn failure_policy_decides_for_unreachable_webhooks() {
    let (_sim, client) = start().await;
    let (_url, ca) = webhook_server().await;
    // A port nobody listens on.
    let dead = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let a = l.local_addr().expect("addr");
        drop(l);
        format!("https://{a}/validate")
    };
    install(&client, webhook_config("ValidatingWebhookConfiguration", "lenient", &dead, &ca, "Ignore")).await;
    let api: Api<ConfigMap> = Api::default_namespaced(client.clone());
    api.create(&PostParams::default(), &cm("through", json!({}))).await.expect("Ignore lets it through");

    install(&client, webhook_config("ValidatingWebhookConfiguration", "strict", &dead, &ca, "Fail")).await;
    let blocked = api_err(api.create(&PostParams::default(), &cm("blocked", json!({}))).await);
    assert_eq!((blocked.code, blocked.reason.as_str()), (500, "InternalError"));
    assert!(
        blocked.message.starts_with("Internal error occurred: failed calling webhook \"strict.example.com\""),
        "{}",
        blocked.message
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn wrong_ca_bundle_is_a_call_failure() {
    let (_sim, client) = start().await;
    let (url, _ca) = webhook_server().await;
    let other = ServingCert::issue(&["127.0.0.1".to_owned()]).expect("cert");
    install(
        &client,
        webhook_config(
            "ValidatingWebhookConfiguration",
            "untrusted",
            &format!("{url}/validate"),
            &other.ca_pem,
            "Fail",
        ),
    )
    .await;
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    let err = api_err(api.create(&PostParams::default(), &cm("x", json!({}))).await);
    assert_eq!(err.code, 500);
    assert!(err.message.contains("x509"), "{}", err.message);
}

#[tokio::test(flavor = "multi_thread")]
async fn service_references_resolve_through_the_override() {
    let (sim, client) = start().await;
    // The certificate must name the Service's DNS name, as with the real server.
    let (url, ca) = webhook_server_for(&["validator.webhooks.svc"]).await;
    let (wrong_url, wrong_ca) = webhook_server().await;
    sim.set_webhook_services(HashMap::from([
        ("webhooks/validator".to_owned(), url.trim_start_matches("https://").to_owned()),
        ("webhooks/misnamed".to_owned(), wrong_url.trim_start_matches("https://").to_owned()),
    ]));
    let service_config = |name: &str, service: &str, ca: &str| {
        let mut config = webhook_config("ValidatingWebhookConfiguration", name, "", ca, "Fail");
        config["webhooks"][0]["clientConfig"] = json!({
            "service": {"namespace": "webhooks", "name": service, "path": "/validate", "port": 443},
            "caBundle": base64::engine::general_purpose::STANDARD.encode(ca),
        });
        config
    };
    install(&client, service_config("svc", "validator", &ca)).await;
    let api: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let err = api_err(api.create(&PostParams::default(), &cm("no", json!({"bad": "1"}))).await);
    assert_eq!(
        err.message,
        "admission webhook \"svc.example.com\" denied the request: data.bad is not allowed"
    );
    api.create(&PostParams::default(), &cm("yes", json!({}))).await.expect("allowed through the Service");

    // A certificate that does not name <service>.<namespace>.svc is refused.
    install(&client, service_config("misnamed", "misnamed", &wrong_ca)).await;
    let err = api_err(api.create(&PostParams::default(), &cm("z", json!({}))).await);
    assert_eq!(err.code, 500, "{}", err.message);
    assert!(err.message.contains("misnamed.webhooks.svc"), "{}", err.message);
}

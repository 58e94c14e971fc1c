//! `ctop dev`'s webhook against kubesim: started, its configurations point at its loopback
//! URL with its CA; reloaded, they follow the script's handlers (a configuration whose kind
//! of handler is gone is deleted, not left to block requests). It converts at an endpoint
//! (URL and CA) that stays the same across reloads, without any admission handler.

mod support;

use std::sync::Arc;

use base64::Engine as _;
use ctop_core::{AdmissionOutcome, OperatorSpec};
use ctop_kubesim::{Config, KubeSim};
use ctop_webhook::dev::{ConversionEndpoint, DEV_CONFIGURATION, DevWebhook};
use ctop_webhook::{AdmissionCall, AdmissionScript, CONVERSION_PATH, ConversionScript, HookError};
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::Api;

struct Allow;

impl AdmissionScript for Allow {
    fn call(&self, _: &AdmissionCall<'_>) -> Result<AdmissionOutcome, HookError> {
        Ok(support::allowed())
    }
}

fn spec(handlers: &[&str]) -> OperatorSpec {
    serde_json::from_value(serde_json::json!({
        "resources": [{"apiVersion": "demo.ctop.dev/v1", "group": "demo.ctop.dev", "version": "v1",
            "kind": "Widget", "plural": "widgets", "singular": "widget", "scope": "Namespaced",
            "schema": {"type": "object"}}],
        "controllers": [{"index": 0, "name": "widget", "for": {"apiVersion": "demo.ctop.dev/v1", "kind": "Widget"},
            "handlers": handlers}],
    }))
    .expect("spec")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_configurations_follow_the_scripts_handlers() {
    let sim = KubeSim::start(Config::default()).await.expect("kubesim starts");
    let client = support::client(&sim).await;
    let validating: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    let mutating: Api<MutatingWebhookConfiguration> = Api::all(client.clone());

    let hook = DevWebhook::start(&client, Arc::new(Allow), &spec(&["reconcile", "validate", "mutate"]))
        .await
        .expect("the dev webhook starts");
    assert!(hook.url().starts_with("https://127.0.0.1:"), "{}", hook.url());
    let v = validating.get(DEV_CONFIGURATION).await.expect("the validating configuration");
    let w = &v.webhooks.expect("webhooks")[0];
    let url = w.client_config.url.as_deref().expect("a URL");
    assert_eq!(url, format!("{}/validate/demo.ctop.dev/v1/widgets", hook.url()));
    let ca = w.client_config.ca_bundle.as_ref().expect("the CA");
    assert!(String::from_utf8_lossy(&ca.0).starts_with("-----BEGIN CERTIFICATE-----"));
    mutating.get(DEV_CONFIGURATION).await.expect("the mutating configuration");

    // The mutate handler removed: its configuration goes, the validating one stays.
    hook.reload(&client, Arc::new(Allow), &spec(&["reconcile", "validate"])).await.expect("reloaded");
    assert!(mutating.get_opt(DEV_CONFIGURATION).await.expect("get").is_none());
    validating.get(DEV_CONFIGURATION).await.expect("still validating");

    // No handlers at all: nothing left to call the server (a reload may add them back).
    hook.reload(&client, Arc::new(Allow), &spec(&["reconcile"])).await.expect("reloaded");
    assert!(validating.get_opt(DEV_CONFIGURATION).await.expect("get").is_none());
    hook.reload(&client, Arc::new(Allow), &spec(&["reconcile", "mutate"])).await.expect("reloaded");
    mutating.get(DEV_CONFIGURATION).await.expect("the mutating configuration is back");
}

/// Sets `apiVersion`, and `spec.converted` to `mark`, so that a test sees which script answered.
fn converter(mark: &'static str) -> Arc<dyn ConversionScript> {
    Arc::new(move |desired: &str, objects: &[serde_json::Value]| {
        Ok(objects
            .iter()
            .map(|o| {
                let mut o = o.clone();
                o["apiVersion"] = serde_json::json!(desired);
                o["spec"]["converted"] = serde_json::json!(mark);
                o
            })
            .collect())
    })
}

/// POSTs a one-Widget review to `endpoint`'s URL, trusting only its CA; the status and the
/// answer's `response`.
async fn convert(endpoint: &ConversionEndpoint) -> (u16, serde_json::Value) {
    let rest = endpoint.url.strip_prefix("https://").expect("an https URL");
    let (authority, path) = rest.split_once('/').expect("a path");
    let addr: std::net::SocketAddr = authority.parse().expect("an address");
    let mut c = support::connect(addr, support::client_config(&endpoint.ca_pem)).await.expect("connects");
    let review = serde_json::json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
        "request": {"uid": "u", "desiredAPIVersion": "demo.ctop.dev/v2", "objects": [
            {"apiVersion": "demo.ctop.dev/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {}}]}});
    let (status, bytes) =
        support::post(&mut c, &format!("/{path}"), serde_json::to_vec(&review).expect("json")).await;
    let answer = serde_json::from_slice::<serde_json::Value>(&bytes).map(|v| v["response"].clone());
    (status, answer.unwrap_or_default())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn it_converts_at_an_endpoint_that_outlives_reloads() {
    let sim = KubeSim::start(Config::default()).await.expect("kubesim starts");
    let client = support::client(&sim).await;
    let spec = support::converting_spec(&["reconcile"]);
    assert!(DevWebhook::needed(&spec), "a script that converts needs the server without admission handlers");
    assert!(!DevWebhook::needed(&support::single_version_spec(&["reconcile"])));

    let hook = DevWebhook::start(&client, Arc::new(Allow), &spec).await.expect("the dev webhook starts");
    let endpoint = hook.conversion().clone();
    assert_eq!(endpoint.url, format!("{}{CONVERSION_PATH}", hook.url()));
    let decoded = base64::engine::general_purpose::STANDARD.decode(&endpoint.ca_bundle).expect("base64");
    assert_eq!(decoded, endpoint.ca_pem.as_bytes());
    assert_eq!(
        endpoint.client_config(),
        serde_json::json!({"url": endpoint.url, "caBundle": endpoint.ca_bundle})
    );
    // No admission handler: no configuration to apply.
    let validating: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    assert!(validating.get_opt(DEV_CONFIGURATION).await.expect("get").is_none());

    // A CRD pointing there is what the API accepts (`ctop dev` and `ctop test` write theirs
    // with this clientConfig).
    let conversion = serde_json::json!({"strategy": "Webhook",
        "webhook": {"conversionReviewVersions": ["v1"], "clientConfig": endpoint.client_config()}});
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd =
        crds.create(&Default::default(), &support::widget_crd(conversion)).await.expect("the CRD is created");
    let stored =
        crd.spec.conversion.and_then(|c| c.webhook).and_then(|w| w.client_config).expect("clientConfig");
    assert_eq!(stored.url.as_deref(), Some(endpoint.url.as_str()));
    assert_eq!(stored.ca_bundle.map(|b| b.0).as_deref(), Some(endpoint.ca_pem.as_bytes()));

    // Nothing converts until the script's conversions are set.
    assert_eq!(convert(&endpoint).await.0, 404);
    hook.set_conversion(converter("first"), &spec);
    let (status, response) = convert(&endpoint).await;
    assert_eq!(status, 200);
    assert_eq!(response["result"]["status"], "Success", "{response}");
    assert_eq!(response["convertedObjects"][0]["apiVersion"], "demo.ctop.dev/v2");
    assert_eq!(response["convertedObjects"][0]["spec"]["converted"], "first");

    // A reload converts with the new script at the same URL and CA, so CRDs written once
    // stay right.
    hook.reload(&client, Arc::new(Allow), &spec).await.expect("reloaded");
    hook.set_conversion(converter("second"), &spec);
    assert_eq!(hook.conversion(), &endpoint);
    let (_, response) = convert(&endpoint).await;
    assert_eq!(response["convertedObjects"][0]["spec"]["converted"], "second");

    // A script that no longer converts: the path is gone.
    hook.set_conversion(converter("third"), &support::single_version_spec(&["reconcile"]));
    assert_eq!(convert(&endpoint).await.0, 404);
}

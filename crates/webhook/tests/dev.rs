//! `ctop dev`'s webhook against kubesim: started, its configurations point at its loopback
//! URL with its CA; reloaded, they follow the script's handlers (a configuration whose kind
//! of handler is gone is deleted, not left to block requests).

mod support;

use std::sync::Arc;

use ctop_kubesim::{Config, KubeSim};
use ctop_webhook::core::{AdmissionOutcome, OperatorSpec};
use ctop_webhook::dev::{DEV_CONFIGURATION, DevWebhook};
use ctop_webhook::{AdmissionScript, HandlerCall, HandlerError};
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use kube::api::Api;

struct Allow;

impl AdmissionScript for Allow {
    fn call(&self, _: &HandlerCall<'_>) -> Result<AdmissionOutcome, HandlerError> {
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

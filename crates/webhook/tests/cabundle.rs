//! The caBundle keeper against kubesim with a real kube client: it looks only for the
//! configurations the routes produce (a validate-only operator has no mutating one to look
//! for), sets the CA in them, and warns once about an expected one that is missing.

mod support;

use ctop_kubesim::{Config, KubeSim};
use ctop_webhook::cabundle::{CaBundleKeeper, Change, Checked, Configurations, Found, Looked};
use ctop_webhook::{ConfigurationOptions, Endpoint, FailurePolicy, Route, SelfIssued, configurations};
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use kube::api::{Api, PostParams};
use serde_json::Value;

const NAME: &str = "op";

/// The configurations `ctop manifests` generates for `routes` (no caBundle: the operator
/// patches it in), by kind.
fn generated(routes: &[Route]) -> Vec<Value> {
    let options = ConfigurationOptions {
        name: NAME.into(),
        endpoint: Endpoint::Service { namespace: "op-system".into(), name: "op-webhook".into(), port: 443 },
        ca_bundle: None,
        failure_policy: FailurePolicy::Fail,
        timeout_seconds: 10,
        labels: serde_json::Map::new(),
        annotations: serde_json::Map::new(),
    };
    configurations(routes, &options)
}

fn doc<'a>(docs: &'a [Value], kind: &str) -> &'a Value {
    docs.iter().find(|d| d["kind"] == kind).unwrap_or_else(|| panic!("no {kind} in {docs:?}"))
}

async fn create_validating(client: &kube::Client, docs: &[Value]) {
    let c: ValidatingWebhookConfiguration =
        serde_json::from_value(doc(docs, "ValidatingWebhookConfiguration").clone()).expect("typed");
    Api::all(client.clone()).create(&PostParams::default(), &c).await.expect("created");
}

async fn create_mutating(client: &kube::Client, docs: &[Value]) {
    let c: MutatingWebhookConfiguration =
        serde_json::from_value(doc(docs, "MutatingWebhookConfiguration").clone()).expect("typed");
    Api::all(client.clone()).create(&PostParams::default(), &c).await.expect("created");
}

/// The caBundle of every webhook in the validating configuration.
async fn validating_ca(client: &kube::Client) -> Vec<Option<Vec<u8>>> {
    let api: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    let c = api.get(NAME).await.expect("the validating configuration");
    c.webhooks.unwrap_or_default().into_iter().map(|w| w.client_config.ca_bundle.map(|b| b.0)).collect()
}

fn checked(kind: &'static str, found: Found, change: Option<Change>) -> Checked {
    Checked { looked: Looked { kind, name: NAME.into(), found }, change }
}

fn widget_routes(handlers: &[&str]) -> Vec<Route> {
    let spec: ctop_webhook::core::OperatorSpec = serde_json::from_value(serde_json::json!({
        "resources": [{"apiVersion": "demo.ctop.dev/v1", "group": "demo.ctop.dev", "version": "v1",
            "kind": "Widget", "plural": "widgets", "singular": "widget", "scope": "Namespaced",
            "schema": {"type": "object"}}],
        "controllers": [{"index": 0, "name": "widget", "for": {"apiVersion": "demo.ctop.dev/v1", "kind": "Widget"},
            "handlers": handlers}],
    }))
    .expect("spec");
    ctop_webhook::routes(&spec)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_validate_only_operator_looks_after_its_validating_configuration_alone() {
    let sim = KubeSim::start(Config::default()).await.expect("kubesim starts");
    let client = support::client(&sim).await;
    let routes = widget_routes(&["reconcile", "validate"]);
    let docs = generated(&routes);
    assert_eq!(docs.len(), 1, "no mutating configuration is generated: {docs:?}");
    create_validating(&client, &docs).await;

    let targets = Configurations::for_routes(NAME, &routes);
    assert_eq!(targets, Configurations { validating: Some(NAME.into()), mutating: None });
    let ca = SelfIssued::issue(&["op-webhook.op-system.svc".to_owned()]).expect("CA").ca_pem;
    let mut keeper = CaBundleKeeper::new(client.clone(), targets, ca.clone());

    // The validating configuration gets the CA; the mutating one, which no route produces,
    // is not looked for, so nothing is missing and nothing is warned about.
    let first = keeper.check().await.expect("checked");
    assert_eq!(first, [checked("ValidatingWebhookConfiguration", Found::Set, None)]);
    assert_eq!(validating_ca(&client).await, [Some(ca.as_bytes().to_vec())]);
    for _ in 0..3 {
        let again = keeper.check().await.expect("checked");
        assert_eq!(again, [checked("ValidatingWebhookConfiguration", Found::Current, None)]);
    }
    // Indeed there is no mutating configuration (the keeper did not need one).
    let mutating: Api<MutatingWebhookConfiguration> = Api::all(client.clone());
    assert!(mutating.get_opt(NAME).await.expect("get").is_none());

    // Re-applied without the CA (as `kubectl apply` of the manifests does): set again.
    let api: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    let mut c = api.get(NAME).await.expect("get");
    for w in c.webhooks.iter_mut().flatten() {
        w.client_config.ca_bundle = None;
    }
    api.replace(NAME, &PostParams::default(), &c).await.expect("cleared");
    let after = keeper.check().await.expect("checked");
    assert_eq!(after, [checked("ValidatingWebhookConfiguration", Found::Set, None)]);
    assert_eq!(validating_ca(&client).await, [Some(ca.as_bytes().to_vec())]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expected_configuration_that_is_missing_is_warned_about_once() {
    let sim = KubeSim::start(Config::default()).await.expect("kubesim starts");
    let client = support::client(&sim).await;
    let routes = widget_routes(&["validate", "mutate"]);
    let docs = generated(&routes);
    create_validating(&client, &docs).await;

    let ca = SelfIssued::issue(&["op-webhook.op-system.svc".to_owned()]).expect("CA").ca_pem;
    let mut keeper = CaBundleKeeper::new(client.clone(), Configurations::for_routes(NAME, &routes), ca);

    // The mutating configuration is expected and missing: a warning at the first look,
    // silence at the next ones.
    let first = keeper.check().await.expect("checked");
    assert_eq!(
        first,
        [
            checked("ValidatingWebhookConfiguration", Found::Set, None),
            checked("MutatingWebhookConfiguration", Found::Missing, Some(Change::WentMissing)),
        ]
    );
    for _ in 0..3 {
        let again = keeper.check().await.expect("checked");
        assert_eq!(
            again,
            [
                checked("ValidatingWebhookConfiguration", Found::Current, None),
                checked("MutatingWebhookConfiguration", Found::Missing, None),
            ]
        );
    }

    // Applied later: the CA goes in, and the log hears it is back.
    create_mutating(&client, &docs).await;
    let back = keeper.check().await.expect("checked");
    assert_eq!(back[1], checked("MutatingWebhookConfiguration", Found::Set, Some(Change::CameBack)));
    let again = keeper.check().await.expect("checked");
    assert_eq!(again[1], checked("MutatingWebhookConfiguration", Found::Current, None));

    // Deleted: warned about once more.
    let api: Api<MutatingWebhookConfiguration> = Api::all(client.clone());
    api.delete(NAME, &Default::default()).await.expect("deleted");
    let gone = keeper.check().await.expect("checked");
    assert_eq!(gone[1], checked("MutatingWebhookConfiguration", Found::Missing, Some(Change::WentMissing)));
}

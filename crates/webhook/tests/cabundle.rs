//! The caBundle keeper against kubesim with a real kube client: it looks only for the
//! configurations the routes produce (a validate-only operator has no mutating one to look
//! for) and the CRDs of the resources the operator converts, sets the CA in them (in a CRD
//! only `spec.conversion.webhook.clientConfig.caBundle`), and warns once about an expected
//! one that is missing.

mod support;

use base64::Engine as _;
use ctop_kubesim::{Config, KubeSim};
use ctop_webhook::cabundle::{CaBundleKeeper, Change, Checked, Configurations, Found, Looked};
use ctop_webhook::{ConfigurationOptions, Endpoint, FailurePolicy, Route, SelfIssued, configurations};
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
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
    let spec: ctop_core::OperatorSpec = serde_json::from_value(serde_json::json!({
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
    assert_eq!(targets, Configurations { validating: Some(NAME.into()), ..Configurations::default() });
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

use support::WIDGET_CRD as CRD_NAME;

/// The Widget CRD as `ctop manifests` writes it for a converting resource: `strategy:
/// Webhook` pointing at the operator's Service, no caBundle (the operator patches it in);
/// another `strategy` leaves the webhook out, as the API requires.
fn widget_crd(strategy: &str) -> CustomResourceDefinition {
    let conversion = if strategy == "Webhook" {
        serde_json::json!({"strategy": "Webhook", "webhook": {
            "conversionReviewVersions": ["v1"],
            "clientConfig": {"service": {"namespace": "op-system", "name": "op-webhook", "path": "/convert", "port": 443}}}})
    } else {
        serde_json::json!({"strategy": strategy})
    };
    support::widget_crd(conversion)
}

/// The CRD's conversion webhook CA, and its spec without it.
async fn crd_ca(client: &kube::Client) -> (Option<Vec<u8>>, Value) {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd = api.get(CRD_NAME).await.expect("the CRD");
    let mut spec = serde_json::to_value(&crd.spec).expect("json");
    let ca = spec["conversion"]["webhook"]["clientConfig"].as_object_mut().and_then(|c| c.remove("caBundle"));
    let ca = ca.map(|b| {
        base64::engine::general_purpose::STANDARD.decode(b.as_str().expect("base64 text")).expect("base64")
    });
    (ca, spec)
}

fn crd_checked(found: Found, change: Option<Change>) -> Checked {
    Checked { looked: Looked { kind: "CustomResourceDefinition", name: CRD_NAME.into(), found }, change }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ca_goes_into_the_conversion_webhook_of_the_converting_crds_alone() {
    let sim = KubeSim::start(Config::default()).await.expect("kubesim starts");
    let client = support::client(&sim).await;
    let spec = support::converting_spec(&["validate"]);
    let routes = ctop_webhook::routes(&spec);
    create_validating(&client, &generated(&routes)).await;
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.create(&PostParams::default(), &widget_crd("Webhook")).await.expect("the CRD is created");
    let (none, before) = crd_ca(&client).await;
    assert_eq!(none, None);

    let targets = Configurations::for_spec(NAME, &spec);
    assert_eq!(
        targets,
        Configurations { validating: Some(NAME.into()), mutating: None, crds: vec![CRD_NAME.into()] }
    );
    let ca = SelfIssued::issue(&["op-webhook.op-system.svc".to_owned()]).expect("CA").ca_pem;
    let mut keeper = CaBundleKeeper::new(client.clone(), targets, ca.clone());
    let first = keeper.check().await.expect("checked");
    assert_eq!(
        first,
        [checked("ValidatingWebhookConfiguration", Found::Set, None), crd_checked(Found::Set, None)]
    );
    // The caBundle is the one field that changed.
    let (set, after) = crd_ca(&client).await;
    assert_eq!(set.as_deref(), Some(ca.as_bytes()));
    assert_eq!(after, before);

    // Written only when it differs: the next look leaves the CRD as it is.
    let version = crds.get(CRD_NAME).await.expect("the CRD").metadata.resource_version;
    let again = keeper.check().await.expect("checked");
    assert_eq!(again[1], crd_checked(Found::Current, None));
    assert_eq!(crds.get(CRD_NAME).await.expect("the CRD").metadata.resource_version, version);

    // Re-applied without the CA (a `kubectl apply` of the manifests): set again.
    let mut crd = crds.get(CRD_NAME).await.expect("the CRD");
    crd.spec = widget_crd("Webhook").spec;
    crds.replace(CRD_NAME, &PostParams::default(), &crd).await.expect("re-applied");
    assert_eq!(crd_ca(&client).await.0, None);
    let reapplied = keeper.check().await.expect("checked");
    assert_eq!(reapplied[1], crd_checked(Found::Set, None));
    assert_eq!(crd_ca(&client).await.0.as_deref(), Some(ca.as_bytes()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_crd_or_one_without_a_conversion_webhook_is_warned_about_once() {
    let sim = KubeSim::start(Config::default()).await.expect("kubesim starts");
    let client = support::client(&sim).await;
    let targets = Configurations { crds: vec![CRD_NAME.into()], ..Configurations::default() };
    let ca = SelfIssued::issue(&["op-webhook.op-system.svc".to_owned()]).expect("CA").ca_pem;
    let mut keeper = CaBundleKeeper::new(client.clone(), targets, ca.clone());

    // Not applied yet: no error, a warning once, then silence.
    assert_eq!(
        keeper.check().await.expect("checked"),
        [crd_checked(Found::Missing, Some(Change::WentMissing))]
    );
    assert_eq!(keeper.check().await.expect("checked"), [crd_checked(Found::Missing, None)]);

    // Applied without a conversion webhook (an older CRD): nothing to set, nothing written;
    // a warning (for this new reason) once.
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.create(&PostParams::default(), &widget_crd("None")).await.expect("the CRD is created");
    assert_eq!(
        keeper.check().await.expect("checked"),
        [crd_checked(Found::NoWebhook, Some(Change::WentMissing))]
    );
    assert_eq!(keeper.check().await.expect("checked"), [crd_checked(Found::NoWebhook, None)]);
    let crd = crds.get(CRD_NAME).await.expect("the CRD");
    assert_eq!(crd.spec.conversion.and_then(|c| c.webhook), None);

    // The CRD that converts through the operator is applied: the CA goes in, and the log
    // hears it is back.
    let mut crd = crds.get(CRD_NAME).await.expect("the CRD");
    crd.spec = widget_crd("Webhook").spec;
    crds.replace(CRD_NAME, &PostParams::default(), &crd).await.expect("re-applied");
    assert_eq!(keeper.check().await.expect("checked"), [crd_checked(Found::Set, Some(Change::CameBack))]);
    assert_eq!(crd_ca(&client).await.0.as_deref(), Some(ca.as_bytes()));

    // Deleted: warned about once more.
    crds.delete(CRD_NAME, &Default::default()).await.expect("deleted");
    // A CRD's deletion finishes once its objects are gone (there are none).
    let mut looked = keeper.check().await.expect("checked");
    while looked[0].looked.found != Found::Missing {
        tokio::task::yield_now().await;
        looked = keeper.check().await.expect("checked");
    }
    assert_eq!(looked, [crd_checked(Found::Missing, Some(Change::WentMissing))]);
}

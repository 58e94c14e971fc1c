//! The webhook documents, for scripts that declare `validate` or `mutate` handlers or
//! resources with several versions (which the API server converts by calling the operator
//! at [`ctop_webhook::CONVERSION_PATH`], on the same HTTPS server and port): a Service in
//! front of the operator's pods, the Validating and/or Mutating WebhookConfiguration (paths
//! from [`ctop_webhook::routes`], so they match the server), the Deployment's webhook port
//! and flags, and RBAC that lets the operator set `caBundle` on exactly those two
//! configurations and on the CRDs of the resources it converts (`resourceNames`). The CRDs
//! point at the Service through [`conversion_endpoint`].
//!
//! Default TLS mode: the first pod issues a CA and certificate and keeps them in the Secret
//! `<name>-webhook-tls` (`ctop run --tls-secret`), every replica serves that one, and each
//! patches the CA into the configurations and the converting CRDs'
//! `spec.conversion.webhook.clientConfig`, which are generated without a `caBundle`. Until
//! one has, the API server cannot verify the webhook, so with `failurePolicy: Fail` writes
//! of the handled kinds fail for the first seconds after a deploy, and so does every request
//! for a converting kind in a version other than the one an object is stored in. The
//! operator gets `get` and `update` on that Secret by name and `create` on Secrets in its
//! namespace (a Role).

use ctop_core::OperatorSpec;
use ctop_webhook::{ConfigurationOptions, Endpoint, HandlerKind, configurations, routes};
use serde_json::{Map, Value, json};

use crate::crd::{ConversionEndpoint, crd_name};
use crate::options::{DEFAULT_WEBHOOK_CONCURRENCY, Options, WEBHOOK_PORT};

/// Port of the webhook Service (the API server calls it; the pod listens on [`WEBHOOK_PORT`]).
const SERVICE_PORT: u16 = 443;

/// The Service's name: `<name>-webhook`.
pub(crate) fn service_name(options: &Options) -> String {
    format!("{}-webhook", options.name)
}

/// The Secret the replicas share their self-issued certificate through: `<name>-webhook-tls`.
pub(crate) fn tls_secret_name(options: &Options) -> String {
    format!("{}-webhook-tls", options.name)
}

/// Whether `spec` has `validate`/`mutate` handlers or resources to convert, so the webhook
/// is generated and `ctop run` serves it (with runtimes of its own).
pub(crate) fn served(spec: &OperatorSpec) -> bool {
    !routes(spec).is_empty() || spec.converting().next().is_some()
}

/// Where the CRDs of converting resources send their `ConversionReview`s: the webhook
/// Service, which only exists when [`served`].
pub(crate) fn conversion_endpoint(options: &Options) -> ConversionEndpoint {
    ConversionEndpoint::Service {
        namespace: options.namespace(),
        name: service_name(options),
        port: SERVICE_PORT,
    }
}

/// Add the webhook documents for `spec` to `docs` (which already hold the Deployment).
pub(crate) fn add(
    spec: &OperatorSpec,
    options: &Options,
    labels: &Map<String, Value>,
    selector: &Map<String, Value>,
    docs: &mut Vec<Value>,
) {
    let routes = routes(spec);
    let converting: Vec<String> = spec.converting().map(crd_name).collect();
    if routes.is_empty() && converting.is_empty() {
        return;
    }
    let namespace = options.namespace();
    let service = service_name(options);
    let policy = options.webhook_failure_policy;

    if let Some(deployment) =
        docs.iter_mut().find(|d| d["kind"] == "Deployment" && d["metadata"]["name"] == options.name.as_str())
    {
        let container = &mut deployment["spec"]["template"]["spec"]["containers"][0];
        if let Some(args) = container["args"].as_array_mut() {
            let concurrency = (options.webhook_concurrency != DEFAULT_WEBHOOK_CONCURRENCY)
                .then(|| ["--webhook-concurrency".to_owned(), options.webhook_concurrency.to_string()]);
            for a in [
                "--webhook-port".to_owned(),
                WEBHOOK_PORT.to_string(),
                "--webhook-configuration".to_owned(),
                options.name.clone(),
                "--tls-host".to_owned(),
                format!("{service}.{namespace}.svc"),
                "--tls-host".to_owned(),
                format!("{service}.{namespace}.svc.cluster.local"),
                "--failure-policy".to_owned(),
                policy.as_str().to_owned(),
                "--tls-secret".to_owned(),
                tls_secret_name(options),
            ]
            .into_iter()
            .chain(concurrency.into_iter().flatten())
            {
                args.push(json!(a));
            }
        }
        if let Some(ports) = container["ports"].as_array_mut() {
            ports.push(json!({"name": "webhook", "containerPort": WEBHOOK_PORT, "protocol": "TCP"}));
        }
    }

    docs.push(json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": service, "namespace": namespace, "labels": labels},
        "spec": {
            "selector": selector,
            "ports": [{"name": "webhook", "port": SERVICE_PORT, "targetPort": "webhook", "protocol": "TCP"}],
        },
    }));

    // Get and update only the configurations the routes produce (those whose caBundle the
    // operator keeps): a validate-only operator is granted nothing on mutating ones. Get and
    // patch only the CRDs it converts for.
    let configuration_resources: Vec<&str> = [
        (HandlerKind::Mutate, "mutatingwebhookconfigurations"),
        (HandlerKind::Validate, "validatingwebhookconfigurations"),
    ]
    .into_iter()
    .filter(|(kind, _)| routes.iter().any(|r| r.handler == *kind))
    .map(|(_, resource)| resource)
    .collect();
    let mut rules = Vec::new();
    if !configuration_resources.is_empty() {
        rules.push(json!({
            "apiGroups": ["admissionregistration.k8s.io"],
            "resources": configuration_resources,
            "resourceNames": [options.name],
            "verbs": ["get", "update"],
        }));
    }
    if !converting.is_empty() {
        let mut names = converting;
        names.sort();
        rules.push(json!({
            "apiGroups": ["apiextensions.k8s.io"],
            "resources": ["customresourcedefinitions"],
            "resourceNames": names,
            "verbs": ["get", "patch"],
        }));
    }
    let role = format!("{}-webhook", options.name);
    docs.push(json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": role, "labels": labels},
        "rules": rules,
    }));
    docs.push(json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": role, "labels": labels},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [{"kind": "ServiceAccount", "name": options.name, "namespace": namespace}],
    }));

    let config = ConfigurationOptions {
        name: options.name.clone(),
        endpoint: Endpoint::Service { namespace: namespace.clone(), name: service, port: SERVICE_PORT },
        ca_bundle: None,
        failure_policy: policy,
        timeout_seconds: 10,
        labels: labels.clone(),
        annotations: Map::new(),
    };
    // The shared certificate's Secret, in the operator's namespace. `create` cannot be
    // limited by name (the object does not exist yet), so it covers Secrets of this namespace.
    let secret = tls_secret_name(options);
    docs.push(json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": secret, "namespace": namespace, "labels": labels},
        "rules": [
            {"apiGroups": [""], "resources": ["secrets"], "resourceNames": [secret], "verbs": ["get", "update"]},
            {"apiGroups": [""], "resources": ["secrets"], "verbs": ["create"]},
        ],
    }));
    docs.push(json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": secret, "namespace": namespace, "labels": labels},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": secret},
        "subjects": [{"kind": "ServiceAccount", "name": options.name, "namespace": namespace}],
    }));
    docs.extend(configurations(&routes, &config));
}

//! The `ValidatingWebhookConfiguration` and `MutatingWebhookConfiguration` documents that
//! point the API server at the routes of a script: one webhook per [`Route`], matching
//! CREATE and UPDATE of the route's resource, with `admissionReviewVersions: [v1]`,
//! `sideEffects: None`, and the given failure policy and timeout. `ctop manifests` writes
//! them with a Service endpoint; `ctop dev` applies them with a loopback URL.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::{Map, Value, json};

use crate::FailurePolicy;
use crate::routes::{HandlerKind, Route};

/// Where the API server sends the reviews.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Endpoint {
    /// A Service in the cluster (`https://<name>.<namespace>.svc:<port><path>`).
    Service {
        /// The Service's namespace.
        namespace: String,
        /// The Service's name.
        name: String,
        /// The Service's port.
        port: u16,
    },
    /// A base URL such as `https://127.0.0.1:9443`; the route's path is appended.
    Url(String),
}

/// How to write the configurations.
#[derive(Clone, Debug)]
pub struct ConfigurationOptions {
    /// The name of both configurations (they are different kinds).
    pub name: String,
    /// Where reviews go.
    pub endpoint: Endpoint,
    /// The CA (PEM) that signed the serving certificate; `None` leaves `caBundle` out (for
    /// the operator to patch in, or cert-manager's CA injector).
    pub ca_bundle: Option<String>,
    /// What the API server does when the webhook cannot be reached.
    pub failure_policy: FailurePolicy,
    /// Seconds the API server waits for an answer (1–30).
    pub timeout_seconds: u32,
    /// Labels of both objects.
    pub labels: Map<String, Value>,
    /// Annotations of both objects (e.g. `cert-manager.io/inject-ca-from`).
    pub annotations: Map<String, Value>,
}

/// The configurations for `routes`: the validating one if any route validates, the mutating
/// one if any mutates, in that order.
#[must_use]
pub fn configurations(routes: &[Route], options: &ConfigurationOptions) -> Vec<Value> {
    let mut out = Vec::new();
    for (handler, kind) in [
        (HandlerKind::Validate, "ValidatingWebhookConfiguration"),
        (HandlerKind::Mutate, "MutatingWebhookConfiguration"),
    ] {
        let hooks: Vec<Value> =
            routes.iter().filter(|r| r.handler == handler).map(|r| webhook(r, options)).collect();
        if hooks.is_empty() {
            continue;
        }
        let mut metadata = Map::new();
        metadata.insert("name".into(), json!(options.name));
        if !options.labels.is_empty() {
            metadata.insert("labels".into(), Value::Object(options.labels.clone()));
        }
        if !options.annotations.is_empty() {
            metadata.insert("annotations".into(), Value::Object(options.annotations.clone()));
        }
        out.push(json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": kind,
            "metadata": metadata,
            "webhooks": hooks,
        }));
    }
    out
}

fn webhook(route: &Route, options: &ConfigurationOptions) -> Value {
    let mut client = Map::new();
    match &options.endpoint {
        Endpoint::Service { namespace, name, port } => {
            client.insert(
                "service".into(),
                json!({"namespace": namespace, "name": name, "port": port, "path": route.path}),
            );
        }
        Endpoint::Url(base) => {
            client.insert("url".into(), json!(format!("{}{}", base.trim_end_matches('/'), route.path)));
        }
    }
    if let Some(ca) = &options.ca_bundle {
        client.insert("caBundle".into(), json!(BASE64.encode(ca.as_bytes())));
    }
    let mut hook = json!({
        "name": route.webhook_name(),
        "admissionReviewVersions": ["v1"],
        "sideEffects": "None",
        "failurePolicy": options.failure_policy.as_str(),
        "timeoutSeconds": options.timeout_seconds.clamp(1, 30),
        "matchPolicy": "Equivalent",
        "clientConfig": client,
        "rules": [{
            "apiGroups": [route.group],
            "apiVersions": [route.version],
            "operations": ["CREATE", "UPDATE"],
            "resources": [route.plural],
            "scope": if route.namespaced { "Namespaced" } else { "Cluster" },
        }],
    });
    if route.handler == HandlerKind::Mutate {
        hook["reinvocationPolicy"] = json!("Never");
    }
    hook
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route(handler: HandlerKind) -> Route {
        Route {
            handler,
            path: format!("/{}/demo.ctop.dev/v1/widgets", handler.as_str()),
            controller: 0,
            controller_name: "widget".into(),
            group: "demo.ctop.dev".into(),
            version: "v1".into(),
            kind: "Widget".into(),
            plural: "widgets".into(),
            namespaced: true,
            qualifier: None,
        }
    }

    #[test]
    fn one_webhook_per_route() {
        let options = ConfigurationOptions {
            name: "demo".into(),
            endpoint: Endpoint::Service {
                namespace: "demo-system".into(),
                name: "demo-webhook".into(),
                port: 443,
            },
            ca_bundle: None,
            failure_policy: FailurePolicy::Ignore,
            timeout_seconds: 60,
            labels: Map::new(),
            annotations: Map::new(),
        };
        let docs = configurations(&[route(HandlerKind::Validate)], &options);
        assert_eq!(docs.len(), 1);
        assert_eq!(docs[0]["kind"], "ValidatingWebhookConfiguration");
        let hook = &docs[0]["webhooks"][0];
        assert_eq!(hook["name"], "validate.widgets.demo.ctop.dev");
        assert_eq!(hook["failurePolicy"], "Ignore");
        assert_eq!(hook["timeoutSeconds"], 30);
        assert_eq!(hook["clientConfig"]["service"]["path"], "/validate/demo.ctop.dev/v1/widgets");
        assert!(hook["clientConfig"].get("caBundle").is_none());

        let options = ConfigurationOptions {
            endpoint: Endpoint::Url("https://127.0.0.1:9443/".into()),
            ca_bundle: Some("PEM".into()),
            ..options
        };
        let docs = configurations(&[route(HandlerKind::Mutate), route(HandlerKind::Validate)], &options);
        assert_eq!(docs.len(), 2);
        assert_eq!(docs[1]["kind"], "MutatingWebhookConfiguration");
        assert_eq!(
            docs[1]["webhooks"][0]["clientConfig"]["url"],
            "https://127.0.0.1:9443/mutate/demo.ctop.dev/v1/widgets"
        );
        assert_eq!(docs[1]["webhooks"][0]["clientConfig"]["caBundle"], BASE64.encode("PEM"));
        assert_eq!(docs[1]["webhooks"][0]["reinvocationPolicy"], "Never");
    }
}

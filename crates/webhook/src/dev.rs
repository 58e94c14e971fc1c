//! The webhook of `ctop dev` and `ctop test`: served on loopback with a freshly issued
//! certificate, its Validating/MutatingWebhookConfigurations applied to the embedded cluster
//! with that CA and an `https://127.0.0.1:PORT` URL, so the script's handlers are enforced
//! with no setup. [`DevWebhook::reload`] serves a changed script and rewrites the
//! configurations (deleting one whose kind of handler the script no longer has).
//!
//! It converts too: [`DevWebhook::set_conversion`] serves the script's conversions on
//! [`CONVERSION_PATH`], and [`DevWebhook::conversion`] is what the CRDs of the resources it
//! converts point at (`spec.conversion.webhook.clientConfig`: the URL and the CA), the same
//! for the server's whole life, so CRDs written once stay right across reloads. Writing
//! those CRDs is the caller's business (it installs the CRDs anyway): install them after
//! [`DevWebhook::start`], since they need the URL. [`DevWebhook::needed`] tells whether a
//! script needs the server at all.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use ctop_core::OperatorSpec;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams};

use crate::CONVERSION_PATH;
use crate::configuration::{ConfigurationOptions, Endpoint, configurations};
use crate::conversion::{ConversionScript, converts};
use crate::routes::routes;
use crate::script::AdmissionScript;
use crate::server::{Admission, FailurePolicy, ServeError, ServerConfig, bind};
use crate::tls::{SelfIssued, TlsError, TlsSource};

/// The name of the configurations (and their field manager).
pub const DEV_CONFIGURATION: &str = "ctop-dev";

/// Why the dev webhook could not start or be reconfigured.
#[derive(Debug, thiserror::Error)]
pub enum DevWebhookError {
    /// No certificate could be issued.
    #[error("cannot issue the webhook certificate")]
    Issue(#[source] TlsError),
    /// The server could not start.
    #[error(transparent)]
    Serve(#[from] ServeError),
    /// A configuration could not be written.
    #[error("cannot {action} the {kind} of the dev webhook")]
    Configure {
        /// `apply` or `delete`.
        action: &'static str,
        /// The configuration's kind.
        kind: &'static str,
        /// The client error.
        #[source]
        source: kube::Error,
    },
}

/// Where a CRD's conversion webhook reaches the dev server: its
/// `spec.conversion.webhook.clientConfig`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConversionEndpoint {
    /// The loopback URL, ending in [`CONVERSION_PATH`], e.g. `https://127.0.0.1:40123/convert`.
    pub url: String,
    /// The CA (PEM) that signed the server's certificate.
    pub ca_pem: String,
    /// The same CA base64-encoded, as `clientConfig.caBundle` holds it in JSON and YAML.
    pub ca_bundle: String,
}

impl ConversionEndpoint {
    /// `spec.conversion.webhook.clientConfig` of a CRD: `{"url": …, "caBundle": …}`.
    #[must_use]
    pub fn client_config(&self) -> serde_json::Value {
        serde_json::json!({"url": self.url, "caBundle": self.ca_bundle})
    }
}

/// A running dev webhook server; the server stops when this is dropped.
pub struct DevWebhook {
    admission: Admission,
    base_url: String,
    ca_pem: String,
    conversion: ConversionEndpoint,
    task: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for DevWebhook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DevWebhook").field("url", &self.base_url).finish_non_exhaustive()
    }
}

impl DevWebhook {
    /// Whether `spec` needs the dev server: it declares `validate` or `mutate` handlers, or
    /// resources to convert. (`ctop dev` starts it on the embedded cluster either way, for a
    /// later save to fill.)
    #[must_use]
    pub fn needed(spec: &OperatorSpec) -> bool {
        !routes(spec).is_empty() || converts(spec)
    }

    /// Serve `script`'s handlers (those `spec` declares; none yet is fine, a reload can add
    /// them) on a free loopback port and apply their configurations through `client`. No
    /// conversion is served until [`set_conversion`](Self::set_conversion).
    pub async fn start(
        client: &kube::Client,
        script: Arc<dyn AdmissionScript>,
        spec: &OperatorSpec,
    ) -> Result<Self, DevWebhookError> {
        let hosts = ["localhost".to_owned(), "127.0.0.1".to_owned()];
        let issued = SelfIssued::issue(&hosts).map_err(DevWebhookError::Issue)?;
        let config = ServerConfig {
            max_body: 3 * 1024 * 1024,
            concurrency: 2,
            timeout: Duration::from_secs(10),
            failure_policy: FailurePolicy::Fail,
        };
        let admission = Admission::new(script, &routes(spec), config);
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, 0));
        let bound = bind(addr, &TlsSource::SelfIssued(issued.clone()), admission.router()).await?;
        let base_url = format!("https://127.0.0.1:{}", bound.local_addr().map_err(ServeError::from)?.port());
        let task = tokio::spawn(async move {
            if let Err(e) = bound.run(std::future::pending()).await {
                tracing::error!(error = %ctop_core::Chain(&e), "the dev webhook server stopped");
            }
        });
        let conversion = ConversionEndpoint {
            url: format!("{base_url}{CONVERSION_PATH}"),
            ca_bundle: BASE64.encode(issued.ca_pem.as_bytes()),
            ca_pem: issued.ca_pem.clone(),
        };
        let hook = Self { admission, base_url, ca_pem: issued.ca_pem, conversion, task };
        hook.configure(client, spec).await?;
        Ok(hook)
    }

    /// Where the server listens, e.g. `https://127.0.0.1:40123`.
    #[must_use]
    pub fn url(&self) -> &str {
        &self.base_url
    }

    /// Where the CRDs of the resources the script converts point their conversion webhook
    /// (`spec.conversion.webhook.clientConfig`); the same until the server is dropped.
    #[must_use]
    pub fn conversion(&self) -> &ConversionEndpoint {
        &self.conversion
    }

    /// From the next request on, convert with `script` when `spec` has resources to convert
    /// (a 404 on [`CONVERSION_PATH`] when it has none). Call it after [`start`](Self::start)
    /// and after every [`reload`](Self::reload).
    pub fn set_conversion(&self, script: Arc<dyn ConversionScript>, spec: &OperatorSpec) {
        self.admission.set_conversion(script, spec);
    }

    /// Serve `script` (declaring `spec`) from now on and rewrite the configurations for its
    /// routes. The conversion is left as it is: call [`set_conversion`](Self::set_conversion)
    /// too.
    pub async fn reload(
        &self,
        client: &kube::Client,
        script: Arc<dyn AdmissionScript>,
        spec: &OperatorSpec,
    ) -> Result<(), DevWebhookError> {
        self.admission.replace(script, &routes(spec));
        self.configure(client, spec).await
    }

    async fn configure(&self, client: &kube::Client, spec: &OperatorSpec) -> Result<(), DevWebhookError> {
        let routes = routes(spec);
        let options = ConfigurationOptions {
            name: DEV_CONFIGURATION.into(),
            endpoint: Endpoint::Url(self.base_url.clone()),
            ca_bundle: Some(self.ca_pem.clone()),
            failure_policy: FailurePolicy::Fail,
            timeout_seconds: 10,
            labels: serde_json::Map::new(),
            annotations: serde_json::Map::new(),
        };
        let docs = configurations(&routes, &options);
        for (kind, plural) in [
            ("ValidatingWebhookConfiguration", "validatingwebhookconfigurations"),
            ("MutatingWebhookConfiguration", "mutatingwebhookconfigurations"),
        ] {
            let gvk = GroupVersionKind::gvk("admissionregistration.k8s.io", "v1", kind);
            let api: Api<DynamicObject> =
                Api::all_with(client.clone(), &ApiResource::from_gvk_with_plural(&gvk, plural));
            match docs.iter().find(|d| d["kind"] == kind) {
                Some(doc) => {
                    let params = PatchParams::apply(DEV_CONFIGURATION).force();
                    api.patch(DEV_CONFIGURATION, &params, &Patch::Apply(doc))
                        .await
                        .map_err(|source| DevWebhookError::Configure { action: "apply", kind, source })?;
                }
                None => match api.delete(DEV_CONFIGURATION, &DeleteParams::default()).await {
                    Ok(_) => {}
                    Err(kube::Error::Api(s)) if s.code == 404 => {}
                    Err(source) => return Err(DevWebhookError::Configure { action: "delete", kind, source }),
                },
            }
        }
        if !routes.is_empty() {
            tracing::info!(
                url = self.base_url,
                webhooks = routes.len(),
                "admission webhooks wired into the cluster"
            );
        }
        Ok(())
    }
}

impl Drop for DevWebhook {
    fn drop(&mut self) {
        self.task.abort();
    }
}

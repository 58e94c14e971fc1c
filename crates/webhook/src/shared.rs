//! One self-issued certificate for every replica, kept in a Secret.
//!
//! A certificate issued in memory is per process: with two replicas each would write its own
//! CA into the webhook configurations, and the API server, whose calls reach either pod
//! through the Service, would reject the other one's certificate. [`shared_self_issued`]
//! makes the first replica issue the CA and certificate and store them in a
//! `kubernetes.io/tls` Secret (`tls.crt`, `tls.key`, `ca.crt`, like cert-manager's); every
//! other replica, and every restart, reads the same Secret. Creating is a race the API
//! server settles: the loser of a `409 AlreadyExists` reads the winner's Secret. A Secret
//! that does not load, or was issued for other host names, is replaced (an update with the
//! read `resourceVersion`, so two replicas cannot both replace it).
//!
//! The operator needs `get` and `update` on that Secret (by `resourceNames`) and `create`
//! on Secrets in its namespace; `ctop manifests` grants exactly that.

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, ObjectMeta, PostParams};

use crate::tls::{SelfIssued, TlsError, certified_key};

/// The Secret's annotation listing the host names its certificate was issued for.
pub const HOSTS_ANNOTATION: &str = "ctop.dev/webhook-hosts";

/// How many read-then-write rounds a replica tries before giving up on conflicts.
const ATTEMPTS: usize = 5;

/// Why the shared certificate could not be read or stored.
#[derive(Debug, thiserror::Error)]
pub enum SharedCertError {
    /// The API server refused a read or a write of the Secret (often RBAC).
    #[error(
        "cannot {action} Secret {namespace}/{name} (the operator needs get, create and update on it, \
         which ctop manifests grants, or serve mounted files with --tls-cert/--tls-key)"
    )]
    Api {
        /// `read`, `create` or `replace`.
        action: &'static str,
        /// The Secret's namespace.
        namespace: String,
        /// The Secret's name.
        name: String,
        /// The client error.
        source: kube::Error,
    },
    /// Issuing a new certificate failed.
    #[error(transparent)]
    Issue(#[from] TlsError),
    /// Every attempt lost a write race to another writer of the Secret.
    #[error("Secret {namespace}/{name} kept changing while it was being written ({ATTEMPTS} attempts)")]
    Contended {
        /// The Secret's namespace.
        namespace: String,
        /// The Secret's name.
        name: String,
    },
}

/// The CA and serving certificate for `hosts` kept in Secret `namespace/name`: read when it
/// holds a loadable certificate for exactly these hosts, else issued and written there.
pub async fn shared_self_issued(
    client: &kube::Client,
    namespace: &str,
    name: &str,
    hosts: &[String],
) -> Result<SelfIssued, SharedCertError> {
    let api: Api<Secret> = Api::namespaced(client.clone(), namespace);
    let want_hosts = hosts_key(hosts);
    let err = |action, source| SharedCertError::Api {
        action,
        namespace: namespace.to_owned(),
        name: name.to_owned(),
        source,
    };
    for _ in 0..ATTEMPTS {
        let existing = api.get_opt(name).await.map_err(|e| err("read", e))?;
        if let Some(secret) = &existing {
            match stored(secret, &want_hosts) {
                Ok(issued) => {
                    tracing::info!(secret = name, namespace, "using the shared webhook certificate");
                    return Ok(issued);
                }
                Err(why) => {
                    tracing::info!(secret = name, namespace, why, "issuing a new shared webhook certificate")
                }
            }
        }
        let issued = SelfIssued::issue(hosts)?;
        let mut secret = existing.unwrap_or_default();
        secret.metadata = ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some(namespace.to_owned()),
            resource_version: secret.metadata.resource_version.take(),
            annotations: Some(BTreeMap::from([(HOSTS_ANNOTATION.to_owned(), want_hosts.clone())])),
            labels: secret.metadata.labels.take(),
            ..ObjectMeta::default()
        };
        secret.type_ = Some("kubernetes.io/tls".to_owned());
        secret.string_data = None;
        secret.data = Some(BTreeMap::from([
            ("ca.crt".to_owned(), ByteString(issued.ca_pem.clone().into_bytes())),
            ("tls.crt".to_owned(), ByteString(issued.cert_pem.clone().into_bytes())),
            ("tls.key".to_owned(), ByteString(issued.key_pem.clone().into_bytes())),
        ]));
        let written = if secret.metadata.resource_version.is_some() {
            api.replace(name, &PostParams::default(), &secret).await.map_err(|e| ("replace", e))
        } else {
            api.create(&PostParams::default(), &secret).await.map_err(|e| ("create", e))
        };
        match written {
            Ok(_) => {
                tracing::info!(
                    secret = name,
                    namespace,
                    hosts = want_hosts,
                    "stored a new shared webhook certificate"
                );
                return Ok(issued);
            }
            // Another replica wrote it first: read theirs.
            Err((_, kube::Error::Api(s))) if s.code == 409 => {}
            Err((action, e)) => return Err(err(action, e)),
        }
    }
    Err(SharedCertError::Contended { namespace: namespace.to_owned(), name: name.to_owned() })
}

/// The hosts as the annotation stores them: sorted, deduplicated, comma separated.
fn hosts_key(hosts: &[String]) -> String {
    let mut hosts: Vec<&str> = hosts.iter().map(String::as_str).filter(|h| !h.is_empty()).collect();
    hosts.sort_unstable();
    hosts.dedup();
    hosts.join(",")
}

/// The certificate `secret` holds, or why it cannot be used.
fn stored(secret: &Secret, want_hosts: &str) -> Result<SelfIssued, &'static str> {
    let annotated = secret.metadata.annotations.as_ref().and_then(|a| a.get(HOSTS_ANNOTATION));
    if annotated.map(String::as_str) != Some(want_hosts) {
        return Err("it was issued for other host names");
    }
    let text = |key: &str| {
        secret
            .data
            .as_ref()
            .and_then(|d| d.get(key))
            .and_then(|b| String::from_utf8(b.0.clone()).ok())
            .filter(|s| !s.is_empty())
    };
    let (Some(ca_pem), Some(cert_pem), Some(key_pem)) = (text("ca.crt"), text("tls.crt"), text("tls.key"))
    else {
        return Err("it lacks ca.crt, tls.crt or tls.key");
    };
    if certified_key(cert_pem.as_bytes(), key_pem.as_bytes(), "the shared certificate").is_err() {
        return Err("its certificate or key does not load");
    }
    Ok(SelfIssued { ca_pem, cert_pem, key_pem })
}

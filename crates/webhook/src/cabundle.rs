//! Put a self-issued CA into the webhook configurations the operator owns, so the API
//! server trusts the certificate the operator issued itself at startup.
//!
//! Only the named configurations are touched (the generated RBAC allows exactly those
//! names), and in them only `webhooks[*].clientConfig.caBundle`. A configuration that does
//! not exist yet is skipped with a note: nothing calls the operator through it.

use k8s_openapi::ByteString;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use kube::api::{Api, PostParams};

/// Why the CA could not be patched in.
#[derive(Debug, thiserror::Error)]
pub enum CaBundleError {
    /// The API server refused a read or write (often RBAC: the operator needs get and
    /// update on the configurations, restricted to their names).
    #[error("cannot update {kind} {name}: {source}")]
    Api {
        /// The configuration's kind.
        kind: &'static str,
        /// Its name.
        name: String,
        /// The client error.
        source: kube::Error,
    },
}

/// Which configurations to patch (empty names are skipped).
#[derive(Clone, Debug, Default)]
pub struct Configurations {
    /// The `ValidatingWebhookConfiguration`'s name.
    pub validating: Option<String>,
    /// The `MutatingWebhookConfiguration`'s name.
    pub mutating: Option<String>,
}

/// Set `caBundle` of every webhook in the named configurations to `ca_pem`. Returns how
/// many configurations changed. Retries a few times on write conflicts.
pub async fn patch_ca_bundle(
    client: &kube::Client,
    targets: &Configurations,
    ca_pem: &str,
) -> Result<usize, CaBundleError> {
    let mut changed = 0;
    if let Some(name) = &targets.validating {
        let api: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
        changed += usize::from(
            update(&api, name, "ValidatingWebhookConfiguration", |c: &mut ValidatingWebhookConfiguration| {
                let mut changed = false;
                for w in c.webhooks.iter_mut().flatten() {
                    changed |= set(&mut w.client_config.ca_bundle, ca_pem);
                }
                changed
            })
            .await?,
        );
    }
    if let Some(name) = &targets.mutating {
        let api: Api<MutatingWebhookConfiguration> = Api::all(client.clone());
        changed += usize::from(
            update(&api, name, "MutatingWebhookConfiguration", |c: &mut MutatingWebhookConfiguration| {
                let mut changed = false;
                for w in c.webhooks.iter_mut().flatten() {
                    changed |= set(&mut w.client_config.ca_bundle, ca_pem);
                }
                changed
            })
            .await?,
        );
    }
    Ok(changed)
}

fn set(slot: &mut Option<ByteString>, ca_pem: &str) -> bool {
    let want = ByteString(ca_pem.as_bytes().to_vec());
    if slot.as_ref() == Some(&want) {
        return false;
    }
    *slot = Some(want);
    true
}

async fn update<K>(
    api: &Api<K>,
    name: &str,
    kind: &'static str,
    change: impl Fn(&mut K) -> bool,
) -> Result<bool, CaBundleError>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + serde::Serialize + std::fmt::Debug,
{
    let err = |source| CaBundleError::Api { kind, name: name.to_owned(), source };
    for attempt in 0..5 {
        let Some(mut obj) = api.get_opt(name).await.map_err(err)? else {
            tracing::warn!(kind, name, "the webhook configuration does not exist; its caBundle was not set");
            return Ok(false);
        };
        if !change(&mut obj) {
            return Ok(false);
        }
        match api.replace(name, &PostParams::default(), &obj).await {
            Ok(_) => {
                tracing::info!(kind, name, "caBundle of the webhook configuration set to the self-issued CA");
                return Ok(true);
            }
            Err(kube::Error::Api(s)) if s.code == 409 && attempt < 4 => continue,
            Err(e) => return Err(err(e)),
        }
    }
    Ok(false)
}

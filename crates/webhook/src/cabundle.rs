//! Put a self-issued CA into the webhook configurations and the converting CRDs the
//! operator owns, so the API server trusts the certificate the operator issued itself at
//! startup.
//!
//! Only the named objects are touched (the generated RBAC allows exactly those names), and
//! in them only the `caBundle`: `webhooks[*].clientConfig.caBundle` of a configuration,
//! `spec.conversion.webhook.clientConfig.caBundle` of a CRD. Which ones are looked at follows
//! the script ([`Configurations::for_spec`]): the ValidatingWebhookConfiguration when a
//! route validates, the MutatingWebhookConfiguration when one mutates, as
//! [`configurations()`](crate::configurations) writes them, so a validate-only operator
//! never looks for a mutating one; and the CRD (`<plural>.<group>`) of every resource it
//! converts ([`converting_crds`]).
//!
//! [`patch_ca_bundle`] looks once and reports what it found ([`Looked`]); an object that
//! does not exist is [`Found::Missing`], not an error: nothing calls the operator through
//! it. [`CaBundleKeeper`] looks again and again (`ctop run` every 10 s) and keeps the log
//! quiet: a warning when an expected object goes missing, one info line when it is back,
//! nothing while it stays away.
//!
//! # RBAC
//!
//! - configurations (`admissionregistration.k8s.io`, `validatingwebhookconfigurations` and
//!   `mutatingwebhookconfigurations`): `get` and `update`, restricted by `resourceNames` to
//!   the configurations' name;
//! - CRDs (`apiextensions.k8s.io`, `customresourcedefinitions`): `get` and `patch`,
//!   restricted by `resourceNames` to [`converting_crds`]. A CRD is changed with a JSON merge
//!   patch of its `caBundle` alone, sent only when the CA differs, so nothing else the CRD
//!   holds (its schemas, a `kubectl apply` of a newer one) can be overwritten.

use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use ctop_core::OperatorSpec;
use k8s_openapi::ByteString;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, Patch, PatchParams, PostParams};

pub use crate::conversion::converting_crds;
use crate::routes::{HandlerKind, Route, routes};

const VALIDATING: &str = "ValidatingWebhookConfiguration";
const MUTATING: &str = "MutatingWebhookConfiguration";
const CRD: &str = "CustomResourceDefinition";

/// Why the CA could not be patched in.
#[derive(Debug, thiserror::Error)]
pub enum CaBundleError {
    /// The API server refused a read or write (often RBAC: the operator needs get and
    /// update on the configurations, get and patch on the CRDs, restricted to their names;
    /// see the [module docs](self)).
    #[error("cannot update {kind} {name}")]
    Api {
        /// The configuration's kind.
        kind: &'static str,
        /// Its name.
        name: String,
        /// The client error.
        source: kube::Error,
    },
}

/// Which configurations and CRDs to patch (`None` is not looked at).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Configurations {
    /// The `ValidatingWebhookConfiguration`'s name.
    pub validating: Option<String>,
    /// The `MutatingWebhookConfiguration`'s name.
    pub mutating: Option<String>,
    /// The names of the CRDs whose conversion webhook is the operator
    /// ([`converting_crds`]).
    pub crds: Vec<String>,
}

impl Configurations {
    /// Everything `spec` makes the API server call the operator through: the
    /// configurations called `name` its routes produce ([`for_routes`](Self::for_routes))
    /// and the CRDs of the resources it converts ([`converting_crds`]).
    #[must_use]
    pub fn for_spec(name: &str, spec: &OperatorSpec) -> Self {
        Self { crds: converting_crds(spec), ..Self::for_routes(name, &routes(spec)) }
    }

    /// The configurations called `name` that `routes` produce: the validating one when a
    /// route validates, the mutating one when a route mutates (what
    /// [`configurations()`](crate::configurations) writes for them). No CRD.
    #[must_use]
    pub fn for_routes(name: &str, routes: &[Route]) -> Self {
        let has = |handler| routes.iter().any(|r| r.handler == handler).then(|| name.to_owned());
        Self { validating: has(HandlerKind::Validate), mutating: has(HandlerKind::Mutate), crds: Vec::new() }
    }

    /// Whether nothing is named, so there is nothing to look after.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.validating.is_none() && self.mutating.is_none() && self.crds.is_empty()
    }

    /// `(kind, name)` of each named object: validating, mutating, then the CRDs.
    fn named(&self) -> impl Iterator<Item = (&'static str, &str)> {
        [(VALIDATING, &self.validating), (MUTATING, &self.mutating)]
            .into_iter()
            .filter_map(|(kind, name)| name.as_deref().map(|n| (kind, n)))
            .chain(self.crds.iter().map(|n| (CRD, n.as_str())))
    }
}

/// What one look at a configuration or CRD found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Found {
    /// Every webhook in it already carries the CA.
    Current,
    /// Its `caBundle` was set to the CA just now.
    Set,
    /// It does not exist (not applied yet, or deleted): nothing calls the operator through it.
    Missing,
    /// A CRD that does not convert through a webhook (`spec.conversion.strategy` is not
    /// `Webhook`, e.g. an older CRD still applied): there is no `caBundle` to set, and
    /// nothing calls the operator through it.
    NoWebhook,
}

/// One configuration or CRD looked at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Looked {
    /// `ValidatingWebhookConfiguration`, `MutatingWebhookConfiguration` or
    /// `CustomResourceDefinition`.
    pub kind: &'static str,
    /// Its name.
    pub name: String,
    /// What was found.
    pub found: Found,
}

/// Set `caBundle` of every webhook in the named configurations, and of the conversion
/// webhook of the named CRDs, to `ca_pem`, retrying a configuration a few times on write
/// conflicts. Returns what was found in each named object, validating first, then mutating,
/// then the CRDs; an unnamed one is not looked at. Stops at the first error.
pub async fn patch_ca_bundle(
    client: &kube::Client,
    targets: &Configurations,
    ca_pem: &str,
) -> Result<Vec<Looked>, CaBundleError> {
    let mut out = Vec::new();
    for (kind, name) in targets.named() {
        let found = look(client, kind, name, ca_pem).await?;
        out.push(Looked { kind, name: name.to_owned(), found });
    }
    Ok(out)
}

async fn look(
    client: &kube::Client,
    kind: &'static str,
    name: &str,
    ca_pem: &str,
) -> Result<Found, CaBundleError> {
    let want = ByteString(ca_pem.as_bytes().to_vec());
    if kind == CRD {
        return crd(client, name, &want).await;
    }
    if kind == VALIDATING {
        let api: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
        update(&api, name, kind, |c: &mut ValidatingWebhookConfiguration| {
            set_all(c.webhooks.iter_mut().flatten().map(|w| &mut w.client_config.ca_bundle), &want)
        })
        .await
    } else {
        let api: Api<MutatingWebhookConfiguration> = Api::all(client.clone());
        update(&api, name, kind, |c: &mut MutatingWebhookConfiguration| {
            set_all(c.webhooks.iter_mut().flatten().map(|w| &mut w.client_config.ca_bundle), &want)
        })
        .await
    }
}

/// Set the CA of CRD `name`'s conversion webhook, with a merge patch of that field alone,
/// when it differs.
async fn crd(client: &kube::Client, name: &str, want: &ByteString) -> Result<Found, CaBundleError> {
    let err = |source| CaBundleError::Api { kind: CRD, name: name.to_owned(), source };
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let Some(crd) = api.get_opt(name).await.map_err(err)? else {
        return Ok(Found::Missing);
    };
    let Some(conversion) = crd.spec.conversion.filter(|c| c.strategy == "Webhook") else {
        return Ok(Found::NoWebhook);
    };
    let current = conversion.webhook.and_then(|w| w.client_config).and_then(|c| c.ca_bundle);
    if current.as_ref() == Some(want) {
        return Ok(Found::Current);
    }
    let patch = serde_json::json!({"spec": {"conversion": {"webhook": {"clientConfig": {
        "caBundle": BASE64.encode(&want.0),
    }}}}});
    api.patch(name, &PatchParams::default(), &Patch::Merge(&patch)).await.map_err(err)?;
    tracing::info!(kind = CRD, name, "caBundle of the CRD's conversion webhook set to the self-issued CA");
    Ok(Found::Set)
}

/// Set every slot to `want`; whether any changed.
fn set_all<'a>(slots: impl Iterator<Item = &'a mut Option<ByteString>>, want: &ByteString) -> bool {
    let mut changed = false;
    for slot in slots {
        if slot.as_ref() != Some(want) {
            *slot = Some(want.clone());
            changed = true;
        }
    }
    changed
}

async fn update<K>(
    api: &Api<K>,
    name: &str,
    kind: &'static str,
    change: impl Fn(&mut K) -> bool,
) -> Result<Found, CaBundleError>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + serde::Serialize + std::fmt::Debug,
{
    let err = |source| CaBundleError::Api { kind, name: name.to_owned(), source };
    // A write conflict (someone else wrote it in between) is retried with a fresh read,
    // four times; a fifth is an error, and the next look tries again.
    let mut conflicts = 0;
    loop {
        let Some(mut obj) = api.get_opt(name).await.map_err(err)? else {
            return Ok(Found::Missing);
        };
        if !change(&mut obj) {
            return Ok(Found::Current);
        }
        match api.replace(name, &PostParams::default(), &obj).await {
            Ok(_) => {
                tracing::info!(kind, name, "caBundle of the webhook configuration set to the self-issued CA");
                return Ok(Found::Set);
            }
            Err(kube::Error::Api(s)) if s.code == 409 && conflicts < 4 => conflicts += 1,
            Err(e) => return Err(err(e)),
        }
    }
}

/// A change in whether a configuration or CRD can call the operator, which
/// [`CaBundleKeeper::check`] logs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    /// An expected configuration or CRD is not there, or a CRD does not convert through a
    /// webhook (at the first look, or since the last one): logged once as a warning, while
    /// the operator cannot be called through it (once more if the reason changes).
    WentMissing,
    /// One that was missing (or had no conversion webhook) is there again: logged at info.
    CameBack,
}

/// One configuration or CRD [`CaBundleKeeper::check`] looked at, and what it logged about
/// it besides setting the CA.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Checked {
    /// What was found.
    pub looked: Looked,
    /// Whether it went missing or came back with this look.
    pub change: Option<Change>,
}

/// Keeps the CA in the configurations and converting CRDs, looking again every so often
/// ([`CaBundleKeeper::run`]), since one may be applied after the operator starts or
/// re-applied without the CA. Only the objects it was given are looked at (build them with
/// [`Configurations::for_spec`]); a missing one is warned about once, not at every look.
/// The RBAC it needs is in the [module docs](self).
pub struct CaBundleKeeper {
    client: kube::Client,
    targets: Configurations,
    ca_pem: String,
    /// `(kind, name, found)` of the objects found missing (or without a conversion webhook)
    /// at their last look (already warned about).
    missing: Vec<(&'static str, String, Found)>,
}

impl CaBundleKeeper {
    /// Keep `ca_pem` in `targets`.
    #[must_use]
    pub fn new(client: kube::Client, targets: Configurations, ca_pem: String) -> Self {
        Self { client, targets, ca_pem, missing: Vec::new() }
    }

    /// The configurations and CRDs looked after.
    #[must_use]
    pub fn targets(&self) -> &Configurations {
        &self.targets
    }

    /// Look once: set the CA where it is not, warn about an object that went missing, tell
    /// when one is back. Returns each object looked at (validating first, then mutating,
    /// then the CRDs), or the first API error.
    pub async fn check(&mut self) -> Result<Vec<Checked>, CaBundleError> {
        let looked = patch_ca_bundle(&self.client, &self.targets, &self.ca_pem).await?;
        Ok(looked.into_iter().map(|l| self.note(l)).collect())
    }

    fn note(&mut self, looked: Looked) -> Checked {
        let (kind, name) = (looked.kind, looked.name.as_str());
        let known = self.missing.iter().position(|(k, n, _)| *k == kind && n == name);
        let before = known.map(|i| self.missing[i].2);
        let change = match looked.found {
            // Warned about once per reason: a CRD that appears without a conversion webhook
            // after it was missing is a new reason.
            found @ (Found::Missing | Found::NoWebhook) if before != Some(found) => {
                if found == Found::Missing {
                    tracing::warn!(
                        kind,
                        name,
                        "it does not exist, so its caBundle cannot be set; it is set as soon as it appears"
                    );
                } else {
                    tracing::warn!(
                        kind,
                        name,
                        "the CRD does not convert through the operator (spec.conversion.strategy is not \
                         Webhook), so objects in its other versions are not converted; apply the CRD ctop \
                         manifests writes"
                    );
                }
                match known {
                    Some(i) => self.missing[i].2 = found,
                    None => self.missing.push((kind, name.to_owned(), found)),
                }
                Some(Change::WentMissing)
            }
            Found::Current | Found::Set if known.is_some() => {
                tracing::info!(kind, name, "it calls the operator again");
                self.missing.retain(|(k, n, _)| !(*k == kind && n == name));
                Some(Change::CameBack)
            }
            _ => None,
        };
        Checked { looked, change }
    }

    /// [`check`](Self::check) now and then every `every`, for ever (abort the task to stop).
    /// While a target is missing it looks sooner, from 250 ms doubling up to `every`: a CRD
    /// or configuration applied just after the operator started calls it within a second.
    /// An API error is logged at each look that meets it.
    pub async fn run(mut self, every: Duration) {
        let soon = Duration::from_millis(250).min(every);
        let mut pause = soon;
        loop {
            let failed = self.check().await.err();
            if let Some(e) = &failed {
                tracing::warn!(
                    error = %ctop_core::Chain(e),
                    retry_in = ?every,
                    "cannot set the caBundle of the webhook configurations and CRDs"
                );
            }
            pause = if self.missing.is_empty() || failed.is_some() { every } else { (pause * 2).min(every) };
            tokio::time::sleep(pause).await;
            if self.missing.is_empty() {
                pause = soon;
            }
        }
    }
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
    fn only_the_configurations_the_routes_produce_are_looked_after() {
        let both =
            Configurations { validating: Some("op".into()), mutating: Some("op".into()), crds: Vec::new() };
        let validate = route(HandlerKind::Validate);
        let mutate = route(HandlerKind::Mutate);
        assert_eq!(
            Configurations::for_routes("op", std::slice::from_ref(&validate)),
            Configurations { validating: Some("op".into()), ..Configurations::default() }
        );
        assert_eq!(
            Configurations::for_routes("op", std::slice::from_ref(&mutate)),
            Configurations { mutating: Some("op".into()), ..Configurations::default() }
        );
        assert_eq!(Configurations::for_routes("op", &[validate, mutate]), both);
        assert!(Configurations::for_routes("op", &[]).is_empty());
        assert!(!both.is_empty());
        assert_eq!(both.named().collect::<Vec<_>>(), [(VALIDATING, "op"), (MUTATING, "op")]);
        let crds = Configurations { crds: vec!["widgets.demo.ctop.dev".into()], ..Configurations::default() };
        assert!(!crds.is_empty());
        assert_eq!(crds.named().collect::<Vec<_>>(), [(CRD, "widgets.demo.ctop.dev")]);
    }

    #[test]
    fn the_converting_crds_come_from_the_spec() {
        let spec: OperatorSpec = serde_json::from_value(serde_json::json!({
            "resources": [
                {"apiVersion": "demo.ctop.dev/v2", "group": "demo.ctop.dev", "version": "v2", "kind": "Widget",
                 "plural": "widgets", "singular": "widget", "schema": {"type": "object"},
                 "versions": [
                    {"name": "v2", "served": true, "storage": true, "schema": {"type": "object"}},
                    {"name": "v1", "served": true, "storage": false, "schema": {"type": "object"}}]},
                {"apiVersion": "demo.ctop.dev/v1", "group": "demo.ctop.dev", "version": "v1", "kind": "Gadget",
                 "plural": "gadgets", "singular": "gadget", "schema": {"type": "object"}}],
            "controllers": [{"index": 0, "name": "gadget", "for": {"apiVersion": "demo.ctop.dev/v1", "kind": "Gadget"},
                "handlers": ["validate"]}],
        }))
        .expect("spec");
        assert_eq!(
            Configurations::for_spec("op", &spec),
            Configurations {
                validating: Some("op".into()),
                mutating: None,
                crds: vec!["widgets.demo.ctop.dev".into()]
            }
        );
        assert!(crate::converts(&spec));
        assert!(!crate::converts(&OperatorSpec::default()));
    }

    #[test]
    fn set_all_reports_a_change_only_when_a_slot_differs() {
        let want = ByteString(b"ca".to_vec());
        let mut slots = [None, Some(want.clone())];
        assert!(set_all(slots.iter_mut(), &want));
        assert_eq!(slots, [Some(want.clone()), Some(want.clone())]);
        assert!(!set_all(slots.iter_mut(), &want));
        assert!(!set_all(std::iter::empty(), &want), "a configuration without webhooks is current");
    }
}

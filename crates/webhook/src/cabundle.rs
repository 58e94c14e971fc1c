//! Put a self-issued CA into the webhook configurations the operator owns, so the API
//! server trusts the certificate the operator issued itself at startup.
//!
//! Only the named configurations are touched (the generated RBAC allows exactly those
//! names), and in them only `webhooks[*].clientConfig.caBundle`. Which ones are looked at
//! follows the routes ([`Configurations::for_routes`]): the ValidatingWebhookConfiguration
//! when a route validates, the MutatingWebhookConfiguration when one mutates, as
//! [`configurations()`](crate::configurations) writes them, so a validate-only operator
//! never looks for a mutating one.
//!
//! [`patch_ca_bundle`] looks once and reports what it found ([`Looked`]); a configuration
//! that does not exist is [`Found::Missing`], not an error: nothing calls the operator
//! through it. [`CaBundleKeeper`] looks again and again (`ctop run` every 10 s) and keeps
//! the log quiet: a warning when an expected configuration goes missing, one info line when
//! it is back, nothing while it stays away.

use std::time::Duration;

use k8s_openapi::ByteString;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use kube::api::{Api, PostParams};

use crate::routes::{HandlerKind, Route};

const VALIDATING: &str = "ValidatingWebhookConfiguration";
const MUTATING: &str = "MutatingWebhookConfiguration";

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

/// Which configurations to patch (`None` is not looked at).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Configurations {
    /// The `ValidatingWebhookConfiguration`'s name.
    pub validating: Option<String>,
    /// The `MutatingWebhookConfiguration`'s name.
    pub mutating: Option<String>,
}

impl Configurations {
    /// The configurations called `name` that `routes` produce: the validating one when a
    /// route validates, the mutating one when a route mutates (what
    /// [`configurations()`](crate::configurations) writes for them).
    #[must_use]
    pub fn for_routes(name: &str, routes: &[Route]) -> Self {
        let has = |handler| routes.iter().any(|r| r.handler == handler).then(|| name.to_owned());
        Self { validating: has(HandlerKind::Validate), mutating: has(HandlerKind::Mutate) }
    }

    /// Whether no configuration is named, so there is nothing to look after.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.validating.is_none() && self.mutating.is_none()
    }

    /// `(kind, name)` of each named configuration, validating first.
    fn named(&self) -> impl Iterator<Item = (&'static str, &str)> {
        [(VALIDATING, &self.validating), (MUTATING, &self.mutating)]
            .into_iter()
            .filter_map(|(kind, name)| name.as_deref().map(|n| (kind, n)))
    }
}

/// What one look at a configuration found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Found {
    /// Every webhook in it already carries the CA.
    Current,
    /// Its `caBundle` was set to the CA just now.
    Set,
    /// It does not exist (not applied yet, or deleted): nothing calls the operator through it.
    Missing,
}

/// One configuration looked at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Looked {
    /// `ValidatingWebhookConfiguration` or `MutatingWebhookConfiguration`.
    pub kind: &'static str,
    /// Its name.
    pub name: String,
    /// What was found.
    pub found: Found,
}

/// Set `caBundle` of every webhook in the named configurations to `ca_pem`, retrying a few
/// times on write conflicts. Returns what was found in each named configuration, validating
/// first; an unnamed one is not looked at. Stops at the first error.
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

/// A change in whether a configuration exists, which [`CaBundleKeeper::check`] logs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    /// An expected configuration is not there (at the first look, or since the last one):
    /// logged once as a warning, while the webhook cannot be called through it.
    WentMissing,
    /// A configuration that was missing is there again: logged at info.
    CameBack,
}

/// One configuration [`CaBundleKeeper::check`] looked at, and what it logged about it
/// besides setting the CA.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Checked {
    /// What was found.
    pub looked: Looked,
    /// Whether it went missing or came back with this look.
    pub change: Option<Change>,
}

/// Keeps the CA in the configurations, looking again every so often ([`CaBundleKeeper::run`]),
/// since a configuration may be applied after the operator starts or re-applied without
/// the CA. Only the configurations it was given are looked at (build them with
/// [`Configurations::for_routes`]); a missing one is warned about once, not at every look.
pub struct CaBundleKeeper {
    client: kube::Client,
    targets: Configurations,
    ca_pem: String,
    /// Kinds found missing at their last look (already warned about).
    missing: Vec<&'static str>,
}

impl CaBundleKeeper {
    /// Keep `ca_pem` in `targets`.
    #[must_use]
    pub fn new(client: kube::Client, targets: Configurations, ca_pem: String) -> Self {
        Self { client, targets, ca_pem, missing: Vec::new() }
    }

    /// The configurations looked after.
    #[must_use]
    pub fn targets(&self) -> &Configurations {
        &self.targets
    }

    /// Look once: set the CA where it is not, warn about a configuration that went missing,
    /// tell when one is back. Returns each configuration looked at (validating first), or
    /// the first API error.
    pub async fn check(&mut self) -> Result<Vec<Checked>, CaBundleError> {
        let looked = patch_ca_bundle(&self.client, &self.targets, &self.ca_pem).await?;
        Ok(looked.into_iter().map(|l| self.note(l)).collect())
    }

    fn note(&mut self, looked: Looked) -> Checked {
        let was_missing = self.missing.contains(&looked.kind);
        let change = match (looked.found, was_missing) {
            (Found::Missing, false) => {
                self.missing.push(looked.kind);
                tracing::warn!(
                    kind = looked.kind,
                    name = looked.name,
                    "the webhook configuration does not exist, so its caBundle cannot be set; it is set as \
                     soon as the configuration appears"
                );
                Some(Change::WentMissing)
            }
            (Found::Current | Found::Set, true) => {
                self.missing.retain(|k| *k != looked.kind);
                tracing::info!(
                    kind = looked.kind,
                    name = looked.name,
                    "the webhook configuration exists again"
                );
                Some(Change::CameBack)
            }
            _ => None,
        };
        Checked { looked, change }
    }

    /// [`check`](Self::check) now and then every `every`, for ever (abort the task to stop).
    /// An API error is logged at each look that meets it.
    pub async fn run(mut self, every: Duration) {
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            if let Err(e) = self.check().await {
                tracing::warn!(
                    error = %e,
                    retry_in = ?every,
                    "cannot set the webhook configurations' caBundle"
                );
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
        let both = Configurations { validating: Some("op".into()), mutating: Some("op".into()) };
        let validate = route(HandlerKind::Validate);
        let mutate = route(HandlerKind::Mutate);
        assert_eq!(
            Configurations::for_routes("op", std::slice::from_ref(&validate)),
            Configurations { validating: Some("op".into()), mutating: None }
        );
        assert_eq!(
            Configurations::for_routes("op", std::slice::from_ref(&mutate)),
            Configurations { validating: None, mutating: Some("op".into()) }
        );
        assert_eq!(Configurations::for_routes("op", &[validate, mutate]), both);
        assert!(Configurations::for_routes("op", &[]).is_empty());
        assert!(!both.is_empty());
        assert_eq!(both.named().collect::<Vec<_>>(), [(VALIDATING, "op"), (MUTATING, "op")]);
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

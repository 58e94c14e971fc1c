//! The kinds the world's API server serves, by name, from discovery: what lets a test
//! name an object by its kind alone.

use std::collections::BTreeMap;

use ctop_core::OperatorSpec;
use kube::Client;
use kube::api::ApiResource;
use kube::discovery::{Discovery, Scope};

/// A kind the API server serves.
#[derive(Clone, Debug)]
pub struct Kind {
    /// How to reach it.
    pub ar: ApiResource,
    /// Whether its objects live in namespaces.
    pub namespaced: bool,
    /// Whether it has a `status` subresource (status is then written only through it).
    pub status: bool,
}

/// Every served kind, by name.
#[derive(Default)]
pub(super) struct Kinds {
    /// By kind, in each group's preferred version; several when groups share a kind name.
    by_kind: BTreeMap<String, Vec<Kind>>,
    /// By kind, in the groups' other versions.
    other_versions: BTreeMap<String, Vec<Kind>>,
}

impl Kinds {
    /// What `client`'s API server serves now.
    pub(super) async fn discover(client: &Client) -> Result<Self, kube::Error> {
        let discovery = Discovery::new(client.clone()).run().await?;
        let mut kinds = Kinds::default();
        for group in discovery.groups() {
            let preferred = group.preferred_version_or_latest().to_owned();
            for (ar, caps) in group.recommended_resources() {
                let (namespaced, status) = (caps.scope == Scope::Namespaced, has_status(&caps));
                kinds.by_kind.entry(ar.kind.clone()).or_default().push(Kind { ar, namespaced, status });
            }
            // The other versions of a group's kinds (a resource with several versions):
            // reached only when named with their apiVersion.
            for version in group.versions().filter(|v| **v != preferred) {
                for (ar, caps) in group.versioned_resources(version) {
                    let (namespaced, status) = (caps.scope == Scope::Namespaced, has_status(&caps));
                    kinds.other_versions.entry(ar.kind.clone()).or_default().push(Kind {
                        ar,
                        namespaced,
                        status,
                    });
                }
            }
        }
        Ok(kinds)
    }

    /// The kind `api_version`/`kind` names (the only one of that name when `api_version` is
    /// `None`; the one `spec` defines when several groups serve the name).
    pub(super) fn lookup(
        &self,
        spec: &OperatorSpec,
        api_version: Option<&str>,
        kind: &str,
    ) -> Result<Option<Kind>, String> {
        let Some(all) = self.by_kind.get(kind) else { return Ok(None) };
        let mut found: Vec<&Kind> =
            all.iter().filter(|k| api_version.is_none_or(|v| k.ar.api_version == v)).collect();
        if found.is_empty()
            && let Some(v) = api_version
        {
            let others = self.other_versions.get(kind).into_iter().flatten();
            found = others.filter(|k| k.ar.api_version == v).collect();
        }
        match found.as_slice() {
            [] => Ok(None),
            [one] => Ok(Some((*one).clone())),
            many => {
                // A kind the script defines wins over a built-in of the same name.
                let own = many.iter().find(|k| {
                    spec.resources.iter().any(|r| r.api_version == k.ar.api_version && r.kind == k.ar.kind)
                });
                match own {
                    Some(k) => Ok(Some((*k).clone())),
                    None => Err(format!(
                        "the kind {kind} is served by several groups ({}): name its apiVersion",
                        many.iter().map(|k| k.ar.api_version.as_str()).collect::<Vec<_>>().join(", ")
                    )),
                }
            }
        }
    }
}

/// Whether a discovered resource has a `status` subresource.
fn has_status(caps: &kube::discovery::ApiCapabilities) -> bool {
    caps.subresources.iter().any(|(ar, _)| ar.plural == "status")
}

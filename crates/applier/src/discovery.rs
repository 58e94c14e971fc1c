//! API discovery of children's kinds, cached for the life of the applier.
//!
//! Only successful answers are cached: a kind whose CRD is installed later is found on the
//! next pass. An entry is dropped when the API server answers 404 for its resource (the CRD
//! was removed).

use foldhash::HashMap;

use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind};
use kube::discovery::{ApiCapabilities, Scope};
use parking_lot::Mutex;

use crate::applyset::GroupKind;

/// A resolved kind: its REST resource and what matters of its capabilities.
#[derive(Clone, Debug)]
pub(crate) struct Resolved {
    pub(crate) resource: ApiResource,
    pub(crate) namespaced: bool,
    /// Whether it has a status subresource (then `metadata.generation` counts every
    /// change outside metadata and status).
    pub(crate) status: bool,
}

impl Resolved {
    fn new(resource: ApiResource, caps: &ApiCapabilities) -> Self {
        Self {
            resource,
            namespaced: caps.scope == Scope::Namespaced,
            status: caps.subresources.iter().any(|(sub, _)| sub.plural == "status"),
        }
    }

    /// `namespace` when this kind is namespaced (a cluster-scoped kind has none).
    pub(crate) fn scope<'a>(&self, namespace: Option<&'a str>) -> Option<&'a str> {
        namespace.filter(|_| self.namespaced)
    }

    /// Send a patch of the object `name` in `namespace` (of its `subresource`, when given)
    /// and read the answer as `T` (see `answer`).
    pub(crate) async fn patch<T: serde::de::DeserializeOwned, P: serde::Serialize + std::fmt::Debug>(
        &self,
        client: &Client,
        namespace: Option<&str>,
        subresource: Option<&str>,
        name: &str,
        params: &kube::api::PatchParams,
        patch: &kube::api::Patch<P>,
    ) -> Result<T, kube::Error> {
        crate::answer::patch(client, &self.resource, self.scope(namespace), subresource, name, params, patch)
            .await
    }

    /// A dynamic API for this kind in `namespace` (or cluster-wide).
    pub(crate) fn api(&self, client: &Client, namespace: Option<&str>) -> Api<DynamicObject> {
        match namespace {
            Some(ns) if self.namespaced => Api::namespaced_with(client.clone(), ns, &self.resource),
            _ => Api::all_with(client.clone(), &self.resource),
        }
    }
}

/// The discovery cache, shared by an [`Applier`](crate::Applier) and its
/// [`StatusWriter`](crate::StatusWriter)s.
pub(crate) struct Discovery {
    client: Client,
    by_gvk: Mutex<HashMap<(String, String), Resolved>>,
    by_gk: Mutex<HashMap<GroupKind, Resolved>>,
}

impl Discovery {
    pub(crate) fn new(client: Client) -> Self {
        Self { client, by_gvk: Mutex::default(), by_gk: Mutex::default() }
    }

    /// Resolve `apiVersion` + `kind`.
    pub(crate) async fn kind(&self, api_version: &str, kind: &str) -> Result<Resolved, kube::Error> {
        let key = (api_version.to_owned(), kind.to_owned());
        if let Some(hit) = self.by_gvk.lock().get(&key) {
            return Ok(hit.clone());
        }
        let (group, version) = match api_version.split_once('/') {
            Some((g, v)) if !g.is_empty() && !v.is_empty() && !v.contains('/') => (g, v),
            None if !api_version.is_empty() => ("", api_version),
            _ => {
                return Err(kube::Error::Discovery(kube::error::DiscoveryError::InvalidGroupVersion(
                    api_version.to_owned(),
                )));
            }
        };
        let gvk = GroupVersionKind::gvk(group, version, kind);
        let (resource, caps) =
            kube::discovery::pinned_kind(&self.client, &gvk).await.map_err(|e| match e {
                // kube-rs names the kind with its `Debug` form; say it the way kubectl would.
                kube::Error::Discovery(kube::error::DiscoveryError::MissingKind(_)) => {
                    kube::Error::Discovery(kube::error::DiscoveryError::MissingKind(format!(
                        "{kind} in {api_version}"
                    )))
                }
                other => other,
            })?;
        let resolved = Resolved::new(resource, &caps);
        self.by_gvk.lock().insert(key, resolved.clone());
        Ok(resolved)
    }

    /// Resolve a group-kind at the group's preferred version; `None` when the API server
    /// does not serve it (any more).
    pub(crate) async fn group_kind(&self, gk: &GroupKind) -> Result<Option<Resolved>, kube::Error> {
        if let Some(hit) = self.by_gk.lock().get(gk) {
            return Ok(Some(hit.clone()));
        }
        let group = match kube::discovery::group(&self.client, &gk.group).await {
            Ok(group) => group,
            Err(e) if is_missing(&e) => return Ok(None),
            Err(e) => return Err(e),
        };
        let Some((resource, caps)) = group.recommended_kind(&gk.kind) else { return Ok(None) };
        let resolved = Resolved::new(resource, &caps);
        self.by_gk.lock().insert(gk.clone(), resolved.clone());
        Ok(Some(resolved))
    }

    /// Drop what is cached for the kind of `resource` (its CRD may be gone).
    pub(crate) fn forget(&self, resource: &ApiResource) {
        self.by_gvk
            .lock()
            .retain(|_, r| r.resource.plural != resource.plural || r.resource.group != resource.group);
        self.by_gk
            .lock()
            .retain(|_, r| r.resource.plural != resource.plural || r.resource.group != resource.group);
    }
}

/// Whether discovery (or a request) says the kind is not served: a missing group, version,
/// kind or resource, or a 404.
pub(crate) fn is_missing(e: &kube::Error) -> bool {
    use kube::error::DiscoveryError as D;
    match e {
        kube::Error::Discovery(D::MissingKind(_) | D::MissingApiGroup(_) | D::MissingResource(_)) => true,
        kube::Error::Discovery(D::EmptyApiGroup(_) | D::InvalidGroupVersion(_)) => true,
        kube::Error::Api(s) => s.code == 404,
        _ => false,
    }
}

/// The HTTP status code of an API error.
pub(crate) fn code(e: &kube::Error) -> Option<u16> {
    match e {
        kube::Error::Api(s) => Some(s.code),
        _ => None,
    }
}

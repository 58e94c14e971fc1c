//! What the applier reads of a controller's caches: [`CachedMeta`], an object's metadata read
//! in place, and [`ChildCache`], the caches of the kinds it applies (see
//! [`crate::Applier::apply_cached`]).

use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::Resource;

use crate::object::ChildRef;

/// The metadata of an object a cache holds, read in place: `Arc<DynamicObject>` from a
/// kube-runtime reflector store (or the `Arc` of any typed store) coerces to
/// `Arc<dyn CachedMeta>`, so a [`ChildCache`] hands out its objects without copying them.
/// A cache with its own object type implements the accessors over what it keeps.
pub trait CachedMeta: Send + Sync {
    /// `metadata.name`.
    fn name(&self) -> Option<&str>;
    /// `metadata.namespace`.
    fn namespace(&self) -> Option<&str>;
    /// `metadata.uid`.
    fn uid(&self) -> Option<&str>;
    /// `metadata.resourceVersion`.
    fn resource_version(&self) -> Option<&str>;
    /// `metadata.generation`.
    fn generation(&self) -> Option<i64>;
    /// Whether `metadata.deletionTimestamp` is set.
    fn is_deleting(&self) -> bool;
    /// The value of the label `key`.
    fn label(&self, key: &str) -> Option<&str>;
    /// The value of the annotation `key`.
    fn annotation(&self, key: &str) -> Option<&str>;
    /// `metadata.ownerReferences`.
    fn owner_references(&self) -> &[OwnerReference];
}

impl<K: Resource + Send + Sync> CachedMeta for K {
    fn name(&self) -> Option<&str> {
        Meta(self.meta()).name()
    }
    fn namespace(&self) -> Option<&str> {
        Meta(self.meta()).namespace()
    }
    fn uid(&self) -> Option<&str> {
        Meta(self.meta()).uid()
    }
    fn resource_version(&self) -> Option<&str> {
        Meta(self.meta()).resource_version()
    }
    fn generation(&self) -> Option<i64> {
        self.meta().generation
    }
    fn is_deleting(&self) -> bool {
        self.meta().deletion_timestamp.is_some()
    }
    fn label(&self, key: &str) -> Option<&str> {
        Meta(self.meta()).label(key)
    }
    fn annotation(&self, key: &str) -> Option<&str> {
        Meta(self.meta()).annotation(key)
    }
    fn owner_references(&self) -> &[OwnerReference] {
        self.meta().owner_references.as_deref().unwrap_or_default()
    }
}

/// [`CachedMeta`] over a bare `ObjectMeta` (what [`crate::Applier::apply_observed`]'s closure and a
/// metadata `GET` return).
#[derive(Clone, Copy)]
pub(crate) struct Meta<'a>(pub(crate) &'a ObjectMeta);

impl<'a> Meta<'a> {
    fn name(self) -> Option<&'a str> {
        self.0.name.as_deref()
    }
    fn namespace(self) -> Option<&'a str> {
        self.0.namespace.as_deref()
    }
    fn uid(self) -> Option<&'a str> {
        self.0.uid.as_deref()
    }
    fn resource_version(self) -> Option<&'a str> {
        self.0.resource_version.as_deref()
    }
    fn label(self, key: &str) -> Option<&'a str> {
        self.0.labels.as_ref()?.get(key).map(String::as_str)
    }
    fn annotation(self, key: &str) -> Option<&'a str> {
        self.0.annotations.as_ref()?.get(key).map(String::as_str)
    }
}

impl CachedMeta for Meta<'_> {
    fn name(&self) -> Option<&str> {
        Meta::name(*self)
    }
    fn namespace(&self) -> Option<&str> {
        Meta::namespace(*self)
    }
    fn uid(&self) -> Option<&str> {
        Meta::uid(*self)
    }
    fn resource_version(&self) -> Option<&str> {
        Meta::resource_version(*self)
    }
    fn generation(&self) -> Option<i64> {
        self.0.generation
    }
    fn is_deleting(&self) -> bool {
        self.0.deletion_timestamp.is_some()
    }
    fn label(&self, key: &str) -> Option<&str> {
        Meta::label(*self, key)
    }
    fn annotation(&self, key: &str) -> Option<&str> {
        Meta::annotation(*self, key)
    }
    fn owner_references(&self) -> &[OwnerReference] {
        self.0.owner_references.as_deref().unwrap_or_default()
    }
}

/// A controller's caches of the kinds it applies (e.g. kube-runtime reflector stores), for
/// [`crate::Applier::apply_cached`]: the unchanged-skip and the search for former children then
/// read memory instead of the API server.
pub trait ChildCache: Send + Sync {
    /// The cached `child`, or `None` when the cache does not have it (the child is then
    /// applied).
    fn get(&self, child: &ChildRef) -> Option<Arc<dyn CachedMeta>>;
    /// The cached objects of `api_version`/`kind` in `namespace` (`None`: cluster-scoped)
    /// labelled `applyset.kubernetes.io/part-of=<set_id>`, or `None` when this kind is not
    /// cached (it is then listed from the API server). A cache that lags cannot make a prune
    /// miss a child the applier applied itself: one it remembers that the cache does not
    /// show is read from the API server; deletes carry uid and resourceVersion preconditions.
    fn members(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        set_id: &str,
    ) -> Option<Vec<Arc<dyn CachedMeta>>>;
    /// Whether the cache holds every object of `child`'s kind in its namespace (a watch
    /// without a label selector over that namespace), so that [`ChildCache::get`] finding
    /// nothing means the object does not exist. When it does not (the default), a child
    /// the cache does not have is looked up with a `GET` before its first apply, so that
    /// an object someone else made is never adopted (see [`crate::Desired`]).
    fn knows_all(&self, child: &ChildRef) -> bool {
        let _ = child;
        false
    }
}

//! The caches as handlers read them: [`CacheView`] serves `getObserved` / `listObserved`
//! and records each lookup ([`Recording`], what a reconcile's fingerprint is made of);
//! [`Children`] serves the applier's unchanged-skip and ApplySet membership.

use std::hash::{Hash as _, Hasher as _};
use std::sync::Arc;

use ctop_applier::{CachedMeta, ChildCache, ChildRef};
use parking_lot::Mutex;

use crate::informer::Cached;
use crate::object::Object;

/// One lookup a handler call made, with what it found.
#[derive(Debug)]
pub(crate) enum Read {
    /// `getObserved` of one object: its resourceVersion, `None` when it was not there.
    Get { cache: usize, namespace: Option<String>, name: String, version: Option<String> },
    /// `listObserved` of a kind (in `namespace`, when the call is restricted to one).
    List { cache: usize, namespace: Option<String>, digest: Digest },
}

/// What a list held: its size and an order-independent sum of its members' identities.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(crate) struct Digest {
    count: usize,
    sum: u64,
}

impl Digest {
    pub(crate) fn add(&mut self, o: &Object) {
        let mut h = std::hash::DefaultHasher::new();
        o.namespace().hash(&mut h);
        o.name().hash(&mut h);
        o.uid().hash(&mut h);
        o.resource_version().hash(&mut h);
        self.count += 1;
        self.sum = self.sum.wrapping_add(h.finish());
    }
}

/// What one handler call read, and whether it did anything nondeterministic; kept by the
/// call's [`CacheView`].
#[derive(Debug, Default)]
pub(crate) struct Recording {
    pub(crate) reads: Vec<Read>,
    pub(crate) nondeterministic: Option<&'static str>,
}

impl Read {
    /// Whether the caches still answer this lookup as they did.
    pub(crate) fn holds(&self, caches: &[Cached]) -> bool {
        match self {
            Read::Get { cache, namespace, name, version } => caches.get(*cache).is_some_and(|c| {
                let found = c.store.get(namespace.as_deref(), name);
                found.as_ref().and_then(|o| o.resource_version()) == version.as_deref()
            }),
            Read::List { cache, namespace, digest } => {
                caches.get(*cache).is_some_and(|c| list_digest(c, namespace.as_deref()) == *digest)
            }
        }
    }
}

/// The digest of what `listObserved` of `c` returns to a call restricted to `namespace`.
fn list_digest(c: &Cached, namespace: Option<&str>) -> Digest {
    let mut d = Digest::default();
    for o in c.store.in_namespace(namespace.filter(|_| c.namespaced)) {
        d.add(&o);
    }
    d
}

/// Objects are looked up by key and serialized only when the script asks for them. Every
/// lookup, and whether the call did anything nondeterministic, is recorded for the
/// reconcile's fingerprint (see `fingerprint`).
pub(crate) struct CacheView {
    caches: Arc<Vec<Cached>>,
    /// The namespace namespaced kinds are restricted to, if any.
    namespace: Option<String>,
    recording: Mutex<Recording>,
    /// Where the call ran, once the runtime said (see [`ctop_core::Observer::ran`]).
    path: Mutex<Option<ctop_core::CallPath>>,
}

impl CacheView {
    /// A view of `caches` for a handler call about `object` (of a kind that is
    /// `namespaced` or not): namespaced kinds are read in its namespace.
    pub(crate) fn new(caches: Arc<Vec<Cached>>, namespaced: bool, object: Option<&Object>) -> Self {
        let namespace = object.and_then(Object::namespace).map(str::to_owned).filter(|_| namespaced);
        Self { caches, namespace, recording: Mutex::default(), path: Mutex::default() }
    }

    /// Where the call ran: `None` when the handlers did not say (they are not a script).
    pub(crate) fn take_path(&self) -> Option<ctop_core::CallPath> {
        self.path.lock().take()
    }

    /// What the call read so far.
    pub(crate) fn take_recording(&self) -> Recording {
        std::mem::take(&mut *self.recording.lock())
    }

    /// What the call read so far, as the reconcile history keeps it.
    pub(crate) fn history_reads(&self) -> Vec<crate::history::Read> {
        use crate::history::{Read as Noted, ReadCall};
        let recording = self.recording.lock();
        let kind = |i: usize| self.caches.get(i).map(|c| c.key.clone()).unwrap_or_default();
        recording
            .reads
            .iter()
            .map(|r| match r {
                Read::Get { cache, namespace, name, version } => Noted {
                    call: ReadCall::Get,
                    kind: kind(*cache),
                    namespace: namespace.clone(),
                    name: Some(name.clone()),
                    resource_version: version.clone(),
                    count: None,
                },
                Read::List { cache, namespace, digest } => Noted {
                    call: ReadCall::List,
                    kind: kind(*cache),
                    namespace: namespace.clone(),
                    name: None,
                    resource_version: None,
                    count: Some(digest.count),
                },
            })
            .collect()
    }

    /// `o` as JSON text with the cache's apiVersion and kind.
    fn json(c: &Cached, o: &Object) -> String {
        o.to_json_as(&c.ar.api_version, &c.ar.kind)
    }
}

impl ctop_core::Observer for CacheView {
    fn list(&self, kind: &str) -> Option<String> {
        let i = self.caches.iter().position(|c| c.key == kind)?;
        let c = &self.caches[i];
        let mut digest = Digest::default();
        let namespace = self.namespace.as_deref().filter(|_| c.namespaced);
        // In namespace-then-name order: the store's maps have none, and a script's output
        // may follow the order it reads (a recording replays only if two runs agree).
        let mut objects = c.store.in_namespace(namespace);
        objects.sort_unstable_by(|a, b| (a.namespace(), a.name()).cmp(&(b.namespace(), b.name())));
        let items: Vec<String> = objects
            .iter()
            .map(|o| {
                digest.add(o);
                Self::json(c, o)
            })
            .collect();
        self.recording.lock().reads.push(Read::List { cache: i, namespace: self.namespace.clone(), digest });
        Some(format!("[{}]", items.join(",")))
    }

    fn get(&self, kind: &str, namespace: Option<&str>, name: &str) -> Option<Option<String>> {
        let i = self.caches.iter().position(|c| c.key == kind)?;
        let c = &self.caches[i];
        let namespace = match (c.namespaced, namespace) {
            (true, Some(ns)) => {
                if self.namespace.as_deref().is_some_and(|own| own != ns) {
                    return Some(None);
                }
                Some(ns)
            }
            (true, None) => return Some(None),
            (false, _) => None,
        };
        let found = c.store.get(namespace, name);
        let version = found.as_ref().and_then(|o| o.resource_version().map(str::to_owned));
        let (namespace, name) = (namespace.map(str::to_owned), name.to_owned());
        self.recording.lock().reads.push(Read::Get { cache: i, namespace, name, version });
        Some(found.map(|o| Self::json(c, &o)))
    }

    fn nondeterministic(&self, what: &'static str) {
        let mut r = self.recording.lock();
        if r.nondeterministic.is_none() {
            r.nondeterministic = Some(what);
        }
    }

    /// An attempt starts: what an earlier, stopped attempt read is forgotten.
    fn runtime(&self, _serial: u64, _call: u64) {
        *self.recording.lock() = Recording::default();
    }

    /// The caches are in memory; a read holds a store's lock only to copy out of it.
    fn answers_from_memory(&self) -> bool {
        true
    }

    fn ran(&self, path: ctop_core::CallPath) {
        *self.path.lock() = Some(path);
    }
}

pub(crate) struct Children<'a>(pub(crate) &'a [Cached]);

impl ChildCache for Children<'_> {
    fn get(&self, c: &ChildRef) -> Option<Arc<dyn CachedMeta>> {
        let cache = self.find(&c.api_version, &c.kind)?;
        let ns = c.namespace.as_deref().filter(|_| cache.namespaced);
        Some(cache.store.get(ns, &c.name)?)
    }

    fn members(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        set_id: &str,
    ) -> Option<Vec<Arc<dyn CachedMeta>>> {
        let cache = self.find(api_version, kind)?;
        let label = ctop_applier::applyset::PART_OF_LABEL;
        let labelled = |o: &Object| o.labels().get(label) == Some(set_id);
        if let Some(index) = &cache.sets {
            return Some(
                index
                    .members(set_id)
                    .into_iter()
                    .filter(|(ns, _)| !cache.namespaced || Some(ns.as_str()) == namespace)
                    .filter_map(|(ns, name)| {
                        cache.store.get(Some(ns.as_str()).filter(|_| cache.namespaced), &name)
                    })
                    .filter(|o| labelled(o))
                    .map(|o| o as Arc<dyn CachedMeta>)
                    .collect(),
            );
        }
        Some(
            cache
                .store
                .in_namespace(namespace.filter(|_| cache.namespaced))
                .into_iter()
                .filter(|o| !cache.namespaced || o.namespace() == namespace)
                .filter(|o| labelled(o))
                .map(|o| o as Arc<dyn CachedMeta>)
                .collect(),
        )
    }

    fn knows_all(&self, child: &ChildRef) -> bool {
        self.has_all(child)
    }
}

impl Children<'_> {
    /// Whether the cache of `child`'s kind holds every object there is in its namespace.
    pub(crate) fn has_all(&self, child: &ChildRef) -> bool {
        self.find(&child.api_version, &child.kind).is_some_and(|c| c.knows_all(child.namespace.as_deref()))
    }

    /// The cache of `api_version`/`kind`, found without building its key.
    fn find(&self, api_version: &str, kind: &str) -> Option<&Cached> {
        self.0.iter().find(|x| {
            x.key.len() == api_version.len() + 1 + kind.len()
                && x.key.starts_with(api_version)
                && x.key.ends_with(kind)
                && x.key.as_bytes().get(api_version.len()) == Some(&b'/')
        })
    }
}

#[cfg(test)]
mod tests {
    use ctop_core::Observer as _;
    use kube::core::{ApiResource, GroupVersionKind};
    use kube::runtime::watcher;
    use serde_json::json;

    use super::*;
    use crate::store::Store;

    #[test]
    fn a_list_answers_in_namespace_then_name_order() {
        let store = Store::default();
        for (ns, name) in [("b", "y"), ("a", "z"), ("b", "a"), ("a", "b"), ("c", "m"), ("a", "a")] {
            let o: Object =
                serde_json::from_value(json!({"metadata": {"name": name, "namespace": ns}})).expect("object");
            store.apply(&watcher::Event::Apply(o));
        }
        let ar = ApiResource::from_gvk(&GroupVersionKind::gvk("", "v1", "ConfigMap"));
        let cached = Cached {
            key: "v1/ConfigMap".into(),
            ar,
            namespaced: true,
            store,
            sets: None,
            complete: Some(None),
        };
        let names = |view: &CacheView| -> Vec<String> {
            let text = view.list("v1/ConfigMap").expect("observed");
            let items: Vec<serde_json::Value> = serde_json::from_str(&text).expect("a JSON array");
            items
                .iter()
                .map(|o| {
                    let meta = &o["metadata"];
                    format!(
                        "{}/{}",
                        meta["namespace"].as_str().unwrap_or(""),
                        meta["name"].as_str().unwrap_or("")
                    )
                })
                .collect()
        };
        let caches = Arc::new(vec![cached]);
        let everywhere = CacheView::new(Arc::clone(&caches), false, None);
        assert_eq!(names(&everywhere), ["a/a", "a/b", "a/z", "b/a", "b/y", "c/m"]);
    }
}

//! [`Store`]: the cache of one watched kind, filled from its watch events.
//!
//! Written here rather than taken from kube-runtime's reflector: the reflector keys each
//! entry by an `ObjectRef`, which copies the kind's `ApiResource` (five strings) and the
//! object's name, namespace, uid and resourceVersion into every key — a third of what a
//! cached object costs. This store keys objects by namespace, then name; a namespace's
//! name is kept once. Its semantics are the reflector's: an event is in the store before
//! it is passed on, and a list (the first, or a relist after the watch was lost) replaces
//! the contents all at once, when it ends (`InitDone`).

use foldhash::HashMap;
use std::sync::Arc;

use kube::runtime::watcher;
use parking_lot::RwLock;

use crate::object::Object;

/// The objects of one kind, by namespace (`""` for cluster-scoped ones) and name. Cheap to
/// clone: clones share the contents.
#[derive(Clone, Default)]
pub struct Store {
    inner: Arc<RwLock<Inner>>,
}

type Objects = HashMap<Box<str>, HashMap<Box<str>, Arc<Object>>>;

#[derive(Default)]
struct Inner {
    objects: Objects,
    /// A list being received: it replaces `objects` at its end.
    listing: Option<Objects>,
}

fn insert(objects: &mut Objects, o: Object) {
    let name: Box<str> = o.name().into();
    match objects.get_mut(o.namespace().unwrap_or_default()) {
        Some(names) => {
            names.insert(name, Arc::new(o));
        }
        None => {
            let ns: Box<str> = o.namespace().unwrap_or_default().into();
            objects.entry(ns).or_default().insert(name, Arc::new(o));
        }
    }
}

/// A reference to a [`Store`]'s contents that does not keep them alive (tests use it to
/// tell that a stopped controller freed its caches).
#[cfg(test)]
pub(crate) struct WeakStore(std::sync::Weak<RwLock<Inner>>);

#[cfg(test)]
impl WeakStore {
    /// Whether something still holds the cache's contents.
    pub(crate) fn alive(&self) -> bool {
        self.0.strong_count() > 0
    }
}

impl Store {
    /// A reference that does not keep the contents alive.
    #[cfg(test)]
    pub(crate) fn downgrade(&self) -> WeakStore {
        WeakStore(Arc::downgrade(&self.inner))
    }

    /// Apply one watch event (as kube's reflector does).
    pub fn apply(&self, event: &watcher::Event<Object>) {
        let mut inner = self.inner.write();
        match event {
            watcher::Event::Apply(o) => insert(&mut inner.objects, o.clone()),
            watcher::Event::Delete(o) => {
                let ns = o.namespace().unwrap_or_default();
                if let Some(names) = inner.objects.get_mut(ns) {
                    names.remove(o.name());
                    if names.is_empty() {
                        inner.objects.remove(ns);
                    }
                }
            }
            watcher::Event::Init => inner.listing = Some(Objects::default()),
            watcher::Event::InitApply(o) => {
                let listing = inner.listing.get_or_insert_default();
                insert(listing, o.clone());
            }
            watcher::Event::InitDone => {
                if let Some(listed) = inner.listing.take() {
                    inner.objects = listed;
                }
            }
        }
    }

    /// The object `name` in `namespace` (`None` for a cluster-scoped kind).
    #[must_use]
    pub fn get(&self, namespace: Option<&str>, name: &str) -> Option<Arc<Object>> {
        self.inner.read().objects.get(namespace.unwrap_or_default())?.get(name).cloned()
    }

    /// Every object, in no particular order.
    #[must_use]
    pub fn state(&self) -> Vec<Arc<Object>> {
        self.in_namespace(None)
    }

    /// Every object in `namespace` (all of them for `None`), in no particular order.
    #[must_use]
    pub fn in_namespace(&self, namespace: Option<&str>) -> Vec<Arc<Object>> {
        let inner = self.inner.read();
        match namespace {
            None => inner.objects.values().flat_map(HashMap::values).cloned().collect(),
            Some(ns) => inner.objects.get(ns).map(|m| m.values().cloned().collect()).unwrap_or_default(),
        }
    }

    /// How many objects it holds.
    #[must_use]
    pub fn len(&self) -> usize {
        self.inner.read().objects.values().map(HashMap::len).sum()
    }

    /// Whether it holds none.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(ns: &str, name: &str, rv: &str) -> Object {
        serde_json::from_value(json!({"metadata": {"name": name, "namespace": ns, "resourceVersion": rv}}))
            .expect("object")
    }

    #[test]
    fn a_list_replaces_the_contents_when_it_ends() {
        let store = Store::default();
        store.apply(&watcher::Event::Apply(obj("a", "x", "1")));
        store.apply(&watcher::Event::Apply(obj("b", "x", "2")));
        assert_eq!(
            store.get(Some("a"), "x").and_then(|o| o.resource_version().map(str::to_owned)),
            Some("1".into())
        );
        store.apply(&watcher::Event::Init);
        store.apply(&watcher::Event::InitApply(obj("a", "y", "3")));
        // Until the list ends, readers see the old contents.
        assert_eq!(store.len(), 2);
        assert!(store.get(Some("a"), "y").is_none());
        store.apply(&watcher::Event::InitDone);
        assert_eq!(store.len(), 1);
        assert!(store.get(Some("a"), "x").is_none() && store.get(Some("a"), "y").is_some());
        store.apply(&watcher::Event::Delete(obj("a", "y", "3")));
        assert!(store.is_empty());
        assert!(store.in_namespace(Some("a")).is_empty());
    }

    #[test]
    fn cluster_scoped_objects_are_found_without_a_namespace() {
        let store = Store::default();
        let o: Object = serde_json::from_value(json!({"metadata": {"name": "n1"}})).expect("object");
        store.apply(&watcher::Event::Apply(o));
        assert!(store.get(None, "n1").is_some());
        assert_eq!(store.in_namespace(None).len(), 1);
        assert_eq!(store.state().len(), 1);
    }
}

//! Reconciles skipped when nothing they read changed.
//!
//! A handler's outcome is a function of what it reads: the object, the cached objects it
//! looks up (`getObserved`, `listObserved`, misses included), and the script itself with its
//! `Env` and `Values` — unless it reads the clock, draws randomness or fetches, which the
//! runtime reports ([`ctop_core::Observer::nondeterministic`]). After a reconcile that
//! fully succeeded and did none of those, its [`Fingerprint`] is kept: the object's
//! resourceVersion, each read with the resourceVersion it found (a list by a digest of its
//! members' versions), the handlers in use, and the children applied. When the next
//! trigger of the object finds every one unchanged, and every child still exactly as that
//! apply left it, the last outcome stands: the handler is not called, nothing is written,
//! and the reconcile counts in `ctop_reconcile_skipped_total`.
//!
//! Not kept (the next reconcile always runs the handler): a failed or nondeterministic run,
//! and a run whose outcome patched objects the operator does not own or deleted children,
//! since nothing watched tells when those are undone. Events are published by the run that
//! made them, not again by a skip. Any change to the object (an annotation will do) runs
//! the handler again.

use std::collections::HashMap;
use std::hash::{Hash as _, Hasher as _};
use std::sync::{Arc, Weak};

use ctop_applier::ChildRef;
use ctop_core::Handlers;
use parking_lot::Mutex;

use crate::informer::Cached;
use crate::object::Object;
use crate::observe::Children;
use crate::queue::Next;

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
/// call's `CacheView`.
#[derive(Debug, Default)]
pub(crate) struct Recording {
    pub(crate) reads: Vec<Read>,
    pub(crate) nondeterministic: Option<&'static str>,
}

impl Read {
    /// Whether the caches still answer this lookup as they did.
    fn holds(&self, caches: &[Cached]) -> bool {
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

/// The inputs and the result of an object's last deterministic, successful reconcile.
pub(crate) struct Fingerprint {
    /// The handlers that ran (a replaced script never matches; the weak reference keeps the
    /// address from being reused).
    handlers: Weak<dyn Handlers>,
    uid: Option<String>,
    version: Option<String>,
    reads: Vec<Read>,
    children: Vec<ChildRef>,
    next: Next,
}

impl Fingerprint {
    /// The fingerprint of a run of `handlers` on `owner` that read what `recording` says,
    /// applied `children` and asked for `next`; `None` when the run was nondeterministic.
    pub(crate) fn of(
        handlers: &Arc<dyn Handlers>,
        owner: &Object,
        recording: Recording,
        children: Vec<ChildRef>,
        next: Next,
    ) -> Option<Self> {
        if recording.nondeterministic.is_some() {
            return None;
        }
        Some(Self {
            handlers: Arc::downgrade(handlers),
            uid: owner.uid().map(str::to_owned),
            version: owner.resource_version().map(str::to_owned),
            reads: recording.reads,
            children,
            next,
        })
    }
}

/// The fingerprints of one controller's objects, by key (`namespace/name`).
#[derive(Default)]
pub(crate) struct Fingerprints {
    by_object: Mutex<HashMap<String, Fingerprint>>,
}

impl Fingerprints {
    /// The last outcome's next step, when a reconcile of `owner` by `handlers` now would
    /// read exactly what the last one read and its children are intact (see the module docs).
    pub(crate) fn unchanged(
        &self,
        key: &str,
        owner: &Object,
        handlers: &Arc<dyn Handlers>,
        caches: &[Cached],
        intact: impl FnOnce(&str, &[ChildRef], &Children<'_>) -> bool,
    ) -> Option<Next> {
        // Checked outside the lock (a list digest walks a cache); a key is reconciled by
        // one worker at a time, so nothing else touches its entry meanwhile.
        let fp = self.by_object.lock().remove(key)?;
        let same = fp.version.is_some()
            && fp.version.as_deref() == owner.resource_version()
            && fp.uid.as_deref() == owner.uid()
            && std::ptr::addr_eq(fp.handlers.as_ptr(), Arc::as_ptr(handlers))
            && fp.reads.iter().all(|r| r.holds(caches))
            && fp.uid.as_deref().is_some_and(|uid| intact(uid, &fp.children, &Children(caches)));
        if !same {
            return None;
        }
        let next = fp.next;
        self.by_object.lock().insert(key.to_owned(), fp);
        Some(next)
    }

    /// Keep `fp` for `key`, or forget the key's fingerprint (`None`).
    pub(crate) fn set(&self, key: &str, fp: Option<Fingerprint>) {
        let mut map = self.by_object.lock();
        match fp {
            Some(fp) => {
                map.insert(key.to_owned(), fp);
            }
            None => {
                map.remove(key);
            }
        }
    }
}

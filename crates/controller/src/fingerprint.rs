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

use std::sync::{Arc, Weak};

use ctop_applier::ChildRef;
use ctop_core::Handlers;

use crate::informer::Cached;
use crate::object::Object;
use crate::observe::{Children, Read, Recording};
use crate::queue::Next;

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
    /// The controller keeps the object's `Ready` condition from these children's health.
    ready: bool,
    /// The children's resourceVersions when a skipped reconcile last wrote (or found
    /// current) the `Ready` condition from their health: while they and the object are
    /// unchanged, the condition is too, and the next skip need not work it out again.
    ready_at: Option<Vec<Option<String>>>,
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
            ready: false,
            ready_at: None,
        })
    }

    /// This fingerprint, noting whether the controller keeps the object's `Ready` condition
    /// from its children's health (the outcome did not set it).
    pub(crate) fn keeping_ready(mut self, ready: bool) -> Self {
        self.ready = ready;
        self
    }

    /// Whether the controller keeps the object's `Ready` condition (see `keeping_ready`).
    pub(crate) fn keeps_ready(&self) -> bool {
        self.ready
    }

    /// Whether the `Ready` condition was written from the children at `versions` (see
    /// `ready_at`).
    pub(crate) fn ready_current(&self, versions: &[Option<String>]) -> bool {
        self.ready_at.as_deref() == Some(versions)
    }

    /// The `Ready` condition now says what the children at `versions` say.
    pub(crate) fn ready_written(&mut self, versions: Vec<Option<String>>) {
        self.ready_at = Some(versions);
    }

    /// The children the outcome applied.
    pub(crate) fn children(&self) -> &[ChildRef] {
        &self.children
    }

    /// The step the last outcome asked for, when a reconcile of `owner` by `handlers` now
    /// would read exactly what the run of this fingerprint read and its children are
    /// intact (see the module docs).
    pub(crate) fn holds(
        &self,
        owner: &Object,
        handlers: &Arc<dyn Handlers>,
        caches: &[Cached],
        intact: impl FnOnce(&str, &[ChildRef], &Children<'_>) -> bool,
    ) -> Option<Next> {
        let same = self.version.is_some()
            && self.version.as_deref() == owner.resource_version()
            && self.uid.as_deref() == owner.uid()
            && std::ptr::addr_eq(self.handlers.as_ptr(), Arc::as_ptr(handlers))
            && self.reads.iter().all(|r| r.holds(caches))
            && self.uid.as_deref().is_some_and(|uid| intact(uid, &self.children, &Children(caches)));
        same.then_some(self.next)
    }
}

//! What the store keeps and does for an overlay (a kubesim that a mirror fills with a live
//! cluster's objects): raw puts and takes for imports, which skip every precondition and
//! are never logged nor remembered as deletions; the uids deleted here, which tell the
//! garbage collector which absent owners are really gone; and the request-write log
//! ([`super::writes`]).
//!
//! The uids deleted here are those of objects removed by a committed deletion (a request's,
//! or the cleanup controllers'), not by an unimport: the live cluster deletes those, and
//! its garbage collector decides about their dependents. At most [`DELETED_UIDS`] are
//! kept, the oldest forgotten first; an owner forgotten that way counts as unknown again,
//! which keeps its dependents (the safe side).

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use serde_json::Value;

use super::writes::{RequestWrite, WriteLog};
use super::{Change, EventKind, Location, ObjKey, State, Store, footprint, set_rv, uid_of};
use crate::kinds::registry::StoreKey;

/// How many deleted uids an overlay remembers.
pub const DELETED_UIDS: usize = 100_000;

/// The overlay's part of the store's state.
#[derive(Debug)]
pub(super) struct Overlay {
    /// The uids of objects deleted here.
    pub(super) deleted: DeletedUids,
    /// The request-write log.
    pub(super) writes: WriteLog,
}

/// A bounded set of uids, forgetting the oldest first, each with the request-write log
/// entry of its deletion when that was logged.
#[derive(Debug, Default)]
pub(super) struct DeletedUids {
    seqs: HashMap<String, Option<u64>>,
    order: VecDeque<String>,
}

impl DeletedUids {
    pub(super) fn insert(&mut self, uid: &str, seq: Option<u64>) {
        if self.seqs.insert(uid.to_owned(), seq).is_none() {
            self.order.push_back(uid.to_owned());
        }
        while self.order.len() > DELETED_UIDS {
            if let Some(old) = self.order.pop_front() {
                self.seqs.remove(&old);
            }
        }
    }

    /// An object with `uid` is back (imported again): it is no longer deleted.
    fn forget(&mut self, uid: &str) {
        if self.seqs.remove(uid).is_some() {
            self.order.retain(|u| u != uid);
        }
    }
}

fn overlay_of(st: &State) -> Option<&Overlay> {
    st.overlay.as_ref()
}

impl Store {
    /// Make this the store of an overlay: remember the uids deleted here and log the
    /// attributed writes.
    pub fn enable_overlay(&self) {
        let mut st = self.state.lock();
        if st.overlay.is_none() {
            st.overlay = Some(Overlay { deleted: DeletedUids::default(), writes: WriteLog::new() });
        }
    }

    /// Whether an owner `uid` that is not in the store is gone: always, but in an overlay
    /// only when an object with that uid was deleted here (else it may be a live object of
    /// a kind the mirror does not copy).
    pub fn counts_as_gone(&self, uid: &str) -> bool {
        let st = self.state.lock();
        overlay_of(&st).is_none_or(|o| o.deleted.seqs.contains_key(uid))
    }

    /// The request-write log entry of the deletion of the object with `uid`, when an
    /// overlay deleted and logged it.
    pub fn deletion_seq(&self, uid: &str) -> Option<u64> {
        let st = self.state.lock();
        overlay_of(&st).and_then(|o| o.deleted.seqs.get(uid).copied().flatten())
    }

    /// Store `obj` at `key` whatever is there (an import): ADDED, or MODIFIED with the
    /// replaced object, at the next resourceVersion. Never logged.
    pub fn put(&self, store: &StoreKey, key: ObjKey, mut obj: Value) -> Arc<Change> {
        let bytes = footprint(&obj);
        let mut st = self.state.lock();
        st.rv += 1;
        let rv = st.rv;
        set_rv(&mut obj, rv);
        let obj = Arc::new(obj);
        let old = st.tables.get(store).and_then(|t| t.get(&key)).cloned();
        let loc = Location { store: store.clone(), key: key.clone() };
        Self::index(&mut st, &loc, old.as_deref(), Some(&obj));
        if let (Some(overlay), Some(uid)) = (st.overlay.as_mut(), uid_of(&obj)) {
            overlay.deleted.forget(uid);
        }
        st.tables.entry(store.clone()).or_default().insert(key, obj.clone());
        let kind = if old.is_some() { EventKind::Modified } else { EventKind::Added };
        self.record(
            st,
            Change { rv, store: store.clone(), kind, object: obj, old, logged: None },
            bytes,
            None,
        )
    }

    /// Remove the object at `key` whatever its resourceVersion (an unimport): its DELETED
    /// change, or `None` when there was none. Never logged nor remembered as deleted here.
    pub fn take(&self, store: &StoreKey, key: &ObjKey) -> Option<Arc<Change>> {
        let st = self.state.lock();
        let old = st.tables.get(store).and_then(|t| t.get(key)).cloned()?;
        Some(self.commit_removal(st, store, key, old, None))
    }

    /// The logged request writes after sequence number `after`, oldest first (none
    /// outside an overlay).
    pub fn request_writes_since(&self, after: u64) -> Vec<RequestWrite> {
        let st = self.state.lock();
        overlay_of(&st).map(|o| o.writes.since(after)).unwrap_or_default()
    }

    /// How many request writes the log dropped to stay within its capacity.
    pub fn dropped_request_writes(&self) -> u64 {
        let st = self.state.lock();
        overlay_of(&st).map_or(0, |o| o.writes.dropped())
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Attribution, HistoryLimits, WriteCause, WriteEvent};
    use super::*;
    use serde_json::json;

    fn cm(name: &str, uid: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default", "uid": uid}})
    }

    #[test]
    fn raw_puts_and_takes_are_neither_logged_nor_deletions() {
        let s = Store::new(HistoryLimits::default());
        s.enable_overlay();
        let st: StoreKey = Arc::from("/configmaps");
        let key: ObjKey = ("default".into(), "a".into());
        let added = s.put(&st, key.clone(), cm("a", "u1"));
        assert_eq!((added.kind, added.logged), (EventKind::Added, None));
        let modified = s.put(&st, key.clone(), cm("a", "u2"));
        assert_eq!(modified.kind, EventKind::Modified);
        assert!(s.by_uid("u1").is_none(), "the replaced uid leaves the index");
        assert!(s.by_uid("u2").is_some());
        let taken = s.take(&st, &key).expect("was there");
        assert_eq!(taken.kind, EventKind::Deleted);
        assert!(s.take(&st, &key).is_none());
        assert!(!s.counts_as_gone("u2"), "an unimported owner is not deleted here");
        assert!(s.request_writes_since(0).is_empty());

        let by = Attribution { cause: WriteCause::Request, field_manager: None, user: None };
        let created = s.create(&st, key.clone(), cm("a", "u3"), Some(&by)).expect("create");
        assert_eq!(created.logged, Some(1));
        s.remove(&st, &key, created.rv, Some(&by)).expect("remove");
        assert!(s.counts_as_gone("u3"));
        assert_eq!(s.deletion_seq("u3"), Some(2), "the deletion's log entry");
        let writes = s.request_writes_since(0);
        assert_eq!(
            writes.iter().map(|w| w.event).collect::<Vec<_>>(),
            [WriteEvent::Added, WriteEvent::Deleted]
        );
        // Imported again, the object is back.
        s.put(&st, key, cm("a", "u3"));
        assert!(!s.counts_as_gone("u3"));
        assert_eq!(s.deletion_seq("u3"), None);
    }

    #[test]
    fn without_an_overlay_every_absent_owner_is_gone_and_nothing_is_logged() {
        let s = Store::new(HistoryLimits::default());
        assert!(s.counts_as_gone("never-seen"));
        let st: StoreKey = Arc::from("/configmaps");
        let by = Attribution { cause: WriteCause::Request, field_manager: None, user: None };
        let c = s.create(&st, ("default".into(), "a".into()), cm("a", "u"), Some(&by)).expect("create");
        assert_eq!(c.logged, None);
        assert!(s.request_writes_since(0).is_empty());
    }
}

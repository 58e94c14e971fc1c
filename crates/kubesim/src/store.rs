//! The object store: one global resourceVersion, per-resource ordered tables, the uid and
//! owner indexes, the event history that watches resume from, and list snapshots for
//! consistent paging.
//!
//! Everything here runs under one short lock and never awaits; the request logic that
//! computes new objects lives in [`crate::api`]. The history and what it may cost are in
//! [`history`]; what an overlay adds (raw imports, the uids deleted here, the log of
//! request writes) is in [`overlay`] and [`writes`].

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::sync::Arc;

use imbl::OrdMap;
use parking_lot::{Mutex, MutexGuard};
use serde_json::Value;
use tokio::sync::watch;

use crate::kinds::registry::StoreKey;

mod history;
mod overlay;
mod writes;

use history::History;
pub(crate) use history::footprint;
pub use history::{Batch, HistoryLimits};
pub use writes::{Attribution, CAPACITY as REQUEST_WRITES_KEPT, RequestWrite, WriteCause, WriteEvent};

/// `(namespace, name)`; the namespace is empty for cluster-scoped objects.
pub type ObjKey = (String, String);

/// One table: objects of a resource ordered by namespace then name, like etcd keys.
pub type Table = OrdMap<ObjKey, Arc<Value>>;

/// The kind of change a watch event reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    /// The object was created.
    Added,
    /// The object changed.
    Modified,
    /// The object was removed; the object carries the deletion's resourceVersion.
    Deleted,
}

/// One committed change.
#[derive(Debug)]
pub struct Change {
    /// The resourceVersion of the change.
    pub rv: u64,
    /// The store it happened in.
    pub store: StoreKey,
    /// What happened.
    pub kind: EventKind,
    /// The object after the change (for deletions: as it was, with the deletion's RV).
    pub object: Arc<Value>,
    /// The object before the change, for updates and deletions.
    pub old: Option<Arc<Value>>,
    /// The sequence number of the request-write log entry that records the change, when
    /// an overlay logged it (see [`writes`]).
    pub logged: Option<u64>,
}

/// Where an object lives.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Location {
    /// Its store.
    pub store: StoreKey,
    /// Its key in the store.
    pub key: ObjKey,
}

/// Why a commit did not happen.
#[derive(Debug, PartialEq, Eq)]
pub enum CommitError {
    /// Create found an object with that name.
    Exists,
    /// The object is gone.
    Missing,
    /// The object's resourceVersion is not the one the change was computed from.
    Stale,
}

struct State {
    rv: u64,
    tables: HashMap<StoreKey, Table>,
    uids: HashMap<String, Location>,
    dependents: HashMap<String, BTreeSet<Location>>,
    history: History,
    snapshots: VecDeque<(StoreKey, u64, Table)>,
    /// What an overlay keeps besides (`None` unless [`Store::enable_overlay`]).
    overlay: Option<overlay::Overlay>,
}

/// The store. Cheap to share behind an `Arc`.
pub struct Store {
    state: Mutex<State>,
    /// The resourceVersion of the latest change: watchers wait on it, then read the
    /// history (so that the history is the only buffer of changes).
    latest: watch::Sender<u64>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("rv", &self.state.lock().rv).finish_non_exhaustive()
    }
}

/// What a new watch starts from.
#[derive(Debug)]
pub struct WatchStart {
    /// Objects to send as synthetic ADDED events (initial state), already filtered by store.
    pub initial: Vec<Arc<Value>>,
    /// The resourceVersion after which changes are to be sent: the requested one when
    /// resuming (at most the current one), else the current one. Read them with
    /// [`Store::changes_after`].
    pub from: u64,
    /// The store's resourceVersion when the watch started.
    pub rv: u64,
    /// Changes when a new change was committed; the value is its resourceVersion.
    pub rx: watch::Receiver<u64>,
}

/// How many list snapshots are kept for `continue` tokens.
const SNAPSHOTS: usize = 64;

fn rv_of(obj: &Value) -> u64 {
    obj.pointer("/metadata/resourceVersion").and_then(Value::as_str).and_then(|s| s.parse().ok()).unwrap_or(0)
}

fn owner_uids(obj: &Value) -> Vec<String> {
    obj.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .map(|refs| refs.iter().filter_map(|r| r["uid"].as_str().map(str::to_owned)).collect())
        .unwrap_or_default()
}

/// The uid of an object, if it has one.
pub fn uid_of(obj: &Value) -> Option<&str> {
    obj.pointer("/metadata/uid").and_then(Value::as_str)
}

impl Store {
    /// A store that keeps a history of changes within `limits` for watches.
    pub fn new(limits: HistoryLimits) -> Self {
        Self {
            state: Mutex::new(State {
                rv: 1,
                tables: HashMap::new(),
                uids: HashMap::new(),
                dependents: HashMap::new(),
                history: History::new(limits),
                snapshots: VecDeque::new(),
                overlay: None,
            }),
            latest: watch::Sender::new(1),
        }
    }

    /// One object.
    pub fn get(&self, store: &str, key: &ObjKey) -> Option<Arc<Value>> {
        self.state.lock().tables.get(store).and_then(|t| t.get(key).cloned())
    }

    /// Where the object with `uid` lives, and the object.
    pub fn by_uid(&self, uid: &str) -> Option<(Location, Arc<Value>)> {
        let st = self.state.lock();
        let loc = st.uids.get(uid)?.clone();
        let obj = st.tables.get(&loc.store)?.get(&loc.key)?.clone();
        Some((loc, obj))
    }

    /// The objects whose owner references name `uid`.
    pub fn dependents(&self, uid: &str) -> Vec<(Location, Arc<Value>)> {
        let st = self.state.lock();
        st.dependents
            .get(uid)
            .into_iter()
            .flatten()
            .filter_map(|loc| {
                let obj = st.tables.get(&loc.store)?.get(&loc.key)?.clone();
                Some((loc.clone(), obj))
            })
            .collect()
    }

    /// A consistent snapshot of one table and the resourceVersion it was taken at; the
    /// snapshot is remembered so that `continue` tokens can page through it.
    pub fn snapshot(&self, store: &StoreKey, remember: bool) -> (u64, Table) {
        let mut st = self.state.lock();
        let table = st.tables.get(store).cloned().unwrap_or_default();
        let rv = st.rv;
        if remember && !st.snapshots.iter().any(|(s, r, _)| s == store && *r == rv) {
            if st.snapshots.len() >= SNAPSHOTS {
                st.snapshots.pop_front();
            }
            st.snapshots.push_back((store.clone(), rv, table.clone()));
        }
        (rv, table)
    }

    /// A remembered snapshot, for a `continue` token.
    pub fn remembered(&self, store: &StoreKey, rv: u64) -> Option<Table> {
        let st = self.state.lock();
        st.snapshots.iter().find(|(s, r, _)| s == store && *r == rv).map(|(_, _, t)| t.clone())
    }

    /// Every object of a namespace across all stores (for namespace termination).
    pub fn in_namespace(&self, ns: &str) -> Vec<(Location, Arc<Value>)> {
        let st = self.state.lock();
        let mut out = Vec::new();
        for (store, table) in &st.tables {
            let from = (ns.to_owned(), String::new());
            for (k, v) in table.range(from..) {
                if k.0 != ns {
                    break;
                }
                out.push((Location { store: store.clone(), key: k.clone() }, v.clone()));
            }
        }
        out
    }

    /// Append a change whose object has footprint `object_bytes` to the history (and to
    /// an overlay's request-write log when `by` attributes it), release the lock and wake
    /// the watchers. What the history and the log dropped is freed after the lock is
    /// released: freeing a large object is not free.
    fn record(
        &self,
        mut st: MutexGuard<'_, State>,
        mut change: Change,
        object_bytes: usize,
        by: Option<&Attribution>,
    ) -> Arc<Change> {
        let mut dropped_write = None;
        if let (Some(overlay), Some(by)) = (st.overlay.as_mut(), by) {
            let (seq, dropped) = overlay.writes.push(&change, by);
            change.logged = Some(seq);
            dropped_write = dropped;
        }
        let change = Arc::new(change);
        let evicted = st.history.push(change.clone(), object_bytes);
        if evicted.by_bytes {
            tracing::trace!(
                evicted = evicted.changes.len(),
                kept = st.history.len(),
                bytes = st.history.bytes(),
                "watch history trimmed to its byte limit"
            );
        }
        self.latest.send_replace(change.rv);
        drop(st);
        drop(evicted);
        drop(dropped_write);
        change
    }

    /// The resourceVersion of the latest change.
    pub fn latest_rv(&self) -> u64 {
        self.state.lock().rv
    }

    /// A receiver of the resourceVersion of every later change.
    pub fn subscribe_latest(&self) -> watch::Receiver<u64> {
        self.latest.subscribe()
    }

    /// The number of changes the history keeps and the bytes they are charged for.
    pub fn history_usage(&self) -> (usize, usize) {
        let st = self.state.lock();
        (st.history.len(), st.history.bytes())
    }

    fn index(st: &mut State, loc: &Location, old: Option<&Value>, new: Option<&Value>) {
        if let Some(old) = old {
            // An import may replace an object by one with another uid.
            if let Some(uid) = uid_of(old)
                && new.and_then(uid_of) != Some(uid)
            {
                st.uids.remove(uid);
            }
            for o in owner_uids(old) {
                if let Some(set) = st.dependents.get_mut(&o) {
                    set.remove(loc);
                    if set.is_empty() {
                        st.dependents.remove(&o);
                    }
                }
            }
        }
        if let Some(new) = new {
            if let Some(uid) = uid_of(new) {
                st.uids.insert(uid.to_owned(), loc.clone());
            }
            for o in owner_uids(new) {
                st.dependents.entry(o).or_default().insert(loc.clone());
            }
        }
    }

    /// Store a new object, giving it the next resourceVersion. `by` attributes the change
    /// for an overlay's request-write log (`None`: not a request's).
    pub fn create(
        &self,
        store: &StoreKey,
        key: ObjKey,
        mut obj: Value,
        by: Option<&Attribution>,
    ) -> Result<Arc<Change>, CommitError> {
        let bytes = footprint(&obj);
        let mut st = self.state.lock();
        if st.tables.get(store).is_some_and(|t| t.contains_key(&key)) {
            return Err(CommitError::Exists);
        }
        st.rv += 1;
        let rv = st.rv;
        set_rv(&mut obj, rv);
        let obj = Arc::new(obj);
        let loc = Location { store: store.clone(), key: key.clone() };
        Self::index(&mut st, &loc, None, Some(&obj));
        st.tables.entry(store.clone()).or_default().insert(key, obj.clone());
        Ok(self.record(
            st,
            Change { rv, store: store.clone(), kind: EventKind::Added, object: obj, old: None, logged: None },
            bytes,
            by,
        ))
    }

    /// Replace an object that still has resourceVersion `expected`.
    pub fn update(
        &self,
        store: &StoreKey,
        key: &ObjKey,
        expected: u64,
        mut obj: Value,
        by: Option<&Attribution>,
    ) -> Result<Arc<Change>, CommitError> {
        let bytes = footprint(&obj);
        let mut st = self.state.lock();
        let old = st.tables.get(store).and_then(|t| t.get(key)).cloned().ok_or(CommitError::Missing)?;
        if rv_of(&old) != expected {
            return Err(CommitError::Stale);
        }
        st.rv += 1;
        let rv = st.rv;
        set_rv(&mut obj, rv);
        let obj = Arc::new(obj);
        let loc = Location { store: store.clone(), key: key.clone() };
        Self::index(&mut st, &loc, Some(&old), Some(&obj));
        st.tables.entry(store.clone()).or_default().insert(key.clone(), obj.clone());
        Ok(self.record(
            st,
            Change {
                rv,
                store: store.clone(),
                kind: EventKind::Modified,
                object: obj,
                old: Some(old),
                logged: None,
            },
            bytes,
            by,
        ))
    }

    /// Remove an object that still has resourceVersion `expected`. In an overlay its uid
    /// is remembered as deleted here (see [`Store::counts_as_gone`]).
    pub fn remove(
        &self,
        store: &StoreKey,
        key: &ObjKey,
        expected: u64,
        by: Option<&Attribution>,
    ) -> Result<Arc<Change>, CommitError> {
        let mut st = self.state.lock();
        let old = st.tables.get(store).and_then(|t| t.get(key)).cloned().ok_or(CommitError::Missing)?;
        if rv_of(&old) != expected {
            return Err(CommitError::Stale);
        }
        if let (Some(overlay), Some(uid)) = (st.overlay.as_mut(), uid_of(&old)) {
            // The log entry the deletion is about to get, under the same lock.
            let seq = by.map(|_| overlay.writes.next_seq());
            overlay.deleted.insert(uid, seq);
        }
        Ok(self.commit_removal(st, store, key, old, by))
    }

    /// Remove `old`, the object at `key`, under the lock `st`: the deletion's change.
    fn commit_removal(
        &self,
        mut st: MutexGuard<'_, State>,
        store: &StoreKey,
        key: &ObjKey,
        old: Arc<Value>,
        by: Option<&Attribution>,
    ) -> Arc<Change> {
        st.rv += 1;
        let rv = st.rv;
        let mut gone = (*old).clone();
        set_rv(&mut gone, rv);
        // The tombstone is the old object but for its resourceVersion.
        let bytes = st.history.footprint_of(&old);
        let loc = Location { store: store.clone(), key: key.clone() };
        Self::index(&mut st, &loc, Some(&old), None);
        if let Some(t) = st.tables.get_mut(store) {
            t.remove(key);
        }
        self.record(
            st,
            Change {
                rv,
                store: store.clone(),
                kind: EventKind::Deleted,
                object: Arc::new(gone),
                old: Some(old),
                logged: None,
            },
            bytes,
            by,
        )
    }

    /// Drop a whole table (a CRD went away). No events: its objects were deleted first.
    pub fn drop_table(&self, store: &StoreKey) {
        let mut st = self.state.lock();
        st.tables.remove(store);
    }

    /// Subscribe to changes. `from` is the resourceVersion the client has seen
    /// (`None` for "start with the current state").
    ///
    /// Returns `Err(oldest)` when `from` is older than the history kept.
    pub fn watch(&self, store: &StoreKey, from: Option<u64>) -> Result<WatchStart, u64> {
        let st = self.state.lock();
        let rx = self.latest.subscribe();
        match from {
            None => {
                let initial = st.tables.get(store).map(|t| t.values().cloned().collect()).unwrap_or_default();
                Ok(WatchStart { initial, from: st.rv, rv: st.rv, rx })
            }
            Some(from) => {
                let oldest = st.history.oldest().unwrap_or(st.rv + 1);
                if from + 1 < oldest && from < st.rv {
                    return Err(oldest);
                }
                Ok(WatchStart { initial: Vec::new(), from: from.min(st.rv), rv: st.rv, rx })
            }
        }
    }

    /// The changes of `store` after resourceVersion `after`, at most `max`, for a
    /// watcher to send. `Err(oldest)` when some of them have left the history: the
    /// watcher fell too far behind.
    pub fn changes_after(&self, store: &StoreKey, after: u64, max: usize) -> Result<Batch, u64> {
        let st = self.state.lock();
        st.history.after(store, after, max, st.rv)
    }
}

/// Write `rv` into `metadata.resourceVersion`.
pub fn set_rv(obj: &mut Value, rv: u64) {
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.insert("resourceVersion".into(), Value::String(rv.to_string()));
    }
}

/// The resourceVersion of an object as a number (0 if absent or malformed).
pub fn object_rv(obj: &Value) -> u64 {
    rv_of(obj)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn key(n: &str) -> ObjKey {
        ("default".into(), n.into())
    }

    fn limits(events: usize, bytes: usize) -> HistoryLimits {
        HistoryLimits { events, bytes }
    }

    fn events(limit: usize) -> HistoryLimits {
        limits(limit, usize::MAX)
    }

    /// A ConfigMap of about 100 KB (100 keys of 1 KiB) whose `data.i` is `i`.
    fn big(name: &str, i: usize) -> Value {
        let mut data: serde_json::Map<String, Value> =
            (0..100).map(|k| (format!("k{k:03}"), json!("x".repeat(1024)))).collect();
        data.insert("i".into(), json!(i.to_string()));
        json!({"metadata": {"name": name, "namespace": "default"}, "data": data})
    }

    /// Every change of `store` after `from`, read in small batches as a watcher does.
    fn replay(s: &Store, store: &StoreKey, from: u64) -> Vec<Arc<Change>> {
        let mut out = Vec::new();
        let mut seen = from;
        loop {
            let batch = s.changes_after(store, seen, 7).expect("in history");
            out.extend(batch.changes);
            seen = batch.next;
            if !batch.more {
                return out;
            }
        }
    }

    #[test]
    fn global_rv_and_conflicts() {
        let s = Store::new(events(100));
        let st: StoreKey = Arc::from("/configmaps");
        let a =
            s.create(&st, key("a"), json!({"metadata": {"name": "a", "uid": "u1"}}), None).expect("create");
        assert_eq!(a.rv, 2);
        assert_eq!(s.create(&st, key("a"), json!({"metadata": {}}), None).err(), Some(CommitError::Exists));
        assert_eq!(
            s.update(&st, &key("a"), 1, json!({"metadata": {}}), None).err(),
            Some(CommitError::Stale)
        );
        let b = s
            .update(&st, &key("a"), 2, json!({"metadata": {"name": "a", "uid": "u1"}}), None)
            .expect("update");
        assert_eq!(b.rv, 3);
        let d = s.remove(&st, &key("a"), 3, None).expect("remove");
        assert_eq!(d.object["metadata"]["resourceVersion"], "4");
        assert!(s.by_uid("u1").is_none());
    }

    #[test]
    fn watch_resume_and_expiry() {
        let s = Store::new(events(2));
        let st: StoreKey = Arc::from("/configmaps");
        for n in ["a", "b", "c"] {
            s.create(&st, key(n), json!({"metadata": {"name": n}}), None).expect("create");
        }
        // rv is 4, history holds rv 3 and 4.
        assert_eq!(s.watch(&st, Some(1)).err(), Some(3));
        let w = s.watch(&st, Some(2)).expect("in history");
        assert_eq!(w.from, 2);
        assert_eq!(replay(&s, &st, w.from).len(), 2);
        let w = s.watch(&st, None).expect("fresh");
        assert_eq!(w.initial.len(), 3);
        assert!(replay(&s, &st, w.from).is_empty());
        // A watcher that has not read rv 3 yet fell behind once it leaves the history.
        s.create(&st, key("d"), json!({"metadata": {"name": "d"}}), None).expect("create");
        assert_eq!(s.changes_after(&st, 2, 10).err(), Some(4));
    }

    #[test]
    fn history_is_bounded_by_bytes_and_expires_what_it_dropped() {
        const BOUND: usize = 2 * 1024 * 1024;
        let s = Store::new(limits(10_000, BOUND));
        let st: StoreKey = Arc::from("/configmaps");
        let size = footprint(&big("big", 0));
        assert!(size > 100_000, "{size}");
        let first = s.create(&st, key("big"), big("big", 0), None).expect("create").rv;
        let mut rv = first;
        let mut max_bytes = 0;
        for i in 1..=300 {
            rv = s.update(&st, &key("big"), rv, big("big", i), None).expect("update").rv;
            let (_, bytes) = s.history_usage();
            max_bytes = max_bytes.max(bytes);
        }
        let (kept, bytes) = s.history_usage();
        assert!(max_bytes <= BOUND, "history grew to {max_bytes} bytes, over its bound of {BOUND}");
        // Each kept update holds the version it replaced: about 20 fit in 2 MiB.
        assert!((BOUND / size / 2..=BOUND / size + 1).contains(&kept), "{kept} changes kept");
        assert!(bytes >= (kept - 1) * size, "{kept} changes charged only {bytes} bytes");

        // A watch from before the kept changes gets 410 (the caller's Expired)...
        let oldest = rv - kept as u64 + 1;
        assert_eq!(s.watch(&st, Some(first)).err(), Some(oldest));
        assert_eq!(s.watch(&st, Some(oldest - 2)).err(), Some(oldest));
        // ...and one from a kept version replays every change after it, in order.
        let from = oldest - 1;
        let w = s.watch(&st, Some(from)).expect("kept");
        let changes = replay(&s, &st, w.from);
        let rvs: Vec<u64> = changes.iter().map(|c| c.rv).collect();
        assert_eq!(rvs, (from + 1..=rv).collect::<Vec<_>>());
        for c in &changes {
            assert_eq!(c.kind, EventKind::Modified);
            assert_eq!(object_rv(&c.object), c.rv);
            let i: u64 = c.object["data"]["i"].as_str().and_then(|i| i.parse().ok()).expect("data.i");
            assert_eq!(i, 300 - (rv - c.rv), "the object as of rv {}", c.rv);
            let old = c.old.as_deref().expect("an update keeps the replaced version");
            assert_eq!(object_rv(old), c.rv - 1);
        }
        // The live object and the newest change share one allocation.
        let live = s.get(&st, &key("big")).expect("live");
        assert!(changes.last().is_some_and(|c| Arc::ptr_eq(&c.object, &live)));
    }

    #[test]
    fn live_objects_cost_the_history_nothing_and_deletions_do() {
        let s = Store::new(limits(10_000, 1024 * 1024));
        let st: StoreKey = Arc::from("/configmaps");
        let size = footprint(&big("x", 0));
        for n in 0..30 {
            s.create(&st, key(&format!("o{n}")), big(&format!("o{n}"), 0), None).expect("create");
        }
        // 3 MB of objects, all live: every creation is still there to resume from.
        let (kept, bytes) = s.history_usage();
        assert_eq!(kept, 30);
        assert!(bytes < size, "{bytes}");
        assert_eq!(replay(&s, &st, 1).len(), 30);
        // Deleting them leaves old versions and tombstones to the history alone.
        for n in 0..30 {
            let k = key(&format!("o{n}"));
            let rv = s.get(&st, &k).map(|o| object_rv(&o)).expect("live");
            s.remove(&st, &k, rv, None).expect("remove");
            assert!(s.history_usage().1 <= 1024 * 1024);
        }
        let (kept, _) = s.history_usage();
        assert!(kept < 30, "{kept}");
        assert!(s.watch(&st, Some(1)).is_err());
    }

    #[test]
    fn dependents_index_follows_owner_refs() {
        let s = Store::new(events(10));
        let st: StoreKey = Arc::from("/configmaps");
        s.create(
            &st,
            key("child"),
            json!({"metadata": {"name": "child", "uid": "c", "ownerReferences": [{"uid": "p"}]}}),
            None,
        )
        .expect("create");
        assert_eq!(s.dependents("p").len(), 1);
        s.update(&st, &key("child"), 2, json!({"metadata": {"name": "child", "uid": "c"}}), None)
            .expect("update");
        assert!(s.dependents("p").is_empty());
    }
}

//! The object store: one global resourceVersion, per-resource ordered tables, the uid and
//! owner indexes, the event history that watches resume from, and list snapshots for
//! consistent paging.
//!
//! Everything here runs under one short lock and never awaits; the request logic that
//! computes new objects lives in [`crate::api`].

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::sync::Arc;

use imbl::OrdMap;
use parking_lot::Mutex;
use serde_json::Value;
use tokio::sync::broadcast;

use crate::registry::StoreKey;

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

impl EventKind {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Added => "ADDED",
            Self::Modified => "MODIFIED",
            Self::Deleted => "DELETED",
        }
    }
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
    history: VecDeque<Arc<Change>>,
    snapshots: VecDeque<(StoreKey, u64, Table)>,
}

/// The store. Cheap to share behind an `Arc`.
pub struct Store {
    state: Mutex<State>,
    events: broadcast::Sender<Arc<Change>>,
    history_cap: usize,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("rv", &self.state.lock().rv).finish_non_exhaustive()
    }
}

/// What a new watch starts from.
pub struct WatchStart {
    /// Objects to send as synthetic ADDED events (initial state), already filtered by store.
    pub initial: Vec<Arc<Value>>,
    /// Recorded changes after the requested resourceVersion, oldest first.
    pub replay: Vec<Arc<Change>>,
    /// The store's resourceVersion when the watch started.
    pub rv: u64,
    /// Live changes from now on.
    pub rx: broadcast::Receiver<Arc<Change>>,
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
    /// A store that keeps the last `history_cap` changes for resuming watches.
    pub fn new(history_cap: usize) -> Self {
        let (events, _) = broadcast::channel(history_cap.max(16));
        Self {
            state: Mutex::new(State {
                rv: 1,
                tables: HashMap::new(),
                uids: HashMap::new(),
                dependents: HashMap::new(),
                history: VecDeque::new(),
                snapshots: VecDeque::new(),
            }),
            events,
            history_cap: history_cap.max(1),
        }
    }

    /// The current global resourceVersion.
    pub fn rv(&self) -> u64 {
        self.state.lock().rv
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

    fn record(&self, st: &mut State, change: Change) -> Arc<Change> {
        let change = Arc::new(change);
        if st.history.len() >= self.history_cap {
            st.history.pop_front();
        }
        st.history.push_back(change.clone());
        // No receivers is fine: nobody watches yet.
        let _ = self.events.send(change.clone());
        change
    }

    fn index(st: &mut State, loc: &Location, old: Option<&Value>, new: Option<&Value>) {
        if let Some(old) = old {
            if let Some(uid) = uid_of(old)
                && new.is_none()
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

    /// Store a new object, giving it the next resourceVersion.
    pub fn create(&self, store: &StoreKey, key: ObjKey, mut obj: Value) -> Result<Arc<Change>, CommitError> {
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
            &mut st,
            Change { rv, store: store.clone(), kind: EventKind::Added, object: obj, old: None },
        ))
    }

    /// Replace an object that still has resourceVersion `expected`.
    pub fn update(
        &self,
        store: &StoreKey,
        key: &ObjKey,
        expected: u64,
        mut obj: Value,
    ) -> Result<Arc<Change>, CommitError> {
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
            &mut st,
            Change { rv, store: store.clone(), kind: EventKind::Modified, object: obj, old: Some(old) },
        ))
    }

    /// Remove an object that still has resourceVersion `expected`.
    pub fn remove(&self, store: &StoreKey, key: &ObjKey, expected: u64) -> Result<Arc<Change>, CommitError> {
        let mut st = self.state.lock();
        let old = st.tables.get(store).and_then(|t| t.get(key)).cloned().ok_or(CommitError::Missing)?;
        if rv_of(&old) != expected {
            return Err(CommitError::Stale);
        }
        st.rv += 1;
        let rv = st.rv;
        let mut gone = (*old).clone();
        set_rv(&mut gone, rv);
        let loc = Location { store: store.clone(), key: key.clone() };
        Self::index(&mut st, &loc, Some(&old), None);
        if let Some(t) = st.tables.get_mut(store) {
            t.remove(key);
        }
        Ok(self.record(
            &mut st,
            Change {
                rv,
                store: store.clone(),
                kind: EventKind::Deleted,
                object: Arc::new(gone),
                old: Some(old),
            },
        ))
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
        let rx = self.events.subscribe();
        match from {
            None => {
                let initial = st.tables.get(store).map(|t| t.values().cloned().collect()).unwrap_or_default();
                Ok(WatchStart { initial, replay: Vec::new(), rv: st.rv, rx })
            }
            Some(from) => {
                let oldest = st.history.front().map_or(st.rv + 1, |c| c.rv);
                if from + 1 < oldest && from < st.rv {
                    return Err(oldest);
                }
                let replay =
                    st.history.iter().filter(|c| c.rv > from && &c.store == store).cloned().collect();
                Ok(WatchStart { initial: Vec::new(), replay, rv: st.rv, rx })
            }
        }
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

    #[test]
    fn global_rv_and_conflicts() {
        let s = Store::new(100);
        let st: StoreKey = Arc::from("/configmaps");
        let a = s.create(&st, key("a"), json!({"metadata": {"name": "a", "uid": "u1"}})).expect("create");
        assert_eq!(a.rv, 2);
        assert_eq!(s.create(&st, key("a"), json!({"metadata": {}})).err(), Some(CommitError::Exists));
        assert_eq!(s.update(&st, &key("a"), 1, json!({"metadata": {}})).err(), Some(CommitError::Stale));
        let b = s.update(&st, &key("a"), 2, json!({"metadata": {"name": "a", "uid": "u1"}})).expect("update");
        assert_eq!(b.rv, 3);
        let d = s.remove(&st, &key("a"), 3).expect("remove");
        assert_eq!(d.object["metadata"]["resourceVersion"], "4");
        assert!(s.by_uid("u1").is_none());
    }

    #[test]
    fn watch_resume_and_expiry() {
        let s = Store::new(2);
        let st: StoreKey = Arc::from("/configmaps");
        for n in ["a", "b", "c"] {
            s.create(&st, key(n), json!({"metadata": {"name": n}})).expect("create");
        }
        // rv is 4, history holds rv 3 and 4.
        assert!(s.watch(&st, Some(1)).is_err());
        let w = s.watch(&st, Some(2)).expect("in history");
        assert_eq!(w.replay.len(), 2);
        let w = s.watch(&st, None).expect("fresh");
        assert_eq!(w.initial.len(), 3);
    }

    #[test]
    fn dependents_index_follows_owner_refs() {
        let s = Store::new(10);
        let st: StoreKey = Arc::from("/configmaps");
        s.create(
            &st,
            key("child"),
            json!({"metadata": {"name": "child", "uid": "c", "ownerReferences": [{"uid": "p"}]}}),
        )
        .expect("create");
        assert_eq!(s.dependents("p").len(), 1);
        s.update(&st, &key("child"), 2, json!({"metadata": {"name": "child", "uid": "c"}})).expect("update");
        assert!(s.dependents("p").is_empty());
    }
}

//! The watch history: the recent changes that watches resume from and that live watchers
//! read as they go, bounded by a number of events and by the memory it alone keeps alive.
//!
//! What the history costs is the object versions that only it still references. A change
//! that creates or updates an object shares the new object (one `Arc`) with the live
//! table, so it costs nothing extra until a later change replaces that object: from then
//! on the replaced version (the later change's `old`) is held by the history alone, and
//! is charged to the later change. A deletion is also charged for its tombstone (the
//! object as it was, with the deletion's resourceVersion), which no table holds. Evicting
//! a change releases exactly what it was charged for; nothing else holds it by then,
//! because the changes before it were evicted first.
//!
//! Sizes are estimates of the heap bytes of a `serde_json::Value` (see [`footprint`]):
//! each new object is walked once, before the store's lock is taken, and its size is
//! remembered while its change is kept. Only an object whose change already left the
//! history is walked again, when it is replaced. Nothing is serialized.

use std::collections::VecDeque;
use std::mem::size_of;
use std::sync::Arc;

use serde_json::Value;

use super::{Change, EventKind};

/// How much history is kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HistoryLimits {
    /// At most this many changes (at least 1).
    pub events: usize,
    /// At most about this many bytes of object versions that only the history keeps
    /// alive. The newest change is always kept, however large.
    pub bytes: usize,
}

impl Default for HistoryLimits {
    fn default() -> Self {
        Self { events: 10_000, bytes: 64 * 1024 * 1024 }
    }
}

/// One kept change and what it is charged for.
#[derive(Debug)]
struct Entry {
    change: Arc<Change>,
    /// The footprint of `change.object`, kept so that the change replacing it need not
    /// measure it again.
    object_bytes: usize,
    /// The bytes evicting it releases.
    charged: usize,
}

/// The bounded, ordered log of changes.
#[derive(Debug)]
pub(super) struct History {
    entries: VecDeque<Entry>,
    bytes: usize,
    limits: HistoryLimits,
}

/// A batch of changes read from the history by a watcher.
#[derive(Debug)]
pub struct Batch {
    /// The changes, oldest first.
    pub changes: Vec<Arc<Change>>,
    /// The resourceVersion the watcher has seen everything up to after this batch.
    pub next: u64,
    /// More changes are waiting after `next`.
    pub more: bool,
}

/// What a change costs on its own: its entry here and the `Arc<Change>` allocation.
const ENTRY_BYTES: usize = size_of::<Entry>() + 2 * size_of::<usize>() + size_of::<Change>();

impl History {
    pub(super) fn new(limits: HistoryLimits) -> Self {
        Self {
            entries: VecDeque::new(),
            bytes: 0,
            limits: HistoryLimits { events: limits.events.max(1), ..limits },
        }
    }

    /// The bytes charged to the kept changes.
    pub(super) fn bytes(&self) -> usize {
        self.bytes
    }

    /// How many changes are kept.
    pub(super) fn len(&self) -> usize {
        self.entries.len()
    }

    /// The resourceVersion of the oldest kept change.
    pub(super) fn oldest(&self) -> Option<u64> {
        self.entries.front().map(|e| e.change.rv)
    }

    /// The footprint of `obj`: remembered when the change that wrote it is still kept
    /// (the usual case for the object an update replaces), measured otherwise.
    pub(super) fn footprint_of(&self, obj: &Arc<Value>) -> usize {
        let rv = super::object_rv(obj);
        let idx = self.entries.partition_point(|e| e.change.rv < rv);
        match self.entries.get(idx) {
            Some(e) if e.change.rv == rv && Arc::ptr_eq(&e.change.object, obj) => e.object_bytes,
            _ => footprint(obj),
        }
    }

    /// Append a change whose object has footprint `object_bytes`, then evict the oldest
    /// changes while either limit is exceeded, always keeping the new one.
    pub(super) fn push(&mut self, change: Arc<Change>, object_bytes: usize) -> Evicted {
        // The replaced or deleted version is from now on held by the history alone.
        let old_bytes = change.old.as_ref().map_or(0, |old| self.footprint_of(old));
        // A deletion's tombstone is in no table either.
        let tombstone = if change.kind == EventKind::Deleted { object_bytes } else { 0 };
        let charged = ENTRY_BYTES + old_bytes + tombstone;
        self.bytes += charged;
        self.entries.push_back(Entry { change, object_bytes, charged });
        let mut evicted = Evicted::default();
        while self.entries.len() > 1
            && (self.entries.len() > self.limits.events || self.bytes > self.limits.bytes)
        {
            evicted.by_bytes |= self.entries.len() <= self.limits.events;
            let Some(e) = self.entries.pop_front() else { break };
            self.bytes -= e.charged;
            evicted.changes.push(e.change);
        }
        evicted
    }

    /// Changes of `store` after resourceVersion `after`, at most `max` of them; `rv` is
    /// the store's current resourceVersion. `Err(oldest)` when changes after `after`
    /// were evicted already, so the caller would miss some.
    pub(super) fn after(&self, store: &str, after: u64, max: usize, rv: u64) -> Result<Batch, u64> {
        let oldest = self.oldest().unwrap_or(rv + 1);
        if after + 1 < oldest && after < rv {
            return Err(oldest);
        }
        let start = self.entries.partition_point(|e| e.change.rv <= after);
        let mut changes: Vec<Arc<Change>> = Vec::new();
        for e in self.entries.range(start..).filter(|e| *e.change.store == *store) {
            if changes.len() == max.max(1) {
                let next = changes.last().map_or(after, |c| c.rv);
                return Ok(Batch { changes, next, more: true });
            }
            changes.push(e.change.clone());
        }
        Ok(Batch { changes, next: rv, more: false })
    }
}

/// What one [`History::push`] evicted. Dropping it frees the objects only the history
/// held, which the store does after releasing its lock.
#[derive(Debug, Default)]
#[must_use = "drop it after releasing the store's lock"]
pub(super) struct Evicted {
    /// The changes, oldest first.
    pub changes: Vec<Arc<Change>>,
    /// Whether the byte limit (not only the event limit) made it evict.
    pub by_bytes: bool,
}

/// How many entries a `serde_json::Map` (a `BTreeMap`) holds per node: 11 at most, about
/// 6 after the splits of a growing map.
const MAP_NODE_ENTRIES: usize = 11;
/// The bytes of one `BTreeMap<String, Value>` leaf node (keys, values, parent link, lengths).
const MAP_NODE_BYTES: usize = MAP_NODE_ENTRIES * (size_of::<String>() + size_of::<Value>()) + 16;

fn map_nodes(len: usize) -> usize {
    match len {
        0 => 0,
        1..=MAP_NODE_ENTRIES => 1,
        // Half-full leaves after splits, and one internal node per six leaves.
        n => n.div_ceil(6) + n.div_ceil(36),
    }
}

fn heap_bytes(v: &Value) -> usize {
    match v {
        Value::Null | Value::Bool(_) | Value::Number(_) => 0,
        Value::String(s) => s.capacity(),
        Value::Array(a) => a.capacity() * size_of::<Value>() + a.iter().map(heap_bytes).sum::<usize>(),
        Value::Object(m) => {
            map_nodes(m.len()) * MAP_NODE_BYTES
                + m.iter().map(|(k, v)| k.capacity() + heap_bytes(v)).sum::<usize>()
        }
    }
}

/// An estimate of the memory an `Arc<Value>` holds: the `Arc`'s allocation, strings,
/// arrays and map nodes. It matches what the allocator is asked for within a few percent
/// for typical objects (maps of up to 11 keys are exact) and overestimates maps of
/// thousands of keys by up to a third; allocator overhead is not included.
pub fn footprint(v: &Value) -> usize {
    2 * size_of::<usize>() + size_of::<Value>() + heap_bytes(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn change(rv: u64, store: &str, kind: EventKind, object: Value, old: Option<Arc<Value>>) -> Arc<Change> {
        Arc::new(Change { rv, store: Arc::from(store), kind, object: Arc::new(object), old, logged: None })
    }

    fn obj(rv: u64, payload: usize) -> Value {
        json!({"metadata": {"name": "a", "resourceVersion": rv.to_string()}, "data": {"p": "x".repeat(payload)}})
    }

    #[test]
    fn footprint_follows_what_the_value_allocates() {
        let small = footprint(&json!({"metadata": {"name": "a"}}));
        // Two one-node maps, a key string and a value string, the `Arc` and the root.
        assert_eq!(small, 2 * MAP_NODE_BYTES + "metadata".len() + "name".len() + "a".len() + 48);
        let text = "x".repeat(100_000);
        let big = footprint(&json!({"data": {"p": text}}));
        assert!((100_000..101_000 + 2 * MAP_NODE_BYTES).contains(&big), "{big}");
        let list = footprint(&json!([1, 2, 3]));
        assert_eq!(list, 48 + 3 * size_of::<Value>());
    }

    #[test]
    fn an_update_is_charged_the_version_it_replaced_once() {
        let mut h = History::new(HistoryLimits::default());
        let v2 = change(2, "/cm", EventKind::Added, obj(2, 10_000), None);
        let _ = h.push(v2.clone(), footprint(&v2.object));
        assert_eq!(h.bytes(), ENTRY_BYTES, "the created object is live, not history");
        let v3 = change(3, "/cm", EventKind::Modified, obj(3, 10_000), Some(v2.object.clone()));
        let _ = h.push(v3.clone(), footprint(&v3.object));
        assert_eq!(h.bytes(), 2 * ENTRY_BYTES + footprint(&v2.object));
        let mut gone = (*v3.object).clone();
        gone["metadata"]["resourceVersion"] = json!("4");
        let v4 = change(4, "/cm", EventKind::Deleted, gone, Some(v3.object.clone()));
        let tombstone = h.footprint_of(&v3.object);
        assert_eq!(tombstone, footprint(&v3.object), "remembered from the kept change");
        let _ = h.push(v4, tombstone);
        assert_eq!(h.bytes(), 3 * ENTRY_BYTES + footprint(&v2.object) + 2 * tombstone);
    }

    #[test]
    fn eviction_keeps_the_newest_change_and_releases_its_charge() {
        let mut h = History::new(HistoryLimits { events: 100, bytes: 1000 });
        let mut prev = change(2, "/cm", EventKind::Added, obj(2, 5000), None);
        let _ = h.push(prev.clone(), footprint(&prev.object));
        for rv in 3..10 {
            let next = change(rv, "/cm", EventKind::Modified, obj(rv, 5000), Some(prev.object.clone()));
            let evicted = h.push(next.clone(), footprint(&next.object));
            assert_eq!((evicted.changes.len(), evicted.by_bytes), (1, true));
            assert_eq!(evicted.changes[0].rv, rv - 1);
            prev = next;
        }
        assert_eq!((h.len(), h.oldest()), (1, Some(9)));
        assert_eq!(h.bytes(), ENTRY_BYTES + footprint(&obj(8, 5000)));
        assert_eq!(h.after("/cm", 7, 10, 9).err(), Some(9));
        let batch = h.after("/cm", 8, 10, 9).expect("kept");
        assert_eq!((batch.changes.len(), batch.next, batch.more), (1, 9, false));
    }

    #[test]
    fn reading_after_a_version_goes_in_batches_of_one_store() {
        let mut h = History::new(HistoryLimits::default());
        for rv in 2..=11 {
            let store = if rv % 2 == 0 { "/cm" } else { "/secrets" };
            let _ = h.push(change(rv, store, EventKind::Added, obj(rv, 1), None), 0);
        }
        let first = h.after("/cm", 1, 3, 11).expect("kept");
        let rvs: Vec<u64> = first.changes.iter().map(|c| c.rv).collect();
        assert_eq!((rvs, first.next, first.more), (vec![2, 4, 6], 6, true));
        let rest = h.after("/cm", first.next, 3, 11).expect("kept");
        let rvs: Vec<u64> = rest.changes.iter().map(|c| c.rv).collect();
        assert_eq!((rvs, rest.next, rest.more), (vec![8, 10], 11, false));
        let none = h.after("/cm", 11, 3, 11).expect("up to date");
        assert_eq!((none.changes.len(), none.next, none.more), (0, 11, false));
    }
}

//! The request-write log of an overlay: the committed changes that API requests made, and
//! the deletions and metadata patches kubesim's cleanup controllers (garbage collector,
//! namespace and CRD cleanup) made because of them, in commit order.
//!
//! A change is logged when its commit is attributed ([`Attribution`]): the API attributes
//! the writes of requests and those the cleanup controllers make on work a logged change
//! gave them; imports, seeds and the workload controllers' writes are not. Entries are
//! appended under the store's lock, so their sequence numbers follow the
//! resourceVersions. The log keeps the newest [`CAPACITY`] entries and counts those it
//! dropped; an entry shares the object versions it holds with the tables and the watch
//! history (one `Arc` each), so it costs the versions only it keeps alive.

use std::collections::VecDeque;
use std::sync::Arc;

use serde_json::Value;

use super::{Change, EventKind};

/// How many request writes an overlay keeps (the oldest are dropped first, and counted).
pub const CAPACITY: usize = 10_000;

/// What a logged write did, as a watch event reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WriteEvent {
    /// The object was created.
    Added,
    /// The object changed (a deletion that waits for finalizers is one: it sets
    /// `deletionTimestamp`).
    Modified,
    /// The object was removed.
    Deleted,
}

/// Why a write was made.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WriteCause {
    /// An API request made it.
    Request,
    /// The garbage collector made it (a dependent deleted, an owner reference dropped, a
    /// foreground or orphan deletion finished) because of the logged write with sequence
    /// number `because`: for what it does to a dependent of deleted owners, the latest of
    /// their deletions; else the write whose change made it look.
    GarbageCollector {
        /// The [`RequestWrite::seq`] of the write that led to it.
        because: u64,
    },
    /// Namespace termination made it (the namespace's contents deleted, the namespace
    /// finalized) because of the logged write `because`.
    NamespaceCleanup {
        /// The [`RequestWrite::seq`] of the write that led to it.
        because: u64,
    },
    /// A deleted CRD's cleanup made it (its custom resources deleted, the CRD finalized)
    /// because of the logged write `because`.
    CrdCleanup {
        /// The [`RequestWrite::seq`] of the write that led to it.
        because: u64,
    },
}

/// Who made a change, for the log: given to the store's commit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attribution {
    /// Why it was made.
    pub cause: WriteCause,
    /// The field manager of a create, update, patch or apply.
    pub field_manager: Option<String>,
    /// The user who asked (the controller's identity for cleanup).
    pub user: Option<String>,
}

/// One committed change made by an API request, or by kubesim's cleanup because of one.
#[derive(Clone, Debug)]
pub struct RequestWrite {
    /// Its place in the log: 1 for the first write, then one more for each (dropped
    /// writes keep their numbers, so a gap shows how many a reader missed).
    pub seq: u64,
    /// The resourceVersion the change committed at.
    pub resource_version: u64,
    /// What it did.
    pub event: WriteEvent,
    /// The object's `apiVersion` as stored (a custom resource: its CRD's storage version).
    pub api_version: String,
    /// The object's kind.
    pub kind: String,
    /// The object's namespace; `None` for cluster-scoped objects.
    pub namespace: Option<String>,
    /// The object's name.
    pub name: String,
    /// The object's uid.
    pub uid: String,
    /// The object after the change, as stored; for a deletion, the object as it was
    /// removed (with the deletion's resourceVersion).
    pub object: Arc<Value>,
    /// The object before the change, for updates and deletions.
    pub old: Option<Arc<Value>>,
    /// The field manager of a create, update, patch or apply (none for deletions).
    pub field_manager: Option<String>,
    /// The user who asked (for cleanup: the controller's service account).
    pub user: Option<String>,
    /// Why it was made.
    pub cause: WriteCause,
}

/// The bounded log.
#[derive(Debug)]
pub(super) struct WriteLog {
    entries: VecDeque<RequestWrite>,
    /// The sequence number of the latest entry (0 before the first).
    last: u64,
    /// How many entries were dropped to stay within [`CAPACITY`].
    dropped: u64,
}

fn text(obj: &Value, pointer: &str) -> String {
    obj.pointer(pointer).and_then(Value::as_str).unwrap_or_default().to_owned()
}

impl WriteLog {
    pub(super) fn new() -> Self {
        Self { entries: VecDeque::new(), last: 0, dropped: 0 }
    }

    /// The sequence number the next entry gets.
    pub(super) fn next_seq(&self) -> u64 {
        self.last + 1
    }

    /// Log `change`, made by `by`: its sequence number, and the entry dropped to make room
    /// (for the caller to free after releasing the store's lock).
    pub(super) fn push(&mut self, change: &Change, by: &Attribution) -> (u64, Option<RequestWrite>) {
        self.last += 1;
        let obj = &change.object;
        let namespace = Some(text(obj, "/metadata/namespace")).filter(|ns| !ns.is_empty());
        self.entries.push_back(RequestWrite {
            seq: self.last,
            resource_version: change.rv,
            event: match change.kind {
                EventKind::Added => WriteEvent::Added,
                EventKind::Modified => WriteEvent::Modified,
                EventKind::Deleted => WriteEvent::Deleted,
            },
            api_version: text(obj, "/apiVersion"),
            kind: text(obj, "/kind"),
            namespace,
            name: text(obj, "/metadata/name"),
            uid: text(obj, "/metadata/uid"),
            object: change.object.clone(),
            old: change.old.clone(),
            field_manager: by.field_manager.clone(),
            user: by.user.clone(),
            cause: by.cause,
        });
        let evicted = if self.entries.len() > CAPACITY { self.entries.pop_front() } else { None };
        self.dropped += u64::from(evicted.is_some());
        (self.last, evicted)
    }

    /// The kept entries with a sequence number above `after`, oldest first.
    pub(super) fn since(&self, after: u64) -> Vec<RequestWrite> {
        let start = self.entries.partition_point(|w| w.seq <= after);
        self.entries.range(start..).cloned().collect()
    }

    /// How many entries were dropped.
    pub(super) fn dropped(&self) -> u64 {
        self.dropped
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn change(rv: u64, kind: EventKind) -> Change {
        let object = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": format!("c{rv}"), "namespace": "default", "uid": "u"}});
        Change {
            rv,
            store: Arc::from("/configmaps"),
            kind,
            object: Arc::new(object),
            old: None,
            logged: None,
        }
    }

    #[test]
    fn keeps_the_newest_in_order_and_counts_the_dropped() {
        let mut log = WriteLog::new();
        let by = Attribution { cause: WriteCause::Request, field_manager: Some("m".into()), user: None };
        for rv in 2..(CAPACITY as u64 + 7) {
            log.push(&change(rv, EventKind::Added), &by);
        }
        assert_eq!(log.dropped(), 5);
        let all = log.since(0);
        assert_eq!(all.len(), CAPACITY);
        assert_eq!((all[0].seq, all[0].resource_version), (6, 7));
        assert!(all.windows(2).all(|w| w[0].seq + 1 == w[1].seq));
        let tail = log.since(CAPACITY as u64 + 3);
        assert_eq!(
            tail.iter().map(|w| w.seq).collect::<Vec<_>>(),
            [CAPACITY as u64 + 4, CAPACITY as u64 + 5]
        );
        let w = &tail[0];
        assert_eq!(
            (w.kind.as_str(), w.namespace.as_deref(), w.name.as_str(), w.field_manager.as_deref()),
            ("ConfigMap", Some("default"), "c10005", Some("m"))
        );
    }
}

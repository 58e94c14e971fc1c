//! Z-sets: multisets of documents with signed counts, the currency between stages. A
//! change of a stage's input is a Z-set (`-1` for what went, `+1` for what came), and
//! so is the change of its output.

use std::collections::BTreeMap;

use serde_json::Value;

/// Documents keyed by their canonical JSON (serde_json writes map keys sorted), with
/// their counts; entries whose count falls to zero disappear.
#[derive(Debug, Default, Clone)]
pub(crate) struct ZSet {
    entries: BTreeMap<String, (Value, i64)>,
}

/// The canonical JSON of a document, used as its identity.
pub(crate) fn key_of(v: &Value) -> String {
    v.to_string()
}

impl ZSet {
    pub(crate) fn add(&mut self, doc: Value, count: i64) {
        if count == 0 {
            return;
        }
        let key = key_of(&doc);
        let entry = self.entries.entry(key.clone()).or_insert((doc, 0));
        entry.1 += count;
        if entry.1 == 0 {
            self.entries.remove(&key);
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub(crate) fn into_iter(self) -> impl Iterator<Item = (Value, i64)> {
        self.entries.into_values()
    }
}

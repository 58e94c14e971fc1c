//! The reconcile history of each primary object: the last few reconciles, each with what
//! triggered it, what it read, what it did and how it ended ([`Reconcile`]).
//!
//! The history is one more thing [`Memory`](crate::memory::Memory) keeps per object, and
//! goes with the object. It is bounded: [`RunOptions::history`](crate::RunOptions::history)
//! reconciles per object (10 by default), each holding at most [`MAX_ITEMS`] reads,
//! children, status fields and events, and values cut at [`MAX_VALUE`] bytes; a reconcile
//! the fingerprint skipped is counted, not stored. With `history: 0` nothing of it is kept
//! or computed: no trigger is noted, no record drafted.
//!
//! A reconcile's record is drafted as it runs (see [`Draft`]): the triggers that queued it
//! when it begins, its reads after the handler call, then whatever `effects` carries out,
//! and the result when it ends. The inspector (`inspect`) serves the records as JSON.

use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Default number of reconciles kept per object.
pub const DEFAULT_KEPT: usize = 10;

/// Items kept per list of one record (reads, children, status fields, events), and
/// triggers noted per reconcile; the rest are counted.
pub const MAX_ITEMS: usize = 16;

/// Bytes of a status value, a message or an error kept in a record.
pub const MAX_VALUE: usize = 240;

/// Triggers kept for the next reconcile of one object; the others are counted.
const MAX_TRIGGERS: usize = 4;

/// What queued a reconcile.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum Trigger {
    /// The operator started (or restarted) and listed the object.
    Started,
    /// A relist of the primary watch (after a watch broke).
    Relisted,
    /// The object itself changed.
    #[serde(rename_all = "camelCase")]
    Changed {
        /// Its generation after the change (a new one means a spec change).
        generation: Option<i64>,
        /// Its resourceVersion after the change.
        resource_version: Option<String>,
    },
    /// A child changed or was deleted.
    Child {
        /// `apiVersion/kind` of the child.
        kind: String,
        /// Its namespace.
        namespace: Option<String>,
        /// Its name.
        name: String,
        /// It was deleted.
        deleted: bool,
    },
    /// An object of a `.watches()` kind mapped to this one.
    Watched {
        /// `apiVersion/kind` of the watched object.
        kind: String,
        /// Its namespace.
        namespace: Option<String>,
        /// Its name.
        name: String,
    },
    /// The `every` period came round.
    Tick,
    /// The script asked for it (`requeue(d)`).
    Requeue,
    /// A retry after a failure, with backoff.
    Retry,
    /// The script was replaced (`ctop dev`).
    ScriptReplaced,
    /// This replica became the leader.
    Leader,
    /// Nothing noted (e.g. a hand-over between shards).
    Other,
}

/// One lookup of the reconcile's handler call.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Read {
    /// `getObserved` or `listObserved`.
    pub call: ReadCall,
    /// `apiVersion/kind` read.
    pub kind: String,
    /// The namespace asked for (a list in every namespace: none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// `getObserved`: the name asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// `getObserved`: the resourceVersion found (none: not found).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_version: Option<String>,
    /// `listObserved`: how many objects the list held.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub count: Option<usize>,
}

/// The two kinds of lookup.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ReadCall {
    /// `getObserved`.
    Get,
    /// `listObserved`.
    List,
}

/// What a reconcile did to one child (in kubectl's words where it has them).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ChildAction {
    /// Applied and new.
    Created,
    /// Applied over an existing child.
    Configured,
    /// Not written: neither the desired nor the live object had changed.
    Unchanged,
    /// An existing object taken over (`adopt: true`).
    Adopted,
    /// A former child deleted because it left the desired set.
    Pruned,
    /// A former child kept because it opted out of pruning.
    Kept,
    /// Deleted on the script's request (`remove()`).
    Deleted,
}

/// One child and what was done to it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Child {
    /// What was done.
    pub action: ChildAction,
    /// `apiVersion/kind`.
    pub kind: String,
    /// Its namespace.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Its name.
    pub name: String,
}

/// One status field the reconcile's write changed (`conditions[Ready]` for a condition).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FieldChange {
    /// Where: `phase`, `conditions[Ready]`.
    pub path: String,
    /// The value before (none: absent).
    pub before: Option<Value>,
    /// The value after (none: deleted).
    pub after: Option<Value>,
}

/// One event the reconcile published on its object.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EventNote {
    /// `Normal` or `Warning`.
    #[serde(rename = "type")]
    pub type_: String,
    /// Its reason.
    pub reason: String,
    /// Its message.
    pub message: String,
}

/// How a reconcile ended.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum Ended {
    /// Succeeded.
    #[serde(rename_all = "camelCase")]
    Succeeded {
        /// Seconds until the next reconcile it asked for (none: on the next change).
        #[serde(skip_serializing_if = "Option::is_none")]
        next_in_seconds: Option<f64>,
    },
    /// Failed.
    #[serde(rename_all = "camelCase")]
    Failed {
        /// The failure's reason (the event's and the `Reconciled` condition's).
        reason: String,
        /// Its message.
        message: String,
        /// The script's source line with a caret, when the script threw.
        #[serde(skip_serializing_if = "Option::is_none")]
        code_frame: Option<String>,
        /// It will not be retried until the object or the script changes.
        terminal: bool,
    },
}

/// One reconcile of one object.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Reconcile {
    /// When it started (RFC 3339, milliseconds).
    pub started: String,
    /// How long it took, in milliseconds.
    pub took_ms: f64,
    /// What queued it (the first few, when several coalesced).
    pub triggers: Vec<Trigger>,
    /// Triggers beyond those listed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub more_triggers: u32,
    /// The object's generation it reconciled.
    pub generation: Option<i64>,
    /// The object's resourceVersion it reconciled.
    pub resource_version: Option<String>,
    /// What the handler read.
    pub reads: Vec<Read>,
    /// Reads beyond those listed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub more_reads: u32,
    /// What it did to its children.
    pub children: Vec<Child>,
    /// Children beyond those listed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub more_children: u32,
    /// The status fields its write changed.
    pub status: Vec<FieldChange>,
    /// The events it published.
    pub events: Vec<EventNote>,
    /// How it ended.
    pub ended: Ended,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// The history of one object, with what is noted for its next reconcile.
#[derive(Debug, Default)]
pub(crate) struct Log {
    /// Triggers since the last reconcile began.
    pending: Vec<Trigger>,
    /// Triggers since then beyond `pending`.
    more_pending: u32,
    /// Why the object's timer was set (it fires with no other trigger noted).
    timer: Option<Trigger>,
    /// The reconcile running now (boxed: most objects are idle, and their `Log` stays small).
    draft: Option<Box<Draft>>,
    /// The last reconciles, oldest first (see [`Records`]).
    records: Records,
    /// Reconciles skipped because nothing they would read had changed.
    skipped: u64,
}

/// A reconcile's record while it runs.
#[derive(Debug)]
pub(crate) struct Draft {
    started: SystemTime,
    record: Reconcile,
}

impl Draft {
    /// Note the handler's reads.
    pub(crate) fn reads(&mut self, reads: impl IntoIterator<Item = Read>) {
        push_capped(&mut self.record.reads, &mut self.record.more_reads, reads);
    }

    /// Note what was done to children.
    pub(crate) fn children(&mut self, children: impl IntoIterator<Item = Child>) {
        push_capped(&mut self.record.children, &mut self.record.more_children, children);
    }

    /// Note the status fields a write changed.
    pub(crate) fn status(&mut self, changes: Vec<FieldChange>) {
        self.record.status = changes;
    }

    /// Note an event.
    pub(crate) fn event(&mut self, type_: &str, reason: &str, message: &str) {
        if self.record.events.len() < MAX_ITEMS {
            self.record.events.push(EventNote {
                type_: type_.to_owned(),
                reason: reason.to_owned(),
                message: cut(message),
            });
        }
    }
}

fn push_capped<T>(list: &mut Vec<T>, more: &mut u32, items: impl IntoIterator<Item = T>) {
    for item in items {
        if list.len() < MAX_ITEMS {
            list.push(item);
        } else {
            *more = more.saturating_add(1);
        }
    }
}

impl Log {
    /// Note that `trigger` queued the object.
    pub(crate) fn triggered(&mut self, trigger: Trigger) {
        if self.pending.contains(&trigger) {
            return;
        }
        if self.pending.len() < MAX_TRIGGERS {
            self.pending.push(trigger);
        } else {
            self.more_pending = self.more_pending.saturating_add(1);
        }
    }

    /// Note why the object's timer was set.
    pub(crate) fn timer(&mut self, trigger: Option<Trigger>) {
        self.timer = trigger;
    }

    /// A reconcile of the object at `generation`/`resource_version` begins: its draft
    /// takes the triggers noted since the last one.
    pub(crate) fn begin(&mut self, generation: Option<i64>, resource_version: Option<&str>) {
        let mut triggers = std::mem::take(&mut self.pending);
        if triggers.is_empty() {
            triggers.push(self.timer.take().unwrap_or(Trigger::Other));
        }
        let record = Reconcile {
            started: String::new(),
            took_ms: 0.0,
            triggers,
            more_triggers: std::mem::take(&mut self.more_pending),
            generation,
            resource_version: resource_version.map(str::to_owned),
            reads: Vec::new(),
            more_reads: 0,
            children: Vec::new(),
            more_children: 0,
            status: Vec::new(),
            events: Vec::new(),
            ended: Ended::Succeeded { next_in_seconds: None },
        };
        self.draft = Some(Box::new(Draft { started: SystemTime::now(), record }));
    }

    /// The draft of the reconcile running now.
    pub(crate) fn draft(&mut self) -> Option<&mut Draft> {
        self.draft.as_deref_mut()
    }

    /// The reconcile running now ended after `took`: stored (keeping the last `keep`), or
    /// counted when it was `skipped`.
    pub(crate) fn end(&mut self, keep: usize, took: Duration, skipped: bool, ended: Ended) {
        let Some(Draft { started, mut record }) = self.draft.take().map(|d| *d) else { return };
        if skipped {
            self.skipped += 1;
            // Its triggers were looked at: the next record does not repeat them.
            return;
        }
        record.started = crate::health::rfc3339_millis(started);
        record.took_ms = took.as_secs_f64() * 1000.0;
        record.ended = ended;
        self.records.push(&record, keep.max(1));
    }

    /// The records, oldest first, and the reconciles skipped.
    pub(crate) fn records(&self) -> (Vec<Reconcile>, u64) {
        (self.records.read(), self.skipped)
    }

    /// The records as kept (read them with [`Records::read`]).
    pub(crate) fn kept(&self) -> &Records {
        &self.records
    }
}

/// The records of one object, as kept: their compact JSON, one per line, compressed as one
/// block (LZ4). The records of one object repeat each other (its children's kinds and
/// names, its status fields), so the block takes a fraction of the JSON, and the JSON a
/// third of the structs; they are read back only when someone looks.
#[derive(Clone, Debug, Default)]
pub(crate) struct Records {
    block: Box<[u8]>,
    len: usize,
}

impl Records {
    /// Keep `record`, with the last `keep - 1` before it.
    fn push(&mut self, record: &Reconcile, keep: usize) {
        // Serializing these types cannot fail (string keys, finite numbers): a record that
        // somehow did not would be left out, not kept half.
        let Ok(line) = serde_json::to_string(record) else { return };
        let mut text = self.text();
        while self.len >= keep {
            match text.find('\n') {
                Some(end) => drop(text.drain(..=end)),
                None => text.clear(),
            }
            self.len -= 1;
        }
        text.push_str(&line);
        text.push('\n');
        self.len += 1;
        self.block = lz4_flex::compress_prepend_size(text.as_bytes()).into_boxed_slice();
    }

    /// The JSON lines.
    fn text(&self) -> String {
        if self.block.is_empty() {
            return String::new();
        }
        // The block is this type's own output: a failure would be a bug, and loses the
        // history only.
        lz4_flex::decompress_size_prepended(&self.block)
            .ok()
            .and_then(|bytes| String::from_utf8(bytes).ok())
            .unwrap_or_default()
    }

    /// The records, oldest first.
    pub(crate) fn read(&self) -> Vec<Reconcile> {
        self.text().lines().filter_map(|line| serde_json::from_str(line).ok()).collect()
    }

    /// The newest record.
    pub(crate) fn last(&self) -> Option<Reconcile> {
        self.read().pop()
    }

    /// How many records there are.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.len
    }
}

/// `s` cut to [`MAX_VALUE`] bytes (at a character boundary), with `…` when cut.
pub(crate) fn cut(s: &str) -> String {
    if s.len() <= MAX_VALUE {
        return s.to_owned();
    }
    format!("{}…", &s[..s.floor_char_boundary(MAX_VALUE)])
}

/// `v` as kept in a record: strings cut, and an array or object whose JSON is longer than
/// [`MAX_VALUE`] replaced by its JSON text, cut.
pub(crate) fn keep_value(v: &Value) -> Value {
    match v {
        Value::String(s) => Value::String(cut(s)),
        Value::Array(_) | Value::Object(_) => {
            let text = v.to_string();
            if text.len() <= MAX_VALUE { v.clone() } else { Value::String(cut(&text)) }
        }
        other => other.clone(),
    }
}

/// The changes from the status `before` to `after` (both `status` objects), field by field,
/// conditions by type (their transition times left out).
pub(crate) fn status_changes(b: &Map<String, Value>, a: &Map<String, Value>) -> Vec<FieldChange> {
    let mut out = Vec::new();
    let mut keys: Vec<&String> = b.keys().chain(a.keys()).collect();
    keys.sort();
    keys.dedup();
    for key in keys {
        if key == "conditions" {
            condition_changes(b.get(key), a.get(key), &mut out);
            continue;
        }
        let (x, y) = (b.get(key), a.get(key));
        if x != y {
            out.push(FieldChange { path: key.clone(), before: x.map(keep_value), after: y.map(keep_value) });
        }
    }
    out.truncate(MAX_ITEMS);
    out
}

fn condition_changes(before: Option<&Value>, after: Option<&Value>, out: &mut Vec<FieldChange>) {
    let by_type = |list: Option<&Value>| -> Vec<(String, Value)> {
        list.and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|c| {
                let t = c.get("type")?.as_str()?.to_owned();
                let mut c = c.clone();
                if let Some(m) = c.as_object_mut() {
                    m.remove("lastTransitionTime");
                    m.remove("type");
                    // It moves with every spec change and says little.
                    m.remove("observedGeneration");
                }
                Some((t, c))
            })
            .collect()
    };
    let (b, a) = (by_type(before), by_type(after));
    let mut types: Vec<&String> = b.iter().chain(a.iter()).map(|(t, _)| t).collect();
    types.dedup();
    let mut seen = Vec::new();
    for t in types {
        if seen.contains(&t) {
            continue;
        }
        seen.push(t);
        let x = b.iter().find(|(k, _)| k == t).map(|(_, v)| v);
        let y = a.iter().find(|(k, _)| k == t).map(|(_, v)| v);
        match (x.and_then(Value::as_object), y.and_then(Value::as_object)) {
            // A condition that stays: the fields that changed, each on its own.
            (Some(x), Some(y)) => {
                let mut fields: Vec<&String> = x.keys().chain(y.keys()).collect();
                fields.sort();
                fields.dedup();
                for f in fields {
                    if x.get(f) != y.get(f) {
                        out.push(FieldChange {
                            path: format!("conditions[{t}].{f}"),
                            before: x.get(f).map(keep_value),
                            after: y.get(f).map(keep_value),
                        });
                    }
                }
            }
            // One that comes or goes: whole.
            _ if x != y => out.push(FieldChange {
                path: format!("conditions[{t}]"),
                before: x.map(keep_value),
                after: y.map(keep_value),
            }),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_log_keeps_the_last_records_and_counts_skips() {
        let mut log = Log::default();
        for i in 0..5 {
            log.triggered(Trigger::Changed { generation: Some(i), resource_version: None });
            log.begin(Some(i), Some("1"));
            log.end(3, Duration::from_millis(2), false, Ended::Succeeded { next_in_seconds: None });
        }
        log.begin(Some(5), None);
        log.end(3, Duration::ZERO, true, Ended::Succeeded { next_in_seconds: None });
        let (records, skipped) = log.records();
        assert_eq!(records.len(), 3);
        assert_eq!(records[0].generation, Some(2));
        assert_eq!(skipped, 1);
        assert_eq!(
            records[2].triggers,
            vec![Trigger::Changed { generation: Some(4), resource_version: None }]
        );
    }

    #[test]
    fn records_keep_the_last_ones_compressed() {
        let mut records = Records::default();
        let mut log = Log::default();
        for i in 0..25 {
            log.begin(Some(i), Some("1"));
            log.draft().expect("a draft").children((0..3).map(|c| Child {
                action: ChildAction::Configured,
                kind: "apps/v1/Deployment".into(),
                namespace: Some("default".into()),
                name: format!("child-{c}"),
            }));
            let Some(Draft { record, .. }) = log.draft.take().map(|d| *d) else { panic!("a draft") };
            records.push(&record, 10);
        }
        assert_eq!(records.len(), 10);
        let read = records.read();
        assert_eq!(
            read.iter().map(|r| r.generation).collect::<Vec<_>>(),
            (15..25).map(Some).collect::<Vec<_>>()
        );
        assert_eq!(records.last().and_then(|r| r.generation), Some(24));
        let json: usize = read.iter().map(|r| serde_json::to_string(r).map_or(0, |t| t.len() + 1)).sum();
        assert!(records.block.len() * 3 < json, "{} bytes for {json} of JSON", records.block.len());
    }

    #[test]
    fn a_record_reads_back_from_its_json() {
        let mut log = Log::default();
        log.triggered(Trigger::Child {
            kind: "v1/Secret".into(),
            namespace: None,
            name: "t".into(),
            deleted: true,
        });
        log.begin(Some(1), Some("7"));
        log.end(3, Duration::from_millis(2), false, Ended::Succeeded { next_in_seconds: Some(5.0) });
        let record = log.records().0.pop().expect("a record");
        let text = serde_json::to_string(&record).expect("JSON");
        assert!(!text.contains("moreTriggers"), "zero counts are left out: {text}");
        let back: Reconcile = serde_json::from_str(&text).expect("reads back");
        assert_eq!(back, record);
    }

    #[test]
    fn triggers_coalesce_and_a_timer_stands_in_when_none_was_noted() {
        let mut log = Log::default();
        for n in 0..6 {
            log.triggered(Trigger::Watched {
                kind: "v1/Secret".into(),
                namespace: None,
                name: format!("s{n}"),
            });
        }
        log.triggered(Trigger::Watched { kind: "v1/Secret".into(), namespace: None, name: "s0".into() });
        log.begin(None, None);
        let d = log.draft().expect("draft");
        assert_eq!(d.record.triggers.len(), MAX_TRIGGERS);
        assert_eq!(d.record.more_triggers, 2);
        log.end(10, Duration::ZERO, false, Ended::Succeeded { next_in_seconds: Some(30.0) });
        log.timer(Some(Trigger::Tick));
        log.begin(None, None);
        log.end(10, Duration::ZERO, false, Ended::Succeeded { next_in_seconds: None });
        assert_eq!(log.kept().last().expect("record").triggers, vec![Trigger::Tick]);
    }

    #[test]
    fn status_changes_name_fields_and_conditions_by_type() {
        let before = json!({"phase": "Pending", "replicas": 1, "conditions": [
            {"type": "Ready", "status": "False", "reason": "Waiting", "lastTransitionTime": "a"},
            {"type": "Reconciled", "status": "True", "reason": "ReconcileSucceeded", "lastTransitionTime": "a"}
        ]});
        let after = json!({"phase": "Running", "replicas": 1, "url": "http://x", "conditions": [
            {"type": "Ready", "status": "True", "reason": "ChildrenCurrent", "lastTransitionTime": "b"},
            {"type": "Reconciled", "status": "True", "reason": "ReconcileSucceeded", "lastTransitionTime": "b"}
        ]});
        let obj = |v: Value| v.as_object().cloned().expect("an object");
        let changes = status_changes(&obj(before), &obj(after));
        let paths: Vec<&str> = changes.iter().map(|c| c.path.as_str()).collect();
        assert_eq!(paths, ["conditions[Ready].reason", "conditions[Ready].status", "phase", "url"]);
        assert_eq!(changes[2].before, Some(json!("Pending")));
        assert_eq!(changes[3].before, None);
        assert_eq!(changes[1].after, Some(json!("True")));
        // A condition that appears is shown whole, without its times and generation.
        let first = status_changes(
            &Map::new(),
            &obj(json!({"conditions": [
                {"type": "Ready", "status": "False", "reason": "ChildInProgress", "lastTransitionTime": "a", "observedGeneration": 1}
            ]})),
        );
        assert_eq!(first[0].path, "conditions[Ready]");
        assert_eq!(first[0].after, Some(json!({"status": "False", "reason": "ChildInProgress"})));
    }

    #[test]
    fn long_values_are_cut() {
        let long = "é".repeat(400);
        let kept = keep_value(&json!(long));
        let s = kept.as_str().expect("string");
        assert!(s.len() <= MAX_VALUE + '…'.len_utf8());
        assert!(s.ends_with('…'));
        let big = json!({"items": vec!["abcdefgh"; 100]});
        assert!(keep_value(&big).is_string());
    }
}

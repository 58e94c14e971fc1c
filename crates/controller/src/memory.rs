//! Everything one controller remembers about its primary objects, in one place
//! ([`Memory`]): created when an object is first seen and dropped when it goes.
//!
//! Per object (by key, `namespace/name`) it keeps:
//!
//! - the versions the controller's own writes produced (the object's status and ApplySet
//!   record, its children's applies), so that their watch events are not taken for
//!   changes (see [`Memory::is_echo`]), with the reconciles started and running;
//! - the failures in a row, which set the retry backoff;
//! - the fingerprint of the last deterministic successful reconcile (see `fingerprint`);
//! - whether a deletion is orphaning its children, or a child was deleted (the next
//!   reconcile first makes sure the object is still there);
//! - whether a sharded member has seen it arrive;
//! - its reconcile history (see `history`), when the run keeps one.
//!
//! The applier keeps what it applied and wrote to the object's status by uid; forgetting
//! an object forgets those too. An object is forgotten on its watch's Delete event, when a
//! relist no longer has it, when a worker finds it gone, and when its finalizer is
//! removed: a cluster that churns objects never grows this memory (`bench/` soaks it, and
//! `ctop_remembered_objects` counts it).

use foldhash::HashMap;
use std::time::Duration;

use ctop_applier::Applier;
use parking_lot::Mutex;
use prometheus_client::metrics::gauge::Gauge;
use tokio::sync::Notify;

use crate::fingerprint::Fingerprint;
use crate::history::{Draft, Ended, Log, Reconcile, Trigger};
use crate::inspect::ChangeTx;
use crate::object::{Object, object_key};

/// How long a trigger waits for a running reconcile of its primary before it counts.
const WAIT: Duration = Duration::from_secs(30);

/// Versions kept per written object (the ApplySet record may write the owner twice, then
/// the status).
const KEEP: usize = 8;

/// What one controller remembers about each of its primary objects (see the module docs).
pub(crate) struct Memory {
    objects: Mutex<HashMap<String, Remembered>>,
    /// Wakes triggers waiting for a reconcile to end.
    ended: Notify,
    applier: Applier,
    gauges: Gauges,
    /// Reconciles kept per object in its history; 0: no history.
    keep: usize,
    /// Told the key of each object whose history grew (see `inspect`).
    changes: Option<ChangeTx>,
}

/// The series of `ctop_remembered_objects` of one controller.
#[derive(Clone, Debug, Default)]
pub(crate) struct Gauges {
    /// Objects this memory holds.
    pub(crate) objects: Gauge,
    /// Owners the applier remembers applies of.
    pub(crate) applied: Gauge,
    /// Objects the status writer remembers a write of.
    pub(crate) status: Gauge,
}

/// What is remembered about one primary object.
#[derive(Default)]
struct Remembered {
    uid: Option<String>,
    /// Versions written, by object (`apiVersion/kind/namespace/name`: the primary or one of
    /// its children), each with the number of reconciles started when it was written.
    written: HashMap<String, Vec<(String, u64)>>,
    /// Reconciles started.
    started: u64,
    /// Reconciles running (at most one, unless a test drives two).
    running: usize,
    /// The object (its written key) and the resourceVersion the latest reconcile read at
    /// its start.
    read: Option<(String, String)>,
    /// Failed reconciles in a row.
    failures: u32,
    fingerprint: Option<Fingerprint>,
    /// Seen being deleted with `propagationPolicy: Orphan`.
    orphaning: bool,
    /// Seen being deleted at all (its failures were forgotten then).
    deleting: bool,
    /// A child was deleted since the last reconcile: the object may be gone too.
    child_deleted: bool,
    /// A sharded member has seen it arrive.
    arrived: bool,
    /// The API server said the object of `uid` is gone while the cache still holds it (see
    /// [`Memory::gone`]).
    gone: bool,
    /// Its reconcile history (none when the run keeps none).
    log: Option<Box<Log>>,
}

/// A reconcile of one primary in progress (see [`Memory::begin`]).
pub(crate) struct Running<'a> {
    memory: &'a Memory,
    key: String,
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        if let Some(r) = self.memory.objects.lock().get_mut(&self.key) {
            r.running = r.running.saturating_sub(1);
        }
        self.memory.ended.notify_waiters();
        self.memory.publish();
    }
}

impl Memory {
    /// An empty memory; forgetting an object also forgets it in `applier` (and its status
    /// writer). `gauges` follow the sizes of the three.
    pub(crate) fn new(applier: Applier, gauges: Gauges) -> Self {
        Self { objects: Mutex::default(), ended: Notify::new(), applier, gauges, keep: 0, changes: None }
    }

    /// This memory keeping the last `keep` reconciles of each object (0: none), and
    /// telling `changes` the key of each object whose history grew.
    pub(crate) fn with_history(mut self, keep: usize, changes: Option<ChangeTx>) -> Self {
        self.keep = keep;
        self.changes = changes;
        self
    }

    /// Set the gauges to the sizes now (after a reconcile, which may have grown the
    /// applier's memory, and after a forget).
    fn publish(&self) {
        let n = self.objects.lock().len();
        self.gauges.objects.set(gauge(n));
        self.gauges.applied.set(gauge(self.applier.remembered()));
        self.gauges.status.set(gauge(self.applier.status_writer().remembered()));
    }

    /// Objects remembered.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.objects.lock().len()
    }

    /// Run `f` on what is remembered of the object at `key`, remembering it from now on.
    fn with<T>(&self, key: &str, f: impl FnOnce(&mut Remembered) -> T) -> T {
        let mut objects = self.objects.lock();
        if let Some(r) = objects.get_mut(key) {
            return f(r);
        }
        let out = f(objects.entry(key.to_owned()).or_default());
        self.gauges.objects.set(gauge(objects.len()));
        out
    }

    /// Forget the object at `key`: here, in the applier and in its status writer.
    pub(crate) fn forget(&self, key: &str) {
        let gone = self.objects.lock().remove(key);
        if let Some(uid) = gone.and_then(|r| r.uid) {
            self.forget_uid(&uid);
        }
        self.publish();
    }

    /// The cache saw the object at `key` go: forget it, unless a reconcile of it is running.
    /// That reconcile still needs what the applier remembers of it (a child it made and now
    /// finds gone is created again only once the owner is confirmed to exist), and its
    /// worker forgets the object when it finds it gone from the cache afterwards.
    pub(crate) fn forget_idle(&self, key: &str) {
        if self.objects.lock().get(key).is_some_and(|r| r.running > 0) {
            return;
        }
        self.forget(key);
    }

    /// The API server said the object at `key` is gone, though the cache still holds it
    /// (its deletion event is on the way): what is remembered of it goes, here, in the
    /// applier and in its status writer, and until the cache drops it no reconcile of it
    /// runs (see [`Memory::known_gone`]). One would find its children gone (the garbage
    /// collector deletes them) and no memory of having made them, and create them again.
    /// The mark goes with the rest when the object is forgotten (its deletion event, or a
    /// worker that finds it gone from the cache).
    pub(crate) fn gone(&self, key: &str) {
        let uid = {
            let mut objects = self.objects.lock();
            let Some(r) = objects.get_mut(key) else { return };
            let uid = r.uid.clone();
            *r = Remembered { uid: uid.clone(), running: r.running, gone: true, ..Remembered::default() };
            uid
        };
        match uid {
            Some(uid) => self.forget_uid(&uid),
            None => self.publish(),
        }
    }

    /// Whether the API server said the object at `key` is gone (see [`Memory::gone`]).
    pub(crate) fn known_gone(&self, key: &str) -> bool {
        self.objects.lock().get(key).is_some_and(|r| r.gone)
    }

    /// Forget what the applier and its status writer remember of the object `uid` (when
    /// its key may already have been forgotten).
    pub(crate) fn forget_uid(&self, uid: &str) {
        self.applier.forget(uid);
        self.applier.status_writer().forget(uid);
        self.publish();
    }

    /// Forget every object `keep` says no longer exists (after a relist, which reports
    /// no deletions). An object being reconciled stays until its worker has looked.
    pub(crate) fn retain(&self, keep: impl Fn(&str) -> bool) {
        let gone: Vec<String> = self
            .objects
            .lock()
            .iter()
            .filter(|(k, r)| r.running == 0 && !keep(k))
            .map(|(k, _)| k.clone())
            .collect();
        for key in gone {
            self.forget(&key);
        }
    }

    // ---- a reconcile and the echoes of its writes ----

    /// A reconcile of `o` (of `kind`, `apiVersion/kind`) starts; the triggers of its writes
    /// wait until the returned guard is dropped.
    pub(crate) fn begin(&self, kind: &str, o: &Object) -> Running<'_> {
        let key = object_key(o);
        self.with(&key, |r| {
            if r.uid.as_deref() != o.uid() {
                r.uid = o.uid().map(str::to_owned);
                // Another object under the name: what was gone was the one before.
                r.gone = false;
            }
            r.read = o.resource_version().map(|v| (written_key(kind, o.namespace(), o.name()), v.to_owned()));
            r.running += 1;
            r.started += 1;
            if self.keep > 0 {
                r.log.get_or_insert_default().begin(o.generation(), o.resource_version());
            }
        });
        Running { memory: self, key }
    }

    /// Remember that a reconcile of `primary` (its key) wrote the object of `kind` at
    /// `namespace`/`name` (the primary itself or a child), which is now at `version`.
    pub(crate) fn wrote(
        &self,
        primary: &str,
        kind: &str,
        namespace: Option<&str>,
        name: &str,
        version: String,
    ) {
        let mut objects = self.objects.lock();
        // A reconcile of an object forgotten meanwhile (deleted) leaves nothing behind.
        let Some(r) = objects.get_mut(primary) else { return };
        let started = r.started;
        let versions = r.written.entry(written_key(kind, namespace, name)).or_default();
        if versions.len() == KEEP {
            versions.remove(0);
        }
        versions.push((version, started));
    }

    /// Whether `o`, of `kind`, is the echo of one of the controller's own writes of it
    /// during a reconcile of `primary` (the object itself, or a child's owner); each echo
    /// is recognised once. Waits until no reconcile of `primary` is running.
    pub(crate) async fn is_echo(&self, kind: &str, o: &Object, primary: &str) -> bool {
        let Some(version) = o.resource_version() else { return false };
        let key = written_key(kind, o.namespace(), o.name());
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let ended = self.ended.notified();
            tokio::pin!(ended);
            ended.as_mut().enable();
            {
                let mut objects = self.objects.lock();
                let Some(r) = objects.get_mut(primary) else { return false };
                if r.running == 0 {
                    let started = r.started;
                    let read_this = r.read.as_ref().is_some_and(|(k, v)| *k == key && v == version);
                    let Some(versions) = r.written.get_mut(&key) else { return false };
                    let Some(i) = versions.iter().position(|(v, _)| v == version) else { return false };
                    let (_, at) = versions.remove(i);
                    if versions.is_empty() {
                        r.written.remove(&key);
                    }
                    // A reconcile that started after the write and before this event may
                    // have read a cache without it: then the event is a trigger after all,
                    // unless that reconcile read this very version of the object.
                    return at == started || read_this;
                }
            }
            if tokio::time::timeout_at(deadline, ended).await.is_err() {
                return false;
            }
        }
    }

    /// The child `o` (of `kind`) of `primary` was deleted: its written versions go, and the
    /// next reconcile of `primary` first checks that it still exists (the garbage collector
    /// deletes the children of an object already gone, and the primary's cache may not
    /// have seen that yet).
    pub(crate) fn child_deleted(&self, primary: &str, kind: &str, o: &Object) {
        let mut objects = self.objects.lock();
        let Some(r) = objects.get_mut(primary) else { return };
        r.written.remove(&written_key(kind, o.namespace(), o.name()));
        r.child_deleted = true;
    }

    /// Whether a child of the object at `key` was deleted before its reconcile began (see
    /// [`Memory::child_deleted`]); read by the reconcile after [`Memory::begin`].
    pub(crate) fn must_confirm(&self, key: &str) -> bool {
        self.objects.lock().get(key).is_some_and(|r| r.child_deleted)
    }

    /// Note that a reconcile confirmed the object at `key` exists (see
    /// [`Memory::must_confirm`]).
    pub(crate) fn confirmed(&self, key: &str) {
        if let Some(r) = self.objects.lock().get_mut(key) {
            r.child_deleted = false;
        }
    }

    // ---- the history ----

    /// Note that `trigger` queued the object at `key` (nothing without a history: then
    /// `trigger` is not called). The key is queued too, so an object that is gone is
    /// forgotten by the worker that finds it gone.
    pub(crate) fn triggered(&self, key: &str, trigger: impl FnOnce() -> Trigger) {
        if self.keep > 0 {
            // Made before the lock is taken: it may ask this memory (a relist asks
            // `has_history`), and the lock is not reentrant.
            let trigger = trigger();
            self.with(key, |r| r.log.get_or_insert_default().triggered(trigger));
        }
    }

    /// Note why the timer of the object at `key` was set (none: it was cleared).
    pub(crate) fn timer(&self, key: &str, trigger: Option<Trigger>) {
        if self.keep == 0 {
            return;
        }
        if let Some(log) = self.objects.lock().get_mut(key).and_then(|r| r.log.as_mut()) {
            log.timer(trigger);
        }
    }

    /// Note something on the record of the reconcile of the object at `key` running now.
    pub(crate) fn note(&self, key: &str, f: impl FnOnce(&mut Draft)) {
        if self.keep == 0 {
            return;
        }
        if let Some(draft) = self.objects.lock().get_mut(key).and_then(|r| r.log.as_mut()?.draft()) {
            f(draft);
        }
    }

    /// The reconcile of the object at `key` running now ended after `took`: its record is
    /// kept (or, `skipped`, counted).
    pub(crate) fn ended(&self, key: &str, took: Duration, skipped: bool, ended: impl FnOnce() -> Ended) {
        if self.keep == 0 {
            return;
        }
        if let Some(log) = self.objects.lock().get_mut(key).and_then(|r| r.log.as_mut()) {
            log.end(self.keep, took, skipped, ended());
        } else {
            return;
        }
        if let Some(tx) = &self.changes {
            tx.send(key);
        }
    }

    /// Whether the object at `key` has a history (it reconciled since the run started).
    pub(crate) fn has_history(&self, key: &str) -> bool {
        self.keep > 0 && self.objects.lock().get(key).is_some_and(|r| r.log.is_some())
    }

    /// The history of the object at `key`: its records, oldest first, and the reconciles
    /// skipped.
    pub(crate) fn history(&self, key: &str) -> Option<(Vec<Reconcile>, u64)> {
        self.objects.lock().get(key).and_then(|r| r.log.as_ref()).map(|l| l.records())
    }

    /// The last record of each object that has one, by key.
    pub(crate) fn last_records(&self) -> HashMap<String, Reconcile> {
        let objects = self.objects.lock();
        let kept: Vec<(String, crate::history::Records)> =
            objects.iter().filter_map(|(k, r)| Some((k.clone(), r.log.as_ref()?.kept().clone()))).collect();
        drop(objects);
        // Read outside the lock: the reconciles wait for none of it.
        kept.into_iter().filter_map(|(k, records)| Some((k, records.last()?))).collect()
    }

    // ---- retries ----

    /// Count one more failure of the object at `key`; returns the failures in a row.
    pub(crate) fn failed(&self, key: &str) -> u32 {
        self.with(key, |r| {
            r.failures = r.failures.saturating_add(1);
            r.failures
        })
    }

    /// The object at `key` reconciled successfully: its failures are forgotten.
    pub(crate) fn succeeded(&self, key: &str) {
        if let Some(r) = self.objects.lock().get_mut(key) {
            r.failures = 0;
        }
    }

    // ---- fingerprints ----

    /// Take the fingerprint of the object at `key` out (put it back with
    /// [`Memory::set_fingerprint`] when it still holds).
    pub(crate) fn take_fingerprint(&self, key: &str) -> Option<Fingerprint> {
        self.objects.lock().get_mut(key).and_then(|r| r.fingerprint.take())
    }

    /// Keep `fp` as the fingerprint of the object at `key` (`None` forgets it).
    pub(crate) fn set_fingerprint(&self, key: &str, fp: Option<Fingerprint>) {
        match fp {
            Some(fp) => self.with(key, |r| r.fingerprint = Some(fp)),
            None => {
                if let Some(r) = self.objects.lock().get_mut(key) {
                    r.fingerprint = None;
                }
            }
        }
    }

    // ---- what the primary watch shows ----

    /// Note what a watch event of the primary `o` shows: a deletion that orphans its
    /// children (the `orphan` finalizer, which the garbage collector removes once it has
    /// released them, so it is remembered), and the start of a deletion, which forgets the
    /// failures so that the finalizer does not wait out the backoff of failed reconciles.
    /// Returns whether `o` just started being deleted.
    pub(crate) fn observe(&self, o: &Object) -> bool {
        if !o.is_deleting() {
            return false;
        }
        let orphan = o.finalizers().iter().any(|f| f == ORPHAN);
        self.with(&object_key(o), |r| {
            r.orphaning |= orphan;
            let started = !r.deleting;
            if started {
                r.deleting = true;
                r.failures = 0;
            }
            started
        })
    }

    /// Whether the object at `key` was seen being deleted with `propagationPolicy: Orphan`.
    pub(crate) fn orphaning(&self, key: &str) -> bool {
        self.objects.lock().get(key).is_some_and(|r| r.orphaning)
    }

    /// Note that a sharded member saw the object at `key` (its primary watch); `true` the
    /// first time.
    pub(crate) fn arrive(&self, key: &str) -> bool {
        self.with(key, |r| !std::mem::replace(&mut r.arrived, true))
    }
}

/// The finalizer the API server puts on an object deleted with `propagationPolicy: Orphan`:
/// its children must outlive it.
pub(crate) const ORPHAN: &str = "orphan";

fn gauge(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// The key of a written object: `apiVersion/kind/namespace/name`.
fn written_key(kind: &str, namespace: Option<&str>, name: &str) -> String {
    format!("{kind}/{}/{name}", namespace.unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn memory() -> Memory {
        // The applier is only asked to forget (no request is made): a client to nowhere.
        let config = kube::Config::new("http://127.0.0.1:9".parse().expect("url"));
        let client = kube::Client::try_from(config).expect("client");
        Memory::new(Applier::new(client, ctop_applier::ApplierConfig::new("t")), Gauges::default())
    }

    fn object(v: serde_json::Value) -> Object {
        serde_json::from_value(v).expect("object")
    }

    #[tokio::test]
    async fn only_a_version_written_is_an_echo_and_only_once() {
        let m = memory();
        let p = object(serde_json::json!({"metadata": {"name": "p", "namespace": "ns", "uid": "u0"}}));
        drop(m.begin("test/v1/Widget", &p));
        let mut o = object(serde_json::json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "a", "namespace": "ns", "uid": "u1", "resourceVersion": "7"}
        }));
        m.wrote("ns/p", "v1/Secret", Some("ns"), "a", "7".into());
        assert!(!m.is_echo("v1/ConfigMap", &o, "ns/p").await, "another kind");
        assert!(m.is_echo("v1/Secret", &o, "ns/p").await);
        assert!(!m.is_echo("v1/Secret", &o, "ns/p").await, "an echo is recognised once");
        m.wrote("ns/p", "v1/Secret", Some("ns"), "a", "7".into());
        o = object(serde_json::json!({
            "metadata": {"name": "a", "namespace": "ns", "uid": "u1", "resourceVersion": "8"}
        }));
        assert!(!m.is_echo("v1/Secret", &o, "ns/p").await, "a later version is someone else's change");
    }

    #[tokio::test]
    async fn an_object_the_server_said_is_gone_stays_gone_until_forgotten_or_replaced() {
        let m = memory();
        let p = object(serde_json::json!({"metadata": {"name": "p", "namespace": "ns", "uid": "u0"}}));
        drop(m.begin("test/v1/Widget", &p));
        m.wrote("ns/p", "v1/Secret", Some("ns"), "a", "7".into());
        assert!(!m.known_gone("ns/p"));
        m.gone("ns/p");
        assert!(m.known_gone("ns/p"), "until the cache drops it");
        let a = object(serde_json::json!({
            "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "a", "namespace": "ns", "resourceVersion": "7"}
        }));
        assert!(!m.is_echo("v1/Secret", &a, "ns/p").await, "what it wrote is forgotten");
        // Another object under the name is not gone.
        let q = object(serde_json::json!({"metadata": {"name": "p", "namespace": "ns", "uid": "u1"}}));
        drop(m.begin("test/v1/Widget", &q));
        assert!(!m.known_gone("ns/p"));
        m.gone("ns/p");
        m.forget("ns/p");
        assert!(!m.known_gone("ns/p"));
        assert!(m.objects.lock().is_empty(), "the mark goes with the object");
        m.gone("ns/p");
        assert!(m.objects.lock().is_empty(), "nothing is marked that was not remembered");
    }

    #[tokio::test]
    async fn an_object_seen_to_go_while_it_is_reconciled_is_forgotten_after() {
        let m = memory();
        let p = object(serde_json::json!({"metadata": {"name": "p", "namespace": "ns", "uid": "u0"}}));
        let running = m.begin("test/v1/Widget", &p);
        m.forget_idle("ns/p");
        assert_eq!(m.objects.lock().len(), 1, "the running reconcile keeps what it needs");
        drop(running);
        m.forget_idle("ns/p");
        assert!(m.objects.lock().is_empty());
    }

    #[tokio::test]
    async fn an_event_that_beats_the_write_response_waits_for_the_reconcile() {
        let m = std::sync::Arc::new(memory());
        let p = object(serde_json::json!({"metadata": {"name": "p", "namespace": "ns"}}));
        let o = object(serde_json::json!({
            "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "a", "namespace": "ns", "resourceVersion": "9"}
        }));
        let running = m.begin("test/v1/Widget", &p);
        let waiting = {
            let m = m.clone();
            tokio::spawn(async move { m.is_echo("v1/Secret", &o, "ns/p").await })
        };
        tokio::task::yield_now().await;
        m.wrote("ns/p", "v1/Secret", Some("ns"), "a", "9".into());
        drop(running);
        assert!(waiting.await.expect("joins"), "recognised once the reconcile ended");
    }

    #[tokio::test]
    async fn a_reconcile_that_may_have_missed_the_write_makes_its_echo_a_trigger() {
        let m = memory();
        let p = object(serde_json::json!({"metadata": {"name": "p", "namespace": "ns"}}));
        let o = object(serde_json::json!({
            "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "a", "namespace": "ns", "resourceVersion": "5"}
        }));
        drop(m.begin("test/v1/Widget", &p));
        m.wrote("ns/p", "v1/Secret", Some("ns"), "a", "5".into());
        // The next reconcile starts before the event reached the cache.
        drop(m.begin("test/v1/Widget", &p));
        assert!(!m.is_echo("v1/Secret", &o, "ns/p").await);
    }

    #[tokio::test]
    async fn a_reconcile_that_read_the_written_version_makes_its_echo_no_trigger() {
        let m = memory();
        let p4 =
            object(serde_json::json!({"metadata": {"name": "p", "namespace": "ns", "resourceVersion": "4"}}));
        let p5 =
            object(serde_json::json!({"metadata": {"name": "p", "namespace": "ns", "resourceVersion": "5"}}));
        drop(m.begin("test/v1/Widget", &p4));
        m.wrote("ns/p", "test/v1/Widget", Some("ns"), "p", "5".into());
        // The next reconcile starts before the event, but its cache already had version 5.
        drop(m.begin("test/v1/Widget", &p5));
        assert!(m.is_echo("test/v1/Widget", &p5, "ns/p").await);
    }

    #[tokio::test]
    async fn forgetting_drops_everything_and_a_late_write_recreates_nothing() {
        let m = memory();
        let p = object(serde_json::json!({"metadata": {"name": "p", "namespace": "ns", "uid": "u"}}));
        let running = m.begin("test/v1/Widget", &p);
        m.wrote("ns/p", "v1/Secret", Some("ns"), "a", "3".into());
        assert_eq!(m.failed("ns/p"), 1);
        assert_eq!(m.len(), 1);
        m.forget("ns/p");
        // The reconcile that was running when the object went writes on.
        m.wrote("ns/p", "v1/Secret", Some("ns"), "b", "4".into());
        drop(running);
        assert_eq!(m.len(), 0);
        // A relist that no longer has an object forgets it; one being reconciled stays.
        let running = m.begin("test/v1/Widget", &p);
        let q = object(serde_json::json!({"metadata": {"name": "q", "namespace": "ns"}}));
        drop(m.begin("test/v1/Widget", &q));
        m.retain(|_| false);
        assert_eq!(m.len(), 1);
        drop(running);
        m.retain(|_| false);
        assert_eq!(m.len(), 0);
    }

    #[tokio::test]
    async fn a_deletion_forgets_the_failures_once_and_an_orphaning_one_is_remembered() {
        let m = memory();
        let alive = object(serde_json::json!({"metadata": {"name": "p", "namespace": "ns"}}));
        assert_eq!(m.failed("ns/p"), 1);
        assert_eq!(m.failed("ns/p"), 2);
        assert!(!m.observe(&alive));
        let deleting = object(serde_json::json!({"metadata": {
            "name": "p", "namespace": "ns", "deletionTimestamp": "2026-01-01T00:00:00Z", "finalizers": ["orphan", "x"]
        }}));
        assert!(m.observe(&deleting));
        assert_eq!(m.failed("ns/p"), 1, "the backoff starts over");
        assert!(!m.observe(&deleting), "only the first sight of the deletion");
        assert_eq!(m.failed("ns/p"), 2);
        assert!(m.orphaning("ns/p"));
    }

    #[tokio::test]
    async fn a_trigger_may_ask_the_memory_and_the_history_goes_with_the_object() {
        let m = memory().with_history(crate::history::DEFAULT_KEPT, None);
        let p = object(serde_json::json!({"metadata": {"name": "p", "namespace": "ns", "generation": 1}}));
        // A relist asks whether the object has a history while making its trigger.
        m.triggered("ns/p", || if m.has_history("ns/p") { Trigger::Relisted } else { Trigger::Started });
        let running = m.begin("test/v1/Widget", &p);
        drop(running);
        m.ended("ns/p", Duration::from_millis(1), false, || Ended::Succeeded { next_in_seconds: None });
        let (records, _) = m.history("ns/p").expect("a history");
        assert_eq!(records.len(), 1);
        assert_eq!(records[0].triggers, vec![Trigger::Started]);
        m.forget("ns/p");
        assert!(m.history("ns/p").is_none(), "forgotten with the object");
        assert!(!m.has_history("ns/p"));
    }
}

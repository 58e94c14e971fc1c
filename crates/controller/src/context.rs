//! What every reconcile of one controller shares ([`Ctx`]), and the memory of the
//! controller's own writes ([`OwnWrites`]).

use std::collections::HashMap;
use std::sync::Arc;

use ctop_applier::Applier;
use ctop_core::ControllerSpec;
use kube::Client;
use kube::api::ApiResource;
use kube::runtime::events::Recorder;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::{Notify, watch};

use crate::fingerprint::Fingerprints;
use crate::health::{Health, Metrics};
use crate::informer::Cached;
use crate::object::Object;
use crate::options::RunOptions;
use crate::retry::Bucket;
use crate::run::HandlerSource;

/// The state of one running controller.
pub(crate) struct Ctx {
    pub(crate) spec: ControllerSpec,
    pub(crate) handlers: HandlerSource,
    pub(crate) retries: Arc<Bucket>,
    pub(crate) primary: ApiResource,
    /// `apiVersion/kind` of the primary kind.
    pub(crate) primary_kind: String,
    pub(crate) namespaced: bool,
    /// Whether the primary kind is one the operator defines (its CRD carries
    /// `status.conditions` and `observedGeneration`): only then does the controller write
    /// its own condition and the observed generation.
    pub(crate) owns_status: bool,
    pub(crate) caches: Arc<Vec<Cached>>,
    pub(crate) applier: Applier,
    pub(crate) recorder: Recorder,
    pub(crate) client: Client,
    pub(crate) options: RunOptions,
    pub(crate) health: Health,
    pub(crate) metrics: Metrics,
    pub(crate) leader: Option<watch::Receiver<bool>>,
    pub(crate) failures: Mutex<HashMap<String, u32>>,
    /// Kinds resolved for `patches`, by `apiVersion/kind`.
    pub(crate) kinds: Mutex<HashMap<String, (ApiResource, bool)>>,
    pub(crate) own_writes: Arc<OwnWrites>,
    /// The last deterministic outcome of each object (see `fingerprint`).
    pub(crate) fingerprints: Fingerprints,
    /// The uids of primaries seen being deleted with `propagationPolicy: Orphan` (see
    /// `finalize::note_orphaning`).
    pub(crate) orphaning: Arc<Mutex<std::collections::HashSet<String>>>,
    /// This replica's part in the ring of a sharded run (see `shard`).
    pub(crate) shard: Option<Arc<crate::shard::Shard>>,
    /// The objects a sharded member has seen arrive (see `shard::Arrivals`).
    pub(crate) arrivals: Option<Arc<crate::shard::Arrivals>>,
}

/// The resourceVersions the controller's own writes produced (status writes of primaries,
/// the ApplySet record on them, applies of children), by object. Their watch events come
/// back like anyone's; a trigger whose object carries exactly a version we wrote is the
/// controller's own echo and does not reconcile again. Any other change (another writer, a
/// later version) still does.
///
/// A watch event can arrive before the write's response: while a reconcile of a primary is
/// running, a trigger of it (its own event, or a child's) waits until the reconcile ended
/// and its versions are known ([`OwnWrites::is_echo`] is async; triggers are decided
/// concurrently, so a waiting one holds back no other).
#[derive(Default)]
pub(crate) struct OwnWrites {
    state: Mutex<State>,
    ended: Notify,
}

#[derive(Default)]
struct State {
    /// Versions written, by object (`kind/namespace/name`), each with the number of
    /// reconciles of its primary started when it was written; a few per object at most.
    versions: HashMap<String, Vec<(String, u64)>>,
    /// Reconciles started, by primary.
    started: HashMap<String, u64>,
    /// The version of each primary (by object key) its latest reconcile read at its start.
    read: HashMap<String, String>,
    /// Primaries (`namespace/name`) with a reconcile running.
    running: HashMap<String, usize>,
}

/// How long a trigger waits for a running reconcile of its primary before it counts.
const WAIT: Duration = Duration::from_secs(30);

/// Versions kept per object (the ApplySet record may write the owner twice, then status).
const KEEP: usize = 8;

/// A reconcile of one primary in progress (see [`OwnWrites::begin`]).
pub(crate) struct Running<'a> {
    own: &'a OwnWrites,
    primary: String,
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        let mut st = self.own.state.lock();
        if let Some(n) = st.running.get_mut(&self.primary) {
            *n -= 1;
            if *n == 0 {
                st.running.remove(&self.primary);
            }
        }
        drop(st);
        self.own.ended.notify_waiters();
    }
}

impl OwnWrites {
    /// A reconcile of `primary` (`namespace/name`) starts, reading it at `read` (its kind,
    /// and its resourceVersion); its triggers wait until the returned guard is dropped.
    pub(crate) fn begin(&self, primary: String, read: Option<(&str, &Object)>) -> Running<'_> {
        let mut st = self.state.lock();
        if let Some((kind, o)) = read
            && let Some(version) = o.resource_version()
        {
            st.read.insert(Self::key(kind, o.namespace(), o.name()), version.to_owned());
        }
        *st.running.entry(primary.clone()).or_default() += 1;
        *st.started.entry(primary.clone()).or_default() += 1;
        Running { own: self, primary }
    }

    /// Remember that the object of `kind` (`apiVersion/kind`) at `namespace`/`name` is at
    /// `version` because a reconcile of `primary` wrote it.
    pub(crate) fn wrote(
        &self,
        kind: &str,
        namespace: Option<&str>,
        name: &str,
        version: String,
        primary: &str,
    ) {
        let mut st = self.state.lock();
        let started = st.started.get(primary).copied().unwrap_or_default();
        let versions = st.versions.entry(Self::key(kind, namespace, name)).or_default();
        if versions.len() == KEEP {
            versions.remove(0);
        }
        versions.push((version, started));
    }

    /// Whether `o`, of `kind`, is the echo of one of our own writes of it (each is
    /// recognised once); first waits until no reconcile of `primary` (the object itself,
    /// or a child's owner) is running.
    pub(crate) async fn is_echo(&self, kind: &str, o: &Object, primary: &str) -> bool {
        let Some(version) = o.resource_version() else { return false };
        let key = Self::key(kind, o.namespace(), o.name());
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let ended = self.ended.notified();
            tokio::pin!(ended);
            ended.as_mut().enable();
            {
                let mut st = self.state.lock();
                if !st.running.contains_key(primary) {
                    let started = st.started.get(primary).copied().unwrap_or_default();
                    let Some(versions) = st.versions.get_mut(&key) else { return false };
                    let Some(i) = versions.iter().position(|(v, _)| v == version) else { return false };
                    let (_, at) = versions.remove(i);
                    // A reconcile that started after the write and before this event may
                    // have read a cache without it: then the event is a trigger after all,
                    // unless that reconcile read this very version of the object.
                    return at == started || st.read.get(&key).is_some_and(|v| v == version);
                }
            }
            if tokio::time::timeout_at(deadline, ended).await.is_err() {
                return false;
            }
        }
    }

    /// Forget an object of `kind` (it was deleted).
    pub(crate) fn forget(&self, kind: &str, o: &Object) {
        let key = Self::key(kind, o.namespace(), o.name());
        let mut st = self.state.lock();
        st.versions.remove(&key);
        st.read.remove(&key);
    }

    fn key(kind: &str, namespace: Option<&str>, name: &str) -> String {
        format!("{kind}/{}/{name}", namespace.unwrap_or_default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn only_a_version_written_is_an_echo_and_only_once() {
        let own = OwnWrites::default();
        let mut o: Object = serde_json::from_value(serde_json::json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "a", "namespace": "ns", "uid": "u1", "resourceVersion": "7"}
        }))
        .expect("object");
        own.wrote("v1/Secret", Some("ns"), "a", "7".into(), "ns/p");
        assert!(!own.is_echo("v1/ConfigMap", &o, "ns/p").await, "another kind");
        assert!(own.is_echo("v1/Secret", &o, "ns/p").await);
        assert!(!own.is_echo("v1/Secret", &o, "ns/p").await, "an echo is recognised once");
        own.wrote("v1/Secret", Some("ns"), "a", "7".into(), "ns/p");
        o = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "a", "namespace": "ns", "uid": "u1", "resourceVersion": "8"}
        }))
        .expect("object");
        assert!(!own.is_echo("v1/Secret", &o, "ns/p").await, "a later version is someone else's change");
    }

    #[tokio::test]
    async fn an_event_that_beats_the_write_response_waits_for_the_reconcile() {
        let own = std::sync::Arc::new(OwnWrites::default());
        let o: Object = serde_json::from_value(serde_json::json!({
            "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "a", "namespace": "ns", "resourceVersion": "9"}
        }))
        .expect("object");
        let running = own.begin("ns/p".into(), None);
        let waiting = {
            let own = own.clone();
            tokio::spawn(async move { own.is_echo("v1/Secret", &o, "ns/p").await })
        };
        tokio::task::yield_now().await;
        own.wrote("v1/Secret", Some("ns"), "a", "9".into(), "ns/p");
        drop(running);
        assert!(waiting.await.expect("joins"), "recognised once the reconcile ended");
    }

    #[tokio::test]
    async fn a_reconcile_that_may_have_missed_the_write_makes_its_echo_a_trigger() {
        let own = OwnWrites::default();
        let o: Object = serde_json::from_value(serde_json::json!({
            "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "a", "namespace": "ns", "resourceVersion": "5"}
        }))
        .expect("object");
        drop(own.begin("ns/p".into(), None));
        own.wrote("v1/Secret", Some("ns"), "a", "5".into(), "ns/p");
        // The next reconcile starts before the event reached the cache.
        drop(own.begin("ns/p".into(), None));
        assert!(!own.is_echo("v1/Secret", &o, "ns/p").await);
    }

    #[tokio::test]
    async fn a_reconcile_that_read_the_written_version_makes_its_echo_no_trigger() {
        let own = OwnWrites::default();
        let o: Object = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "p", "namespace": "ns", "resourceVersion": "5"}
        }))
        .expect("object");
        drop(own.begin("ns/p".into(), None));
        own.wrote("test/v1/Widget", Some("ns"), "p", "5".into(), "ns/p");
        // The next reconcile starts before the event, but its cache already had version 5.
        drop(own.begin("ns/p".into(), Some(("test/v1/Widget", &o))));
        assert!(own.is_echo("test/v1/Widget", &o, "ns/p").await);
    }
}

//! Watches and their caches: one watch per kind and scope, shared by everything that reads
//! or is triggered by that kind, feeding a [`Store`] (and, for managed kinds, an index
//! of ApplySet members). A kind read `metadataOnly` is listed and watched as
//! `PartialObjectMetadata` (the server sends each object's `metadata` alone) and cached as
//! an [`Object`] with nothing else.

use foldhash::{HashMap, HashSet};
use std::sync::Arc;

use futures::StreamExt as _;
use kube::Client;
use kube::api::ApiResource;
use kube::runtime::{WatchStreamExt as _, watcher};
use parking_lot::Mutex;
use tokio::sync::watch;

use crate::cluster::api_for;
use crate::object::object_key;
use crate::object::{Object, Wire};
use crate::store::Store;

/// A kind resolved through discovery, with its cache.
pub(crate) struct Cached {
    pub(crate) key: String,
    pub(crate) ar: ApiResource,
    pub(crate) namespaced: bool,
    pub(crate) store: Store,
    /// ApplySet members by set id, for managed kinds (see [`SetIndex`]).
    pub(crate) sets: Option<Arc<SetIndex>>,
    /// Where the cache holds every object of the kind: `Some(None)` everywhere,
    /// `Some(Some(ns))` in one namespace, `None` nowhere (its watch selects by label).
    pub(crate) complete: Option<Option<String>>,
}

impl Cached {
    /// Whether the cache holds every object there is in `namespace`.
    pub(crate) fn knows_all(&self, namespace: Option<&str>) -> bool {
        match &self.complete {
            Some(None) => true,
            Some(Some(ns)) => namespace == Some(ns.as_str()),
            None => false,
        }
    }
}

/// What a shared watch of one kind is for, besides filling its cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Role {
    /// The controller's kind: its events are the primary triggers.
    Primary,
    /// A `.manages()` kind: its events trigger the controlling owner.
    Owned,
    /// A `.reads()` kind: cached only.
    Read,
    /// A `.watches()` kind that no other watch covers: its events go to that mapper.
    Watch,
}

/// One watch of a kind in one scope (namespace, label selector), planned before any
/// starts so that every consumer is known: the cache `getObserved` reads and every
/// `.watches()` mapper of the kind are fed by the same stream, each event reaching the
/// mappers only after the cache holds it (as controller-runtime's shared informers do).
/// Two watches of one kind would race: a mapper could run, and its reconcile read the
/// cache, before the cache had the change that triggered it.
pub(crate) struct InformerPlan {
    pub(crate) key: String,
    pub(crate) ar: ApiResource,
    pub(crate) namespaced: bool,
    /// `None`: all namespaces (or a cluster-scoped kind).
    pub(crate) namespace: Option<String>,
    pub(crate) labels: Option<String>,
    /// A field selector the server applies (the primary watch of a declarative `Operator`:
    /// `metadata.name=<its name>`).
    pub(crate) fields: Option<String>,
    pub(crate) role: Role,
    /// What the controller filters itself before the cache (the primary kind's
    /// annotation selector); `None`: everything the server sends.
    pub(crate) scope: Option<EventScope>,
    /// `.watches()` fed from this watch, each through its own channel.
    pub(crate) subscribers: Vec<tokio::sync::mpsc::UnboundedSender<watcher::Event<Object>>>,
    /// Watch `PartialObjectMetadata` rather than whole objects (`.reads(kind, { metadataOnly: true })`).
    pub(crate) metadata_only: bool,
}

/// A started [`InformerPlan`].
pub(crate) struct Informer {
    /// The cache it fills.
    pub(crate) cache: Cached,
    pub(crate) stream: futures::stream::BoxStream<'static, Result<watcher::Event<Object>, watcher::Error>>,
    pub(crate) synced: watch::Receiver<bool>,
}

impl InformerPlan {
    pub(crate) fn new(
        key: String,
        ar: ApiResource,
        namespaced: bool,
        namespace: Option<String>,
        labels: Option<String>,
        role: Role,
    ) -> Self {
        Self {
            key,
            ar,
            namespaced,
            namespace,
            labels,
            fields: None,
            role,
            scope: None,
            subscribers: Vec::new(),
            metadata_only: false,
        }
    }

    /// Whether this watch sees every object a watch of `key` in `namespace` with
    /// `labels` would.
    pub(crate) fn covers(&self, key: &str, namespace: Option<&str>, labels: Option<&str>) -> bool {
        self.key == key
            && self.scope.is_none()
            && self.fields.is_none()
            && (self.namespace.is_none() || self.namespace.as_deref() == namespace)
            && (self.labels.is_none() || self.labels.as_deref() == labels)
    }

    /// Start the watch in a task of its own: the store first, then the ApplySet index
    /// (managed kinds), then the subscribers.
    pub(crate) fn start(self, client: &Client) -> Informer {
        let store = Store::default();
        let writer = store.clone();
        let sets = (self.role == Role::Owned).then(|| Arc::new(SetIndex::default()));
        let index = sets.clone();
        let subscribers = self.subscribers;
        let mut config = watcher::Config::default();
        if let Some(sel) = &self.labels {
            config = config.labels(sel);
        }
        if let Some(sel) = &self.fields {
            config = config.fields(sel);
        }
        // Readiness is tapped here: a second task waiting on a kube-runtime 5 store is never
        // woken (its readiness keeps one waker; see crates/kubesim/tests/store_ready.rs).
        let scope_filters = self.scope.is_some();
        let mut scope = self.scope;
        let (ar, namespaced, ns) = (&self.ar, self.namespaced, self.namespace.as_deref());
        let objects = if self.metadata_only {
            let api = api_for::<Wire<true>>(client, ar, namespaced, ns);
            watcher(api, config).default_backoff().map(|e| e.map(unwrap_event)).boxed()
        } else {
            let api = api_for::<Wire>(client, ar, namespaced, ns);
            watcher(api, config).default_backoff().map(|e| e.map(unwrap_event)).boxed()
        };
        let events = objects.filter_map(move |e| {
            std::future::ready(match e {
                Ok(e) => match &mut scope {
                    Some(scope) => scope.pass(e).map(Ok),
                    None => Some(Ok(e)),
                },
                Err(e) => Some(Err(e)),
            })
        });
        let (stream, synced) = tap_init_done(detach(events.inspect(move |e| {
            if let Ok(e) = e {
                writer.apply(e);
                if let Some(index) = &index {
                    index.observe(e);
                }
                for tx in &subscribers {
                    // A closed channel is a controller shutting down.
                    let _ = tx.send(e.clone());
                }
            }
        })));
        let filtered = self.labels.is_some() || self.fields.is_some() || scope_filters;
        let cache = Cached {
            complete: (!filtered).then_some(self.namespace),
            key: self.key,
            ar: self.ar,
            namespaced: self.namespaced,
            store,
            sets,
        };
        Informer { cache, stream: stream.boxed(), synced }
    }
}

/// The cached object of a watch event.
fn unwrap_event<const METADATA: bool>(e: watcher::Event<Wire<METADATA>>) -> watcher::Event<Object> {
    match e {
        watcher::Event::Apply(w) => watcher::Event::Apply(w.object),
        watcher::Event::Delete(w) => watcher::Event::Delete(w.object),
        watcher::Event::InitApply(w) => watcher::Event::InitApply(w.object),
        watcher::Event::Init => watcher::Event::Init,
        watcher::Event::InitDone => watcher::Event::InitDone,
    }
}

/// Where a `.watches()` gets its events.
pub(crate) enum WatchSource {
    /// From a shared watch of wider scope, narrowed client-side.
    Shared(tokio::sync::mpsc::UnboundedReceiver<watcher::Event<Object>>, EventScope),
    /// From its own watch (the index of its plan).
    Own(usize),
}

/// The client-side part of a watch's scope: what the server would have filtered (a
/// `.watches()` fed by a wider shared watch), or cannot filter at all (annotations). An
/// object that leaves the scope (its labels or annotations change) is passed on as a
/// deletion, as a server-side filtered watch reports it.
#[derive(Default)]
pub(crate) struct EventScope {
    namespace: Option<String>,
    labels: Option<ctop_core::LabelSelector>,
    annotations: Option<ctop_core::LabelSelector>,
    /// The objects inside the scope.
    inside: HashSet<String>,
}

impl EventScope {
    /// What a watch in `namespace` with `labels` must filter from `wider`'s events.
    pub(crate) fn narrowing(
        wider: &InformerPlan,
        namespace: Option<String>,
        labels: Option<&str>,
    ) -> Result<Self, ctop_core::LabelSelectorError> {
        Ok(Self {
            namespace: namespace.filter(|_| wider.namespace.is_none()),
            labels: match (&wider.labels, labels) {
                (None, Some(sel)) => Some(ctop_core::LabelSelector::parse(sel)?),
                _ => None,
            },
            ..Self::default()
        })
    }

    /// Objects whose annotations match `selector` (label-selector syntax).
    pub(crate) fn annotated(selector: &str) -> Result<Self, ctop_core::LabelSelectorError> {
        Ok(Self { annotations: Some(ctop_core::LabelSelector::parse(selector)?), ..Self::default() })
    }

    fn is_all(&self) -> bool {
        self.namespace.is_none() && self.labels.is_none() && self.annotations.is_none()
    }

    fn admits(&self, o: &Object) -> bool {
        self.namespace.as_deref().is_none_or(|ns| o.namespace() == Some(ns))
            && self.labels.as_ref().is_none_or(|sel| {
                let labels = o.labels();
                sel.matches_with(|k| labels.get(k))
            })
            && self.annotations.as_ref().is_none_or(|sel| {
                let annotations = o.annotations();
                sel.matches_with(|k| annotations.get(k))
            })
    }

    /// The event `e` as a watch of this scope reports it, if at all.
    pub(crate) fn pass(&mut self, e: watcher::Event<Object>) -> Option<watcher::Event<Object>> {
        if self.is_all() {
            return Some(e);
        }
        match e {
            watcher::Event::Apply(o) | watcher::Event::InitApply(o) if !self.admits(&o) => {
                self.inside.remove(&object_key(&o)).then_some(watcher::Event::Delete(o))
            }
            watcher::Event::Apply(ref o) | watcher::Event::InitApply(ref o) => {
                self.inside.insert(object_key(o));
                Some(e)
            }
            watcher::Event::Delete(o) => {
                self.inside.remove(&object_key(&o)).then_some(watcher::Event::Delete(o))
            }
            watcher::Event::Init | watcher::Event::InitDone => Some(e),
        }
    }

    pub(crate) fn apply(
        mut self,
        rx: tokio::sync::mpsc::UnboundedReceiver<watcher::Event<Object>>,
    ) -> impl futures::Stream<Item = Result<watcher::Event<Object>, watcher::Error>> + Send + 'static {
        let events = futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|e| (e, rx)) });
        events.filter_map(move |e| std::future::ready(self.pass(e).map(Ok)))
    }
}

/// The objects of one cached kind by their `applyset.kubernetes.io/part-of` label, kept
/// from the watch events, so that finding an owner's former children costs O(its
/// children) rather than a scan of the kind. It may hold a few objects already gone (a
/// relist does not report what disappeared): readers confirm each one in the store.
#[derive(Default)]
pub(crate) struct SetIndex {
    inner: Mutex<SetIndexInner>,
}

#[derive(Default)]
pub(crate) struct SetIndexInner {
    /// The members of each set, as (namespace, name).
    members: HashMap<String, HashSet<(String, String)>>,
    /// The set of each member, by namespace then name (looked up without building a key:
    /// most events leave an object's set as it was).
    set_of: HashMap<String, HashMap<String, String>>,
}

impl SetIndex {
    pub(crate) fn observe(&self, event: &watcher::Event<Object>) {
        let mut idx = self.inner.lock();
        let mut put = |o: &Object, present: bool| {
            let (ns, name) = (o.namespace().unwrap_or_default(), o.name());
            let label = if present { o.labels().get(ctop_applier::applyset::PART_OF_LABEL) } else { None };
            let old = idx.set_of.get(ns).and_then(|names| names.get(name));
            if old.map(String::as_str) == label {
                return;
            }
            if let Some(names) = idx.set_of.get_mut(ns)
                && let Some(old) = names.remove(name)
            {
                if names.is_empty() {
                    idx.set_of.remove(ns);
                }
                if let Some(m) = idx.members.get_mut(&old) {
                    m.remove(&(ns.to_owned(), name.to_owned()));
                    if m.is_empty() {
                        idx.members.remove(&old);
                    }
                }
            }
            if let Some(set) = label {
                idx.members.entry(set.to_owned()).or_default().insert((ns.to_owned(), name.to_owned()));
                idx.set_of.entry(ns.to_owned()).or_default().insert(name.to_owned(), set.to_owned());
            }
        };
        match event {
            watcher::Event::Apply(o) | watcher::Event::InitApply(o) => put(o, true),
            watcher::Event::Delete(o) => put(o, false),
            watcher::Event::Init | watcher::Event::InitDone => {}
        }
    }

    pub(crate) fn members(&self, set: &str) -> Vec<(String, String)> {
        self.inner.lock().members.get(set).map(|m| m.iter().cloned().collect()).unwrap_or_default()
    }
}

/// Poll `stream` in a task of its own and hand its items over through a channel; the task
/// ends when the returned stream is dropped. Each watcher runs like this, so that its
/// relists and backoff sleeps never wait on the controller's task (or the other way).
pub(crate) fn detach<S>(stream: S) -> impl futures::Stream<Item = S::Item> + Send + 'static
where
    S: futures::Stream + Send + 'static,
    S::Item: Send + 'static,
{
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut stream = std::pin::pin!(stream);
        loop {
            tokio::select! {
                item = stream.next() => match item {
                    Some(item) => if tx.send(item).is_err() { return },
                    None => return,
                },
                () = tx.closed() => return,
            }
        }
    });
    futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|item| (item, rx)) })
}

/// Hold the objects of a list (the first, or a relist after the watch was lost) until the
/// list ends: the store puts them in the cache all at once, at `InitDone`, so a
/// trigger passed on earlier would look its object up before the cache has it. They are
/// released, in order, just before the `InitDone`; other events pass through.
pub(crate) fn hold_initial<S>(stream: S) -> impl futures::Stream<Item = S::Item> + Send + 'static
where
    S: futures::Stream<Item = Result<watcher::Event<Object>, watcher::Error>> + Send + 'static,
{
    let mut held = Vec::new();
    stream.flat_map(move |e| {
        let out = match e {
            Ok(watcher::Event::InitApply(o)) => {
                held.push(Ok(watcher::Event::InitApply(o)));
                Vec::new()
            }
            Ok(watcher::Event::Init) => {
                held.clear();
                vec![Ok(watcher::Event::Init)]
            }
            Ok(watcher::Event::InitDone) => {
                let mut out = std::mem::take(&mut held);
                out.push(Ok(watcher::Event::InitDone));
                out
            }
            other => vec![other],
        };
        futures::stream::iter(out)
    })
}

/// Drop the errors of a trigger stream (logged; the watcher behind it retries with its own
/// backoff). kube-runtime's controller answers any trigger error by pausing *all* triggers
/// with a growing backoff: a few `410`s on one watch would stall every reconcile for a
/// minute and more.
pub(crate) fn without_errors<T, E>(
    stream: impl futures::Stream<Item = Result<T, E>> + Send + 'static,
    controller: String,
) -> impl futures::Stream<Item = Result<T, E>> + Send + 'static
where
    T: Send + 'static,
    E: std::fmt::Display + Send + 'static,
{
    stream.filter(move |r| {
        if let Err(e) = r {
            tracing::warn!(controller, error = %e, "watch failed; retrying with backoff");
        }
        std::future::ready(r.is_ok())
    })
}

/// Pass a watch's events through and report its first `InitDone` (the cache holds the
/// full list) on a watch channel, which wakes any number of waiters.
pub(crate) fn tap_init_done<S>(
    stream: S,
) -> (impl futures::Stream<Item = S::Item> + Send + 'static, watch::Receiver<bool>)
where
    S: futures::Stream<Item = Result<watcher::Event<Object>, watcher::Error>> + Send + 'static,
{
    let (tx, rx) = watch::channel(false);
    let stream = stream.inspect(move |e| {
        if matches!(e, Ok(watcher::Event::InitDone)) {
            tx.send_replace(true);
        }
    });
    (stream, rx)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::api::GroupVersionKind;

    #[test]
    fn a_shared_watch_is_narrowed_as_the_server_would() {
        let ar =
            ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("", "v1", "ConfigMap"), "configmaps");
        let wide = InformerPlan::new("v1/ConfigMap".into(), ar.clone(), true, None, None, Role::Read);
        assert!(wide.covers("v1/ConfigMap", Some("a"), Some("watched=yes")));
        assert!(!wide.covers("v1/Secret", None, None));
        let narrow =
            InformerPlan::new("v1/ConfigMap".into(), ar.clone(), true, Some("a".into()), None, Role::Read);
        assert!(!narrow.covers("v1/ConfigMap", None, None), "one namespace does not cover all");
        assert!(EventScope::narrowing(&wide, None, Some("in (")).is_err());

        let scope = EventScope::narrowing(&wide, Some("a".into()), Some("watched=yes")).expect("valid");
        let cm = |ns: &str, name: &str, watched: bool| -> Object {
            let labels = if watched { serde_json::json!({"watched": "yes"}) } else { serde_json::json!({}) };
            serde_json::from_value(
                serde_json::json!({"metadata": {"name": name, "namespace": ns, "labels": labels}}),
            )
            .expect("object")
        };
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        for e in [
            watcher::Event::Init,
            watcher::Event::InitApply(cm("a", "in", true)),
            watcher::Event::InitApply(cm("b", "elsewhere", true)),
            watcher::Event::InitApply(cm("a", "unlabelled", false)),
            watcher::Event::InitDone,
            watcher::Event::Apply(cm("a", "in", false)),
            watcher::Event::Apply(cm("a", "unlabelled", true)),
            watcher::Event::Delete(cm("a", "in", false)),
            watcher::Event::Delete(cm("a", "unlabelled", true)),
        ] {
            tx.send(e).expect("send");
        }
        drop(tx);
        let got: Vec<String> = futures::executor::block_on(scope.apply(rx).collect::<Vec<_>>())
            .into_iter()
            .map(|e| match e {
                Ok(watcher::Event::Init) => "init".to_owned(),
                Ok(watcher::Event::InitDone) => "done".to_owned(),
                Ok(watcher::Event::InitApply(o)) => format!("list {}", o.name()),
                Ok(watcher::Event::Apply(o)) => format!("apply {}", o.name()),
                Ok(watcher::Event::Delete(o)) => format!("delete {}", o.name()),
                Err(e) => format!("error {e}"),
            })
            .collect();
        // `in` leaves the scope (a deletion), `unlabelled` enters it; the second deletion
        // of `in` is not reported again.
        assert_eq!(got, ["init", "list in", "done", "delete in", "apply unlabelled", "delete unlabelled"]);
    }
}

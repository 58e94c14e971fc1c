//! The read-only copy of the live cluster in the overlay: one `kube` watcher per
//! [`Watched`] on the live client (list and watch, nothing else), each object imported into
//! the overlay as it is ([`KubeSim::import`]) and removed when it goes
//! ([`KubeSim::unimport`]); a relist removes what it no longer holds. The live version of
//! every object is kept for the report. Live wins: a live change is imported over whatever
//! the shadow wrote to the same object.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use ctop_kubesim::KubeSim;
use futures::StreamExt as _;
use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind};
use kube::discovery::Scope;
use kube::runtime::WatchStreamExt as _;
use kube::runtime::watcher::{self, Event};
use parking_lot::Mutex;
use serde_json::Value;
use tokio::sync::oneshot;

use crate::ShadowError;
use crate::plan::Watched;
use crate::report::Key;

/// The live objects the mirror copied, by key.
pub(crate) type Live = Arc<Mutex<BTreeMap<Key, Value>>>;

/// A kind of the live cluster, resolved by discovery.
pub(crate) struct Resolved {
    pub(crate) watched: Watched,
    pub(crate) ar: ApiResource,
    pub(crate) namespaced: bool,
}

/// Resolves `w`'s kind on the live cluster.
pub(crate) async fn resolve(live: &Client, w: &Watched) -> Result<Resolved, ShadowError> {
    let gvk = GroupVersionKind::gvk(w.kind.group(), w.kind.version(), &w.kind.kind);
    let (ar, caps) = kube::discovery::pinned_kind(live, &gvk).await.map_err(|source| ShadowError::Live {
        what: format!("{}/{} is not served by the live cluster", w.kind.api_version, w.kind.kind),
        source,
    })?;
    Ok(Resolved { watched: w.clone(), ar, namespaced: caps.scope == Scope::Namespaced })
}

/// Starts the watch of `kind` into `sim`; the receiver fires once its first list is in.
pub(crate) fn start(
    live: &Client,
    sim: Arc<KubeSim>,
    kind: Resolved,
    copies: Live,
) -> (tokio::task::JoinHandle<()>, oneshot::Receiver<()>) {
    let api: Api<DynamicObject> = match (kind.namespaced, kind.watched.namespace.as_deref()) {
        (true, Some(ns)) => Api::namespaced_with(live.clone(), ns, &kind.ar),
        _ => Api::all_with(live.clone(), &kind.ar),
    };
    let mut config = watcher::Config::default();
    if let Some(selector) = &kind.watched.selector {
        config = config.labels(selector);
    }
    let (synced, on_synced) = oneshot::channel();
    let task = tokio::spawn(async move {
        let mut synced = Some(synced);
        let mut stream = watcher::watcher(api, config).default_backoff().boxed();
        // The keys this watch holds, and those its current (re)list has seen.
        let mut mine: BTreeSet<Key> = BTreeSet::new();
        let mut listing: BTreeSet<Key> = BTreeSet::new();
        while let Some(event) = stream.next().await {
            match event {
                Ok(Event::Init) => listing.clear(),
                Ok(Event::InitApply(o)) => {
                    if let Some(key) = copy(&sim, &kind.ar, o, &copies).await {
                        listing.insert(key.clone());
                        mine.insert(key);
                    }
                }
                Ok(Event::InitDone) => {
                    for gone in mine.difference(&listing).cloned().collect::<Vec<_>>() {
                        remove(&sim, &gone, &copies);
                        mine.remove(&gone);
                    }
                    if let Some(tx) = synced.take() {
                        let _ = tx.send(());
                    }
                }
                Ok(Event::Apply(o)) => {
                    if let Some(key) = copy(&sim, &kind.ar, o, &copies).await {
                        mine.insert(key);
                    }
                }
                Ok(Event::Delete(o)) => {
                    let key = key_of(&kind.ar, &o);
                    remove(&sim, &key, &copies);
                    mine.remove(&key);
                }
                Err(e) => tracing::warn!(
                    kind = %kind.ar.kind,
                    error = %e,
                    "the live cluster's watch failed; retrying with backoff"
                ),
            }
        }
    });
    (task, on_synced)
}

fn key_of(ar: &ApiResource, o: &DynamicObject) -> Key {
    (
        ar.api_version.clone(),
        ar.kind.clone(),
        o.metadata.namespace.clone(),
        o.metadata.name.clone().unwrap_or_default(),
    )
}

/// Imports `o` and keeps its live version; its key, or `None` when the overlay refused it
/// (logged).
async fn copy(sim: &KubeSim, ar: &ApiResource, o: DynamicObject, copies: &Live) -> Option<Key> {
    let key = key_of(ar, &o);
    let mut value = match serde_json::to_value(&o) {
        Ok(v) => v,
        Err(e) => {
            tracing::warn!(kind = %ar.kind, name = %key.3, error = %e, "cannot copy a live object");
            return None;
        }
    };
    if let Some(map) = value.as_object_mut() {
        map.insert("apiVersion".into(), Value::String(ar.api_version.clone()));
        map.insert("kind".into(), Value::String(ar.kind.clone()));
    }
    match sim.import(value.clone()).await {
        Ok(imported) => {
            for note in &imported.notes {
                tracing::info!(kind = %ar.kind, name = %key.3, "{note}");
            }
            copies.lock().insert(key.clone(), value);
            Some(key)
        }
        Err(e) => {
            tracing::warn!(kind = %ar.kind, name = %key.3, error = %e, "the overlay refused a live object");
            None
        }
    }
}

fn remove(sim: &KubeSim, key: &Key, copies: &Live) {
    copies.lock().remove(key);
    if let Err(e) = sim.unimport(&key.0, &key.1, key.2.as_deref(), &key.3) {
        tracing::warn!(kind = %key.1, name = %key.3, error = %e, "cannot remove a copy from the overlay");
    }
}

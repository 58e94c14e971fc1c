//! A watch: the initial events (or a resume from a resourceVersion, or `410 Expired`), then
//! every matching change from the store's history as it commits, with bookmarks, the
//! `sendInitialEvents` end marker, selector transitions as ADDED/DELETED, and the timeout.

use std::sync::{Arc, Weak};
use std::time::Duration;

use axum::body::Bytes;
use axum::response::Response;
use serde_json::{Value, json};

use super::Server;
use super::list::{include, selectors};
use super::path::{Query, truthy};
use super::wire::{Shape, event_line, stream_response};
use crate::api::Api;
use crate::api::conversion::ConversionError;
use crate::api::convert;
use crate::error::ApiError;
use crate::kinds::registry::{Conversion, ResourceType};
use crate::server::table;
use crate::store::{Change, EventKind};

/// How many changes a watcher reads from the history at a time.
const WATCH_BATCH: usize = 64;

pub(super) async fn watch(
    srv: &Arc<Server>,
    rt: &Arc<ResourceType>,
    ns: Option<&str>,
    query: &Query,
    shape: Shape,
) -> Result<Response, ApiError> {
    let (labels, fields) = selectors(query, rt)?;
    let bookmarks = truthy(query, "allowWatchBookmarks");
    let send_initial = truthy(query, "sendInitialEvents");
    let rv_param = query.get("resourceVersion").filter(|s| !s.is_empty()).cloned();
    if send_initial && query.get("resourceVersionMatch").map(String::as_str) != Some("NotOlderThan") {
        return Err(ApiError::invalid_field(
            rt.gr(),
            "ListOptions",
            "",
            "FieldValueForbidden",
            "sendInitialEvents",
            "Forbidden: sendInitialEvents is forbidden for watch unless resourceVersionMatch is set to NotOlderThan",
        ));
    }
    let from = match rv_param.as_deref() {
        None | Some("0") => None,
        Some(rv) => {
            let n = rv.parse::<u64>().map_err(|_| {
                ApiError::invalid_field(
                    rt.gr(),
                    "",
                    "",
                    "FieldValueInvalid",
                    "resourceVersion",
                    &format!("Invalid value: {rv:?}: must be a valid resource version"),
                )
            })?;
            if send_initial { None } else { Some(n) }
        }
    };
    let timeout = query
        .get("timeoutSeconds")
        .and_then(|t| t.parse::<u64>().ok())
        .map_or(Duration::from_secs(1800), Duration::from_secs);
    let start = srv.api.store.watch(&rt.store, from);
    let ns = ns.map(str::to_owned);
    let rt = rt.clone();
    let include_q = include(query);
    // Whether objects go through a conversion webhook: then selectors see them as served (a
    // webhook may change labels), as the API server's watchers do.
    let converts =
        rt.crd.as_ref().is_some_and(|c| matches!(c.definition.conversion, Conversion::Webhook { .. }));
    // Whether a selector may tell an object's versions apart (else only the namespace,
    // which never changes, does): then the object before a change is served too.
    let selective = ["labelSelector", "fieldSelector"]
        .iter()
        .any(|k| query.get(*k).is_some_and(|s| !s.trim().is_empty()));
    let in_namespace = move |o: &Value| -> bool {
        ns.as_deref().is_none_or(|n| o.pointer("/metadata/namespace").and_then(Value::as_str) == Some(n))
    };
    let matches = move |served: &Value| -> bool {
        labels.matches(served.pointer("/metadata/labels")) && fields.matches(served)
    };
    let render = {
        let rt = rt.clone();
        move |served: Value| -> Value {
            match shape {
                Shape::Full => served,
                Shape::Partial(p) => table::partial(&served, &p.api_version()),
                Shape::Table => table::table(&rt, &[served], json!({}), include_q),
            }
        }
    };
    let (tx, rx) = tokio::sync::mpsc::channel::<Bytes>(256);
    let start = match start {
        Ok(s) => s,
        Err(oldest) => {
            let status = ApiError::expired(format!(
                "too old resource version: {} ({})",
                from.unwrap_or(0),
                oldest.saturating_sub(1)
            ))
            .to_status();
            let line = event_line("ERROR", &status);
            return Ok(stream_response(futures::stream::iter([line])));
        }
    };
    let mut epoch = srv.faults.watch_epoch();
    epoch.borrow_and_update();
    let interval = srv.bookmark_interval;
    let kind_name = rt.kind.clone();
    let api_version = rt.api_version();
    // Weak: an open watch must not keep a stopped server's objects alive.
    let api = Arc::downgrade(&srv.api);
    tokio::spawn(async move {
        let bookmark = |rv: u64, initial_end: bool| {
            let mut meta = json!({"resourceVersion": rv.to_string()});
            if initial_end {
                meta["annotations"] = json!({"k8s.io/initial-events-end": "true"});
            }
            event_line("BOOKMARK", &json!({"kind": kind_name, "apiVersion": api_version, "metadata": meta}))
        };
        // The current objects, served as a list is (one review for those a webhook
        // converts); a conversion that fails ends the watch with an ERROR event, as the
        // API server's etcd watcher does.
        let initial: Vec<Arc<Value>> = start.initial.iter().filter(|o| in_namespace(o)).cloned().collect();
        if !initial.is_empty() {
            let Some(served) =
                serve(&api, &rt, async |api: &Api| api.served_all(&rt, &initial).await, &tx).await
            else {
                return;
            };
            for (o, stored) in served.into_iter().zip(&initial) {
                if matches(if converts { &o } else { stored })
                    && tx.send(event_line("ADDED", &render(o))).await.is_err()
                {
                    return;
                }
            }
        }
        if send_initial && bookmarks && tx.send(bookmark(start.rv, true)).await.is_err() {
            return;
        }
        let send_change = async |c: &Change, tx: &tokio::sync::mpsc::Sender<Bytes>| -> bool {
            if !in_namespace(&c.object) {
                return true;
            }
            // Without a conversion webhook the stored objects decide, and only what is sent
            // is served.
            let (object, now, before) = if converts {
                let Some(object) =
                    serve(&api, &rt, async |api: &Api| api.served(&rt, &c.object).await, tx).await
                else {
                    return false;
                };
                let before = match c.old.as_deref() {
                    None => false,
                    Some(_) if !selective => true,
                    Some(old) => {
                        match serve(&api, &rt, async |api: &Api| api.served(&rt, old).await, tx).await {
                            Some(old) => matches(&old),
                            None => return false,
                        }
                    }
                };
                let now = matches(&object);
                (Some(object), now, before)
            } else {
                (None, matches(&c.object), c.old.as_deref().is_some_and(&matches))
            };
            let kind = match (c.kind, before, now) {
                (EventKind::Added, _, true) => Some("ADDED"),
                (EventKind::Modified, true, true) => Some("MODIFIED"),
                (EventKind::Modified, false, true) => Some("ADDED"),
                (EventKind::Modified, true, false) => Some("DELETED"),
                (EventKind::Deleted, _, true) => Some("DELETED"),
                _ => None,
            };
            match kind {
                Some(k) => {
                    let object = object.unwrap_or_else(|| convert::to_served(&rt, &c.object));
                    tx.send(event_line(k, &render(object))).await.is_ok()
                }
                None => true,
            }
        };
        // Everything up to `seen` has been sent. Changes are read from the history, a
        // batch at a time, whenever the store commits one.
        let mut seen = start.from;
        let mut live = start.rx;
        let deadline = tokio::time::sleep(timeout);
        tokio::pin!(deadline);
        let mut ticker = tokio::time::interval(interval);
        ticker.tick().await;
        loop {
            loop {
                let batch = match api
                    .upgrade()
                    .map(|api| api.store.changes_after(&rt.store, seen, WATCH_BATCH))
                {
                    None => return,
                    Some(Ok(b)) => b,
                    Some(Err(oldest)) => {
                        // Too slow: close, as the real watch cache does; the client resumes
                        // (and gets 410 Expired if it must relist).
                        tracing::debug!(resource = %rt.plural, seen, oldest, "watcher fell behind the history: closed");
                        return;
                    }
                };
                for c in &batch.changes {
                    if !send_change(c, &tx).await {
                        return;
                    }
                }
                seen = batch.next;
                if !batch.more {
                    break;
                }
                if epoch.has_changed().unwrap_or(true) {
                    return;
                }
            }
            tokio::select! {
                () = &mut deadline => return,
                _ = epoch.changed() => return,
                _ = ticker.tick(), if bookmarks => {
                    if tx.send(bookmark(seen, false)).await.is_err() { return; }
                }
                changed = live.changed() => if changed.is_err() { return },
                () = tx.closed() => return,
            }
        }
    });
    Ok(stream_response(tokio_stream::wrappers::ReceiverStream::new(rx)))
}

/// What `convert` makes of objects with the API (while it lives), or `None` when the watch
/// is to end: the server stopped, or a conversion failed and its `ERROR` event was sent.
async fn serve<T>(
    api: &Weak<Api>,
    rt: &ResourceType,
    convert: impl AsyncFnOnce(&Api) -> Result<T, ConversionError>,
    tx: &tokio::sync::mpsc::Sender<Bytes>,
) -> Option<T> {
    let api = api.upgrade()?;
    match convert(&api).await {
        Ok(served) => Some(served),
        Err(e) => {
            tracing::debug!(resource = %rt.plural, error = %e, "watch ended by a failed conversion");
            let _ = tx.send(event_line("ERROR", &e.watch_status())).await;
            None
        }
    }
}

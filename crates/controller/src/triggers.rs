//! What makes a primary object reconcile: its own changes, its children's, `.watches()`
//! events through predicates and mappers, script replacements.

use std::collections::HashMap;
use std::sync::Arc;

use ctop_core::{NamedPredicate, Predicate, WatchSpec};
use futures::StreamExt as _;
use kube::api::ApiResource;
use kube::runtime::watcher;

use ctop_core::HandlerCall;
use tracing::Instrument as _;

use crate::context::Ctx;
use crate::object::Object;
use crate::queue::Priority;
use crate::run::HandlerSource;

/// The keys of the primaries an owned child triggers: its controller owner of the primary kind.
pub(crate) fn owner_keys(child: &Object, primary: &ApiResource, namespaced: bool) -> Vec<String> {
    child
        .owner_references()
        .iter()
        .filter(|r| {
            r.controller == Some(true) && r.kind == primary.kind && r.api_version == primary.api_version
        })
        .map(|r| {
            let ns = if namespaced { child.namespace().unwrap_or_default() } else { "" };
            format!("{ns}/{}", r.name)
        })
        .collect()
}

pub(crate) fn reloads(
    mut scripts: HandlerSource,
    controller: String,
) -> impl futures::Stream<Item = ()> + Send + 'static {
    // The script running now is not a replacement.
    scripts.mark_unchanged();
    futures::stream::unfold(scripts, move |mut rx| {
        let controller = controller.clone();
        async move {
            rx.changed().await.ok()?;
            tracing::info!(controller, "script replaced: reconciling every object with it");
            Some(((), rx))
        }
    })
}

/// Whether a change from `old` to `new` passes `p`.
pub(crate) fn predicate_passes(p: &Predicate, old: &Object, new: &Object) -> bool {
    match p {
        Predicate::Named(NamedPredicate::GenerationChanged) => old.generation() != new.generation(),
        Predicate::Named(NamedPredicate::ResourceVersionChanged) => {
            old.resource_version() != new.resource_version()
        }
        Predicate::Named(NamedPredicate::LabelChanged) => old.labels() != new.labels(),
        Predicate::Named(NamedPredicate::AnnotationChanged) => old.annotations() != new.annotations(),
        Predicate::And { and } => and.iter().all(|p| predicate_passes(p, old, new)),
        Predicate::Or { or } => or.iter().any(|p| predicate_passes(p, old, new)),
    }
}

/// The objects of watcher events that pass `predicate`: creations and deletions always
/// pass; an update passes when the predicate holds between the previous version (kept
/// per object) and the new one. A relist replays objects as updates of what was seen.
/// Objects of the initial list (or a relist) are background work, the others changes.
pub(crate) fn filter_events<S>(
    events: S,
    predicate: Option<Predicate>,
) -> impl futures::Stream<Item = (Object, Priority)> + Send + 'static
where
    S: futures::Stream<Item = Result<watcher::Event<Object>, watcher::Error>> + Send + 'static,
{
    let mut previous: HashMap<String, Object> = HashMap::new();
    events
        .filter_map(|e| async move {
            match e {
                Ok(e) => Some(e),
                Err(err) => {
                    tracing::warn!(error = %err, "watch failed; retrying with backoff");
                    None
                }
            }
        })
        .flat_map(move |event| {
            let initial = matches!(event, watcher::Event::InitApply(_));
            let out: Vec<(Object, Priority)> = match event {
                watcher::Event::Apply(o) | watcher::Event::InitApply(o) => {
                    let priority = if initial { Priority::Background } else { Priority::Change };
                    let key = object_key(&o);
                    let pass = match (&predicate, previous.get(&key)) {
                        (Some(p), Some(old)) => predicate_passes(p, old, &o),
                        (None, Some(old)) => old.resource_version() != o.resource_version(),
                        (_, None) => true,
                    };
                    previous.insert(key, o.clone());
                    if pass { vec![(o, priority)] } else { Vec::new() }
                }
                watcher::Event::Delete(o) => {
                    previous.remove(&object_key(&o));
                    vec![(o, Priority::Change)]
                }
                watcher::Event::Init | watcher::Event::InitDone => Vec::new(),
            };
            futures::stream::iter(out)
        })
}

/// The primary objects a `.watches()` event maps to: through the script's `map:<index>`
/// handler, or by the object's owner references to the primary kind.
pub(crate) async fn map_watched(ctx: &Arc<Ctx>, index: usize, w: &WatchSpec, obj: Object) -> Vec<String> {
    let key = |namespace: Option<&str>, name: &str| {
        format!("{}/{name}", namespace.filter(|_| ctx.namespaced).unwrap_or_default())
    };
    if !w.mapper {
        return obj
            .owner_references()
            .iter()
            .filter(|r| r.api_version == ctx.primary.api_version && r.kind == ctx.primary.kind)
            .map(|r| key(obj.namespace(), &r.name))
            .collect();
    }
    let handlers = ctx.handlers.borrow().clone();
    let call = HandlerCall {
        controller: ctx.spec.index,
        object: Some(obj.to_json(&ctx.primary)),
        observer: Arc::new(crate::observe::CacheView::new(ctx, Some(&obj))),
    };
    let started = std::time::Instant::now();
    let handler = format!("map:{index}");
    let out = handlers.map(index, call).instrument(tracing::info_span!("script", handler)).await;
    ctx.metrics.observe_script(&ctx.spec.name, &handler, started.elapsed());
    let out = match out {
        Ok(out) => out,
        Err(e) => {
            tracing::warn!(controller = ctx.spec.name, object = object_key(&obj), error = %e, "mapper failed");
            return Vec::new();
        }
    };
    out.requests.into_iter().map(|r| key(r.namespace.as_deref(), &r.name)).collect()
}

/// The reconcile triggers of the `index`th `.watches()`: keys of primary objects.
pub(crate) fn watch_triggers<S>(
    ctx: Arc<Ctx>,
    index: usize,
    w: WatchSpec,
    ar: ApiResource,
    events: S,
) -> impl futures::Stream<Item = (String, Priority)> + Send + 'static
where
    S: futures::Stream<Item = Result<watcher::Event<Object>, watcher::Error>> + Send + 'static,
{
    let w = Arc::new(w);
    filter_events(events, w.predicate.clone())
        .then(move |(obj, priority)| {
            let ctx = ctx.clone();
            let w = w.clone();
            let obj = obj.typed(&ar);
            async move {
                let keys = map_watched(&ctx, index, &w, obj).await;
                futures::stream::iter(keys.into_iter().map(move |k| (k, priority)))
            }
        })
        .flatten()
}

/// `namespace/name` of an object (empty namespace for cluster-scoped ones).
pub(crate) fn object_key(obj: &Object) -> String {
    format!("{}/{}", obj.namespace().unwrap_or_default(), obj.name())
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::api::GroupVersionKind;
    use serde_json::json;

    #[test]
    fn children_trigger_their_controlling_owner_only() {
        let primary = ApiResource::from_gvk(&GroupVersionKind::gvk("apps.example.com", "v1", "WebApp"));
        let child: Object = serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "t", "namespace": "ns", "ownerReferences": [
                {"apiVersion": "apps.example.com/v1", "kind": "WebApp", "name": "shop", "uid": "1", "controller": true},
                {"apiVersion": "apps.example.com/v1", "kind": "WebApp", "name": "other", "uid": "2"},
                {"apiVersion": "v1", "kind": "ConfigMap", "name": "cm", "uid": "3", "controller": true}
            ]}
        }))
        .expect("object");
        assert_eq!(owner_keys(&child, &primary, true), vec!["ns/shop".to_owned()]);
        assert_eq!(owner_keys(&child, &primary, false), vec!["/shop".to_owned()]);
    }
}

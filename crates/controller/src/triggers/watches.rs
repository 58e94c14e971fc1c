//! The triggers of a `.watches()`: its events that pass its predicate, mapped to primary
//! objects by the script's mapper (`map:<index>`) or by owner references.

use std::sync::Arc;

use ctop_core::{Predicate, WatchSpec};
use futures::StreamExt as _;
use kube::api::ApiResource;
use kube::runtime::watcher;

use super::predicate::Previous;
use crate::call::Call;
use crate::context::Ctx;
use crate::history::Trigger;
use crate::object::{Object, object_key};
use crate::queue::{Priority, WorkQueue};

/// The objects of watcher events that pass `predicate` (see [`Previous`]); deletions
/// always pass. Objects of the initial list (or a relist) are background work, the others
/// changes.
pub(crate) fn filter_events<S>(
    events: S,
    predicate: Option<Predicate>,
) -> impl futures::Stream<Item = (Object, Priority)> + Send + 'static
where
    S: futures::Stream<Item = Result<watcher::Event<Object>, watcher::Error>> + Send + 'static,
{
    let mut previous = Previous::new(predicate);
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
            let out = match event {
                watcher::Event::Apply(o) => previous.passes(&o).then_some((o, Priority::Change)),
                watcher::Event::InitApply(o) => previous.passes(&o).then_some((o, Priority::Background)),
                watcher::Event::Delete(o) => {
                    previous.deleted(&o);
                    Some((o, Priority::Change))
                }
                watcher::Event::Init => {
                    previous.init();
                    None
                }
                watcher::Event::InitDone => {
                    previous.init_done();
                    None
                }
            };
            futures::stream::iter(out)
        })
}

/// The primary objects a `.watches()` event maps to: through the script's `map:<index>`
/// handler, or by the object's owner references to the primary kind.
async fn map_watched(ctx: &Ctx, index: usize, w: &WatchSpec, obj: Object) -> Vec<String> {
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
    let handler = format!("map:{index}");
    let out = match Call::new(ctx, Some(&obj)).run(ctx, &handler, |h, c| h.map(index, c)).await {
        Ok(out) => out,
        Err(e) => {
            tracing::warn!(controller = ctx.spec.name, object = object_key(&obj), error = %e, "mapper failed");
            return Vec::new();
        }
    };
    out.requests.into_iter().map(|r| key(r.namespace.as_deref(), &r.name)).collect()
}

/// Queue the primary objects the `index`th `.watches()` (`w`, of the kind `ar`) maps the
/// objects of `events` to, until the stream ends.
pub(crate) async fn watches<S>(
    ctx: Arc<Ctx>,
    queue: Arc<WorkQueue>,
    index: usize,
    w: WatchSpec,
    ar: ApiResource,
    events: S,
) where
    S: futures::Stream<Item = Result<watcher::Event<Object>, watcher::Error>> + Send + 'static,
{
    let w = Arc::new(w);
    let kind: Arc<str> = ctop_core::kind_key(&ar.api_version, &ar.kind).into();
    filter_events(events, w.predicate.clone())
        .then(move |(obj, priority)| {
            let ctx = ctx.clone();
            let w = w.clone();
            let obj = obj.typed(&ar);
            let kind = kind.clone();
            async move {
                let (namespace, name) = (obj.namespace().map(str::to_owned), obj.name().to_owned());
                let keys = map_watched(&ctx, index, &w, obj).await;
                for key in &keys {
                    ctx.memory.triggered(key, || Trigger::Watched {
                        kind: kind.to_string(),
                        namespace: namespace.clone(),
                        name: name.clone(),
                    });
                }
                futures::stream::iter(keys.into_iter().map(move |k| (k, priority)))
            }
        })
        .flatten()
        .for_each(move |(k, p)| {
            queue.add(k, p);
            std::future::ready(())
        })
        .await;
}

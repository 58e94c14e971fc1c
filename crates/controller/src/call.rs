//! Calling a handler of the script (or of any [`Handlers`]): the input it gets (the object
//! and a [`CacheView`] of the caches), and the span, timer and metric around every call,
//! written once here for `reconcile`, `finalize`, `onStart` and the mappers.

use std::sync::Arc;
use std::time::Instant;

use ctop_core::{HandlerCall, HandlerError, HandlerFuture, Handlers};
use tracing::Instrument as _;

use crate::context::Ctx;
use crate::object::Object;
use crate::observe::CacheView;

/// One handler call about to be made: the handlers in use (a replaced script takes effect
/// from the next call) and the view its reads go through.
pub(crate) struct Call {
    pub(crate) handlers: Arc<dyn Handlers>,
    pub(crate) view: Arc<CacheView>,
    controller: u32,
    /// The object's JSON text, handed over (not copied) by the call.
    object: Option<String>,
}

impl Call {
    /// A call of the controller's handlers about `object` (none for `onStart`; a watched
    /// object for a mapper).
    pub(crate) fn new(ctx: &Ctx, object: Option<&Object>) -> Self {
        Self {
            handlers: ctx.handlers.borrow().clone(),
            view: Arc::new(CacheView::new(ctx.caches.clone(), ctx.namespaced, object)),
            controller: ctx.spec.index,
            object: object.map(|o| o.to_json(&ctx.primary)),
        }
    }

    /// Make the call: `handler` names it in the span, in `ctop_script_duration_seconds` and
    /// in `ctop_script_calls_total` (with where it ran); `f` picks the handler.
    pub(crate) async fn run<T>(
        &mut self,
        ctx: &Ctx,
        handler: &str,
        f: impl FnOnce(&dyn Handlers, HandlerCall) -> HandlerFuture<T>,
    ) -> Result<T, HandlerError> {
        let input = HandlerCall {
            controller: self.controller,
            object: self.object.take(),
            observer: self.view.clone(),
        };
        let started = Instant::now();
        let out = f(&*self.handlers, input).instrument(tracing::info_span!("script", handler)).await;
        ctx.metrics.observe_script(&ctx.spec.name, handler, started.elapsed());
        if let Some(path) = self.view.take_path() {
            ctx.metrics.script_call(&ctx.spec.name, handler, path);
        }
        out
    }
}

//! The shadow's view of its controllers: a [`Handlers`] wrapper that notes each finished
//! reconcile, so the shadow knows when every live primary has been reconciled at least once
//! (before that, "nothing written" only means "not looked at yet").

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Instant;

use ctop_core::{
    FinalizeOutcome, HandlerCall, HandlerFuture, Handlers, MapOutcome, OperatorSpec, ReconcileOutcome,
    StartOutcome,
};
use parking_lot::Mutex;
use serde_json::Value;

use crate::report::Key;

/// What the wrapped handlers did so far.
#[derive(Default)]
pub(crate) struct Calls {
    /// The objects reconciled at least once.
    pub(crate) reconciled: BTreeSet<Key>,
    /// When the last call ended.
    pub(crate) last: Option<Instant>,
}

/// Handlers that note their reconciles in [`Calls`].
pub(crate) struct Noting {
    pub(crate) inner: Arc<dyn Handlers>,
    pub(crate) calls: Arc<Mutex<Calls>>,
}

/// The key of a call's object.
fn key_of(object: Option<&str>) -> Option<Key> {
    let o: Value = serde_json::from_str(object?).ok()?;
    let text = |p: &str| o.pointer(p).and_then(Value::as_str).map(str::to_owned);
    Some((text("/apiVersion")?, text("/kind")?, text("/metadata/namespace"), text("/metadata/name")?))
}

impl Noting {
    fn noted<T: Send + 'static>(&self, key: Option<Key>, call: HandlerFuture<T>) -> HandlerFuture<T> {
        let calls = Arc::clone(&self.calls);
        Box::pin(async move {
            let out = call.await;
            let mut c = calls.lock();
            if let Some(key) = key {
                c.reconciled.insert(key);
            }
            c.last = Some(Instant::now());
            out
        })
    }
}

impl Handlers for Noting {
    fn spec(&self) -> &OperatorSpec {
        self.inner.spec()
    }

    fn reconcile(&self, call: HandlerCall) -> HandlerFuture<ReconcileOutcome> {
        let key = key_of(call.object.as_deref());
        self.noted(key, self.inner.reconcile(call))
    }

    fn finalize(&self, call: HandlerCall) -> HandlerFuture<FinalizeOutcome> {
        let key = key_of(call.object.as_deref());
        self.noted(key, self.inner.finalize(call))
    }

    fn on_start(&self, call: HandlerCall) -> HandlerFuture<StartOutcome> {
        self.noted(None, self.inner.on_start(call))
    }

    fn map(&self, watch: usize, call: HandlerCall) -> HandlerFuture<MapOutcome> {
        self.noted(None, self.inner.map(watch, call))
    }
}

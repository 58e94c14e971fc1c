//! What makes a primary object reconcile, as streams of work-queue keys:
//!
//! - `primary`: the object's own changes (through the operator's predicate), its deletion
//!   (which forgets it), and, sharded, its arrival and hand-over;
//! - `children`: a child's change or deletion reconciles its controlling owner;
//! - `watches`: `.watches()` events through their predicates and mappers;
//! - [`everything`]: every object again, on a replaced script or on winning the Lease.
//!
//! The echoes of the controller's own writes are dropped on the way (see
//! [`Memory::is_echo`](crate::memory::Memory::is_echo)).

mod children;
mod predicate;
mod primary;
mod watches;

use std::sync::Arc;

use futures::StreamExt as _;

pub(crate) use children::children;
pub(crate) use primary::primary;
pub(crate) use watches::watches;

use crate::context::{Ctx, HandlerSource};
use crate::history::Trigger;
use crate::object::object_key;
use crate::queue::{Priority, WorkQueue};

/// Triggers whose echo check may wait at once (see `Memory::is_echo`).
const ECHO_CHECKS: usize = 1024;

/// One item per replacement of the handlers (not for the ones running now).
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

/// Queue every object of the primary cache at `priority` on each item of `when`, noting
/// `why`: with a replaced script (a change), or when this replica wins the Lease (instead
/// of waiting for the requeue each object got while it was standing by).
pub(crate) async fn everything(
    when: impl futures::Stream<Item = ()> + Send + 'static,
    ctx: Arc<Ctx>,
    queue: Arc<WorkQueue>,
    priority: Priority,
    why: Trigger,
) {
    when.for_each(move |()| {
        for o in ctx.primaries().store.state() {
            let key = object_key(&o);
            ctx.memory.triggered(&key, || why.clone());
            queue.add(key, priority);
        }
        std::future::ready(())
    })
    .await;
}

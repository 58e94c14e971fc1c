//! The one-shot `onStart` handler: run once the caches are synced and (when elected) this
//! replica leads. `Result.error` and failures retry with backoff; `Result.requeue(d)` runs
//! it again after `d`; `Result.ok()` ends it. Its `apply`s are server-side applied without
//! an owner (never pruned), its `patch`es merged, its events published when they name the
//! object they regard.

use std::sync::Arc;
use std::time::{Duration, Instant};

use ctop_core::HandlerResult;
use tokio::sync::watch;

use crate::call::Call;
use crate::context::Ctx;
use crate::effects::{self, Write, check_declared, target_of};
use crate::error::ReconcileError;
use crate::health::ReconcileResult;
use crate::retry::backoff;

/// Run `onStart` until it returns ok or the controller stops.
pub(crate) async fn on_start(ctx: &Arc<Ctx>, mut stop: watch::Receiver<bool>) {
    let name = ctx.spec.name.clone();
    let mut failures = 0u32;
    loop {
        if let Some(leader) = &ctx.leader {
            let mut leader = leader.clone();
            tokio::select! {
                r = leader.wait_for(|l| *l) => if r.is_err() { return },
                _ = stop.wait_for(|s| *s) => return,
            }
        }
        let started = Instant::now();
        let out = run_on_start(ctx).await;
        let took = started.elapsed();
        let delay = match out {
            Ok(None) => {
                ctx.metrics.record_reconcile(&name, ReconcileResult::Success, took);
                tracing::info!(controller = name, took = ?took, "onStart done");
                return;
            }
            Ok(Some(after)) => {
                ctx.metrics.record_reconcile(&name, ReconcileResult::RequeueAfter, took);
                failures = 0;
                after
            }
            Err(e) => {
                ctx.metrics.record_reconcile(&name, ReconcileResult::Error, took);
                ctx.health.record_error(&name, format!("onStart: {e}"));
                failures = failures.saturating_add(1);
                let delay = backoff(failures).max(ctx.retries.reserve());
                tracing::warn!(controller = name, error = %e, retry_in = ?delay, "onStart failed");
                delay
            }
        };
        tokio::select! {
            () = tokio::time::sleep(delay) => {}
            _ = stop.wait_for(|s| *s) => return,
        }
    }
}

/// One `onStart` call and its side effects: `Some(d)` when it asked to run again after `d`.
async fn run_on_start(ctx: &Arc<Ctx>) -> Result<Option<Duration>, ReconcileError> {
    let out = Call::new(ctx, None).run(ctx, "onStart", |h, c| h.on_start(c)).await?;
    if let HandlerResult::Error { message } = &out.result {
        return Err(ReconcileError::Failed { handler: "onStart", message: message.clone() });
    }
    for obj in &out.children.objects {
        let t = target_of(ctx, "apply", obj, None).await?;
        check_declared(ctx, Write::Apply, &t)?;
    }
    for p in out.patches.iter().chain(out.foreign_applies.iter().map(|a| &a.object)) {
        let t = target_of(ctx, "patch", p, None).await?;
        check_declared(ctx, Write::Patch, &t)?;
    }
    for obj in &out.children.objects {
        effects::apply_unowned(ctx, obj).await?;
    }
    effects::apply_patches(ctx, None, &out.patches).await?;
    effects::apply_foreign(ctx, None, &out.foreign_applies).await?;
    effects::publish_events(ctx, None, &out.events).await;
    Ok(match out.result {
        HandlerResult::Requeue { after } => Some(after.into()),
        _ => None,
    })
}

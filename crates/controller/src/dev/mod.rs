//! The dev loop behind `ctop dev`: run the controllers, poll the operator's sources, and on
//! every change load them again and put the new handlers to work, keeping the caches when
//! the new handlers watch what the old ones did and restarting the controllers when not.
//! A load that fails, or whose CRDs cannot be installed, leaves the running handlers in
//! place; controllers that stop are started again by the next change.
//!
//! Start with [`run_dev`] and the [`DevSource`] it polls (the cli's source loads a script
//! from a directory). [`apply_samples`] applies sample objects, and [`Summary`] is the live
//! view printed on every poll.

mod samples;
mod summary;

use std::future::Future;
use std::io::Write as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use ctop_core::Handlers;
use serde_json::Value;
use tokio::sync::watch;

use crate::cluster::{client, install_crds};
use crate::error::RunError;
use crate::options::{LeaseTiming, RunOptions};
use crate::run::{hot_swappable, run_reloadable};

pub use samples::{SampleError, SampleReport, apply_samples};
pub use summary::Summary;

/// Why a [`DevSource`] could not load: any error, shown with its chain of causes.
pub type LoadError = Box<dyn std::error::Error + Send + Sync>;

/// What a [`DevSource`] loaded: the handlers to run and the CRDs they need (installed
/// before the handlers run).
pub struct Reload {
    /// The handlers.
    pub handlers: Arc<dyn Handlers>,
    /// The CustomResourceDefinitions, as objects.
    pub crds: Vec<Value>,
}

/// Where the dev loop gets new handlers from.
pub trait DevSource: Send {
    /// Whether the sources changed since the last call (polled every [`DevOptions::poll`]).
    fn changed(&mut self) -> bool;

    /// Load the changed sources. An error is logged and keeps the running handlers.
    fn load(&mut self) -> impl Future<Output = Result<Reload, LoadError>> + Send;

    /// The handlers of the last load now run (their CRDs installed): the place for work
    /// that follows them, such as serving their admission handlers.
    fn activated(&mut self, handlers: &Arc<dyn Handlers>) -> impl Future<Output = ()> + Send;

    /// Where in the sources a failed [`DevSource::load`] failed, with the source line, to
    /// print under its error (none by default).
    fn code_frame(&self, error: &(dyn std::error::Error + 'static)) -> Option<ctop_core::CodeFrame> {
        let _ = error;
        None
    }
}

/// How [`run_dev`] runs.
#[derive(Clone, Debug)]
pub struct DevOptions {
    /// How the controllers run (`install_crds` is done before, by the caller, for the first
    /// handlers; reloads install their own).
    pub run: RunOptions,
    /// How often the sources are checked and the summary printed.
    pub poll: Duration,
    /// Members of a sharded operator to run, each with its own identity (`dev-0`,
    /// `dev-1`, …); 1 runs one unsharded replica.
    pub replicas: u16,
}

impl DevOptions {
    /// The development defaults ([`RunOptions::local`]) against the cluster of `kubeconfig`,
    /// as `name`, and a poll every half second.
    #[must_use]
    pub fn new(kubeconfig: PathBuf, name: &str) -> Self {
        let run = RunOptions::local(kubeconfig, name);
        Self { run, poll: Duration::from_millis(500), replicas: 1 }
    }
}

/// Run `first`'s controllers, reloading from `source` on every change, until `shutdown`
/// completes; each poll prints the [`Summary`] lines that changed to stdout. Fails only
/// when the cluster cannot be reached at start.
pub async fn run_dev<S: DevSource>(
    first: Arc<dyn Handlers>,
    mut source: S,
    options: DevOptions,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), RunError> {
    let client = client(options.run.kubeconfig.as_ref(), options.run.context.as_ref()).await?;
    let mut summary = Summary::default();
    let mut poll = tokio::time::interval(options.poll);
    poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tokio::pin!(shutdown);
    let (handlers_tx, handlers) = watch::channel(first);
    if options.replicas > 1 {
        tracing::info!(
            replicas = options.replicas,
            "sharded over {} members (dev-0 … dev-{}); kubectl get leases -l shard.ctop.dev/ring={} shows them",
            options.replicas,
            options.replicas - 1,
            options.run.name
        );
    }
    'restart: loop {
        let (stop_tx, stop_rx) = watch::channel(false);
        let mut controllers = tokio::spawn(run_replicas(handlers.clone(), &options, stop_rx));
        let mut running = true;
        loop {
            tokio::select! {
                () = &mut shutdown => {
                    stop_tx.send_replace(true);
                    if running {
                        let _ = controllers.await;
                    }
                    return Ok(());
                }
                done = &mut controllers, if running => {
                    running = false;
                    match done {
                        Ok(Ok(())) => {}
                        Ok(Err(e)) => {
                            tracing::error!("the operator stopped: {}; save a file to restart it", ctop_core::Chain(&e));
                        }
                        Err(e) => tracing::error!("the operator crashed: {e}; save a file to restart it"),
                    }
                }
                _ = poll.tick() => {
                    let current = handlers.borrow().clone();
                    print_lines(&summary.update(&client, current.spec()).await);
                    if !source.changed() {
                        continue;
                    }
                    let reload = match source.load().await {
                        Ok(reload) => reload,
                        Err(e) => {
                            let frame = source.code_frame(e.as_ref()).map(|f| format!("\n{f}")).unwrap_or_default();
                            tracing::error!("{}; the previous script keeps running{frame}", ctop_core::Chain(e.as_ref()));
                            continue;
                        }
                    };
                    if let Err(e) = install_crds(&client, &reload.crds, &options.run.name).await {
                        tracing::error!("{}; the previous script keeps running", ctop_core::Chain(&e));
                        continue;
                    }
                    if running && hot_swappable(current.spec(), reload.handlers.spec()) {
                        handlers_tx.send_replace(reload.handlers.clone());
                        source.activated(&reload.handlers).await;
                        tracing::info!("script reloaded; caches kept, every object reconciles again");
                        continue;
                    }
                    tracing::info!("the controllers restart with the new script");
                    stop_tx.send_replace(true);
                    if running {
                        let _ = controllers.await;
                    }
                    handlers_tx.send_replace(reload.handlers.clone());
                    source.activated(&reload.handlers).await;
                    continue 'restart;
                }
            }
        }
    }
}

/// Run the controllers until `stop`: once, or as `options.replicas` sharded members; the
/// first error of any.
fn run_replicas(
    handlers: watch::Receiver<Arc<dyn Handlers>>,
    options: &DevOptions,
    stop: watch::Receiver<bool>,
) -> impl Future<Output = Result<(), RunError>> + Send + 'static {
    let runs: Vec<_> = (0..options.replicas.max(1))
        .map(|i| {
            let mut run = options.run.clone();
            if options.replicas > 1 {
                run.sharding = true;
                run.identity = Some(format!("dev-{i}"));
            }
            let mut stop = stop.clone();
            tokio::spawn(run_reloadable(handlers.clone(), run, LeaseTiming::default(), async move {
                let _ = stop.wait_for(|s| *s).await;
            }))
        })
        .collect();
    async move {
        let mut first = Ok(());
        for done in futures::future::join_all(runs).await {
            let result = done.unwrap_or_else(|e| Err(RunError::Start(format!("a replica crashed: {e}"))));
            if first.is_ok() {
                first = result;
            }
        }
        first
    }
}

fn print_lines(lines: &[String]) {
    if lines.is_empty() {
        return;
    }
    let mut out = std::io::stdout().lock();
    for line in lines {
        let _ = writeln!(out, "{line}");
    }
    let _ = out.flush();
}

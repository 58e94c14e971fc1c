//! The manager: the list-and-watch of `Operator` objects and the table of their
//! controllers, one entry per object that exists, dropped when it goes.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;

use ctop_controller::health::{self, Health, Metrics, Shared};
use ctop_controller::{LeaseTiming, RunOptions};
use futures::StreamExt as _;
use kube::Api;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind};
use kube::runtime::WatchStreamExt as _;
use kube::runtime::watcher::{self, Event};
use tokio::task::JoinHandle;

use crate::one::One;
use crate::{ManagerError, crd};

/// Run every `Operator` object of the cluster until `shutdown` completes: the Operator CRD
/// installed when missing (as field manager `template.name`), health and metrics served on
/// `template`'s addresses (one server each, shared by every Operator's controller; the
/// metrics labelled by controller, which is the Operator's name), then one controller per
/// object with `template`'s options (its name and view CRDs the Operator's own) and lease
/// `timing`.
///
/// # Errors
///
/// No client of the cluster, a port that cannot be bound, or the CRD is missing and cannot be installed. An Operator
/// that cannot run is no error: its status says why.
pub async fn run(
    template: RunOptions,
    timing: LeaseTiming,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ManagerError> {
    let client = ctop_controller::client(template.kubeconfig.as_ref(), template.context.as_ref())
        .await
        .map_err(ManagerError::Client)?;
    crd::ensure(&client, &template.name).await?;
    let mut template = template;
    let (shared, servers) = serve(&template).await?;
    template.shared = Some(shared.clone());
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("dcontroller.io", "v1alpha1", "Operator"),
        "operators",
    );
    let api: Api<DynamicObject> = Api::all_with(client, &resource);
    let mut events = watcher::watcher(api.clone(), watcher::Config::default()).default_backoff().boxed();
    let mut table = Table { api, template, timing, running: BTreeMap::new() };
    // The names listed since the last (re)list began: what is not among them is gone.
    let mut listed: Option<BTreeSet<String>> = None;
    tokio::pin!(shutdown);
    tracing::info!("watching Operators");
    loop {
        let event = tokio::select! {
            () = &mut shutdown => break,
            e = events.next() => e,
        };
        match event {
            None => break,
            Some(Err(e)) => tracing::warn!(error = %e, "watching Operators failed; retrying"),
            Some(Ok(Event::Init)) => listed = Some(BTreeSet::new()),
            Some(Ok(Event::InitApply(o))) => {
                if let (Some(l), Some(n)) = (listed.as_mut(), o.metadata.name.as_ref()) {
                    l.insert(n.clone());
                }
                table.apply(&o).await;
            }
            Some(Ok(Event::InitDone)) => {
                shared.health.set_caches_synced(WATCH, true);
                if let Some(l) = listed.take() {
                    let gone: Vec<String> =
                        table.running.keys().filter(|n| !l.contains(*n)).cloned().collect();
                    for name in gone {
                        table.remove(&name).await;
                    }
                }
            }
            Some(Ok(Event::Apply(o))) => table.apply(&o).await,
            Some(Ok(Event::Delete(o))) => table.remove(o.metadata.name.as_deref().unwrap_or_default()).await,
        }
    }
    tracing::info!(operators = table.running.len(), "stopping the Operators' controllers");
    for (_, one) in std::mem::take(&mut table.running) {
        one.stop().await;
    }
    for server in servers {
        server.abort();
    }
    Ok(())
}

/// The manager's own entry in `/status` and `/readyz`: ready once the Operators are listed
/// (no Operator can be named so: it is no DNS label).
const WATCH: &str = "operators.dcontroller.io";

/// The health and metrics every Operator's controller shares, served on the template's
/// addresses (until their tasks are aborted), the manager's own list of Operators
/// registered in it.
async fn serve(template: &RunOptions) -> Result<(Shared, [JoinHandle<()>; 2]), ManagerError> {
    let health = template.inspector.clone().map_or_else(Health::new, Health::with_inspector);
    let shared = Shared { health, metrics: Metrics::new() };
    let (health_addr, health_task) =
        health::serve_router(template.health_addr, health::health_router(shared.health.clone())).await?;
    let (metrics_addr, metrics_task) =
        health::serve_router(template.metrics_addr, health::metrics_router(shared.metrics.clone())).await?;
    tracing::info!(%health_addr, %metrics_addr, "serving health and metrics");
    shared.health.register(WATCH);
    shared.health.set_ready(WATCH, true);
    Ok((shared, [health_task, metrics_task]))
}

/// The controllers of the Operators that exist, by name.
struct Table {
    api: Api<DynamicObject>,
    template: RunOptions,
    timing: LeaseTiming,
    running: BTreeMap<String, One>,
}

impl Table {
    /// An Operator created or changed: (re)start its controller unless it runs for this
    /// object and generation already.
    async fn apply(&mut self, object: &DynamicObject) {
        let Some(name) = object.metadata.name.clone() else { return };
        let uid = object.metadata.uid.as_deref().unwrap_or_default();
        if let Some(one) = self.running.get(&name)
            && one.uid == uid
            && one.generation == object.metadata.generation
        {
            return;
        }
        if let Some(old) = self.running.remove(&name) {
            tracing::info!(
                operator = name,
                generation = object.metadata.generation,
                "the Operator changed; restarting its controller"
            );
            old.stop().await;
        }
        let one = One::start(self.api.clone(), object, &self.template, self.timing);
        self.running.insert(name, one);
    }

    /// An Operator deleted: stop its controller and forget it.
    async fn remove(&mut self, name: &str) {
        if let Some(one) = self.running.remove(name) {
            tracing::info!(operator = name, "the Operator is gone; stopping its controller");
            one.stop().await;
        }
    }
}

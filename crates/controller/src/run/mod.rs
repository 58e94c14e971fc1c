//! Running the controllers of an operator: [`run`], [`run_with_lease`] and
//! [`run_reloadable`] start the health and metrics servers, the leader election (or the
//! shard ring), and per declared controller ctop's own watches and caches, work queue and
//! workers (see the crate docs for the flow of one reconcile).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use ctop_applier::{Applier, ApplierConfig};
use ctop_core::{ControllerSpec, Handlers, OperatorSpec};
use futures::{FutureExt as _, StreamExt as _};
use kube::Client;
use kube::runtime::events::{Recorder, Reporter};
use tokio::sync::watch;

use crate::cluster::{client, install_crds, kind_key, resolve};
use crate::context::{Ctx, HandlerSource};
use crate::error::RunError;
use crate::health::{self, Health, Metrics};
use crate::history::Trigger;
use crate::informer::{EventScope, InformerPlan, Role, WatchSource, hold_initial};
use crate::leader::{LeaderElector, Leadership, LeaseConfig};
use crate::memory::{Gauges, Memory};
use crate::migrate::Migration;
use crate::on_start::on_start;
use crate::options::{LeaseTiming, RunOptions};
use crate::publish::Publisher;
use crate::queue::{Priority, WorkQueue};
use crate::retry::Bucket;
use crate::shard::arrive::Arrivals;
use crate::shard::drain::Drainer;
use crate::shard::{self, Primary, Shard};
use crate::triggers;
use crate::worker::run_workers;

#[cfg(test)]
mod tests;

/// Whether `new` can replace `old` in a running operator without restarting its
/// controllers (and so without dropping their caches): it must declare the same
/// controllers (kinds, watches, handlers, finalizers, periods). Handler code may differ.
#[must_use]
pub fn hot_swappable(old: &OperatorSpec, new: &OperatorSpec) -> bool {
    old.controllers == new.controllers
}

/// Run every controller `handlers` declares until `shutdown` completes (default lease
/// timing).
pub async fn run(
    handlers: Arc<dyn Handlers>,
    options: RunOptions,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), RunError> {
    run_with_lease(handlers, options, LeaseTiming::default(), shutdown).await
}

/// [`run`] with this leader-election timing (used when `options.leader_elect`).
pub async fn run_with_lease(
    handlers: Arc<dyn Handlers>,
    options: RunOptions,
    timing: LeaseTiming,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), RunError> {
    let (_keep, source) = watch::channel(handlers);
    run_reloadable(source, options, timing, shutdown).await
}

/// [`run_with_lease`] with handlers that can be replaced while running (`ctop dev`): each
/// new value of `source` is used from the next handler call on, and every primary object
/// is reconciled again with it; caches, leadership and in-flight reconciles are kept. A
/// replacement must be [`hot_swappable`] with the first: one that is not is ignored with
/// an error (restart the run to change what is watched).
pub async fn run_reloadable(
    source: HandlerSource,
    options: RunOptions,
    timing: LeaseTiming,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), RunError> {
    let first = source.borrow().clone();
    let client = client(options.kubeconfig.as_ref(), options.context.as_ref()).await?;
    if !options.install_crds.is_empty() {
        install_crds(&client, &options.install_crds, &options.name).await?;
    }
    let (health, metrics, servers) = match options.shared.clone() {
        Some(shared) => (shared.health, shared.metrics, Vec::new()),
        None => {
            let health = options.inspector.clone().map_or_else(Health::new, Health::with_inspector);
            let metrics = Metrics::new();
            let (health_addr, health_task) =
                health::serve_router(options.health_addr, health::health_router(health.clone()))
                    .await
                    .map_err(|e| RunError::Start(ctop_core::Chain(&e).to_string()))?;
            let (metrics_addr, metrics_task) =
                health::serve_router(options.metrics_addr, health::metrics_router(metrics.clone()))
                    .await
                    .map_err(|e| RunError::Start(ctop_core::Chain(&e).to_string()))?;
            tracing::info!(%health_addr, %metrics_addr, "serving health and metrics");
            (health, metrics, vec![health_task, metrics_task])
        }
    };

    let (stop_tx, stop_rx) = watch::channel(false);
    // Unique per replica: the pod name, else host and process (two processes on one host
    // must not share an identity). A sharded member's name is derived from it.
    let identity = options.identity.clone().or_else(|| std::env::var("POD_NAME").ok()).unwrap_or_else(|| {
        let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "ctop".into());
        format!("{host}_{}", std::process::id())
    });
    // Leases get a client of their own: a renewal must not wait in line behind thousands of
    // the controllers' requests (a client queues what it sends), or a busy replica would
    // miss its renew deadline and stop.
    let lease_client = if options.sharding || options.leader_elect {
        crate::cluster::client(options.kubeconfig.as_ref(), options.context.as_ref()).await?
    } else {
        client.clone()
    };
    let member = if options.sharding {
        let m = shard::join(&lease_client, &options, timing, &identity, &metrics, stop_rx.clone())?;
        tracing::info!(ring = options.name, member = m.shard.me, "joining the ring");
        Some(m)
    } else {
        None
    };
    let identity = member.as_ref().map_or(identity, |m| m.shard.me.clone());
    // With sharding, the leader only assigns objects (every member reconciles its own).
    let leadership = if options.leader_elect || options.sharding {
        let mut config =
            LeaseConfig::new(options.lease_namespace.clone(), format!("{}-leader", options.name), identity);
        config.lease_duration = timing.lease_duration;
        config.renew_deadline = timing.renew_deadline;
        config.retry_period = timing.retry_period;
        let lease = config.name.clone();
        let elector =
            LeaderElector::new(lease_client.clone(), config).map_err(|e| RunError::Start(e.to_string()))?;
        let leadership = elector.run();
        let mut leading = leadership.subscribe();
        let metrics = metrics.clone();
        tokio::spawn(async move {
            loop {
                let now = *leading.borrow_and_update();
                metrics.set_leader(&lease, now);
                tracing::info!(lease, leading = now, "leadership");
                if leading.changed().await.is_err() {
                    metrics.set_leader(&lease, false);
                    return;
                }
            }
        });
        Some(leadership)
    } else {
        None
    };

    let retries = Arc::new(Bucket::new(options.retry_limit));
    let mut tasks = Vec::new();
    let resources = first.spec().resources.clone();
    let mut published = Vec::new();
    let mut primaries = Vec::new();
    for spec in first.spec().controllers.clone() {
        if !spec.handlers.iter().any(|h| h == "reconcile") {
            tracing::warn!(controller = spec.name, "no reconcile handler: not started");
            continue;
        }
        // Workers run while this replica leads, or, sharded, while it is a member.
        let leader = match &member {
            Some(m) => Some(m.lease.subscribe()),
            None => leadership.as_ref().map(Leadership::subscribe),
        };
        let owns_status = resources.iter().any(|r| {
            r.api_version == spec.for_.api_version && r.kind == spec.for_.kind && r.status_subresource
        });
        let name = spec.name.clone();
        let (fut, primary) = start_controller(
            client.clone(),
            spec,
            owns_status,
            source.clone(),
            retries.clone(),
            options.clone(),
            health.clone(),
            metrics.clone(),
            leader,
            member.as_ref().map(|m| m.shard.clone()),
            stop_rx.clone(),
        )
        .await?;
        tasks.push(tokio::spawn(fut));
        published.push(name);
        primaries.push(primary);
    }
    if let (Some(m), Some(l)) = (&member, &leadership) {
        tasks.extend(m.lead(&options, primaries, &health, l.subscribe(), &stop_rx).await?);
    }
    let publisher = Publisher {
        client: client.clone(),
        health: health.clone(),
        operator: options.name.clone(),
        namespace: options.lease_namespace.clone(),
        controllers: published,
        leading: leadership.as_ref().map(Leadership::subscribe),
        primaries: first
            .spec()
            .controllers
            .iter()
            .filter_map(|c| {
                let r = resources.iter().find(|r| r.group == c.for_.group() && r.kind == c.for_.kind)?;
                Some((c.name.clone(), format!("{}.{}", r.plural, r.group)))
            })
            .collect(),
    };
    tasks.push(tokio::spawn(publisher.run(stop_rx.clone())));
    if let Some(migrate) = options.migrate_storage {
        for resource in first.spec().converting() {
            let migration = Migration {
                client: client.clone(),
                resource: resource.clone(),
                health: health.clone(),
                operator: options.name.clone(),
                options: migrate,
                leading: leadership.as_ref().map(Leadership::subscribe),
            };
            tasks.push(tokio::spawn(migration.run(stop_rx.clone())));
        }
    }
    // A member that could not renew its Lease within the renew deadline stops before the
    // sharder may move its objects (as controller-runtime exits on lost leadership).
    let lost = async {
        match &member {
            Some(m) => m.lost().await,
            None => std::future::pending().await,
        }
    };
    let lost = tokio::select! {
        () = shutdown => false,
        () = lost => true,
    };
    tracing::info!("shutting down");
    stop_tx.send_replace(true);
    for t in tasks {
        let _ = t.await;
    }
    // Every reconcile has ended: the member Lease may go (the sharder moves its objects).
    if let Some(m) = member
        && let Err(e) = m.lease.shutdown().await
    {
        tracing::warn!(error = %ctop_core::Chain(&e), "cannot release the member lease");
    }
    if let Some(l) = leadership
        && let Err(e) = l.shutdown().await
    {
        tracing::warn!(error = %ctop_core::Chain(&e), "cannot release the lease");
    }
    for server in servers {
        server.abort();
    }
    if lost {
        return Err(RunError::LostMembership(options.name));
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
async fn start_controller(
    client: Client,
    spec: ControllerSpec,
    owns_status: bool,
    source: HandlerSource,
    retries: Arc<Bucket>,
    options: RunOptions,
    health: Health,
    metrics: Metrics,
    leader: Option<watch::Receiver<bool>>,
    shard: Option<Arc<Shard>>,
    stop: watch::Receiver<bool>,
) -> Result<(impl Future<Output = ()> + Send + 'static, Primary), RunError> {
    let name = spec.name.clone();
    // A kind read metadata-only that the controller needs in full (the SDK refuses it too).
    if let Some(conflict) = spec.metadata_only_conflict() {
        return Err(RunError::Start(conflict.to_string()));
    }
    let queue = WorkQueue::new(name.clone(), Some(metrics.clone()));
    let options_concurrency = options.concurrency;
    let (primary, namespaced) = resolve(&client, &spec.for_).await?;
    let ns = options.namespace.as_deref();
    let scope = |namespaced: bool, ns: Option<&str>| ns.filter(|_| namespaced).map(str::to_owned);
    // One watch per kind and scope, shared by everything that reads or is triggered by
    // that kind (see `InformerPlan`): the primary kind's (the script may scope it by a
    // namespace and a label selector, both applied by the server), each managed or read
    // kind's, and one per `.watches()` that none of these covers.
    let mut sharded = Primary {
        ar: primary.clone(),
        namespaced,
        namespace: scope(namespaced, spec.namespace.as_deref().or(ns)),
        selector: spec.label_selector.clone(),
        children: Vec::new(),
    };
    // A sharded member's server sends it its own objects only.
    let primary_labels = match &shard {
        Some(s) => Some(s.narrow(spec.label_selector.as_deref())),
        None => spec.label_selector.clone(),
    };
    let mut primary_plan = InformerPlan::new(
        kind_key(&spec.for_),
        primary.clone(),
        namespaced,
        sharded.namespace.clone(),
        primary_labels,
        Role::Primary,
    );
    primary_plan.fields = spec.field_selector.clone();
    // The API server selects by labels only: an annotation selector is applied here, before
    // the cache (an object it does not select is never cached nor reconciled).
    if let Some(sel) = &spec.annotation_selector {
        primary_plan.scope = Some(EventScope::annotated(sel).map_err(|e| {
            RunError::Start(format!("operator {:?}: annotationSelector {sel:?}: {e}", spec.name))
        })?);
    }
    let mut plans = vec![primary_plan];
    for (k, owned) in spec.manages.iter().map(|k| (k, true)).chain(spec.reads.iter().map(|k| (k, false))) {
        if plans.iter().any(|p| p.key == kind_key(k)) {
            continue;
        }
        let (ar, child_namespaced) = resolve(&client, k).await?;
        let role = if owned { Role::Owned } else { Role::Read };
        if owned {
            sharded.children.push(shard::Child {
                ar: ar.clone(),
                namespaced: child_namespaced,
                namespace: scope(child_namespaced, ns),
            });
        }
        // `.manages(kind, { childrenOnly: true })`: the server sends children only (every
        // child carries the ApplySet part-of label), unless the kind is also read in full.
        // Sharded, a managed kind's watch holds this member's children only.
        let selector = match &shard {
            Some(s) if owned && !spec.reads.contains(k) => Some(s.selector()),
            _ => (owned && spec.children_only.contains(k) && !spec.reads.contains(k))
                .then(|| ctop_applier::applyset::PART_OF_LABEL.to_owned()),
        };
        let mut plan =
            InformerPlan::new(kind_key(k), ar, child_namespaced, scope(child_namespaced, ns), selector, role);
        // `.reads(kind, { metadataOnly: true })`: `PartialObjectMetadata` (never a managed kind).
        plan.metadata_only = spec.is_metadata_only(k);
        plans.push(plan);
    }
    let mut watch_sources = Vec::new();
    for (i, w) in spec.watches.iter().enumerate() {
        let (ar, watched_namespaced) = resolve(&client, &w.kind).await?;
        let key = kind_key(&w.kind);
        let w_ns = scope(watched_namespaced, w.namespace.as_deref().or(ns));
        let source =
            match plans.iter().position(|p| p.covers(&key, w_ns.as_deref(), w.label_selector.as_deref())) {
                Some(j) => {
                    let filter = EventScope::narrowing(&plans[j], w_ns, w.label_selector.as_deref())
                        .map_err(|e| RunError::Start(format!(".watches({key}): {e}")))?;
                    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
                    plans[j].subscribers.push(tx);
                    WatchSource::Shared(rx, filter)
                }
                None => {
                    let mut plan = InformerPlan::new(
                        key,
                        ar.clone(),
                        watched_namespaced,
                        w_ns,
                        w.label_selector.clone(),
                        Role::Watch,
                    );
                    // A kind the controller reads metadata-only is watched so everywhere.
                    plan.metadata_only = spec.is_metadata_only(&w.kind);
                    plans.push(plan);
                    WatchSource::Own(plans.len() - 1)
                }
            };
        watch_sources.push((i, w.clone(), ar, source));
    }
    let mut plans = plans.into_iter();
    let primary_plan = plans.next().ok_or_else(|| RunError::Start("no primary watch".into()))?;
    let primary_informer = primary_plan.start(&client);
    // Objects of a (re)list reach the cache together, at its end: their triggers wait for it.
    let primary_stream = hold_initial(primary_informer.stream);
    // The primary kind is observable too (`getObserved(myKind, ...)`), from the same cache
    // (the first: see `Ctx::primaries`).
    let primary_store = primary_informer.cache.store.clone();
    let mut caches = vec![primary_informer.cache];
    let mut synced = vec![primary_informer.synced];
    // Streams still to consume, by what they trigger.
    let mut owned_streams = Vec::new();
    let mut own_watch_streams = HashMap::new();
    // Watches that only fill a cache; their tasks end with the controller.
    let mut cache_only = Vec::new();
    for (j, plan) in plans.enumerate() {
        let (key, role) = (plan.key.clone(), plan.role);
        let informer = plan.start(&client);
        synced.push(informer.synced);
        // `getObserved` reads the first cache of a kind (a second one exists only for a
        // `.watches()` scoped beyond it).
        if !caches.iter().any(|c| c.key == key) {
            caches.push(informer.cache);
        }
        match role {
            Role::Owned => owned_streams.push((key, informer.stream)),
            Role::Watch => {
                own_watch_streams.insert(j + 1, informer.stream);
            }
            Role::Primary | Role::Read => cache_only.push(informer.stream),
        }
    }
    if let Some(every) = spec.every {
        tracing::info!(controller = name, every = ?Duration::from(every), "periodic resync");
    }
    health.register(&name);
    metrics.register_controller(&name, usize::from(options.concurrency));
    let reporter = Reporter {
        controller: options.name.clone(),
        instance: options.identity.clone().or_else(|| std::env::var("POD_NAME").ok()),
    };
    let mut applier_config = ApplierConfig::new(options.name.clone());
    if let Some(s) = &shard {
        applier_config.child_labels.push((s.labels.shard.clone(), s.me.clone()));
    }
    let applier = Applier::new(client.clone(), applier_config);
    let gauges = Gauges {
        objects: metrics.remembered(&name, "objects"),
        applied: metrics.remembered(&name, "applied"),
        status: metrics.remembered(&name, "status"),
    };
    let ctx = Arc::new(Ctx {
        primary_kind: kind_key(&spec.for_),
        spec,
        handlers: source,
        owns_status,
        retries,
        primary,
        namespaced,
        caches: Arc::new(caches),
        memory: Memory::new(applier.clone(), gauges)
            .with_history(options.history, Some(health.inspector().changes(&name, namespaced))),
        applier,
        recorder: Recorder::new(client.clone(), reporter),
        client,
        options,
        health: health.clone(),
        metrics,
        leader,
        shard: shard.clone(),
    });

    health.inspector().register(&ctx);
    #[cfg(test)]
    tests::started(&ctx);
    let mut triggers: Vec<futures::future::BoxFuture<'static, ()>> = Vec::new();
    let (drains, drain_keys) = tokio::sync::mpsc::unbounded_channel();
    let arrivals = shard.as_ref().map(|_| Arc::new(Arrivals::default()));
    triggers.push(triggers::primary(ctx.clone(), queue.clone(), primary_stream, arrivals, drains).boxed());
    for (kind, stream) in owned_streams {
        triggers.push(triggers::children(ctx.clone(), queue.clone(), kind, stream).boxed());
    }
    for stream in cache_only {
        triggers.push(stream.for_each(|_| async {}).boxed());
    }
    if let Some(s) = &shard {
        triggers.push(Drainer::run(ctx.clone(), queue.clone(), drain_keys).boxed());
        triggers.push(s.clone().count(name.clone(), primary_store.clone()).boxed());
    }
    // Workers start once every cache holds its first list, as controller-runtime's wait
    // for cache sync.
    let (all_synced, caches_synced) = watch::channel(false);
    {
        let ctx = ctx.clone();
        let stop = stop.clone();
        tokio::spawn(async move {
            for mut rx in synced {
                if rx.wait_for(|s| *s).await.is_err() {
                    // The watcher ended (shutdown): the caches will never sync.
                    return;
                }
            }
            all_synced.send_replace(true);
            ctx.health.set_caches_synced(&ctx.spec.name, true);
            tracing::info!(controller = ctx.spec.name, "caches synced");
            // Once leading (or a member), the fields of the former manager `ctop` move to
            // this operator's name (see `managers`).
            {
                let (ctx, mut stop) = (ctx.clone(), stop.clone());
                tokio::spawn(async move {
                    if let Some(mut leader) = ctx.leader.clone() {
                        tokio::select! {
                            r = leader.wait_for(|l| *l) => if r.is_err() { return },
                            _ = stop.wait_for(|s| *s) => return,
                        }
                    }
                    crate::managers::take_over_former(&ctx).await;
                });
            }
            if ctx.spec.handlers.iter().any(|h| h == "onStart") {
                on_start(&ctx, stop).await;
            }
        });
    }
    for (i, w, ar, source) in watch_sources {
        let events = match source {
            WatchSource::Shared(rx, filter) => filter.apply(rx).boxed(),
            WatchSource::Own(j) => match own_watch_streams.remove(&j) {
                Some(stream) => stream.boxed(),
                None => continue,
            },
        };
        triggers.push(triggers::watches(ctx.clone(), queue.clone(), i, w, ar, events).boxed());
    }
    triggers.push(
        triggers::everything(
            triggers::reloads(ctx.handlers.clone(), name.clone()),
            ctx.clone(),
            queue.clone(),
            Priority::Change,
            Trigger::ScriptReplaced,
        )
        .boxed(),
    );
    if let Some(leader) = ctx.leader.clone() {
        let won = tokio_stream::wrappers::WatchStream::new(leader)
            .filter(|leading| std::future::ready(*leading))
            .map(|_| ());
        triggers.push(
            triggers::everything(won, ctx.clone(), queue.clone(), Priority::Background, Trigger::Leader)
                .boxed(),
        );
    }
    health.set_ready(&name, true);
    let concurrency = usize::from(options_concurrency);
    Ok((
        async move {
            let triggers: Vec<_> = triggers.into_iter().map(tokio::spawn).collect();
            let timers = tokio::spawn(queue.clone().run_timers());
            let workers =
                tokio::spawn(run_workers(concurrency, queue.clone(), primary_store, caches_synced, ctx));
            let mut stop = stop;
            let _ = stop.wait_for(|s| *s).await;
            queue.shut_down();
            for t in &triggers {
                t.abort();
            }
            timers.abort();
            // In-flight reconciles finish; no new one starts.
            let _ = workers.await;
            // Every task that held the controller (and its caches) has ended.
            for t in triggers {
                let _ = t.await;
            }
            let _ = timers.await;
        },
        sharded,
    ))
}

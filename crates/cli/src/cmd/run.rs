//! `ctop run`: run an operator script against a cluster until interrupted.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context as _;
use ctop_controller::{LeaseTiming, RetryLimit, RunOptions};
use ctop_runtime::Framed;
use ctop_runtime::{Bundle, Script, ScriptError, ScriptHandlers, load_dir, script_env, values_from_yaml};

/// Arguments of `ctop run`.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// The operator directory.
    #[arg(default_value = ".")]
    dir: PathBuf,
    /// Run every Δ-controller Operator object of the cluster (dcontroller.io/v1alpha1,
    /// cluster-scoped) instead of DIR: one controller each, started, restarted on a change
    /// of its spec and stopped on its deletion, as the objects change; one that cannot run
    /// says why in its status (Ready=False). Installs the Operator CRD when it is missing.
    /// Each Operator's controller is named after it (field manager, leader Lease
    /// <operator>-leader, metrics' controller label); health and metrics are served once
    /// for all. Deploy it with `ctop manifests --operators`.
    #[arg(long, conflicts_with_all = ["bundle", "install_crds", "sharding", "migrate_storage", "webhook_port"])]
    operators: bool,
    /// The entry script, relative to DIR.
    #[arg(long, default_value = "operator.ct")]
    entry: String,
    /// Run this bundle.js.gz (from `ctop bundle`) instead of DIR's sources.
    #[arg(long)]
    bundle: Option<PathBuf>,
    /// The values file [default: DIR/values.yaml when it exists, else empty values].
    #[arg(long)]
    values: Option<PathBuf>,
    /// The kubeconfig [default: in-cluster, $KUBECONFIG or ~/.kube/config].
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// The kubeconfig context to use [default: its current context].
    #[arg(long)]
    context: Option<String>,
    /// Watch only this namespace [default: all namespaces].
    #[arg(long)]
    namespace: Option<String>,
    /// Longest one handler call may run: the script is stopped there and the call fails
    /// (waiting for a free script runtime does not count).
    #[arg(long, default_value = "30s")]
    reconcile_timeout: ctop_core::Duration,
    #[command(flatten)]
    script_limits: super::ScriptFlags,
    /// Reconciles running at once per controller (also the number of script runtimes).
    #[arg(long, default_value_t = 4)]
    concurrency: u16,
    /// Port of /healthz, /readyz and /status (0 picks a free one).
    #[arg(long, default_value_t = 8081)]
    health_port: u16,
    /// Port of /metrics (0 picks a free one).
    #[arg(long, default_value_t = 8080)]
    metrics_port: u16,
    /// Serve the operator's page (its objects, their children's health and reconciles,
    /// live) on this port; off by default. Reach it with `kubectl port-forward`.
    #[arg(long)]
    ui_port: Option<u16>,
    /// The address the page listens on. It reads the cluster with the operator's rights:
    /// keep it on loopback unless something in front of it checks who asks.
    #[arg(long, default_value = "127.0.0.1", requires = "ui_port")]
    ui_address: IpAddr,
    /// Elect a leader on a Lease and reconcile only while leading.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    leader_elect: bool,
    /// Namespace of the leader Lease [default: $POD_NAMESPACE, else default].
    #[arg(long)]
    lease_namespace: Option<String>,
    /// How long a standby waits after the leader's last renewal before taking over.
    #[arg(long, default_value = "15s")]
    lease_duration: ctop_core::Duration,
    /// How long the leader keeps leading without a successful renewal (less than
    /// --lease-duration).
    #[arg(long, default_value = "10s")]
    renew_deadline: ctop_core::Duration,
    /// Time between attempts to acquire or renew the Lease.
    #[arg(long, default_value = "2s")]
    retry_period: ctop_core::Duration,
    /// Spread the objects over the replicas: each holds a member Lease, the one elected on
    /// the leader Lease labels every object with its member, and each replica watches and
    /// reconciles its own (docs/sharding.md).
    #[arg(long)]
    sharding: bool,
    /// This replica's name in its Leases and events [default: $POD_NAME, else host and
    /// process].
    #[arg(long)]
    identity: Option<String>,
    /// The operator's name: its field manager, Leases, event reporter and shard ring, so
    /// that operators sharing a cluster never share one [default: DIR's name, else the
    /// script's first resource's plural; `ctop manifests` passes the name it deploys under].
    #[arg(long)]
    name: Option<String>,
    /// Server-side apply the script's CRDs (and wait until Established) before starting.
    #[arg(long)]
    install_crds: bool,
    /// Storage migration: as the leader, rewrite every object of the script's multi-version
    /// resources that is still stored in an older version, then drop those versions from
    /// the CRD's status.storedVersions, so that the script may stop declaring them (progress
    /// on /status). Needs the RBAC `ctop manifests --migrate-storage` grants.
    #[arg(long)]
    migrate_storage: bool,
    /// Objects the storage migration rewrites per second at most.
    #[arg(long, default_value_t = 50, requires = "migrate_storage")]
    migrate_storage_rate: u32,
    /// Reconciles kept per object in its history (what triggered each, what it read and did,
    /// how it ended), served on the health port's /api/history and shown by `ctop trace`;
    /// 0 keeps none.
    #[arg(long, default_value_t = ctop_controller::history::DEFAULT_KEPT)]
    history: usize,
    /// Retries of failed reconciles per second, across all controllers, once the burst is
    /// spent (on top of each object's exponential backoff).
    #[arg(long, default_value_t = 10.0)]
    retry_qps: f64,
    /// Retries of failed reconciles allowed at once.
    #[arg(long, default_value_t = 100)]
    retry_burst: u32,
    /// Development mode: no leader election, text logs.
    #[arg(long)]
    pub dev: bool,
    /// Also serve the script's validate/mutate handlers as an HTTPS admission webhook, and
    /// its conversions between the versions of its resources as their conversion webhook
    /// (`/convert`), on this port (every replica serves, leader or not).
    #[arg(long)]
    webhook_port: Option<u16>,
    /// With a self-issued certificate: the name of the Validating/MutatingWebhookConfiguration
    /// whose caBundle the operator keeps set to its CA (of the kinds the script's handlers
    /// produce: validating for `validate`, mutating for `mutate`).
    #[arg(long, requires = "webhook_port")]
    webhook_configuration: Option<String>,
    /// Admission handler calls running at once (script runtimes of the webhook server,
    /// separate from the reconciles').
    #[arg(long, default_value_t = 4, requires = "webhook_port")]
    webhook_concurrency: u16,
    #[command(flatten)]
    webhook: super::webhook::WebhookFlags,
    #[command(flatten)]
    record: super::record::RecordFlags,
    #[command(flatten)]
    shadow: super::shadow::ShadowFlags,
}

/// Load the script and run its controllers until Ctrl-C or SIGTERM.
pub async fn run(args: RunArgs) -> anyhow::Result<()> {
    if args.operators {
        return run_operators(args).await;
    }
    if let Some(op) = super::declarative::operator_at(&args.dir)? {
        return run_operator(args, op).await;
    }
    if let Some(path) = &args.bundle {
        let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
        if let Some(op) = super::declarative::operator_in_bundle(&bytes) {
            return run_operator(args, op).await;
        }
    }
    let workers = usize::from(args.concurrency.max(1));
    let load_error = "the script could not be loaded (fix the error that follows and run ctop run again)";
    let bundle = match &args.bundle {
        Some(path) => {
            let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
            Bundle::from_gz(&bytes).map_err(|e| anyhow::Error::new(ScriptError::from(e)))
        }
        None => load_dir(&args.dir, &args.entry).map_err(|e| anyhow::Error::new(Framed::new(e, &args.dir))),
    }
    .context(load_error)?;
    if args.webhook_port.is_some() {
        args.webhook.check()?;
    }
    let limits = args.script_limits.limits(args.reconcile_timeout.into());
    let script = Script::from_bundle(bundle.clone(), workers, limits).context(load_error)?;
    // The operator's own servers stay closed to the script's fetch.
    let own_ports: Vec<u16> =
        [Some(args.health_port), Some(args.metrics_port), args.webhook_port, args.ui_port]
            .into_iter()
            .flatten()
            .collect();
    script.configure_egress(&args.script_limits.egress, &own_ports);
    if script.spec().controllers.is_empty() {
        anyhow::bail!(
            "the script declares no operator(...), so there is nothing to run; add one (ctop init writes an \
             example) and run ctop run again"
        );
    }
    let values = values_from_yaml(&super::values_text(&args.dir, args.values.as_deref())?)
        .context("the values file is not a YAML mapping")?;
    let name = super::operator_name(args.name.as_deref(), &args.dir, script.spec())?;
    let namespace = args.lease_namespace.clone().or_else(|| std::env::var("POD_NAMESPACE").ok());
    let namespace = namespace.unwrap_or_else(|| "default".into());
    // A resource with several versions converts through the operator's webhook Service, as
    // `ctop manifests` names it; the webhook server keeps its CA in the CRD (and a
    // self-issued one is in the CRDs installed here from the start).
    let install_crds = if args.install_crds {
        let endpoint = ctop_manifests::ConversionEndpoint::Service {
            namespace: namespace.clone(),
            name: format!("{name}-webhook"),
            port: 443,
        };
        ctop_manifests::operator_crds_with(script.spec(), &endpoint)?
    } else {
        Vec::new()
    };
    if ctop_webhook::converts(script.spec()) && args.webhook_port.is_none() {
        tracing::warn!(
            crds = ctop_webhook::converting_crds(script.spec()).join(","),
            "the script's resources have several versions, and this run serves no conversion webhook: the API \
             server needs one to convert them (run with --webhook-port, as ctop manifests does, or keep another \
             server of this script running)"
        );
    }
    let (mut options, timing) = run_options(&args, name.clone(), namespace, install_crds)?;
    let script = Arc::new(script);
    let env = script_env();
    // The CRDs of a script that converts name the webhook Service: a self-issued
    // certificate must be valid for it.
    let mut webhook_flags = args.webhook.clone();
    let service_host = format!("{name}-webhook.{}.svc", options.lease_namespace);
    if ctop_webhook::converts(script.spec()) && !webhook_flags.tls_hosts.contains(&service_host) {
        webhook_flags.tls_hosts.push(service_host);
    }
    let webhook = match args.webhook_port {
        Some(port) => {
            // Admission calls get runtimes of their own, with their own deadline: looping
            // validate handlers cannot hold the reconciles' runtimes, nor the reverse.
            let admission_limits = args.script_limits.limits(args.webhook.handler_timeout());
            let admission = Script::from_bundle(bundle, args.webhook_concurrency.into(), admission_limits)
                .context("the script could not be loaded for the webhook server")?;
            admission.configure_egress(&args.script_limits.egress, &own_ports);
            let (task, ca_pem) = super::webhook::spawn_for_run(
                Arc::new(admission),
                options.kubeconfig.as_deref(),
                &values,
                port,
                &webhook_flags,
                args.webhook_configuration,
                usize::from(args.webhook_concurrency),
            )
            .await?;
            if let Some(ca) = ca_pem {
                with_ca_bundle(&mut options.install_crds, &ca);
            }
            Some(task)
        }
        None => None,
    };
    let ui_addr = args.ui_port.map(|port| SocketAddr::from((args.ui_address, port)));
    if args.shadow.shadow {
        let page = ui_addr.map(|addr| {
            let inspector = ctop_ui::Inspector::default();
            options.inspector = Some(inspector.clone());
            (addr, inspector)
        });
        let recorder = args.record.writer(&name, &env, &values)?;
        let handlers = Arc::new(ScriptHandlers::new(Arc::clone(&script), &env, &values));
        let handlers = super::record::wrap(handlers, &script, recorder.as_ref());
        let result = super::shadow::run(&args.shadow, &script, handlers, options, page).await;
        let closed = super::record::close(recorder);
        result?;
        return closed;
    }
    let page = serve_page(ui_addr, &mut options).await?;
    let recorder = args.record.writer(&name, &env, &values)?;
    let handlers = Arc::new(ScriptHandlers::new(Arc::clone(&script), &env, &values));
    let handlers = super::record::wrap(handlers, &script, recorder.as_ref());
    let result = ctop_controller::run_with_lease(handlers, options, timing, super::shutdown_signal()).await;
    for task in [webhook, page].into_iter().flatten() {
        task.abort();
    }
    let closed = super::record::close(recorder);
    result?;
    closed
}

/// Run a Δ-controller `Operator` YAML: its one controller, with the same queue, retries,
/// leader election, health, metrics and page as a script's (from a YAML file, or from the
/// bundle `ctop manifests` made of one; the values the Deployment passes are ignored).
/// Webhooks, shadows and recordings are the scripts' and are refused.
async fn run_operator(args: RunArgs, op: ctop_declarative::Operator) -> anyhow::Result<()> {
    if args.webhook_port.is_some() || args.shadow.shadow || args.record.record.is_some() {
        anyhow::bail!(
            "--webhook-port, --shadow and --record are for scripts; an Operator YAML takes none of them"
        );
    }
    let name = args.name.clone().unwrap_or_else(|| op.name.clone());
    let namespace = args.lease_namespace.clone().or_else(|| std::env::var("POD_NAMESPACE").ok());
    let handlers = super::declarative::handlers(op)?;
    let install_crds = if args.install_crds {
        ctop_manifests::operator_crds(ctop_core::Handlers::spec(&*handlers))?
    } else {
        Vec::new()
    };
    let (mut options, timing) =
        run_options(&args, name, namespace.unwrap_or_else(|| "default".into()), install_crds)?;
    let page =
        serve_page(args.ui_port.map(|port| SocketAddr::from((args.ui_address, port))), &mut options).await?;
    let result = ctop_controller::run_with_lease(handlers, options, timing, super::shutdown_signal()).await;
    if let Some(task) = page {
        task.abort();
    }
    Ok(result?)
}

/// `ctop run --operators`: every `Operator` object of the cluster, by `ctop_operators::run`
/// (as `ctop-operators` unless --name says otherwise: the field manager of the Operator CRD
/// it installs).
async fn run_operators(args: RunArgs) -> anyhow::Result<()> {
    if args.shadow.shadow || args.record.record.is_some() {
        anyhow::bail!("--shadow and --record are for scripts; ctop run --operators takes neither");
    }
    let name = args.name.clone().unwrap_or_else(|| "ctop-operators".into());
    let namespace = args.lease_namespace.clone().or_else(|| std::env::var("POD_NAMESPACE").ok());
    let (mut options, timing) =
        run_options(&args, name, namespace.unwrap_or_else(|| "default".into()), Vec::new())?;
    let page =
        serve_page(args.ui_port.map(|port| SocketAddr::from((args.ui_address, port))), &mut options).await?;
    let result = ctop_operators::run(options, timing, super::shutdown_signal()).await;
    if let Some(task) = page {
        task.abort();
    }
    Ok(result?)
}

/// Serve the operator's page on `addr`, when there is one, over the inspector it puts in
/// `options`.
async fn serve_page(
    addr: Option<SocketAddr>,
    options: &mut RunOptions,
) -> anyhow::Result<Option<tokio::task::JoinHandle<()>>> {
    let Some(addr) = addr else { return Ok(None) };
    let inspector = ctop_ui::Inspector::default();
    options.inspector = Some(inspector.clone());
    let (addr, task) = ctop_controller::health::serve_router(addr, ctop_ui::router(inspector))
        .await
        .context("cannot serve the operator's page")?;
    tracing::info!("serving the operator's page on http://{addr}/");
    Ok(Some(task))
}

/// The controller's options and lease timing of `ctop run`'s flags, for an operator named
/// `name` with its leader Lease in `namespace`.
fn run_options(
    args: &RunArgs,
    name: String,
    namespace: String,
    install_crds: Vec<serde_json::Value>,
) -> anyhow::Result<(RunOptions, LeaseTiming)> {
    if args.sharding && args.dev {
        anyhow::bail!("--sharding needs Leases and --dev turns them off; drop one of the two flags");
    }
    if args.retry_qps.is_nan() || args.retry_qps < 0.0 {
        anyhow::bail!("--retry-qps must be 0 (no global limit) or more");
    }
    let options = RunOptions {
        kubeconfig: args.kubeconfig.clone(),
        context: args.context.clone(),
        namespace: args.namespace.clone(),
        concurrency: args.concurrency.max(1),
        health_addr: SocketAddr::from((Ipv4Addr::UNSPECIFIED, args.health_port)),
        metrics_addr: SocketAddr::from((Ipv4Addr::UNSPECIFIED, args.metrics_port)),
        inspector: None,
        shared: None,
        leader_elect: args.leader_elect && !args.dev,
        lease_namespace: namespace,
        name,
        identity: args.identity.clone(),
        install_crds,
        retry_limit: RetryLimit { qps: args.retry_qps, burst: args.retry_burst },
        sharding: args.sharding,
        migrate_storage: args
            .migrate_storage
            .then_some(ctop_controller::StorageMigration { rate: args.migrate_storage_rate.max(1) }),
        history: args.history,
    };
    let timing = LeaseTiming {
        lease_duration: args.lease_duration.into(),
        renew_deadline: args.renew_deadline.into(),
        retry_period: args.retry_period.into(),
    };
    Ok((options, timing))
}

/// `ca_pem` as the `caBundle` of the conversion webhooks of `crds` (those that have one).
fn with_ca_bundle(crds: &mut [serde_json::Value], ca_pem: &str) {
    use base64::Engine as _;
    let bundle = base64::engine::general_purpose::STANDARD.encode(ca_pem);
    for crd in crds {
        if let Some(config) =
            crd.pointer_mut("/spec/conversion/webhook/clientConfig").and_then(|c| c.as_object_mut())
        {
            config.insert("caBundle".into(), serde_json::Value::String(bundle.clone()));
        }
    }
}

//! `ctop run --shadow`: the operator's controllers run unchanged on an in-process overlay
//! that `ctop-shadow` fills from the live cluster with list and watch only; what they would
//! have written is logged once they converge, served on the page's `/api/shadow`, and written
//! to `--shadow-report FILE` on exit.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use ctop_controller::RunOptions;
use ctop_core::Handlers;
use ctop_runtime::Script;
use ctop_shadow::{Shadow, ShadowOptions};

/// The shadow flags of `ctop run`.
#[derive(Debug, Clone, clap::Args)]
pub struct ShadowFlags {
    /// Run as a shadow of the deployed operator: read the cluster (list and watch only; `ctop
    /// manifests --shadow` grants no more), send every write to an in-process copy of it, and
    /// report what this version of the script would create, change and delete, per object
    /// (in the log once it converges, on the page's /api/shadow with --ui-port). Nothing is
    /// written to the cluster.
    #[arg(long, conflicts_with_all = ["sharding", "migrate_storage", "webhook_port", "install_crds"])]
    pub shadow: bool,
    /// With --shadow: write the report as JSON to FILE on exit.
    #[arg(long, value_name = "FILE", requires = "shadow")]
    pub shadow_report: Option<PathBuf>,
    /// With --shadow: how long the shadow must write nothing, once every object was
    /// reconciled, to count as converged.
    #[arg(long, default_value = "2s", requires = "shadow")]
    pub shadow_quiet: ctop_core::Duration,
}

/// Runs `handlers` of `script` as a shadow until `shutdown`; `options` are `ctop run`'s,
/// pointed at the overlay here.
pub async fn run(
    flags: &ShadowFlags,
    script: &Script,
    handlers: Arc<dyn Handlers>,
    mut options: RunOptions,
    page: Option<(std::net::SocketAddr, ctop_ui::Inspector)>,
) -> anyhow::Result<()> {
    let config = ctop_controller::kube_config(options.kubeconfig.as_ref(), options.context.as_ref()).await?;
    let server = config.cluster_url.to_string().trim_end_matches('/').to_owned();
    let live = kube::Client::try_from(config).context("cannot build a client of the cluster")?;
    let mut crds = ctop_manifests::operator_crds(script.spec())?;
    crds.push(ctop_core::controller_status::crd());
    if ctop_webhook::converts(script.spec()) {
        tracing::warn!(
            "the script's resources have several versions: the shadow's copy converts them without its \
             conversion webhook (objects keep their fields under the other version's name)"
        );
    }
    let shadow_options = ShadowOptions {
        namespace: options.namespace.clone(),
        quiet: flags.shadow_quiet.into(),
        live_server: server.clone(),
    };
    let shadow = Arc::new(
        Shadow::start(live, script.spec(), &crds, shadow_options)
            .await
            .context("the shadow could not copy the cluster (check that its account may list and watch what the operator reads: ctop manifests --shadow)")?,
    );
    tracing::info!(
        server,
        "shadow of the cluster: nothing is written to it; every write goes to an in-process copy"
    );
    options.kubeconfig = Some(shadow.kubeconfig().to_owned());
    options.context = None;
    options.leader_elect = false;
    options.install_crds = Vec::new();
    let page_task = match page {
        Some((addr, inspector)) => {
            // Behind the page's check of the Host, as the rest of the page.
            let router = ctop_ui::router_with(inspector, ctop_shadow::router(Arc::clone(&shadow)));
            let (addr, task) = ctop_controller::health::serve_router(addr, router)
                .await
                .context("cannot serve the operator's page")?;
            tracing::info!("serving the shadow's page on http://{addr}/ (what it would write: /api/shadow)");
            Some(task)
        }
        None => None,
    };
    let logger = tokio::spawn(log_changes(Arc::clone(&shadow)));
    let handlers = shadow.handlers(handlers);
    let result = ctop_controller::run(handlers, options, super::shutdown_signal()).await;
    logger.abort();
    if let Some(task) = page_task {
        task.abort();
    }
    let report = shadow.report();
    if let Some(path) = &flags.shadow_report {
        let json = serde_json::to_vec_pretty(&report).context("cannot write the shadow's report as JSON")?;
        std::fs::write(path, json).with_context(|| {
            format!("cannot write the shadow's report to {} (choose another --shadow-report)", path.display())
        })?;
    }
    result?;
    Ok(())
}

/// Logs the report's summary each time the shadow converges on a new one.
async fn log_changes(shadow: Arc<Shadow>) {
    let mut logged: Option<Vec<String>> = None;
    let mut tick = tokio::time::interval(Duration::from_millis(500));
    loop {
        tick.tick().await;
        let report = shadow.report();
        if !report.converged || logged.as_ref() == Some(&report.summary) {
            continue;
        }
        tracing::info!(objects = report.owners.len(), "shadow converged: {}", report.summary.join("; "));
        logged = Some(report.summary);
    }
}

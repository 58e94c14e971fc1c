//! `ctop sim`: serve kubesim until interrupted.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;
use ctop_kubesim::{Config, KubeSim};

/// Arguments of `ctop sim`.
#[derive(Debug, clap::Args)]
pub struct SimArgs {
    /// Address to listen on (port 0 picks a free one).
    #[arg(long, default_value = "127.0.0.1:6443")]
    addr: SocketAddr,
    /// Where to write the kubeconfig once the server is ready.
    #[arg(long, default_value = "kubesim.kubeconfig")]
    kubeconfig: PathBuf,
    /// Authenticate requests and enforce RBAC (the kubeconfig gets an admin token, or
    /// with --kubeconfig-client-cert an admin client certificate).
    #[arg(long)]
    authz: bool,
    /// Write a kubeconfig whose admin user (CN kubesim-admin, O system:masters)
    /// authenticates with a client certificate signed by kubesim's CA, as kind's does,
    /// instead of a bearer token.
    #[arg(long, conflicts_with = "plain_http")]
    kubeconfig_client_cert: bool,
    /// Changes kept for watches to resume from before they get 410 Expired.
    #[arg(long, default_value_t = 10_000)]
    watch_history: usize,
    /// Bytes of replaced and deleted object versions the watch history may keep alive (live
    /// objects do not count) before older changes get 410 Expired.
    #[arg(long, default_value_t = 64 * 1024 * 1024)]
    watch_history_bytes: usize,
    /// Seconds between watch bookmarks.
    #[arg(long, default_value_t = 10)]
    bookmark_seconds: u64,
    /// Serve plain HTTP instead of HTTPS (kubectl then sends no credentials, so this
    /// cannot be combined with --authz).
    #[arg(long, conflicts_with = "authz")]
    plain_http: bool,
    /// Call admission webhooks that name the Service NAMESPACE/NAME at HOST:PORT (there is
    /// no cluster network); repeatable.
    #[arg(long, value_name = "NAMESPACE/NAME=HOST:PORT", value_parser = webhook_service)]
    webhook_service: Vec<(String, String)>,
    /// With workloads on, start without a kind cluster's system Pods (the control plane's
    /// mirror Pods, CoreDNS, kube-proxy, kindnet, local-path-provisioner) and their
    /// Deployments, DaemonSets, Service and ServiceAccounts.
    #[arg(long)]
    no_system_pods: bool,
    #[command(flatten)]
    workloads: super::WorkloadFlags,
}

fn webhook_service(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((svc, addr)) if svc.contains('/') && addr.contains(':') => Ok((svc.to_owned(), addr.to_owned())),
        _ => {
            Err(format!("{s:?}: expected NAMESPACE/NAME=HOST:PORT, e.g. my-system/my-webhook=127.0.0.1:9443"))
        }
    }
}

/// Write `text` to `path` through a file next to it, then rename.
fn write_atomically(path: &std::path::Path, text: &str) -> std::io::Result<()> {
    let tmp = path.with_extension("kubesim-tmp");
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, path)
}

/// Serve until Ctrl-C or SIGTERM.
pub async fn run(args: SimArgs) -> anyhow::Result<()> {
    let config = Config {
        addr: args.addr,
        authz: args.authz,
        admin_token: None,
        watch_history: args.watch_history,
        watch_history_bytes: args.watch_history_bytes,
        bookmark_interval: Duration::from_secs(args.bookmark_seconds.max(1)),
        tls: !args.plain_http,
        workloads: args.workloads.config(),
        system_pods: !args.no_system_pods,
        overlay: false,
    };
    let sim = KubeSim::start(config).await.context("kubesim could not start")?;
    if !args.webhook_service.is_empty() {
        sim.set_webhook_services(args.webhook_service.into_iter().collect());
    }
    let written = if args.kubeconfig_client_cert {
        let yaml = sim
            .kubeconfig_with_client_cert()
            .context("client certificates need TLS")?
            .context("cannot issue the admin client certificate")?;
        write_atomically(&args.kubeconfig, &yaml)
    } else {
        sim.write_kubeconfig(&args.kubeconfig)
    };
    written.with_context(|| {
        format!(
            "cannot write the kubeconfig to {}; pass --kubeconfig with a writable path",
            args.kubeconfig.display()
        )
    })?;
    tracing::info!(
        url = %sim.url(),
        kubeconfig = %args.kubeconfig.display(),
        "kubesim is ready: try `kubectl --kubeconfig {} get namespaces`",
        args.kubeconfig.display()
    );
    super::shutdown_signal().await;
    tracing::info!("stopping kubesim");
    sim.shutdown();
    Ok(())
}

//! `ctop webhook serve`: the script's `validate`/`mutate` handlers as an HTTPS admission
//! webhook, and its conversions between the versions of its resources as the CRDs'
//! conversion webhook (`/convert`). Also the glue `ctop run --webhook-port` and `ctop dev`
//! share: the [`ScriptAdmission`] and [`ScriptConversion`] adapters from
//! `ctop_runtime::Script` to `ctop_webhook`'s traits, the TLS and limit flags
//! ([`WebhookFlags`]) and [`start`]. `ctop dev`'s own server is
//! `ctop_webhook::dev::DevWebhook`.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context as _;
use ctop_core::AdmissionOutcome;
use ctop_runtime::{Script, ScriptHandlers};
use ctop_runtime::{script_env, values_from_yaml};
use ctop_webhook::{
    Admission, AdmissionCall, AdmissionScript, Bound, ConversionScript, FailurePolicy, HookError, SelfIssued,
    ServerConfig, TlsSource,
};
use serde_json::Value;

/// Arguments of `ctop webhook`.
#[derive(Debug, clap::Args)]
pub struct WebhookArgs {
    #[command(subcommand)]
    command: WebhookCommand,
}

#[derive(Debug, clap::Subcommand)]
enum WebhookCommand {
    /// Serve the script's validate/mutate handlers as an HTTPS admission webhook.
    Serve(ServeArgs),
}

/// Arguments of `ctop webhook serve`.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// The operator directory.
    #[arg(default_value = ".")]
    dir: PathBuf,
    /// The entry script, relative to DIR.
    #[arg(long, default_value = "operator.ct")]
    entry: String,
    /// Serve this bundle.js.gz (from `ctop bundle`) instead of DIR's sources.
    #[arg(long)]
    bundle: Option<PathBuf>,
    /// The values file [default: DIR/values.yaml when it exists, else empty values].
    #[arg(long)]
    values: Option<PathBuf>,
    /// The HTTPS port (0 picks a free one; the address is logged).
    #[arg(long, default_value_t = 9443)]
    port: u16,
    /// The address to listen on.
    #[arg(long, default_value_t = IpAddr::V4(Ipv4Addr::UNSPECIFIED))]
    address: IpAddr,
    /// Script runtimes (handler calls running at once).
    #[arg(long, default_value_t = 4)]
    concurrency: u16,
    #[command(flatten)]
    flags: WebhookFlags,
    #[command(flatten)]
    script_limits: super::ScriptFlags,
}

/// TLS, limits and failure policy of the webhook server (shared by `webhook serve` and `run`).
#[derive(Debug, Clone, clap::Args)]
pub struct WebhookFlags {
    /// The serving certificate chain (PEM), e.g. a cert-manager Secret's tls.crt; reloaded
    /// when it changes. Without it a CA and certificate are issued at startup.
    #[arg(long, requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The certificate's private key (PEM), e.g. tls.key.
    #[arg(long, requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// How often the certificate files are checked for changes.
    #[arg(long, default_value = "10s")]
    pub tls_reload: ctop_core::Duration,
    /// Extra host names or IPs of the self-issued certificate (localhost and 127.0.0.1 are
    /// always in it), e.g. my-op-webhook.my-op-system.svc.
    #[arg(long = "tls-host", value_delimiter = ',')]
    pub tls_hosts: Vec<String>,
    /// Write the self-issued CA (the caBundle to trust) to this file.
    #[arg(long)]
    pub ca_bundle_out: Option<PathBuf>,
    /// Keep the self-issued certificate in this Secret (in $POD_NAMESPACE, else the
    /// kubeconfig context's namespace), so that every replica serves the same one: the first
    /// issues it, the others read it. Needs get, create and update on it; `ctop manifests`
    /// passes this flag and grants those.
    #[arg(long, conflicts_with = "tls_cert")]
    pub tls_secret: Option<String>,
    /// What a handler that throws or is late answers: Fail (deny) or Ignore (allow with a
    /// warning).
    #[arg(long, default_value = "Fail")]
    pub failure_policy: FailurePolicy,
    /// Longest one admission request may wait for a free runtime plus run its handler.
    #[arg(long, default_value = "10s")]
    pub webhook_timeout: ctop_core::Duration,
    /// Longest one validate/mutate handler may run: the script is stopped there (and its
    /// runtime replaced), so that looping handlers delay valid reviews queued behind them by
    /// at most this much [default: 2s, or half of --webhook-timeout when that is shorter].
    #[arg(long)]
    pub webhook_handler_timeout: Option<ctop_core::Duration>,
    /// Largest AdmissionReview body in bytes.
    #[arg(long, default_value_t = 3 * 1024 * 1024)]
    pub webhook_max_body: usize,
}

impl WebhookFlags {
    /// Refuses a handler deadline that the request deadline would cut short.
    pub fn check(&self) -> anyhow::Result<()> {
        if let Some(handler) = self.webhook_handler_timeout
            && handler >= self.webhook_timeout
        {
            anyhow::bail!(
                "--webhook-handler-timeout ({handler}) must be shorter than --webhook-timeout ({}); lower the \
                 first or raise the second",
                self.webhook_timeout
            );
        }
        Ok(())
    }

    /// The deadline of one admission handler call: the flag, else 2 s or half the request
    /// deadline when that is shorter.
    pub fn handler_timeout(&self) -> std::time::Duration {
        self.webhook_handler_timeout
            .map(Into::into)
            .unwrap_or_else(|| std::time::Duration::from_secs(2).min(self.webhook_timeout.as_std() / 2))
    }

    fn server_config(&self, concurrency: usize) -> ServerConfig {
        ServerConfig {
            max_body: self.webhook_max_body,
            concurrency,
            timeout: self.webhook_timeout.into(),
            failure_policy: self.failure_policy,
        }
    }

    /// The TLS source: the files, the certificate shared through `--tls-secret`, or a freshly
    /// issued one (returned too, for its CA).
    async fn tls(
        &self,
        kubeconfig: Option<&std::path::Path>,
    ) -> anyhow::Result<(TlsSource, Option<SelfIssued>)> {
        if let (Some(cert), Some(key)) = (&self.tls_cert, &self.tls_key) {
            let source = TlsSource::Files {
                cert: cert.clone(),
                key: key.clone(),
                reload_every: self.tls_reload.into(),
            };
            return Ok((source, None));
        }
        let mut hosts = vec!["localhost".to_owned(), "127.0.0.1".to_owned()];
        hosts.extend(self.tls_hosts.iter().filter(|h| !h.is_empty()).cloned());
        let issued = match &self.tls_secret {
            Some(name) => {
                let client = kube_client(kubeconfig).await?;
                let namespace = std::env::var("POD_NAMESPACE")
                    .ok()
                    .filter(|n| !n.is_empty())
                    .unwrap_or_else(|| client.default_namespace().to_owned());
                ctop_webhook::shared::shared_self_issued(&client, &namespace, name, &hosts).await?
            }
            None => {
                let issued = SelfIssued::issue(&hosts).context("cannot issue the webhook certificate")?;
                tracing::info!(
                    hosts = hosts.join(","),
                    "issued a CA and serving certificate for the webhook"
                );
                issued
            }
        };
        if let Some(path) = &self.ca_bundle_out {
            std::fs::write(path, &issued.ca_pem)
                .with_context(|| format!("cannot write the CA to {}", path.display()))?;
        }
        Ok((TlsSource::SelfIssued(issued.clone()), Some(issued)))
    }
}

/// The script's handlers behind `ctop_webhook`'s trait ([`ScriptHandlers::admit`]: the
/// input the SDK expects, the output read as an [`AdmissionOutcome`]; one it cannot read
/// fails the call, answered per the failure policy).
pub struct ScriptAdmission(ScriptHandlers);

impl ScriptAdmission {
    /// Call `script`'s handlers with these `env` and `values`.
    pub fn new(script: Arc<Script>, env: Value, values: Value) -> Self {
        Self(ScriptHandlers::new(script, &env, &values))
    }
}

impl AdmissionScript for ScriptAdmission {
    fn call(&self, call: &AdmissionCall<'_>) -> Result<AdmissionOutcome, HookError> {
        let h = call.handler.as_str();
        self.0
            .admit(h, call.controller, call.object, call.old_object, call.request)
            .map_err(HookError::Failed)
    }
}

/// The script's conversions behind `ctop_webhook`'s trait ([`ScriptHandlers::convert`]: the
/// script's error, when it fails, is the message the API server shows).
pub struct ScriptConversion(ScriptHandlers);

impl ScriptConversion {
    /// Convert with `script`, its handlers seeing these `env` and `values`.
    pub fn new(script: Arc<Script>, env: Value, values: Value) -> Self {
        Self(ScriptHandlers::new(script, &env, &values))
    }
}

impl ConversionScript for ScriptConversion {
    fn convert(&self, desired_api_version: &str, objects: &[Value]) -> Result<Vec<Value>, HookError> {
        self.0.convert(desired_api_version, objects).map_err(HookError::Failed)
    }
}

/// A bound webhook server and, when self-issued, its certificate.
pub struct Started {
    /// The server, ready to run.
    pub bound: Bound,
    /// The self-issued CA and certificate, when no files were given.
    pub issued: Option<SelfIssued>,
}

/// Bind the webhook server for `script` on `addr`.
pub async fn start(
    script: Arc<Script>,
    env: Value,
    values: Value,
    addr: SocketAddr,
    flags: &WebhookFlags,
    concurrency: usize,
    kubeconfig: Option<&std::path::Path>,
) -> anyhow::Result<Started> {
    let routes = ctop_webhook::routes(script.spec());
    for r in &routes {
        tracing::info!(path = r.path, controller = r.controller_name, "admission route");
    }
    let admission = Admission::new(
        Arc::new(ScriptAdmission::new(script.clone(), env.clone(), values.clone())),
        &routes,
        flags.server_config(concurrency),
    );
    for crd in ctop_webhook::converting_crds(script.spec()) {
        tracing::info!(path = ctop_webhook::CONVERSION_PATH, crd, "conversion route");
    }
    admission.set_conversion(Arc::new(ScriptConversion::new(script.clone(), env, values)), script.spec());
    let (tls, issued) = flags.tls(kubeconfig).await?;
    let bound = ctop_webhook::bind(addr, &tls, admission.router()).await?;
    Ok(Started { bound, issued })
}

/// Run `ctop webhook …`.
pub async fn run(args: WebhookArgs) -> anyhow::Result<()> {
    match args.command {
        WebhookCommand::Serve(args) => serve(args).await,
    }
}

/// `webhook serve` and `run --webhook-port` were asked for a server with nothing to serve.
/// (`ctop dev` starts one anyway, for a later save to fill, and does not warn.)
fn warn_without_handlers(script: &Script) {
    if ctop_webhook::routes(script.spec()).is_empty() && !ctop_webhook::converts(script.spec()) {
        tracing::warn!(
            "the script declares no validate or mutate handler and no resource with several versions: the \
             webhook server answers only /healthz"
        );
    }
}

async fn serve(args: ServeArgs) -> anyhow::Result<()> {
    let workers = usize::from(args.concurrency.max(1));
    args.flags.check()?;
    let limits = args.script_limits.limits(args.flags.handler_timeout());
    let script = match &args.bundle {
        Some(path) => {
            let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
            Script::from_bundle_gz(&bytes, workers, limits)
        }
        None => Script::from_dir(&args.dir, &args.entry, workers, limits),
    }
    .context(
        "the script could not be loaded (fix the error that follows and run ctop webhook serve again)",
    )?;
    script.configure_egress(&args.script_limits.egress, &[args.port]);
    warn_without_handlers(&script);
    let values = values_from_yaml(&super::values_text(&args.dir, args.values.as_deref())?)
        .context("the values file is not a YAML mapping")?;
    let started = start(
        Arc::new(script),
        script_env(),
        values,
        SocketAddr::new(args.address, args.port),
        &args.flags,
        workers,
        None,
    )
    .await?;
    let addr = started.bound.local_addr()?;
    tracing::info!(%addr, "webhook server ready");
    started.bound.run(super::shutdown_signal()).await?;
    Ok(())
}

/// `ctop run --webhook-port`: serve the handlers and conversions of the running script next
/// to its controllers; with a self-issued certificate, keep the CA in the configurations
/// named `configuration` that the script's routes produce (the validating one for
/// `validate` handlers, the mutating one for `mutate` handlers) and in the CRDs of the
/// resources it converts (checked every 10 s, written only when it differs, a missing one
/// warned about once). Returns the serving task and, when self-issued, the CA (PEM).
pub async fn spawn_for_run(
    script: Arc<Script>,
    kubeconfig: Option<&std::path::Path>,
    values: &serde_json::Value,
    port: u16,
    flags: &WebhookFlags,
    configuration: Option<String>,
    concurrency: usize,
) -> anyhow::Result<(tokio::task::JoinHandle<()>, Option<String>)> {
    warn_without_handlers(&script);
    let spec = script.spec().clone();
    let started = start(
        script,
        script_env(),
        values.clone(),
        SocketAddr::from((Ipv4Addr::UNSPECIFIED, port)),
        flags,
        concurrency,
        kubeconfig,
    )
    .await?;
    // Without a configuration name there are no webhook configurations to keep, but the
    // converting CRDs still need the CA.
    let targets = match configuration {
        Some(name) => ctop_webhook::cabundle::Configurations::for_spec(&name, &spec),
        None => ctop_webhook::cabundle::Configurations {
            crds: ctop_webhook::converting_crds(&spec),
            ..Default::default()
        },
    };
    let targets = Some(targets).filter(|t| !t.is_empty());
    let patcher = match (&started.issued, targets) {
        (Some(issued), Some(targets)) => {
            let client = kube_client(kubeconfig).await?;
            let keeper = ctop_webhook::cabundle::CaBundleKeeper::new(client, targets, issued.ca_pem.clone());
            Some(tokio::spawn(keeper.run(std::time::Duration::from_secs(10))))
        }
        _ => None,
    };
    let ca_pem = started.issued.as_ref().map(|i| i.ca_pem.clone());
    let task = tokio::spawn(async move {
        if let Err(e) = started.bound.run(super::shutdown_signal()).await {
            tracing::error!(error = %e, "the webhook server stopped");
        }
        if let Some(p) = patcher {
            p.abort();
        }
    });
    Ok((task, ca_pem))
}

/// A client from `kubeconfig`, or the inferred configuration.
pub async fn kube_client(kubeconfig: Option<&std::path::Path>) -> anyhow::Result<kube::Client> {
    let config = match kubeconfig {
        Some(path) => {
            let kc = kube::config::Kubeconfig::read_from(path)
                .with_context(|| format!("cannot read the kubeconfig {}", path.display()))?;
            kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default()).await?
        }
        None => kube::Config::infer().await.context("cannot find a cluster configuration")?,
    };
    Ok(kube::Client::try_from(config)?)
}

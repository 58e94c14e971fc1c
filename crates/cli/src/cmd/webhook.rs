//! `ctop webhook serve`: the script's `validate`/`mutate` handlers as an HTTPS admission
//! webhook. Also the glue `ctop run --webhook-port` and `ctop dev` share: the
//! [`ScriptAdmission`] adapter from `ctop_runtime::Script` to `ctop_webhook::AdmissionScript`,
//! the TLS and limit flags ([`WebhookFlags`]) and [`start`].

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context as _;
use ctop_core::AdmissionOutcome;
use ctop_runtime::Script;
use ctop_runtime::{script_env, values_from_yaml};
use ctop_webhook::{
    Admission, AdmissionScript, Bound, FailurePolicy, HandlerCall, HandlerError, SelfIssued, ServerConfig,
    TlsSource,
};
use serde_json::{Value, json};

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

/// The script's handlers behind `ctop_webhook`'s trait: the input is what the SDK's
/// `__ct_dispatch` expects for `validate`/`mutate` (`object`, `oldObject`, `env`, `values`),
/// the output is read with [`AdmissionOutcome::from_output`] (one it cannot read fails the
/// call, answered per the failure policy).
pub struct ScriptAdmission {
    script: Arc<Script>,
    env: Value,
    values: Value,
}

impl ScriptAdmission {
    /// Call `script`'s handlers with these `env` and `values`.
    pub fn new(script: Arc<Script>, env: Value, values: Value) -> Self {
        Self { script, env, values }
    }
}

impl AdmissionScript for ScriptAdmission {
    fn call(&self, call: &HandlerCall<'_>) -> Result<AdmissionOutcome, HandlerError> {
        let input = json!({
            "object": call.object,
            "oldObject": call.old_object,
            "env": self.env,
            "values": self.values,
            "request": call.request,
        });
        let handler = call.handler.as_str();
        let output = self
            .script
            .dispatch(handler, call.controller, &input.to_string())
            .map_err(|e| HandlerError::Failed(e.to_string()))?;
        AdmissionOutcome::from_output(handler, output).map_err(|e| HandlerError::Failed(e.to_string()))
    }
}

/// A bound webhook server with its admission state and, when self-issued, its certificate.
pub struct Started {
    /// The server, ready to run.
    pub bound: Bound,
    /// Swap the script on reload (used by `ctop dev`).
    pub admission: Admission,
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
        Arc::new(ScriptAdmission::new(script, env, values)),
        &routes,
        flags.server_config(concurrency),
    );
    let (tls, issued) = flags.tls(kubeconfig).await?;
    let bound = ctop_webhook::bind(addr, &tls, admission.router()).await?;
    Ok(Started { bound, admission, issued })
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
    if ctop_webhook::routes(script.spec()).is_empty() {
        tracing::warn!(
            "the script declares no validate or mutate handler: the webhook server answers only /healthz"
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

/// `ctop run --webhook-port`: serve the handlers of the running script next to its
/// controllers; with a self-issued certificate, keep the CA in the configurations named
/// `configuration` that the script's routes produce (the validating one for `validate`
/// handlers, the mutating one for `mutate` handlers; checked every 10 s, written only when
/// it differs, a missing one warned about once). Returns the serving task.
pub async fn spawn_for_run(
    script: Arc<Script>,
    kubeconfig: Option<&std::path::Path>,
    values: &serde_json::Value,
    port: u16,
    flags: &WebhookFlags,
    configuration: Option<String>,
    concurrency: usize,
) -> anyhow::Result<tokio::task::JoinHandle<()>> {
    warn_without_handlers(&script);
    let routes = ctop_webhook::routes(script.spec());
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
    let targets = configuration
        .map(|name| ctop_webhook::cabundle::Configurations::for_routes(&name, &routes))
        .filter(|t| !t.is_empty());
    let patcher = match (&started.issued, targets) {
        (Some(issued), Some(targets)) => {
            let client = kube_client(kubeconfig).await?;
            let keeper = ctop_webhook::cabundle::CaBundleKeeper::new(client, targets, issued.ca_pem.clone());
            Some(tokio::spawn(keeper.run(std::time::Duration::from_secs(10))))
        }
        _ => None,
    };
    Ok(tokio::spawn(async move {
        if let Err(e) = started.bound.run(super::shutdown_signal()).await {
            tracing::error!(error = %e, "the webhook server stopped");
        }
        if let Some(p) = patcher {
            p.abort();
        }
    }))
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

/// The name of the webhook configurations `ctop dev` applies to its embedded cluster.
const DEV_CONFIGURATION: &str = "ctop-dev";

/// `ctop dev`'s webhook: served on loopback with a self-issued certificate, its
/// configurations applied to the embedded kubesim with the CA and a `https://127.0.0.1` URL,
/// so `kubectl` sees the handlers enforced with no setup. [`DevWebhook::reload`] swaps in a
/// changed script and re-applies the configurations.
pub struct DevWebhook {
    admission: Admission,
    base_url: String,
    ca_pem: String,
    env: Value,
    values: Value,
    task: tokio::task::JoinHandle<()>,
}

impl DevWebhook {
    /// `ctop dev`'s choice: on the embedded kubesim, start (even without handlers yet, so a
    /// later save can add them); on a real cluster (`--context`) the API server cannot reach
    /// a loopback server, so handlers are only reported.
    pub async fn for_dev(
        embedded: bool,
        client: &kube::Client,
        script: &Arc<Script>,
        values: &Value,
    ) -> anyhow::Result<Option<Self>> {
        if embedded {
            return Self::start(client, script.clone(), values.clone()).await.map(Some);
        }
        if !ctop_webhook::routes(script.spec()).is_empty() {
            tracing::warn!(
                "the script declares validate/mutate handlers; with --context they are not wired (deploy with \
                 `ctop manifests`, or serve them with `ctop webhook serve` and a configuration of your own)"
            );
        }
        Ok(None)
    }

    /// Start serving `script` and apply its configurations.
    pub async fn start(client: &kube::Client, script: Arc<Script>, values: Value) -> anyhow::Result<Self> {
        let flags = WebhookFlags {
            tls_cert: None,
            tls_key: None,
            tls_reload: ctop_core::Duration::from_secs(10),
            tls_hosts: Vec::new(),
            ca_bundle_out: None,
            tls_secret: None,
            failure_policy: FailurePolicy::Fail,
            webhook_timeout: ctop_core::Duration::from_secs(10),
            webhook_handler_timeout: None,
            webhook_max_body: 3 * 1024 * 1024,
        };
        let env = script_env();
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, 0));
        let started = start(script.clone(), env.clone(), values.clone(), addr, &flags, 2, None).await?;
        let ca_pem = started.issued.as_ref().map(|i| i.ca_pem.clone()).unwrap_or_default();
        let base_url = format!("https://127.0.0.1:{}", started.bound.local_addr()?.port());
        let bound = started.bound;
        let task = tokio::spawn(async move {
            if let Err(e) = bound.run(std::future::pending()).await {
                tracing::error!(error = %e, "the dev webhook server stopped");
            }
        });
        let hook = Self { admission: started.admission, base_url, ca_pem, env, values, task };
        hook.apply(client, &script).await?;
        Ok(hook)
    }

    /// Serve `script` from now on and re-apply the configurations for its routes.
    pub async fn reload(&self, client: &kube::Client, script: &Arc<Script>) -> anyhow::Result<()> {
        let routes = ctop_webhook::routes(script.spec());
        self.admission.replace(
            Arc::new(ScriptAdmission::new(script.clone(), self.env.clone(), self.values.clone())),
            &routes,
        );
        self.apply(client, script).await
    }

    async fn apply(&self, client: &kube::Client, script: &Script) -> anyhow::Result<()> {
        use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams};
        let routes = ctop_webhook::routes(script.spec());
        let options = ctop_webhook::ConfigurationOptions {
            name: DEV_CONFIGURATION.into(),
            endpoint: ctop_webhook::Endpoint::Url(self.base_url.clone()),
            ca_bundle: Some(self.ca_pem.clone()),
            failure_policy: FailurePolicy::Fail,
            timeout_seconds: 10,
            labels: serde_json::Map::new(),
            annotations: serde_json::Map::new(),
        };
        let docs = ctop_webhook::configurations(&routes, &options);
        for (kind, plural) in [
            ("ValidatingWebhookConfiguration", "validatingwebhookconfigurations"),
            ("MutatingWebhookConfiguration", "mutatingwebhookconfigurations"),
        ] {
            let gvk = kube::api::GroupVersionKind::gvk("admissionregistration.k8s.io", "v1", kind);
            let api: Api<DynamicObject> =
                Api::all_with(client.clone(), &kube::api::ApiResource::from_gvk_with_plural(&gvk, plural));
            match docs.iter().find(|d| d["kind"] == kind) {
                Some(doc) => {
                    api.patch(DEV_CONFIGURATION, &PatchParams::apply("ctop-dev").force(), &Patch::Apply(doc))
                        .await
                        .with_context(|| format!("cannot apply the {kind} of the dev webhook"))?;
                }
                None => {
                    if let Err(e) = api.delete(DEV_CONFIGURATION, &DeleteParams::default()).await
                        && !matches!(&e, kube::Error::Api(s) if s.code == 404)
                    {
                        return Err(e)
                            .with_context(|| format!("cannot delete the stale {kind} of the dev webhook"));
                    }
                }
            }
        }
        if !routes.is_empty() {
            tracing::info!(
                url = self.base_url,
                webhooks = routes.len(),
                "admission webhooks wired into kubesim"
            );
        }
        Ok(())
    }
}

impl Drop for DevWebhook {
    fn drop(&mut self) {
        self.task.abort();
    }
}

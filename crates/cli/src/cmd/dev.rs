//! `ctop dev`: kubesim in-process (unless `--context` names a cluster), the script's CRDs
//! and samples, the operator, a reload on every save and a live summary of each CR.

use std::io::Write as _;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use ctop_controller::dev::{DevOptions, DevSource, LoadError, Reload, apply_samples, run_dev};
use ctop_core::Handlers;
use ctop_kubesim::{Config, KubeSim, StartError};
use ctop_runtime::{Limits, Script, ScriptHandlers, SourceWatch, script_env, values_from_yaml};
use ctop_webhook::dev::DevWebhook;
use kube::Client;
use kube::config::{KubeConfigOptions, Kubeconfig};
use serde_json::Value;

use super::webhook::{ScriptAdmission, ScriptConversion};

/// The port kubesim tries first (a free one is picked when it is busy).
const DEFAULT_ADDR: (Ipv4Addr, u16) = (Ipv4Addr::LOCALHOST, 16443);
/// The field manager of the samples and CRDs.
const MANAGER: &str = "ctop-dev";
const WORKERS: usize = 2;

/// Arguments of `ctop dev`.
#[derive(Debug, clap::Args)]
pub struct DevArgs {
    /// The operator directory.
    #[arg(default_value = ".")]
    dir: PathBuf,
    /// The entry script, relative to DIR.
    #[arg(long, default_value = "operator.ct")]
    entry: String,
    /// Without --context: where to write the embedded kubesim's kubeconfig
    /// [default: ./.ctop/dev/kubeconfig in the current directory]. With --context: the
    /// kubeconfig to read [default: $KUBECONFIG or ~/.kube/config].
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// Use this context of the kubeconfig (a real cluster) instead of an embedded kubesim.
    #[arg(long)]
    context: Option<String>,
    /// The values file [default: DIR/values.yaml when it exists, else empty values].
    #[arg(long)]
    values: Option<PathBuf>,
    /// Do not apply DIR/samples/*.yaml.
    #[arg(long)]
    no_samples: bool,
    /// The loopback port of the operator's page (its objects, their children's health and
    /// reconciles, live); its URL is printed at start [default: a free port].
    #[arg(long, default_value_t = 0)]
    ui_port: u16,
    /// Run this many sharded members of the operator (as `ctop run --sharding` replicas
    /// would), each reconciling its share of the objects.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=16))]
    replicas: u16,
    #[command(flatten)]
    script_limits: super::ScriptFlags,
    #[command(flatten)]
    workloads: super::WorkloadFlags,
    #[command(flatten)]
    record: super::record::RecordFlags,
}

/// Run the dev loop until Ctrl-C or SIGTERM.
pub async fn run(args: DevArgs) -> anyhow::Result<()> {
    if let Some(op) = super::declarative::operator_at(&args.dir)? {
        return run_operator(args, op).await;
    }
    let (sim, kubeconfig) = cluster(&args).await?;
    let client = client(&kubeconfig).await?;
    let values = values_from_yaml(&super::values_text(&args.dir, args.values.as_deref())?)
        .context("the values file is not a YAML mapping")?;
    let script = Arc::new(
        load(&args.dir, &args.entry, &args.script_limits)
            .await
            .context("the script could not be loaded (fix the error that follows and run ctop dev again)")?,
    );
    let env = script_env();
    // The webhook first: a resource with several versions has its CRD point at it.
    let webhook = dev_webhook(sim.is_some(), &client, &script, &env, &values).await?;
    ctop_controller::install_crds(&client, &crds(&script, webhook.as_ref())?, MANAGER).await?;
    if !args.no_samples {
        apply_samples(&client, &args.dir.join("samples"), MANAGER).await;
    }
    let plurals: Vec<String> = script.spec().resources.iter().map(|r| r.plural.clone()).collect();
    tracing::info!(
        kubeconfig = %kubeconfig.display(),
        "watch along: kubectl --kubeconfig {} get {} -w",
        kubeconfig.display(),
        if plurals.is_empty() { "all".to_owned() } else { plurals.join(",") }
    );
    // The operator runs under its own name, as `ctop run` would name it.
    let name = super::operator_name(None, &args.dir, script.spec())?;
    let mut options = DevOptions::new(kubeconfig.clone(), &name);
    options.replicas = args.replicas;
    let page_task = serve_page(&mut options, args.ui_port).await?;
    let recorder = args.record.writer(&name, &env, &values)?;
    let source = ScriptSource {
        watch: SourceWatch::new(&args.dir),
        dir: args.dir,
        entry: args.entry,
        flags: args.script_limits,
        env,
        values,
        client,
        webhook,
        loaded: None,
        recorder: recorder.clone(),
    };
    let first = source.handlers(&script);
    let ran = run_dev(first, source, options, super::shutdown_signal()).await;
    page_task.abort();
    let closed = super::record::close(recorder);
    ran?;
    closed?;
    if let Some(sim) = sim {
        tracing::info!("stopping kubesim");
        sim.shutdown();
    }
    Ok(())
}

/// Serve the operator's page on `port` for every restart of the controllers (one
/// inspector: the page keeps its URL and shows the controllers running now).
async fn serve_page(options: &mut DevOptions, port: u16) -> anyhow::Result<tokio::task::JoinHandle<()>> {
    let inspector = ctop_ui::Inspector::default();
    options.run.inspector = Some(inspector.clone());
    let (page, page_task) = ctop_controller::health::serve_router(
        SocketAddr::from((Ipv4Addr::LOCALHOST, port)),
        ctop_ui::router(inspector),
    )
    .await
    .context("cannot serve the operator's page (choose another port with --ui-port)")?;
    print_page(page);
    remember_page(page);
    Ok(page_task)
}

/// `ctop dev op.yaml`: the Operator's CRDs (the Operator's and its views', so that
/// `kubectl get` reads the views), the Operator itself (its `onStart`), and a reload when
/// the file is saved. Scripts' samples, values, webhooks and recordings do not apply.
async fn run_operator(args: DevArgs, op: ctop_declarative::Operator) -> anyhow::Result<()> {
    if args.record.record.is_some() {
        anyhow::bail!("--record is for scripts; an Operator YAML takes none");
    }
    let (sim, kubeconfig) = cluster(&args).await?;
    let client = client(&kubeconfig).await?;
    let name = op.name.clone();
    let handlers: Arc<dyn Handlers> = super::declarative::handlers(op)?;
    ctop_controller::install_crds(&client, &ctop_manifests::operator_crds(handlers.spec())?, MANAGER).await?;
    let views: Vec<String> =
        handlers.spec().resources.iter().map(|r| format!("{}.{}", r.plural, r.group)).collect();
    tracing::info!(
        kubeconfig = %kubeconfig.display(),
        "watch along: kubectl --kubeconfig {} get {} -w",
        kubeconfig.display(),
        views.join(",")
    );
    let mut options = DevOptions::new(kubeconfig, &name);
    options.replicas = args.replicas;
    let page_task = serve_page(&mut options, args.ui_port).await?;
    let source = OperatorSource { modified: modified(&args.dir), path: args.dir, client, loaded: None };
    let ran = run_dev(handlers, source, options, super::shutdown_signal()).await;
    page_task.abort();
    ran?;
    if let Some(sim) = sim {
        tracing::info!("stopping kubesim");
        sim.shutdown();
    }
    Ok(())
}

/// An Operator YAML as the dev loop's source: loaded again when the file changes, and
/// applied once its handlers run (a reload that keeps the caches runs no `onStart`).
struct OperatorSource {
    path: PathBuf,
    modified: Option<std::time::SystemTime>,
    client: Client,
    /// The Operator of the last load, until it is activated.
    loaded: Option<ctop_declarative::Operator>,
}

fn modified(path: &Path) -> Option<std::time::SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

impl DevSource for OperatorSource {
    fn changed(&mut self) -> bool {
        let now = modified(&self.path);
        let changed = now != self.modified;
        self.modified = now;
        changed
    }

    async fn load(&mut self) -> Result<Reload, LoadError> {
        let op = super::declarative::operator_at(&self.path)?
            .ok_or_else(|| format!("{} no longer holds an Operator", self.path.display()))?;
        self.loaded = Some(op.clone());
        let handlers: Arc<dyn Handlers> = super::declarative::handlers(op)?;
        let crds = ctop_manifests::operator_crds(handlers.spec())?;
        Ok(Reload { handlers, crds })
    }

    async fn activated(&mut self, _: &Arc<dyn Handlers>) {
        let Some(op) = self.loaded.take() else { return };
        let gvk = kube::api::GroupVersionKind::gvk("dcontroller.io", "v1alpha1", "Operator");
        let ar = kube::api::ApiResource::from_gvk_with_plural(&gvk, "operators");
        let api: kube::Api<kube::api::DynamicObject> = kube::Api::all_with(self.client.clone(), &ar);
        // The manager of the Operator's own onStart apply: what the file dropped goes.
        let params = kube::api::PatchParams::apply(&op.name).force();
        if let Err(e) = api.patch(&op.name, &params, &kube::api::Patch::Apply(&op.object)).await {
            tracing::error!(error = %e, "cannot apply the changed Operator {}", op.name);
        }
    }
}

/// `page: URL` on stdout, where the summary lines follow: what a user opens, and what a
/// test reads.
fn print_page(addr: SocketAddr) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "page: http://{addr}/");
    let _ = out.flush();
}

/// Where `ctop dev` leaves its page's URL, for `ctop trace` run in the same directory.
pub const DEV_PAGE: &str = ".ctop/dev/page";

/// The page's URL in [`DEV_PAGE`]; a warning when it cannot be written (`ctop trace` then
/// needs --operator).
fn remember_page(addr: SocketAddr) {
    let path = Path::new(DEV_PAGE);
    let written = path
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| std::fs::write(path, format!("http://{addr}\n")));
    if let Err(e) = written {
        tracing::warn!(error = %e, "cannot write {DEV_PAGE}: ctop trace needs --operator http://{addr}");
    }
}

/// The operator directory as the dev loop's source: a save anywhere in it loads the script
/// again (with its CRDs), and once the new handlers run, the webhook serves them too.
struct ScriptSource {
    dir: PathBuf,
    entry: String,
    flags: super::ScriptFlags,
    watch: SourceWatch,
    env: Value,
    values: Value,
    client: Client,
    webhook: Option<DevWebhook>,
    /// The script of the last load, until it is activated.
    loaded: Option<Arc<Script>>,
    /// Where `--record` writes every script's calls (each reload's under its bundle's sha).
    recorder: Option<ctop_recording::RecordWriter>,
}

impl ScriptSource {
    fn handlers(&self, script: &Arc<Script>) -> Arc<dyn Handlers> {
        let handlers = Arc::new(ScriptHandlers::new(script.clone(), &self.env, &self.values));
        super::record::wrap(handlers, script, self.recorder.as_ref())
    }
}

impl DevSource for ScriptSource {
    fn changed(&mut self) -> bool {
        self.watch.changed()
    }

    async fn load(&mut self) -> Result<Reload, LoadError> {
        let script = Arc::new(load(&self.dir, &self.entry, &self.flags).await?);
        let crds = crds(&script, self.webhook.as_ref())?;
        self.loaded = Some(script.clone());
        Ok(Reload { handlers: self.handlers(&script), crds })
    }

    fn code_frame(&self, error: &(dyn std::error::Error + 'static)) -> Option<ctop_core::CodeFrame> {
        ctop_runtime::frame_in(error, Some(&self.dir))
    }

    async fn activated(&mut self, _: &Arc<dyn Handlers>) {
        let (Some(hook), Some(script)) = (&self.webhook, self.loaded.take()) else { return };
        let admission = Arc::new(ScriptAdmission::new(script.clone(), self.env.clone(), self.values.clone()));
        if let Err(e) = hook.reload(&self.client, admission, script.spec()).await {
            tracing::error!("{}; the webhooks keep their previous configuration", ctop_core::Chain(&e));
        }
        let conversion =
            Arc::new(ScriptConversion::new(script.clone(), self.env.clone(), self.values.clone()));
        hook.set_conversion(conversion, script.spec());
    }
}

/// `ctop dev`'s webhook: on the embedded kubesim, started (even without handlers yet, so a
/// later save can add them); on a real cluster (`--context`) the API server cannot reach a
/// loopback server, so handlers are only reported.
async fn dev_webhook(
    embedded: bool,
    client: &Client,
    script: &Arc<Script>,
    env: &Value,
    values: &Value,
) -> anyhow::Result<Option<DevWebhook>> {
    if embedded {
        let admission = Arc::new(ScriptAdmission::new(script.clone(), env.clone(), values.clone()));
        let hook = DevWebhook::start(client, admission, script.spec()).await?;
        let conversion = Arc::new(ScriptConversion::new(script.clone(), env.clone(), values.clone()));
        hook.set_conversion(conversion, script.spec());
        return Ok(Some(hook));
    }
    if ctop_webhook::converts(script.spec()) {
        anyhow::bail!(
            "the script's {} have several versions, and with --context the cluster cannot call this machine's \
             conversion webhook; develop them on the embedded cluster (ctop dev without --context), or deploy \
             with ctop manifests",
            ctop_webhook::converting_crds(script.spec()).join(", ")
        );
    }
    if !ctop_webhook::routes(script.spec()).is_empty() {
        tracing::warn!(
            "the script declares validate/mutate handlers; with --context they are not wired (deploy with \
             `ctop manifests`, or serve them with `ctop webhook serve` and a configuration of your own)"
        );
    }
    Ok(None)
}

/// The cluster `ctop dev` works on: the kubeconfig's `--context`, else an embedded kubesim
/// (returned, to stop at the end).
async fn cluster(args: &DevArgs) -> anyhow::Result<(Option<KubeSim>, PathBuf)> {
    Ok(match &args.context {
        Some(ctx) => (None, context_kubeconfig(args.kubeconfig.as_deref(), ctx)?),
        None => {
            let (sim, path) = start_sim(args.kubeconfig.clone(), args.workloads.config()).await?;
            (Some(sim), path)
        }
    })
}

async fn start_sim(
    kubeconfig: Option<PathBuf>,
    workloads: Option<ctop_kubesim::WorkloadConfig>,
) -> anyhow::Result<(KubeSim, PathBuf)> {
    let config = |addr| Config {
        addr,
        authz: false,
        admin_token: None,
        bookmark_interval: Duration::from_secs(10),
        tls: true,
        workloads: workloads.clone(),
        ..Config::default()
    };
    let sim = match KubeSim::start(config(SocketAddr::from(DEFAULT_ADDR))).await {
        Ok(sim) => sim,
        Err(StartError::Bind { .. }) => {
            tracing::info!("port {} is busy: kubesim picks a free one", DEFAULT_ADDR.1);
            KubeSim::start(config(SocketAddr::from((Ipv4Addr::LOCALHOST, 0))))
                .await
                .context("kubesim could not start")?
        }
        Err(e) => return Err(e).context("kubesim could not start"),
    };
    let path = match kubeconfig {
        Some(p) => p,
        None => {
            let p = std::env::current_dir()
                .context("cannot read the current directory")?
                .join(".ctop/dev/kubeconfig");
            tracing::info!("writing the kubeconfig to {} (pass --kubeconfig to choose)", p.display());
            p
        }
    };
    sim.write_kubeconfig(&path).with_context(|| {
        format!("cannot write the kubeconfig to {}; pass --kubeconfig with a writable path", path.display())
    })?;
    tracing::info!(url = %sim.url(), kubeconfig = %path.display(), "kubesim is ready");
    Ok((sim, path))
}

/// A copy of the kubeconfig with `ctx` as its current context (the controller reads the
/// current context), written under `./.ctop/dev/`.
fn context_kubeconfig(path: Option<&Path>, ctx: &str) -> anyhow::Result<PathBuf> {
    let source = match path {
        Some(p) => p.to_owned(),
        None => match std::env::var_os("KUBECONFIG").filter(|v| !v.is_empty()) {
            Some(v) => std::env::split_paths(&v).next().unwrap_or_default(),
            None => PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".kube/config"),
        },
    };
    let text = std::fs::read_to_string(&source)
        .with_context(|| format!("cannot read the kubeconfig {}", source.display()))?;
    let mut kc: Value = ctop_core::yaml::from_str(&text)
        .with_context(|| format!("the kubeconfig {} is not valid YAML", source.display()))?;
    let known = kc["contexts"].as_array().is_some_and(|cs| cs.iter().any(|c| c["name"] == ctx));
    anyhow::ensure!(known, "the kubeconfig {} has no context {ctx}", source.display());
    kc["current-context"] = Value::from(ctx);
    let out = std::env::current_dir()?.join(".ctop/dev").join(format!("{ctx}.kubeconfig"));
    std::fs::create_dir_all(out.parent().unwrap_or(Path::new(".")))?;
    std::fs::write(&out, serde_json::to_string(&kc)?)
        .with_context(|| format!("cannot write {}", out.display()))?;
    Ok(out)
}

async fn client(kubeconfig: &Path) -> anyhow::Result<Client> {
    let kc = Kubeconfig::read_from(kubeconfig)
        .with_context(|| format!("cannot read the kubeconfig {}", kubeconfig.display()))?;
    let config = kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default()).await?;
    Ok(Client::try_from(config)?)
}

async fn load(dir: &Path, entry: &str, flags: &super::ScriptFlags) -> anyhow::Result<Script> {
    let (dir, entry) = (dir.to_owned(), entry.to_owned());
    let limits = flags.limits(Limits::default().timeout);
    let script = tokio::task::spawn_blocking(move || Script::from_dir(&dir, &entry, WORKERS, limits))
        .await
        .context("the script loader crashed")??;
    script.configure_egress(&flags.egress, &[]);
    Ok(script)
}

/// The CRDs of `script`'s resources and the ControllerStatus CRD; a resource with several
/// versions converts through `webhook` (there is one whenever kubesim is embedded).
fn crds(script: &Script, webhook: Option<&DevWebhook>) -> Result<Vec<Value>, ctop_manifests::Error> {
    match webhook {
        Some(hook) => ctop_manifests::operator_crds_with(script.spec(), &hook.conversion().into()),
        None => ctop_manifests::operator_crds(script.spec()),
    }
}

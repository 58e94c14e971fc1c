//! `ctop dev`: kubesim in-process (unless `--context` names a cluster), the script's CRDs
//! and samples, the operator, a reload on every save and a live summary of each CR.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use anyhow::Context as _;
use ctop_controller::{LeaseTiming, RetryLimit, RunOptions, hot_swappable};
use ctop_core::Handlers;
use ctop_core::KindRef;
use ctop_kubesim::{Config, KubeSim, StartError};
use ctop_runtime::{Limits, Script};
use ctop_runtime::{ScriptHandlers, script_env, values_from_yaml};
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::discovery::Scope;
use kube::{Client, ResourceExt as _};
use serde_json::Value;

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
    #[command(flatten)]
    script_limits: super::ScriptFlags,
}

/// Run the dev loop until Ctrl-C or SIGTERM.
pub async fn run(args: DevArgs) -> anyhow::Result<()> {
    let (sim, kubeconfig) = match &args.context {
        Some(ctx) => (None, context_kubeconfig(args.kubeconfig.as_deref(), ctx)?),
        None => {
            let (sim, path) = start_sim(args.kubeconfig.clone()).await?;
            (Some(sim), path)
        }
    };
    let client = client(&kubeconfig).await?;
    let values = values_from_yaml(&super::values_text(&args.dir, args.values.as_deref())?)
        .context("the values file is not a YAML mapping")?;
    let mut script = Arc::new(
        load(&args.dir, &args.entry, &args.script_limits)
            .await
            .context("the script could not be loaded (fix the error that follows and run ctop dev again)")?,
    );
    install_crds(&client, &script).await?;
    let webhook = super::webhook::DevWebhook::for_dev(sim.is_some(), &client, &script, &values).await?;
    if !args.no_samples {
        apply_samples(&client, &args.dir.join("samples")).await;
    }
    let plurals: Vec<String> = script.spec().resources.iter().map(|r| r.plural.clone()).collect();
    tracing::info!(
        kubeconfig = %kubeconfig.display(),
        "watch along: kubectl --kubeconfig {} get {} -w",
        kubeconfig.display(),
        if plurals.is_empty() { "all".to_owned() } else { plurals.join(",") }
    );
    let options = RunOptions {
        kubeconfig: Some(kubeconfig.clone()),
        context: None,
        namespace: None,
        concurrency: 2,
        health_addr: SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
        metrics_addr: SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
        leader_elect: false,
        lease_namespace: "default".into(),
        name: MANAGER.into(),
        identity: None,
        install_crds: Vec::new(),
        retry_limit: RetryLimit::default(),
    };
    let mut stamp = mtimes(&args.dir);
    let mut summary = BTreeMap::new();
    let shutdown = super::shutdown_signal();
    tokio::pin!(shutdown);
    let mut poll = tokio::time::interval(Duration::from_millis(500));
    // A new script that declares the same controllers replaces the old one in place (the
    // caches stay); one that watches something else restarts the controllers.
    let env = script_env();
    let handlers_of = |script: &Arc<Script>| -> Arc<dyn Handlers> {
        Arc::new(ScriptHandlers::new(script.clone(), &env, &values))
    };
    let (script_tx, scripts) = tokio::sync::watch::channel(handlers_of(&script));
    'reload: loop {
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let mut controllers = tokio::spawn(ctop_controller::run_reloadable(
            scripts.clone(),
            options.clone(),
            LeaseTiming::default(),
            async move {
                let _ = stop_rx.await;
            },
        ));
        let mut running = true;
        loop {
            tokio::select! {
                () = &mut shutdown => {
                    let _ = stop_tx.send(());
                    if running {
                        let _ = controllers.await;
                    }
                    break 'reload;
                }
                done = &mut controllers, if running => {
                    running = false;
                    match done {
                        Ok(Ok(())) => {}
                        Ok(Err(e)) => tracing::error!("the operator stopped: {e}; save a file to restart it"),
                        Err(e) => tracing::error!("the operator crashed: {e}; save a file to restart it"),
                    }
                }
                _ = poll.tick() => {
                    print_summary(&client, &script, &mut summary).await;
                    let now = mtimes(&args.dir);
                    if now == stamp {
                        continue;
                    }
                    stamp = now;
                    match load(&args.dir, &args.entry, &args.script_limits).await {
                        Ok(new) => {
                            let new = Arc::new(new);
                            if let Err(e) = install_crds(&client, &new).await {
                                tracing::error!("{e:#}; the previous script keeps running");
                                continue;
                            }
                            if let Some(hook) = &webhook
                                && let Err(e) = hook.reload(&client, &new).await
                            {
                                tracing::error!("{e:#}; the webhooks keep their previous configuration");
                            }
                            if running && hot_swappable(script.spec(), new.spec()) {
                                tracing::info!("script reloaded; caches kept, every object reconciles again");
                                script_tx.send_replace(handlers_of(&new));
                                script = new;
                                continue;
                            }
                            tracing::info!("script changed what it watches: restarting the controllers");
                            let _ = stop_tx.send(());
                            if running {
                                let _ = controllers.await;
                            }
                            script_tx.send_replace(handlers_of(&new));
                            script = new;
                            continue 'reload;
                        }
                        Err(e) => tracing::error!("{e:#}; the previous script keeps running"),
                    }
                }
            }
        }
    }
    if let Some(sim) = sim {
        tracing::info!("stopping kubesim");
        sim.shutdown();
    }
    Ok(())
}

async fn start_sim(kubeconfig: Option<PathBuf>) -> anyhow::Result<(KubeSim, PathBuf)> {
    let config = |addr| Config {
        addr,
        authz: false,
        admin_token: None,
        bookmark_interval: Duration::from_secs(10),
        tls: true,
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

/// Every file under `dir` (except `.ctop`, `node_modules` and dot-directories) with its
/// modification time.
/// Files whose change reloads the script: sources, JSON and values (not logs, a
/// kubeconfig or anything else written into the directory).
fn watched(path: &Path) -> bool {
    const EXTENSIONS: [&str; 10] = ["ct", "ts", "mts", "cts", "js", "mjs", "cjs", "json", "yaml", "yml"];
    path.extension().and_then(|e| e.to_str()).is_some_and(|e| EXTENSIONS.contains(&e))
}

fn mtimes(dir: &Path) -> BTreeMap<PathBuf, Option<SystemTime>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        for e in entries.flatten() {
            let path = e.path();
            let hidden = e.file_name().to_string_lossy().starts_with('.') || e.file_name() == "node_modules";
            match e.file_type() {
                Ok(t) if t.is_dir() && !hidden => stack.push(path),
                Ok(t) if t.is_file() && watched(&path) => {
                    let mtime = e.metadata().ok().and_then(|m| m.modified().ok());
                    out.insert(path, mtime);
                }
                _ => {}
            }
        }
    }
    out
}

/// Server-side apply the script's CRDs and wait until each is Established (30 s at most).
async fn install_crds(client: &Client, script: &Script) -> anyhow::Result<()> {
    let labels = serde_json::Map::new();
    let crds = script
        .spec()
        .resources
        .iter()
        .map(|r| ctop_manifests::crd(r, &labels))
        .chain([Ok(ctop_core::controller_status::crd())])
        .collect::<Result<Vec<_>, _>>()?;
    ctop_controller::install_crds(client, &crds, MANAGER).await?;
    Ok(())
}

async fn resolve(client: &Client, api_version: &str, kind: &str) -> anyhow::Result<(ApiResource, bool)> {
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let gvk = GroupVersionKind::gvk(group, version, kind);
    let (ar, caps) = kube::discovery::pinned_kind(client, &gvk)
        .await
        .with_context(|| format!("{api_version}/{kind} is not served"))?;
    Ok((ar, caps.scope == Scope::Namespaced))
}

/// Server-side apply every document of `dir/*.yaml` (and `.yml`); failures are logged.
async fn apply_samples(client: &Client, dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut files: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
        .collect();
    files.sort();
    for file in files {
        if let Err(e) = apply_file(client, &file).await {
            tracing::error!("sample {}: {e:#}", file.display());
        }
    }
}

async fn apply_file(client: &Client, file: &Path) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(file)?;
    let docs: Vec<Value> = ctop_core::yaml::documents(&text).context("not valid YAML")?;
    for obj in docs {
        if obj.is_null() {
            continue;
        }
        let (api_version, kind) =
            (obj["apiVersion"].as_str().unwrap_or(""), obj["kind"].as_str().unwrap_or(""));
        let name = obj["metadata"]["name"].as_str().context("an object without metadata.name")?;
        let (ar, namespaced) = resolve(client, api_version, kind).await?;
        let api: Api<DynamicObject> = if namespaced {
            let ns = obj["metadata"]["namespace"].as_str().unwrap_or("default");
            Api::namespaced_with(client.clone(), ns, &ar)
        } else {
            Api::all_with(client.clone(), &ar)
        };
        api.patch(name, &PatchParams::apply(MANAGER).force(), &Patch::Apply(&obj))
            .await
            .with_context(|| format!("cannot apply {kind} {name}"))?;
        tracing::info!("sample applied: {kind} {name}");
    }
    Ok(())
}

async fn list(client: &Client, k: &KindRef) -> Vec<DynamicObject> {
    let Ok((ar, _)) = resolve(client, &k.api_version, &k.kind).await else { return Vec::new() };
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &ar);
    api.list(&Default::default()).await.map(|l| l.items).unwrap_or_default()
}

/// Print one line per CR whenever it changed: `Kind ns/name: phase/ready, N children`.
async fn print_summary(client: &Client, script: &Script, last: &mut BTreeMap<String, String>) {
    let mut now = BTreeMap::new();
    for spec in &script.spec().controllers {
        let mut children = Vec::new();
        for k in &spec.manages {
            children.extend(list(client, k).await);
        }
        for cr in list(client, &spec.for_).await {
            let uid = cr.uid().unwrap_or_default();
            let count = children
                .iter()
                .filter(|c| c.owner_references().iter().any(|o| o.uid == uid && o.controller == Some(true)))
                .count();
            let status = &cr.data["status"];
            let text = |v: &Value| match v {
                Value::Null => "-".to_owned(),
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            let key = format!("{} {}/{}", spec.for_.kind, cr.namespace().unwrap_or_default(), cr.name_any());
            let line = format!("{}/{}, {count} children", text(&status["phase"]), text(&status["ready"]));
            now.insert(key, line);
        }
    }
    let mut out = std::io::stdout().lock();
    for (key, line) in &now {
        if last.get(key) != Some(line) {
            let _ = writeln!(out, "{key}: {line}");
        }
    }
    for key in last.keys() {
        if !now.contains_key(key) {
            let _ = writeln!(out, "{key}: deleted");
        }
    }
    let _ = out.flush();
    *last = now;
}

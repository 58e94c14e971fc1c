//! `ctop trace KIND/NAME`: why an object is (not) Ready, in a terminal.
//!
//! It reads the object from the cluster, the tree of its children and theirs with each
//! one's health ([`ctop_controller::inspect::tree::build`]) and its recent events; then it
//! asks the running operator (its health port, `--operator`) for the object's last
//! reconciles. With no operator in reach it still prints what the cluster shows, and says
//! why the reconciles are missing. [`print`] turns what was gathered into text.

mod operator;
mod print;

use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use kube::api::{Api, ApiResource, DynamicObject};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::discovery::{Discovery, Scope};
use kube::{Client, ResourceExt as _};
use serde_json::Value;

use ctop_controller::inspect::{self, EventSummary};

pub use print::Trace;

/// Arguments of `ctop trace`.
#[derive(Debug, clap::Args)]
pub struct TraceArgs {
    /// The object, as kubectl names it: KIND/NAME, where KIND is its kind, plural or
    /// `plural.group` (webapp/shop, webapps.demo.ctop.dev/shop).
    pub target: String,
    /// Its namespace [default: the context's, else `default`].
    #[arg(short, long)]
    pub namespace: Option<String>,
    /// The kubeconfig to read [default: $KUBECONFIG, else ./.ctop/dev/kubeconfig when
    /// `ctop dev` wrote one here, else ~/.kube/config].
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// Use this context of the kubeconfig.
    #[arg(long)]
    pub context: Option<String>,
    /// The running operator's health port or page, which serve its reconcile history (for
    /// a deployed operator: `kubectl port-forward deploy/NAME 8081` first) [default: the
    /// page of the `ctop dev` running in this directory, else http://127.0.0.1:8081].
    #[arg(long)]
    pub operator: Option<String>,
    /// Reconciles to print, newest last.
    #[arg(long, default_value_t = 5)]
    pub last: usize,
}

/// The kubeconfig `ctop dev` writes in the directory it runs in.
const DEV_KUBECONFIG: &str = ".ctop/dev/kubeconfig";

/// Run `ctop trace`.
pub async fn run(args: &TraceArgs) -> anyhow::Result<()> {
    let (kind, name) =
        args.target.split_once('/').filter(|(k, n)| !k.is_empty() && !n.is_empty()).with_context(|| {
            format!("{:?} is not KIND/NAME; name the object as kubectl does, e.g. webapp/shop", args.target)
        })?;
    let client = client(args).await?;
    let (resource, namespaced) = resolve(&client, kind).await?;
    let namespace = args.namespace.clone().unwrap_or_else(|| client.default_namespace().to_owned());
    let api: Api<DynamicObject> = if namespaced {
        Api::namespaced_with(client.clone(), &namespace, &resource)
    } else {
        Api::all_with(client.clone(), &resource)
    };
    let object = match api.get_opt(name).await {
        Ok(Some(o)) => serde_json::to_value(&o).context("cannot read the object as JSON")?,
        Ok(None) => {
            let place = if namespaced { format!(" in namespace {namespace:?}") } else { String::new() };
            anyhow::bail!(
                "{}.{} {name:?} not found{place}; kubectl get {} -A lists where they are",
                resource.plural,
                resource.group,
                resource.plural
            );
        }
        Err(e) => return Err(e).with_context(|| format!("cannot get {}/{name}", resource.plural)),
    };

    let (tree, refused) = inspect::tree::build(&client, &object).await;
    let mut problems: Vec<String> = refused.iter().map(inspect::tree::TreeError::explain).collect();
    let events: Vec<EventSummary> = inspect::events(&client, &object).await.unwrap_or_else(|e| {
        problems.push(format!("cannot list the events: {}", ctop_controller::api_error_text(&e)));
        Vec::new()
    });
    let base = args.operator.clone().unwrap_or_else(|| {
        std::fs::read_to_string(super::dev::DEV_PAGE)
            .ok()
            .map(|url| url.trim().to_owned())
            .filter(|url| !url.is_empty())
            .unwrap_or_else(|| "http://127.0.0.1:8081".into())
    });
    let history = operator::history(&base, &resource, &object).await;
    let trace = Trace { object, tree, events, history, problems, last: args.last, now: chrono::Utc::now() };
    let mut out = std::io::stdout().lock();
    out.write_all(trace.render().as_bytes()).and_then(|()| out.flush()).context("cannot write to stdout")
}

/// The client: `--kubeconfig`/`--context`, else `ctop dev`'s cluster when its kubeconfig is
/// here and $KUBECONFIG is unset, else kube's usual inference.
async fn client(args: &TraceArgs) -> anyhow::Result<Client> {
    let options = KubeConfigOptions { context: args.context.clone(), ..KubeConfigOptions::default() };
    let dev = Path::new(DEV_KUBECONFIG);
    let path = args.kubeconfig.clone().or_else(|| {
        let unset = std::env::var_os("KUBECONFIG").is_none_or(|v| v.is_empty());
        (unset && args.context.is_none() && dev.is_file()).then(|| {
            tracing::info!("using the cluster of ctop dev ({DEV_KUBECONFIG}); pass --kubeconfig for another");
            dev.to_path_buf()
        })
    });
    let config = match path {
        Some(path) => {
            let kc = Kubeconfig::read_from(&path)
                .with_context(|| format!("cannot read the kubeconfig {}", path.display()))?;
            kube::Config::from_custom_kubeconfig(kc, &options)
                .await
                .with_context(|| format!("the kubeconfig {} cannot be used", path.display()))?
        }
        None => kube::Config::from_kubeconfig(&options)
            .await
            .context("cannot load a kubeconfig; pass --kubeconfig, or set KUBECONFIG")?,
    };
    Client::try_from(config).context("cannot build a client from the kubeconfig")
}

/// The resource `kind` names (a kind, a plural or `plural.group`, any case), with its
/// scope, in its group's preferred version.
async fn resolve(client: &Client, kind: &str) -> anyhow::Result<(ApiResource, bool)> {
    let discovery =
        Discovery::new(client.clone()).run().await.context("cannot read the API server's discovery")?;
    let wanted = kind.to_ascii_lowercase();
    let (name, group) = match wanted.split_once('.') {
        Some((name, group)) => (name.to_owned(), Some(group.to_owned())),
        None => (wanted.clone(), None),
    };
    let found = discovery
        .groups()
        .filter(|g| group.as_deref().is_none_or(|want| g.name() == want))
        .flat_map(|g| g.recommended_resources())
        .find(|(ar, _)| {
            ar.plural == name || ar.kind.to_ascii_lowercase() == name || singular(&ar.plural) == name
        })
        .map(|(ar, caps)| (ar, caps.scope == Scope::Namespaced));
    if let Some(found) = found {
        return Ok(found);
    }
    // Short names (`wa`) are not in kube's discovery: read them from each group's list.
    for g in discovery.groups().filter(|g| group.as_deref().is_none_or(|want| g.name() == want)) {
        let gv = g.preferred_version_or_latest();
        let list = if g.name().is_empty() {
            client.list_core_api_resources(gv).await
        } else {
            client.list_api_group_resources(&format!("{}/{gv}", g.name())).await
        };
        let Ok(list) = list else { continue };
        let short = list.resources.iter().find(|r| {
            r.short_names.as_ref().is_some_and(|names| names.iter().any(|s| s.eq_ignore_ascii_case(&name)))
        });
        if let Some(r) = short
            && let Some(found) = g.recommended_resources().into_iter().find(|(ar, _)| ar.plural == r.name)
        {
            return Ok((found.0, found.1.scope == Scope::Namespaced));
        }
    }
    anyhow::bail!("the server doesn't have a resource type {kind:?}; kubectl api-resources lists them")
}

/// `plural` without its plural ending, the way most kinds are named (`webapps` → `webapp`).
fn singular(plural: &str) -> &str {
    plural
        .strip_suffix("es")
        .filter(|s| s.ends_with('s') || s.ends_with("sh"))
        .unwrap_or_else(|| plural.strip_suffix('s').unwrap_or(plural))
}

/// What a reconcile history lookup found: the history, or why there is none.
pub(crate) type History = Result<ctop_controller::inspect::api::HistoryAnswer, String>;

/// The object's namespace and name.
fn identity(object: &Value) -> (Option<String>, String) {
    match serde_json::from_value::<DynamicObject>(object.clone()) {
        Ok(o) => (o.namespace(), o.name_any()),
        Err(_) => (None, String::new()),
    }
}

#[cfg(test)]
mod tests {
    use super::singular;

    #[test]
    fn singular_of_plurals() {
        assert_eq!(singular("webapps"), "webapp");
        assert_eq!(singular("statuses"), "status");
        assert_eq!(singular("meshes"), "mesh");
        assert_eq!(singular("crontabs"), "crontab");
        assert_eq!(singular("endpoints"), "endpoint");
    }
}

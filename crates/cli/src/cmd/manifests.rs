//! `ctop manifests`: the documents that deploy an operator, as multi-document YAML.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use ctop_manifests::{Options, ScriptBundle, WatchScope};
use ctop_runtime::diagnostic::Framed;
use ctop_runtime::{Limits, Script};

/// Arguments of `ctop manifests`.
#[derive(Debug, clap::Args)]
pub struct ManifestsArgs {
    /// The operator directory.
    #[arg(default_value = ".")]
    dir: PathBuf,
    /// The entry script, relative to DIR.
    #[arg(long, default_value = "operator.ct")]
    entry: String,
    /// The operator image.
    #[arg(long, default_value = ctop_manifests::DEFAULT_IMAGE)]
    image: String,
    /// The operator's name (Deployment, ServiceAccount, RBAC objects) [default: DIR's name].
    #[arg(long)]
    name: Option<String>,
    /// The namespace the operator runs in [default: <name>-system].
    #[arg(long)]
    namespace: Option<String>,
    /// The values file [default: DIR/values.yaml when it exists, else empty values].
    #[arg(long)]
    values: Option<PathBuf>,
    /// Write to this file instead of standard output.
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// Pod replicas (the operator elects a leader among them).
    #[arg(long, default_value_t = 1)]
    replicas: u32,
    /// Spread the objects over the replicas instead of electing one to do all the work
    /// (`ctop run --sharding`; docs/sharding.md).
    #[arg(long)]
    sharding: bool,
    /// Watch only the operator's own namespace: RBAC becomes a Role there (plus a
    /// ClusterRole only for cluster-scoped kinds).
    #[arg(long)]
    namespace_scoped: bool,
    /// Watch only this namespace: RBAC becomes a Role there (plus a ClusterRole only for
    /// cluster-scoped kinds).
    #[arg(long, conflicts_with = "namespace_scoped")]
    watch_namespace: Option<String>,
    /// Add a PodDisruptionBudget for the operator's pods.
    #[arg(long)]
    pdb: bool,
    /// Add a NetworkPolicy admitting ingress only to the served ports (metrics, health,
    /// webhook) and egress only to DNS, the API server and the fetch destinations (the
    /// script's .egress(...) and --egress).
    #[arg(long)]
    network_policy: bool,
    /// A fetch destination allowed on top of the script's .egress(...), e.g. a URL from the
    /// values (a URL prefix like https://hooks.example.com/v1; repeat for more): passed to
    /// `ctop run --egress` and opened by --network-policy.
    #[arg(long = "egress", value_name = "URL")]
    egress: Vec<ctop_core::EgressRule>,
    /// Script runtimes for reconciles (`ctop run --concurrency`); sizes the memory limit.
    #[arg(
        long,
        value_name = "N",
        default_value_t = ctop_manifests::DEFAULT_CONCURRENCY,
        value_parser = clap::value_parser!(u16).range(1..),
    )]
    concurrency: u16,
    /// Script runtimes for admission calls, for scripts with validate/mutate handlers
    /// (`ctop run --webhook-concurrency`); sizes the memory limit.
    #[arg(
        long,
        value_name = "N",
        default_value_t = ctop_manifests::DEFAULT_WEBHOOK_CONCURRENCY,
        value_parser = clap::value_parser!(u16).range(1..),
    )]
    webhook_concurrency: u16,
    /// Memory of one script runtime (`ctop run --script-memory`); sizes the memory limit.
    #[arg(long, value_name = "SIZE", default_value_t = ctop_manifests::DEFAULT_SCRIPT_MEMORY)]
    script_memory: ctop_core::ByteSize,
    /// Memory the output of one call may take (`ctop run --max-output`); sizes the memory
    /// limit.
    #[arg(long, value_name = "SIZE", default_value_t = ctop_manifests::DEFAULT_MAX_OUTPUT)]
    max_output: ctop_core::ByteSize,
    /// The container's memory request [default: 64Mi + one runtime; see deploy/README.md].
    #[arg(long, value_name = "SIZE")]
    memory_request: Option<ctop_core::ByteSize>,
    /// The container's memory limit [default: 64Mi + every runtime × (script memory + max
    /// output + 8Mi); see deploy/README.md].
    #[arg(long, value_name = "SIZE")]
    memory_limit: Option<ctop_core::ByteSize>,
    /// `failurePolicy` of the admission webhooks of scripts with validate/mutate handlers:
    /// Fail (writes fail while the operator is unreachable) or Ignore.
    #[arg(long, default_value = "Fail")]
    webhook_failure_policy: ctop_webhook::FailurePolicy,
}

fn values_text(args: &ManifestsArgs) -> anyhow::Result<String> {
    let (path, required) = match &args.values {
        Some(p) => (p.clone(), true),
        None => (args.dir.join("values.yaml"), false),
    };
    match std::fs::read_to_string(&path) {
        Ok(text) => Ok(text),
        Err(e) if !required && e.kind() == std::io::ErrorKind::NotFound => Ok("{}\n".to_owned()),
        Err(e) => Err(e).with_context(|| format!("cannot read the values file {}", path.display())),
    }
}

fn write_output(path: Option<&Path>, yaml: &str) -> anyhow::Result<()> {
    match path {
        Some(p) => std::fs::write(p, yaml)
            .with_context(|| format!("cannot write {}; pass -o with a writable path", p.display())),
        None => {
            let mut out = std::io::stdout().lock();
            out.write_all(yaml.as_bytes())
                .and_then(|()| out.flush())
                .context("cannot write to standard output")
        }
    }
}

/// Load the script, generate the documents and print them.
pub fn run(args: &ManifestsArgs) -> anyhow::Result<()> {
    let bundle = ctop_runtime::load_dir(&args.dir, &args.entry)
        .map_err(|e| Framed::new(e, &args.dir))
        .with_context(|| {
            format!(
                "cannot load {} (fix the error that follows and run ctop manifests again)",
                args.dir.join(&args.entry).display()
            )
        })?;
    let script_bundle = ScriptBundle { gz: bundle.to_gz(), sha256: bundle.sha256_hex() };
    tracing::info!("bundle size: {}", bundle.size_report());
    let script = Script::from_bundle(bundle, 1, Limits::default())
        .context("the script failed while declaring its operators; fix it and run ctop manifests again")?;
    let spec = script.spec();

    let mut options = Options::new(super::operator_name(args.name.as_deref(), &args.dir, spec)?);
    options.namespace = args.namespace.clone();
    options.image = args.image.clone();
    options.replicas = args.replicas;
    options.sharding = args.sharding;
    options.values_yaml = values_text(args)?;
    options.webhook_failure_policy = args.webhook_failure_policy;
    options.egress = args.egress.clone();
    options.concurrency = args.concurrency;
    options.webhook_concurrency = args.webhook_concurrency;
    options.script_memory = args.script_memory;
    options.max_output = args.max_output;
    options.resources.memory_request = args.memory_request;
    options.resources.memory_limit = args.memory_limit;
    options.watch = match (&args.watch_namespace, args.namespace_scoped) {
        (Some(ns), _) => WatchScope::Namespace(ns.clone()),
        (None, true) => WatchScope::Namespace(options.namespace()),
        (None, false) => WatchScope::Cluster,
    };

    let mut plugins: Vec<&dyn ctop_manifests::Plugin> = Vec::new();
    if args.pdb {
        plugins.push(&ctop_manifests::PodDisruptionBudget);
    }
    if args.network_policy {
        plugins.push(&ctop_manifests::NetworkPolicy);
    }
    let manifests = ctop_manifests::generate(spec, &script_bundle, &options, &plugins)?;
    for note in &manifests.notes {
        tracing::warn!("{note}");
    }
    write_output(args.output.as_deref(), &manifests.to_yaml()?)?;
    tracing::info!(
        name = options.name,
        namespace = options.namespace(),
        documents = manifests.documents.len(),
        bundle_sha256 = script_bundle.sha256,
        "manifests written: apply them with `kubectl apply --server-side -f -`"
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory as _;

    /// The defaults `ctop manifests` sizes the memory with are those `ctop run` uses when the
    /// Deployment does not pass them.
    #[test]
    fn pool_and_limit_defaults_are_ctop_runs() {
        let cli = crate::Cli::command();
        let default = |sub: &str, flag: &str| -> String {
            let cmd = cli.find_subcommand(sub).unwrap_or_else(|| panic!("no {sub}"));
            let arg = cmd
                .get_arguments()
                .find(|a| a.get_long() == Some(flag))
                .unwrap_or_else(|| panic!("no {flag}"));
            arg.get_default_values().iter().map(|v| v.to_string_lossy().into_owned()).collect()
        };
        for flag in ["concurrency", "webhook-concurrency", "script-memory", "max-output"] {
            assert_eq!(default("manifests", flag), default("run", flag), "--{flag}");
        }
        let limits = ctop_runtime::Limits::default();
        assert_eq!(ctop_manifests::DEFAULT_SCRIPT_MEMORY.as_usize(), limits.memory);
        assert_eq!(ctop_manifests::DEFAULT_MAX_OUTPUT.as_usize(), limits.max_output);
    }
}

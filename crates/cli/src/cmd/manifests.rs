//! `ctop manifests`: the documents that deploy an operator, as multi-document YAML.
//!
//! Written over a previous generation (`-o FILE` that exists), it first checks that the
//! script still declares every version the previous CRDs list
//! ([`ctop_manifests::removed_versions`]): objects may be stored in them until the storage
//! migration has run, so dropping one is refused unless `--versions-migrated` confirms it.
//!
//! With `--argocd-health` it prints instead the `argocd-cm` patch with an Argo CD health
//! check of every kind the operators reconcile ([`ctop_manifests::argocd`]).

use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use ctop_manifests::{Options, RemovedVersion, ScriptBundle, WatchScope};
use ctop_runtime::Framed;
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
    /// Write to this file instead of standard output. When it holds a previous generation,
    /// a version of a resource it lists that the script no longer declares is refused
    /// (objects may still be stored in it; see --versions-migrated).
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
    /// Script runtimes for admission and conversion calls, for scripts with validate/mutate
    /// handlers or resources with several versions (`ctop run --webhook-concurrency`); sizes
    /// the memory limit.
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
    /// Migrate the stored objects of every resource with several versions to its storage
    /// version (`ctop run --migrate-storage`): the operator rewrites each object once, then
    /// removes the other versions from the CRD's status.storedVersions, so that a later
    /// script may drop them. Adds the RBAC that takes: get, list and update on those
    /// resources, and get, update and patch on their CRDs' status.
    #[arg(long)]
    migrate_storage: bool,
    /// Confirm that the versions the script no longer declares hold no objects any more
    /// (`kubectl get crd <name> -o jsonpath='{.status.storedVersions}'` no longer lists
    /// them), so that the CRDs may drop them.
    #[arg(long)]
    versions_migrated: bool,
    /// Print, instead of the deploy manifests, the argocd-cm patch with an Argo CD health
    /// check (Lua) for every kind the operators reconcile, so that Argo CD shows their health
    /// from the Reconciled and Ready conditions; merge it with `kubectl apply --server-side
    /// --field-manager=ctop-argocd-health -f -` or as a kustomize patch.
    #[arg(long)]
    argocd_health: bool,
    /// The namespace Argo CD runs in, for --argocd-health [default: argocd].
    #[arg(long, value_name = "NS", requires = "argocd_health")]
    argocd_namespace: Option<String>,
    /// Print the deployment of the operator's shadow instead: this script run by `ctop run
    /// --shadow` beside the deployed operator, under its name, with read-only RBAC (get,
    /// list and watch), reporting what it would write on its page (port 8082; reach it with
    /// kubectl port-forward). No CRDs, webhooks or Leases.
    #[arg(long, conflicts_with_all = ["argocd_health", "migrate_storage", "sharding", "pdb", "network_policy"])]
    shadow: bool,
    /// Print the deployment of `ctop run --operators` instead of DIR's: the Operator CRD
    /// (dcontroller.io/v1alpha1), a Deployment running the manager, and its RBAC: get, list,
    /// watch, update and patch on operators and operators/status, get, list, watch, create
    /// and patch on CRDs (the Operator CRD, each Operator's view CRDs), events and Leases.
    /// The kinds the Operators use are not known in advance: grant them with
    /// --operators-read and --operators-write; nothing else is granted [default name:
    /// ctop-operators].
    #[arg(long, conflicts_with_all = ["argocd_health", "migrate_storage", "sharding", "shadow", "pdb", "network_policy"])]
    operators: bool,
    /// With --operators: resources the Operators may read (get, list, watch), as
    /// GROUP/RESOURCE or RESOURCE for the core group, comma-separated or repeated: their
    /// sources, e.g. `pods,apps/deployments`. `*` stands for any group or resource (`*/*`:
    /// read everything, only when you mean it).
    #[arg(long, value_name = "RESOURCES", value_delimiter = ',', requires = "operators")]
    operators_read: Vec<String>,
    /// With --operators: resources the Operators may also write (create, update, patch,
    /// delete): their Updater and Patcher targets and their views, e.g.
    /// `configmaps,demo.view.dcontroller.io/*` (an Operator `demo`'s views).
    #[arg(long, value_name = "RESOURCES", value_delimiter = ',', requires = "operators")]
    operators_write: Vec<String>,
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

/// The documents of the previous generation at `path`: none when there is no such file.
pub(crate) fn previous_documents(path: &Path) -> anyhow::Result<Vec<serde_json::Value>> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => {
            return Err(e).with_context(|| {
                format!(
                    "cannot read {} to check that the new CRDs keep every stored version; make it readable, \
                     or pass -o with another file",
                    path.display()
                )
            });
        }
    };
    ctop_core::yaml::documents(&text).with_context(|| {
        format!(
            "{} is not YAML, so the versions its CRDs list cannot be checked before it is replaced; fix or \
             remove it, or pass -o with another file",
            path.display()
        )
    })
}

/// Why writing over `path` is refused: `removed` (not empty) may still hold objects.
pub(crate) fn removal_refused(removed: &[RemovedVersion], path: &Path) -> String {
    let versions: Vec<String> = removed.iter().map(ToString::to_string).collect();
    let mut crds: Vec<&str> = removed.iter().map(|r| r.crd.as_str()).collect();
    crds.dedup();
    let commands: Vec<String> = crds
        .iter()
        .map(|crd| format!("`kubectl get crd {crd} -o jsonpath='{{.status.storedVersions}}'`"))
        .collect();
    let (them, lists) = if removed.len() == 1 { ("it", "lists") } else { ("them", "list") };
    format!(
        "the script no longer declares {}, which the manifests in {} {lists}: objects may still be stored in \
         {them}, and the API server refuses a CRD that drops a version objects are stored in. Keep {them} \
         declared (with `served: false` if {them} should not be served) until the storage migration has run \
         (deploy with `ctop manifests --migrate-storage`; its progress is in the operator's /status) and {} \
         no longer {lists} {them}; then run ctop manifests again with --versions-migrated",
        versions.join(", "),
        path.display(),
        commands.join(" and ")
    )
}

/// Refuses to write over a previous generation at `path` whose CRDs list a version `spec`
/// no longer declares, unless `confirmed` (`--versions-migrated`); returns what is dropped.
fn check_stored_versions(
    path: &Path,
    spec: &ctop_core::OperatorSpec,
    confirmed: bool,
) -> anyhow::Result<Vec<RemovedVersion>> {
    let removed = ctop_manifests::removed_versions(&previous_documents(path)?, spec);
    if !removed.is_empty() && !confirmed {
        anyhow::bail!("{}", removal_refused(&removed, path));
    }
    Ok(removed)
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

/// `--argocd-health`: print the argocd-cm patch for the kinds of `spec`.
fn argocd_health(args: &ManifestsArgs, spec: &ctop_core::OperatorSpec) -> anyhow::Result<()> {
    let namespace = args.argocd_namespace.as_deref().unwrap_or(ctop_manifests::argocd::DEFAULT_NAMESPACE);
    let checks = ctop_manifests::argocd::health_checks(spec, namespace)?;
    for note in &checks.notes {
        tracing::warn!("{note}");
    }
    write_output(args.output.as_deref(), &checks.to_yaml()?)?;
    tracing::info!(
        namespace,
        kinds = checks.config_map["data"].as_object().map_or(0, serde_json::Map::len),
        "Argo CD health checks written: merge them into argocd-cm with \
         `kubectl apply --server-side --field-manager=ctop-argocd-health -f -`"
    );
    Ok(())
}

/// Load the script, generate the documents and print them.
pub fn run(args: &ManifestsArgs) -> anyhow::Result<()> {
    if args.operators {
        return operators(args);
    }
    // An Operator YAML is named by its metadata.name unless --name says otherwise.
    let (spec, script_bundle, name) = match super::declarative::operator_at(&args.dir)? {
        Some(op) => {
            let spec = ctop_declarative::operator::operator_spec(&op)?;
            (spec, super::declarative::bundle_of(&op)?, Some(op.name))
        }
        None => {
            let (spec, bundle) = script_spec(args)?;
            (spec, bundle, None)
        }
    };
    let spec = &spec;
    if args.argocd_health {
        return argocd_health(args, spec);
    }

    let mut options =
        Options::new(super::operator_name(args.name.as_deref().or(name.as_deref()), &args.dir, spec)?);
    options.namespace = args.namespace.clone();
    options.image = args.image.clone();
    options.replicas = args.replicas;
    options.sharding = args.sharding;
    // An Operator has no values.
    options.values_yaml = if name.is_some() { String::new() } else { values_text(args)? };
    options.webhook_failure_policy = args.webhook_failure_policy;
    options.egress = args.egress.clone();
    options.concurrency = args.concurrency;
    options.webhook_concurrency = args.webhook_concurrency;
    options.script_memory = args.script_memory;
    options.max_output = args.max_output;
    options.resources.memory_request = args.memory_request;
    options.resources.memory_limit = args.memory_limit;
    options.migrate_storage = args.migrate_storage;
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
    let manifests = if args.shadow {
        ctop_manifests::generate_shadow(spec, &script_bundle, &options)?
    } else {
        ctop_manifests::generate(spec, &script_bundle, &options, &plugins)?
    };
    for note in &manifests.notes {
        tracing::warn!("{note}");
    }
    if let Some(path) = &args.output {
        for dropped in check_stored_versions(path, spec, args.versions_migrated)? {
            tracing::warn!("the CRD drops {dropped}, confirmed migrated with --versions-migrated");
        }
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

/// `ctop manifests --operators`: the deployment of `ctop run --operators`.
fn operators(args: &ManifestsArgs) -> anyhow::Result<()> {
    let mut options = Options::new(args.name.clone().unwrap_or_else(|| "ctop-operators".into()));
    options.namespace = args.namespace.clone();
    options.image = args.image.clone();
    options.replicas = args.replicas;
    options.concurrency = args.concurrency;
    options.resources.memory_request = args.memory_request;
    options.resources.memory_limit = args.memory_limit;
    options.watch = match (&args.watch_namespace, args.namespace_scoped) {
        (Some(ns), _) => WatchScope::Namespace(ns.clone()),
        (None, true) => WatchScope::Namespace(options.namespace()),
        (None, false) => WatchScope::Cluster,
    };
    let rules = ctop_manifests::ManagerRules {
        read: args.operators_read.clone(),
        write: args.operators_write.clone(),
    };
    let crd = ctop_declarative::operator::operator_resource()?;
    let manifests = ctop_manifests::generate_operators(&crd, &rules, &options)?;
    for note in &manifests.notes {
        tracing::warn!("{note}");
    }
    write_output(args.output.as_deref(), &manifests.to_yaml()?)?;
    tracing::info!(
        name = options.name,
        namespace = options.namespace(),
        "manifests written: apply them with `kubectl apply --server-side -f -`"
    );
    Ok(())
}

/// The spec and bundle of the script in `args.dir`.
fn script_spec(args: &ManifestsArgs) -> anyhow::Result<(ctop_core::OperatorSpec, ScriptBundle)> {
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
    Ok((script.spec().clone(), script_bundle))
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory as _;
    use serde_json::json;

    use super::*;

    /// A CronTab operator declaring `versions` (the first the hub; stored in the last).
    fn spec(versions: &[&str]) -> ctop_core::OperatorSpec {
        let hub = versions[0];
        let declared: Vec<serde_json::Value> = versions
            .iter()
            .map(|v| json!({"name": v, "served": true, "storage": *v == versions[versions.len() - 1], "schema": {"type": "object"}}))
            .collect();
        let declared = if versions.len() > 1 { declared } else { vec![] };
        serde_json::from_value(json!({
            "resources": [{
                "apiVersion": format!("batch.example.com/{hub}"), "group": "batch.example.com", "version": hub,
                "kind": "CronTab", "plural": "crontabs", "singular": "crontab",
                "schema": {"type": "object"}, "versions": declared,
            }],
            "controllers": [{"index": 0, "name": "crontab", "for": {"apiVersion": format!("batch.example.com/{hub}"), "kind": "CronTab"}}],
        }))
        .expect("a spec")
    }

    /// `ctop manifests -o` of `spec` into a file in `dir`.
    fn previous(dir: &Path, spec: &ctop_core::OperatorSpec) -> PathBuf {
        let bundle = ScriptBundle { gz: vec![0x1f, 0x8b], sha256: "00".repeat(32) };
        let m = ctop_manifests::generate(spec, &bundle, &Options::new("op"), &[]).expect("manifests");
        let path = dir.join("op.yaml");
        std::fs::write(&path, m.to_yaml().expect("yaml")).expect("written");
        path
    }

    #[test]
    fn dropping_a_version_the_previous_generation_lists_is_refused_until_confirmed() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = previous(dir.path(), &spec(&["v2", "v1"]));
        // Still declared (and more): fine.
        assert_eq!(check_stored_versions(&path, &spec(&["v2", "v1"]), false).expect("kept"), []);
        assert_eq!(check_stored_versions(&path, &spec(&["v3", "v2", "v1"]), false).expect("added"), []);

        let err = check_stored_versions(&path, &spec(&["v2"]), false).expect_err("v1 dropped").to_string();
        assert_eq!(
            err,
            format!(
                "the script no longer declares version v1 of crontabs.batch.example.com, which the manifests in {} \
                 lists: objects may still be stored in it, and the API server refuses a CRD that drops a version \
                 objects are stored in. Keep it declared (with `served: false` if it should not be served) until \
                 the storage migration has run (deploy with `ctop manifests --migrate-storage`; its progress is in \
                 the operator's /status) and `kubectl get crd crontabs.batch.example.com -o \
                 jsonpath='{{.status.storedVersions}}'` no longer lists it; then run ctop manifests again with \
                 --versions-migrated",
                path.display()
            )
        );
        let dropped = check_stored_versions(&path, &spec(&["v2"]), true).expect("confirmed");
        assert_eq!(
            dropped.iter().map(ToString::to_string).collect::<Vec<_>>(),
            ["version v1 of crontabs.batch.example.com"]
        );
    }

    #[test]
    fn without_a_previous_generation_there_is_nothing_to_check() {
        let dir = tempfile::tempdir().expect("temp dir");
        assert_eq!(
            check_stored_versions(&dir.path().join("new.yaml"), &spec(&["v2"]), false).expect("first"),
            []
        );
        let junk = dir.path().join("junk.yaml");
        std::fs::write(&junk, "a: [").expect("written");
        let err = check_stored_versions(&junk, &spec(&["v2"]), false).expect_err("not YAML");
        assert!(err.to_string().ends_with("fix or remove it, or pass -o with another file"), "{err}");
    }

    #[test]
    fn several_dropped_versions_are_named_together() {
        let removed = [
            RemovedVersion { crd: "a.x.io".into(), version: "v1".into() },
            RemovedVersion { crd: "a.x.io".into(), version: "v2".into() },
            RemovedVersion { crd: "b.x.io".into(), version: "v1".into() },
        ];
        let text = removal_refused(&removed, Path::new("out.yaml"));
        assert!(text.starts_with("the script no longer declares version v1 of a.x.io, version v2 of a.x.io, version v1 of b.x.io, which the manifests in out.yaml list: objects may still be stored in them"), "{text}");
        assert!(
            text.contains(
                "`kubectl get crd a.x.io -o jsonpath='{.status.storedVersions}'` and `kubectl get crd b.x.io"
            ),
            "{text}"
        );
    }

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

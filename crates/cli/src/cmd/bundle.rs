//! `ctop bundle`: one deterministic `bundle.js.gz` from an operator directory.

use std::path::PathBuf;

use anyhow::Context as _;
use ctop_runtime::Framed;
use ctop_runtime::{Limits, Script};

/// Arguments of `ctop bundle`.
#[derive(Debug, clap::Args)]
pub struct BundleArgs {
    /// The operator directory.
    #[arg(default_value = ".")]
    dir: PathBuf,
    /// The entry script, relative to DIR.
    #[arg(long, default_value = "operator.ct")]
    entry: String,
    /// Where to write the bundle.
    #[arg(short, long, default_value = "bundle.js.gz")]
    output: PathBuf,
}

/// Load, check by running the script's top level, and write the bundle.
pub fn run(args: &BundleArgs) -> anyhow::Result<()> {
    let bundle = ctop_runtime::load_dir(&args.dir, &args.entry)
        .map_err(|e| Framed::new(e, &args.dir))
        .with_context(|| {
            format!(
                "cannot bundle {} (fix the error that follows and run ctop bundle again)",
                args.dir.join(&args.entry).display()
            )
        })?;
    let modules = bundle.modules.len();
    let hash = bundle.sha256_hex();
    let bytes = bundle.to_gz();
    let size = bundle.size_report();
    tracing::info!("bundle size: {size}");
    // The bundle is deployed in a ConfigMap (`ctop manifests`): refuse here already what
    // the API server would refuse there.
    ctop_manifests::check_config_map_size(bytes.len(), 0)
        .with_context(|| format!("cannot bundle {}: the bundle is too big to deploy", args.dir.display()))?;
    let script = Script::from_bundle(bundle, 1, Limits::default())
        .context("the script failed while declaring its operators; fix it and run ctop bundle again")?;
    std::fs::write(&args.output, &bytes)
        .with_context(|| format!("cannot write {}; pass -o with a writable path", args.output.display()))?;
    tracing::info!(
        output = %args.output.display(),
        modules,
        bytes = bytes.len(),
        sha256 = %hash,
        resources = script.spec().resources.len(),
        controllers = script.spec().controllers.len(),
        "bundle written"
    );
    Ok(())
}

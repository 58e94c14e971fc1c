//! `ctop init` and `ctop types`: scaffold an operator and (re)write its typings.
//!
//! `ctop init` only writes files (see `ctop_runtime::scaffold`): it runs no npm and needs
//! no network; the `package.json` it writes lets `npm install` fetch TypeScript later.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use ctop_runtime::{Limits, Script};

/// Arguments of `ctop init`.
#[derive(Debug, clap::Args)]
pub struct InitArgs {
    /// The directory to create the operator in.
    dir: PathBuf,
    /// Kind of the custom resource.
    #[arg(long, default_value = "App")]
    kind: String,
    /// API group of the custom resource.
    #[arg(long, default_value = "apps.example.com")]
    group: String,
    /// Overwrite files that exist.
    #[arg(long)]
    force: bool,
}

/// Arguments of `ctop types`.
#[derive(Debug, clap::Args)]
pub struct TypesArgs {
    /// The operator directory.
    #[arg(default_value = ".")]
    dir: PathBuf,
    /// The entry script, relative to DIR.
    #[arg(long, default_value = "operator.ct")]
    entry: String,
}

fn write(dir: &Path, rel: &str, text: &str) -> anyhow::Result<()> {
    let path = dir.join(rel);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).with_context(|| format!("cannot create {}", parent.display()))?;
    }
    std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))
}

/// Write the scaffold.
pub fn init(args: &InitArgs) -> anyhow::Result<()> {
    if !args.kind.starts_with(|c: char| c.is_ascii_uppercase())
        || !args.kind.chars().all(|c| c.is_ascii_alphanumeric())
    {
        anyhow::bail!("--kind {:?} must be a PascalCase name like App or WebApp", args.kind);
    }
    if !args.group.contains('.') {
        anyhow::bail!("--group {:?} must be a domain with a dot, like apps.example.com", args.group);
    }
    let files = ctop_runtime::scaffold::files(&args.kind, &args.group);
    if !args.force
        && let Some((rel, _)) = files.iter().find(|(rel, _)| args.dir.join(rel).exists())
    {
        anyhow::bail!("{} exists; pass --force to overwrite it", args.dir.join(rel).display());
    }
    for (rel, text) in &files {
        write(&args.dir, rel, text)?;
    }
    let dir = args.dir.display();
    tracing::info!(
        dir = %dir,
        kind = args.kind,
        "operator created: `cd {dir} && npm install` installs TypeScript (for `ctop check` and editors), then `ctop check {dir}`, `ctop dev {dir}`, `ctop test {dir} --update` to record its first test's golden file, and `ctop test {dir} --fuzz` to fuzz it"
    );
    Ok(())
}

/// Rewrite `ctop.d.ts` and the script's own resource interfaces.
pub fn types(args: &TypesArgs) -> anyhow::Result<()> {
    let script = Script::from_dir(&args.dir, &args.entry, 1, Limits::default())
        .context("cannot load the script (fix the error that follows and run ctop types again)")?;
    write(&args.dir, "ctop.d.ts", ctop_runtime::sdk::SDK_DTS)?;
    for (rel, text) in ctop_runtime::scaffold::editor_types() {
        write(&args.dir, &rel, &text)?;
    }
    write(&args.dir, "ctop-resources.d.ts", &ctop_runtime::resource_typings(script.spec()))?;
    tracing::info!(dir = %args.dir.display(), resources = script.spec().resources.len(), "typings written: ctop.d.ts, .ctop/types (for editors), ctop-resources.d.ts");
    Ok(())
}

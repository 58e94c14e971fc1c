//! `ctop check`: everything that can be known about an operator before it meets a cluster.
//!
//! [`run`] loads the script as `ctop run` would (syntax and import errors, then its top
//! level), type-checks it and its imports with the real TypeScript compiler ([`tsc`]), then
//! makes the checks `ctop manifests` and the API server would make later: the CRDs'
//! structural schemas and the rest of [`ctop_manifests::generate`], the names the script
//! fixes ([`names`]), the samples against their CRD schema ([`samples`]), and the RBAC
//! declarations of every kind a handler applies, patches or reads ([`rbac`]), and the
//! conversions of resources with several versions on every sample ([`conversion`]). Each
//! problem is a [`frame::Finding`] printed with its location, a code frame and what to do;
//! any error makes the command fail.

mod conversion;
mod frame;
mod names;
mod rbac;
mod samples;
mod tsc;

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context as _;
use ctop_runtime::{Limits, LoadError, Script, ScriptError, VmError};
use frame::{Finding, Location, Severity, shown};

/// Arguments of `ctop check`.
#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// The operator directory.
    #[arg(default_value = ".")]
    dir: PathBuf,
    /// The entry script, relative to DIR.
    #[arg(long, default_value = "operator.ct")]
    entry: String,
    /// The values file [default: DIR/values.yaml when it exists, else empty values].
    #[arg(long)]
    values: Option<PathBuf>,
    /// CRDs to compare the script's versions with: the manifests last deployed (`ctop
    /// manifests -o FILE`), or a cluster's (`kubectl get crd NAME -o yaml`, whose
    /// status.storedVersions is exact); a version they hold objects in that the script no
    /// longer declares is an error.
    #[arg(long, value_name = "FILE")]
    previous: Option<PathBuf>,
}

/// Run every check on `args.dir`, print the findings, fail if any is an error.
pub fn run(args: &CheckArgs) -> anyhow::Result<()> {
    let dir = &args.dir;
    let mut findings = Vec::new();
    let loaded = load(dir, &args.entry, &mut findings);
    let resources_dts = loaded.as_ref().map(|(s, _)| ctop_runtime::resource_typings(s.spec()));
    let compiler = typecheck(dir, &args.entry, resources_dts.as_deref(), &mut findings);
    let mut controllers = 0;
    if let Some((script, bundle)) = &loaded {
        controllers = script.spec().controllers.len();
        findings.extend(names::check(script.spec()));
        if let Some(path) = &args.previous {
            findings.extend(dropped_versions(path, script.spec()));
        }
        let values = super::values_text(dir, args.values.as_deref())?;
        findings.extend(manifests(dir, script, bundle, &values));
        let (samples, found) = samples::load(dir, script.spec());
        findings.extend(found);
        match ctop_runtime::values_from_yaml(&values) {
            Ok(values) => {
                findings.extend(rbac::check(dir, script, &samples, &values));
                findings.extend(conversion::check(script, &samples, &values));
            }
            Err(e) => findings.push(Finding::error(
                "values",
                format!("the values file is not usable: {e}"),
                Some("fix values.yaml (ctop run fails on it at start)".into()),
            )),
        }
    }

    let mut out = std::io::stdout().lock();
    for f in &findings {
        out.write_all(f.render().as_bytes()).context("cannot write to standard output")?;
    }
    let errors = findings.iter().filter(|f| f.severity == Severity::Error).count();
    let warnings = findings.len() - errors;
    if errors > 0 {
        anyhow::bail!(
            "{} has {errors} error(s) and {warnings} warning(s); fix them and run ctop check again",
            dir.display()
        );
    }
    writeln!(
        out,
        "{}: no errors ({warnings} warning(s)); type-checked with {}, manifests, names and the RBAC of {controllers} controller(s) checked",
        dir.display(),
        compiler.as_deref().map_or_else(|| "no compiler".into(), |p| p.display().to_string()),
    )
    .context("cannot write to standard output")?;
    Ok(())
}

/// The script loaded and its top level run, or the finding that says why not.
fn load(
    dir: &Path,
    entry: &str,
    findings: &mut Vec<Finding>,
) -> Option<(Arc<Script>, ctop_manifests::ScriptBundle)> {
    let bundle = match ctop_runtime::load_dir(dir, entry) {
        Ok(b) => b,
        Err(e) => {
            findings.push(load_finding(dir, &e));
            return None;
        }
    };
    let script_bundle = ctop_manifests::ScriptBundle { gz: bundle.to_gz(), sha256: bundle.sha256_hex() };
    match Script::from_bundle(bundle, 1, Limits::default()) {
        Ok(script) => Some((Arc::new(script), script_bundle)),
        Err(e) => {
            let location = match &e {
                ScriptError::Vm(VmError::Exception {
                    file: Some(file), line: Some(line), column, ..
                }) if dir.join(file).is_file() => Some(Location {
                    shown: shown(dir, file),
                    path: Some(dir.join(file)),
                    line: *line,
                    column: column.unwrap_or(1),
                }),
                _ => None,
            };
            findings.push(Finding {
                severity: Severity::Error,
                location,
                code: "script".into(),
                message: format!("the script failed while declaring its operators: {e}"),
                help: Some(
                    "its top level runs at every start (ctop run, dev, manifests): fix it there".into(),
                ),
            });
            None
        }
    }
}

/// A load error, at its position when it is in a file.
/// A version the CRDs in `path` may hold objects in that the script no longer declares.
fn dropped_versions(path: &Path, spec: &ctop_core::OperatorSpec) -> Option<Finding> {
    if !path.is_file() {
        return Some(Finding::error(
            "versions",
            format!("--previous {}: no such file", path.display()),
            Some(
                "pass the manifests last deployed (ctop manifests -o FILE) or kubectl get crd NAME -o yaml"
                    .into(),
            ),
        ));
    }
    let previous = match super::manifests::previous_documents(path) {
        // `kubectl get crd -o yaml` of several CRDs is one List.
        Ok(docs) => docs
            .into_iter()
            .flat_map(|d| match d["items"].as_array() {
                Some(items) if d["kind"] == "List" => items.clone(),
                _ => vec![d],
            })
            .collect::<Vec<_>>(),
        Err(e) => {
            return Some(Finding::error(
                "versions",
                format!("{e:#}"),
                Some(
                    "pass --previous a file of YAML documents (ctop manifests -o, kubectl get crd -o yaml)"
                        .into(),
                ),
            ));
        }
    };
    let removed = ctop_manifests::removed_versions(&previous, spec);
    (!removed.is_empty())
        .then(|| Finding::error("versions", super::manifests::removal_refused(&removed, path), None))
}

fn load_finding(dir: &Path, e: &LoadError) -> Finding {
    let text = e.to_string();
    let help = Some("ctop run, dev, bundle and manifests refuse the script the same way".to_owned());
    match e.position() {
        Some((file, line, column)) => {
            let prefix = format!("{file}:{line}:{column}: ");
            Finding {
                severity: Severity::Error,
                location: Some(Location {
                    shown: shown(dir, file),
                    path: Some(dir.join(file)),
                    line,
                    column,
                }),
                code: "load".into(),
                message: text.strip_prefix(&prefix).unwrap_or(&text).to_owned(),
                help,
            }
        }
        None => Finding::error("load", text, help),
    }
}

/// Type-check with tsc; the compiler used, if one was found.
fn typecheck(
    dir: &Path,
    entry: &str,
    resources_dts: Option<&str>,
    findings: &mut Vec<Finding>,
) -> Option<PathBuf> {
    let Some(compiler) = tsc::find(dir) else {
        findings.push(Finding::error(
            "tsc",
            format!(
                "no TypeScript compiler: neither {} nor a directory above it has node_modules/.bin/tsc, and there is no tsc on PATH",
                dir.display()
            ),
            Some(format!("install it with: {}", tsc::install_hint(dir))),
        ));
        return None;
    };
    if dir.join("tsconfig.json").is_file() {
        match std::fs::read_to_string(dir.join("ctop.d.ts")) {
            Ok(text) if text == ctop_runtime::sdk::SDK_DTS => {}
            Ok(_) => findings.push(Finding::warning(
                "types",
                format!(
                    "{} is not this ctop's: the check used this ctop's typings, your editor uses the file",
                    shown(dir, "ctop.d.ts")
                ),
                Some(format!("run: ctop types {}", dir.display())),
            )),
            Err(_) => findings.push(Finding::warning(
                "types",
                format!("{} is missing: editors cannot resolve \"ctop\"", shown(dir, "ctop.d.ts")),
                Some(format!("run: ctop types {}", dir.display())),
            )),
        }
    }
    let result = tsc::stage(dir, entry, resources_dts).and_then(|staged| tsc::run(&compiler, dir, &staged));
    match result {
        Ok(found) => findings.extend(found),
        Err(e) => findings.push(Finding::error(
            "tsc",
            ctop_core::Chain(&e).to_string(),
            Some(format!("check that {} runs", compiler.display())),
        )),
    }
    Some(compiler)
}

/// What `ctop manifests` would refuse or warn about, with default options.
fn manifests(
    dir: &Path,
    script: &Script,
    bundle: &ctop_manifests::ScriptBundle,
    values: &str,
) -> Vec<Finding> {
    let spec = script.spec();
    let name = std::fs::canonicalize(dir)
        .ok()
        .and_then(|d| d.file_name().and_then(|n| ctop_manifests::name_from(&n.to_string_lossy())))
        .or_else(|| spec.resources.first().and_then(|r| ctop_manifests::name_from(&r.plural)))
        .unwrap_or_else(|| "operator".to_owned());
    let mut options = ctop_manifests::Options::new(name);
    options.values_yaml = if values.is_empty() { "{}\n".to_owned() } else { values.to_owned() };
    match ctop_manifests::generate(spec, bundle, &options, &[]) {
        Ok(m) => m.notes.into_iter().map(|n| Finding::warning("manifests", n, None)).collect(),
        Err(e) => vec![Finding::error(
            "manifests",
            e.to_string(),
            Some("ctop manifests refuses the operator for this (and the API server would refuse what it wrote)".into()),
        )],
    }
}

//! Sample objects: every document of a directory's `*.yaml` files, server-side applied the
//! way `kubectl apply --server-side -f DIR` would, one file's failure not stopping the others.

use std::path::{Path, PathBuf};

use ctop_core::KindRef;
use kube::Client;
use kube::api::{Patch, PatchParams};
use serde_json::Value;

use crate::cluster::{api_for, resolve};
use crate::error::{RunError, api_error_text};

/// Why one sample file was not (wholly) applied.
#[derive(Debug, thiserror::Error)]
pub enum SampleError {
    /// The file could not be read.
    #[error("cannot read the file")]
    Read(#[source] std::io::Error),
    /// The file is not YAML.
    #[error("not valid YAML")]
    Yaml(#[source] ctop_core::yaml::Error),
    /// A document lacks what an object needs.
    #[error("document {index}: {reason}")]
    NotAnObject {
        /// The document's position in the file, from 1.
        index: usize,
        /// What is missing.
        reason: &'static str,
    },
    /// The document's kind is not served by the cluster.
    #[error("{kind} is not served")]
    NotServed {
        /// `apiVersion/kind`.
        kind: String,
        /// The discovery error.
        #[source]
        source: RunError,
    },
    /// The API server refused the object (its answer rendered once, as kubectl words it;
    /// the [`kube::Error`] is not the source, whose text is a `Debug` dump of it).
    #[error("{kind} {name}: {}", api_error_text(.error))]
    Apply {
        /// The kind.
        kind: String,
        /// The object's name.
        name: String,
        /// The error.
        error: kube::Error,
    },
}

/// What [`apply_samples`] did.
#[derive(Debug, Default)]
pub struct SampleReport {
    /// The objects applied, as `Kind name`, in file and document order.
    pub applied: Vec<String>,
    /// The files that failed, with why (the documents before the failing one are applied).
    pub failed: Vec<(PathBuf, SampleError)>,
}

/// Server-side apply (as `manager`, forcing conflicts) every document of `dir`'s `*.yaml`
/// and `*.yml` files, in file-name order; a namespaced object without a namespace goes to
/// `default`. A missing directory applies nothing. Each applied object and each failed
/// file is logged too.
pub async fn apply_samples(client: &Client, dir: &Path, manager: &str) -> SampleReport {
    let mut report = SampleReport::default();
    let Ok(entries) = std::fs::read_dir(dir) else { return report };
    let mut files: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
        .collect();
    files.sort();
    for file in files {
        if let Err(e) = apply_file(client, &file, manager, &mut report.applied).await {
            tracing::error!(file = %file.display(), "sample {}: {}", file.display(), ctop_core::Chain(&e));
            report.failed.push((file, e));
        }
    }
    report
}

async fn apply_file(
    client: &Client,
    file: &Path,
    manager: &str,
    applied: &mut Vec<String>,
) -> Result<(), SampleError> {
    let text = std::fs::read_to_string(file).map_err(SampleError::Read)?;
    let docs: Vec<Value> = ctop_core::yaml::documents(&text).map_err(SampleError::Yaml)?;
    for (i, obj) in docs.iter().enumerate().filter(|(_, d)| !d.is_null()) {
        let index = i + 1;
        let missing = |reason| SampleError::NotAnObject { index, reason };
        let api_version = obj["apiVersion"].as_str().ok_or_else(|| missing("no apiVersion"))?;
        let kind = obj["kind"].as_str().ok_or_else(|| missing("no kind"))?;
        let name = obj["metadata"]["name"].as_str().ok_or_else(|| missing("no metadata.name"))?;
        let kind_ref = KindRef { api_version: api_version.into(), kind: kind.into() };
        let (ar, namespaced) = resolve(client, &kind_ref)
            .await
            .map_err(|source| SampleError::NotServed { kind: format!("{api_version}/{kind}"), source })?;
        let ns = obj["metadata"]["namespace"].as_str().unwrap_or("default");
        api_for::<kube::api::DynamicObject>(client, &ar, namespaced, Some(ns))
            .patch(name, &PatchParams::apply(manager).force(), &Patch::Apply(obj))
            .await
            .map_err(|error| SampleError::Apply { kind: kind.into(), name: name.into(), error })?;
        tracing::info!(kind, name, "sample applied: {kind} {name}");
        applied.push(format!("{kind} {name}"));
    }
    Ok(())
}

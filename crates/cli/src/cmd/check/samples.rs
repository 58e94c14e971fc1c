//! The samples (`samples/*.yaml`, which `ctop dev` applies): each object of one of the
//! script's own resources goes through what the API server does to a custom resource on
//! create, in its order: unknown fields pruned (a warning each, as the server's
//! `unknown field` warnings), defaults applied, then the schema validation (an error
//! each). `ctop_schema` holds those steps, the code kubesim serves them with. The
//! CRD's CEL rules (`x-kubernetes-validations`) are not run here.
//!
//! The defaulted objects are what [`super::rbac`] runs the handlers on.

use std::path::Path;

use ctop_core::OperatorSpec;
use serde_json::Value;

use super::frame::Finding;

/// One object of a sample file, as the server would store it.
pub struct Sample {
    /// `samples/<file>`.
    pub file: String,
    /// The object, pruned and defaulted when it is of one of the script's resources.
    pub object: Value,
    /// The API server would refuse it (a finding says why): no handler runs on it.
    pub refused: bool,
}

/// Every object of `dir/samples/*.yaml` (files in name order), and the findings about them.
pub fn load(dir: &Path, spec: &OperatorSpec) -> (Vec<Sample>, Vec<Finding>) {
    let mut samples = Vec::new();
    let mut findings = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir.join("samples")) else { return (samples, findings) };
    let mut files: Vec<_> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
        .collect();
    files.sort();
    for path in files {
        let file = path.file_name().map(|n| format!("samples/{}", n.to_string_lossy())).unwrap_or_default();
        let docs = std::fs::read_to_string(&path)
            .map_err(|e| e.to_string())
            .and_then(|text| ctop_core::yaml::documents::<Value>(&text).map_err(|e| e.to_string()));
        let docs = match docs {
            Ok(docs) => docs,
            Err(e) => {
                findings.push(Finding::error(
                    "sample",
                    format!("{file} is not readable YAML: {e}"),
                    Some("fix the file: ctop dev applies it".into()),
                ));
                continue;
            }
        };
        for mut object in docs.into_iter().filter(|d| !d.is_null()) {
            let mut refused = false;
            // A sample may be in any version of a resource: it is checked against that one's schema.
            let resource = spec.resources.iter().find_map(|r| {
                let version = r.all_versions().into_iter().find(|v| {
                    object["apiVersion"] == r.api_version_of(&v.name).as_str()
                        && object["kind"] == r.kind.as_str()
                })?;
                Some((r, version.schema))
            });
            if let Some((r, schema)) = resource {
                let what = format!(
                    "{file}: {} {}",
                    r.kind,
                    object["metadata"]["name"].as_str().unwrap_or("(no name)")
                );
                for field in ctop_schema::prune(&mut object, &schema) {
                    findings.push(Finding::warning(
                        "sample",
                        format!("{what}: unknown field {field:?}: the API server drops it"),
                        Some(format!(
                            "remove it from the sample, or add it to the schema of resource {}",
                            r.kind
                        )),
                    ));
                }
                ctop_schema::apply_defaults(&mut object, &schema);
                let causes = ctop_schema::validate(&object, &schema);
                if !causes.is_empty() {
                    findings.push(Finding::error(
                        "sample",
                        format!(
                            "{what}: the API server would refuse it:{}",
                            causes.iter().map(|c| format!("\n{}", c.error_string())).collect::<String>()
                        ),
                        Some(
                            "fix the sample (ctop dev applies it), or the schema if the sample is right"
                                .into(),
                        ),
                    ));
                    refused = true;
                }
            }
            samples.push(Sample { file: file.clone(), object, refused });
        }
    }
    (samples, findings)
}

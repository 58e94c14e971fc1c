//! Every CRD `ctop manifests` writes passes the checks the API server makes when the CRD
//! is created (`ctop_schema`: the decoder's type check, then the structural-schema, default,
//! OpenAPI-keyword and CEL-rule checks), the same code kubesim refuses CRDs with, for the
//! schema of every version. A CRD either would refuse fails here instead, with the server's
//! cause and where to change the script. The server's checks of a version's
//! `deprecationWarning` (at most 256 bytes, printable characters only) are made here too.

use ctop_core::ResourceSpec;
use serde_json::{Value, json};

use crate::Error;

/// Longest `deprecationWarning` the API server accepts, in bytes.
const MAX_DEPRECATION_WARNING: usize = 256;

/// Where kubesim and the server report schema errors of the version at `index`.
fn base(index: usize) -> String {
    format!("spec.versions[{index}].schema.openAPIV3Schema")
}

/// One reason the API server would refuse a generated CRD.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchemaProblem {
    /// The server's field, e.g.
    /// `spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[size].default`.
    pub field: String,
    /// The server's message, e.g. `Invalid value: 0:  in body should be greater than or equal to 1`.
    pub message: String,
    /// The path in the resource's `z` schema, e.g. `spec.size`.
    pub script_path: String,
    /// Which version's schema, for a resource with several (`None` for one).
    pub version: Option<String>,
    /// What to change in the script, when the cause says.
    pub change: Option<&'static str>,
}

impl std::fmt::Display for SchemaProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.message)?;
        let at = if self.script_path.is_empty() { "the root" } else { &self.script_path };
        let schema = match &self.version {
            Some(version) => format!("the script's {version} schema"),
            None => "the script's schema".to_owned(),
        };
        match self.change {
            Some(change) => write!(f, " (in {schema} at {at}: {change})"),
            None => write!(f, " (in {schema} at {at})"),
        }
    }
}

/// `properties[spec].properties[size].default` → `spec.size`: the schema path as a
/// script reads it (`[*]` for array items, `[key]` for record values), up to the first
/// keyword that is not a nesting.
fn script_path(rest: &str) -> String {
    let mut out = String::new();
    let mut r = rest;
    loop {
        r = r.strip_prefix('.').unwrap_or(r);
        if let Some(after) = r.strip_prefix("properties[") {
            let Some(end) = after.find(']') else { break };
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(&after[..end]);
            r = &after[end + 1..];
        } else if let Some(after) = r.strip_prefix("items") {
            out.push_str("[*]");
            r = after;
        } else if let Some(after) = r.strip_prefix("additionalProperties") {
            out.push_str("[key]");
            r = after;
        } else {
            break;
        }
        if r.is_empty() {
            break;
        }
    }
    out
}

/// What to change in the script for a cause, where it is clear.
fn change(field: &str, message: &str) -> Option<&'static str> {
    let keyword = field.rsplit('.').next().unwrap_or_default();
    if message.contains("must not be empty for specified")
        || message.contains("must not be empty at the root")
    {
        Some("give it a type: a typed z schema, or z.any() to keep any value")
    } else if keyword == "default" {
        Some("change its .default(...) to a value its own schema accepts, with no unknown fields")
    } else if keyword == "uniqueItems" {
        Some("drop the unique-items constraint; CRDs do not allow it")
    } else if keyword == "additionalProperties" {
        Some("use either an object with fields or a record, not both")
    } else if keyword == "pattern" {
        Some("fix the regular expression (Go RE2 syntax)")
    } else if keyword == "items" {
        Some("give the array an element schema")
    } else if field.contains("x-kubernetes-validations") {
        Some("fix the CEL rule")
    } else {
        None
    }
}

/// Refuses `doc` (the CRD of `resource`) when the API server would.
pub(crate) fn check(doc: &Value, resource: &ResourceSpec) -> Result<(), Error> {
    let crd = crate::crd::crd_name(resource);
    let versions = doc.pointer("/spec/versions").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    let named = |v: &Value| resource.converts().then(|| v["name"].as_str().unwrap_or_default().to_owned());
    // The decoder stops at the first mismatch and names no version: find the version by
    // decoding each alone.
    for (i, v) in versions.iter().enumerate() {
        if let Some(message) = ctop_schema::decode_error(&json!({"spec": {"versions": [v]}})) {
            let problem = SchemaProblem {
                field: base(i),
                message,
                script_path: String::new(),
                version: named(v),
                change: None,
            };
            return Err(Error::RejectedCrd { crd, problems: vec![problem] });
        }
    }
    let mut problems = Vec::new();
    for (i, v) in versions.iter().enumerate() {
        let Some(schema) = v.pointer("/schema/openAPIV3Schema") else { continue };
        let base = base(i);
        problems.extend(ctop_schema::check_structural(schema, &base).into_iter().map(|c| {
            let rest = c.field.strip_prefix(base.as_str()).unwrap_or_default();
            SchemaProblem {
                script_path: script_path(rest),
                version: named(v),
                change: change(&c.field, &c.message),
                field: c.field,
                message: c.message,
            }
        }));
    }
    if !problems.is_empty() {
        return Err(Error::RejectedCrd { crd, problems });
    }
    for (i, v) in versions.iter().enumerate() {
        if let Some(warning) = v["deprecationWarning"].as_str()
            && let Some(reason) = deprecation_warning_error(warning)
        {
            return Err(Error::BadDeprecationWarning {
                crd,
                version: v["name"].as_str().unwrap_or_default().to_owned(),
                field: format!("spec.versions[{i}].deprecationWarning"),
                message: format!("Invalid value: {}: {reason}", ctop_schema::go::quote(warning)),
            });
        }
    }
    Ok(())
}

/// Why the API server refuses `warning` as a `deprecationWarning`, in its words
/// (apiextensions-apiserver `validateDeprecationWarning`): the first reason only.
fn deprecation_warning_error(warning: &str) -> Option<String> {
    if warning.len() > MAX_DEPRECATION_WARNING {
        return Some(format!("must be <= {MAX_DEPRECATION_WARNING} characters long"));
    }
    if warning.is_empty() {
        return Some("must not be an empty string".to_owned());
    }
    // Go's unicode.IsPrint: letters, marks, numbers, punctuation, symbols and the ASCII
    // space; other spaces, controls and format characters are not printable.
    let printable = |c: char| {
        c == ' '
            || !(c.is_control()
                || c.is_whitespace()
                || matches!(c as u32, 0xAD | 0x200B..=0x200F | 0x2028..=0x202E | 0x2060..=0x2064 | 0xFEFF))
    };
    warning.char_indices().find(|(_, c)| !printable(*c)).map(|(i, _)| {
        format!("must only contain printable UTF-8 characters; non-printable character found at index {i}")
    })
}

#[cfg(test)]
mod tests {
    use serde_json::{Map, json};

    use super::*;

    /// A resource whose schema is what `z.object({ replicas: z.number().int().min(1).default(0),
    /// mode: z.enum(["a", "b"]).default("c") })` compiles to: defaults the schema itself refuses.
    fn bad_defaults() -> ResourceSpec {
        crate::crd::tests::resource(
            json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
                "replicas": {"type": "integer", "minimum": 1, "default": 0},
                "mode": {"type": "string", "enum": ["a", "b"], "default": "c"},
            }}}}),
        )
    }

    /// A kubesim and its CRDs as any client sees them; the sim stops when the first is dropped.
    async fn kubesim_crds() -> (ctop_kubesim::KubeSim, kube::Api<kube::api::DynamicObject>) {
        let sim =
            ctop_kubesim::KubeSim::start(ctop_kubesim::Config { workloads: None, ..Default::default() })
                .await
                .expect("kubesim starts");
        let kubeconfig = kube::config::Kubeconfig::from_yaml(&sim.kubeconfig()).expect("kubeconfig parses");
        let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
            .await
            .expect("kubeconfig loads");
        let client = kube::Client::try_from(config).expect("client");
        let crds = kube::Api::<kube::api::DynamicObject>::all_with(
            client,
            &kube::api::ApiResource::erase::<
                k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
            >(&()),
        );
        (sim, crds)
    }

    #[tokio::test]
    async fn kubesim_refuses_what_manifests_refuses_with_the_same_causes() {
        let (_sim, crds) = kubesim_crds().await;
        let resource = bad_defaults();
        let Err(Error::RejectedCrd { problems, .. }) = crate::crd(&resource, &Map::new()) else {
            panic!("manifests must refuse the CRD")
        };
        let ours: Vec<String> = problems.iter().map(|p| format!("{}: {}", p.field, p.message)).collect();
        assert_eq!(
            ours,
            [
                "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[mode].default: Unsupported value: \"c\": supported values: \"a\", \"b\"",
                "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[replicas].default: Invalid value: 0:  in body should be greater than or equal to 1",
            ]
        );
        assert_eq!(problems[1].script_path, "spec.replicas");

        // The same CRD, unchecked, sent to kubesim over HTTP as any client would.
        let document = crate::crd::crd_document(&resource, &Map::new(), json!({"strategy": "None"}));
        let unchecked: kube::api::DynamicObject = serde_json::from_value(document).expect("a CRD object");
        let status = match crds.create(&kube::api::PostParams::default(), &unchecked).await {
            Err(kube::Error::Api(status)) => status,
            other => panic!("kubesim must refuse the CRD, got {other:?}"),
        };
        assert_eq!(status.code, 422);
        let causes = status.details.map(|d| d.causes).unwrap_or_default();
        let theirs: Vec<String> = causes.iter().map(|c| format!("{}: {}", c.field, c.message)).collect();
        assert_eq!(theirs, ours);
    }

    /// kubesim (the server the CRD checks are shared with) accepts the CRD of a resource with
    /// several versions, and records the storage version in `status.storedVersions`.
    #[tokio::test]
    async fn kubesim_accepts_a_converting_crd() {
        let (_sim, crds) = kubesim_crds().await;
        let endpoint = crate::ConversionEndpoint::Service {
            namespace: "op-system".into(),
            name: "op-webhook".into(),
            port: 443,
        };
        let doc = crate::crd_with(&crate::crd::tests::converting(), &Map::new(), &endpoint).expect("checked");
        let object: kube::api::DynamicObject = serde_json::from_value(doc).expect("a CRD object");
        let created =
            crds.create(&kube::api::PostParams::default(), &object).await.expect("kubesim accepts it");
        assert_eq!(created.data["status"]["storedVersions"], json!(["v1beta1"]));
        assert_eq!(created.data["spec"]["conversion"]["strategy"], "Webhook");
    }

    #[test]
    fn script_paths_follow_the_schema_nesting() {
        assert_eq!(script_path(".properties[spec].properties[size].default"), "spec.size");
        assert_eq!(script_path(".properties[spec].properties[l].items.properties[a].type"), "spec.l[*].a");
        assert_eq!(script_path(".properties[m].additionalProperties.pattern"), "m[key]");
        assert_eq!(script_path(".x-kubernetes-validations[0].rule"), "");
    }
}

//! Every CRD `ctop manifests` writes passes the checks the API server makes when the CRD
//! is created (`ctop_schema`: the decoder's type check, then the structural-schema, default,
//! OpenAPI-keyword and CEL-rule checks), the same code kubesim refuses CRDs with. A CRD
//! either would refuse fails here instead, with the server's cause and where to change the
//! script.

use ctop_core::ResourceSpec;
use serde_json::Value;

use crate::Error;

/// Where kubesim and the server report schema errors for a one-version CRD.
const BASE: &str = "spec.versions[0].schema.openAPIV3Schema";

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
    /// What to change in the script, when the cause says.
    pub change: Option<&'static str>,
}

impl std::fmt::Display for SchemaProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.message)?;
        let at = if self.script_path.is_empty() { "the root" } else { &self.script_path };
        match self.change {
            Some(change) => write!(f, " (in the script's schema at {at}: {change})"),
            None => write!(f, " (in the script's schema at {at})"),
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
    let crd = format!("{}.{}", resource.plural, resource.group);
    if let Some(message) = ctop_schema::decode_error(doc) {
        let problem =
            SchemaProblem { field: BASE.to_owned(), message, script_path: String::new(), change: None };
        return Err(Error::RejectedCrd { crd, problems: vec![problem] });
    }
    let Some(schema) = doc.pointer("/spec/versions/0/schema/openAPIV3Schema") else { return Ok(()) };
    let problems: Vec<SchemaProblem> = ctop_schema::check_structural(schema, BASE)
        .into_iter()
        .map(|c| {
            let rest = c.field.strip_prefix(BASE).unwrap_or_default();
            SchemaProblem {
                script_path: script_path(rest),
                change: change(&c.field, &c.message),
                field: c.field,
                message: c.message,
            }
        })
        .collect();
    if problems.is_empty() { Ok(()) } else { Err(Error::RejectedCrd { crd, problems }) }
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

    #[tokio::test]
    async fn kubesim_refuses_what_manifests_refuses_with_the_same_causes() {
        let sim =
            ctop_kubesim::KubeSim::start(ctop_kubesim::Config { workloads: None, ..Default::default() })
                .await
                .expect("kubesim starts");
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
        let unchecked: kube::api::DynamicObject =
            serde_json::from_value(crate::crd::crd_document(&resource, &Map::new())).expect("a CRD object");
        let status = match crds.create(&kube::api::PostParams::default(), &unchecked).await {
            Err(kube::Error::Api(status)) => status,
            other => panic!("kubesim must refuse the CRD, got {other:?}"),
        };
        assert_eq!(status.code, 422);
        let causes = status.details.map(|d| d.causes).unwrap_or_default();
        let theirs: Vec<String> = causes.iter().map(|c| format!("{}: {}", c.field, c.message)).collect();
        assert_eq!(theirs, ours);
    }

    #[test]
    fn script_paths_follow_the_schema_nesting() {
        assert_eq!(script_path(".properties[spec].properties[size].default"), "spec.size");
        assert_eq!(script_path(".properties[spec].properties[l].items.properties[a].type"), "spec.l[*].a");
        assert_eq!(script_path(".properties[m].additionalProperties.pattern"), "m[key]");
        assert_eq!(script_path(".x-kubernetes-validations[0].rule"), "");
    }
}

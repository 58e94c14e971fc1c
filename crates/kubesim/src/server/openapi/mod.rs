//! `/openapi/v3` (this module) and `/openapi/v2` ([`v2`], encoded by [`gnostic`]).
//!
//! `/openapi/v3`: enough for kubectl's default (strict) validation to learn that every
//! kind accepts `fieldValidation`, for `kubectl explain`, and for kubectl's client-side
//! apply to find the merge keys of built-in kinds.
//!
//! Each group-version document lists, for every resource, the item path with operations
//! carrying `x-kubernetes-group-version-kind` and the `fieldValidation` parameter (PATCH
//! of a built-in kind also names the patch types in its request body, strategic merge
//! included). `components.schemas` carries the built-in kinds' schemas
//! (`crate::kinds::builtin`, generated once per process, with their hash) and the custom
//! resources' schemas.

pub(crate) mod gnostic;
pub(crate) mod v2;

use serde_json::{Map, Value, json};
use sha2::{Digest as _, Sha512};

use crate::kinds::builtin::{self, catalog, gv_path};
use crate::kinds::registry::{Registry, ResourceType};

/// `GET /openapi/v3`: the index of group-version documents.
pub fn index(reg: &Registry) -> Value {
    let mut paths = Map::new();
    for t in reg.all() {
        let p = gv_path(&t.group, &t.version);
        if paths.contains_key(&p) {
            continue;
        }
        // A SHA-512 in upper-case hex, like the API server's. The built-in components are
        // hashed once; only the rest is hashed here, after their digest.
        let doc = build(reg, &p, false).unwrap_or(Value::Null);
        let mut hasher = Sha512::new();
        if let Some(builtins) = catalog().gv_components(&p) {
            hasher.update(&builtins.digest);
        }
        hasher.update(doc.to_string());
        let hash: String = hasher.finalize().iter().map(|b| format!("{b:02X}")).collect();
        paths.insert(p.clone(), json!({"serverRelativeURL": format!("/openapi/v3/{p}?hash={hash}")}));
    }
    json!({"paths": paths})
}

/// `GET /openapi/v3/{api/v1 | apis/g/v}`.
pub fn document(reg: &Registry, gv: &str) -> Option<Value> {
    build(reg, gv, true)
}

/// The document of `gv`, with or without the built-in kinds' components.
fn build(reg: &Registry, gv: &str, with_builtins: bool) -> Option<Value> {
    let types: Vec<_> = reg.all().into_iter().filter(|t| gv_path(&t.group, &t.version) == gv).collect();
    if types.is_empty() {
        return None;
    }
    let params = json!([
        {"name": "dryRun", "in": "query", "schema": {"type": "string", "uniqueItems": true}},
        {"name": "fieldManager", "in": "query", "schema": {"type": "string", "uniqueItems": true}},
        {"name": "fieldValidation", "in": "query", "description": "fieldValidation instructs the server on how to handle objects in the request containing unknown or duplicate fields.", "schema": {"type": "string", "uniqueItems": true}},
        {"name": "force", "in": "query", "schema": {"type": "boolean", "uniqueItems": true}},
    ]);
    let mut paths = Map::new();
    let builtins = catalog().gv_components(gv);
    let mut schemas = match builtins {
        Some(c) if with_builtins => c.schemas.clone(),
        _ => Map::new(),
    };
    for t in &types {
        let gvk = json!({"group": t.group, "version": t.version, "kind": t.kind});
        let prefix = format!("/{gv}");
        let item = if t.namespaced {
            format!("{prefix}/namespaces/{{namespace}}/{}/{{name}}", t.plural)
        } else {
            format!("{prefix}/{}/{{name}}", t.plural)
        };
        let builtin_name =
            if t.crd.is_none() { catalog().schema_name(&t.group, &t.version, &t.kind) } else { None };
        let schema_name = builtin_name
            .map_or_else(|| format!("{}.{}.{}", reverse_group(&t.group), t.version, t.kind), str::to_owned);
        let op = |verb: &str| {
            json!({
                "operationId": format!("{verb}{}", t.kind),
                "parameters": params,
                "x-kubernetes-action": verb,
                "x-kubernetes-group-version-kind": gvk,
                "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": {"$ref": format!("#/components/schemas/{schema_name}")}}}}},
            })
        };
        let mut patch = op("patch");
        if builtin_name.is_some() {
            patch["requestBody"] = builtin::patch_request_body();
        }
        paths.insert(
            item,
            json!({"get": op("get"), "put": op("put"), "patch": patch, "delete": op("delete")}),
        );
        if builtin_name.is_some() {
            // Its schema is among the built-in components.
            continue;
        }
        schemas.insert(schema_name, own_schema(t));
    }
    Some(json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.33.0"},
        "paths": paths,
        "components": {"schemas": schemas},
    }))
}

/// The schema of a kind without a built-in component (a custom resource's, or a free-form
/// object), with its `x-kubernetes-group-version-kind`.
fn own_schema(t: &ResourceType) -> Value {
    let mut schema = t
        .crd
        .as_ref()
        .and_then(|c| c.schema.clone())
        .unwrap_or_else(|| json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}));
    schema["x-kubernetes-group-version-kind"] =
        json!([{"group": t.group, "version": t.version, "kind": t.kind}]);
    schema
}

/// `apps` → `io.k8s.api.apps`; CRD groups are reversed like the real server does.
fn reverse_group(group: &str) -> String {
    match group {
        "" => "io.k8s.api.core".into(),
        g if !g.contains('.') => format!("io.k8s.api.{g}"),
        g => g.split('.').rev().collect::<Vec<_>>().join("."),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_list_patch_with_field_validation() {
        let reg = Registry::with_builtins();
        let idx = index(&reg);
        assert!(
            idx["paths"]["apis/apps/v1"]["serverRelativeURL"]
                .as_str()
                .is_some_and(|u| u.starts_with("/openapi/v3/apis/apps/v1?hash="))
        );
        let doc = document(&reg, "apis/apps/v1").expect("served");
        let patch = &doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"];
        assert_eq!(patch["x-kubernetes-group-version-kind"]["kind"], "Deployment");
        assert!(
            patch["parameters"].as_array().is_some_and(|p| p.iter().any(|p| p["name"] == "fieldValidation"))
        );
        // Built-in kinds: their schemas, and strategic merge patches named for kubectl.
        assert!(patch["requestBody"]["content"].get("application/strategic-merge-patch+json").is_some());
        let deployment = &doc["components"]["schemas"]["io.k8s.api.apps.v1.Deployment"];
        assert_eq!(deployment["x-kubernetes-group-version-kind"][0]["kind"], "Deployment");
        assert!(doc["components"]["schemas"].get("io.k8s.api.core.v1.PodSpec").is_some());
        assert!(doc["components"]["schemas"].get("io.k8s.api.core.v1.Service").is_none());
        assert_eq!(index(&reg), idx, "the hash is stable");
    }
}

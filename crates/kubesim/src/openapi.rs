//! A minimal `/openapi/v3`: enough for kubectl's default (strict) validation to learn
//! that every kind accepts `fieldValidation`, so that it lets the server validate.
//!
//! Each group-version document lists, for every resource, the item path with a PATCH
//! operation carrying `x-kubernetes-group-version-kind` and the `fieldValidation`
//! parameter. Custom resources also carry their schema under `components.schemas`, which
//! `kubectl explain` reads.

use serde_json::{Map, Value, json};

use crate::registry::Registry;

fn gv_path(group: &str, version: &str) -> String {
    if group.is_empty() { format!("api/{version}") } else { format!("apis/{group}/{version}") }
}

fn hash(s: &str) -> String {
    // FNV-1a: stable across runs, good enough for a cache-busting hash.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016X}")
}

/// `GET /openapi/v3`: the index of group-version documents.
pub fn index(reg: &Registry) -> Value {
    let mut paths = Map::new();
    for t in reg.all() {
        let p = gv_path(&t.group, &t.version);
        if paths.contains_key(&p) {
            continue;
        }
        let doc = document(reg, &p).unwrap_or(Value::Null);
        let h = hash(&doc.to_string());
        paths.insert(p.clone(), json!({"serverRelativeURL": format!("/openapi/v3/{p}?hash={h}")}));
    }
    json!({"paths": paths})
}

/// `GET /openapi/v3/{api/v1 | apis/g/v}`.
pub fn document(reg: &Registry, gv: &str) -> Option<Value> {
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
    let mut schemas = Map::new();
    for t in &types {
        let gvk = json!({"group": t.group, "version": t.version, "kind": t.kind});
        let prefix = format!("/{gv}");
        let item = if t.namespaced {
            format!("{prefix}/namespaces/{{namespace}}/{}/{{name}}", t.plural)
        } else {
            format!("{prefix}/{}/{{name}}", t.plural)
        };
        let schema_name = format!("{}.{}.{}", reverse_group(&t.group), t.version, t.kind);
        let op = |verb: &str| {
            json!({
                "operationId": format!("{verb}{}", t.kind),
                "parameters": params,
                "x-kubernetes-action": verb,
                "x-kubernetes-group-version-kind": gvk,
                "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": {"$ref": format!("#/components/schemas/{schema_name}")}}}}},
            })
        };
        paths.insert(
            item,
            json!({"get": op("get"), "put": op("put"), "patch": op("patch"), "delete": op("delete")}),
        );
        let mut schema = t
            .crd
            .as_ref()
            .and_then(|c| c.schema.clone())
            .unwrap_or_else(|| json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}));
        schema["x-kubernetes-group-version-kind"] = json!([gvk]);
        schemas.insert(schema_name, schema);
    }
    Some(json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.33.0"},
        "paths": paths,
        "components": {"schemas": schemas},
    }))
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
    }
}

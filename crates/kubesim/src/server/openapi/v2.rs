//! `/openapi/v2`: the Swagger 2.0 document, made from the same schemas `/openapi/v3`
//! serves, as JSON ([`document`]) or as gnostic's OpenAPIv2 protobuf ([`super::gnostic`]),
//! which is what client-go asks for.
//!
//! kubectl needs it for one thing: `kubectl apply -f` of a `kind: List` (what `kubectl get
//! -o yaml` prints for several objects). `v1/List` has no operation in `/openapi/v3`, so
//! kubectl's strict validation cannot leave the check to the server and validates the
//! items itself with the v2 definitions (kubectl `pkg/validation` and
//! `k8s.io/kubectl/pkg/util/openapi/validation`: each item by its
//! `x-kubernetes-group-version-kind`, unknown fields and types, items of kinds it has no
//! definition of skipped), then sends each item with `fieldValidation=Strict`.
//!
//! Conversion from the v3 schemas, as the real server's are made:
//! - references point at `#/definitions/` and a lone `allOf: [{$ref}]` becomes the `$ref`
//!   (the v2 generator writes plain references); other junctors go (v2 has no `oneOf`,
//!   and kube-openapi's v2 reader ignores `allOf`);
//! - custom resources' schemas go through apiextensions-apiserver's v2 conversion
//!   (`pkg/controller/openapi/v2/conversion.go`, `ToStructuralOpenAPIV2`): no junctors, a
//!   `nullable` schema loses its type, items and properties (and its field leaves
//!   `required`), a `x-kubernetes-preserve-unknown-fields` one its items and properties, an
//!   array without items its type;
//! - a reference to a definition that is not in the document is dropped, since kubectl's
//!   reader refuses the whole document over one (kube-openapi `pkg/util/proto/document.go`,
//!   `parseReference`).

use std::collections::BTreeSet;
use std::sync::LazyLock;

use serde_json::{Map, Value, json};

use crate::kinds::builtin::catalog;
use crate::kinds::registry::Registry;

const V3_REF: &str = "#/components/schemas/";
const V2_REF: &str = "#/definitions/";

/// `GET /openapi/v2` as JSON: every definition of every group-version, built-in and custom.
pub fn document(reg: &Registry) -> Value {
    // The built-in kinds' definitions never change: converted once per process.
    static BUILTIN: LazyLock<Map<String, Value>> = LazyLock::new(|| {
        let mut definitions = Map::new();
        for gv in catalog().all_components() {
            for (name, schema) in &gv.schemas {
                if !definitions.contains_key(name) {
                    definitions.insert(name.clone(), to_v2(schema.clone(), false));
                }
            }
        }
        definitions
    });
    let mut definitions = BUILTIN.clone();
    let mut own = Map::new();
    for t in reg.all() {
        if catalog().schema_name(&t.group, &t.version, &t.kind).is_some() {
            continue;
        }
        let name = format!("{}.{}.{}", super::reverse_group(&t.group), t.version, t.kind);
        let schema = super::own_schema(&t);
        own.insert(name, if t.crd.is_some() { kube_native(schema) } else { to_v2(schema, false) });
    }
    let names: BTreeSet<String> = definitions.keys().chain(own.keys()).cloned().collect();
    for (name, mut schema) in own {
        drop_dangling(&mut schema, &names);
        definitions.insert(name, schema);
    }
    json!({
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": "v1.33.0"},
        "paths": {},
        "definitions": definitions,
    })
}

const OBJECT_META: &str = "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";

/// A custom resource's definition as apiextensions-apiserver publishes it in v2
/// (`pkg/controller/openapi/builder/builder.go`, `buildKubeNative`): a schema that keeps
/// unknown fields at its root is only `type: object` (kubectl would take its properties as
/// the only ones allowed); otherwise the converted schema with `metadata` (ObjectMeta),
/// `apiVersion` and `kind`, and the same three on embedded resources.
fn kube_native(schema: Value) -> Value {
    let gvk = schema.get("x-kubernetes-group-version-kind").cloned();
    let mut out = if schema.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true)) {
        json!({"type": "object"})
    } else {
        let mut out = to_v2(schema, true);
        if let Some(props) = out.as_object_mut().map(|m| m.entry("properties").or_insert_with(|| json!({}))) {
            props["metadata"] = json!({"$ref": OBJECT_META});
        }
        type_meta(&mut out);
        embedded(&mut out);
        out
    };
    if let Some(gvk) = gvk {
        out["x-kubernetes-group-version-kind"] = gvk;
    }
    out
}

/// `apiVersion` and `kind` as string properties (`addTypeMetaProperties`).
fn type_meta(schema: &mut Value) {
    if let Some(Value::Object(props)) = schema.get_mut("properties") {
        for key in ["apiVersion", "kind"] {
            props.entry(key).or_insert_with(|| json!({"type": "string"}));
        }
    }
}

/// `addEmbeddedProperties`: an `x-kubernetes-embedded-resource` object with properties gets
/// `apiVersion`, `kind` and an object `metadata`.
fn embedded(schema: &mut Value) {
    let Some(m) = schema.as_object_mut() else { return };
    if m.get("x-kubernetes-embedded-resource") == Some(&Value::Bool(true))
        && let Some(Value::Object(props)) = m.get_mut("properties")
    {
        props.entry("metadata").or_insert_with(|| json!({"type": "object"}));
        for key in ["apiVersion", "kind"] {
            props.entry(key).or_insert_with(|| json!({"type": "string"}));
        }
    }
    if let Some(Value::Object(props)) = m.get_mut("properties") {
        props.values_mut().for_each(embedded);
    }
    for key in ["items", "additionalProperties"] {
        if let Some(sub) = m.get_mut(key) {
            embedded(sub);
        }
    }
}

/// One v3 schema as v2 writes it (see the module page); `crd` for a custom resource's.
fn to_v2(mut schema: Value, crd: bool) -> Value {
    let Some(m) = schema.as_object_mut() else { return schema };
    if let Some(Value::String(r)) = m.get_mut("$ref")
        && let Some(name) = r.strip_prefix(V3_REF)
    {
        *r = format!("{V2_REF}{name}");
    }
    // `allOf: [{$ref}]` (a reference with a description beside it) → the reference.
    if let Some(Value::Array(all)) = m.get("allOf")
        && let [only] = all.as_slice()
        && let Some(r) = only.get("$ref").and_then(Value::as_str)
    {
        let r = r.replace(V3_REF, V2_REF);
        m.remove("allOf");
        m.insert("$ref".into(), json!(r));
    }
    // Swagger 2.0 has no oneOf, anyOf or not (the real v2 describes such types, e.g.
    // JSONSchemaPropsOrBool, without a type), and kube-openapi's v2 reader no allOf.
    for junctor in ["allOf", "oneOf", "anyOf", "not"] {
        m.remove(junctor);
    }
    if crd {
        if m.remove("nullable") == Some(Value::Bool(true)) {
            for key in ["type", "items", "properties"] {
                m.remove(key);
            }
        }
        if m.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true)) {
            m.remove("items");
            m.remove("properties");
        }
        if m.get("type") == Some(&json!("array")) && !m.contains_key("items") {
            m.remove("type");
        }
        // A nullable field is not required in v2.
        let nullable: Vec<String> = m
            .get("properties")
            .and_then(Value::as_object)
            .map(|p| p.iter().filter(|(_, s)| s["nullable"] == json!(true)).map(|(k, _)| k.clone()).collect())
            .unwrap_or_default();
        if let Some(Value::Array(required)) = m.get_mut("required") {
            required.retain(|r| r.as_str().is_none_or(|r| !nullable.iter().any(|n| n == r)));
        }
        // CEL rules and other v3-only keywords have no place in v2.
        m.remove("x-kubernetes-validations");
    }
    if let Some(Value::Object(props)) = m.get_mut("properties") {
        for (_, p) in props.iter_mut() {
            *p = to_v2(p.take(), crd);
        }
    }
    for key in ["items", "additionalProperties"] {
        if let Some(sub) = m.get_mut(key)
            && sub.is_object()
        {
            *sub = to_v2(sub.take(), crd);
        }
    }
    schema
}

/// Drops `$ref`s to definitions the document lacks (the field then accepts anything).
fn drop_dangling(schema: &mut Value, names: &BTreeSet<String>) {
    let Some(m) = schema.as_object_mut() else { return };
    if let Some(r) = m.get("$ref").and_then(Value::as_str)
        && !r.strip_prefix(V2_REF).is_some_and(|n| names.contains(n))
    {
        m.remove("$ref");
    }
    if let Some(Value::Object(props)) = m.get_mut("properties") {
        for p in props.values_mut() {
            drop_dangling(p, names);
        }
    }
    for key in ["items", "additionalProperties"] {
        if let Some(sub) = m.get_mut(key) {
            drop_dangling(sub, names);
        }
    }
    if let Some(Value::Array(all)) = m.get_mut("allOf") {
        for s in all {
            drop_dangling(s, names);
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn built_in_definitions_reference_each_other_as_v2_does() {
        let doc = document(&Registry::with_builtins());
        let defs = doc["definitions"].as_object().expect("definitions");
        let cm = &defs["io.k8s.api.core.v1.ConfigMap"];
        assert_eq!(cm["x-kubernetes-group-version-kind"][0]["kind"], "ConfigMap");
        assert_eq!(
            cm["properties"]["metadata"]["$ref"],
            "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
        );
        assert!(cm["properties"]["metadata"].get("allOf").is_none());
        // Closed under references: every $ref names a definition.
        let text = doc.to_string();
        for piece in text.split("\"$ref\":\"").skip(1) {
            let r = piece.split('"').next().unwrap_or_default();
            let name = r.strip_prefix(V2_REF).unwrap_or_else(|| panic!("a v3 reference left: {r}"));
            assert!(defs.contains_key(name), "dangling {r}");
        }
    }

    #[test]
    fn custom_resource_schemas_convert_like_the_apiextensions_server() {
        let crd = |s: Value| to_v2(s, true);
        assert_eq!(
            crd(json!({"type": "object", "nullable": true, "properties": {"a": {"type": "string"}}})),
            json!({})
        );
        assert_eq!(
            crd(
                json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true, "properties": {"a": {}}})
            ),
            json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true})
        );
        assert_eq!(
            crd(json!({"type": "object", "required": ["a", "b"],
                       "properties": {"a": {"type": "string", "nullable": true}, "b": {"type": "string"}},
                       "oneOf": [{"required": ["a"]}], "x-kubernetes-validations": [{"rule": "true"}]})),
            json!({"type": "object", "required": ["b"], "properties": {"a": {}, "b": {"type": "string"}}})
        );
        assert_eq!(
            crd(
                json!({"type": "array", "x-kubernetes-preserve-unknown-fields": true, "items": {"type": "string"}})
            ),
            json!({"x-kubernetes-preserve-unknown-fields": true})
        );
    }

    #[test]
    fn custom_resources_get_type_and_object_meta_unless_they_keep_unknown_fields() {
        let gvk = json!([{"group": "example.com", "version": "v1", "kind": "Widget"}]);
        let out = kube_native(json!({"type": "object", "x-kubernetes-group-version-kind": gvk,
                                     "properties": {"spec": {"type": "object", "properties": {
                                         "pod": {"type": "object", "x-kubernetes-embedded-resource": true,
                                                 "properties": {"spec": {"type": "object"}}}}}}}));
        assert_eq!(out["properties"]["metadata"]["$ref"], OBJECT_META);
        assert_eq!(
            (&out["properties"]["apiVersion"]["type"], &out["properties"]["kind"]["type"]),
            (&json!("string"), &json!("string"))
        );
        let pod = &out["properties"]["spec"]["properties"]["pod"]["properties"];
        assert_eq!((&pod["kind"]["type"], &pod["metadata"]["type"]), (&json!("string"), &json!("object")));
        assert_eq!(out["x-kubernetes-group-version-kind"], gvk);
        let free = kube_native(json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                                      "x-kubernetes-group-version-kind": gvk, "properties": {"a": {}}}));
        assert_eq!(free, json!({"type": "object", "x-kubernetes-group-version-kind": gvk}));
    }

    #[test]
    fn dangling_references_are_dropped() {
        let names: BTreeSet<String> = ["a".to_owned()].into();
        let mut s = json!({"properties": {"x": {"$ref": "#/definitions/a"}, "y": {"$ref": "#/definitions/b", "description": "d"}}});
        drop_dangling(&mut s, &names);
        assert_eq!(s, json!({"properties": {"x": {"$ref": "#/definitions/a"}, "y": {"description": "d"}}}));
    }
}

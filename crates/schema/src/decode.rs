//! The Go types of a CRD's `openAPIV3Schema`, as kube-apiserver's decoder checks them
//! before anything else: a schema field of the wrong JSON type (`required: [false]`,
//! `properties: "x"`, `minLength: 1.5`) refuses the whole request with 400 and the
//! decoder's own words, e.g.
//! `CustomResourceDefinition in version "v1" cannot be handled as a CustomResourceDefinition:
//! json: cannot unmarshal bool into Go struct field JSONSchemaProps.spec.versions.schema.openAPIV3Schema.required of type string`.
//! Go reports the first mismatch with the path of JSON field names from the root (no list
//! indices or map keys) and the innermost Go struct's name.

use serde_json::Value;

/// The Go type of a `JSONSchemaProps` field.
#[derive(Clone, Copy)]
enum Go {
    String,
    Bool,
    Int64,
    Float64,
    Strings,
    Props,
    PropsList,
    PropsMap,
    PropsOrArray,
    PropsOrBool,
    Any,
    Validations,
}

fn field_type(name: &str) -> Option<Go> {
    Some(match name {
        "id"
        | "$schema"
        | "$ref"
        | "description"
        | "type"
        | "format"
        | "title"
        | "pattern"
        | "x-kubernetes-list-type"
        | "x-kubernetes-map-type" => Go::String,
        "exclusiveMaximum"
        | "exclusiveMinimum"
        | "uniqueItems"
        | "nullable"
        | "x-kubernetes-preserve-unknown-fields"
        | "x-kubernetes-embedded-resource"
        | "x-kubernetes-int-or-string" => Go::Bool,
        "maxLength" | "minLength" | "maxItems" | "minItems" | "maxProperties" | "minProperties" => Go::Int64,
        "maximum" | "minimum" | "multipleOf" => Go::Float64,
        "required" | "x-kubernetes-list-map-keys" => Go::Strings,
        "not" => Go::Props,
        "allOf" | "oneOf" | "anyOf" => Go::PropsList,
        "properties" | "patternProperties" | "definitions" => Go::PropsMap,
        "items" => Go::PropsOrArray,
        "additionalProperties" | "additionalItems" => Go::PropsOrBool,
        "enum" | "default" | "example" | "externalDocs" | "dependencies" => Go::Any,
        "x-kubernetes-validations" => Go::Validations,
        _ => return None,
    })
}

/// What Go calls the JSON value `v` in an unmarshal error.
fn json_kind(v: &Value) -> String {
    match v {
        Value::Bool(_) => "bool".into(),
        Value::String(_) => "string".into(),
        Value::Array(_) => "array".into(),
        Value::Object(_) => "object".into(),
        Value::Number(n) => format!("number {n}"),
        Value::Null => "null".into(),
    }
}

fn mismatch(v: &Value, path: &str, go_type: &str) -> String {
    format!(
        "json: cannot unmarshal {} into Go struct field JSONSchemaProps.{path} of type {go_type}",
        json_kind(v)
    )
}

/// The first type mismatch in a schema at `path`, in the decoder's words.
fn check_props(schema: &Value, path: &str) -> Option<String> {
    let Value::Object(map) = schema else {
        return (!schema.is_null()).then(|| mismatch(schema, path, "v1.JSONSchemaProps"));
    };
    for (name, v) in map {
        let Some(go) = field_type(name) else { continue };
        let here = format!("{path}.{name}");
        let found = match (go, v) {
            (_, Value::Null) | (Go::Any, _) => None,
            (Go::String, Value::String(_)) | (Go::Bool, Value::Bool(_)) => None,
            (Go::String, _) => Some(mismatch(v, &here, "string")),
            (Go::Bool, _) => Some(mismatch(v, &here, "bool")),
            (Go::Int64, Value::Number(n)) if n.is_i64() || n.is_u64() => None,
            (Go::Int64, _) => Some(mismatch(v, &here, "int64")),
            (Go::Float64, Value::Number(_)) => None,
            (Go::Float64, _) => Some(mismatch(v, &here, "float64")),
            (Go::Strings, Value::Array(items)) => {
                items.iter().find(|i| !i.is_string() && !i.is_null()).map(|i| mismatch(i, &here, "string"))
            }
            (Go::Strings, _) => Some(mismatch(v, &here, "[]string")),
            (Go::Props, _) => check_props(v, &here),
            (Go::PropsList, Value::Array(items)) => items.iter().find_map(|i| check_props(i, &here)),
            (Go::PropsList, _) => Some(mismatch(v, &here, "[]v1.JSONSchemaProps")),
            (Go::PropsMap, Value::Object(props)) => props.values().find_map(|p| check_props(p, &here)),
            (Go::PropsMap, _) => Some(mismatch(v, &here, "map[string]v1.JSONSchemaProps")),
            (Go::PropsOrArray, Value::Array(items)) => items.iter().find_map(|i| check_props(i, &here)),
            (Go::PropsOrArray, _) => check_props(v, &here),
            (Go::PropsOrBool, Value::Bool(_)) => None,
            (Go::PropsOrBool, _) => check_props(v, &here),
            (Go::Validations, Value::Array(rules)) => rules.iter().find_map(|r| match r {
                Value::Object(_) => None,
                other => Some(mismatch(other, &here, "v1.ValidationRule")),
            }),
            (Go::Validations, _) => Some(mismatch(v, &here, "v1.ValidationRules")),
        };
        if found.is_some() {
            return found;
        }
    }
    None
}

/// Why the CRD `crd` cannot be decoded, in the API server's words, if it cannot.
pub fn decode_error(crd: &Value) -> Option<String> {
    let versions = crd.pointer("/spec/versions").and_then(Value::as_array)?;
    let found = versions.iter().find_map(|v| {
        let schema = v.pointer("/schema/openAPIV3Schema")?;
        check_props(schema, "spec.versions.schema.openAPIV3Schema")
    })?;
    Some(format!(
        "CustomResourceDefinition in version \"v1\" cannot be handled as a CustomResourceDefinition: {found}"
    ))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::decode_error;

    fn crd(schema: serde_json::Value) -> serde_json::Value {
        json!({"spec": {"versions": [{"name": "v1", "schema": {"openAPIV3Schema": schema}}]}})
    }

    #[test]
    fn wrong_json_types_are_refused_in_the_decoders_words() {
        let e = decode_error(&crd(json!({"type": "object", "required": [false]}))).expect("refused");
        assert_eq!(
            e,
            "CustomResourceDefinition in version \"v1\" cannot be handled as a CustomResourceDefinition: json: \
             cannot unmarshal bool into Go struct field JSONSchemaProps.spec.versions.schema.openAPIV3Schema.required \
             of type string"
        );
        let e =
            decode_error(&crd(json!({"type": "object", "properties": {"a": "string"}}))).expect("refused");
        assert!(
            e.ends_with("cannot unmarshal string into Go struct field JSONSchemaProps.spec.versions.schema.openAPIV3Schema.properties of type v1.JSONSchemaProps"),
            "{e}"
        );
        let e = decode_error(&crd(json!({"properties": {"n": {"type": "string", "minLength": 1.5}}})))
            .expect("refused");
        assert!(e.ends_with("cannot unmarshal number 1.5 into Go struct field JSONSchemaProps.spec.versions.schema.openAPIV3Schema.properties.minLength of type int64"), "{e}");
        let ok = crd(json!({"type": "object", "required": ["a"], "additionalProperties": true,
            "properties": {"a": {"type": "string", "enum": [1, "x"], "items": [{"type": "string"}]}}}));
        assert_eq!(decode_error(&ok), None);
    }
}

//! The Swagger 2.0 document as gnostic's OpenAPIv2 protobuf
//! (`application/com.github.proto-openapi.spec.v2@v1.0+protobuf`), the only form client-go
//! asks `/openapi/v2` for (`discovery_client.go`, `openAPIV2mimePb`; it unmarshals the body
//! as `openapi_v2.Document` whatever the Content-Type).
//!
//! The messages are the subset of `openapiv2/OpenAPIv2.proto` (package `openapi.v2`, from
//! google/gnostic) that a document of definitions uses, with its field numbers, encoded by
//! `prost`. Values that are free JSON (`default`, `enum`, `example`, vendor extensions) are
//! gnostic's `Any` with the value's YAML text; JSON is YAML, so that is the value's JSON
//! (kube-openapi's `VendorExtensionToMap` reads it with a YAML parser).

use prost::Message as _;
use serde_json::Value;

/// `openapi.v2.Document` (only what a document of definitions sets).
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct Document {
    #[prost(string, tag = "1")]
    pub(crate) swagger: String,
    #[prost(message, optional, tag = "2")]
    pub(crate) info: Option<Info>,
    #[prost(message, optional, tag = "8")]
    pub(crate) paths: Option<Paths>,
    #[prost(message, optional, tag = "9")]
    pub(crate) definitions: Option<Definitions>,
}

/// `openapi.v2.Info`.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct Info {
    #[prost(string, tag = "1")]
    pub(crate) title: String,
    #[prost(string, tag = "2")]
    pub(crate) version: String,
}

/// `openapi.v2.Paths`, always empty here.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct Paths {}

/// `openapi.v2.Definitions`.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct Definitions {
    #[prost(message, repeated, tag = "1")]
    pub(crate) additional_properties: Vec<NamedSchema>,
}

/// `openapi.v2.NamedSchema`.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct NamedSchema {
    #[prost(string, tag = "1")]
    pub(crate) name: String,
    #[prost(message, optional, tag = "2")]
    pub(crate) value: Option<Schema>,
}

/// `openapi.v2.Any`: a free value as YAML text.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct Any {
    #[prost(string, tag = "2")]
    pub(crate) yaml: String,
}

/// `openapi.v2.NamedAny`.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct NamedAny {
    #[prost(string, tag = "1")]
    pub(crate) name: String,
    #[prost(message, optional, tag = "2")]
    pub(crate) value: Option<Any>,
}

/// `openapi.v2.TypeItem`.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct TypeItem {
    #[prost(string, repeated, tag = "1")]
    pub(crate) value: Vec<String>,
}

/// `openapi.v2.ItemsItem`.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct ItemsItem {
    #[prost(message, repeated, tag = "1")]
    pub(crate) schema: Vec<Schema>,
}

/// `openapi.v2.Properties`.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct Properties {
    #[prost(message, repeated, tag = "1")]
    pub(crate) additional_properties: Vec<NamedSchema>,
}

/// `openapi.v2.AdditionalPropertiesItem`: a schema or a boolean.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct AdditionalPropertiesItem {
    #[prost(oneof = "AdditionalProperties", tags = "1, 2")]
    pub(crate) oneof: Option<AdditionalProperties>,
}

/// The `oneof` of [`AdditionalPropertiesItem`].
#[derive(Clone, PartialEq, prost::Oneof)]
pub(crate) enum AdditionalProperties {
    #[prost(message, boxed, tag = "1")]
    Schema(Box<Schema>),
    #[prost(bool, tag = "2")]
    Boolean(bool),
}

/// `openapi.v2.Schema` (every field but `xml` and `external_docs`).
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct Schema {
    #[prost(string, tag = "1")]
    pub(crate) r#ref: String,
    #[prost(string, tag = "2")]
    pub(crate) format: String,
    #[prost(string, tag = "3")]
    pub(crate) title: String,
    #[prost(string, tag = "4")]
    pub(crate) description: String,
    #[prost(message, optional, tag = "5")]
    pub(crate) default: Option<Any>,
    #[prost(double, tag = "6")]
    pub(crate) multiple_of: f64,
    #[prost(double, tag = "7")]
    pub(crate) maximum: f64,
    #[prost(bool, tag = "8")]
    pub(crate) exclusive_maximum: bool,
    #[prost(double, tag = "9")]
    pub(crate) minimum: f64,
    #[prost(bool, tag = "10")]
    pub(crate) exclusive_minimum: bool,
    #[prost(int64, tag = "11")]
    pub(crate) max_length: i64,
    #[prost(int64, tag = "12")]
    pub(crate) min_length: i64,
    #[prost(string, tag = "13")]
    pub(crate) pattern: String,
    #[prost(int64, tag = "14")]
    pub(crate) max_items: i64,
    #[prost(int64, tag = "15")]
    pub(crate) min_items: i64,
    #[prost(bool, tag = "16")]
    pub(crate) unique_items: bool,
    #[prost(int64, tag = "17")]
    pub(crate) max_properties: i64,
    #[prost(int64, tag = "18")]
    pub(crate) min_properties: i64,
    #[prost(string, repeated, tag = "19")]
    pub(crate) required: Vec<String>,
    #[prost(message, repeated, tag = "20")]
    pub(crate) r#enum: Vec<Any>,
    #[prost(message, optional, tag = "21")]
    pub(crate) additional_properties: Option<AdditionalPropertiesItem>,
    #[prost(message, optional, tag = "22")]
    pub(crate) r#type: Option<TypeItem>,
    #[prost(message, optional, tag = "23")]
    pub(crate) items: Option<ItemsItem>,
    #[prost(message, repeated, tag = "24")]
    pub(crate) all_of: Vec<Schema>,
    #[prost(message, optional, tag = "25")]
    pub(crate) properties: Option<Properties>,
    #[prost(string, tag = "26")]
    pub(crate) discriminator: String,
    #[prost(bool, tag = "27")]
    pub(crate) read_only: bool,
    #[prost(message, optional, tag = "30")]
    pub(crate) example: Option<Any>,
    #[prost(message, repeated, tag = "31")]
    pub(crate) vendor_extension: Vec<NamedAny>,
}

/// The protobuf bytes of a Swagger 2.0 JSON document (as [`super::v2::document`] makes it).
pub fn encode(doc: &Value) -> Vec<u8> {
    let definitions = doc["definitions"]
        .as_object()
        .map(|defs| defs.iter().map(|(name, s)| named(name, s)).collect())
        .unwrap_or_default();
    Document {
        swagger: doc["swagger"].as_str().unwrap_or("2.0").to_owned(),
        info: Some(Info {
            title: doc["info"]["title"].as_str().unwrap_or_default().to_owned(),
            version: doc["info"]["version"].as_str().unwrap_or_default().to_owned(),
        }),
        paths: Some(Paths {}),
        definitions: Some(Definitions { additional_properties: definitions }),
    }
    .encode_to_vec()
}

fn named(name: &str, schema: &Value) -> NamedSchema {
    NamedSchema { name: name.to_owned(), value: Some(schema_of(schema)) }
}

fn any(v: &Value) -> Any {
    Any { yaml: v.to_string() }
}

/// One JSON schema as the message; keywords the message has no field for are left out,
/// except `x-` extensions, which become vendor extensions.
fn schema_of(v: &Value) -> Schema {
    let s = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or_default().to_owned();
    let f = |k: &str| v.get(k).and_then(Value::as_f64).unwrap_or_default();
    let i = |k: &str| v.get(k).and_then(Value::as_i64).unwrap_or_default();
    let b = |k: &str| v.get(k).and_then(Value::as_bool).unwrap_or_default();
    let mut out = Schema {
        r#ref: s("$ref"),
        format: s("format"),
        title: s("title"),
        description: s("description"),
        default: v.get("default").map(any),
        multiple_of: f("multipleOf"),
        maximum: f("maximum"),
        exclusive_maximum: b("exclusiveMaximum"),
        minimum: f("minimum"),
        exclusive_minimum: b("exclusiveMinimum"),
        max_length: i("maxLength"),
        min_length: i("minLength"),
        pattern: s("pattern"),
        max_items: i("maxItems"),
        min_items: i("minItems"),
        unique_items: b("uniqueItems"),
        max_properties: i("maxProperties"),
        min_properties: i("minProperties"),
        required: strings(v.get("required")),
        r#enum: v
            .get("enum")
            .and_then(Value::as_array)
            .map(|e| e.iter().map(any).collect())
            .unwrap_or_default(),
        additional_properties: match v.get("additionalProperties") {
            Some(Value::Bool(b)) => {
                Some(AdditionalPropertiesItem { oneof: Some(AdditionalProperties::Boolean(*b)) })
            }
            Some(sub @ Value::Object(_)) => Some(AdditionalPropertiesItem {
                oneof: Some(AdditionalProperties::Schema(Box::new(schema_of(sub)))),
            }),
            _ => None,
        },
        r#type: match v.get("type") {
            Some(Value::String(t)) => Some(TypeItem { value: vec![t.clone()] }),
            Some(Value::Array(_)) => Some(TypeItem { value: strings(v.get("type")) }),
            _ => None,
        },
        items: match v.get("items") {
            Some(sub @ Value::Object(_)) => Some(ItemsItem { schema: vec![schema_of(sub)] }),
            Some(Value::Array(subs)) => Some(ItemsItem { schema: subs.iter().map(schema_of).collect() }),
            _ => None,
        },
        all_of: v
            .get("allOf")
            .and_then(Value::as_array)
            .map(|a| a.iter().map(schema_of).collect())
            .unwrap_or_default(),
        properties: v
            .get("properties")
            .and_then(Value::as_object)
            .map(|p| Properties { additional_properties: p.iter().map(|(k, s)| named(k, s)).collect() }),
        discriminator: s("discriminator"),
        read_only: b("readOnly"),
        example: v.get("example").map(any),
        vendor_extension: Vec::new(),
    };
    if let Some(m) = v.as_object() {
        out.vendor_extension = m
            .iter()
            .filter(|(k, _)| k.starts_with("x-"))
            .map(|(k, x)| NamedAny { name: k.clone(), value: Some(any(x)) })
            .collect();
    }
    out
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        .unwrap_or_default()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use prost::Message as _;
    use serde_json::json;

    use super::*;

    #[test]
    fn round_trips_through_the_messages() {
        let doc = json!({
            "swagger": "2.0", "info": {"title": "Kubernetes", "version": "v1.33.0"},
            "definitions": {"io.k8s.api.core.v1.ConfigMap": {
                "type": "object",
                "required": ["a"],
                "properties": {
                    "data": {"type": "object", "additionalProperties": {"type": "string"}},
                    "metadata": {"$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"},
                    "mode": {"type": "string", "enum": ["A", "B"], "default": "A"},
                    "n": {"type": "integer", "minimum": 1, "maximum": 10, "format": "int32"},
                    "free": {"type": "object", "additionalProperties": true},
                    "list": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
                },
                "x-kubernetes-group-version-kind": [{"group": "", "kind": "ConfigMap", "version": "v1"}],
            }},
        });
        let bytes = encode(&doc);
        let back = Document::decode(bytes.as_slice()).expect("decodes as a gnostic Document");
        assert_eq!(back.swagger, "2.0");
        let def = &back.definitions.expect("definitions").additional_properties[0];
        assert_eq!(def.name, "io.k8s.api.core.v1.ConfigMap");
        let cm = def.value.as_ref().expect("a schema");
        assert_eq!(cm.r#type.as_ref().expect("a type").value, ["object"]);
        assert_eq!(cm.required, ["a"]);
        let ext = &cm.vendor_extension[0];
        assert_eq!(ext.name, "x-kubernetes-group-version-kind");
        let gvk: Value =
            serde_json::from_str(&ext.value.as_ref().expect("an extension value").yaml).expect("JSON");
        assert_eq!(gvk[0]["kind"], "ConfigMap");
        let props = &cm.properties.as_ref().expect("properties").additional_properties;
        let prop = |n: &str| {
            props.iter().find(|p| p.name == n).expect("the property").value.clone().expect("its schema")
        };
        assert_eq!(prop("metadata").r#ref, "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta");
        assert_eq!(
            prop("data").additional_properties.expect("additionalProperties").oneof,
            Some(AdditionalProperties::Schema(Box::new(Schema {
                r#type: Some(TypeItem { value: vec!["string".into()] }),
                ..Schema::default()
            })))
        );
        assert_eq!(
            prop("free").additional_properties.expect("additionalProperties").oneof,
            Some(AdditionalProperties::Boolean(true))
        );
        let mode = prop("mode");
        assert_eq!(mode.r#enum.iter().map(|a| a.yaml.as_str()).collect::<Vec<_>>(), ["\"A\"", "\"B\""]);
        assert_eq!(mode.default.expect("a default").yaml, "\"A\"");
        let n = prop("n");
        assert_eq!((n.minimum, n.maximum, n.format.as_str()), (1.0, 10.0, "int32"));
        assert_eq!(
            prop("list").items.expect("items").schema[0].r#type.as_ref().expect("a type").value,
            ["string"]
        );
    }
}

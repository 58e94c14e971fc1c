//! [`health_of_json`]: the health of an object given as JSON text, parsing only what the
//! rules read.

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::{Health, health};

/// The fields the rules read ([`health`]'s module docs): everything else of the object (its
/// labels, annotations and owner references, a Secret's `data`, a ConfigMap's) is skipped
/// by the parser instead of built into a [`Value`].
#[derive(Deserialize)]
struct Judged {
    #[serde(rename = "apiVersion")]
    api_version: Option<Value>,
    kind: Option<Value>,
    metadata: Option<JudgedMeta>,
    spec: Option<JudgedSpec>,
    status: Option<Value>,
}

/// `spec` without its pod or job template (`template`, `jobTemplate`): no rule reads one,
/// and it is most of a workload's spec.
struct JudgedSpec(Value);

impl<'de> Deserialize<'de> for JudgedSpec {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Fields;
        impl<'de> serde::de::Visitor<'de> for Fields {
            type Value = Value;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a spec")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
                let mut out = Map::new();
                while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                    if key == "template" || key == "jobTemplate" {
                        map.next_value::<serde::de::IgnoredAny>()?;
                    } else {
                        out.insert(key.into_owned(), map.next_value()?);
                    }
                }
                Ok(Value::Object(out))
            }
            // Not an object: kept as it is, for the rules to say so.
            fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
                Ok(Value::Bool(v))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
                Ok(Value::from(v))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
                Ok(Value::from(v))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
                Ok(Value::from(v))
            }
            fn visit_str<E>(self, v: &str) -> Result<Value, E> {
                Ok(Value::from(v))
            }
            fn visit_unit<E>(self) -> Result<Value, E> {
                Ok(Value::Null)
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
                let mut out = Vec::new();
                while let Some(v) = seq.next_element()? {
                    out.push(v);
                }
                Ok(Value::Array(out))
            }
        }
        d.deserialize_any(Fields).map(JudgedSpec)
    }
}

/// `generic.rs` reads these three of `metadata`, and no rule reads another.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct JudgedMeta {
    deletion_timestamp: Option<Value>,
    finalizers: Option<Value>,
    generation: Option<Value>,
}

/// The health of an object given as JSON text, as [`health`] would judge it parsed: the
/// same answer, for a fraction of the parsing (a controller judges its children on every
/// status write). Text that is not a JSON object is an error.
pub fn health_of_json(text: &str) -> Result<Health, serde_json::Error> {
    let judged: Judged = serde_json::from_str(text)?;
    let mut object = Map::new();
    let put = |map: &mut Map<String, Value>, key: &str, value: Option<Value>| {
        if let Some(value) = value {
            map.insert(key.to_owned(), value);
        }
    };
    put(&mut object, "apiVersion", judged.api_version);
    put(&mut object, "kind", judged.kind);
    if let Some(meta) = judged.metadata {
        let mut metadata = Map::new();
        put(&mut metadata, "deletionTimestamp", meta.deletion_timestamp);
        put(&mut metadata, "finalizers", meta.finalizers);
        put(&mut metadata, "generation", meta.generation);
        object.insert("metadata".to_owned(), Value::Object(metadata));
    }
    put(&mut object, "spec", judged.spec.map(|s| s.0));
    put(&mut object, "status", judged.status);
    Ok(health(&Value::Object(object)))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// Every object the rules have a case for, and a few they judge on metadata alone.
    fn objects() -> Vec<Value> {
        vec![
            json!({"apiVersion": "apps/v1", "kind": "Deployment",
                   "metadata": {"name": "shop", "generation": 2, "labels": {"a": "b"},
                                "ownerReferences": [{"kind": "WebApp", "name": "shop", "uid": "u"}]},
                   "spec": {"replicas": 2, "template": {"spec": {"containers": [{"name": "web", "image": "nginx"}]}}},
                   "status": {"observedGeneration": 2, "replicas": 2, "updatedReplicas": 2,
                              "readyReplicas": 1, "availableReplicas": 1}}),
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "generation": 3},
                   "status": {"observedGeneration": 2}}),
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "t"}, "data": {"token": "eA=="}}),
            json!({"apiVersion": "v1", "kind": "Secret",
                   "metadata": {"name": "t", "deletionTimestamp": "2026-01-01T00:00:00Z", "finalizers": ["x/y"]}}),
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
                   "spec": {"type": "LoadBalancer"}, "status": {"loadBalancer": {}}}),
            json!({"apiVersion": "example.com/v1", "kind": "Shop", "metadata": {"name": "s", "generation": 1},
                   "status": {"observedGeneration": 1,
                              "conditions": [{"type": "Ready", "status": "False", "reason": "Waiting", "message": "m"}]}}),
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "bad"},
                   "status": {"replicas": "two"}}),
            json!({"kind": "Deployment", "metadata": {"name": "no-api-version"}}),
            // The templates are skipped: the rest of the spec still counts.
            json!({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "c"},
                   "spec": {"schedule": "@hourly", "suspend": "yes",
                            "jobTemplate": {"spec": {"template": {"spec": {"containers": []}}}}}}),
            json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "s", "generation": 1},
                   "spec": {"replicas": 3, "updateStrategy": {"type": "OnDelete"},
                            "template": {"spec": {"containers": [{"name": "db", "image": "pg"}]}}},
                   "status": {"observedGeneration": 1, "replicas": 3, "readyReplicas": 3}}),
            // A spec that is no object reaches the rules as it is.
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "odd"}, "spec": [1, "x", null, 2.5]}),
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "odd"}, "spec": "replicas"}),
        ]
    }

    #[test]
    fn judges_the_text_as_the_parsed_object() {
        for object in objects() {
            let text = serde_json::to_string(&object).expect("serializes");
            assert_eq!(health_of_json(&text).expect("an object"), health(&object), "{object}");
        }
    }

    #[test]
    fn text_that_is_no_object_is_an_error() {
        assert!(health_of_json("[1, 2]").is_err());
        assert!(health_of_json("{\"kind\": ").is_err());
    }
}

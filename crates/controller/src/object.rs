//! [`Object`]: how the controller's caches hold an object — its metadata, parsed, and the
//! rest of it as the JSON text the API server sent.
//!
//! kube's `DynamicObject` keeps an object as a `serde_json::Value` tree, about ten times
//! the size of its JSON; the controller reads only metadata (names, labels, owner
//! references, versions, finalizers), and the script wants JSON text anyway (QuickJS parses
//! text faster than anything builds JS values from Rust). So the rest of the object (`spec`,
//! `status`, `data`, ...) is kept as one string, and an object handed to the script is that
//! string with its metadata serialized in front. `managedFields` are dropped on arrival;
//! `apiVersion` and `kind` too (the cache knows its kind; items of a list of a built-in
//! kind do not carry them).

use std::borrow::Cow;
use std::fmt;

use kube::api::{ApiResource, ObjectMeta, TypeMeta};
use kube::core::DynamicResourceScope;
use serde::de::{MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;

/// A cached object (see the module docs): what the controller's caches hold.
#[derive(Clone, Debug, Default)]
pub struct Object {
    /// `apiVersion` and `kind`, when set by the controller (never by the cache).
    pub(crate) types: Option<TypeMeta>,
    pub(crate) metadata: ObjectMeta,
    /// The other top-level fields as they arrived: `"spec":{...},"status":{...}`, without
    /// the braces; empty when there are none.
    rest: Box<str>,
}

impl Object {
    /// The object as JSON text, with `api_version` and `kind`.
    #[must_use]
    pub fn to_json_as(&self, api_version: &str, kind: &str) -> String {
        let mut out = Vec::with_capacity(self.rest.len() + 512);
        out.extend_from_slice(b"{\"apiVersion\":");
        // Writing strings and metadata (string keys, no non-finite floats) into a `Vec`
        // cannot fail.
        let _ = serde_json::to_writer(&mut out, api_version);
        out.extend_from_slice(b",\"kind\":");
        let _ = serde_json::to_writer(&mut out, kind);
        out.extend_from_slice(b",\"metadata\":");
        if serde_json::to_writer(&mut out, &self.metadata).is_err() {
            out.extend_from_slice(b"{}");
        }
        if !self.rest.is_empty() {
            out.push(b',');
            out.extend_from_slice(self.rest.as_bytes());
        }
        out.push(b'}');
        // Only UTF-8 went in.
        String::from_utf8(out).unwrap_or_default()
    }

    /// The object as JSON text, typed by its own `types` or else by `ar`.
    pub(crate) fn to_json(&self, ar: &ApiResource) -> String {
        match &self.types {
            Some(t) => self.to_json_as(&t.api_version, &t.kind),
            None => self.to_json_as(&ar.api_version, &ar.kind),
        }
    }

    /// Bytes held by this object's JSON text (for the memory figures).
    #[cfg(test)]
    pub(crate) fn rest_len(&self) -> usize {
        self.rest.len()
    }
}

/// `s` as a JSON string literal.
fn push_str_json(out: &mut String, s: &str) {
    // Serializing a `&str` cannot fail.
    out.push_str(&serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_owned()));
}

impl kube::Resource for Object {
    type DynamicType = ApiResource;
    type Scope = DynamicResourceScope;

    fn group(dt: &ApiResource) -> Cow<'_, str> {
        dt.group.as_str().into()
    }

    fn version(dt: &ApiResource) -> Cow<'_, str> {
        dt.version.as_str().into()
    }

    fn kind(dt: &ApiResource) -> Cow<'_, str> {
        dt.kind.as_str().into()
    }

    fn api_version(dt: &ApiResource) -> Cow<'_, str> {
        dt.api_version.as_str().into()
    }

    fn plural(dt: &ApiResource) -> Cow<'_, str> {
        dt.plural.as_str().into()
    }

    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

impl Serialize for Object {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let (api_version, kind) =
            self.types.as_ref().map_or(("", ""), |t| (t.api_version.as_str(), t.kind.as_str()));
        let text = self.to_json_as(api_version, kind);
        let raw = RawValue::from_string(text).map_err(serde::ser::Error::custom)?;
        raw.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Object {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(ObjectVisitor)
    }
}

struct ObjectVisitor;

impl<'de> Visitor<'de> for ObjectVisitor {
    type Value = Object;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a Kubernetes object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Object, A::Error> {
        let mut metadata: Option<ObjectMeta> = None;
        let mut types = (None::<String>, None::<String>);
        let mut rest = String::new();
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            match key.as_ref() {
                "metadata" => {
                    let mut m: ObjectMeta = map.next_value()?;
                    m.managed_fields = None;
                    metadata = Some(m);
                }
                "apiVersion" => types.0 = Some(map.next_value()?),
                "kind" => types.1 = Some(map.next_value()?),
                _ => {
                    // The value's text as it arrived (kube reads watch and list
                    // responses with `serde_json`, which hands it over as is).
                    let raw: Box<RawValue> = map.next_value()?;
                    if !rest.is_empty() {
                        rest.push(',');
                    }
                    push_str_json(&mut rest, &key);
                    rest.push(':');
                    rest.push_str(raw.get());
                }
            }
        }
        // A list item of a built-in kind has neither; the cache knows its kind.
        let _ = types;
        Ok(Object { types: None, metadata: metadata.unwrap_or_default(), rest: rest.into_boxed_str() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::api::{DynamicObject, GroupVersionKind};
    use serde_json::{Value, json};

    fn ar() -> ApiResource {
        ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("apps", "v1", "Deployment"), "deployments")
    }

    #[test]
    fn the_text_round_trips_without_managed_fields() {
        let sent = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "prod", "resourceVersion": "7", "labels": {"app": "web"},
                         "managedFields": [{"manager": "kubectl", "operation": "Apply"}]},
            "spec": {"replicas": 2, "template": {"spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}}},
            "status": {"readyReplicas": 1, "ratio": 0.5, "text": "a \"quoted\" é"}
        });
        let o: Object = serde_json::from_str(&sent.to_string()).expect("object");
        assert_eq!(o.metadata.name.as_deref(), Some("web"));
        assert!(o.metadata.managed_fields.is_none());
        let back: Value = serde_json::from_str(&o.to_json(&ar())).expect("json");
        let mut want = sent.clone();
        want["metadata"].as_object_mut().map(|m| m.remove("managedFields"));
        assert_eq!(back, want);
        // Through `Serialize` (what the applier and the status writer use), typed.
        let typed = Object {
            types: Some(TypeMeta { api_version: "apps/v1".into(), kind: "Deployment".into() }),
            ..o.clone()
        };
        assert_eq!(serde_json::to_value(&typed).expect("value"), want);
        let dynamic: DynamicObject = serde_json::from_str(&typed.to_json(&ar())).expect("dynamic");
        assert_eq!(dynamic.data["spec"]["replicas"], 2);
    }

    #[test]
    fn an_object_with_metadata_only_and_list_items_without_a_kind() {
        let o: Object = serde_json::from_str(r#"{"metadata":{"name":"x"}}"#).expect("object");
        assert_eq!(o.rest_len(), 0);
        let back: Value = serde_json::from_str(&o.to_json_as("v1", "ConfigMap")).expect("json");
        assert_eq!(back, json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}));
        // Read from a `Value` (serde_json writes the text of each field).
        let o: Object =
            serde_json::from_value(json!({"metadata": {"name": "x"}, "data": {"k": "v"}})).expect("object");
        let back: Value = serde_json::from_str(&o.to_json_as("v1", "ConfigMap")).expect("json");
        assert_eq!(back["data"], json!({"k": "v"}));
    }
}

//! [`Object`]: how the controller's caches hold an object — the metadata the controller
//! reads, indexed, and everything else as the JSON text the API server sent.
//!
//! kube's `DynamicObject` keeps an object as a `serde_json::Value` tree, about ten times
//! the size of its JSON, and even a parsed `ObjectMeta` costs more than the object's text
//! (its labels alone are a B-tree node of eleven slots). The controller reads names,
//! versions, labels, annotations, owner references and finalizers; the script wants JSON
//! text anyway (QuickJS parses text faster than anything builds JS values from Rust). So
//! an [`Object`] keeps those metadata fields in compact form, once, and the rest of the
//! metadata and of the object as the text that arrived; the object handed to the script is
//! that text with the indexed fields written back in front. `managedFields` are dropped
//! on arrival, `apiVersion` and `kind` too (the cache knows its kind; items of a list of a
//! built-in kind do not carry them).
//!
//! [`Wire`] is the same object as kube's watcher reads it: the watcher needs a
//! `kube::Resource`, whose `meta()` is a full `ObjectMeta`, which the cache does not keep.
//! `Wire<true>` asks for `PartialObjectMetadata` (kube's `Resource::metadata_api`): the
//! server sends the metadata alone, read straight into an [`Object`] with no other fields.

use std::borrow::Cow;
use std::fmt;

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{ApiResource, ObjectMeta, TypeMeta};
use kube::core::DynamicResourceScope;
use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;

/// The field manager of every operator before operators got names of their own: an
/// object whose `managedFields` name it is noted (see `managers`, which moves its fields).
pub(crate) const FORMER_MANAGER: &str = "ctop";

/// A cached object (see the module docs): what the controller's caches hold.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Object {
    /// `apiVersion` and `kind`, when set by the controller (never by the cache).
    pub(crate) types: Option<Box<TypeMeta>>,
    name: Box<str>,
    namespace: Option<Box<str>>,
    uid: Option<Box<str>>,
    resource_version: Option<Box<str>>,
    generation: Option<i64>,
    labels: Pairs,
    annotations: Pairs,
    owner_references: Box<[OwnerReference]>,
    finalizers: Box<[String]>,
    /// Whether `metadata.deletionTimestamp` is set (its text is in `meta_rest`).
    deleting: bool,
    /// Whether a `managedFields` entry names the field manager every operator had before
    /// operators got names of their own (see `managers`); the entries are not kept.
    former_manager: bool,
    /// The other metadata fields as they arrived (`"creationTimestamp":"...",...`, without
    /// the braces); empty when there are none.
    meta_rest: Box<str>,
    /// The other top-level fields as they arrived: `"spec":{...},"status":{...}`, without
    /// the braces; empty when there are none.
    rest: Box<str>,
    /// Its health, once asked for (see [`Object::health`]).
    health: HealthMemo,
}

/// An object's health, worked out at most once: an `Object` is never changed in place (a
/// new version is a new `Object`), so the answer holds as long as the object is kept, and
/// goes with it. Not part of an object's equality.
#[derive(Clone, Default)]
struct HealthMemo(std::sync::OnceLock<Option<Box<ctop_health::Health>>>);

impl PartialEq for HealthMemo {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl fmt::Debug for HealthMemo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.get().is_some() { "HealthMemo(known)" } else { "HealthMemo" })
    }
}

/// Labels or annotations: pairs sorted by key, looked up by binary search.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Pairs(Box<[(Box<str>, Box<str>)]>);

impl Pairs {
    /// The value of `key`.
    #[must_use]
    pub fn get(&self, key: &str) -> Option<&str> {
        let i = self.0.binary_search_by(|(k, _)| (**k).cmp(key)).ok()?;
        Some(&self.0[i].1)
    }

    /// The pairs, by key.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(k, v)| (&**k, &**v))
    }

    /// Whether there are none.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn from_map(map: std::collections::BTreeMap<String, String>) -> Self {
        Self(map.into_iter().map(|(k, v)| (k.into_boxed_str(), v.into_boxed_str())).collect())
    }
}

impl Serialize for Pairs {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.iter())
    }
}

impl Object {
    /// `metadata.name`.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// `metadata.namespace`.
    #[must_use]
    pub fn namespace(&self) -> Option<&str> {
        self.namespace.as_deref()
    }

    /// `metadata.uid`.
    #[must_use]
    pub fn uid(&self) -> Option<&str> {
        self.uid.as_deref()
    }

    /// `metadata.resourceVersion`.
    #[must_use]
    pub fn resource_version(&self) -> Option<&str> {
        self.resource_version.as_deref()
    }

    /// `metadata.generation`.
    #[must_use]
    pub fn generation(&self) -> Option<i64> {
        self.generation
    }

    /// `metadata.labels`.
    #[must_use]
    pub fn labels(&self) -> &Pairs {
        &self.labels
    }

    /// `metadata.annotations`.
    #[must_use]
    pub fn annotations(&self) -> &Pairs {
        &self.annotations
    }

    /// `metadata.ownerReferences`.
    #[must_use]
    pub fn owner_references(&self) -> &[OwnerReference] {
        &self.owner_references
    }

    /// `metadata.finalizers`.
    #[must_use]
    pub fn finalizers(&self) -> &[String] {
        &self.finalizers
    }

    /// Whether the object is being deleted (`metadata.deletionTimestamp` is set).
    #[must_use]
    pub fn is_deleting(&self) -> bool {
        self.deleting
    }

    /// Whether a `managedFields` entry of the object names the former field manager of
    /// every operator, `ctop` (see `managers`).
    #[must_use]
    pub(crate) fn has_former_manager(&self) -> bool {
        self.former_manager
    }

    /// A reference to the object as a kind of `ar` (for events).
    pub(crate) fn reference(&self, ar: &ApiResource) -> ObjectReference {
        ObjectReference {
            api_version: Some(ar.api_version.clone()),
            kind: Some(ar.kind.clone()),
            name: Some(self.name.to_string()),
            namespace: self.namespace.as_deref().map(str::to_owned),
            uid: self.uid.as_deref().map(str::to_owned),
            resource_version: self.resource_version.as_deref().map(str::to_owned),
            ..ObjectReference::default()
        }
    }

    /// The same object typed as a kind of `ar` (so that it serializes its `apiVersion` and
    /// `kind`).
    pub(crate) fn typed(&self, ar: &ApiResource) -> Self {
        Self {
            types: Some(Box::new(TypeMeta { api_version: ar.api_version.clone(), kind: ar.kind.clone() })),
            ..self.clone()
        }
    }

    /// The object as JSON text, with `api_version` and `kind`.
    #[must_use]
    pub fn to_json_as(&self, api_version: &str, kind: &str) -> String {
        let mut out = Vec::with_capacity(self.rest.len() + self.meta_rest.len() + 512);
        out.extend_from_slice(b"{\"apiVersion\":");
        // Writing strings, integers and string maps into a `Vec` cannot fail.
        let _ = serde_json::to_writer(&mut out, api_version);
        out.extend_from_slice(b",\"kind\":");
        let _ = serde_json::to_writer(&mut out, kind);
        out.extend_from_slice(b",\"metadata\":{\"name\":");
        let _ = serde_json::to_writer(&mut out, &*self.name);
        // `,"key":value` for each indexed field that is set.
        fn field<T: Serialize + ?Sized>(out: &mut Vec<u8>, key: &str, value: &T) {
            out.push(b',');
            let _ = serde_json::to_writer(&mut *out, key);
            out.push(b':');
            let _ = serde_json::to_writer(&mut *out, value);
        }
        if let Some(ns) = &self.namespace {
            field(&mut out, "namespace", ns);
        }
        if let Some(uid) = &self.uid {
            field(&mut out, "uid", uid);
        }
        if let Some(rv) = &self.resource_version {
            field(&mut out, "resourceVersion", rv);
        }
        if let Some(g) = self.generation {
            field(&mut out, "generation", &g);
        }
        if !self.labels.is_empty() {
            field(&mut out, "labels", &self.labels);
        }
        if !self.annotations.is_empty() {
            field(&mut out, "annotations", &self.annotations);
        }
        if !self.owner_references.is_empty() {
            field(&mut out, "ownerReferences", &self.owner_references);
        }
        if !self.finalizers.is_empty() {
            field(&mut out, "finalizers", &self.finalizers);
        }
        if !self.meta_rest.is_empty() {
            out.push(b',');
            out.extend_from_slice(self.meta_rest.as_bytes());
        }
        out.push(b'}');
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

    /// The object's health by kstatus' rules (`ctop-health`), typed by its own `types` or
    /// else by `ar` (the cache's kind, which never changes for a cached object); `None` when
    /// the rules cannot read it. Worked out on the first call only: a skipped reconcile and
    /// the next one judge an unchanged child without parsing it again.
    pub(crate) fn health(&self, ar: &ApiResource) -> Option<&ctop_health::Health> {
        self.health
            .0
            .get_or_init(|| ctop_health::health_of_json(&self.to_json(ar)).ok().map(Box::new))
            .as_deref()
    }

    /// The object's `status` (`null` when it has none).
    pub(crate) fn status_json(&self) -> serde_json::Value {
        if self.rest.is_empty() {
            return serde_json::Value::Null;
        }
        #[derive(serde::Deserialize)]
        struct Rest {
            #[serde(default)]
            status: serde_json::Value,
        }
        serde_json::from_str::<Rest>(&format!("{{{}}}", self.rest))
            .map_or(serde_json::Value::Null, |r| r.status)
    }

    /// Bytes held by this object's JSON text (for the memory figures).
    #[cfg(test)]
    pub(crate) fn rest_len(&self) -> usize {
        self.rest.len()
    }
}

impl ctop_applier::CachedMeta for Object {
    fn name(&self) -> Option<&str> {
        Some(&self.name)
    }
    fn namespace(&self) -> Option<&str> {
        self.namespace()
    }
    fn uid(&self) -> Option<&str> {
        self.uid()
    }
    fn resource_version(&self) -> Option<&str> {
        self.resource_version()
    }
    fn generation(&self) -> Option<i64> {
        self.generation
    }
    fn is_deleting(&self) -> bool {
        self.deleting
    }
    fn label(&self, key: &str) -> Option<&str> {
        self.labels.get(key)
    }
    fn annotation(&self, key: &str) -> Option<&str> {
        self.annotations.get(key)
    }
    fn owner_references(&self) -> &[OwnerReference] {
        &self.owner_references
    }
}

/// `s` as a JSON string literal, appended.
fn push_str_json(out: &mut String, s: &str) {
    // Serializing a `&str` cannot fail.
    out.push_str(&serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_owned()));
}

/// Append `"key":<raw>` to a comma-separated list of fields.
fn push_field(out: &mut String, key: &str, raw: &RawValue) {
    if !out.is_empty() {
        out.push(',');
    }
    push_str_json(out, key);
    out.push(':');
    out.push_str(raw.get());
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
        let mut object = Object::default();
        let mut rest = String::new();
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            match key.as_ref() {
                "metadata" => map.next_value_seed(MetadataSeed(&mut object))?,
                // A list item of a built-in kind has neither; the cache knows its kind.
                "apiVersion" | "kind" => {
                    map.next_value::<IgnoredAny>()?;
                }
                _ => {
                    // The value's text as it arrived (kube reads watch and list
                    // responses with `serde_json`, which hands it over as is).
                    let raw: Box<RawValue> = map.next_value()?;
                    push_field(&mut rest, &key, &raw);
                }
            }
        }
        object.rest = rest.into_boxed_str();
        Ok(object)
    }
}

/// Reads `metadata` into an [`Object`]'s indexed fields and `meta_rest`.
struct MetadataSeed<'a>(&'a mut Object);

impl<'de> DeserializeSeed<'de> for MetadataSeed<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for MetadataSeed<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object's metadata")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let o = self.0;
        let boxed = |s: Option<String>| s.map(String::into_boxed_str);
        let mut rest = String::new();
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            match key.as_ref() {
                "name" => o.name = map.next_value::<Option<String>>()?.unwrap_or_default().into_boxed_str(),
                "namespace" => o.namespace = boxed(map.next_value()?),
                "uid" => o.uid = boxed(map.next_value()?),
                "resourceVersion" => o.resource_version = boxed(map.next_value()?),
                "generation" => o.generation = map.next_value()?,
                "labels" => o.labels = Pairs::from_map(map.next_value::<Option<_>>()?.unwrap_or_default()),
                "annotations" => {
                    o.annotations = Pairs::from_map(map.next_value::<Option<_>>()?.unwrap_or_default());
                }
                "ownerReferences" => {
                    o.owner_references = map.next_value::<Option<Vec<_>>>()?.unwrap_or_default().into();
                }
                "finalizers" => o.finalizers = map.next_value::<Option<Vec<_>>>()?.unwrap_or_default().into(),
                "managedFields" => {
                    // Only who manages is read, and only to tell the former manager.
                    #[derive(Deserialize)]
                    struct Entry {
                        #[serde(default)]
                        manager: Option<String>,
                    }
                    let entries = map.next_value::<Option<Vec<Entry>>>()?.unwrap_or_default();
                    o.former_manager = entries.iter().any(|e| e.manager.as_deref() == Some(FORMER_MANAGER));
                }
                _ => {
                    let raw: Box<RawValue> = map.next_value()?;
                    if key == "deletionTimestamp" {
                        o.deleting = raw.get() != "null";
                    }
                    push_field(&mut rest, &key, &raw);
                }
            }
        }
        o.meta_rest = rest.into_boxed_str();
        Ok(())
    }
}

/// An [`Object`] as kube's watcher reads it: with the `ObjectMeta` a `kube::Resource` must
/// lend (name, namespace, uid and resourceVersion only; the watcher reads the version).
/// The informer unwraps it before anything keeps it. `METADATA`: watched and listed as
/// `PartialObjectMetadata`.
#[derive(Clone, Debug)]
pub(crate) struct Wire<const METADATA: bool = false> {
    pub(crate) object: Object,
    meta: ObjectMeta,
}

impl<const METADATA: bool> Wire<METADATA> {
    fn new(object: Object) -> Self {
        let owned = |s: &Option<Box<str>>| s.as_deref().map(str::to_owned);
        let meta = ObjectMeta {
            name: Some(object.name.to_string()),
            namespace: owned(&object.namespace),
            uid: owned(&object.uid),
            resource_version: owned(&object.resource_version),
            ..ObjectMeta::default()
        };
        Self { object, meta }
    }
}

impl<'de, const METADATA: bool> Deserialize<'de> for Wire<METADATA> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Object::deserialize(deserializer).map(Self::new)
    }
}

impl<const METADATA: bool> kube::Resource for Wire<METADATA> {
    type DynamicType = ApiResource;
    type Scope = DynamicResourceScope;

    fn metadata_api() -> bool {
        METADATA
    }

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
        &self.meta
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.meta
    }
}

/// `namespace/name` of an object (empty namespace for cluster-scoped ones): the key of
/// the work queue and of everything remembered about a primary object.
pub(crate) fn object_key(obj: &Object) -> String {
    format!("{}/{}", obj.namespace().unwrap_or_default(), obj.name())
}

/// The key of the primary (of kind `primary`) that `child`, in another namespace, is tied
/// to by label: its `ctop.dev/owner` annotation names the primary and its ApplySet
/// `part-of` label is that primary's set (owner references cannot cross namespaces; see
/// `ctop_applier::applyset::OWNER_ANNOTATION`).
pub(crate) fn label_owner(child: &Object, primary: &ApiResource) -> Option<String> {
    use ctop_applier::applyset::{OWNER_ANNOTATION, PART_OF_LABEL, applyset_id, owner_named};
    let (namespace, name) = owner_named(child.annotations().get(OWNER_ANNOTATION)?)?;
    let set = applyset_id(name, namespace, &primary.kind, &primary.group);
    (child.labels().get(PART_OF_LABEL) == Some(set.as_str()) && child.namespace() != Some(namespace))
        .then(|| format!("{namespace}/{name}"))
}

/// The namespace (`None` when empty, or for a kind that is not `namespaced`) and the name
/// of an [`object_key`].
pub(crate) fn split_key(key: &str, namespaced: bool) -> (Option<&str>, &str) {
    let (ns, name) = key.split_once('/').unwrap_or(("", key));
    (Some(ns).filter(|ns| namespaced && !ns.is_empty()), name)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
#[path = "object_tests.rs"]
mod tests;

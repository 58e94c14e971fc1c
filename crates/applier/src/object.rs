//! Naming objects: the owner as read from the API server, and references to children.

use ctop_core::group_of;
use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::applyset::GroupKind;

/// A child of an owner: which object, by `apiVersion`, `kind`, namespace and name.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ChildRef {
    /// `apiVersion`, e.g. `apps/v1` or `v1`.
    pub api_version: String,
    /// `kind`, e.g. `Deployment`.
    pub kind: String,
    /// The namespace; `None` for cluster-scoped objects.
    pub namespace: Option<String>,
    /// `metadata.name`.
    pub name: String,
}

impl ChildRef {
    /// The API group (empty for the core group).
    #[must_use]
    pub fn group(&self) -> &str {
        group_of(&self.api_version)
    }

    /// The group-kind, the unit the ApplySet annotations record.
    #[must_use]
    pub fn group_kind(&self) -> GroupKind {
        GroupKind::new(self.group(), self.kind.clone())
    }

    /// The identity of the object independent of the API version it is read at.
    pub(crate) fn key(&self) -> Key {
        Key { group_kind: self.group_kind(), namespace: self.namespace.clone(), name: self.name.clone() }
    }
}

impl fmt::Display for ChildRef {
    /// `Deployment.apps default/web`, or `ClusterRole.rbac.authorization.k8s.io reader`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.namespace {
            Some(ns) => write!(f, "{} {ns}/{}", self.group_kind(), self.name),
            None => write!(f, "{} {}", self.group_kind(), self.name),
        }
    }
}

/// An object's identity across API versions: what the desired set and prune compare.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct Key {
    pub(crate) group_kind: GroupKind,
    pub(crate) namespace: Option<String>,
    pub(crate) name: String,
}

/// The parts of an object [`ObjectInfo::of`] reads; everything else is skipped unparsed.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Head {
    api_version: Option<Value>,
    kind: Option<Value>,
    metadata: Option<HeadMeta>,
    status: Option<Value>,
}

#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct HeadMeta {
    name: Option<Value>,
    namespace: Option<Value>,
    uid: Option<Value>,
    resource_version: Option<Value>,
    labels: Option<Value>,
    annotations: Option<Value>,
}

/// The owner of an apply set as the caller already holds it (a cache that keeps an
/// object's metadata apart): what [`crate::Applier::apply_cached_to`] needs of it, so that
/// nothing of the owner is serialized and parsed again.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Owner {
    /// `apiVersion`, e.g. `apps.example.com/v1`.
    pub api_version: String,
    /// `kind`.
    pub kind: String,
    /// `metadata.name`.
    pub name: String,
    /// `metadata.namespace`; `None` for a cluster-scoped owner.
    pub namespace: Option<String>,
    /// `metadata.uid`: what the owner references of its children name.
    pub uid: String,
    /// `metadata.resourceVersion` of the owner as read.
    pub resource_version: Option<String>,
    /// `metadata.labels` (the ApplySet's id label is read from them).
    pub labels: Vec<(String, String)>,
    /// `metadata.annotations` (the ApplySet's kinds and namespaces are read from them).
    pub annotations: Vec<(String, String)>,
}

impl From<Owner> for ObjectInfo {
    fn from(owner: Owner) -> Self {
        let map =
            |pairs: Vec<(String, String)>| pairs.into_iter().map(|(k, v)| (k, Value::String(v))).collect();
        Self {
            api_version: owner.api_version,
            kind: owner.kind,
            name: owner.name,
            namespace: owner.namespace,
            uid: owner.uid,
            resource_version: owner.resource_version,
            labels: map(owner.labels),
            annotations: map(owner.annotations),
            status: None,
        }
    }
}

/// What the applier and the status writer need of an object read from the API server.
#[derive(Clone, Debug)]
pub(crate) struct ObjectInfo {
    pub(crate) api_version: String,
    pub(crate) kind: String,
    pub(crate) name: String,
    pub(crate) namespace: Option<String>,
    pub(crate) uid: String,
    pub(crate) resource_version: Option<String>,
    pub(crate) labels: Map<String, Value>,
    pub(crate) annotations: Map<String, Value>,
    pub(crate) status: Option<Value>,
}

impl ObjectInfo {
    /// Read the identity of any serializable Kubernetes object (typed k8s-openapi objects,
    /// `#[derive(CustomResource)]` types and `DynamicObject`s with `types` all serialize
    /// their `apiVersion` and `kind`). On error: the object's description and the reason.
    pub(crate) fn of<K: Serialize>(object: &K) -> Result<Self, (String, String)> {
        // Through the text and into the fields read here only: a `Value` of the whole object
        // (its spec, every other field of its metadata) would be built to be thrown away.
        let head = serde_json::to_vec(object)
            .and_then(|text| serde_json::from_slice::<Head>(&text))
            .map_err(|e| ("object".to_owned(), format!("it does not serialize to JSON: {e}")))?;
        Self::from_head(head)
    }

    #[cfg(test)]
    fn from_value(value: Value) -> Result<Self, (String, String)> {
        let head = Head::deserialize(value).map_err(|e| ("object".to_owned(), e.to_string()))?;
        Self::from_head(head)
    }

    fn from_head(head: Head) -> Result<Self, (String, String)> {
        let text = |v: Option<Value>| match v {
            Some(Value::String(s)) if !s.is_empty() => Some(s),
            _ => None,
        };
        let map = |v: Option<Value>| match v {
            Some(Value::Object(m)) => m,
            _ => Map::new(),
        };
        let metadata = head.metadata.unwrap_or_default();
        let api_version = text(head.api_version);
        let kind = text(head.kind);
        let name = text(metadata.name);
        let namespace = text(metadata.namespace);
        let describe = format!(
            "{} {}{}",
            kind.as_deref().unwrap_or("<no kind>"),
            namespace.as_deref().map(|n| format!("{n}/")).unwrap_or_default(),
            name.as_deref().unwrap_or("<no name>")
        );
        let missing = |what: &str| (describe.clone(), format!("it has no {what}"));
        let api_version = api_version.ok_or_else(|| missing("apiVersion (a DynamicObject needs `types`)"))?;
        let kind = kind.ok_or_else(|| missing("kind (a DynamicObject needs `types`)"))?;
        let name = name.ok_or_else(|| missing("metadata.name"))?;
        let uid = text(metadata.uid).ok_or_else(|| missing("metadata.uid"))?;
        Ok(Self {
            api_version,
            kind,
            name,
            namespace,
            uid,
            resource_version: text(metadata.resource_version),
            labels: map(metadata.labels),
            annotations: map(metadata.annotations),
            status: head.status.filter(|s| !s.is_null()),
        })
    }

    pub(crate) fn group(&self) -> &str {
        group_of(&self.api_version)
    }

    /// `App.apps.example.com default/web`.
    pub(crate) fn describe(&self) -> String {
        let gk = GroupKind::new(self.group(), self.kind.clone());
        match &self.namespace {
            Some(ns) => format!("{gk} {ns}/{}", self.name),
            None => format!("{gk} {}", self.name),
        }
    }

    pub(crate) fn label(&self, key: &str) -> Option<&str> {
        self.labels.get(key).and_then(Value::as_str)
    }

    pub(crate) fn annotation(&self, key: &str) -> Option<&str> {
        self.annotations.get(key).and_then(Value::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_an_owner() {
        let info = ObjectInfo::from_value(json!({
            "apiVersion": "apps.example.com/v1", "kind": "App",
            "metadata": {"name": "web", "namespace": "default", "uid": "u1", "resourceVersion": "7",
                         "labels": {"a": "b"}},
            "status": {"phase": "Running"}
        }))
        .expect("valid owner");
        assert_eq!(info.group(), "apps.example.com");
        assert_eq!(info.describe(), "App.apps.example.com default/web");
        assert_eq!(info.resource_version.as_deref(), Some("7"));
        assert_eq!(info.label("a"), Some("b"));
        assert_eq!(info.status, Some(json!({"phase": "Running"})));

        let (what, why) =
            ObjectInfo::from_value(json!({"metadata": {"name": "x", "uid": "u"}})).expect_err("no types");
        assert_eq!(what, "<no kind> x");
        assert!(why.contains("apiVersion"), "{why}");
        let (_, why) = ObjectInfo::from_value(
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}),
        )
        .expect_err("no uid");
        assert!(why.contains("uid"), "{why}");
    }

    #[test]
    fn child_refs_print_their_group_kind() {
        let c = ChildRef {
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            namespace: Some("ns".into()),
            name: "web".into(),
        };
        assert_eq!(c.to_string(), "Deployment.apps ns/web");
        let c = ChildRef {
            api_version: "v1".into(),
            kind: "Namespace".into(),
            namespace: None,
            name: "a".into(),
        };
        assert_eq!(c.to_string(), "Namespace a");
        assert_eq!(c.group(), "");
    }
}

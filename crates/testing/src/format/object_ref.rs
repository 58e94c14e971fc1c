//! [`ObjectRef`]: how a test names an object (`Kind/name`, `Kind/namespace/name`, or a
//! mapping), in `delete:`, `patch:`, `absent:` and an event's `regarding:`.

use serde_json::Value;

/// An object named by kind and name.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjectRef {
    /// `group/version`, when the kind alone is ambiguous.
    pub api_version: Option<String>,
    /// The kind.
    pub kind: String,
    /// The namespace; `None` is `default` for a namespaced kind.
    pub namespace: Option<String>,
    /// The name.
    pub name: String,
}

impl std::fmt::Display for ObjectRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.namespace {
            Some(ns) => write!(f, "{} {ns}/{}", self.kind, self.name),
            None => write!(f, "{} {}", self.kind, self.name),
        }
    }
}

impl ObjectRef {
    /// Whether `other` names the same object, perhaps in another version of its kind (the
    /// API server serves one object in every version of its resource).
    pub fn same_object(&self, other: &ObjectRef) -> bool {
        let group = |r: &ObjectRef| r.api_version.as_deref().map(ctop_core::group_of).map(str::to_owned);
        self.kind == other.kind
            && self.namespace == other.namespace
            && self.name == other.name
            && group(self) == group(other)
    }

    /// `Kind/name` or `Kind/namespace/name`, or a mapping with `kind`, `name` and optional
    /// `namespace` and `apiVersion`.
    pub fn from_value(v: &Value) -> Result<Self, String> {
        match v {
            Value::String(s) => {
                let parts: Vec<&str> = s.split('/').collect();
                match parts.as_slice() {
                    [kind, name] if !kind.is_empty() && !name.is_empty() => Ok(Self {
                        api_version: None,
                        kind: (*kind).to_owned(),
                        namespace: None,
                        name: (*name).to_owned(),
                    }),
                    [kind, ns, name] if !kind.is_empty() && !ns.is_empty() && !name.is_empty() => Ok(Self {
                        api_version: None,
                        kind: (*kind).to_owned(),
                        namespace: Some((*ns).to_owned()),
                        name: (*name).to_owned(),
                    }),
                    _ => Err(format!("{s:?} is not Kind/name or Kind/namespace/name")),
                }
            }
            Value::Object(m) => {
                let text = |k: &str| m.get(k).and_then(Value::as_str).map(str::to_owned);
                if let Some(extra) =
                    m.keys().find(|k| !["apiVersion", "kind", "name", "namespace"].contains(&k.as_str()))
                {
                    return Err(format!(
                        "an object reference has kind, name, namespace and apiVersion, not {extra:?}"
                    ));
                }
                Ok(Self {
                    api_version: text("apiVersion"),
                    kind: text("kind").ok_or("an object reference needs a kind")?,
                    namespace: text("namespace"),
                    name: text("name").ok_or("an object reference needs a name")?,
                })
            }
            _ => Err("an object reference is Kind/name, Kind/namespace/name or a mapping".into()),
        }
    }

    /// The reference of an object (`apiVersion`, `kind`, `metadata.name`, `metadata.namespace`).
    pub fn of(obj: &Value) -> Result<Self, String> {
        let kind = obj["kind"].as_str().ok_or("the object has no kind")?;
        let name =
            obj["metadata"]["name"].as_str().ok_or_else(|| format!("the {kind} has no metadata.name"))?;
        Ok(Self {
            api_version: obj["apiVersion"].as_str().map(str::to_owned),
            kind: kind.to_owned(),
            namespace: obj["metadata"]["namespace"].as_str().map(str::to_owned),
            name: name.to_owned(),
        })
    }
}

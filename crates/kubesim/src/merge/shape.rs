//! How lists and maps merge: the schema knowledge that server-side apply and strategic
//! merge patch need.
//!
//! A *path* is the list of field names from the object's root, with list levels skipped:
//! the ports of a Deployment's containers are at
//! `["spec", "template", "spec", "containers", "ports"]`. Built-in kinds answer from an
//! embedded table ([`builtin_shape`]); custom resources answer from their CRD schema's
//! `x-kubernetes-list-type`, `x-kubernetes-list-map-keys` and `x-kubernetes-map-type`.

/// How server-side apply treats a list (`x-kubernetes-list-type`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ListType {
    /// The list is replaced whole and owned as one field (the default).
    Atomic,
    /// A list of scalars merged by value (`v:<value>` in fieldsV1).
    Set,
    /// A list of objects merged by the given key fields (`k:{...}` in fieldsV1).
    Map(Vec<String>),
}

/// How strategic merge patch treats a list (`patchStrategy` / `patchMergeKey`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MergeStrategy {
    /// The patch's list replaces the original (the default).
    Replace,
    /// Lists of objects merged by one key field.
    MergeByKey(String),
    /// Lists of scalars merged as a union (e.g. `metadata.finalizers`).
    MergePrimitives,
}

/// Answers questions about the shape of one kind's objects.
pub trait Shape: Send + Sync {
    /// The server-side apply list type of the list at `path`.
    fn list_type(&self, path: &[&str]) -> ListType;
    /// The strategic-merge strategy of the list at `path`.
    fn merge_strategy(&self, path: &[&str]) -> MergeStrategy;
    /// Whether the map (object) at `path` is owned and replaced as a whole
    /// (`x-kubernetes-map-type: atomic`, e.g. a Deployment's `spec.selector`).
    fn atomic_map(&self, _path: &[&str]) -> bool {
        false
    }
}

/// One entry of the built-in table: a path suffix rule.
struct Rule {
    /// The path, relative to where the rule is anchored.
    path: Vec<&'static str>,
    list: ListType,
    merge: MergeStrategy,
}

fn map(keys: &[&str]) -> ListType {
    ListType::Map(keys.iter().map(|k| (*k).to_owned()).collect())
}

fn by(key: &str) -> MergeStrategy {
    MergeStrategy::MergeByKey(key.to_owned())
}

/// Rules that hold inside `metadata` of every kind.
fn metadata_rules() -> Vec<Rule> {
    vec![
        Rule { path: vec!["ownerReferences"], list: map(&["uid"]), merge: by("uid") },
        Rule { path: vec!["finalizers"], list: ListType::Set, merge: MergeStrategy::MergePrimitives },
    ]
}

/// Rules that hold inside a PodSpec.
fn pod_spec_rules() -> Vec<Rule> {
    let mut rules = Vec::new();
    for containers in ["containers", "initContainers", "ephemeralContainers"] {
        let p = |tail: &[&'static str]| -> Vec<&'static str> {
            let mut v = vec![containers];
            v.extend_from_slice(tail);
            v
        };
        rules.push(Rule { path: p(&[]), list: map(&["name"]), merge: by("name") });
        rules.push(Rule {
            path: p(&["ports"]),
            list: map(&["containerPort", "protocol"]),
            merge: by("containerPort"),
        });
        rules.push(Rule { path: p(&["env"]), list: map(&["name"]), merge: by("name") });
        rules.push(Rule { path: p(&["volumeMounts"]), list: map(&["mountPath"]), merge: by("mountPath") });
        rules.push(Rule { path: p(&["volumeDevices"]), list: map(&["devicePath"]), merge: by("devicePath") });
        rules.push(Rule {
            path: p(&["resizePolicy"]),
            list: ListType::Atomic,
            merge: MergeStrategy::Replace,
        });
    }
    rules.push(Rule { path: vec!["volumes"], list: map(&["name"]), merge: by("name") });
    rules.push(Rule { path: vec!["imagePullSecrets"], list: map(&["name"]), merge: by("name") });
    rules.push(Rule { path: vec!["hostAliases"], list: map(&["ip"]), merge: by("ip") });
    rules.push(Rule {
        path: vec!["topologySpreadConstraints"],
        list: map(&["topologyKey", "whenUnsatisfiable"]),
        merge: by("topologyKey"),
    });
    rules.push(Rule { path: vec!["resourceClaims"], list: map(&["name"]), merge: by("name") });
    rules.push(Rule { path: vec!["schedulingGates"], list: map(&["name"]), merge: by("name") });
    rules
}

/// Where a kind keeps a PodSpec.
fn pod_spec_anchor(kind: &str) -> Option<&'static [&'static str]> {
    match kind {
        "Pod" => Some(&["spec"]),
        "PodTemplate" => Some(&["template", "spec"]),
        "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet" | "Job" | "ReplicationController" => {
            Some(&["spec", "template", "spec"])
        }
        "CronJob" => Some(&["spec", "jobTemplate", "spec", "template", "spec"]),
        _ => None,
    }
}

/// The shape of a built-in kind, from the embedded table of merge keys and list types.
#[derive(Debug, Clone)]
pub struct BuiltinShape {
    kind: String,
}

/// The shape of the built-in kind `kind` (e.g. `"Deployment"`). Unknown kinds get the
/// metadata rules only, with every other list atomic.
#[must_use]
pub fn builtin_shape(kind: &str) -> BuiltinShape {
    BuiltinShape { kind: kind.to_owned() }
}

impl BuiltinShape {
    fn lookup(&self, path: &[&str]) -> Option<(ListType, MergeStrategy)> {
        let find = |anchor: &[&str], rules: Vec<Rule>| {
            let rest = path.strip_prefix(anchor)?;
            rules.into_iter().find(|r| r.path == rest).map(|r| (r.list, r.merge))
        };
        if let Some(hit) = find(&["metadata"], metadata_rules()) {
            return Some(hit);
        }
        // Templates carry their own metadata.
        if let Some(anchor) = pod_spec_anchor(&self.kind)
            && let Some(hit) = find(anchor, pod_spec_rules())
        {
            return Some(hit);
        }
        let status_conditions = path == ["status", "conditions"];
        if status_conditions {
            return Some((map(&["type"]), by("type")));
        }
        let own: Vec<Rule> = match self.kind.as_str() {
            "Service" => vec![Rule {
                path: vec!["spec", "ports"],
                list: map(&["port", "protocol"]),
                merge: by("port"),
            }],
            "Endpoints" => vec![],
            "StatefulSet" => vec![Rule {
                path: vec!["spec", "volumeClaimTemplates"],
                list: ListType::Atomic,
                merge: MergeStrategy::Replace,
            }],
            "Node" => {
                vec![Rule { path: vec!["status", "addresses"], list: map(&["type"]), merge: by("type") }]
            }
            _ => vec![],
        };
        own.into_iter().find(|r| r.path == path).map(|r| (r.list, r.merge))
    }
}

impl Shape for BuiltinShape {
    fn list_type(&self, path: &[&str]) -> ListType {
        self.lookup(path).map_or(ListType::Atomic, |(l, _)| l)
    }

    fn merge_strategy(&self, path: &[&str]) -> MergeStrategy {
        self.lookup(path).map_or(MergeStrategy::Replace, |(_, m)| m)
    }

    fn atomic_map(&self, path: &[&str]) -> bool {
        // LabelSelector is a structType=atomic in the Kubernetes API; Service's selector
        // is mapType=atomic.
        matches!(
            (self.kind.as_str(), path),
            ("Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet" | "Job", ["spec", "selector"])
                | ("Service", ["spec", "selector"])
                | ("PodDisruptionBudget", ["spec", "selector"])
        )
    }
}

/// A shape with no knowledge at all: every list atomic and replaced, only the metadata
/// rules hold. Used for kinds that have no schema.
#[derive(Debug, Clone, Default)]
pub struct MetadataOnlyShape;

impl Shape for MetadataOnlyShape {
    fn list_type(&self, path: &[&str]) -> ListType {
        builtin_shape("").list_type(path)
    }

    fn merge_strategy(&self, path: &[&str]) -> MergeStrategy {
        builtin_shape("").merge_strategy(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deployment_containers_and_ports() {
        let s = builtin_shape("Deployment");
        assert_eq!(
            s.list_type(&["spec", "template", "spec", "containers"]),
            ListType::Map(vec!["name".into()])
        );
        assert_eq!(
            s.list_type(&["spec", "template", "spec", "containers", "ports"]),
            ListType::Map(vec!["containerPort".into(), "protocol".into()])
        );
        assert_eq!(
            s.merge_strategy(&["spec", "template", "spec", "containers", "ports"]),
            MergeStrategy::MergeByKey("containerPort".into())
        );
        assert_eq!(s.list_type(&["metadata", "finalizers"]), ListType::Set);
        assert_eq!(s.list_type(&["spec", "template", "spec", "tolerations"]), ListType::Atomic);
        assert!(s.atomic_map(&["spec", "selector"]));
    }

    #[test]
    fn cronjob_pod_spec_is_deep() {
        let s = builtin_shape("CronJob");
        assert_eq!(
            s.list_type(&["spec", "jobTemplate", "spec", "template", "spec", "containers"]),
            ListType::Map(vec!["name".into()])
        );
    }
}

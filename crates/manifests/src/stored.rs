//! Whether a new generation of CRDs drops a version objects may still be stored in.
//!
//! The API server keeps each object in the version that was the storage version when the
//! object was last written, and lists every such version in the CRD's
//! `status.storedVersions`. A CRD that stops listing one of them is refused ("must appear
//! in spec.versions"), and even where it was not, objects stored in it could no longer be
//! read. So a script keeps declaring a version (with `served: false` if it should not be
//! served) until the storage migration (`ctop run --migrate-storage`) has rewritten every
//! object in the storage version and removed the old one from `status.storedVersions`.
//!
//! [`removed_versions`] compares CRDs found somewhere (the previous output of
//! `ctop manifests`, or a cluster's, as `ctop check` may) with what the script declares now;
//! it is pure, the caller decides what to refuse.

use ctop_core::OperatorSpec;
use serde_json::Value;

/// A version a previous CRD listed that the script no longer declares.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct RemovedVersion {
    /// The CRD's name, `<plural>.<group>`.
    pub crd: String,
    /// The version, e.g. `v1alpha1`.
    pub version: String,
}

impl std::fmt::Display for RemovedVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "version {} of {}", self.version, self.crd)
    }
}

/// The versions that the CRDs among `previous` (any documents; those of kind
/// `CustomResourceDefinition` are read) may hold objects in and that `spec` no longer
/// declares, sorted by CRD and version.
///
/// A version counts when the previous CRD lists it in `status.storedVersions`, or, for a
/// CRD without a status (a generated file), in `spec.versions`: with no status to say
/// otherwise, objects may be stored in any of them. So a CRD read from a cluster gives the
/// exact answer, a version already migrated away no longer counting. CRDs of resources the
/// script no longer declares at all are left out: that is no version change, and applying
/// the new manifests leaves such a CRD in place.
#[must_use]
pub fn removed_versions(previous: &[Value], spec: &OperatorSpec) -> Vec<RemovedVersion> {
    let mut out = Vec::new();
    for doc in previous {
        if doc["kind"] != "CustomResourceDefinition"
            || !doc["apiVersion"].as_str().is_some_and(|v| v.starts_with("apiextensions.k8s.io/"))
        {
            continue;
        }
        let Some(name) = doc.pointer("/metadata/name").and_then(Value::as_str) else { continue };
        let Some(resource) = spec.resources.iter().find(|r| crate::crd::crd_name(r) == name) else {
            continue;
        };
        let declared = resource.all_versions();
        let listed: Vec<&str> = match doc.pointer("/status/storedVersions").and_then(Value::as_array) {
            Some(stored) => stored.iter().filter_map(Value::as_str).collect(),
            None => doc
                .pointer("/spec/versions")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|v| v["name"].as_str())
                .collect(),
        };
        for version in listed {
            if !declared.iter().any(|v| v.name == version) {
                out.push(RemovedVersion { crd: name.to_owned(), version: version.to_owned() });
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use ctop_core::{ResourceSpec, VersionSpec};
    use serde_json::json;

    use super::*;

    fn version(name: &str, storage: bool) -> VersionSpec {
        VersionSpec {
            name: name.into(),
            served: true,
            storage,
            schema: json!({"type": "object"}),
            ..Default::default()
        }
    }

    /// `crontabs.batch.example.com` with `versions` (the first is the hub), or one version
    /// `v2` when empty.
    fn spec(versions: Vec<VersionSpec>) -> OperatorSpec {
        OperatorSpec {
            resources: vec![ResourceSpec {
                api_version: "batch.example.com/v2".into(),
                group: "batch.example.com".into(),
                version: "v2".into(),
                kind: "CronTab".into(),
                plural: "crontabs".into(),
                singular: "crontab".into(),
                schema: json!({"type": "object"}),
                versions,
                ..Default::default()
            }],
            controllers: vec![],
        }
    }

    fn crd(name: &str, versions: &[&str]) -> Value {
        let versions: Vec<Value> = versions.iter().map(|v| json!({"name": v})).collect();
        json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": name},
            "spec": {"versions": versions},
        })
    }

    fn removed(crd: &str, version: &str) -> RemovedVersion {
        RemovedVersion { crd: crd.into(), version: version.into() }
    }

    #[test]
    fn a_version_the_previous_crd_listed_and_the_script_dropped_is_reported() {
        let previous = [crd("crontabs.batch.example.com", &["v2", "v1", "v1beta1"])];
        let now = spec(vec![version("v2", true), version("v1", false)]);
        assert_eq!(removed_versions(&previous, &now), [removed("crontabs.batch.example.com", "v1beta1")]);
        assert_eq!(
            removed_versions(&previous, &spec(vec![])).iter().map(ToString::to_string).collect::<Vec<_>>(),
            ["version v1 of crontabs.batch.example.com", "version v1beta1 of crontabs.batch.example.com"],
            "the one-version form declares v2 only"
        );
    }

    #[test]
    fn kept_versions_even_unserved_and_added_ones_are_fine() {
        let previous = [crd("crontabs.batch.example.com", &["v1"])];
        let mut unserved = version("v1", false);
        unserved.served = false;
        assert_eq!(removed_versions(&previous, &spec(vec![version("v2", true), unserved])), []);
        // The first generation (nothing before it) and other documents are no concern.
        let others = [
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "crontabs.batch.example.com"}}),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "spec": {"versions": [{"name": "v0"}]}}),
            json!("not an object"),
        ];
        assert_eq!(removed_versions(&others, &spec(vec![])), []);
    }

    #[test]
    fn stored_versions_of_a_cluster_crd_are_what_counts() {
        let mut previous = crd("crontabs.batch.example.com", &["v2", "v1"]);
        // Migrated: v1 is listed but no object is stored in it any more.
        previous["status"] = json!({"storedVersions": ["v2"]});
        assert_eq!(removed_versions(&[previous.clone()], &spec(vec![])), []);
        // Not yet: v1 still holds objects.
        previous["status"] = json!({"storedVersions": ["v1", "v2"]});
        assert_eq!(
            removed_versions(&[previous], &spec(vec![])),
            [removed("crontabs.batch.example.com", "v1")]
        );
    }

    #[test]
    fn crds_of_resources_no_longer_declared_and_other_crds_are_left_out() {
        let previous = [
            crd("widgets.batch.example.com", &["v1"]),
            crd("controllerstatuses.ctop.dev", &["v1alpha1"]),
            crd("crontabs.batch.example.com", &["v1", "v1"]),
        ];
        assert_eq!(
            removed_versions(&previous, &spec(vec![])),
            [removed("crontabs.batch.example.com", "v1")],
            "reported once"
        );
    }
}

//! The ApplySet vocabulary (KEP-3659): label and annotation names, the set id, and the
//! `Kind.group` list kept on the parent.
//!
//! An ApplySet is a parent object (here: the owner) plus every object labelled
//! `applyset.kubernetes.io/part-of=<id>`. The parent carries the id as a label and records
//! which group-kinds (and, for a cluster-scoped parent, which namespaces) its members may
//! live in, so that a tool can find every member to prune with label-selected lists instead
//! of scanning the cluster.

use std::collections::BTreeSet;
use std::fmt;

use base64::Engine as _;
use sha2::{Digest as _, Sha256};

/// Label on every child: the id of the ApplySet it belongs to.
pub const PART_OF_LABEL: &str = "applyset.kubernetes.io/part-of";
/// Label on the parent (the owner): its ApplySet id.
pub const ID_LABEL: &str = "applyset.kubernetes.io/id";
/// Annotation on the parent: the sorted, comma-separated `Kind.group` list of the kinds its
/// members may have.
pub const CONTAINS_GROUP_KINDS_ANNOTATION: &str = "applyset.kubernetes.io/contains-group-kinds";
/// Annotation on the parent: the sorted, comma-separated namespaces its members may live in
/// besides the parent's own (a cluster-scoped owner's namespaced children, a namespaced
/// owner's children in other namespaces).
pub const ADDITIONAL_NAMESPACES_ANNOTATION: &str = "applyset.kubernetes.io/additional-namespaces";
/// Annotation on the parent: the tool that manages the set, as `name/version`.
pub const TOOLING_ANNOTATION: &str = "applyset.kubernetes.io/tooling";
/// Label a CustomResourceDefinition carries when its objects may be ApplySet parents
/// (`"true"`). kubectl refuses custom-resource parents whose CRD lacks it; ctop's manifest
/// generator sets it on the CRDs it writes.
pub const IS_PARENT_TYPE_LABEL: &str = "applyset.kubernetes.io/is-parent-type";
/// Annotation on a child that opts it out of pruning: with the value `"false"` the applier
/// leaves the object in place when it leaves the desired set (it keeps its owner reference,
/// so deleting the owner still garbage-collects it).
pub const PRUNE_ANNOTATION: &str = "ctop.dev/prune";

/// Annotation on a child in another namespace than its namespaced owner, which no owner
/// reference can point at: the owner, as `Kind.group namespace/name`. With the `part-of`
/// label it ties the child to the owner (see [`owner_named`]); ctop prunes such a child and
/// deletes it when the owner goes (a finalizer on the owner), the garbage collector cannot.
pub const OWNER_ANNOTATION: &str = "ctop.dev/owner";

/// The namespace and name of the owner an [`OWNER_ANNOTATION`] value names, if it is one.
///
/// ```
/// use ctop_applier::applyset::owner_named;
/// assert_eq!(owner_named("Source.example.com team-a/db"), Some(("team-a", "db")));
/// assert_eq!(owner_named("db"), None);
/// ```
#[must_use]
pub fn owner_named(value: &str) -> Option<(&str, &str)> {
    let (_, place) = value.rsplit_once(' ')?;
    let (namespace, name) = place.split_once('/')?;
    (!namespace.is_empty() && !name.is_empty()).then_some((namespace, name))
}

/// The tooling value written by default: `ctop/v<crate version>`.
pub const DEFAULT_TOOLING: &str = concat!("ctop/v", env!("CARGO_PKG_VERSION"));

/// The ApplySet id of a parent, exactly as KEP-3659 defines it:
/// `applyset-<base64url(sha256("<name>.<namespace>.<kind>.<group>"))>-v1`, unpadded
/// URL-safe base64, an empty namespace for cluster-scoped parents and an empty group for the
/// core group.
///
/// ```
/// let id = ctop_applier::applyset::applyset_id("web", "default", "App", "apps.example.com");
/// assert!(id.starts_with("applyset-") && id.ends_with("-v1"));
/// assert_eq!(id.len(), "applyset-".len() + 43 + "-v1".len());
/// ```
#[must_use]
pub fn applyset_id(name: &str, namespace: &str, kind: &str, group: &str) -> String {
    let digest = Sha256::digest(format!("{name}.{namespace}.{kind}.{group}").as_bytes());
    format!("applyset-{}-v1", base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest))
}

/// A kind in a group, written `Kind.group` (just `Kind` for the core group), the form the
/// `contains-group-kinds` annotation uses.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GroupKind {
    /// The API group, empty for the core group.
    pub group: String,
    /// The kind, e.g. `Deployment`.
    pub kind: String,
}

impl GroupKind {
    /// A group-kind from its parts.
    #[must_use]
    pub fn new(group: impl Into<String>, kind: impl Into<String>) -> Self {
        Self { group: group.into(), kind: kind.into() }
    }

    /// Parse `Kind.group` (or `Kind`); `None` for an empty entry.
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        let s = s.trim();
        if s.is_empty() {
            return None;
        }
        Some(match s.split_once('.') {
            Some((kind, group)) => Self::new(group, kind),
            None => Self::new("", s),
        })
    }
}

impl fmt::Display for GroupKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.group.is_empty() {
            f.write_str(&self.kind)
        } else {
            write!(f, "{}.{}", self.kind, self.group)
        }
    }
}

/// Parse a comma-separated annotation value into a set of group-kinds.
pub(crate) fn parse_group_kinds(value: Option<&str>) -> BTreeSet<GroupKind> {
    value.map(|v| v.split(',').filter_map(GroupKind::parse).collect()).unwrap_or_default()
}

/// Parse a comma-separated annotation value into a set of names.
pub(crate) fn parse_list(value: Option<&str>) -> BTreeSet<String> {
    value
        .map(|v| v.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned).collect())
        .unwrap_or_default()
}

/// Join a sorted set with commas, the annotation form.
/// Entries are sorted as strings, like kubectl does (`ConfigMap,Deployment.apps,Secret`).
pub(crate) fn join<T: fmt::Display>(items: &BTreeSet<T>) -> String {
    let mut items: Vec<String> = items.iter().map(ToString::to_string).collect();
    items.sort();
    items.join(",")
}

/// The tool name of a `name/version` tooling value.
pub(crate) fn tool_name(tooling: &str) -> &str {
    tooling.split_once('/').map_or(tooling, |(name, _)| name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn id_follows_the_kep() {
        // Expected values computed outside Rust:
        // printf '%s' "$input" | sha256sum | xxd -r -p | base64 | tr '+/' '-_' | tr -d '='
        assert_eq!(
            applyset_id("web", "default", "App", "apps.example.com"),
            "applyset-FmFPEFF4dKvfT3K6d19Tc0KpCEgDXVLG_p96VZGU98w-v1"
        );
        // A cluster-scoped parent in the core group: empty namespace and group keep their dots.
        assert_eq!(
            applyset_id("n1", "", "Namespace", ""),
            "applyset-oofDD6NacJNLl4zmXeYFgv7dPQ08EsT-HBBoRMCZr4g-v1"
        );
        let id = applyset_id("test-set", "default", "ConfigMap", "");
        assert_eq!(id, "applyset-5lCGfqffIEKbtRno3jN93Gx9OTWWcjpTkM2dCujD-18-v1");
        assert!(id.len() <= 63, "a label value is at most 63 characters");
        // The id kubectl v1.33.1 wrote for `kubectl apply --applyset=ctop-applier-example -n default`
        // (a Secret parent).
        assert_eq!(
            applyset_id("ctop-applier-example", "default", "Secret", ""),
            "applyset-ynp1XeNcUUzsnkLW1QlW5L-jePWUFsHF9HZ2VC_Hchs-v1"
        );
    }

    #[test]
    fn group_kinds_round_trip() {
        let set = parse_group_kinds(Some("Deployment.apps, Secret,,Widget.example.com,ConfigMap"));
        assert_eq!(join(&set), "ConfigMap,Deployment.apps,Secret,Widget.example.com");
        assert_eq!(
            GroupKind::parse("Ingress.networking.k8s.io"),
            Some(GroupKind::new("networking.k8s.io", "Ingress"))
        );
        assert!(parse_group_kinds(None).is_empty());
        assert_eq!(tool_name("ctop/v0.1.0"), "ctop");
        assert_eq!(tool_name("kubectl"), "kubectl");
    }
}

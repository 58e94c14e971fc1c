//! What RBAC needs to know about a kind: its resource name (plural) and whether its objects
//! live in namespaces. Built-in kinds come from a small table; the script's own resources
//! from its [`OperatorSpec`]; anything else is guessed like the SDK guesses and reported.

use ctop_core::{KindRef, OperatorSpec, Scope};

/// `(apiVersion, kind, plural, namespaced)` of the built-in kinds an operator is likely to
/// manage, read or watch. Mirrors the kinds the SDK ships handles for, plus a few more.
const BUILTIN: &[(&str, &str, &str, bool)] = &[
    ("v1", "ConfigMap", "configmaps", true),
    ("v1", "Endpoints", "endpoints", true),
    ("v1", "Event", "events", true),
    ("v1", "LimitRange", "limitranges", true),
    ("v1", "Namespace", "namespaces", false),
    ("v1", "Node", "nodes", false),
    ("v1", "PersistentVolume", "persistentvolumes", false),
    ("v1", "PersistentVolumeClaim", "persistentvolumeclaims", true),
    ("v1", "Pod", "pods", true),
    ("v1", "ResourceQuota", "resourcequotas", true),
    ("v1", "Secret", "secrets", true),
    ("v1", "Service", "services", true),
    ("v1", "ServiceAccount", "serviceaccounts", true),
    (
        "admissionregistration.k8s.io/v1",
        "MutatingWebhookConfiguration",
        "mutatingwebhookconfigurations",
        false,
    ),
    (
        "admissionregistration.k8s.io/v1",
        "ValidatingWebhookConfiguration",
        "validatingwebhookconfigurations",
        false,
    ),
    ("apiextensions.k8s.io/v1", "CustomResourceDefinition", "customresourcedefinitions", false),
    ("apps/v1", "ControllerRevision", "controllerrevisions", true),
    ("apps/v1", "DaemonSet", "daemonsets", true),
    ("apps/v1", "Deployment", "deployments", true),
    ("apps/v1", "ReplicaSet", "replicasets", true),
    ("apps/v1", "StatefulSet", "statefulsets", true),
    ("autoscaling/v2", "HorizontalPodAutoscaler", "horizontalpodautoscalers", true),
    ("batch/v1", "CronJob", "cronjobs", true),
    ("batch/v1", "Job", "jobs", true),
    ("coordination.k8s.io/v1", "Lease", "leases", true),
    ("discovery.k8s.io/v1", "EndpointSlice", "endpointslices", true),
    ("events.k8s.io/v1", "Event", "events", true),
    ("networking.k8s.io/v1", "Ingress", "ingresses", true),
    ("networking.k8s.io/v1", "IngressClass", "ingressclasses", false),
    ("networking.k8s.io/v1", "NetworkPolicy", "networkpolicies", true),
    ("policy/v1", "PodDisruptionBudget", "poddisruptionbudgets", true),
    ("rbac.authorization.k8s.io/v1", "ClusterRole", "clusterroles", false),
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "clusterrolebindings", false),
    ("rbac.authorization.k8s.io/v1", "Role", "roles", true),
    ("rbac.authorization.k8s.io/v1", "RoleBinding", "rolebindings", true),
    ("scheduling.k8s.io/v1", "PriorityClass", "priorityclasses", false),
    ("storage.k8s.io/v1", "StorageClass", "storageclasses", false),
];

/// A kind as RBAC sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Resolved {
    /// API group (`""` for core).
    pub group: String,
    /// Resource name, e.g. `deployments`.
    pub plural: String,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
    /// Neither built in nor declared by the script: plural and scope are guesses.
    pub guessed: bool,
}

/// Plural and scope of `kind`: the script's own resources first, then the table, then the
/// SDK's guess (lowercase plural, namespaced) marked as such.
pub(crate) fn resolve(spec: &OperatorSpec, kind: &KindRef) -> Resolved {
    let group = kind.group().to_owned();
    // Any version of the script's own resource: its plural and scope are the same in all.
    if let Some(r) = spec.resources.iter().find(|r| r.group == group && r.kind == kind.kind) {
        return Resolved {
            group,
            plural: r.plural.clone(),
            namespaced: r.scope == Scope::Namespaced,
            guessed: false,
        };
    }
    // The table is keyed by group, not version: `apps/v1beta2` Deployments are deployments too.
    if let Some(&(_, _, plural, namespaced)) =
        BUILTIN.iter().find(|(av, k, _, _)| *k == kind.kind && group_of(av) == group)
    {
        return Resolved { group, plural: plural.to_owned(), namespaced, guessed: false };
    }
    Resolved { group, plural: ctop_core::guess_plural(&kind.kind), namespaced: true, guessed: true }
}

/// Whether `resource` (a plural, maybe with `/subresource`) of `group` is namespaced, for
/// rules given verbatim by `.permission()`. Unknown resources count as namespaced.
pub(crate) fn resource_is_namespaced(spec: &OperatorSpec, group: &str, resource: &str) -> bool {
    let base = resource.split('/').next().unwrap_or(resource);
    if let Some(r) = spec.resources.iter().find(|r| r.group == group && r.plural == base) {
        return r.scope == Scope::Namespaced;
    }
    BUILTIN
        .iter()
        .find(|(av, _, plural, _)| *plural == base && group_of(av) == group)
        .is_none_or(|&(_, _, _, namespaced)| namespaced)
}

use ctop_core::group_of;

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(api_version: &str, kind: &str) -> KindRef {
        KindRef { api_version: api_version.into(), kind: kind.into() }
    }

    #[test]
    fn builtins_come_from_the_table_custom_kinds_from_the_spec() {
        let spec = OperatorSpec {
            resources: vec![ctop_core::ResourceSpec {
                api_version: "x.io/v1".into(),
                group: "x.io".into(),
                version: "v1".into(),
                kind: "Proxy".into(),
                plural: "proxies".into(),
                singular: "proxy".into(),
                scope: Scope::Cluster,
                ..Default::default()
            }],
            ..Default::default()
        };
        let d = resolve(&spec, &kind("apps/v1", "Deployment"));
        assert_eq!(
            (d.group.as_str(), d.plural.as_str(), d.namespaced, d.guessed),
            ("apps", "deployments", true, false)
        );
        let ns = resolve(&spec, &kind("v1", "Namespace"));
        assert!(!ns.namespaced && ns.group.is_empty());
        let ing = resolve(&spec, &kind("networking.k8s.io/v1", "Ingress"));
        assert_eq!(ing.plural, "ingresses");
        let own = resolve(&spec, &kind("x.io/v1", "Proxy"));
        assert_eq!((own.plural.as_str(), own.namespaced, own.guessed), ("proxies", false, false));
        let other = resolve(&spec, &kind("y.io/v1", "Policy"));
        assert_eq!((other.plural.as_str(), other.namespaced, other.guessed), ("policies", true, true));
        assert!(!resource_is_namespaced(&spec, "", "nodes"));
        assert!(!resource_is_namespaced(&spec, "x.io", "proxies/status"));
        assert!(resource_is_namespaced(&spec, "y.io", "whatever"));
    }

    #[test]
    fn a_custom_kind_named_like_a_built_in_is_told_apart_by_its_group() {
        // The kubebuilder tutorial's CronJob, beside the built-in batch/v1 CronJob.
        let spec = OperatorSpec {
            resources: vec![ctop_core::ResourceSpec {
                api_version: "batch.tutorial.kubebuilder.io/v1".into(),
                group: "batch.tutorial.kubebuilder.io".into(),
                version: "v1".into(),
                kind: "CronJob".into(),
                plural: "cronjobs".into(),
                singular: "cronjob".into(),
                scope: Scope::Cluster,
                ..Default::default()
            }],
            ..Default::default()
        };
        let own = resolve(&spec, &kind("batch.tutorial.kubebuilder.io/v1", "CronJob"));
        assert_eq!(
            (own.group.as_str(), own.plural.as_str(), own.namespaced, own.guessed),
            ("batch.tutorial.kubebuilder.io", "cronjobs", false, false)
        );
        let builtin = resolve(&spec, &kind("batch/v1", "CronJob"));
        assert_eq!(
            (builtin.group.as_str(), builtin.plural.as_str(), builtin.namespaced, builtin.guessed),
            ("batch", "cronjobs", true, false)
        );
        assert!(!resource_is_namespaced(&spec, "batch.tutorial.kubebuilder.io", "cronjobs/status"));
        assert!(resource_is_namespaced(&spec, "batch", "cronjobs"));
    }

    #[test]
    fn pluralizes_like_the_sdk() {
        for (k, p) in
            [("App", "apps"), ("Class", "classes"), ("Box", "boxes"), ("Policy", "policies"), ("Day", "days")]
        {
            assert_eq!(ctop_core::guess_plural(k), p);
        }
    }
}

//! What the schemas do not say, or say otherwise than the SDK wants: components written by
//! hand in `ctop.d.ts` or as a plain type, names that would clash, and the values of string
//! fields the API takes from a fixed set (k8s-openapi keeps no `enum`; each value listed here
//! must be named in the field's description, which a test checks).

use serde_json::Value;

/// How a component is typed instead of generated.
pub enum Mapped {
    /// By the declaration of that name in `ctop.d.ts`.
    Ctop(&'static str),
    /// By an alias emitted at the top of `k8s.d.ts`: `export type <name> = <type>`.
    Alias(&'static str, &'static str),
    /// By a plain type where it is used.
    Inline(&'static str),
}

/// Components not generated: the SDK's own metadata types, and the scalars.
const MAPPED: &[(&str, Mapped)] = &[
    ("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", Mapped::Ctop("ObjectMeta")),
    ("io.k8s.apimachinery.pkg.apis.meta.v1.OwnerReference", Mapped::Ctop("OwnerReference")),
    // metav1.Condition: the shape of the conditions ctop keeps on custom resources too.
    ("io.k8s.apimachinery.pkg.apis.meta.v1.Condition", Mapped::Ctop("Condition")),
    ("io.k8s.apimachinery.pkg.api.resource.Quantity", Mapped::Alias("Quantity", "string | number")),
    ("io.k8s.apimachinery.pkg.util.intstr.IntOrString", Mapped::Alias("IntOrString", "number | string")),
    ("io.k8s.apimachinery.pkg.apis.meta.v1.Time", Mapped::Inline("string")),
    ("io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime", Mapped::Inline("string")),
];

/// How component `name` is typed, if it is not generated.
pub fn mapped(name: &str) -> Option<&'static Mapped> {
    MAPPED.iter().find(|(n, _)| *n == name).map(|(_, m)| m)
}

/// The aliases of [`Mapped::Alias`]: `(component, name, type)`.
pub fn aliases() -> impl Iterator<Item = (&'static str, &'static str, &'static str)> {
    MAPPED.iter().filter_map(|(schema, m)| match m {
        Mapped::Alias(name, ty) => Some((*schema, *name, *ty)),
        _ => None,
    })
}

/// Components whose last name segment is taken: `PolicyRule` is `.permission()`'s rule in
/// `ctop.d.ts`.
pub const RENAMED: &[(&str, &str)] = &[("io.k8s.api.rbac.v1.PolicyRule", "RbacRule")];

/// `(component, field, values)`: string fields (or lists of strings) that take one of a fixed
/// set of values, each named in the field's description. The component is named without its
/// `io.k8s.api.` (or `io.k8s.`) prefix.
pub const ENUMS: &[(&str, &str, &[&str])] = &[
    ("core.v1.Container", "imagePullPolicy", &["Always", "IfNotPresent", "Never"]),
    ("core.v1.ContainerPort", "protocol", &["TCP", "UDP", "SCTP"]),
    ("core.v1.ServicePort", "protocol", &["TCP", "UDP", "SCTP"]),
    ("core.v1.EndpointPort", "protocol", &["TCP", "UDP", "SCTP"]),
    ("networking.v1.NetworkPolicyPort", "protocol", &["TCP", "UDP", "SCTP"]),
    ("core.v1.ServiceSpec", "type", &["ClusterIP", "NodePort", "LoadBalancer", "ExternalName"]),
    ("core.v1.ServiceSpec", "externalTrafficPolicy", &["Cluster", "Local"]),
    ("core.v1.ServiceSpec", "internalTrafficPolicy", &["Cluster", "Local"]),
    ("core.v1.ServiceSpec", "sessionAffinity", &["ClientIP", "None"]),
    ("core.v1.PodSpec", "restartPolicy", &["Always", "OnFailure", "Never"]),
    ("core.v1.PodSpec", "dnsPolicy", &["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"]),
    ("core.v1.PodStatus", "phase", &["Pending", "Running", "Succeeded", "Failed", "Unknown"]),
    ("core.v1.SeccompProfile", "type", &["Localhost", "RuntimeDefault", "Unconfined"]),
    ("core.v1.Toleration", "operator", &["Exists", "Equal"]),
    ("core.v1.Toleration", "effect", &["NoSchedule", "PreferNoSchedule", "NoExecute"]),
    ("core.v1.Taint", "effect", &["NoSchedule", "PreferNoSchedule", "NoExecute"]),
    ("core.v1.TopologySpreadConstraint", "whenUnsatisfiable", &["DoNotSchedule", "ScheduleAnyway"]),
    ("core.v1.PersistentVolumeSpec", "persistentVolumeReclaimPolicy", &["Retain", "Delete", "Recycle"]),
    ("apps.v1.DeploymentStrategy", "type", &["Recreate", "RollingUpdate"]),
    ("apps.v1.StatefulSetSpec", "podManagementPolicy", &["OrderedReady", "Parallel"]),
    ("apps.v1.DaemonSetUpdateStrategy", "type", &["RollingUpdate", "OnDelete"]),
    ("apps.v1.StatefulSetPersistentVolumeClaimRetentionPolicy", "whenDeleted", &["Retain", "Delete"]),
    ("apps.v1.StatefulSetPersistentVolumeClaimRetentionPolicy", "whenScaled", &["Retain", "Delete"]),
    ("batch.v1.JobSpec", "completionMode", &["NonIndexed", "Indexed"]),
    ("batch.v1.CronJobSpec", "concurrencyPolicy", &["Allow", "Forbid", "Replace"]),
    ("networking.v1.HTTPIngressPath", "pathType", &["Exact", "Prefix", "ImplementationSpecific"]),
    ("networking.v1.NetworkPolicySpec", "policyTypes", &["Ingress", "Egress"]),
    ("rbac.v1.Subject", "kind", &["User", "Group", "ServiceAccount"]),
    ("autoscaling.v2.MetricSpec", "type", &["ContainerResource", "External", "Object", "Pods", "Resource"]),
    ("autoscaling.v2.MetricTarget", "type", &["Utilization", "Value", "AverageValue"]),
    ("policy.v1.PodDisruptionBudgetSpec", "unhealthyPodEvictionPolicy", &["IfHealthyBudget", "AlwaysAllow"]),
    (
        "apimachinery.pkg.apis.meta.v1.LabelSelectorRequirement",
        "operator",
        &["In", "NotIn", "Exists", "DoesNotExist"],
    ),
];

/// [`ENUMS`] whose values the descriptions do not name: the API's own OpenAPI documents
/// (`api/openapi-spec` of Kubernetes 1.33) list them as the field's `enum` ("Possible enum
/// values" in its description), which k8s-openapi drops.
pub const ENUMS_FROM_THE_API: &[(&str, &str, &[&str])] = &[
    ("core.v1.HTTPGetAction", "scheme", &["HTTP", "HTTPS"]),
    ("core.v1.PersistentVolumeClaimSpec", "volumeMode", &["Block", "Filesystem"]),
    ("core.v1.PersistentVolumeSpec", "volumeMode", &["Block", "Filesystem"]),
    ("core.v1.PersistentVolumeClaimStatus", "phase", &["Bound", "Lost", "Pending"]),
    ("core.v1.PersistentVolumeStatus", "phase", &["Available", "Bound", "Failed", "Pending", "Released"]),
    ("core.v1.LimitRangeItem", "type", &["Container", "PersistentVolumeClaim", "Pod"]),
    ("apps.v1.StatefulSetUpdateStrategy", "type", &["OnDelete", "RollingUpdate"]),
    ("storage.v1.StorageClass", "volumeBindingMode", &["Immediate", "WaitForFirstConsumer"]),
];

/// The full component name of an [`ENUMS`] entry's.
pub fn component(short: &str) -> String {
    if short.starts_with("apimachinery.") { format!("io.k8s.{short}") } else { format!("io.k8s.api.{short}") }
}

/// The values field `field` of component `owner` takes, if a fixed set: an [`ENUMS`] (or
/// [`ENUMS_FROM_THE_API`]) entry,
/// or `True`/`False`/`Unknown` for the `status` of a condition (a component named
/// `...Condition` whose `status` the description says is one of them).
pub fn enum_of(owner: &str, field: &str, schema: &Value) -> Option<Vec<&'static str>> {
    if let Some((_, _, values)) =
        ENUMS.iter().chain(ENUMS_FROM_THE_API).find(|(c, f, _)| *f == field && component(c) == owner)
    {
        return Some(values.to_vec());
    }
    let description = schema.get("description").and_then(Value::as_str).unwrap_or_default();
    (owner.ends_with("Condition")
        && field == "status"
        && ["True", "False", "Unknown"].iter().all(|v| description.contains(v)))
    .then(|| vec!["True", "False", "Unknown"])
}

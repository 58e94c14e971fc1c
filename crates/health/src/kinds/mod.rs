//! The rules of kinds kstatus knows (its `core.go`), one module per API group, found by
//! group and kind: a custom resource that reuses a built-in kind's name in another group
//! gets the generic rules.

mod apiextensions;
mod apps;
mod batch;
mod core_v1;
mod policy;

use crate::Health;
use crate::read::{Malformed, Object};

/// A kind's rule; it runs after the generic rules found nothing to say.
pub(crate) type Rule = fn(&Object<'_>) -> Result<Health, Malformed>;

/// The rule of `kind` in `group` (`""` for the core group), if kstatus has one.
pub(crate) fn rule(group: &str, kind: &str) -> Option<Rule> {
    Some(match (group, kind) {
        ("apps" | "extensions", "Deployment") => apps::deployment,
        ("apps", "StatefulSet") => apps::stateful_set,
        ("apps" | "extensions", "DaemonSet") => apps::daemon_set,
        ("apps" | "extensions", "ReplicaSet") => apps::replica_set,
        ("batch", "Job") => batch::job,
        ("", "Pod") => core_v1::pod,
        ("", "PersistentVolumeClaim") => core_v1::persistent_volume_claim,
        ("", "Service") => core_v1::service,
        ("policy", "PodDisruptionBudget") => policy::pod_disruption_budget,
        ("apiextensions.k8s.io", "CustomResourceDefinition") => apiextensions::custom_resource_definition,
        ("", "Secret" | "ConfigMap") | ("batch", "CronJob") => exists,
        _ => return None,
    })
}

/// Kinds that are ready once they exist (no controller acts on a Secret or a ConfigMap;
/// a CronJob's health is its Jobs').
fn exists(_: &Object<'_>) -> Result<Health, Malformed> {
    Ok(Health::current("Current", "nothing to wait for"))
}

/// `InProgress` with `reason` when `have` falls short of `want`: `1 of 2 replicas ready`.
fn short(reason: &str, have: i64, want: i64, what: &str) -> Option<Health> {
    (have < want).then(|| Health::in_progress(reason, format!("{have} of {want} {what}")))
}

/// `n` and `noun`, in the plural unless `n` is 1: `1 replica`, `0 pods`.
fn count(n: i64, noun: &str) -> String {
    if n == 1 { format!("1 {noun}") } else { format!("{n} {noun}s") }
}

/// `message`, then `: detail` when there is one (a condition's or the controller's words).
fn detailed(message: impl Into<String>, detail: &str) -> String {
    let message = message.into();
    if detail.is_empty() { message } else { format!("{message}: {detail}") }
}

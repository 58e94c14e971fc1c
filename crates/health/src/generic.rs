//! The rules for every object, before and after its kind's (kstatus' `generic.go` and the
//! `Ready` check of `status.go`).

use crate::Health;
use crate::read::{Malformed, Object};

/// Deletion, an unobserved generation, and the `Reconciling` and `Stalled` conditions,
/// which decide for any kind before its own rule is asked.
pub(crate) fn before_kind(object: &Object<'_>) -> Result<Option<Health>, Malformed> {
    if object.string("metadata.deletionTimestamp")?.is_some_and(|t| !t.is_empty()) {
        return Ok(Some(terminating(object)));
    }
    if let Some(verdict) = unobserved_generation(object)? {
        return Ok(Some(verdict));
    }
    for c in object.conditions()? {
        if c.is_true("Reconciling") {
            return Ok(Some(Health::in_progress(c.reason_or("Reconciling"), c.message_or("reconciling"))));
        }
        if c.is_true("Stalled") {
            return Ok(Some(Health::failed(c.reason_or("Stalled"), c.message_or("stalled"))));
        }
    }
    Ok(None)
}

/// Being deleted; the finalizers still on it are what deletion waits for.
fn terminating(object: &Object<'_>) -> Health {
    let finalizers: Vec<&str> =
        object.list("metadata.finalizers").unwrap_or_default().iter().filter_map(|f| f.as_str()).collect();
    let message = if finalizers.is_empty() {
        "being deleted".to_owned()
    } else {
        format!("being deleted, waiting for finalizers {}", finalizers.join(", "))
    };
    Health::new(crate::Status::Terminating, "Terminating", message)
}

/// `InProgress` while `status.observedGeneration` (when there is one) differs from
/// `metadata.generation`: the status describes an older spec.
fn unobserved_generation(object: &Object<'_>) -> Result<Option<Health>, Malformed> {
    let Some(generation) = object.int("metadata.generation")? else {
        return Ok(None);
    };
    let Some(observed) = object.int("status.observedGeneration")? else {
        return Ok(None);
    };
    Ok((observed != generation).then(|| {
        Health::in_progress(
            "GenerationNotObserved",
            format!("generation {generation} not yet observed, the status is of generation {observed}"),
        )
    }))
}

/// For kinds without a rule of their own: the first `Ready` condition with a status of
/// `True`, `False` or `Unknown` decides; with none the object is `Current`.
pub(crate) fn by_ready_condition(object: &Object<'_>) -> Result<Health, Malformed> {
    for c in object.conditions()? {
        if c.type_ != "Ready" {
            continue;
        }
        match c.status {
            "True" => return Ok(Health::current("Ready", c.message_or("ready"))),
            "False" => return Ok(Health::in_progress(c.reason_or("NotReady"), c.message_or("not ready"))),
            "Unknown" => {
                return Ok(Health::in_progress(c.reason_or("NotReady"), c.message_or("readiness unknown")));
            }
            _ => {}
        }
    }
    Ok(Health::current("Current", "no readiness condition to wait for"))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::Status::{Current, Failed, InProgress, Terminating, Unknown};
    use crate::testing::{Case, check, object};

    const CR: &str = "shop.example.com/v1";

    #[test]
    fn the_generic_rules() {
        check(&[
            Case::new(
                "being deleted",
                object(CR, "Shop", json!({"metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z"}})),
                Terminating,
                "Terminating",
                "being deleted",
            ),
            Case::new(
                "deleted, with finalizers",
                object(
                    "apps/v1",
                    "Deployment",
                    json!({"metadata": {
                    "deletionTimestamp": "2026-01-01T00:00:00Z", "finalizers": ["a.example.com/x", "b"]}}),
                ),
                Terminating,
                "Terminating",
                "being deleted, waiting for finalizers a.example.com/x, b",
            ),
            Case::new(
                "an empty deletionTimestamp is none",
                object(CR, "Shop", json!({"metadata": {"deletionTimestamp": ""}})),
                Current,
                "Current",
                "no readiness condition to wait for",
            ),
            Case::new(
                "a generation not observed yet",
                object(
                    CR,
                    "Shop",
                    json!({"metadata": {"generation": 3}, "status": {"observedGeneration": 2,
                    "conditions": [{"type": "Ready", "status": "True"}]}}),
                ),
                InProgress,
                "GenerationNotObserved",
                "generation 3 not yet observed, the status is of generation 2",
            ),
            Case::new(
                "a Deployment's generation not observed yet",
                object(
                    "apps/v1",
                    "Deployment",
                    json!({"metadata": {"generation": 2}, "status": {"observedGeneration": 1}}),
                ),
                InProgress,
                "GenerationNotObserved",
                "generation 2 not yet observed, the status is of generation 1",
            ),
            Case::new(
                "no observedGeneration: no generation check",
                object(CR, "Shop", json!({"metadata": {"generation": 5}, "status": {}})),
                Current,
                "Current",
                "no readiness condition to wait for",
            ),
            Case::new(
                "Reconciling",
                object(
                    CR,
                    "Shop",
                    json!({"status": {"conditions": [
                    {"type": "Ready", "status": "True"},
                    {"type": "Reconciling", "status": "True", "reason": "Upgrading", "message": "Upgrading to 1.2."}]}}),
                ),
                InProgress,
                "Upgrading",
                "Upgrading to 1.2",
            ),
            Case::new(
                "Stalled, without reason or message",
                object(
                    CR,
                    "Shop",
                    json!({"status": {"conditions": [{"type": "Stalled", "status": "True"}]}}),
                ),
                Failed,
                "Stalled",
                "stalled",
            ),
            Case::new(
                "Stalled on a built-in kind wins over its rule",
                object(
                    "v1",
                    "ConfigMap",
                    json!({"status": {"conditions": [
                    {"type": "Stalled", "status": "True", "reason": "Broken", "message": "cannot go on"}]}}),
                ),
                Failed,
                "Broken",
                "cannot go on",
            ),
            Case::new(
                "Reconciling and Stalled that are False say nothing",
                object(
                    CR,
                    "Shop",
                    json!({"status": {"conditions": [
                    {"type": "Reconciling", "status": "False"}, {"type": "Stalled", "status": "False"}]}}),
                ),
                Current,
                "Current",
                "no readiness condition to wait for",
            ),
        ]);
    }

    #[test]
    fn the_ready_condition_of_kinds_without_a_rule() {
        // A ctop primary: the Ready condition and observedGeneration its operator writes.
        let shop = |ready: serde_json::Value| {
            object(
                CR,
                "Shop",
                json!({"metadata": {"generation": 4},
                "status": {"observedGeneration": 4, "conditions": [{"type": "Reconciled", "status": "True"}, ready]}}),
            )
        };
        check(&[
            Case::new(
                "Ready",
                shop(json!({"type": "Ready", "status": "True", "reason": "Ready", "message": ""})),
                Current,
                "Ready",
                "ready",
            ),
            Case::new(
                "Ready with a message",
                shop(json!({"type": "Ready", "status": "True", "message": "all 3 children current"})),
                Current,
                "Ready",
                "all 3 children current",
            ),
            Case::new(
                "not Ready",
                shop(json!({"type": "Ready", "status": "False", "reason": "ChildrenNotReady",
                    "message": "Deployment shop: 1 of 2 replicas available"})),
                InProgress,
                "ChildrenNotReady",
                "Deployment shop: 1 of 2 replicas available",
            ),
            Case::new(
                "not Ready, without reason or message",
                shop(json!({"type": "Ready", "status": "False"})),
                InProgress,
                "NotReady",
                "not ready",
            ),
            Case::new(
                "Ready Unknown",
                shop(json!({"type": "Ready", "status": "Unknown"})),
                InProgress,
                "NotReady",
                "readiness unknown",
            ),
            Case::new(
                "a Ready condition without a status is skipped",
                shop(json!({"type": "Ready"})),
                Current,
                "Current",
                "no readiness condition to wait for",
            ),
            Case::new(
                "no conditions",
                object(CR, "Shop", json!({"spec": {"size": 1}})),
                Current,
                "Current",
                "no readiness condition to wait for",
            ),
            Case::new(
                "a built-in kind without a rule",
                object("networking.k8s.io/v1", "Ingress", json!({})),
                Current,
                "Current",
                "no readiness condition to wait for",
            ),
            Case::new(
                "a custom kind named like a built-in one is judged by the generic rules",
                object(
                    CR,
                    "Deployment",
                    json!({"spec": {"replicas": 3}, "status": {"conditions": [
                    {"type": "Ready", "status": "False", "reason": "Scaling"}]}}),
                ),
                InProgress,
                "Scaling",
                "not ready",
            ),
        ]);
    }

    #[test]
    fn custom_resources_as_kstatus_judges_them() {
        let my_cr = |metadata: serde_json::Value, status: serde_json::Value| {
            object("something.example.com/v1", "MyCR", json!({"metadata": metadata, "status": status}))
        };
        let gen1 = || json!({"name": "x", "generation": 1});
        check(&[
            // kstatus: crdNoStatus, crdNoCondition: no known condition, so nothing to wait for.
            Case::new(
                "no status",
                my_cr(gen1(), json!(null)),
                Current,
                "Current",
                "no readiness condition to wait for",
            ),
            Case::new(
                "only another condition",
                my_cr(gen1(), json!({"conditions": [{"type": "SomeCondition", "status": "False"}]})),
                Current,
                "Current",
                "no readiness condition to wait for",
            ),
            // kstatus: crdReady, crdNotReady.
            Case::new(
                "Ready",
                my_cr(
                    gen1(),
                    json!({"conditions": [
                    {"type": "Ready", "status": "True", "reason": "AllOk", "message": "All looks ok"}]}),
                ),
                Current,
                "Ready",
                "All looks ok",
            ),
            Case::new(
                "not Ready yet",
                my_cr(
                    gen1(),
                    json!({"observedGeneration": 1, "conditions": [
                    {"type": "Ready", "status": "False", "reason": "NotReadyYet"}]}),
                ),
                InProgress,
                "NotReadyYet",
                "not ready",
            ),
            // kstatus: crdMismatchStatusGeneration: a Ready of an older generation says
            // nothing of the spec in force.
            Case::new(
                "Ready, of an older generation",
                my_cr(
                    json!({"name": "x", "generation": 2}),
                    json!({"observedGeneration": 1, "conditions": [{"type": "Ready", "status": "True"}]}),
                ),
                InProgress,
                "GenerationNotObserved",
                "generation 2 not yet observed, the status is of generation 1",
            ),
            Case::new(
                "Ready, no generation to compare",
                my_cr(
                    json!({"name": "x"}),
                    json!({"observedGeneration": 7, "conditions": [{"type": "Ready", "status": "True"}]}),
                ),
                Current,
                "Ready",
                "ready",
            ),
            Case::new(
                "the first Ready with a known status decides",
                my_cr(
                    gen1(),
                    json!({"conditions": [{"type": "Ready", "status": "Maybe"},
                    {"type": "Ready", "status": "False", "reason": "Waiting", "message": "waiting for the database."},
                    {"type": "Ready", "status": "True"}]}),
                ),
                InProgress,
                "Waiting",
                "waiting for the database",
            ),
            Case::new(
                "Stalled wins over Ready",
                my_cr(
                    gen1(),
                    json!({"conditions": [{"type": "Ready", "status": "True"},
                    {"type": "Stalled", "status": "True", "reason": "InvalidSpec", "message": "spec.size must be even"}]}),
                ),
                Failed,
                "InvalidSpec",
                "spec.size must be even",
            ),
            // A primary of a ctop operator: the Ready condition the controller keeps from its
            // children's health.
            Case::new(
                "a ctop primary waiting for a child",
                my_cr(
                    gen1(),
                    json!({"observedGeneration": 1, "conditions": [
                    {"type": "Reconciled", "status": "True", "reason": "ReconcileSucceeded"},
                    {"type": "Ready", "status": "False", "reason": "ChildInProgress",
                     "message": "Deployment shop: 1 of 2 replicas available"}]}),
                ),
                InProgress,
                "ChildInProgress",
                "Deployment shop: 1 of 2 replicas available",
            ),
        ]);
    }

    #[test]
    fn malformed_generic_fields() {
        check(&[
            Case::new(
                "deletionTimestamp",
                object(CR, "Shop", json!({"metadata": {"deletionTimestamp": 5}})),
                Unknown,
                "MalformedField",
                "metadata.deletionTimestamp is not a string",
            ),
            Case::new(
                "generation",
                object(CR, "Shop", json!({"metadata": {"generation": "1"}})),
                Unknown,
                "MalformedField",
                "metadata.generation is not an integer",
            ),
            Case::new(
                "observedGeneration",
                object(CR, "Shop", json!({"status": {"observedGeneration": 1.5}})),
                Unknown,
                "MalformedField",
                "status.observedGeneration is not an integer",
            ),
            Case::new(
                "conditions",
                object("v1", "Secret", json!({"status": {"conditions": {"type": "Ready"}}})),
                Unknown,
                "MalformedField",
                "status.conditions is not a list",
            ),
            Case::new(
                "status",
                object(CR, "Shop", json!({"status": "ok"})),
                Unknown,
                "MalformedField",
                "status is not an object",
            ),
        ]);
    }
}

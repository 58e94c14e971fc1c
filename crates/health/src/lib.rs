//! `ctop-health`: is a Kubernetes object done, still moving, stuck, or going away?
//!
//! One call, [`health`], takes an object as the API server returns it (JSON with
//! `apiVersion`, `kind`, `metadata`, `spec`, `status`) and answers with a [`Health`]: one of
//! six [`Status`]es, a CamelCase `reason` and a short lower-case `message` with the numbers
//! that explain it (`1 of 2 replicas available`). It reads only the object: no clock, no
//! cluster, no I/O, so the same object always gets the same answer. [`health_of_json`]
//! gives the same answer for the object as JSON text, parsing only the fields the rules read.
//!
//! The rules are those of cli-utils' kstatus (`pkg/kstatus/status`), the library kubectl,
//! kpt, Flux and Config Sync judge readiness with, in their order:
//!
//! 1. **For every object** ([`generic`](crate::generic)): a `metadata.deletionTimestamp`
//!    makes it `Terminating`; a `status.observedGeneration` other than `metadata.generation`
//!    makes it `InProgress` (its controller has not caught up with the last spec change);
//!    a `Reconciling` condition that is `True` makes it `InProgress`, a `Stalled` one
//!    `Failed`.
//! 2. **Per kind** (`kinds/`, one module per API group): Deployment, StatefulSet,
//!    DaemonSet, ReplicaSet (replica counts and their conditions), Job, Pod,
//!    PersistentVolumeClaim, Service, PodDisruptionBudget, CustomResourceDefinition, and
//!    Secret, ConfigMap and CronJob, which are ready once they exist.
//! 3. **Any other kind**, custom resources included: a `Ready` condition decides (`True`:
//!    `Current`; `False` or `Unknown`: `InProgress`, with the condition's own reason and
//!    message); with none, the object is `Current`.
//!
//! A field of the wrong type (`status.replicas: "two"`, `status.conditions: {}`) gives
//! `Unknown` with reason `MalformedField` and the field's path, never a panic.
//! [`Health::not_found`] is for an object that does not exist.
//!
//! The statuses and the order of the checks are kstatus'; the reasons and messages are
//! ctop's own words (kstatus' reason `LessAvailable` with `Available: 1/2` is
//! `ReplicasUnavailable` with `1 of 2 replicas available` here), but where they come from a
//! condition, whose own reason and message are passed on as kstatus does. Each kind's tests
//! name the kstatus case they mirror.
//!
//! Where this differs from kstatus: a `LoadBalancer` Service is `InProgress` until its
//! `status.loadBalancer.ingress` has an IP or a hostname (kstatus only wants a cluster
//! IP); a Pod the scheduler marked `Unschedulable` is `Failed` at once (kstatus waits 15
//! seconds after its creation, which needs a clock); and where kstatus ignores a field of
//! the wrong type and takes its default, this gives `Unknown`.
//!
//! ```
//! use ctop_health::{Status, health};
//! use serde_json::json;
//!
//! let deployment = json!({
//!     "apiVersion": "apps/v1", "kind": "Deployment",
//!     "metadata": {"name": "shop", "generation": 2},
//!     "spec": {"replicas": 2},
//!     "status": {"observedGeneration": 2, "replicas": 2, "updatedReplicas": 2,
//!                "readyReplicas": 1, "availableReplicas": 1},
//! });
//! let h = health(&deployment);
//! assert_eq!(h.status, Status::InProgress);
//! assert_eq!(h.reason, "ReplicasUnavailable");
//! assert_eq!(h.message, "1 of 2 replicas available");
//! ```

mod generic;
mod kinds;
mod read;
mod text;

use std::fmt;

use serde_json::Value;

use read::{Malformed, Object};
pub use text::health_of_json;

/// The health of one object, as kstatus reckons it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Status {
    /// Its controller has done all it was asked: the latest spec is in effect and ready.
    Current,
    /// Its controller is still working on it (a rollout, a pod starting, a generation not
    /// yet observed); waiting should help.
    InProgress,
    /// Its controller has given up or cannot go on (a rollout past its deadline, a failed
    /// Job, a crash-looping Pod, a `Stalled` condition); waiting will not help.
    Failed,
    /// It is being deleted (`metadata.deletionTimestamp` is set).
    Terminating,
    /// It does not exist ([`Health::not_found`]).
    NotFound,
    /// Its fields cannot be read (a field of the wrong type, a Pod phase no release has).
    Unknown,
}

impl Status {
    /// The status as kstatus spells it: `"Current"`, `"InProgress"`, ...
    #[must_use]
    pub fn as_str(&self) -> &'static str {
        match self {
            Status::Current => "Current",
            Status::InProgress => "InProgress",
            Status::Failed => "Failed",
            Status::Terminating => "Terminating",
            Status::NotFound => "NotFound",
            Status::Unknown => "Unknown",
        }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What [`health`] found: the status, why in one CamelCase word, and a short sentence.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Health {
    /// The verdict.
    pub status: Status,
    /// One CamelCase word for the cause (`ReplicasUnavailable`, `JobFailed`, `Ready`); a
    /// condition's own reason where the verdict comes from one.
    pub reason: String,
    /// A short sentence, lower-case first and without a final period, that does not name
    /// the object (`1 of 2 replicas available`); a condition's own message where the
    /// verdict comes from one.
    pub message: String,
}

impl Health {
    /// The health of an object that does not exist (a child not in the cache yet).
    #[must_use]
    pub fn not_found() -> Health {
        Health::new(Status::NotFound, "NotFound", "not found")
    }

    /// Whether the status is [`Status::Current`].
    #[must_use]
    pub fn is_current(&self) -> bool {
        self.status == Status::Current
    }

    pub(crate) fn new(status: Status, reason: &str, message: impl Into<String>) -> Health {
        Health { status, reason: reason.to_owned(), message: message.into() }
    }

    pub(crate) fn current(reason: &str, message: impl Into<String>) -> Health {
        Health::new(Status::Current, reason, message)
    }

    pub(crate) fn in_progress(reason: &str, message: impl Into<String>) -> Health {
        Health::new(Status::InProgress, reason, message)
    }

    pub(crate) fn failed(reason: &str, message: impl Into<String>) -> Health {
        Health::new(Status::Failed, reason, message)
    }
}

impl From<Malformed> for Health {
    fn from(m: Malformed) -> Health {
        Health::new(Status::Unknown, "MalformedField", m.to_string())
    }
}

/// The health of `obj`, an object with `apiVersion` and `kind` as the API server returns
/// it. `null` is [`Health::not_found`]; anything that is not an object with a string
/// `apiVersion` and `kind` is `Unknown` (reason `InvalidObject`).
#[must_use]
pub fn health(obj: &Value) -> Health {
    if obj.is_null() {
        return Health::not_found();
    }
    let object = match Object::new(obj) {
        Ok(object) => object,
        Err(why) => return Health::new(Status::Unknown, "InvalidObject", why),
    };
    judge(&object).unwrap_or_else(Health::from)
}

/// kstatus' order: the generic rules, then the kind's, then the `Ready` condition.
fn judge(object: &Object<'_>) -> Result<Health, Malformed> {
    if let Some(verdict) = generic::before_kind(object)? {
        return Ok(verdict);
    }
    if let Some(rule) = kinds::rule(object.group, object.kind) {
        return rule(object);
    }
    generic::by_ready_condition(object)
}

#[cfg(test)]
mod testing;

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::testing::{Case, check};

    #[test]
    fn status_spells_as_kstatus_does() {
        for (status, text) in [
            (Status::Current, "Current"),
            (Status::InProgress, "InProgress"),
            (Status::Failed, "Failed"),
            (Status::Terminating, "Terminating"),
            (Status::NotFound, "NotFound"),
            (Status::Unknown, "Unknown"),
        ] {
            assert_eq!(status.as_str(), text);
            assert_eq!(status.to_string(), text);
            assert_eq!(serde_json::to_value(status).expect("serializes"), json!(text));
        }
    }

    #[test]
    fn health_serializes_as_scripts_see_it() {
        let h = Health::in_progress("ReplicasNotReady", "1 of 2 replicas ready");
        let v = serde_json::to_value(&h).expect("serializes");
        assert_eq!(
            v,
            json!({"status": "InProgress", "reason": "ReplicasNotReady", "message": "1 of 2 replicas ready"})
        );
        assert_eq!(serde_json::from_value::<Health>(v).expect("deserializes"), h);
    }

    #[test]
    fn not_found_and_is_current() {
        let gone = Health::not_found();
        assert_eq!((gone.status, gone.reason.as_str()), (Status::NotFound, "NotFound"));
        assert!(!gone.is_current());
        assert_eq!(health(&Value::Null), gone);
        assert!(health(&json!({"apiVersion": "v1", "kind": "ConfigMap"})).is_current());
    }

    #[test]
    fn objects_that_cannot_be_judged() {
        check(&[
            Case::new("a string", json!("Deployment"), Status::Unknown, "InvalidObject", "not an object"),
            Case::new(
                "no kind",
                json!({"apiVersion": "v1"}),
                Status::Unknown,
                "InvalidObject",
                "the object has no kind",
            ),
            Case::new(
                "no apiVersion",
                json!({"kind": "Pod"}),
                Status::Unknown,
                "InvalidObject",
                "the object has no apiVersion",
            ),
            Case::new(
                "kind of the wrong type",
                json!({"apiVersion": "v1", "kind": 7}),
                Status::Unknown,
                "InvalidObject",
                "the object's kind is not a string",
            ),
        ]);
    }
}

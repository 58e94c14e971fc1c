//! A write of a Pod's status (`ValidatePodStatusUpdate` in core/validation/validation.go),
//! as far as a client writing status can get it wrong: a terminated container that may not
//! restart (`ValidateContainerStateTransition`, `ValidateInitContainerStateTransition`)
//! and the nominated node's name. The status strategy keeps the stored spec, so the spec
//! read here is `old`'s. Left out: pod conditions, pod and host IPs, resource claim
//! statuses and the container user/resource checks.

use serde_json::Value;

use crate::field::{Cause, Path, forbid, invalid_str, list, string};
use crate::names;

/// `ValidatePodStatusUpdate` (the status part; metadata is kubesim's).
pub(crate) fn validate_pod_status(new: &Value, old: &Value) -> Vec<Cause> {
    let p = Path::new("status");
    let status = new.get("status").unwrap_or(&Value::Null);
    let old_status = old.get("status").unwrap_or(&Value::Null);
    let spec = old.get("spec").unwrap_or(&Value::Null);
    let mut out = Vec::new();
    let nominated = string(status, "nominatedNodeName");
    if !nominated.is_empty() && nominated != string(old_status, "nominatedNodeName") {
        out.extend(
            names::subdomain_name(nominated)
                .iter()
                .map(|m| invalid_str(&p.child("nominatedNodeName"), nominated, m)),
        );
    }
    let policy = string(spec, "restartPolicy");
    for (key, init) in [("containerStatuses", false), ("initContainerStatuses", true)] {
        out.extend(state_transitions(
            list(status, key),
            list(old_status, key),
            policy,
            init.then(|| list(spec, "initContainers")),
            &p.child(key),
        ));
    }
    out
}

fn terminated(s: &Value) -> Option<&Value> {
    s.pointer("/state/terminated").filter(|t| !t.is_null())
}

/// A terminated container may not leave that state unless the pod restarts it (Always, or
/// OnFailure after a failure, or a sidecar init container: `init` holds the pod's init
/// containers when the statuses are theirs).
fn state_transitions(
    new: &[Value],
    old: &[Value],
    policy: &str,
    init: Option<&[Value]>,
    p: &Path,
) -> Vec<Cause> {
    let mut out = Vec::new();
    if policy == "Always" {
        return out;
    }
    for (i, before) in old.iter().enumerate() {
        let Some(t) = terminated(before) else { continue };
        if t.get("exitCode").and_then(Value::as_i64).unwrap_or(0) != 0 && policy == "OnFailure" {
            continue;
        }
        let name = string(before, "name");
        let sidecar = init.is_some_and(|cs| {
            cs.iter()
                .find(|c| string(c, "name") == name)
                .is_some_and(|c| string(c, "restartPolicy") == "Always")
        });
        if sidecar {
            continue;
        }
        // One cause per new status of that name that is not terminated.
        for _ in new.iter().filter(|s| string(s, "name") == name && terminated(s).is_none()) {
            out.push(forbid(&p.index(i).child("state"), "may not be transitioned to non-terminated state"));
        }
    }
    out
}

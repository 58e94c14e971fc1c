//! The core group (`v1`): Pod, PersistentVolumeClaim, Service.

use super::detailed;
use crate::read::{self, Malformed, Object};
use crate::{Health, Status};

/// A Pod by its phase. One that has run to its end, successfully or not, is `Current`
/// (kstatus: nothing more will happen to it); a running one waits for its `Ready`
/// condition and is `Failed` while a container is in `CrashLoopBackOff`; a pending one is
/// `Failed` once the scheduler found no node for it.
pub(super) fn pod(o: &Object<'_>) -> Result<Health, Malformed> {
    match o.string("status.phase")?.unwrap_or_default() {
        "Succeeded" => Ok(Health::current("PodSucceeded", "completed successfully")),
        "Failed" => {
            let why = o.string("status.reason")?.unwrap_or_default();
            let message = if why.is_empty() {
                "completed without success".to_owned()
            } else {
                format!("completed without success ({why})")
            };
            Ok(Health::current("PodFailed", message))
        }
        "Running" => {
            if o.true_condition("Ready")?.is_some() {
                return Ok(Health::current("PodReady", "running and ready"));
            }
            let looping = crash_looping(o)?;
            Ok(if looping.is_empty() {
                Health::in_progress("PodNotReady", "running but not ready")
            } else {
                Health::failed(
                    "ContainerCrashLooping",
                    format!("containers in CrashLoopBackOff: {}", looping.join(", ")),
                )
            })
        }
        "Pending" => {
            let conditions = o.conditions()?;
            let unscheduled = conditions.iter().find(|c| c.type_ == "PodScheduled" && c.status == "False");
            Ok(match unscheduled {
                Some(c) if c.reason == "Unschedulable" => {
                    Health::failed("PodUnschedulable", detailed("cannot be scheduled", c.message()))
                }
                _ => Health::in_progress("PodPending", "pending"),
            })
        }
        "" => Ok(Health::in_progress("PodNotObserved", "no phase yet")),
        other => Ok(Health::new(Status::Unknown, "UnknownPhase", format!("unknown phase {other:?}"))),
    }
}

/// The names of the containers waiting in `CrashLoopBackOff` (init containers are not
/// looked at, as in kstatus).
fn crash_looping<'a>(o: &Object<'a>) -> Result<Vec<&'a str>, Malformed> {
    let mut names = Vec::new();
    for (at, status) in read::entries(o.value, "status.containerStatuses")? {
        let name = read::string(status, "name").map_err(|e| e.within(&at))?;
        let waiting = read::string(status, "state.waiting.reason").map_err(|e| e.within(&at))?;
        if let (Some(name), Some("CrashLoopBackOff")) = (name, waiting) {
            names.push(name);
        }
    }
    Ok(names)
}

/// A PersistentVolumeClaim is `Current` once `Bound`.
pub(super) fn persistent_volume_claim(o: &Object<'_>) -> Result<Health, Malformed> {
    Ok(match o.string("status.phase")? {
        Some("Bound") => match o.string("spec.volumeName")? {
            Some(volume) if !volume.is_empty() => {
                Health::current("Bound", format!("bound to volume {volume}"))
            }
            _ => Health::current("Bound", "bound"),
        },
        Some(phase) if !phase.is_empty() => {
            Health::in_progress("NotBound", format!("phase {phase}, not Bound yet"))
        }
        _ => Health::in_progress("NotBound", "not bound yet"),
    })
}

/// A Service is `Current` once it exists, but for a `LoadBalancer`, which waits for its
/// cluster IP and then for an IP or hostname in `status.loadBalancer.ingress`.
pub(super) fn service(o: &Object<'_>) -> Result<Health, Malformed> {
    let type_ = o.string("spec.type")?.filter(|t| !t.is_empty()).unwrap_or("ClusterIP");
    if type_ != "LoadBalancer" {
        return Ok(Health::current("Current", format!("type {type_}, nothing to wait for")));
    }
    if o.string("spec.clusterIP")?.is_none_or(str::is_empty) {
        return Ok(Health::in_progress("NoIPAssigned", "no cluster IP assigned yet"));
    }
    for (at, ingress) in read::entries(o.value, "status.loadBalancer.ingress")? {
        for field in ["ip", "hostname"] {
            if let Some(address) =
                read::string(ingress, field).map_err(|e| e.within(&at))?.filter(|a| !a.is_empty())
            {
                return Ok(Health::current("Ready", format!("load balancer at {address}")));
            }
        }
    }
    Ok(Health::in_progress("LoadBalancerPending", "waiting for the load balancer's IP or hostname"))
}

#[cfg(test)]
mod tests;

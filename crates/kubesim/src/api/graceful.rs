//! Graceful deletion, as `rest.BeforeDelete`
//! (`staging/src/k8s.io/apiserver/pkg/registry/rest/delete.go`) decides it with the Pod
//! strategy's `CheckGracefulDelete` (`pkg/registry/core/pod/strategy.go`), the only
//! built-in kind that deletes gracefully: a Pod on a node is not removed at once but
//! marked with `deletionTimestamp` (now plus the grace period) and
//! `deletionGracePeriodSeconds`, and the kubelet removes it once its containers stopped
//! (`workloads/kubelet.rs`). The period is the request's `gracePeriodSeconds`, else the Pod's
//! `terminationGracePeriodSeconds`; 0 for a Pod on no node or in a terminal phase; a
//! negative one is 1. A deletion already under way can only be shortened.

use serde_json::Value;

use crate::kinds::registry::ResourceType;

/// What a DELETE does to the grace of an object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Grace {
    /// Not a graceful deletion: removed now (or marked deleting while finalizers hold it).
    Now,
    /// A graceful deletion is pending and the request does not shorten it: nothing changes
    /// and the answer is the object as it is.
    Pending,
    /// Set `deletionTimestamp` and `deletionGracePeriodSeconds` (seconds from now, or the
    /// shortened deadline); with 0 the object is then removed unless finalizers hold it.
    Set {
        /// The deletion deadline, RFC 3339.
        timestamp: String,
        /// `deletionGracePeriodSeconds`.
        seconds: i64,
    },
}

/// The grace of deleting `live` (of type `rt`) with the request's `gracePeriodSeconds`,
/// at `now`.
pub(super) fn before_delete(
    rt: &ResourceType,
    live: &Value,
    requested: Option<i64>,
    now: jiff::Timestamp,
) -> Grace {
    if !(rt.group.is_empty() && rt.kind == "Pod") {
        return Grace::Now;
    }
    // "Negative values will be treated as the value `1s` on the delete path."
    let requested = requested.map(|p| if p < 0 { 1 } else { p });
    let meta = &live["metadata"];
    if let Some(deadline) = meta["deletionTimestamp"].as_str().and_then(|t| t.parse::<jiff::Timestamp>().ok())
    {
        let current = meta["deletionGracePeriodSeconds"].as_i64().unwrap_or(0);
        if current <= 0 {
            return Grace::Now;
        }
        // Only a shorter grace period may be asked for; the deadline moves by as much.
        return match requested {
            Some(period) if period < current => Grace::Set {
                timestamp: rfc3339(deadline - jiff::SignedDuration::from_secs(current - period)),
                seconds: period,
            },
            _ => Grace::Pending,
        };
    }
    let mut period =
        requested.unwrap_or_else(|| live["spec"]["terminationGracePeriodSeconds"].as_i64().unwrap_or(0));
    if live["spec"]["nodeName"].as_str().is_none_or(str::is_empty) {
        period = 0;
    }
    if matches!(live["status"]["phase"].as_str(), Some("Failed" | "Succeeded")) {
        period = 0;
    }
    if period < 0 {
        period = 1;
    }
    Grace::Set { timestamp: rfc3339(now + jiff::SignedDuration::from_secs(period)), seconds: period }
}

/// A timestamp as the API server writes one (`metav1.Time`: seconds, UTC).
fn rfc3339(t: jiff::Timestamp) -> String {
    t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::kinds::registry::Registry;

    fn pods() -> std::sync::Arc<ResourceType> {
        Registry::with_builtins().get("", "v1", "pods").expect("pods")
    }

    #[test]
    fn running_pods_get_their_grace_and_others_none() {
        let now: jiff::Timestamp = "2026-01-01T00:00:00Z".parse().expect("time");
        let running = json!({"metadata": {}, "spec": {"nodeName": "n", "terminationGracePeriodSeconds": 30},
            "status": {"phase": "Running"}});
        let at =
            |s: i64| Grace::Set { timestamp: rfc3339(now + jiff::SignedDuration::from_secs(s)), seconds: s };
        assert_eq!(before_delete(&pods(), &running, None, now), at(30));
        assert_eq!(before_delete(&pods(), &running, Some(5), now), at(5));
        assert_eq!(before_delete(&pods(), &running, Some(-3), now), at(1));
        assert_eq!(before_delete(&pods(), &running, Some(0), now), at(0));
        let unscheduled = json!({"metadata": {}, "spec": {"terminationGracePeriodSeconds": 30}});
        assert_eq!(before_delete(&pods(), &unscheduled, None, now), at(0));
        let done = json!({"metadata": {}, "spec": {"nodeName": "n"}, "status": {"phase": "Succeeded"}});
        assert_eq!(before_delete(&pods(), &done, Some(10), now), at(0));
        let cms = Registry::with_builtins().get("", "v1", "configmaps").expect("configmaps");
        assert_eq!(before_delete(&cms, &running, None, now), Grace::Now);
    }

    #[test]
    fn a_pending_deletion_can_only_be_shortened() {
        let now: jiff::Timestamp = "2026-01-01T00:00:10Z".parse().expect("time");
        let deleting = json!({"metadata": {"deletionTimestamp": "2026-01-01T00:00:30Z", "deletionGracePeriodSeconds": 30},
            "spec": {"nodeName": "n"}});
        assert_eq!(before_delete(&pods(), &deleting, None, now), Grace::Pending);
        assert_eq!(before_delete(&pods(), &deleting, Some(30), now), Grace::Pending);
        assert_eq!(
            before_delete(&pods(), &deleting, Some(0), now),
            Grace::Set { timestamp: "2026-01-01T00:00:00Z".into(), seconds: 0 }
        );
        let forced = json!({"metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z", "deletionGracePeriodSeconds": 0}});
        assert_eq!(before_delete(&pods(), &forced, None, now), Grace::Now);
    }
}

//! The view of a ring's members that every replica keeps: a watch of the Leases labelled
//! [`RING_LABEL`](super::RING_LABEL)`=<operator>` in the operator's namespace.
//!
//! A Lease is judged by when this replica *saw* its last renewal (a change of `renewTime`
//! or holder), plus its `leaseDurationSeconds`, as client-go's leader election does: the
//! member's clock and ours need not agree, and a replica that just started counts every
//! Lease as freshly renewed. A member is live while its Lease is held under its own name
//! (`holderIdentity` = Lease name) and not expired by that rule.

use std::collections::HashMap;
use std::time::Duration;

use futures::StreamExt as _;
use k8s_openapi::api::coordination::v1::Lease;
use kube::Client;
use kube::api::Api;
use kube::runtime::{WatchStreamExt as _, watcher};
use serde::Serialize;
use tokio::sync::watch;
use tokio::time::Instant;

use super::{FENCE_HOLDER, OBJECTS_ANNOTATION, RING_LABEL};

/// One member's Lease as this replica sees it (served on `/status`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MemberInfo {
    /// The Lease's name, which is the member's name.
    pub name: String,
    /// Its `holderIdentity`: the member itself, [`FENCE_HOLDER`] while the sharder holds it,
    /// empty once released.
    pub holder: String,
    /// The primary objects the member last reported holding.
    pub objects: Option<u64>,
    /// The Lease's `renewTime`.
    pub renew_time: Option<String>,
    /// The Lease's `leaseDurationSeconds`.
    pub lease_duration_seconds: i32,
    /// Whether objects may be assigned to it.
    pub live: bool,
    /// Whether the sharder holds its Lease (it left; its objects are being moved).
    pub fenced: bool,
    /// The Lease's resourceVersion when last seen: the sharder fences a member only if its
    /// Lease is still at that version (it did not renew since).
    #[serde(skip)]
    pub resource_version: Option<String>,
}

/// A sharded run's ring as one replica sees it: `/status`'s `sharding` and the
/// `ControllerStatus` objects' `status.sharding`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ShardingStatus {
    /// The ring: the operator's name.
    pub ring: String,
    /// This replica's member name.
    pub member: String,
    /// Whether this replica is the sharder (it leads on the leader Lease).
    pub sharder: bool,
    /// Every member Lease of the ring.
    pub members: Vec<MemberInfo>,
}

/// Every member Lease of a ring, and the live members (sorted).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MemberSet {
    /// The live members, sorted.
    pub live: Vec<String>,
    /// Every Lease of the ring, sorted by name.
    pub all: Vec<MemberInfo>,
}

impl MemberSet {
    /// The member named `name`, if it has a Lease.
    #[must_use]
    pub fn get(&self, name: &str) -> Option<&MemberInfo> {
        self.all.iter().find(|m| m.name == name)
    }

    /// Whether `name` is live.
    #[must_use]
    pub fn is_live(&self, name: &str) -> bool {
        self.live.binary_search_by(|m| m.as_str().cmp(name)).is_ok()
    }
}

struct Seen {
    lease: Lease,
    /// When the holder or `renewTime` last changed, by our clock.
    at: Instant,
}

fn spec_key(l: &Lease) -> (Option<String>, Option<String>) {
    let spec = l.spec.as_ref();
    (
        spec.and_then(|s| s.holder_identity.clone()),
        spec.and_then(|s| s.renew_time.as_ref()).map(|t| t.0.to_string()),
    )
}

/// `l` as seen at `now`: renewed then, unless its holder and `renewTime` are those of
/// `prev`.
fn observe(prev: Option<&Seen>, l: Lease, now: Instant) -> Seen {
    let at = match prev {
        Some(p) if spec_key(&p.lease) == spec_key(&l) => p.at,
        _ => now,
    };
    Seen { lease: l, at }
}

fn duration(l: &Lease) -> Duration {
    let secs = l.spec.as_ref().and_then(|s| s.lease_duration_seconds).unwrap_or(15);
    Duration::from_secs(u64::try_from(secs).unwrap_or(0))
}

/// The set as of `now`, and when it next changes by expiry alone.
fn evaluate(seen: &HashMap<String, Seen>, now: Instant) -> (MemberSet, Option<Instant>) {
    let mut set = MemberSet::default();
    let mut next: Option<Instant> = None;
    for (name, s) in seen {
        let spec = s.lease.spec.as_ref();
        let holder = spec.and_then(|s| s.holder_identity.clone()).unwrap_or_default();
        let expiry = s.at + duration(&s.lease);
        let valid = now < expiry;
        if valid {
            next = Some(next.map_or(expiry, |n| n.min(expiry)));
        }
        let live = valid && holder == *name;
        let fenced = valid && holder == FENCE_HOLDER;
        if live {
            set.live.push(name.clone());
        }
        set.all.push(MemberInfo {
            name: name.clone(),
            objects: s
                .lease
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(OBJECTS_ANNOTATION))
                .and_then(|v| v.parse().ok()),
            renew_time: spec.and_then(|s| s.renew_time.as_ref()).map(|t| t.0.to_string()),
            lease_duration_seconds: spec.and_then(|s| s.lease_duration_seconds).unwrap_or(15),
            holder,
            live,
            fenced,
            resource_version: s.lease.metadata.resource_version.clone(),
        });
    }
    set.live.sort();
    set.all.sort_by(|a, b| a.name.cmp(&b.name));
    (set, next)
}

/// Watch `ring`'s member Leases in `namespace` until `stop`; the receiver holds the
/// current [`MemberSet`] and changes when a member joins, leaves, expires or reports.
pub(crate) fn watch_members(
    client: &Client,
    namespace: &str,
    ring: &str,
    mut stop: watch::Receiver<bool>,
) -> watch::Receiver<MemberSet> {
    let api: Api<Lease> = Api::namespaced(client.clone(), namespace);
    let config = watcher::Config::default().labels(&format!("{RING_LABEL}={ring}"));
    let (tx, rx) = watch::channel(MemberSet::default());
    let ring = ring.to_owned();
    tokio::spawn(async move {
        let mut events = std::pin::pin!(watcher(api, config).default_backoff());
        let mut seen: HashMap<String, Seen> = HashMap::new();
        // A relist's objects, until it ends.
        let mut relist: Option<HashMap<String, Seen>> = None;
        let mut wake: Option<Instant> = None;
        loop {
            let sleep = async {
                match wake {
                    Some(t) => tokio::time::sleep_until(t).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = stop.wait_for(|s| *s) => return,
                () = sleep => {}
                e = events.next() => {
                    let Some(e) = e else { return };
                    let now = Instant::now();
                    match e {
                        Ok(watcher::Event::Init) => relist = Some(HashMap::new()),
                        Ok(watcher::Event::InitApply(l)) => {
                            if let (Some(r), Some(name)) = (relist.as_mut(), l.metadata.name.clone()) {
                                r.insert(name.clone(), observe(seen.get(&name), l, now));
                            }
                        }
                        Ok(watcher::Event::InitDone) => {
                            if let Some(r) = relist.take() {
                                seen = r;
                            }
                        }
                        Ok(watcher::Event::Apply(l)) => {
                            if let Some(name) = l.metadata.name.clone() {
                                let s = observe(seen.get(&name), l, now);
                                seen.insert(name, s);
                            }
                        }
                        Ok(watcher::Event::Delete(l)) => {
                            if let Some(name) = l.metadata.name.as_deref() {
                                seen.remove(name);
                            }
                        }
                        Err(e) => {
                            tracing::warn!(ring, error = %e, "watch of the member Leases failed; retrying");
                            continue;
                        }
                    }
                }
            }
            let (set, next) = evaluate(&seen, Instant::now());
            wake = next;
            tx.send_if_modified(|cur| {
                let changed = *cur != set;
                if changed {
                    *cur = set;
                }
                changed
            });
        }
    });
    rx
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::coordination::v1::LeaseSpec;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    fn lease(name: &str, holder: &str, secs: i32) -> Lease {
        Lease {
            metadata: ObjectMeta { name: Some(name.into()), ..ObjectMeta::default() },
            spec: Some(LeaseSpec {
                holder_identity: Some(holder.into()),
                lease_duration_seconds: Some(secs),
                ..LeaseSpec::default()
            }),
        }
    }

    #[test]
    fn members_are_judged_by_when_we_saw_them_renew() {
        let t0 = Instant::now();
        let mut seen = HashMap::new();
        seen.insert("a".to_owned(), Seen { lease: lease("a", "a", 10), at: t0 });
        seen.insert("b".to_owned(), Seen { lease: lease("b", "b", 5), at: t0 });
        seen.insert("c".to_owned(), Seen { lease: lease("c", "", 1), at: t0 });
        seen.insert("d".to_owned(), Seen { lease: lease("d", FENCE_HOLDER, 30), at: t0 });
        let (set, next) = evaluate(&seen, t0);
        assert_eq!(set.live, ["a", "b"]);
        assert_eq!(next, Some(t0 + Duration::from_secs(1)), "the earliest expiry wakes the watch");
        assert!(set.get("d").is_some_and(|d| d.fenced && !d.live));
        assert!(set.get("c").is_some_and(|c| !c.live && !c.fenced), "a released Lease is not live");
        let (later, _) = evaluate(&seen, t0 + Duration::from_secs(6));
        assert_eq!(later.live, ["a"], "b expired 5 s after we saw it renew");
        assert!(later.is_live("a") && !later.is_live("b"));
    }
}

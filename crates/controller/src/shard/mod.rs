//! Sharding: the primary objects of one operator spread over its replicas
//! (`ctop run --sharding`), with the cluster as the only coordinator. Start with
//! [`Shard::start`], which `run` calls for each replica; the design and its limits are in
//! `docs/sharding.md`.
//!
//! - **Membership** (`members`): every replica holds a `coordination.k8s.io/v1` Lease of its
//!   own, named after it and labelled [`RING_LABEL`]`=<operator>`, renewed like a leader's
//!   (`leader::LeaderElector`). Every replica watches the ring's Leases and judges each one
//!   by when *it* saw the last renewal, as client-go does, so clocks need not agree. A
//!   replica that cannot renew within the renew deadline stops: the run ends with
//!   `RunError::LostMembership`, before its Lease can expire.
//! - **Assignment** (`sharder`): the replica elected on the operator's leader Lease labels
//!   each unassigned primary object `shard.ctop.dev/<operator>: <member>` by the consistent
//!   hash ring over the live members ([`crate::ring`]). It watches only the objects without
//!   that label, so its memory does not grow with the objects; it lists the assigned ones
//!   only when the members change, and every five minutes.
//! - **Moving**: an object whose member is alive moves through a drain handshake: the
//!   sharder sets `drain.ctop.dev/<operator>: <new member>`; the old member stops queueing
//!   it, waits for a reconcile in flight to finish, relabels its children and then the
//!   object in one write guarded by its resourceVersion (`drain`). An object whose member's
//!   Lease expired is moved at once, after the sharder took that Lease over for twice its
//!   duration (a restarted member cannot come back while its objects move).
//! - **Watching**: each member's primary and child watches select its own label on the
//!   server; children are applied carrying it.

pub(crate) mod arrive;
pub(crate) mod drain;
pub(crate) mod members;
mod pages;
mod sharder;

use std::collections::BTreeMap;
use std::sync::Arc;

use kube::Client;
use parking_lot::Mutex;
use tokio::sync::watch;

pub use members::{MemberInfo, MemberSet, ShardingStatus};
pub(crate) use sharder::{Child, Primary, SharderConfig, run_sharder};

use crate::error::RunError;
use crate::health::{Health, Metrics};
use crate::leader::{LeaderElector, Leadership, LeaseConfig};
use crate::metrics::ShardMetrics;
use crate::object::Object;
use crate::options::{LeaseTiming, RunOptions};

/// The label on a member's Lease naming its ring (the operator).
pub const RING_LABEL: &str = "shard.ctop.dev/ring";
/// The annotation on a member's Lease counting the primary objects it holds.
pub const OBJECTS_ANNOTATION: &str = "shard.ctop.dev/objects";
/// The holder the sharder writes into a Lease it took over from a member that stopped
/// renewing it.
pub const FENCE_HOLDER: &str = "ctop-sharder";
/// How often the sharder lists every assigned object even when no member changed.
pub const RESYNC: std::time::Duration = std::time::Duration::from_secs(300);

/// The label keys of one operator's ring.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShardLabels {
    /// `shard.ctop.dev/<operator>`: the member an object belongs to.
    pub shard: String,
    /// `drain.ctop.dev/<operator>`: the member an object is being handed to.
    pub drain: String,
}

impl ShardLabels {
    /// The keys for `operator` (at most 63 characters, as a label name).
    #[must_use]
    pub fn new(operator: &str) -> Self {
        Self { shard: format!("shard.ctop.dev/{operator}"), drain: format!("drain.ctop.dev/{operator}") }
    }
}

/// A member's name from a replica's identity: the same string is the Lease's name, its
/// `holderIdentity` and the label value on objects, so it must be a DNS label (at most 63
/// lowercase letters, digits and `-`). Other characters become `-`; a longer name keeps
/// its first 50 characters and a hash of the whole.
#[must_use]
pub fn member_name(identity: &str) -> String {
    let mut s: String = identity
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '-' })
        .collect();
    s = s.trim_matches('-').to_owned();
    if s.len() > 63 {
        let hash = xxhash_rust::xxh64::xxh64(identity.as_bytes(), 0);
        s = format!("{}-{:012x}", s[..50].trim_end_matches('-'), hash & 0xffff_ffff_ffff);
    }
    if s.is_empty() { "ctop".to_owned() } else { s }
}

/// One replica's part in the ring: who it is, the label keys, the members it sees.
pub(crate) struct Shard {
    pub(crate) me: String,
    pub(crate) labels: ShardLabels,
    pub(crate) members: watch::Receiver<MemberSet>,
    pub(crate) metrics: ShardMetrics,
    /// Primary objects held, by controller; their sum goes on the member's Lease.
    counts: Mutex<BTreeMap<String, usize>>,
    annotations: watch::Sender<BTreeMap<String, String>>,
}

/// Whether a cached primary object is this member's to reconcile.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Ownership<'a> {
    /// Labelled for this member, not draining.
    Mine,
    /// Labelled for this member and being handed to another.
    Draining(&'a str),
    /// Not this member's (a late event of an object that moved).
    NotMine,
}

impl Shard {
    /// This replica's part in `operator`'s ring; `members` is the view of the ring's Leases.
    pub(crate) fn new(
        me: String,
        operator: &str,
        members: watch::Receiver<MemberSet>,
        metrics: ShardMetrics,
    ) -> (Arc<Self>, watch::Receiver<BTreeMap<String, String>>) {
        let (annotations, rx) = watch::channel(BTreeMap::new());
        let shard = Arc::new(Self {
            me,
            labels: ShardLabels::new(operator),
            members,
            metrics,
            counts: Mutex::default(),
            annotations,
        });
        (shard, rx)
    }

    /// The label selector of this member's watches: `shard.ctop.dev/<operator>=<me>`.
    pub(crate) fn selector(&self) -> String {
        format!("{}={}", self.labels.shard, self.me)
    }

    /// `selector` joined to another selector (both must hold).
    pub(crate) fn narrow(&self, other: Option<&str>) -> String {
        match other.filter(|s| !s.trim().is_empty()) {
            Some(s) => format!("{s},{}", self.selector()),
            None => self.selector(),
        }
    }

    pub(crate) fn ownership<'a>(&self, o: &'a Object) -> Ownership<'a> {
        let labels = o.labels();
        if labels.get(&self.labels.shard) != Some(self.me.as_str()) {
            return Ownership::NotMine;
        }
        match labels.get(&self.labels.drain) {
            Some(to) if to != self.me => Ownership::Draining(to),
            _ => Ownership::Mine,
        }
    }

    /// Record how many primary objects `controller` holds; the total goes on the Lease with
    /// the next renewal.
    pub(crate) fn set_count(&self, controller: &str, n: usize) {
        let total: usize = {
            let mut counts = self.counts.lock();
            counts.insert(controller.to_owned(), n);
            counts.values().sum()
        };
        self.metrics.set_held(controller, n);
        self.annotations.send_if_modified(|a| {
            let v = total.to_string();
            let changed = a.get(OBJECTS_ANNOTATION) != Some(&v);
            a.insert(OBJECTS_ANNOTATION.to_owned(), v);
            changed
        });
    }
}

use members::watch_members;

/// A replica's membership: its part in the ring and its member Lease.
pub(crate) struct Member {
    pub(crate) shard: Arc<Shard>,
    /// Held while the Lease is renewed; workers reconcile only while it reads `true`.
    pub(crate) lease: Leadership,
}

/// Join `options.name`'s ring as `identity`: start holding the member Lease and watching
/// the others', until `stop`.
pub(crate) fn join(
    client: &Client,
    options: &RunOptions,
    timing: LeaseTiming,
    identity: &str,
    metrics: &Metrics,
    stop: watch::Receiver<bool>,
) -> Result<Member, RunError> {
    let ring = &options.name;
    if ring.len() > 63 {
        return Err(RunError::Start(format!(
            "cannot shard operator {ring:?}: its name is longer than 63 characters, and sharding labels objects with it (shard.ctop.dev/<name>); give it a shorter --name"
        )));
    }
    let me = member_name(identity);
    let members = watch_members(client, &options.lease_namespace, ring, stop);
    let (shard, annotations) = Shard::new(me.clone(), ring, members, metrics.shard());
    let mut config = LeaseConfig::new(options.lease_namespace.clone(), me.clone(), me);
    config.lease_duration = timing.lease_duration;
    config.renew_deadline = timing.renew_deadline;
    config.retry_period = timing.retry_period;
    config.labels.insert(RING_LABEL.to_owned(), ring.clone());
    let elector = LeaderElector::new(client.clone(), config).map_err(|e| RunError::Start(e.to_string()))?;
    Ok(Member { shard, lease: elector.with_annotations(annotations).run() })
}

impl Member {
    /// Start this member's sharder (it assigns while `leading`) and its report, until
    /// `stop`; the tasks to wait for.
    pub(crate) async fn lead(
        &self,
        options: &RunOptions,
        primaries: Vec<Primary>,
        health: &Health,
        leading: watch::Receiver<bool>,
        stop: &watch::Receiver<bool>,
    ) -> Result<Vec<tokio::task::JoinHandle<()>>, RunError> {
        let config = SharderConfig {
            operator: options.name.clone(),
            lease_namespace: options.lease_namespace.clone(),
        };
        // The sharder's writes come in bursts (a rebalance): a client of their own.
        let client = crate::cluster::client(options.kubeconfig.as_ref(), options.context.as_ref()).await?;
        let sharder =
            run_sharder(client, self.shard.clone(), primaries, config, leading.clone(), stop.clone());
        let report = report(self.shard.clone(), options.name.clone(), health.clone(), leading, stop.clone());
        Ok(vec![tokio::spawn(sharder), tokio::spawn(report)])
    }

    /// Complete once the member Lease, held once, is lost (not renewed within the renew
    /// deadline).
    pub(crate) async fn lost(&self) {
        let mut held = self.lease.subscribe();
        if held.wait_for(|h| *h).await.is_ok() {
            let _ = held.wait_for(|h| !*h).await;
        }
    }
}

impl Shard {
    /// Count `store`'s objects as `controller`'s, every second (see [`Shard::set_count`]).
    pub(crate) async fn count(self: Arc<Self>, controller: String, store: crate::store::Store) {
        let mut tick = tokio::time::interval(std::time::Duration::from_secs(1));
        loop {
            tick.tick().await;
            self.set_count(&controller, store.len());
        }
    }
}

/// Keep `/status` and the `ctop_shard_*` gauges up to date with the ring as `shard` sees
/// it, until `stop`.
pub(crate) async fn report(
    shard: Arc<Shard>,
    ring: String,
    health: Health,
    mut sharder: watch::Receiver<bool>,
    mut stop: watch::Receiver<bool>,
) {
    let mut members = shard.members.clone();
    loop {
        let set = members.borrow_and_update().clone();
        shard.metrics.set_members(&ring, &set);
        health.set_sharding(ShardingStatus {
            ring: ring.clone(),
            member: shard.me.clone(),
            sharder: *sharder.borrow_and_update(),
            members: set.all,
        });
        tokio::select! {
            r = members.changed() => if r.is_err() { return },
            r = sharder.changed() => if r.is_err() { return },
            _ = stop.wait_for(|s| *s) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn member_names_are_dns_labels() {
        assert_eq!(member_name("webapp-7d9f8b-x2x9z"), "webapp-7d9f8b-x2x9z");
        assert_eq!(member_name("Host_Name_42"), "host-name-42");
        assert_eq!(member_name("__"), "ctop");
        let long = "a".repeat(80);
        let n = member_name(&long);
        assert_eq!(n.len(), 63, "{n}");
        assert_ne!(n, member_name(&"a".repeat(81)), "long names stay distinct");
    }

    #[test]
    fn ownership_follows_the_labels() {
        let (_tx, members) = watch::channel(MemberSet::default());
        let (shard, _) = Shard::new("op-1".into(), "webapp", members, ShardMetrics::default());
        let obj = |labels: serde_json::Value| -> Object {
            serde_json::from_value(serde_json::json!({"metadata": {"name": "x", "labels": labels}}))
                .expect("object")
        };
        let mine = obj(serde_json::json!({"shard.ctop.dev/webapp": "op-1"}));
        assert_eq!(shard.ownership(&mine), Ownership::Mine);
        let draining =
            obj(serde_json::json!({"shard.ctop.dev/webapp": "op-1", "drain.ctop.dev/webapp": "op-2"}));
        assert_eq!(shard.ownership(&draining), Ownership::Draining("op-2"));
        let other = obj(serde_json::json!({"shard.ctop.dev/webapp": "op-2"}));
        assert_eq!(shard.ownership(&other), Ownership::NotMine);
        assert_eq!(shard.narrow(Some("tier=web")), "tier=web,shard.ctop.dev/webapp=op-1");
        assert_eq!(shard.narrow(None), "shard.ctop.dev/webapp=op-1");
    }
}

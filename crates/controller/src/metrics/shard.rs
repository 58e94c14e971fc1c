//! The metrics of a sharded run, registered with the controller's others (see
//! `crate::metrics`): the ring's members and their objects as this replica sees them, the
//! objects it holds, and the sharder's assignments, drains and moves.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RingLabels {
    ring: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct MemberLabels {
    ring: String,
    member: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ControllerLabels {
    controller: String,
}

/// The families (cheap to clone; clones share their series).
#[derive(Debug, Clone, Default)]
pub(crate) struct ShardMetrics {
    members: Family<RingLabels, Gauge>,
    objects: Family<MemberLabels, Gauge>,
    held: Family<ControllerLabels, Gauge>,
    sharder: Family<RingLabels, Gauge>,
    assignments: Family<RingLabels, Counter>,
    drains: Family<RingLabels, Counter>,
    moves: Family<RingLabels, Counter>,
    handovers: Family<RingLabels, Counter>,
}

fn ring(ring: &str) -> RingLabels {
    RingLabels { ring: ring.to_owned() }
}

impl ShardMetrics {
    /// Register every family in `r`.
    pub(crate) fn register(&self, r: &mut Registry) {
        r.register(
            "ctop_shard_members",
            "Live members of the ring, as this replica sees them",
            self.members.clone(),
        );
        r.register(
            "ctop_shard_objects",
            "Primary objects each member of the ring reported holding on its Lease",
            self.objects.clone(),
        );
        r.register(
            "ctop_shard_held_objects",
            "Primary objects this replica holds, per controller",
            self.held.clone(),
        );
        r.register(
            "ctop_shard_sharder",
            "1 while this replica assigns the ring's objects, else 0",
            self.sharder.clone(),
        );
        r.register(
            "ctop_shard_assignments",
            "Unassigned objects the sharder labelled",
            self.assignments.clone(),
        );
        r.register(
            "ctop_shard_drains",
            "Objects the sharder asked their live member to hand over",
            self.drains.clone(),
        );
        r.register(
            "ctop_shard_moves",
            "Objects the sharder moved from a member whose Lease expired or was released",
            self.moves.clone(),
        );
        r.register(
            "ctop_shard_handovers",
            "Objects this replica handed over after a drain",
            self.handovers.clone(),
        );
    }

    pub(crate) fn set_members(&self, r: &str, set: &crate::shard::members::MemberSet) {
        self.members.get_or_create(&ring(r)).set(i64::try_from(set.live.len()).unwrap_or(i64::MAX));
        for m in &set.all {
            let labels = MemberLabels { ring: r.to_owned(), member: m.name.clone() };
            let n = m.objects.filter(|_| m.live).and_then(|n| i64::try_from(n).ok()).unwrap_or(0);
            self.objects.get_or_create(&labels).set(n);
        }
    }

    pub(crate) fn set_held(&self, controller: &str, n: usize) {
        let labels = ControllerLabels { controller: controller.to_owned() };
        self.held.get_or_create(&labels).set(i64::try_from(n).unwrap_or(i64::MAX));
    }

    pub(crate) fn set_sharder(&self, r: &str, on: bool) {
        self.sharder.get_or_create(&ring(r)).set(i64::from(on));
    }

    pub(crate) fn assigned(&self, r: &str) {
        self.assignments.get_or_create(&ring(r)).inc();
    }

    pub(crate) fn drained(&self, r: &str) {
        self.drains.get_or_create(&ring(r)).inc();
    }

    pub(crate) fn moved(&self, r: &str) {
        self.moves.get_or_create(&ring(r)).inc();
    }

    pub(crate) fn handed_over(&self, r: &str) {
        self.handovers.get_or_create(&ring(r)).inc();
    }
}

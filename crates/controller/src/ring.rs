//! The consistent-hash ring that assigns objects to the members of a sharded operator
//! (issue 21, `ctop run --sharding`). Start with [`Ring::new`] and [`Ring::owner`].
//!
//! Each member is placed on a 64-bit circle at [`VIRTUAL_NODES`] points, the xxHash64 of
//! `member#i`; an object belongs to the member of the first point at or after the hash of
//! its key ([`object_key`]). A member joining or leaving moves only the objects whose point
//! it takes or gives up, about 1/N of them. The `#` matters: without a separator the points
//! of `op-1` (`op-1` + `1`) and `op-11` (`op-11` + ``) would be the same strings.
//!
//! Written by hand: the ring is a sorted vector and a binary search, and the crates that
//! offer one are not kept up; the hash comes from `xxhash-rust`.

use xxhash_rust::xxh64::xxh64;

/// Points per member on the circle: enough that three members each get a third of the
/// objects within a few percent.
pub const VIRTUAL_NODES: usize = 100;

/// The key an object is placed by: `group/kind/namespace/name` (an empty group for the core
/// API, an empty namespace for a cluster-scoped object). No version (an object keeps its
/// member across versions) and no uid (a recreated object lands where the old one was).
#[must_use]
pub fn object_key(group: &str, kind: &str, namespace: Option<&str>, name: &str) -> String {
    format!("{group}/{kind}/{}/{name}", namespace.unwrap_or_default())
}

/// The members of a ring and their points.
#[derive(Clone, Debug, Default)]
pub struct Ring {
    /// The members, sorted, each once.
    members: Vec<String>,
    /// `(point, index into members)`, sorted by point.
    points: Vec<(u64, usize)>,
}

impl Ring {
    /// A ring of `members` (duplicates count once; the order does not matter).
    pub fn new<S: Into<String>>(members: impl IntoIterator<Item = S>) -> Self {
        let mut members: Vec<String> = members.into_iter().map(Into::into).collect();
        members.sort();
        members.dedup();
        let mut points: Vec<(u64, usize)> = members
            .iter()
            .enumerate()
            .flat_map(|(m, name)| (0..VIRTUAL_NODES).map(move |i| (hash(&format!("{name}#{i}")), m)))
            .collect();
        points.sort_unstable();
        Self { members, points }
    }

    /// The members, sorted.
    #[must_use]
    pub fn members(&self) -> &[String] {
        &self.members
    }

    /// The member `key` belongs to; `None` when the ring is empty.
    #[must_use]
    pub fn owner(&self, key: &str) -> Option<&str> {
        let h = hash(key);
        let at = self.points.partition_point(|(p, _)| *p < h);
        let (_, m) = self.points.get(at).or_else(|| self.points.first())?;
        self.members.get(*m).map(String::as_str)
    }
}

fn hash(s: &str) -> u64 {
    xxh64(s.as_bytes(), 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(n: usize) -> Vec<String> {
        (0..n).map(|i| object_key("example.com", "WebApp", Some("default"), &format!("app-{i}"))).collect()
    }

    #[test]
    fn an_empty_ring_owns_nothing_and_one_member_owns_everything() {
        assert_eq!(Ring::default().owner("x"), None);
        let one = Ring::new(["a"]);
        assert!(keys(100).iter().all(|k| one.owner(k) == Some("a")));
    }

    #[test]
    fn the_owner_depends_on_the_members_not_their_order() {
        let (a, b) = (Ring::new(["r-0", "r-1", "r-2"]), Ring::new(["r-2", "r-0", "r-1", "r-0"]));
        assert_eq!(a.members(), ["r-0", "r-1", "r-2"]);
        assert!(keys(1000).iter().all(|k| a.owner(k) == b.owner(k)));
        // The hash is xxHash64 with seed 0, stable across platforms and versions.
        assert_eq!(hash(""), 0xEF46_DB37_51D8_E999);
    }

    #[test]
    fn three_members_share_the_objects_about_evenly() {
        let ring = Ring::new(["r-0", "r-1", "r-2"]);
        let all = keys(30_000);
        for m in ring.members() {
            let share = all.iter().filter(|k| ring.owner(k) == Some(m.as_str())).count() as f64 / 30_000.0;
            assert!((0.25..0.42).contains(&share), "{m}: {share:.3}");
        }
    }

    #[test]
    fn a_member_joining_takes_about_a_quarter_and_only_moves_objects_to_itself() {
        let (before, after) = (Ring::new(["r-0", "r-1", "r-2"]), Ring::new(["r-0", "r-1", "r-2", "r-3"]));
        let all = keys(20_000);
        let moved: Vec<&String> = all.iter().filter(|k| before.owner(k) != after.owner(k)).collect();
        assert!(moved.iter().all(|k| after.owner(k) == Some("r-3")));
        let share = moved.len() as f64 / all.len() as f64;
        assert!((0.17..0.33).contains(&share), "{share:.3}");
    }

    #[test]
    fn a_member_leaving_gives_up_only_its_own_objects() {
        let (before, after) = (Ring::new(["r-0", "r-1", "r-2"]), Ring::new(["r-0", "r-2"]));
        for k in keys(10_000) {
            if before.owner(&k) != Some("r-1") {
                assert_eq!(before.owner(&k), after.owner(&k), "{k}");
            }
        }
    }

    #[test]
    fn names_that_extend_each_other_get_points_of_their_own() {
        let ring = Ring::new(["op-1", "op-11"]);
        let mut points: Vec<u64> = ring.points.iter().map(|(p, _)| *p).collect();
        points.dedup();
        assert_eq!(points.len(), 2 * VIRTUAL_NODES);
    }
}

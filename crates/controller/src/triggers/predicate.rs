//! Which updates of a watched object pass an operator's predicate: judged against the
//! previous version of each object, kept per watch ([`Previous`]).

use std::collections::{HashMap, HashSet};

use ctop_core::{NamedPredicate, Predicate};

use crate::object::{Object, object_key};

/// Whether a change from `old` to `new` passes `p`.
pub(crate) fn passes(p: &Predicate, old: &Object, new: &Object) -> bool {
    match p {
        Predicate::Named(NamedPredicate::GenerationChanged) => old.generation() != new.generation(),
        Predicate::Named(NamedPredicate::ResourceVersionChanged) => {
            old.resource_version() != new.resource_version()
        }
        Predicate::Named(NamedPredicate::LabelChanged) => old.labels() != new.labels(),
        Predicate::Named(NamedPredicate::AnnotationChanged) => old.annotations() != new.annotations(),
        Predicate::And { and } => and.iter().all(|p| passes(p, old, new)),
        Predicate::Or { or } => or.iter().any(|p| passes(p, old, new)),
    }
}

/// The last version seen of each object of one watch. Creations always pass; an update
/// passes when the predicate holds between the previous version and the new one (without
/// a predicate: when its resourceVersion changed). A relist replays objects as updates of
/// what was seen, and forgets the objects it no longer has.
pub(crate) struct Previous {
    predicate: Option<Predicate>,
    seen: HashMap<String, Object>,
    /// The objects of a relist so far.
    listing: Option<HashSet<String>>,
}

impl Previous {
    pub(crate) fn new(predicate: Option<Predicate>) -> Self {
        Self { predicate, seen: HashMap::new(), listing: None }
    }

    /// Whether `o` (an apply, or an object of a list) is a change that passes.
    pub(crate) fn passes(&mut self, o: &Object) -> bool {
        let key = object_key(o);
        let pass = match (&self.predicate, self.seen.get(&key)) {
            (Some(p), Some(old)) => passes(p, old, o),
            (None, Some(old)) => old.resource_version() != o.resource_version(),
            (_, None) => true,
        };
        if let Some(listing) = &mut self.listing {
            listing.insert(key.clone());
        }
        self.seen.insert(key, o.clone());
        pass
    }

    /// `o` was deleted.
    pub(crate) fn deleted(&mut self, o: &Object) {
        self.seen.remove(&object_key(o));
    }

    /// A list starts.
    pub(crate) fn init(&mut self) {
        self.listing = Some(HashSet::new());
    }

    /// The list ended: what it did not have is gone.
    pub(crate) fn init_done(&mut self) {
        if let Some(listed) = self.listing.take() {
            self.seen.retain(|k, _| listed.contains(k));
        }
    }

    /// Objects remembered.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.seen.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(name: &str, generation: i64, rv: &str) -> Object {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": name, "namespace": "ns", "generation": generation, "resourceVersion": rv}
        }))
        .expect("object")
    }

    #[test]
    fn updates_pass_by_the_predicate_and_a_relist_forgets_what_is_gone() {
        let mut p = Previous::new(Some(Predicate::Named(NamedPredicate::GenerationChanged)));
        assert!(p.passes(&obj("a", 1, "1")), "a creation");
        assert!(!p.passes(&obj("a", 1, "2")), "a status change");
        assert!(p.passes(&obj("a", 2, "3")));
        assert!(p.passes(&obj("b", 1, "4")));
        p.init();
        assert!(!p.passes(&obj("a", 2, "3")));
        p.init_done();
        assert_eq!(p.len(), 1, "b vanished during the watch gap");
        p.deleted(&obj("a", 2, "3"));
        assert_eq!(p.len(), 0);
    }
}

//! Least-privilege RBAC derived from what the script declares.
//!
//! | declared | verbs | `/status` |
//! |---|---|---|
//! | primary kind (`operator(kind)`) | get, list, watch, update, patch; `/finalizers` update | get, update, patch |
//! | `.manages(kind)` | get, list, watch, create, update, patch, delete | none |
//! | `.reads(kind)`, `.watches(kind)` | get, list, watch | none |
//! | `.permission(rule)` | the rule's verbs | only if the rule names it |
//! | always | `events.k8s.io` events: create, patch; `coordination.k8s.io` leases: get, create, update (sharded: also list, watch, delete); `ctop.dev` controllerstatuses: get, create, patch (own namespace) | |
//! | [`Options::migrate_storage`], per resource with several versions | get, list, update, cluster-wide | `customresourcedefinitions/status` of its CRD (by name): get, update, patch |
//! | shadow ([`read_permissions`]): instead of all the above, every kind above | get, list, watch; CRDs of undeclared custom kinds: get | none |
//!
//! Only primary kinds get `/status`: the script's `setStatus` and `setCondition` write the
//! object being reconciled, and applying a child never writes its status (that is the
//! child's own controller's), so a kind that is only managed, read or watched needs none.
//! A kind that is one controller's primary and another's managed kind gets both grants.
//!
//! The storage migration (`ctop run --migrate-storage`) rewrites every stored object of a
//! converting resource with a no-op update, in every namespace even when the operator
//! watches one (`status.storedVersions` is the whole CRD's), then removes the old versions
//! from `status.storedVersions`; what it needs beyond a primary kind's grants is added, and
//! only when asked for. The caBundle of the converting CRDs and of the admission
//! configurations is granted by the webhook's own ClusterRole (`webhook.rs`), not here.
//!
//! Every grant is split into atoms (place, group, resource, names, verb), deduplicated,
//! dropped when a broader atom covers it, and grouped back into rules in sorted order, so
//! the same declarations always give the same rules.
//!
//! Where a rule is granted: leases only in the operator's own namespace (a Role), since
//! that is where it elects its leader; `.watches(kind, {namespace})` of a namespaced kind
//! only in that namespace; everything else cluster-wide, or, when the operator watches one
//! namespace ([`WatchScope::Namespace`]), in that namespace for namespaced kinds and
//! cluster-wide only for cluster-scoped ones.

use std::collections::{BTreeMap, BTreeSet};

use ctop_core::{KindRef, OperatorSpec, PolicyRule};
use serde_json::{Map, Value, json};

use crate::kinds::{self, Resolved};
use crate::options::{Options, WatchScope};

const PRIMARY: &[&str] = &["get", "list", "watch", "update", "patch"];
const STATUS: &[&str] = &["get", "update", "patch"];
const FINALIZERS: &[&str] = &["update"];
const FULL: &[&str] = &["get", "list", "watch", "create", "update", "patch", "delete"];
const READ: &[&str] = &["get", "list", "watch"];
const EVENTS: &[&str] = &["create", "patch"];
const LEASES: &[&str] = &["get", "create", "update"];
/// A sharded operator's Leases: every replica watches the ring's member Leases, and the
/// sharder deletes those of members that left.
const SHARDED_LEASES: &[&str] = &["get", "create", "update", "list", "watch", "delete"];
/// Each controller's health object (server-side applied: creating one takes `create`).
const CONTROLLER_STATUSES: &[&str] = &["get", "create", "patch"];
/// The storage migration on each converting resource: list the objects, rewrite each in the
/// storage version with a no-op update (a PUT; reading it again takes `get`).
const MIGRATE: &[&str] = &["get", "list", "update"];
/// The storage migration on the converting CRDs' status: read `storedVersions`, then drop
/// the migrated versions from it.
const CRD_STATUS: &[&str] = &["get", "update", "patch"];

/// Where a grant holds: cluster-wide (ClusterRole) or in one namespace (Role).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Place {
    Cluster,
    Namespace(String),
}

/// One verb on one resource at one place: the unit rules are merged in.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Atom {
    place: Place,
    group: String,
    resource: String,
    names: Vec<String>,
    verb: String,
}

/// The rules an operator needs, by where they are granted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Permissions {
    /// Rules of the ClusterRole (bound cluster-wide).
    pub cluster: Vec<PolicyRule>,
    /// Rules of a Role per namespace.
    pub namespaces: BTreeMap<String, Vec<PolicyRule>>,
    /// Assumptions worth telling the user (kinds whose plural or scope was guessed).
    pub notes: Vec<String>,
}

struct Collector<'a> {
    spec: &'a OperatorSpec,
    watch: &'a WatchScope,
    atoms: BTreeSet<Atom>,
    notes: BTreeSet<String>,
}

impl Collector<'_> {
    fn place_of(&self, namespaced: bool) -> Place {
        match self.watch {
            WatchScope::Namespace(ns) if namespaced => Place::Namespace(ns.clone()),
            _ => Place::Cluster,
        }
    }

    fn resolve(&mut self, kind: &KindRef) -> Resolved {
        let r = kinds::resolve(self.spec, kind);
        if r.guessed {
            self.notes.insert(format!(
                "{} {} is neither built in nor declared by the script: RBAC assumes resource \
                 \"{}\" and namespaced; declare a .permission() rule if that is wrong",
                kind.api_version, kind.kind, r.plural
            ));
        }
        r
    }

    fn add(&mut self, place: &Place, group: &str, resource: &str, names: &[String], verbs: &[&str]) {
        let mut names = names.to_vec();
        names.sort();
        names.dedup();
        for verb in verbs {
            self.atoms.insert(Atom {
                place: place.clone(),
                group: group.to_owned(),
                resource: resource.to_owned(),
                names: names.clone(),
                verb: (*verb).to_owned(),
            });
        }
    }

    fn kind(
        &mut self,
        kind: &KindRef,
        namespace: Option<&str>,
        verbs: &[&str],
        subresources: &[(&str, &[&str])],
    ) {
        let r = self.resolve(kind);
        let place = match namespace {
            Some(ns) if r.namespaced => Place::Namespace(ns.to_owned()),
            _ => self.place_of(r.namespaced),
        };
        self.add(&place, &r.group, &r.plural, &[], verbs);
        for (sub, verbs) in subresources {
            self.add(&place, &r.group, &format!("{}/{sub}", r.plural), &[], verbs);
        }
    }
}

/// The resource name RBAC rules use for `kind` (`deployments`, a script resource's plural),
/// as the generated rules name it: for checks that a `.permission(...)` covers a kind.
#[must_use]
pub fn resource_of(spec: &OperatorSpec, kind: &ctop_core::KindRef) -> String {
    crate::kinds::resolve(spec, kind).plural
}

/// The rules of `wanted` that `held` does not grant, broken down to one group, resource,
/// verb and name each: the API server's covering check for escalation prevention
/// (component-helpers `auth/rbac/validation/policy_comparator.go`, `Covers`: `*` verbs,
/// groups and resources, `*/subresource`, and rules without names covering every name). A
/// role or binding the operator writes is refused unless what it grants is covered, or the
/// operator may `escalate` or `bind` it.
#[must_use]
pub fn uncovered(held: &[PolicyRule], wanted: &[PolicyRule]) -> Vec<PolicyRule> {
    let has = |set: &[String], item: &str| set.iter().any(|s| s == item || s == "*");
    let covers = |rule: &PolicyRule, group: &str, resource: &str, verb: &str, name: Option<&str>| {
        has(&rule.verbs, verb)
            && has(&rule.api_groups, group)
            && (has(&rule.resources, resource)
                || resource
                    .split_once('/')
                    .is_some_and(|(_, sub)| rule.resources.iter().any(|r| *r == format!("*/{sub}"))))
            && (rule.resource_names.is_empty()
                || name.is_some_and(|n| rule.resource_names.iter().any(|r| r == n)))
    };
    let mut out = Vec::new();
    for rule in wanted {
        let names: Vec<Option<&str>> = if rule.resource_names.is_empty() {
            vec![None]
        } else {
            rule.resource_names.iter().map(|n| Some(n.as_str())).collect()
        };
        for group in &rule.api_groups {
            for resource in &rule.resources {
                for verb in &rule.verbs {
                    for name in &names {
                        if !held.iter().any(|h| covers(h, group, resource, verb, *name)) {
                            out.push(PolicyRule {
                                api_groups: vec![group.clone()],
                                resources: vec![resource.clone()],
                                verbs: vec![verb.clone()],
                                resource_names: name.iter().map(|n| (*n).to_owned()).collect(),
                            });
                        }
                    }
                }
            }
        }
    }
    out
}

/// The permissions the operator described by `spec` needs when deployed with `options`.
#[must_use]
pub fn permissions(spec: &OperatorSpec, options: &Options) -> Permissions {
    let mut c = Collector { spec, watch: &options.watch, atoms: BTreeSet::new(), notes: BTreeSet::new() };
    for ctl in &spec.controllers {
        c.kind(&ctl.for_, None, PRIMARY, &[("status", STATUS), ("finalizers", FINALIZERS)]);
        for k in &ctl.manages {
            c.kind(k, None, FULL, &[]);
        }
        for k in &ctl.reads {
            c.kind(k, None, READ, &[]);
        }
        for w in &ctl.watches {
            c.kind(&w.kind, w.namespace.as_deref(), READ, &[]);
        }
        for rule in &ctl.permissions {
            let verbs: Vec<&str> = rule.verbs.iter().map(String::as_str).collect();
            for group in &rule.api_groups {
                for resource in &rule.resources {
                    let namespaced = resource != "*" && kinds::resource_is_namespaced(spec, group, resource);
                    let place = c.place_of(namespaced);
                    c.add(&place, group, resource, &rule.resource_names, &verbs);
                }
            }
        }
    }
    // The runtime records events with kube's Recorder, which writes events.k8s.io/v1 only.
    let events = c.place_of(true);
    c.add(&events, "events.k8s.io", "events", &[], EVENTS);
    let leases = if options.sharding { SHARDED_LEASES } else { LEASES };
    c.add(&Place::Namespace(options.namespace()), "coordination.k8s.io", "leases", &[], leases);
    c.add(
        &Place::Namespace(options.namespace()),
        ctop_core::controller_status::GROUP,
        ctop_core::controller_status::PLURAL,
        &[],
        CONTROLLER_STATUSES,
    );

    if options.migrates(spec) {
        let mut crds = Vec::new();
        for r in spec.converting() {
            c.add(&Place::Cluster, &r.group, &r.plural, &[], MIGRATE);
            crds.push(crate::crd::crd_name(r));
        }
        c.add(&Place::Cluster, "apiextensions.k8s.io", "customresourcedefinitions/status", &crds, CRD_STATUS);
    }

    collect(c)
}

/// The permissions of the operator's shadow (`ctop run --shadow`, `ctop manifests
/// --shadow`): get, list and watch on every kind the operator reconciles, manages, reads or
/// watches (and of `.permission()` rules only those verbs), and `get` on the CRDs of the
/// custom kinds it uses without declaring them, which the shadow copies into its overlay.
/// Nothing that writes: no `/status`, `/finalizers`, events, Leases or controller statuses.
#[must_use]
pub fn read_permissions(spec: &OperatorSpec, options: &Options) -> Permissions {
    let mut c = Collector { spec, watch: &options.watch, atoms: BTreeSet::new(), notes: BTreeSet::new() };
    let mut crds = BTreeSet::new();
    for ctl in &spec.controllers {
        let kinds = std::iter::once((&ctl.for_, None))
            .chain(ctl.manages.iter().chain(&ctl.reads).map(|k| (k, None)))
            .chain(ctl.watches.iter().map(|w| (&w.kind, w.namespace.as_deref())));
        for (kind, namespace) in kinds {
            c.kind(kind, namespace, READ, &[]);
            let r = kinds::resolve(spec, kind);
            if r.guessed && !r.group.is_empty() {
                crds.insert(format!("{}.{}", r.plural, r.group));
            }
        }
        for rule in &ctl.permissions {
            let verbs: Vec<&str> =
                rule.verbs.iter().map(String::as_str).filter(|v| READ.contains(v) || *v == "*").collect();
            let verbs: Vec<&str> = if verbs.contains(&"*") { READ.to_vec() } else { verbs };
            for group in &rule.api_groups {
                for resource in &rule.resources {
                    let namespaced = resource != "*" && kinds::resource_is_namespaced(spec, group, resource);
                    let place = c.place_of(namespaced);
                    c.add(&place, group, resource, &rule.resource_names, &verbs);
                }
            }
        }
    }
    if !crds.is_empty() {
        let names: Vec<String> = crds.into_iter().collect();
        c.add(&Place::Cluster, "apiextensions.k8s.io", "customresourcedefinitions", &names, &["get"]);
    }
    collect(c)
}

/// The collected atoms as rules, by place.
fn collect(c: Collector<'_>) -> Permissions {
    let atoms = minimal(&c.atoms);
    let mut out = Permissions { notes: c.notes.into_iter().collect(), ..Permissions::default() };
    let mut by_place: BTreeMap<&Place, Vec<&Atom>> = BTreeMap::new();
    for a in &atoms {
        by_place.entry(&a.place).or_default().push(a);
    }
    for (place, atoms) in by_place {
        let rules = group_rules(&atoms);
        match place {
            Place::Cluster => out.cluster = rules,
            Place::Namespace(ns) => {
                out.namespaces.insert(ns.clone(), rules);
            }
        }
    }
    out
}

/// Drop atoms another atom already grants: a namespace grant covered cluster-wide, a named
/// grant covered for all names, a verb covered by `*`.
fn minimal(atoms: &BTreeSet<Atom>) -> Vec<Atom> {
    let covers = |broad: &Atom, a: &Atom| {
        broad != a
            && broad.group == a.group
            && broad.resource == a.resource
            && (broad.place == a.place || broad.place == Place::Cluster)
            && (broad.names == a.names || broad.names.is_empty())
            && (broad.verb == a.verb || broad.verb == "*")
    };
    atoms.iter().filter(|a| !atoms.iter().any(|b| covers(b, a))).cloned().collect()
}

/// Atoms of one place as rules: one per (group, names, verb set) with every resource that
/// has exactly that verb set.
fn group_rules(atoms: &[&Atom]) -> Vec<PolicyRule> {
    let mut verbs: BTreeMap<(&str, &[String], &str), BTreeSet<&str>> = BTreeMap::new();
    for a in atoms {
        verbs.entry((&a.group, &a.names, &a.resource)).or_default().insert(&a.verb);
    }
    /// (group, names, verbs) → resources.
    type Rules<'a> = BTreeMap<(&'a str, &'a [String], BTreeSet<&'a str>), BTreeSet<&'a str>>;
    let mut rules = Rules::new();
    for ((group, names, resource), verbs) in verbs {
        rules.entry((group, names, verbs)).or_default().insert(resource);
    }
    let mut out: Vec<PolicyRule> = rules
        .into_iter()
        .map(|((group, names, verbs), resources)| PolicyRule {
            api_groups: vec![group.to_owned()],
            resources: resources.into_iter().map(str::to_owned).collect(),
            verbs: verbs.into_iter().map(str::to_owned).collect(),
            resource_names: names.to_vec(),
        })
        .collect();
    out.sort_by(|a, b| {
        (&a.api_groups, &a.resources, &a.resource_names, &a.verbs).cmp(&(
            &b.api_groups,
            &b.resources,
            &b.resource_names,
            &b.verbs,
        ))
    });
    out
}

/// The RBAC objects granting `perms` to the operator's ServiceAccount: a ClusterRole and
/// ClusterRoleBinding when any rule is cluster-wide, a Role and RoleBinding per namespace.
pub(crate) fn documents(perms: &Permissions, options: &Options, labels: &Map<String, Value>) -> Vec<Value> {
    let role = format!("{}-manager", options.name);
    let subject = json!([{"kind": "ServiceAccount", "name": options.name, "namespace": options.namespace()}]);
    let rules = |r: &[PolicyRule]| serde_json::to_value(r).unwrap_or_default();
    let mut docs = Vec::new();
    if !perms.cluster.is_empty() {
        docs.push(json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": role, "labels": labels},
            "rules": rules(&perms.cluster),
        }));
        docs.push(json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": role, "labels": labels},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
            "subjects": subject,
        }));
    }
    for (ns, ns_rules) in &perms.namespaces {
        docs.push(json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": role, "namespace": ns, "labels": labels},
            "rules": rules(ns_rules),
        }));
        docs.push(json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": role, "namespace": ns, "labels": labels},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role},
            "subjects": subject,
        }));
    }
    docs
}

#[cfg(test)]
mod tests;

//! Tests of the rules `permissions` derives.

use super::*;
use ctop_core::{ControllerSpec, ResourceSpec, Scope, WatchSpec};

fn kind(api_version: &str, kind: &str) -> KindRef {
    KindRef { api_version: api_version.into(), kind: kind.into() }
}

fn rule(group: &str, resources: &[&str], verbs: &[&str]) -> PolicyRule {
    PolicyRule {
        api_groups: vec![group.into()],
        resources: resources.iter().map(|s| (*s).into()).collect(),
        verbs: verbs.iter().map(|s| (*s).into()).collect(),
        resource_names: vec![],
    }
}

#[test]
fn uncovered_breaks_rules_down_like_the_api_server() {
    let named = |r: PolicyRule, names: &[&str]| PolicyRule {
        resource_names: names.iter().map(|s| (*s).into()).collect(),
        ..r
    };
    let held = vec![
        rule("", &["configmaps"], &["get", "list"]),
        rule("apps", &["*"], &["*"]),
        rule("", &["*/status"], &["get"]),
        named(rule("rbac.authorization.k8s.io", &["clusterroles"], &["bind"]), &["admin"]),
    ];
    assert!(
        uncovered(&held, &[rule("apps", &["deployments", "replicasets"], &["create", "delete"])]).is_empty()
    );
    assert!(uncovered(&held, &[rule("", &["pods/status"], &["get"])]).is_empty());
    assert_eq!(
        uncovered(&held, &[rule("", &["configmaps", "pods/status"], &["get", "watch"])]),
        [rule("", &["configmaps"], &["watch"]), rule("", &["pods/status"], &["watch"])]
    );
    // Names: a named grant covers only those names, never an unnamed request.
    let bind = rule("rbac.authorization.k8s.io", &["clusterroles"], &["bind"]);
    assert!(uncovered(&held, &[named(bind.clone(), &["admin"])]).is_empty());
    assert_eq!(
        uncovered(&held, &[named(bind.clone(), &["admin", "edit"])]),
        [named(bind.clone(), &["edit"])]
    );
    assert_eq!(uncovered(&held, std::slice::from_ref(&bind)), [bind]);
}

fn spec(ctl: ControllerSpec) -> OperatorSpec {
    OperatorSpec {
        resources: vec![ResourceSpec {
            api_version: "apps.example.com/v1".into(),
            group: "apps.example.com".into(),
            version: "v1".into(),
            kind: "App".into(),
            plural: "apps".into(),
            singular: "app".into(),
            scope: Scope::Namespaced,
            ..Default::default()
        }],
        controllers: vec![ControllerSpec {
            name: "app".into(),
            for_: kind("apps.example.com/v1", "App"),
            ..ctl
        }],
    }
}

/// What every operator gets in its own namespace: its Lease and its controllers'
/// `ControllerStatus` objects.
fn leases() -> Vec<PolicyRule> {
    vec![
        rule("coordination.k8s.io", &["leases"], &["create", "get", "update"]),
        rule("ctop.dev", &["controllerstatuses"], &["create", "get", "patch"]),
    ]
}

#[test]
fn a_sharded_operator_may_watch_and_delete_its_leases() {
    let options = Options { sharding: true, ..Options::new("op") };
    let p = permissions(&spec(ControllerSpec::default()), &options);
    assert_eq!(
        p.namespaces["op-system"][0],
        rule("coordination.k8s.io", &["leases"], &["create", "delete", "get", "list", "update", "watch"])
    );
}

#[test]
fn a_bare_operator_gets_its_kind_events_and_leases_only() {
    let p = permissions(&spec(ControllerSpec::default()), &Options::new("op"));
    assert_eq!(
        p.cluster,
        vec![
            rule("apps.example.com", &["apps"], &["get", "list", "patch", "update", "watch"]),
            rule("apps.example.com", &["apps/finalizers"], &["update"]),
            rule("apps.example.com", &["apps/status"], &["get", "patch", "update"]),
            rule("events.k8s.io", &["events"], &["create", "patch"]),
        ]
    );
    assert_eq!(p.namespaces, BTreeMap::from([("op-system".to_owned(), leases())]));
    assert!(p.notes.is_empty());
}

#[test]
fn manages_reads_watches_and_permissions() {
    let ctl = ControllerSpec {
        manages: vec![kind("apps/v1", "Deployment"), kind("v1", "Secret"), kind("v1", "Service")],
        reads: vec![kind("v1", "ConfigMap"), kind("v1", "Secret")],
        watches: vec![
            WatchSpec { kind: kind("v1", "Node"), ..Default::default() },
            WatchSpec { kind: kind("v1", "Pod"), namespace: Some("infra".into()), ..Default::default() },
        ],
        permissions: vec![
            PolicyRule {
                api_groups: vec!["".into()],
                resources: vec!["pods/log".into()],
                verbs: vec!["get".into()],
                resource_names: vec![],
            },
            PolicyRule {
                api_groups: vec!["".into()],
                resources: vec!["configmaps".into()],
                verbs: vec!["update".into()],
                resource_names: vec!["b".into(), "a".into()],
            },
        ],
        ..Default::default()
    };
    let p = permissions(&spec(ctl), &Options::new("op"));
    let core: Vec<_> = p.cluster.iter().filter(|r| r.api_groups == [""]).cloned().collect();
    let full = &["create", "delete", "get", "list", "patch", "update", "watch"];
    assert_eq!(
        core,
        vec![
            PolicyRule {
                resource_names: vec!["a".into(), "b".into()],
                ..rule("", &["configmaps"], &["update"])
            },
            rule("", &["configmaps", "nodes"], &["get", "list", "watch"]),
            rule("", &["pods/log"], &["get"]),
            rule("", &["secrets", "services"], full),
        ]
    );
    assert!(p.cluster.contains(&rule("apps", &["deployments"], full)));
    let infra = &p.namespaces["infra"];
    assert_eq!(infra, &vec![rule("", &["pods"], &["get", "list", "watch"])]);
    // Least privilege: nothing beyond what was declared.
    let granted: BTreeSet<_> = p.cluster.iter().flat_map(|r| r.resources.clone()).collect();
    let expected = [
        "apps",
        "apps/finalizers",
        "apps/status",
        "configmaps",
        "deployments",
        "events",
        "nodes",
        "pods/log",
        "secrets",
        "services",
    ];
    assert_eq!(granted, expected.iter().map(|s| (*s).to_owned()).collect());
    assert!(
        !p.cluster
            .iter()
            .any(|r| r.verbs.contains(&"*".to_owned()) || r.verbs.contains(&"deletecollection".into()))
    );
}

/// Every `<plural>/status` resource granted anywhere (cluster-wide or in a Role).
fn status_resources(p: &Permissions) -> BTreeSet<String> {
    p.cluster
        .iter()
        .chain(p.namespaces.values().flatten())
        .flat_map(|r| r.resources.iter())
        .filter(|r| r.ends_with("/status"))
        .cloned()
        .collect()
}

#[test]
fn only_primary_kinds_get_status_writes() {
    let ctl = ControllerSpec {
        manages: vec![kind("apps/v1", "Deployment"), kind("v1", "Namespace")],
        reads: vec![kind("v1", "ConfigMap")],
        watches: vec![
            WatchSpec { kind: kind("v1", "Node"), ..Default::default() },
            WatchSpec { kind: kind("v1", "Pod"), namespace: Some("infra".into()), ..Default::default() },
        ],
        ..Default::default()
    };
    let status = rule("apps.example.com", &["apps/status"], &["get", "patch", "update"]);
    let only_apps = BTreeSet::from(["apps/status".to_owned()]);

    // Cluster-wide: the primary keeps its status rule; the managed Deployment (and the
    // read, watched and cluster-scoped kinds) get none, applying a child never touches
    // its status.
    let p = permissions(&spec(ctl.clone()), &Options::new("op"));
    assert!(p.cluster.contains(&status), "{:?}", p.cluster);
    assert_eq!(status_resources(&p), only_apps);
    let full = &["create", "delete", "get", "list", "patch", "update", "watch"];
    assert!(p.cluster.contains(&rule("apps", &["deployments"], full)));
    assert!(!p.cluster.iter().any(|r| r.resources.contains(&"deployments/status".to_owned())));

    // The same in Roles when one namespace is watched.
    let mut o = Options::new("op");
    o.watch = WatchScope::Namespace("apps".into());
    let p = permissions(&spec(ctl), &o);
    assert!(p.namespaces["apps"].contains(&status), "{:?}", p.namespaces);
    assert_eq!(status_resources(&p), only_apps);
}

#[test]
fn a_kind_primary_elsewhere_keeps_its_status_rule() {
    // Controller "app" manages Deployments; controller "deploy" reconciles them and
    // writes their status, so deployments/status is granted for the second one.
    let mut s = spec(ControllerSpec { manages: vec![kind("apps/v1", "Deployment")], ..Default::default() });
    s.controllers.push(ControllerSpec {
        index: 1,
        name: "deploy".into(),
        for_: kind("apps/v1", "Deployment"),
        ..Default::default()
    });
    let p = permissions(&s, &Options::new("op"));
    assert!(p.cluster.contains(&rule("apps", &["deployments/status"], &["get", "patch", "update"])));
    assert_eq!(
        status_resources(&p),
        BTreeSet::from(["apps/status".to_owned(), "deployments/status".to_owned()])
    );
}

#[test]
fn broader_grants_absorb_narrower_ones() {
    let ctl = ControllerSpec {
        reads: vec![kind("v1", "ConfigMap")],
        watches: vec![WatchSpec {
            kind: kind("v1", "ConfigMap"),
            namespace: Some("x".into()),
            ..Default::default()
        }],
        permissions: vec![PolicyRule {
            api_groups: vec!["".into()],
            resources: vec!["configmaps".into()],
            verbs: vec!["*".into()],
            resource_names: vec![],
        }],
        ..Default::default()
    };
    let p = permissions(&spec(ctl), &Options::new("op"));
    assert!(p.cluster.contains(&rule("", &["configmaps"], &["*"])));
    assert!(!p.namespaces.contains_key("x"), "covered cluster-wide: {:?}", p.namespaces);
}

#[test]
fn one_watched_namespace_uses_roles_and_cluster_rules_only_for_cluster_kinds() {
    let ctl =
        ControllerSpec { manages: vec![kind("v1", "Secret"), kind("v1", "Namespace")], ..Default::default() };
    let mut o = Options::new("op");
    o.watch = WatchScope::Namespace("apps".into());
    let p = permissions(&spec(ctl.clone()), &o);
    let full = &["create", "delete", "get", "list", "patch", "update", "watch"];
    assert_eq!(p.cluster, vec![rule("", &["namespaces"], full)]);
    assert_eq!(p.namespaces["op-system"], leases());
    let apps = &p.namespaces["apps"];
    assert!(apps.contains(&rule("", &["secrets"], full)));
    assert!(apps.contains(&rule("apps.example.com", &["apps/status"], &["get", "patch", "update"])));
    assert!(apps.contains(&rule("events.k8s.io", &["events"], &["create", "patch"])));

    // Watching the operator's own namespace: one Role holds leases and the rest.
    o.watch = WatchScope::Namespace("op-system".into());
    let p = permissions(&spec(ctl), &o);
    assert_eq!(p.namespaces.keys().collect::<Vec<_>>(), ["op-system"]);
    assert!(p.namespaces["op-system"].contains(&leases()[0]));
}

#[test]
fn unknown_kinds_are_guessed_and_reported() {
    let ctl = ControllerSpec { reads: vec![kind("cert-manager.io/v1", "Certificate")], ..Default::default() };
    let p = permissions(&spec(ctl), &Options::new("op"));
    assert!(p.cluster.contains(&rule("cert-manager.io", &["certificates"], &["get", "list", "watch"])));
    assert_eq!(p.notes.len(), 1);
    assert!(p.notes[0].contains("Certificate"), "{:?}", p.notes);
}

#[test]
fn a_kind_read_metadata_only_needs_the_same_rules() {
    // `PartialObjectMetadata` is a way of answering a list or a watch, not a verb or a
    // resource of its own: the same get, list and watch are needed.
    let full = ControllerSpec { reads: vec![kind("v1", "Pod")], ..Default::default() };
    let metadata_only = ControllerSpec { metadata_only: vec![kind("v1", "Pod")], ..full.clone() };
    let (a, b) = (
        permissions(&spec(full), &Options::new("op")),
        permissions(&spec(metadata_only), &Options::new("op")),
    );
    assert!(b.cluster.contains(&rule("", &["pods"], &["get", "list", "watch"])), "{:?}", b.cluster);
    assert_eq!((a.cluster, a.namespaces, a.notes), (b.cluster, b.namespaces, b.notes));
}

#[test]
fn rbac_documents_bind_the_service_account() {
    let p = permissions(&spec(ControllerSpec::default()), &Options::new("op"));
    let docs = documents(&p, &Options::new("op"), &Map::new());
    let kinds: Vec<_> = docs.iter().map(|d| d["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"]);
    assert_eq!(
        docs[1]["subjects"],
        json!([{"kind": "ServiceAccount", "name": "op", "namespace": "op-system"}])
    );
    assert_eq!(docs[1]["roleRef"]["name"], "op-manager");
    assert_eq!(docs[3]["roleRef"]["kind"], "Role");
    assert_eq!(docs[2]["metadata"]["namespace"], "op-system");
}

/// [`spec`] whose `App` has two versions, plus a one-version `Other` it reads.
fn converting(ctl: ControllerSpec) -> OperatorSpec {
    let mut s = spec(ControllerSpec { reads: vec![kind("apps.example.com/v1", "Other")], ..ctl });
    let version = |name: &str, storage: bool| ctop_core::VersionSpec {
        name: name.into(),
        served: true,
        storage,
        schema: json!({"type": "object"}),
        ..Default::default()
    };
    s.resources[0].versions = vec![version("v1", false), version("v1alpha1", true)];
    s.resources.push(ResourceSpec {
        api_version: "apps.example.com/v1".into(),
        group: "apps.example.com".into(),
        version: "v1".into(),
        kind: "Other".into(),
        plural: "others".into(),
        singular: "other".into(),
        scope: Scope::Namespaced,
        ..Default::default()
    });
    s
}

fn named(r: PolicyRule, names: &[&str]) -> PolicyRule {
    PolicyRule { resource_names: names.iter().map(|s| (*s).into()).collect(), ..r }
}

/// Every rule naming `resource`, cluster-wide or in a Role.
fn rules_on<'a>(p: &'a Permissions, resource: &str) -> Vec<&'a PolicyRule> {
    p.cluster
        .iter()
        .chain(p.namespaces.values().flatten())
        .filter(|r| r.resources.iter().any(|x| x == resource))
        .collect()
}

#[test]
fn converting_without_migration_grants_nothing_more() {
    let plain = permissions(&spec(ControllerSpec::default()), &Options::new("op"));
    let p = permissions(&converting(ControllerSpec::default()), &Options::new("op"));
    assert!(rules_on(&p, "customresourcedefinitions/status").is_empty());
    assert!(rules_on(&p, "customresourcedefinitions").is_empty(), "the caBundle is the webhook role's");
    let without_other: Vec<_> =
        p.cluster.iter().filter(|r| !r.resources.contains(&"others".to_owned())).cloned().collect();
    assert_eq!(without_other, plain.cluster);
}

#[test]
fn migration_adds_what_the_primary_grants_lack_and_the_crd_status_by_name() {
    let options = Options { migrate_storage: true, ..Options::new("op") };
    let p = permissions(&converting(ControllerSpec::default()), &options);
    // The primary kind already has get, list and update: its rules are unchanged.
    assert_eq!(
        rules_on(&p, "apps"),
        [&rule("apps.example.com", &["apps"], &["get", "list", "patch", "update", "watch"])]
    );
    // Only the converting CRD's status, by name; the one-version Other gains nothing.
    assert_eq!(
        rules_on(&p, "customresourcedefinitions/status"),
        [&named(
            rule("apiextensions.k8s.io", &["customresourcedefinitions/status"], &["get", "patch", "update"]),
            &["apps.apps.example.com"]
        )]
    );
    assert_eq!(rules_on(&p, "others"), [&rule("apps.example.com", &["others"], &["get", "list", "watch"])]);
    assert!(rules_on(&p, "customresourcedefinitions").is_empty());
}

#[test]
fn migration_of_a_kind_the_operator_only_reads_or_watches_in_one_namespace_is_cluster_wide() {
    // `Other` converts too and is only read: the migrator adds update.
    let mut s = converting(ControllerSpec::default());
    s.resources[1].versions = s.resources[0].versions.clone();
    let options = Options { migrate_storage: true, ..Options::new("op") };
    let p = permissions(&s, &options);
    assert_eq!(
        rules_on(&p, "others"),
        [&rule("apps.example.com", &["others"], &["get", "list", "update", "watch"])]
    );
    assert_eq!(
        rules_on(&p, "customresourcedefinitions/status")[0].resource_names,
        ["apps.apps.example.com", "others.apps.example.com"]
    );

    // Watching one namespace: stored objects are everywhere, so the migrator's verbs are
    // cluster-wide, and the Role keeps the rest.
    let options =
        Options { migrate_storage: true, watch: WatchScope::Namespace("apps".into()), ..Options::new("op") };
    let p = permissions(&converting(ControllerSpec::default()), &options);
    assert!(
        p.cluster.contains(&rule("apps.example.com", &["apps"], &["get", "list", "update"])),
        "{:?}",
        p.cluster
    );
    assert!(
        p.namespaces["apps"].contains(&rule("apps.example.com", &["apps"], &["patch", "watch"])),
        "{:?}",
        p.namespaces
    );
}

#[test]
fn migration_without_a_converting_resource_grants_nothing() {
    let options = Options { migrate_storage: true, ..Options::new("op") };
    let s = spec(ControllerSpec::default());
    assert_eq!(permissions(&s, &options), permissions(&s, &Options::new("op")));
}

#[test]
fn another_version_of_an_own_resource_is_no_guess() {
    let ctl = ControllerSpec { reads: vec![kind("apps.example.com/v1alpha1", "App")], ..Default::default() };
    let p = permissions(&converting(ctl), &Options::new("op"));
    assert!(p.notes.is_empty(), "{:?}", p.notes);
}

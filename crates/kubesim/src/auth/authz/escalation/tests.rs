//! Tests of escalation prevention: the covering check, the compacted message, `bind` and
//! `escalate`, aggregation, resourceNames, and the exemptions.

use serde_json::{Value, json};

use super::super::tests::{Store, cr, crb, rb, role, user};
use super::*;

fn sa() -> User {
    User::service_account("ops", "op")
}

fn sa_subject() -> Value {
    json!([{"kind": "ServiceAccount", "name": "op", "namespace": "ops"}])
}

/// The operator's service account bound cluster-wide to a ClusterRole with `rules`, plus
/// the bootstrap roles (admin, edit, view and what they aggregate).
fn operator(rules: Value) -> Store {
    Store::with_bootstrap(vec![cr("operator", rules), crb("operator", "operator", sa_subject())])
}

fn binding_to(kind: &str, name: &str) -> Value {
    rb("team", "b", kind, name, user("alice"))
}

const GROUPS: &str =
    r#"(groups=["system:serviceaccounts" "system:serviceaccounts:ops" "system:authenticated"])"#;

#[test]
fn binding_admin_without_its_permissions_lists_what_is_missing() {
    let store = operator(json!([
        {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["rolebindings"], "verbs": ["create", "get"]},
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["*"]},
    ]));
    let err = check_binding(&sa(), "team", &binding_to("ClusterRole", "admin"), None, &store).unwrap_err();
    let EscalationError::NotHeld(msg) = &err else { panic!("{err:?}") };
    let prefix = format!(
        "user \"system:serviceaccount:ops:op\" {GROUPS} is attempting to grant RBAC permissions not currently held:\n"
    );
    assert!(msg.starts_with(&prefix), "{msg}");
    let lines: Vec<&str> = msg[prefix.len()..].lines().collect();
    // Sorted, one compacted rule per group and resource; what the operator holds is not listed.
    let mut sorted = lines.clone();
    sorted.sort();
    assert_eq!(lines, sorted);
    assert!(lines.contains(
        &r#"{APIGroups:["rbac.authorization.k8s.io"], Resources:["rolebindings"], Verbs:["delete" "deletecollection" "list" "patch" "update" "watch"]}"#
    ), "{msg}");
    assert!(lines.contains(&r#"{APIGroups:["apps"], Resources:["deployments"], Verbs:["create" "delete" "deletecollection" "patch" "update" "get" "list" "watch"]}"#), "{msg}");
    assert!(!lines.iter().any(|l| l.contains(r#"Resources:["configmaps"]"#)), "{msg}");
    assert!(lines.contains(
        &r#"{APIGroups:["authorization.k8s.io"], Resources:["localsubjectaccessreviews"], Verbs:["create"]}"#
    ));
}

#[test]
fn bind_on_the_role_allows_without_its_permissions() {
    let bind = |names: Value| {
        operator(json!([{"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"],
                         "verbs": ["bind"], "resourceNames": names}]))
    };
    let admin = binding_to("ClusterRole", "admin");
    assert_eq!(check_binding(&sa(), "team", &admin, None, &bind(json!(["admin"]))), Ok(()));
    // bind on another role does not help
    assert!(matches!(
        check_binding(&sa(), "team", &admin, None, &bind(json!(["edit"]))),
        Err(EscalationError::NotHeld(_))
    ));
    // bind on clusterroles covers a ClusterRoleBinding too (asked at the cluster scope)
    let crb_admin = crb("x", "admin", user("alice"));
    assert_eq!(check_binding(&sa(), "", &crb_admin, None, &bind(json!(["admin"]))), Ok(()));
    // a Role is bound with bind on roles, in the binding's namespace
    let store = Store(vec![
        role("team", "r", json!([{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}])),
        rb("team", "op", "Role", "binder", sa_subject()),
        role(
            "team",
            "binder",
            json!([{"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles"], "verbs": ["bind"]}]),
        ),
    ]);
    assert_eq!(check_binding(&sa(), "team", &binding_to("Role", "r"), None, &store), Ok(()));
    assert!(
        check_binding(&sa(), "other", &rb("other", "b", "Role", "r", user("alice")), None, &store).is_err()
    );
}

#[test]
fn holding_every_permission_allows_a_binding() {
    // The operator holds `*` in the namespace through a RoleBinding to cluster-admin: it may
    // bind admin there, not at the cluster scope.
    let store = Store::with_bootstrap(vec![rb("team", "op", "ClusterRole", "cluster-admin", sa_subject())]);
    assert_eq!(check_binding(&sa(), "team", &binding_to("ClusterRole", "admin"), None, &store), Ok(()));
    let err = check_binding(&sa(), "", &crb("x", "admin", user("alice")), None, &store).unwrap_err();
    assert!(matches!(err, EscalationError::NotHeld(_)));
    // The aggregated admin role is resolved as the aggregation controller writes it: holding
    // edit's and view's rules is not enough, admin's own rules are needed too.
    let store = Store::with_bootstrap(vec![rb("team", "op", "ClusterRole", "edit", sa_subject())]);
    let err = check_binding(&sa(), "team", &binding_to("ClusterRole", "admin"), None, &store).unwrap_err();
    let EscalationError::NotHeld(msg) = err else { panic!() };
    let missing: Vec<&str> = msg.lines().skip(1).collect();
    assert_eq!(
        missing,
        [
            r#"{APIGroups:["authorization.k8s.io"], Resources:["localsubjectaccessreviews"], Verbs:["create"]}"#,
            r#"{APIGroups:["rbac.authorization.k8s.io"], Resources:["rolebindings"], Verbs:["create" "delete" "deletecollection" "get" "list" "patch" "update" "watch"]}"#,
            r#"{APIGroups:["rbac.authorization.k8s.io"], Resources:["roles"], Verbs:["create" "delete" "deletecollection" "get" "list" "patch" "update" "watch"]}"#,
        ]
    );
}

#[test]
fn missing_role_is_not_found_unless_bind_allows() {
    let store = operator(json!([]));
    assert_eq!(
        check_binding(&sa(), "team", &binding_to("ClusterRole", "nope"), None, &store),
        Err(EscalationError::RoleNotFound { resource: "clusterroles", name: "nope".into() })
    );
    assert_eq!(
        EscalationError::RoleNotFound { resource: "roles", name: "r".into() }.to_string(),
        r#"roles.rbac.authorization.k8s.io "r" not found"#
    );
    let store = operator(
        json!([{"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"], "verbs": ["bind"]}]),
    );
    assert_eq!(check_binding(&sa(), "team", &binding_to("ClusterRole", "nope"), None, &store), Ok(()));
}

#[test]
fn resolution_errors_follow_the_missing_rules() {
    let mut store = operator(json!([]));
    store.0.push(crb("dangling", "gone", sa_subject()));
    let role = role("team", "r", json!([{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]));
    let err = check_role(&sa(), "team", "", &role, None, &store).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "user \"system:serviceaccount:ops:op\" {GROUPS} is attempting to grant RBAC permissions not currently held:\n\
             {{APIGroups:[\"\"], Resources:[\"pods\"], Verbs:[\"get\"]}}; resolution errors: \
             [clusterroles.rbac.authorization.k8s.io \"gone\" not found]"
        )
    );
}

#[test]
fn roles_need_their_rules_or_escalate() {
    let pods = role(
        "team",
        "r",
        json!([{"apiGroups": [""], "resources": ["pods", "pods/log"], "verbs": ["get", "list"]}]),
    );
    // held through a wildcard and a */subresource rule
    let store = operator(json!([
        {"apiGroups": ["*"], "resources": ["pods"], "verbs": ["*"]},
        {"apiGroups": [""], "resources": ["*/log"], "verbs": ["get"]},
    ]));
    let err = check_role(&sa(), "team", "", &pods, None, &store).unwrap_err();
    assert!(
        err.to_string().ends_with("\n{APIGroups:[\"\"], Resources:[\"pods/log\"], Verbs:[\"list\"]}"),
        "{err}"
    );
    // escalate with a resourceName is asked with the URL's name: a POST has none
    let store = operator(json!([{"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles"],
                                 "verbs": ["escalate"], "resourceNames": ["r"]}]));
    assert!(check_role(&sa(), "team", "", &pods, None, &store).is_err());
    assert_eq!(check_role(&sa(), "team", "r", &pods, None, &store), Ok(()));
    // an update that only touches ownerReferences and finalizers is never checked
    let mut owned = pods.clone();
    owned["metadata"]["ownerReferences"] =
        json!([{"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": "1"}]);
    let nothing = operator(json!([]));
    assert_eq!(check_role(&sa(), "team", "r", &owned, Some(&pods), &nothing), Ok(()));
    let mut labelled = pods.clone();
    labelled["metadata"]["labels"] = json!({"a": "b"});
    assert!(check_role(&sa(), "team", "r", &labelled, Some(&pods), &nothing).is_err());
}

#[test]
fn resource_names_and_urls_are_covered_piece_by_piece() {
    let store = operator(json!([
        {"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["a", "b"], "verbs": ["get"]},
        {"nonResourceURLs": ["/metrics/*"], "verbs": ["get"]},
    ]));
    let role = cr(
        "r",
        json!([
            {"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["a", "c"], "verbs": ["get"]},
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]},
            {"nonResourceURLs": ["/metrics/x", "/debug"], "verbs": ["get"]},
        ]),
    );
    let err = check_role(&sa(), "", "", &role, None, &store).unwrap_err();
    let missing: Vec<String> = err.to_string().lines().skip(1).map(String::from).collect();
    assert_eq!(
        missing,
        [
            r#"{APIGroups:[""], Resources:["configmaps"], ResourceNames:["c"], Verbs:["get"]}"#,
            r#"{APIGroups:[""], Resources:["configmaps"], Verbs:["get"]}"#,
            r#"{NonResourceURLs:["/debug"], Verbs:["get"]}"#,
        ]
    );
}

#[test]
fn aggregation_rules_need_full_authority() {
    let agg = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                     "metadata": {"name": "agg"},
                     "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"x": "y"}}]}});
    // The role's own rules (none) are held, but not everything.
    let store = operator(json!([{"apiGroups": ["apps"], "resources": ["*"], "verbs": ["*"]}]));
    assert_eq!(check_role(&sa(), "", "agg", &agg, None, &store), Err(EscalationError::Aggregation));
    assert_eq!(
        EscalationError::Aggregation.to_string(),
        "must have cluster-admin privileges to use the aggregationRule"
    );
    let store = operator(json!([{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
                                {"nonResourceURLs": ["*"], "verbs": ["*"]}]));
    assert_eq!(check_role(&sa(), "", "agg", &agg, None, &store), Ok(()));
}

#[test]
fn system_masters_and_escalate_skip_every_check() {
    let admin = User::new("admin", &["system:masters", "system:authenticated"]);
    let empty = Store(vec![]);
    assert_eq!(check_binding(&admin, "team", &binding_to("ClusterRole", "nope"), None, &empty), Ok(()));
    let store = operator(
        json!([{"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"], "verbs": ["escalate"]}]),
    );
    let big = cr("big", json!([{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]));
    assert_eq!(check_role(&sa(), "", "", &big, None, &store), Ok(()));
}

#[test]
fn compact_merges_simple_rules_only() {
    let r = |g: &str, res: &str, v: &str| Rule {
        verbs: vec![v.into()],
        api_groups: vec![g.into()],
        resources: vec![res.into()],
        ..Rule::default()
    };
    let named = Rule { resource_names: vec!["n".into()], ..r("", "pods", "get") };
    let out =
        compact(vec![r("", "pods", "get"), named.clone(), r("", "pods", "get"), r("apps", "pods", "list")]);
    assert_eq!(out.len(), 3);
    assert!(out.contains(&named));
    assert!(out.iter().any(|x| x.verbs == ["get", "get"] && x.api_groups == [""]));
}

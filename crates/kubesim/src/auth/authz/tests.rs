//! Tests of authorization: RBAC decisions, aggregation, the bootstrap roles, the API's 401/403 texts.

use super::*;

/// An in-memory RbacSource over a flat list of objects.
pub(super) struct Store(pub(super) Vec<Value>);

impl Store {
    fn of_kind(&self, kind: &str, ns: Option<&str>) -> Vec<Value> {
        self.0
            .iter()
            .filter(|o| o["kind"] == kind)
            .filter(|o| {
                ns.is_none_or(|ns| o.pointer("/metadata/namespace").and_then(Value::as_str) == Some(ns))
            })
            .cloned()
            .collect()
    }
    pub(super) fn with_bootstrap(mut objs: Vec<Value>) -> Store {
        objs.extend(bootstrap_objects());
        Store(objs)
    }
}

impl RbacSource for Store {
    fn cluster_roles(&self) -> Vec<Value> {
        self.of_kind("ClusterRole", None)
    }
    fn cluster_role_bindings(&self) -> Vec<Value> {
        self.of_kind("ClusterRoleBinding", None)
    }
    fn roles(&self, namespace: &str) -> Vec<Value> {
        self.of_kind("Role", Some(namespace))
    }
    fn role_bindings(&self, namespace: &str) -> Vec<Value> {
        self.of_kind("RoleBinding", Some(namespace))
    }
}

pub(super) fn cr(name: &str, rules: Value) -> Value {
    json!({"apiVersion": RBAC_API_VERSION, "kind": "ClusterRole", "metadata": {"name": name}, "rules": rules})
}
pub(super) fn role(ns: &str, name: &str, rules: Value) -> Value {
    json!({"apiVersion": RBAC_API_VERSION, "kind": "Role",
           "metadata": {"name": name, "namespace": ns}, "rules": rules})
}
pub(super) fn crb(name: &str, role: &str, subjects: Value) -> Value {
    json!({"apiVersion": RBAC_API_VERSION, "kind": "ClusterRoleBinding", "metadata": {"name": name},
           "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": role}, "subjects": subjects})
}
pub(super) fn rb(ns: &str, name: &str, kind: &str, role: &str, subjects: Value) -> Value {
    json!({"apiVersion": RBAC_API_VERSION, "kind": "RoleBinding",
           "metadata": {"name": name, "namespace": ns},
           "roleRef": {"apiGroup": RBAC_GROUP, "kind": kind, "name": role}, "subjects": subjects})
}
pub(super) fn user(name: &str) -> Value {
    json!([{"apiGroup": RBAC_GROUP, "kind": "User", "name": name}])
}

/// One user `u` bound cluster-wide to a ClusterRole with `rules`.
fn grant(rules: Value) -> Store {
    Store(vec![cr("r", rules), crb("b", "r", user("u"))])
}
fn u() -> User {
    User::new("u", &[AUTHENTICATED_GROUP])
}
fn res(verb: &str, group: &str, resource: &str) -> Attributes {
    Attributes::resource(verb, group, resource)
}

#[test]
fn verbs_groups_and_wildcards() {
    let s = grant(json!([{"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get", "list"]}]));
    assert!(authorize(&u(), &res("list", "apps", "deployments"), &s));
    assert!(authorize(&u(), &res("get", "apps", "deployments").named("d"), &s));
    assert!(!authorize(&u(), &res("delete", "apps", "deployments").named("d"), &s));
    assert!(!authorize(&u(), &res("list", "", "deployments"), &s));
    assert!(!authorize(&u(), &res("list", "apps", "replicasets"), &s));
    let s = grant(json!([{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]));
    assert!(authorize(&u(), &res("deletecollection", "x.io", "foos").in_namespace("n"), &s));
    assert!(authorize(&u(), &res("get", "", "pods").named("p").with_subresource("log"), &s));
    // a resource rule never matches a non-resource request
    assert!(!authorize(&u(), &Attributes::non_resource("get", "/healthz"), &s));
    // no verbs means nothing
    let s = grant(json!([{"apiGroups": ["*"], "resources": ["*"]}]));
    assert!(!authorize(&u(), &res("get", "", "pods"), &s));
}

#[test]
fn subresource_matching() {
    let s = grant(json!([{"apiGroups": ["x.io"], "resources": ["foos/status"], "verbs": ["update"]}]));
    assert!(authorize(&u(), &res("update", "x.io", "foos").named("a").with_subresource("status"), &s));
    assert!(!authorize(&u(), &res("update", "x.io", "foos").named("a"), &s));
    assert!(!authorize(&u(), &res("update", "x.io", "bars").named("a").with_subresource("status"), &s));
    // the parent resource does not cover its subresources
    let s = grant(json!([{"apiGroups": ["x.io"], "resources": ["foos"], "verbs": ["update"]}]));
    assert!(!authorize(&u(), &res("update", "x.io", "foos").named("a").with_subresource("status"), &s));
    // */status covers every resource's status, not the resource itself
    let s = grant(json!([{"apiGroups": ["x.io"], "resources": ["*/status"], "verbs": ["update"]}]));
    assert!(authorize(&u(), &res("update", "x.io", "bars").named("a").with_subresource("status"), &s));
    assert!(!authorize(&u(), &res("update", "x.io", "bars").named("a").with_subresource("scale"), &s));
    assert!(!authorize(&u(), &res("update", "x.io", "bars").named("a"), &s));
    // real RBAC has no resource/* wildcard: it only matches literally
    let s = grant(json!([{"apiGroups": ["x.io"], "resources": ["foos/*"], "verbs": ["update"]}]));
    assert!(!authorize(&u(), &res("update", "x.io", "foos").named("a").with_subresource("status"), &s));
    assert!(!authorize(&u(), &res("update", "x.io", "foos").named("a"), &s));
}

#[test]
fn resource_names() {
    let s = grant(json!([{"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["x"],
                          "verbs": ["get", "list", "watch", "create", "update", "delete", "deletecollection"]}]));
    let cm = |verb: &str| res(verb, "", "configmaps").in_namespace("n");
    assert!(authorize(&u(), &cm("get").named("x"), &s));
    assert!(authorize(&u(), &cm("update").named("x"), &s));
    assert!(authorize(&u(), &cm("delete").named("x"), &s));
    assert!(!authorize(&u(), &cm("get").named("y"), &s));
    // requests without a name never match a rule with resourceNames
    assert!(!authorize(&u(), &cm("list"), &s));
    assert!(!authorize(&u(), &cm("watch"), &s));
    assert!(!authorize(&u(), &cm("create"), &s));
    assert!(!authorize(&u(), &cm("deletecollection"), &s));
    // a list/watch narrowed to one name (metadata.name field selector) carries the name
    assert!(authorize(&u(), &cm("list").named("x"), &s));
}

#[test]
fn non_resource_urls() {
    let s = grant(json!([{"nonResourceURLs": ["/healthz", "/apis/*", "/logs**"], "verbs": ["get"]}]));
    let get = |p: &str| Attributes::non_resource("get", p);
    assert!(authorize(&u(), &get("/healthz"), &s));
    assert!(!authorize(&u(), &get("/healthz/etcd"), &s));
    assert!(authorize(&u(), &get("/apis/apps/v1"), &s));
    assert!(authorize(&u(), &get("/apis/"), &s));
    assert!(!authorize(&u(), &get("/apis"), &s));
    assert!(authorize(&u(), &get("/logsx"), &s));
    assert!(!authorize(&u(), &Attributes::non_resource("post", "/healthz"), &s));
    // a URL rule never matches a resource request
    assert!(!authorize(&u(), &res("get", "", "healthz"), &s));
    let s = grant(json!([{"nonResourceURLs": ["*"], "verbs": ["*"]}]));
    assert!(authorize(&u(), &Attributes::non_resource("delete", "/anything"), &s));
}

#[test]
fn subjects() {
    let rules = json!([{"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}]);
    let list = res("list", "", "pods").in_namespace("n");
    let sa = User::service_account("ops", "op");
    let with = |subjects: Value| Store(vec![cr("r", rules.clone()), crb("b", "r", subjects)]);
    assert!(authorize(
        &sa,
        &list,
        &with(json!([{"kind": "ServiceAccount", "name": "op", "namespace": "ops"}]))
    ));
    assert!(!authorize(
        &sa,
        &list,
        &with(json!([{"kind": "ServiceAccount", "name": "op", "namespace": "x"}]))
    ));
    // a ClusterRoleBinding's ServiceAccount subject needs a namespace
    assert!(!authorize(&sa, &list, &with(json!([{"kind": "ServiceAccount", "name": "op"}]))));
    assert!(authorize(&sa, &list, &with(json!([{"kind": "Group", "name": "system:serviceaccounts:ops"}]))));
    assert!(!authorize(&sa, &list, &with(json!([{"kind": "Group", "name": "system:serviceaccounts:x"}]))));
    assert!(authorize(&sa, &list, &with(json!([{"kind": "User", "name": "system:serviceaccount:ops:op"}]))));
    assert!(!authorize(
        &sa,
        &list,
        &with(json!([{"kind": "Robot", "name": "system:serviceaccount:ops:op"}]))
    ));
    assert!(!authorize(&sa, &list, &with(json!([]))));
    // in a RoleBinding the ServiceAccount namespace defaults to the binding's
    let s = Store(vec![
        cr("r", rules.clone()),
        rb("ops", "b", "ClusterRole", "r", json!([{"kind": "ServiceAccount", "name": "op"}])),
    ]);
    assert!(authorize(&sa, &res("list", "", "pods").in_namespace("ops"), &s));
    assert!(!authorize(
        &User::service_account("other", "op"),
        &res("list", "", "pods").in_namespace("ops"),
        &s
    ));
}

#[test]
fn role_bindings_are_namespace_local() {
    let rules = json!([{"apiGroups": [""], "resources": ["pods", "nodes"], "verbs": ["list"]}]);
    let s = Store(vec![
        cr("pods-reader", rules.clone()),
        role("a", "local", rules.clone()),
        role("b", "elsewhere", rules.clone()),
        rb("a", "via-cluster-role", "ClusterRole", "pods-reader", user("u")),
        rb("a", "via-role", "Role", "local", user("v")),
        rb("a", "wrong-ns-role", "Role", "elsewhere", user("w")),
    ]);
    let list_in = |ns: &str| res("list", "", "pods").in_namespace(ns);
    assert!(authorize(&u(), &list_in("a"), &s));
    assert!(!authorize(&u(), &list_in("b"), &s));
    // a RoleBinding never grants cluster-scoped or all-namespaces requests
    assert!(!authorize(&u(), &res("list", "", "pods"), &s));
    assert!(!authorize(&u(), &res("list", "", "nodes"), &s));
    let v = User::new("v", &[]);
    assert!(authorize(&v, &list_in("a"), &s));
    assert!(!authorize(&v, &list_in("b"), &s));
    // a RoleBinding's Role is looked up in the binding's namespace only
    let w = User::new("w", &[]);
    let d = decide(&w, &list_in("a"), &s);
    assert!(!d.allowed);
    assert_eq!(d.reason, r#"RBAC: role.rbac.authorization.k8s.io "elsewhere" not found"#);
}

#[test]
fn resolution_errors_become_the_reason() {
    let pods = res("list", "", "pods").in_namespace("n");
    let s = Store(vec![crb("b", "nope", user("u"))]);
    let d = decide(&u(), &pods, &s);
    assert_eq!(
        d,
        Decision {
            allowed: false,
            reason: r#"RBAC: clusterrole.rbac.authorization.k8s.io "nope" not found"#.into()
        }
    );
    // the same error twice is reported once; different errors in brackets
    let s = Store(vec![
        crb("b1", "nope", user("u")),
        crb("b2", "nope", user("u")),
        rb("n", "b3", "Role", "gone", user("u")),
        rb("n", "b4", "Bogus", "x", user("u")),
        crb("other", "absent", user("someone-else")),
    ]);
    assert_eq!(
        decide(&u(), &pods, &s).reason,
        r#"RBAC: [clusterrole.rbac.authorization.k8s.io "nope" not found, role.rbac.authorization.k8s.io "gone" not found, unsupported role reference kind: "Bogus"]"#
    );
    // a broken binding does not stop another one from allowing
    let mut objs = s.0.clone();
    objs.push(cr("ok", json!([{"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}])));
    objs.push(rb("n", "good", "ClusterRole", "ok", user("u")));
    assert!(authorize(&u(), &pods, &Store(objs)));
    // no bindings at all: denied with no reason
    assert_eq!(decide(&u(), &pods, &Store(vec![])), Decision { allowed: false, reason: String::new() });
}

#[test]
fn allowed_reason_names_the_binding() {
    let s = Store(vec![
        cr("r", json!([{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}])),
        rb("n", "b", "ClusterRole", "r", json!([{"kind": "ServiceAccount", "name": "sa"}])),
    ]);
    let d =
        decide(&User::service_account("n", "sa"), &res("get", "", "pods").in_namespace("n").named("p"), &s);
    assert!(d.allowed);
    assert_eq!(d.reason, r#"RBAC: allowed by RoleBinding "b/n" of ClusterRole "r" to ServiceAccount "sa/n""#);
    let d = rbac_decide(
        &User::new("root", &[PRIVILEGED_GROUP]),
        &res("get", "", "nodes"),
        &Store::with_bootstrap(vec![]),
    );
    assert_eq!(
        d.reason,
        r#"RBAC: allowed by ClusterRoleBinding "cluster-admin" of ClusterRole "cluster-admin" to Group "system:masters""#
    );
}

#[test]
fn system_masters() {
    let root = User::new("kubernetes-admin", &[PRIVILEGED_GROUP, AUTHENTICATED_GROUP]);
    let boot = Store::with_bootstrap(vec![]);
    let anything = [
        res("delete", "apps", "deployments").in_namespace("x").named("d"),
        res("update", "x.io", "foos").named("f").with_subresource("status"),
        res("escalate", RBAC_GROUP, "clusterroles"),
        Attributes::non_resource("post", "/some/path"),
    ];
    for a in &anything {
        // through the bootstrap cluster-admin binding alone
        assert!(rbac_decide(&root, a, &boot).allowed, "{a:?}");
        // and, as in the real server, even with no RBAC objects at all
        assert!(authorize(&root, a, &Store(vec![])), "{a:?}");
        assert!(!rbac_decide(&root, a, &Store(vec![])).allowed);
    }
}

#[test]
fn bootstrap_defaults() {
    let s = Store::with_bootstrap(vec![]);
    let alice = User::new("alice", &[AUTHENTICATED_GROUP]);
    let anon = User::anonymous();
    let get = |p: &str| Attributes::non_resource("get", p);
    for p in [
        "/api",
        "/api/v1",
        "/apis",
        "/apis/apps/v1",
        "/openapi/v3",
        "/version",
        "/healthz",
        "/livez",
        "/readyz",
    ] {
        assert!(authorize(&alice, &get(p), &s), "{p}");
    }
    assert!(!authorize(&alice, &get("/metrics"), &s));
    assert!(!authorize(&alice, &get("/debug/pprof"), &s));
    assert!(authorize(&alice, &res("create", "authorization.k8s.io", "selfsubjectaccessreviews"), &s));
    assert!(authorize(&alice, &res("create", "authentication.k8s.io", "selfsubjectreviews"), &s));
    assert!(!authorize(&alice, &res("list", "", "pods").in_namespace("default"), &s));
    assert!(!authorize(&alice, &res("list", "", "namespaces"), &s));
    // the anonymous user only sees the public info endpoints
    assert!(authorize(&anon, &get("/healthz"), &s));
    assert!(authorize(&anon, &get("/version"), &s));
    assert!(!authorize(&anon, &get("/api"), &s));
    assert!(!authorize(&anon, &res("create", "authorization.k8s.io", "selfsubjectaccessreviews"), &s));
    // service accounts can read the issuer discovery documents; monitoring group sees /metrics
    assert!(authorize(&User::service_account("n", "s"), &get("/openid/v1/jwks"), &s));
    assert!(authorize(&User::new("prom", &["system:monitoring"]), &get("/metrics"), &s));
}

#[test]
fn admin_edit_view_aggregate() {
    let s = Store::with_bootstrap(vec![
        rb("team", "v", "ClusterRole", "view", user("viewer")),
        rb("team", "e", "ClusterRole", "edit", user("editor")),
        rb("team", "a", "ClusterRole", "admin", user("admin")),
    ]);
    let (viewer, editor, admin) =
        (User::new("viewer", &[]), User::new("editor", &[]), User::new("admin", &[]));
    let at = |a: Attributes| a.in_namespace("team");
    let list_pods = at(res("list", "", "pods"));
    let get_secret = at(res("get", "", "secrets").named("s"));
    let create_deploy = at(res("create", "apps", "deployments"));
    let scale_deploy = at(res("update", "apps", "deployments").named("d").with_subresource("scale"));
    let create_rb = at(res("create", RBAC_GROUP, "rolebindings"));
    assert!(authorize(&viewer, &list_pods, &s));
    assert!(!authorize(&viewer, &get_secret, &s));
    assert!(!authorize(&viewer, &create_deploy, &s));
    // edit = its own aggregate-to-edit rules + view (nested)
    assert!(authorize(&editor, &list_pods, &s));
    assert!(authorize(&editor, &get_secret, &s));
    assert!(authorize(&editor, &create_deploy, &s));
    assert!(authorize(&editor, &scale_deploy, &s));
    assert!(!authorize(&editor, &create_rb, &s));
    // admin = aggregate-to-admin + edit (+ view through edit)
    for a in [&list_pods, &get_secret, &create_deploy, &create_rb] {
        assert!(authorize(&admin, a, &s), "{a:?}");
    }
    assert!(!authorize(&admin, &res("list", "", "nodes"), &s));
    assert!(!authorize(&admin, &at(res("list", "", "pods")).in_namespace("other"), &s));
    // a new ClusterRole labelled aggregate-to-view reaches view, edit and admin at once
    let mut objs = s.0.clone();
    objs.push(json!({"apiVersion": RBAC_API_VERSION, "kind": "ClusterRole",
        "metadata": {"name": "widgets-view", "labels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"}},
        "rules": [{"apiGroups": ["x.io"], "resources": ["widgets"], "verbs": ["get", "list", "watch"]}]}));
    let s = Store(objs);
    let widgets = at(res("list", "x.io", "widgets"));
    for who in [&viewer, &editor, &admin] {
        assert!(authorize(who, &widgets, &s), "{who:?}");
    }
    // aggregated_rules materialises the union
    let view = aggregated_rules("view", &s.cluster_roles()).unwrap().unwrap();
    assert!(view.contains(
        &json!({"apiGroups": ["x.io"], "resources": ["widgets"], "verbs": ["get", "list", "watch"]})
    ));
    assert_eq!(aggregated_rules("cluster-admin", &s.cluster_roles()), Ok(None));
    assert_eq!(
        aggregated_rules("missing", &s.cluster_roles()),
        Err(AuthzError::ClusterRoleNotFound("missing".into()))
    );
}

fn labelled(name: &str, labels: Value, verb: &str) -> Value {
    json!({"apiVersion": RBAC_API_VERSION, "kind": "ClusterRole", "metadata": {"name": name, "labels": labels},
           "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": [verb]}]})
}
fn aggregator(selectors: Value) -> Value {
    json!({"apiVersion": RBAC_API_VERSION, "kind": "ClusterRole", "metadata": {"name": "agg", "labels": {"tier": "a"}},
           "aggregationRule": {"clusterRoleSelectors": selectors},
           "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["own"]}]})
}
/// The verbs `u` gets on configmaps through a binding to `agg`.
fn agg_verbs(selectors: Value) -> Vec<&'static str> {
    let s = Store(vec![
        aggregator(selectors),
        labelled("one", json!({"tier": "a", "env": "prod"}), "get"),
        labelled("two", json!({"tier": "b"}), "list"),
        labelled("three", json!({}), "watch"),
        crb("b", "agg", user("u")),
    ]);
    ["own", "get", "list", "watch"]
        .into_iter()
        .filter(|v| authorize(&u(), &res(v, "", "configmaps").named("c"), &s))
        .collect()
}

#[test]
fn aggregation_selectors() {
    assert_eq!(agg_verbs(json!([{"matchLabels": {"tier": "a"}}])), ["get"]);
    assert_eq!(
        agg_verbs(json!([{"matchLabels": {"tier": "a"}}, {"matchLabels": {"tier": "b"}}])),
        ["get", "list"]
    );
    assert_eq!(agg_verbs(json!([{"matchLabels": {"tier": "a", "env": "dev"}}])), Vec::<&str>::new());
    let expr = |op: &str, values: Value| json!([{"matchExpressions": [{"key": "tier", "operator": op, "values": values}]}]);
    assert_eq!(agg_verbs(expr("In", json!(["a", "b"]))), ["get", "list"]);
    assert_eq!(agg_verbs(expr("NotIn", json!(["a"]))), ["list", "watch"]);
    assert_eq!(agg_verbs(expr("Exists", json!([]))), ["get", "list"]);
    assert_eq!(agg_verbs(expr("DoesNotExist", json!([]))), ["watch"]);
    // matchLabels and matchExpressions are ANDed
    assert_eq!(
        agg_verbs(
            json!([{"matchLabels": {"tier": "a"}, "matchExpressions": [{"key": "env", "operator": "NotIn", "values": ["prod"]}]}])
        ),
        Vec::<&str>::new()
    );
    // an empty selector matches every other ClusterRole (never the aggregator itself)
    assert_eq!(agg_verbs(json!([{}])), ["get", "list", "watch"]);
    // no selectors: the stored rules are replaced by nothing
    assert_eq!(agg_verbs(json!([])), Vec::<&str>::new());
    // an invalid selector: the controller fails and the stored rules stay
    assert_eq!(agg_verbs(expr("Near", json!(["a"]))), ["own"]);
    assert_eq!(agg_verbs(expr("In", json!([]))), ["own"]);
    let roles = vec![aggregator(expr("Near", json!(["a"])))];
    assert_eq!(
        aggregated_rules("agg", &roles),
        Err(AuthzError::InvalidSelector(r#""Near" is not a valid label selector operator"#.into()))
    );
}

#[test]
fn aggregation_cycles_terminate() {
    let agg = |name: &str, label: &str, selects: &str, verb: &str| {
        json!({"apiVersion": RBAC_API_VERSION, "kind": "ClusterRole", "metadata": {"name": name, "labels": {label: "true"}},
               "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {selects: "true"}}]},
               "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": [verb]}]})
    };
    let s = Store(vec![agg("a", "x", "y", "get"), agg("b", "y", "x", "list"), crb("bind", "a", user("u"))]);
    // a aggregates b, which (mid-cycle) contributes a's stored rules
    assert!(authorize(&u(), &res("get", "", "configmaps"), &s));
    assert!(!authorize(&u(), &res("list", "", "configmaps"), &s));
}

#[test]
fn forbidden_bodies() {
    let op = User::service_account("ops", "op");
    assert_eq!(
        forbidden_status(&op, &res("list", "apps", "deployments").in_namespace("default")),
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": r#"deployments.apps is forbidden: User "system:serviceaccount:ops:op" cannot list resource "deployments" in API group "apps" in the namespace "default""#,
               "reason": "Forbidden", "details": {"group": "apps", "kind": "deployments"}, "code": 403})
    );
    // cluster scope
    assert_eq!(
        forbidden_status(&op, &res("list", "", "nodes"))["message"],
        r#"nodes is forbidden: User "system:serviceaccount:ops:op" cannot list resource "nodes" in API group "" at the cluster scope"#
    );
    // subresource, named object, custom group
    let st = forbidden_status(
        &op,
        &res("update", "x.io", "foos").in_namespace("n").named("f1").with_subresource("status"),
    );
    assert_eq!(
        st["message"],
        r#"foos.x.io "f1" is forbidden: User "system:serviceaccount:ops:op" cannot update resource "foos/status" in API group "x.io" in the namespace "n""#
    );
    assert_eq!(st["details"], json!({"name": "f1", "group": "x.io", "kind": "foos"}));
    // named object in the core group: details has no group
    let st =
        forbidden_status(&User::new("u", &[]), &res("get", "", "configmaps").in_namespace("n").named("x"));
    assert_eq!(
        st["message"],
        r#"configmaps "x" is forbidden: User "u" cannot get resource "configmaps" in API group "" in the namespace "n""#
    );
    assert_eq!(st["details"], json!({"name": "x", "kind": "configmaps"}));
    // non-resource
    assert_eq!(
        forbidden_status(&User::new("u", &[]), &Attributes::non_resource("get", "/foo")),
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": r#"forbidden: User "u" cannot get path "/foo""#,
               "reason": "Forbidden", "details": {}, "code": 403})
    );
    // with the authorizer's reason
    let s = Store(vec![crb("b", "gone", user("u"))]);
    let a = res("list", "", "nodes");
    let d = decide(&u(), &a, &s);
    assert_eq!(
        forbidden_status_with_reason(&u(), &a, &d.reason)["message"],
        r#"nodes is forbidden: User "u" cannot list resource "nodes" in API group "" at the cluster scope: RBAC: clusterrole.rbac.authorization.k8s.io "gone" not found"#
    );
    // names are Go-quoted
    assert_eq!(
        forbidden_status(&User::new("we\"ird\n", &[]), &Attributes::non_resource("get", "/a\\b"))["message"],
        r#"forbidden: User "we\"ird\n" cannot get path "/a\\b""#
    );
}

#[test]
fn go_quoting() {
    assert_eq!(go_quote("plain"), r#""plain""#);
    assert_eq!(go_quote("tab\there"), r#""tab\there""#);
    assert_eq!(go_quote("\u{1}\u{7f}"), r#""\x01\x7f""#);
    assert_eq!(go_quote("\u{85}é"), "\"\\u0085é\"");
}

#[test]
fn bootstrap_shape() {
    let objs = bootstrap_objects();
    let find =
        |kind: &str, name: &str| objs.iter().find(|o| o["kind"] == kind && meta_name(o) == name).cloned();
    let admin = find("ClusterRole", "admin").unwrap();
    assert_eq!(admin["metadata"]["labels"]["kubernetes.io/bootstrapping"], "rbac-defaults");
    assert_eq!(admin["metadata"]["annotations"]["rbac.authorization.kubernetes.io/autoupdate"], "true");
    assert_eq!(
        admin["aggregationRule"],
        json!({"clusterRoleSelectors": [{"matchLabels": {"rbac.authorization.k8s.io/aggregate-to-admin": "true"}}]})
    );
    assert_eq!(
        find("ClusterRole", "edit").unwrap()["metadata"]["labels"]["rbac.authorization.k8s.io/aggregate-to-admin"],
        "true"
    );
    assert_eq!(
        find("ClusterRole", "view").unwrap()["metadata"]["labels"]["rbac.authorization.k8s.io/aggregate-to-edit"],
        "true"
    );
    let piv = find("ClusterRoleBinding", "system:public-info-viewer").unwrap();
    assert_eq!(
        piv["subjects"][1],
        json!({"apiGroup": RBAC_GROUP, "kind": "Group", "name": "system:unauthenticated"})
    );
    assert_eq!(find("ClusterRoleBinding", "cluster-admin").unwrap()["subjects"][0]["name"], PRIVILEGED_GROUP);
    assert!(objs.iter().all(|o| o["apiVersion"] == RBAC_API_VERSION));
    // every line of the aggregate rule table parsed (2 + 13 + 10 real rules)
    for (name, count) in [("admin", 2), ("edit", 13), ("view", 10)] {
        let role = find("ClusterRole", &format!("system:aggregate-to-{name}")).unwrap();
        assert_eq!(role["rules"].as_array().unwrap().len(), count, "{name}");
    }
    let edit = find("ClusterRole", "system:aggregate-to-edit").unwrap();
    assert_eq!(
        edit["rules"][12],
        json!({"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
               "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]})
    );
}

//! Authentication and RBAC through kubectl (`--authz` kubesim): tokens, bindings, the
//! OwnerReferencesPermissionEnforcement plugin, and `auth can-i`.

use ctop_kubesim::Config;
use serde_json::Value;

use super::*;

/// Get a token for `default/bot` through the TokenRequest API.
fn service_account_token(env: &Env) -> String {
    env.apply("apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: bot\n", &[]);
    // `kubectl create token` sends a protobuf TokenRequest.
    let token = env.ok(&["create", "token", "bot"]).trim().to_owned();
    assert!(token.starts_with("kubesim-sa."), "{token}");
    token
}

const ROLE: &str = r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: cm-reader
rules:
- apiGroups: [""]
  resources: [configmaps]
  verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: bot-reads-cms
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: cm-reader
subjects:
- kind: ServiceAccount
  name: bot
  namespace: default
"#;

const AUTHZ_TLS: &str = "kubectl authenticates with the kubeconfig token over https";

#[tokio::test(flavor = "multi_thread")]
async fn token_request_through_create_raw() {
    let env = Env::start().await;
    let token = service_account_token(&env);
    assert!(!token.is_empty());
    let body = env.dir.path().join("tokenrequest.json");
    std::fs::write(&body, r#"{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{}}"#)
        .expect("write body");
    let err = env.fails(&[
        "create",
        "--raw",
        "/api/v1/namespaces/default/serviceaccounts/nope/token",
        "-f",
        body.to_str().expect("UTF-8 path"),
    ]);
    assert!(err.contains(r#"serviceaccounts "nope" not found"#), "{err}");
}

#[tokio::test(flavor = "multi_thread")]
async fn authz_admin_kubeconfig_works() {
    let env = Env::start_with(Config { authz: true, ..Config::default() }).await;
    let out = env.run(&["get", "namespaces", "-o", "json"]);
    assert!(out.ok(), "{AUTHZ_TLS}: {}", out.stderr);
    env.apply("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n", &[]);
    assert_eq!(env.names(&["configmaps"]), ["c"]);
    // Without credentials: 403 for the anonymous user, 401 for a bad token.
    let anonymous = env.kubeconfig_with_token("anonymous.kubeconfig", "");
    let out = env.run_as(&anonymous, &["get", "configmaps"], None);
    assert!(!out.ok());
    let bad = env.kubeconfig_with_token("bad.kubeconfig", "nope");
    let out = env.run_as(&bad, &["get", "configmaps"], None);
    assert!(
        out.stderr.contains("error: You must be logged in to the server (Unauthorized)"),
        "{}",
        out.stderr
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn authz_service_account_needs_role_binding() {
    let env = Env::start_with(Config { authz: true, ..Config::default() }).await;
    env.apply("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n", &[]);
    let token = service_account_token(&env);
    let bot = env.kubeconfig_with_token("bot.kubeconfig", &token);
    let out = env.run_as(&bot, &["get", "configmaps"], None);
    assert!(!out.ok());
    assert!(
        out.stderr.contains(r#"Error from server (Forbidden): configmaps is forbidden: User "system:serviceaccount:default:bot" cannot list resource "configmaps" in API group "" in the namespace "default""#),
        "{}",
        out.stderr
    );
    let out = env.run_as(&bot, &["get", "configmap", "c"], None);
    assert!(
        out.stderr.contains(r#"Error from server (Forbidden): configmaps "c" is forbidden: User "system:serviceaccount:default:bot" cannot get resource "configmaps" in API group "" in the namespace "default""#),
        "{}",
        out.stderr
    );

    env.apply(ROLE, &[]);
    let out = env.run_as(&bot, &["get", "configmaps", "-o", "json"], None);
    assert!(out.ok(), "{}", out.stderr);
    let list: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(list["items"][0]["metadata"]["name"], "c");

    // Still no write access, and nothing in other namespaces.
    let out = env.run_as(&bot, &["delete", "configmap", "c"], None);
    assert!(
        out.stderr.contains(r#"configmaps "c" is forbidden: User "system:serviceaccount:default:bot" cannot delete resource "configmaps" in API group "" in the namespace "default""#),
        "{}",
        out.stderr
    );
    let out = env.run_as(&bot, &["get", "configmaps", "-n", "kube-system"], None);
    assert!(
        out.stderr
            .contains(r#"cannot list resource "configmaps" in API group "" in the namespace "kube-system""#),
        "{}",
        out.stderr
    );
    assert!(env.get(&["configmap", "c"]).is_some());
}

/// A Role for `bot` over ConfigMaps with `verbs`, and the binding.
fn cm_role(verbs: &str) -> String {
    format!(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {{name: cm-writer}}\nrules:\n\
         - apiGroups: [\"\"]\n  resources: [configmaps]\n  verbs: [{verbs}]\n---\n\
         apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {{name: bot-writes-cms}}\n\
         roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: Role, name: cm-writer}}\n\
         subjects: [{{kind: ServiceAccount, name: bot, namespace: default}}]\n"
    )
}

/// OwnerReferencesPermissionEnforcement: `blockOwnerDeletion` needs `update` on the owner's
/// `finalizers`; changing the references of an existing object needs `delete` on it.
#[tokio::test(flavor = "multi_thread")]
async fn authz_owner_references_permission_enforcement() {
    let env = Env::start_with(Config { authz: true, ..Config::default() }).await;
    env.apply("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: owner\n", &[]);
    let uid =
        env.get(&["configmap", "owner"]).expect("owner")["metadata"]["uid"].as_str().expect("uid").to_owned();
    let token = service_account_token(&env);
    let bot = env.kubeconfig_with_token("bot.kubeconfig", &token);
    env.apply(&cm_role("get, list, create, update, patch"), &[]);
    let child = |name: &str, block: bool| {
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  ownerReferences:\n  - \
             {{apiVersion: v1, kind: ConfigMap, name: owner, uid: {uid}, blockOwnerDeletion: {block}}}\n"
        )
    };
    let out = env.run_as(&bot, &["create", "-f", "-"], Some(&child("blocked", true)));
    assert!(
        out.stderr.contains(r#"configmaps "blocked" is forbidden: cannot set blockOwnerDeletion if an ownerReference refers to a resource you can't set finalizers on: User "system:serviceaccount:default:bot" cannot update resource "configmaps/finalizers" in API group "" in the namespace "default""#),
        "{}",
        out.stderr
    );
    // Without blockOwnerDeletion a creator may set references.
    let out = env.run_as(&bot, &["create", "-f", "-"], Some(&child("plain", false)));
    assert!(out.ok(), "{}", out.stderr);
    // Changing them later needs delete on the object.
    let out = env.run_as(
        &bot,
        &[
            "patch",
            "configmap",
            "plain",
            "--type=json",
            "-p",
            r#"[{"op":"remove","path":"/metadata/ownerReferences"}]"#,
        ],
        None,
    );
    assert!(
        out.stderr.contains(
            r#"configmaps "plain" is forbidden: cannot set an ownerRef on a resource you can't delete"#
        ),
        "{}",
        out.stderr
    );
    // Granted both, both work.
    env.apply(&cm_role("get, list, create, update, patch, delete"), &[]);
    env.apply(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: cm-finalizers}\nrules:\n\
         - apiGroups: [\"\"]\n  resources: [configmaps/finalizers]\n  verbs: [update]\n---\n\
         apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: bot-cm-finalizers}\n\
         roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: cm-finalizers}\n\
         subjects: [{kind: ServiceAccount, name: bot, namespace: default}]\n",
        &[],
    );
    let out = env.run_as(&bot, &["create", "-f", "-"], Some(&child("blocked", true)));
    assert!(out.ok(), "{}", out.stderr);
    let out = env.run_as(
        &bot,
        &[
            "patch",
            "configmap",
            "plain",
            "--type=json",
            "-p",
            r#"[{"op":"remove","path":"/metadata/ownerReferences"}]"#,
        ],
        None,
    );
    assert!(out.ok(), "{}", out.stderr);
}

#[tokio::test(flavor = "multi_thread")]
async fn authz_auth_can_i() {
    let env = Env::start_with(Config { authz: true, ..Config::default() }).await;
    let token = service_account_token(&env);
    let bot = env.kubeconfig_with_token("bot.kubeconfig", &token);
    let out = env.run_as(&bot, &["auth", "can-i", "list", "configmaps"], None);
    assert_eq!(out.stdout.trim(), "no", "{}", out.stderr);
    env.apply(ROLE, &[]);
    let out = env.run_as(&bot, &["auth", "can-i", "list", "configmaps"], None);
    assert_eq!(out.stdout.trim(), "yes", "{}", out.stderr);
    let out = env.run_as(&bot, &["auth", "can-i", "delete", "configmaps"], None);
    assert_eq!(out.stdout.trim(), "no", "{}", out.stderr);
}

/// With the cluster's controllers on, an aggregated ClusterRole's `rules` are the union of
/// the roles it selects (kube-controller-manager's aggregation controller), kept up to date
/// as a selected role comes and goes.
#[tokio::test(flavor = "multi_thread")]
async fn aggregated_cluster_roles_show_their_rules() {
    let workloads = Some(ctop_kubesim::WorkloadConfig::default());
    let env = Env::start_with(Config { workloads, ..Config::default() }).await;
    let rules = |role: &str| env.ok(&["get", "clusterrole", role, "-o", "jsonpath={.rules[*].resources}"]);
    wait_until("view has the rules of the roles that aggregate to it", || rules("view").contains("pods"))
        .await;
    assert!(!rules("view").contains("widgets"));
    env.apply(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: widget-viewer\n  labels:\n    rbac.authorization.k8s.io/aggregate-to-view: \"true\"\nrules:\n- apiGroups: [\"example.com\"]\n  resources: [\"widgets\"]\n  verbs: [\"get\", \"list\"]\n",
        &[],
    );
    // view aggregates to edit, and edit to admin: the rule reaches all three.
    for role in ["view", "edit", "admin"] {
        wait_until(&format!("{role} gets the widget rule"), || rules(role).contains("widgets")).await;
    }
    env.ok(&["delete", "clusterrole", "widget-viewer"]);
    wait_until("view loses the widget rule", || !rules("view").contains("widgets")).await;
    let managers = env.ok(&[
        "get",
        "clusterrole",
        "view",
        "-o",
        "jsonpath={.metadata.managedFields[*].manager}",
        "--show-managed-fields",
    ]);
    assert!(managers.contains("clusterrole-aggregation-controller"), "{managers}");
}

//! RBAC escalation prevention through kubectl as a service account (`--authz` kubesim): a
//! RoleBinding of `admin` is refused in the API server's words until the account may
//! `bind` it; a Role granting more than the account holds until it may `escalate`.

use ctop_kubesim::Config;

use super::*;

/// The account `default/bot` may create RoleBindings and Roles, nothing else of RBAC.
const BOT: &str = r#"
apiVersion: v1
kind: ServiceAccount
metadata:
  name: bot
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: bot
rules:
- apiGroups: [rbac.authorization.k8s.io]
  resources: [rolebindings, roles]
  verbs: [get, create, patch, update]
- apiGroups: [""]
  resources: [configmaps]
  verbs: [get, list]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: bot
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: bot}
subjects:
- {kind: ServiceAccount, name: bot, namespace: default}
"#;

const BINDING: &str = r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: alice-admin
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: admin}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}
"#;

const GROUPS: &str =
    r#"(groups=["system:serviceaccounts" "system:serviceaccounts:default" "system:authenticated"])"#;

fn bot_kubeconfig(env: &Env) -> std::path::PathBuf {
    env.apply(BOT, &[]);
    let token = env.ok(&["create", "token", "bot"]).trim().to_owned();
    env.kubeconfig_with_token("bot.kubeconfig", &token)
}

#[tokio::test(flavor = "multi_thread")]
async fn binding_admin_needs_bind_or_admins_permissions() {
    let env = Env::start_with(Config { authz: true, ..Config::default() }).await;
    let bot = bot_kubeconfig(&env);

    // Neither way (create, server-side apply) passes without bind: the 403 lists what the
    // account lacks of admin, one compacted rule a line, sorted.
    for args in [&["create", "-f", "-"][..], &["apply", "--server-side", "-f", "-"][..]] {
        let out = env.run_as(&bot, args, Some(BINDING));
        assert!(!out.ok(), "{args:?} was allowed");
        let prefix = format!(
            "rolebindings.rbac.authorization.k8s.io \"alice-admin\" is forbidden: \
             user \"system:serviceaccount:default:bot\" {GROUPS} is attempting to grant RBAC permissions not currently held:\n"
        );
        assert!(
            out.stderr.contains("Error from server (Forbidden)") && out.stderr.contains(&prefix),
            "{}",
            out.stderr
        );
        for line in [
            r#"{APIGroups:[""], Resources:["configmaps"], Verbs:["create" "delete" "deletecollection" "patch" "update" "watch"]}"#,
            r#"{APIGroups:["apps"], Resources:["deployments"], Verbs:["create" "delete" "deletecollection" "patch" "update" "get" "list" "watch"]}"#,
            r#"{APIGroups:["rbac.authorization.k8s.io"], Resources:["rolebindings"], Verbs:["delete" "deletecollection" "list" "watch"]}"#,
        ] {
            assert!(out.stderr.lines().any(|l| l == line), "missing line {line}:\n{}", out.stderr);
        }
    }
    assert!(env.get(&["rolebinding", "alice-admin"]).is_none(), "nothing was stored");

    // bind on clusterroles named admin, and both ways pass.
    env.apply(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: bot-binds-admin\nrules:\n\
         - apiGroups: [rbac.authorization.k8s.io]\n  resources: [clusterroles]\n  verbs: [bind]\n  resourceNames: [admin]\n\
         ---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: bot-binds-admin\n\
         roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: bot-binds-admin}\n\
         subjects:\n- {kind: ServiceAccount, name: bot, namespace: default}\n",
        &[],
    );
    let out = env.run_as(&bot, &["apply", "--server-side", "-f", "-"], Some(BINDING));
    assert!(out.ok(), "{}", out.stderr);
    assert!(env.get(&["rolebinding", "alice-admin"]).is_some());
    // bind on admin is not bind on edit; and a missing role is the registry's 404 first.
    let edit = BINDING.replace("alice-admin", "alice-edit").replace("name: admin", "name: edit");
    assert!(!env.run_as(&bot, &["create", "-f", "-"], Some(&edit)).ok());
    let missing = BINDING.replace("alice-admin", "alice-nope").replace("name: admin", "name: nope");
    let out = env.run_as(&bot, &["create", "-f", "-"], Some(&missing));
    assert!(
        out.stderr.contains("Error from server (NotFound)")
            && out.stderr.contains(r#"clusterroles.rbac.authorization.k8s.io "nope" not found"#),
        "{}",
        out.stderr
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_role_needs_its_rules_or_escalate() {
    let env = Env::start_with(Config { authz: true, ..Config::default() }).await;
    let bot = bot_kubeconfig(&env);
    let role = |verbs: &str| {
        format!(
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: cm\nrules:\n\
             - apiGroups: [\"\"]\n  resources: [configmaps]\n  verbs: [{verbs}]\n"
        )
    };
    // What the account holds it may grant.
    let out = env.run_as(&bot, &["create", "-f", "-"], Some(&role("get, list")));
    assert!(out.ok(), "{}", out.stderr);
    // More is refused, on update too.
    let out = env.run_as(
        &bot,
        &["apply", "--server-side", "--force-conflicts", "-f", "-"],
        Some(&role("get, list, delete")),
    );
    assert!(
        out.stderr.contains(&format!(
            "roles.rbac.authorization.k8s.io \"cm\" is forbidden: \
             user \"system:serviceaccount:default:bot\" {GROUPS} is attempting to grant RBAC permissions not currently held:\n\
             {{APIGroups:[\"\"], Resources:[\"configmaps\"], Verbs:[\"delete\"]}}"
        )),
        "{}",
        out.stderr
    );
    // escalate on roles named cm: server-side apply names it in the URL, so it passes.
    env.apply(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: bot-escalates\nrules:\n\
         - apiGroups: [rbac.authorization.k8s.io]\n  resources: [roles]\n  verbs: [escalate]\n  resourceNames: [cm]\n\
         ---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: bot-escalates\n\
         roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: bot-escalates}\n\
         subjects:\n- {kind: ServiceAccount, name: bot, namespace: default}\n",
        &[],
    );
    let out = env.run_as(
        &bot,
        &["apply", "--server-side", "--force-conflicts", "-f", "-"],
        Some(&role("get, list, delete")),
    );
    assert!(out.ok(), "{}", out.stderr);
    let stored = env.get(&["role", "cm"]).expect("role");
    assert_eq!(stored["rules"][0]["verbs"], serde_json::json!(["get", "list", "delete"]));
}

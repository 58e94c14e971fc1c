//! Deletes through kubectl: finalizers, the three cascade policies, namespaces that
//! terminate, and deleting by selector.

use std::time::Duration;

use serde_json::json;

use super::*;

#[tokio::test(flavor = "multi_thread")]
async fn delete_with_finalizer_waits_for_removal() {
    let env = Env::start().await;
    env.apply(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: f\n  finalizers: [example.com/hold]\n",
        &[],
    );
    let out = env.ok(&["delete", "configmap", "f", "--wait=false"]);
    assert!(out.contains(r#"configmap "f" deleted"#), "{out}");
    let cm = env.get(&["configmap", "f"]).expect("held by its finalizer");
    assert!(cm["metadata"]["deletionTimestamp"].is_string(), "{cm}");
    assert_eq!(cm["metadata"]["deletionGracePeriodSeconds"], 0);
    assert_eq!(cm["metadata"]["finalizers"], json!(["example.com/hold"]));

    // Deleting again is fine and changes nothing.
    env.ok(&["delete", "configmap", "f", "--wait=false"]);
    // Adding a new finalizer while deleting is refused? No: only removal matters here.
    env.ok(&[
        "patch",
        "configmap",
        "f",
        "--type",
        "json",
        "-p",
        r#"[{"op":"remove","path":"/metadata/finalizers"}]"#,
    ]);
    env.wait_gone(&["configmap", "f"]).await;
}

const OWNER: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: owner\n";

/// Create `owner` and a `child` ConfigMap owned by it; returns the owner's uid.
fn owner_and_child(env: &Env, child_finalizer: bool) -> String {
    env.apply(OWNER, &[]);
    let uid =
        env.get(&["configmap", "owner"]).expect("owner")["metadata"]["uid"].as_str().expect("uid").to_owned();
    let finalizers = if child_finalizer { "  finalizers: [example.com/hold]\n" } else { "" };
    env.apply(
        &format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: child\n{finalizers}  ownerReferences:\n  - apiVersion: v1\n    kind: ConfigMap\n    name: owner\n    uid: {uid}\n    blockOwnerDeletion: true\n"
        ),
        &[],
    );
    uid
}

#[tokio::test(flavor = "multi_thread")]
async fn delete_cascade_background() {
    let env = Env::start().await;
    owner_and_child(&env, false);
    let out = env.ok(&["delete", "configmap", "owner", "--cascade=background"]);
    assert!(out.contains(r#"configmap "owner" deleted"#), "{out}");
    assert!(env.get(&["configmap", "owner"]).is_none(), "owner goes at once");
    env.wait_gone(&["configmap", "child"]).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn delete_cascade_foreground() {
    let env = Env::start().await;
    owner_and_child(&env, true);
    env.ok(&["delete", "configmap", "owner", "--cascade=foreground", "--wait=false"]);
    let owner = env.get(&["configmap", "owner"]).expect("owner waits for its child");
    assert!(owner["metadata"]["deletionTimestamp"].is_string(), "{owner}");
    assert_eq!(owner["metadata"]["finalizers"], json!(["foregroundDeletion"]));
    wait_until("child is being deleted", || {
        env.get(&["configmap", "child"]).is_some_and(|c| c["metadata"]["deletionTimestamp"].is_string())
    })
    .await;
    assert!(env.get(&["configmap", "owner"]).is_some(), "owner stays while the blocking child exists");

    env.ok(&["patch", "configmap", "child", "--type", "merge", "-p", r#"{"metadata":{"finalizers":null}}"#]);
    env.wait_gone(&["configmap", "child"]).await;
    env.wait_gone(&["configmap", "owner"]).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn delete_cascade_orphan() {
    let env = Env::start().await;
    owner_and_child(&env, false);
    env.ok(&["delete", "configmap", "owner", "--cascade=orphan"]);
    env.wait_gone(&["configmap", "owner"]).await;
    wait_until("child loses its owner reference", || {
        env.get(&["configmap", "child"]).expect("orphan kept")["metadata"]["ownerReferences"]
            .as_array()
            .is_none_or(Vec::is_empty)
    })
    .await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(env.get(&["configmap", "child"]).is_some(), "orphan stays");
}

#[tokio::test(flavor = "multi_thread")]
async fn namespace_deletion_terminates_then_goes() {
    let env = Env::start().await;
    env.apply("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: doomed\n", &[]);
    env.apply("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: plain\n  namespace: doomed\n", &[]);
    env.apply("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: held\n  namespace: doomed\n  finalizers: [example.com/hold]\n", &[]);
    let out = env.ok(&["delete", "namespace", "doomed", "--wait=false"]);
    assert!(out.contains(r#"namespace "doomed" deleted"#), "{out}");

    let ns = env.get(&["namespace", "doomed"]).expect("terminating");
    assert_eq!(ns["status"]["phase"], "Terminating", "{ns}");
    assert!(ns["metadata"]["deletionTimestamp"].is_string());
    let table = env.ok(&["get", "namespace", "doomed", "--no-headers"]);
    assert_eq!(table.split_whitespace().nth(1), Some("Terminating"), "{table}");
    env.wait_gone(&["configmap", "plain", "-n", "doomed"]).await;
    wait_until("held is being deleted", || {
        env.get(&["configmap", "held", "-n", "doomed"])
            .is_some_and(|c| c["metadata"]["deletionTimestamp"].is_string())
    })
    .await;

    let out = env.run_stdin(
        &["apply", "-f", "-"],
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: late\n  namespace: doomed\n",
    );
    assert!(!out.ok());
    assert!(
        out.stderr.contains(r#"Error from server (Forbidden): error when creating "STDIN": configmaps "late" is forbidden: unable to create new content in namespace doomed because it is being terminated"#),
        "{}",
        out.stderr
    );

    env.ok(&[
        "patch",
        "configmap",
        "held",
        "-n",
        "doomed",
        "--type",
        "merge",
        "-p",
        r#"{"metadata":{"finalizers":null}}"#,
    ]);
    env.wait_gone(&["namespace", "doomed"]).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn delete_by_selector_and_all() {
    let env = Env::start().await;
    for (name, team) in [("a", "t1"), ("b", "t1"), ("c", "t2")] {
        env.apply(
            &format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  labels: {{team: {team}}}\n"
            ),
            &[],
        );
    }
    let out = env.ok(&["delete", "configmaps", "-l", "team=t1"]);
    assert!(out.contains(r#"configmap "a" deleted"#) && out.contains(r#"configmap "b" deleted"#), "{out}");
    assert_eq!(env.names(&["configmaps"]), ["c"]);
    env.ok(&["delete", "configmaps", "--all"]);
    assert!(env.names(&["configmaps"]).is_empty());
}

/// A running Pod deleted with `--wait=false` stays `Terminating` (the printer's STATUS for a
/// Pod with a `deletionTimestamp`, `pkg/printers/internalversion/printers.go`) while its
/// grace period runs (`pkg/registry/core/pod/strategy.go`, `CheckGracefulDelete`); `kubectl
/// delete --grace-period=0 --force` sends `gracePeriodSeconds: 0`, which removes it at once
/// (kubectl warns that it does not wait for the containers).
#[tokio::test(flavor = "multi_thread")]
async fn a_terminating_pod_until_forced() {
    let workloads = ctop_kubesim::WorkloadConfig {
        pod_start: Duration::from_millis(30),
        stages: vec!["app=web:stop=1h".parse().expect("stage")],
        ..Default::default()
    };
    let env =
        Env::start_with(ctop_kubesim::Config { workloads: Some(workloads), ..Default::default() }).await;
    env.ok(&["run", "web", "--image=nginx:1.27", "--labels=app=web"]);
    env.ok(&["wait", "--for=condition=Ready", "pod/web", "--timeout=10s"]);
    let out = env.ok(&["delete", "pod", "web", "--wait=false"]);
    assert_eq!(out.trim(), r#"pod "web" deleted"#);
    let status = env.ok(&[
        "get",
        "pod",
        "web",
        "--no-headers",
        "-o",
        "custom-columns=GRACE:.metadata.deletionGracePeriodSeconds",
    ]);
    assert_eq!(status.trim(), "30");
    let table = env.ok(&["get", "pod", "web", "--no-headers"]);
    assert!(table.split_whitespace().nth(2) == Some("Terminating"), "{table}");
    let out = env.run(&["delete", "pod", "web", "--grace-period=0", "--force"]);
    assert!(out.ok(), "{}", out.stderr);
    assert!(
        out.stderr.contains("Warning: Immediate deletion does not wait for confirmation that the running resource has been terminated."),
        "{}",
        out.stderr
    );
    assert_eq!(out.stdout.trim(), r#"pod "web" force deleted"#);
    assert!(env.get(&["pod", "web"]).is_none());
}

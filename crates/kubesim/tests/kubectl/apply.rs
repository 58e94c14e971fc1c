//! Writes through kubectl: client-side and server-side apply (managers, conflicts, the
//! migration between them), create and replace, dry runs and diff, the three patch types,
//! generateName, edit, label and annotate.

use serde_json::{Value, json};

use super::*;

fn data(obj: &Value) -> &Value {
    &obj["data"]
}

fn annotation<'a>(obj: &'a Value, key: &str) -> Option<&'a str> {
    obj["metadata"]["annotations"][key].as_str()
}

fn manager_names(obj: &Value) -> Vec<(String, String)> {
    obj["metadata"]["managedFields"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|e| {
                    (
                        e["manager"].as_str().unwrap_or_default().to_owned(),
                        e["operation"].as_str().unwrap_or_default().to_owned(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Every managedFields entry carries the time its manager last changed something.
fn assert_entries_have_time(obj: &Value) {
    for e in obj["metadata"]["managedFields"].as_array().expect("managedFields") {
        assert!(e["time"].is_string(), "managedFields entry without time: {e}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn apply_client_side_create_update_and_prune_fields() {
    let env = Env::start().await;
    let v1 = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  labels: {keep: k, drop: d}\ndata:\n  one: \"1\"\n  two: \"2\"\n";
    let out = env.apply(v1, &[]);
    assert!(out.stdout.contains("configmap/app created"), "{}", out.stdout);
    let cm = env.get(&["configmap", "app"]).expect("created");
    assert_eq!(data(&cm), &json!({"one": "1", "two": "2"}));
    let last: Value = serde_json::from_str(
        annotation(&cm, "kubectl.kubernetes.io/last-applied-configuration").expect("annotation"),
    )
    .expect("last-applied is JSON");
    assert_eq!(last["data"], json!({"one": "1", "two": "2"}));

    // Out-of-band change that apply must keep (not in last-applied).
    env.ok(&["label", "configmap", "app", "manual=yes"]);

    let v2 = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  labels: {keep: k}\ndata:\n  one: \"10\"\n";
    let out = env.apply(v2, &[]);
    assert!(out.stdout.contains("configmap/app configured"), "{}", out.stdout);
    let cm = env.get(&["configmap", "app"]).expect("still there");
    assert_eq!(data(&cm), &json!({"one": "10"}), "changed field lands, removed field is pruned");
    assert_eq!(cm["metadata"]["labels"], json!({"keep": "k", "manual": "yes"}));
    let last: Value =
        serde_json::from_str(annotation(&cm, "kubectl.kubernetes.io/last-applied-configuration").unwrap())
            .expect("last-applied is JSON");
    assert_eq!(last["data"], json!({"one": "10"}));

    // Re-applying the same manifest changes nothing.
    let rv = cm["metadata"]["resourceVersion"].clone();
    let out = env.apply(v2, &[]);
    assert!(out.stdout.contains("configmap/app unchanged"), "{}", out.stdout);
    assert_eq!(env.get(&["configmap", "app"]).unwrap()["metadata"]["resourceVersion"], rv);
}

#[tokio::test(flavor = "multi_thread")]
async fn apply_client_side_deployment_merges_containers_by_name() {
    let env = Env::start().await;
    env.apply(DEPLOYMENT, &[]);
    // Another writer adds args to the sidecar; apply must keep them (containers merge by name).
    env.ok(&[
        "patch",
        "deployment",
        "web",
        "-p",
        r#"{"spec":{"template":{"spec":{"containers":[{"name":"sidecar","args":["sleep","3600"]}]}}}}"#,
    ]);

    let changed =
        DEPLOYMENT.replace("nginx:1.0", "nginx:2.0").replace("        - {name: B, value: \"2\"}\n", "");
    let out = env.apply(&changed, &[]);
    assert!(out.stdout.contains("deployment.apps/web configured"), "{}", out.stdout);
    let d = env.get(&["deployment", "web"]).expect("deployment");
    assert_eq!(containers(&d).len(), 2, "{d}");
    assert_eq!(containers(&d)[0]["name"], "app", "order kept");
    let app = container(&d, "app");
    assert_eq!(app["image"], "nginx:2.0");
    assert_eq!(app["env"], json!([{"name": "A", "value": "1"}]), "env entry B removed via last-applied");
    let sidecar = container(&d, "sidecar");
    assert_eq!(sidecar["image"], "busybox:1.0");
    assert_eq!(sidecar["args"], json!(["sleep", "3600"]), "field set by another writer survives");
    assert_eq!(d["metadata"]["generation"], json!(3));
}

const SSA_CM: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ssa\ndata:\n  owned: \"1\"\n";

#[tokio::test(flavor = "multi_thread")]
async fn apply_server_side_records_kubectl_as_manager() {
    let env = Env::start().await;
    let out = env.apply(SSA_CM, &["--server-side"]);
    assert!(out.stdout.contains("configmap/ssa serverside-applied"), "{}", out.stdout);
    let cm = env.get(&["configmap", "ssa", "--show-managed-fields"]).expect("created");
    assert_eq!(data(&cm), &json!({"owned": "1"}));
    assert_eq!(manager_names(&cm), vec![("kubectl".to_owned(), "Apply".to_owned())], "{cm}");
    let entry = &cm["metadata"]["managedFields"][0];
    assert_eq!(entry["apiVersion"], "v1");
    assert_eq!(entry["fieldsType"], "FieldsV1");
    assert_eq!(entry["fieldsV1"]["f:data"], json!({"f:owned": {}}), "{entry}");
    assert!(entry["time"].is_string(), "every managedFields entry has a time: {entry}");
    assert!(
        annotation(&cm, "kubectl.kubernetes.io/last-applied-configuration").is_none(),
        "SSA sets no last-applied"
    );

    // Default output hides managedFields.
    let plain = env.get(&["configmap", "ssa"]).unwrap();
    assert!(plain["metadata"].get("managedFields").is_none(), "{plain}");

    // Dropping a field from the applied config removes it.
    let out = env.apply(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ssa\ndata:\n  other: \"2\"\n",
        &["--server-side"],
    );
    assert!(out.ok());
    assert_eq!(data(&env.get(&["configmap", "ssa"]).unwrap()), &json!({"other": "2"}));
}

#[tokio::test(flavor = "multi_thread")]
async fn apply_server_side_conflict_and_force() {
    let env = Env::start().await;
    env.apply(SSA_CM, &["--server-side"]);
    let changed = SSA_CM.replace("\"1\"", "\"2\"");
    let out = env.run_stdin(&["apply", "--server-side", "--field-manager", "other", "-f", "-"], &changed);
    assert!(!out.ok(), "conflicting apply must fail");
    assert!(
        out.stderr.contains(r#"error: Apply failed with 1 conflict: conflict with "kubectl": .data.owned"#),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("--force-conflicts"), "kubectl explains the resolution: {}", out.stderr);
    assert_eq!(data(&env.get(&["configmap", "ssa"]).unwrap()), &json!({"owned": "1"}), "nothing changed");

    // Same value: no conflict, shared ownership.
    env.apply(SSA_CM, &["--server-side", "--field-manager", "other"]);

    env.apply(&changed, &["--server-side", "--field-manager", "other", "--force-conflicts"]);
    let cm = env.get(&["configmap", "ssa", "--show-managed-fields"]).unwrap();
    assert_eq!(data(&cm), &json!({"owned": "2"}));
    assert_entries_have_time(&cm);
    let entries = cm["metadata"]["managedFields"].as_array().expect("managedFields");
    let other = entries.iter().find(|e| e["manager"] == "other").expect("other manages");
    assert_eq!(other["fieldsV1"]["f:data"], json!({"f:owned": {}}));
    // kubectl lost the field; its entry is gone since it owns nothing else but metadata-less data.
    for e in entries.iter().filter(|e| e["manager"] == "kubectl") {
        assert!(e["fieldsV1"]["f:data"].get("f:owned").is_none(), "kubectl no longer owns .data.owned: {e}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn apply_server_side_deployment_shared_between_managers() {
    let env = Env::start().await;
    env.apply(DEPLOYMENT, &["--server-side"]);
    // A second manager applies only its own container: containers are a map keyed by name.
    let injector = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  template:\n    spec:\n      containers:\n      - name: proxy\n        image: envoy:1\n";
    env.apply(injector, &["--server-side", "--field-manager", "injector"]);
    let d = env.get(&["deployment", "web"]).unwrap();
    let names: Vec<&str> = containers(&d).iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["app", "sidecar", "proxy"], "{d}");
    assert_eq!(
        container(&d, "app")["env"],
        json!([{"name": "A", "value": "1"}, {"name": "B", "value": "2"}])
    );

    // The first manager drops the sidecar and env B: only its own fields go.
    let trimmed = DEPLOYMENT
        .replace("        - {name: B, value: \"2\"}\n", "")
        .replace("      - name: sidecar\n        image: busybox:1.0\n", "");
    env.apply(&trimmed, &["--server-side"]);
    let d = env.get(&["deployment", "web"]).unwrap();
    let names: Vec<&str> = containers(&d).iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["app", "proxy"], "{d}");
    assert_eq!(container(&d, "app")["env"], json!([{"name": "A", "value": "1"}]));

    // kubectl scale takes .spec.replicas through the scale subresource; applying a
    // different value conflicts with it.
    env.ok(&["scale", "deployment", "web", "--replicas=3"]);
    let d = env.get(&["deployment", "web", "--show-managed-fields"]).unwrap();
    let scaler = d["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["operation"] == "Update")
        .unwrap_or_else(|| panic!("an Update entry from kubectl scale: {d}"));
    assert_eq!(scaler["manager"], "kubectl");
    assert_eq!(scaler["apiVersion"], "apps/v1");
    assert_eq!(scaler["fieldsV1"], json!({"f:spec": {"f:replicas": {}}}));
    assert_eq!(scaler["subresource"], "scale", "{scaler}");
    let out = env.run_stdin(&["apply", "--server-side", "-f", "-"], &trimmed);
    assert!(!out.ok());
    assert!(
        out.stderr.contains(r#"error: Apply failed with 1 conflict: conflict with "kubectl" with subresource "scale" using apps/v1: .spec.replicas"#),
        "{}",
        out.stderr
    );
    assert_eq!(env.get(&["deployment", "web"]).unwrap()["spec"]["replicas"], 3);
}

#[tokio::test(flavor = "multi_thread")]
async fn apply_migrates_client_side_to_server_side() {
    let env = Env::start().await;
    let v1 = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: mig\ndata:\n  a: \"1\"\n  b: \"2\"\n";
    env.apply(v1, &[]);
    let cm = env.get(&["configmap", "mig", "--show-managed-fields"]).unwrap();
    assert_eq!(
        manager_names(&cm),
        vec![("kubectl-client-side-apply".to_owned(), "Update".to_owned())],
        "{cm}"
    );

    // Server-side apply of the same manifest without field b: kubectl migrates the
    // client-side manager to `kubectl`, so b is removed instead of left orphaned.
    let v2 = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: mig\ndata:\n  a: \"1\"\n";
    let out = env.apply(v2, &["--server-side"]);
    assert!(out.stdout.contains("configmap/mig serverside-applied"), "{}", out.stdout);
    let cm = env.get(&["configmap", "mig", "--show-managed-fields"]).unwrap();
    assert_eq!(data(&cm), &json!({"a": "1"}), "b removed after migration: {cm}");
    let managers = manager_names(&cm);
    assert!(managers.contains(&("kubectl".to_owned(), "Apply".to_owned())), "{managers:?}");
    assert!(
        !managers.iter().any(|(m, _)| m == "kubectl-client-side-apply"),
        "client-side manager migrated: {managers:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn create_replace_and_conflicts() {
    let env = Env::start().await;
    let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cr\ndata: {a: \"1\"}\n";
    let out = env.run_stdin(&["create", "-f", "-"], cm);
    assert!(out.stdout.contains("configmap/cr created"), "{}", out.stderr);
    let out = env.run_stdin(&["create", "-f", "-"], cm);
    assert!(
        out.stderr.contains(r#"Error from server (AlreadyExists): error when creating "STDIN": configmaps "cr" already exists"#),
        "{}",
        out.stderr
    );
    let live = env.get(&["configmap", "cr"]).unwrap();
    let rv = live["metadata"]["resourceVersion"].as_str().unwrap().to_owned();

    // replace with the current resourceVersion works and bumps it.
    let mut next = live.clone();
    next["data"]["a"] = json!("2");
    let out = env.run_stdin(&["replace", "-f", "-"], &next.to_string());
    assert!(out.stdout.contains("configmap/cr replaced"), "{}", out.stderr);
    let live = env.get(&["configmap", "cr"]).unwrap();
    assert_eq!(data(&live), &json!({"a": "2"}));
    assert_ne!(live["metadata"]["resourceVersion"].as_str().unwrap(), rv);

    // replace with the stale one is a conflict.
    next["data"]["a"] = json!("3");
    let out = env.run_stdin(&["replace", "-f", "-"], &next.to_string());
    assert!(
        out.stderr.contains(r#"Error from server (Conflict): error when replacing "STDIN": Operation cannot be fulfilled on configmaps "cr": the object has been modified; please apply your changes to the latest version and try again"#),
        "{}",
        out.stderr
    );
    assert_eq!(data(&env.get(&["configmap", "cr"]).unwrap()), &json!({"a": "2"}));

    let err = env.fails(&["get", "configmap", "nope"]);
    assert!(err.contains(r#"Error from server (NotFound): configmaps "nope" not found"#), "{err}");
    let err = env.fails(&["delete", "configmap", "nope"]);
    assert!(err.contains(r#"Error from server (NotFound): configmaps "nope" not found"#), "{err}");
}

#[tokio::test(flavor = "multi_thread")]
async fn server_dry_run_and_diff() {
    let env = Env::start().await;
    let v1 = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: dry\ndata: {a: \"1\"}\n";
    let out = env.apply(v1, &["--dry-run=server"]);
    assert!(out.stdout.contains("configmap/dry created (server dry run)"), "{}", out.stdout);
    assert!(env.get(&["configmap", "dry"]).is_none(), "dry run stores nothing");

    env.apply(v1, &[]);
    // kubectl diff: exit 0 when nothing changes, 1 with a diff of the change.
    let out = env.run_stdin(&["diff", "-f", "-"], v1);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let out = env.run_stdin(&["diff", "-f", "-"], &v1.replace("\"1\"", "\"2\""));
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(out.stdout.lines().any(|l| l.trim_start_matches('-').trim() == "a: \"1\""), "{}", out.stdout);
    assert!(out.stdout.lines().any(|l| l.trim_start_matches('+').trim() == "a: \"2\""), "{}", out.stdout);
    assert!(
        !out.stdout.contains("resourceVersion"),
        "diff hides server-set fields that did not change: {}",
        out.stdout
    );
    assert_eq!(data(&env.get(&["configmap", "dry"]).unwrap()), &json!({"a": "1"}), "diff changes nothing");

    let out = env.apply(&v1.replace("\"1\"", "\"3\""), &["--server-side", "--dry-run=server"]);
    assert!(out.stdout.contains("configmap/dry serverside-applied (server dry run)"), "{}", out.stdout);
    assert_eq!(data(&env.get(&["configmap", "dry"]).unwrap()), &json!({"a": "1"}));
}

#[tokio::test(flavor = "multi_thread")]
async fn patch_merge() {
    let env = Env::start().await;
    env.apply("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: p\ndata: {a: \"1\", b: \"2\"}\n", &[]);
    let out = env.ok(&[
        "patch",
        "configmap",
        "p",
        "--type",
        "merge",
        "-p",
        r#"{"data":{"a":"10","b":null,"c":"3"}}"#,
    ]);
    assert!(out.contains("configmap/p patched"), "{out}");
    assert_eq!(data(&env.get(&["configmap", "p"]).unwrap()), &json!({"a": "10", "c": "3"}));
    let out = env.ok(&["patch", "configmap", "p", "--type", "merge", "-p", r#"{"data":{"a":"10"}}"#]);
    assert!(out.contains("configmap/p patched (no change)"), "{out}");
    let err = env.fails(&["patch", "configmap", "missing", "--type", "merge", "-p", "{}"]);
    assert!(err.contains(r#"Error from server (NotFound): configmaps "missing" not found"#), "{err}");
}

#[tokio::test(flavor = "multi_thread")]
async fn patch_json_and_failing_test_op() {
    let env = Env::start().await;
    env.apply("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: p\ndata: {a: \"1\"}\n", &[]);
    env.ok(&[
        "patch",
        "configmap",
        "p",
        "--type",
        "json",
        "-p",
        r#"[{"op":"test","path":"/data/a","value":"1"},{"op":"replace","path":"/data/a","value":"2"},{"op":"add","path":"/data/b","value":"3"},{"op":"add","path":"/metadata/labels","value":{"x":"y"}}]"#,
    ]);
    let cm = env.get(&["configmap", "p"]).unwrap();
    assert_eq!(data(&cm), &json!({"a": "2", "b": "3"}));
    assert_eq!(cm["metadata"]["labels"], json!({"x": "y"}));

    let rv = cm["metadata"]["resourceVersion"].clone();
    let err = env.fails(&[
        "patch",
        "configmap",
        "p",
        "--type",
        "json",
        "-p",
        r#"[{"op":"replace","path":"/data/b","value":"4"},{"op":"test","path":"/data/a","value":"1"}]"#,
    ]);
    let cm = env.get(&["configmap", "p"]).unwrap();
    assert_eq!(data(&cm), &json!({"a": "2", "b": "3"}), "a failed patch changes nothing");
    assert_eq!(cm["metadata"]["resourceVersion"], rv);
    // The real server answers 422 with only the generic message (and empty details).
    assert_eq!(
        err.trim_end(),
        "The request is invalid: the server rejected our request due to an error in our request"
    );

    let err = env.fails(&[
        "patch",
        "configmap",
        "p",
        "--type",
        "json",
        "-p",
        r#"[{"op":"remove","path":"/data/nope"}]"#,
    ]);
    assert!(err.contains("The request is invalid"), "{err}");
}

#[tokio::test(flavor = "multi_thread")]
async fn patch_strategic_deployment() {
    let env = Env::start().await;
    env.apply(DEPLOYMENT, &[]);
    // Default type is strategic: containers merge by name, env merges by name.
    env.ok(&[
        "patch",
        "deployment",
        "web",
        "-p",
        r#"{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"nginx:3.0","env":[{"name":"C","value":"3"}]}]}}}}"#,
    ]);
    let d = env.get(&["deployment", "web"]).unwrap();
    assert_eq!(containers(&d).len(), 2, "sidecar kept: {d}");
    let app = container(&d, "app");
    assert_eq!(app["image"], "nginx:3.0");
    let env_names: Vec<&str> =
        app["env"].as_array().unwrap().iter().map(|e| e["name"].as_str().unwrap()).collect();
    assert_eq!(env_names, ["C", "A", "B"], "patch items first, then the rest (SMP order)");

    // $patch: delete removes one container by name.
    env.ok(&[
        "patch",
        "deployment",
        "web",
        "-p",
        r#"{"spec":{"template":{"spec":{"containers":[{"name":"sidecar","$patch":"delete"}]}}}}"#,
    ]);
    let d = env.get(&["deployment", "web"]).unwrap();
    assert_eq!(containers(&d).iter().map(|c| c["name"].as_str().unwrap()).collect::<Vec<_>>(), ["app"]);

    // A merge patch replaces the list instead.
    env.ok(&[
        "patch",
        "deployment",
        "web",
        "--type",
        "merge",
        "-p",
        r#"{"spec":{"template":{"spec":{"containers":[{"name":"only","image":"x"}]}}}}"#,
    ]);
    let d = env.get(&["deployment", "web"]).unwrap();
    // The list is replaced; the API server defaults the new container as any other.
    assert_eq!(
        containers(&d),
        &vec![json!({"name": "only", "image": "x", "imagePullPolicy": "Always", "resources": {},
            "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"})]
    );

    // Strategic merge patch is not supported for custom resources: 415.
    install_widgets(&env);
    env.apply(&widget("w", "  size: 1\n"), &[]);
    let err = env.fails(&["patch", "widget", "w", "-p", r#"{"spec":{"size":2}}"#]);
    assert_eq!(
        err.trim_end(),
        "error: application/strategic-merge-patch+json is not supported by example.com/v1, Kind=Widget: the body of the \
         request was in an unknown format - accepted media types include: application/json-patch+json, \
         application/merge-patch+json, application/apply-patch+yaml"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn create_with_generate_name() {
    let env = Env::start().await;
    let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  generateName: gen-\n";
    let first = env.run_stdin(&["create", "-f", "-", "-o", "name"], cm);
    let second = env.run_stdin(&["create", "-f", "-", "-o", "name"], cm);
    assert!(first.ok() && second.ok(), "{}{}", first.stderr, second.stderr);
    let (a, b) = (first.stdout.trim(), second.stdout.trim());
    assert!(a.starts_with("configmap/gen-") && a.len() == "configmap/gen-".len() + 5, "{a}");
    assert_ne!(a, b);
    assert_eq!(env.names(&["configmaps"]).len(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn edit_with_editor() {
    let env = Env::start().await;
    env.apply("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: e\ndata:\n  a: before\n", &[]);
    let mut cmd = env.command(&env.kubeconfig, &["edit", "configmap", "e"]);
    cmd.env("KUBE_EDITOR", "sed -i s/before/after/");
    let out = tokio::task::block_in_place(|| cmd.output()).expect("kubectl edit runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("configmap/e edited"));
    assert_eq!(data(&env.get(&["configmap", "e"]).unwrap()), &json!({"a": "after"}));
}

#[tokio::test(flavor = "multi_thread")]
async fn label_and_annotate() {
    let env = Env::start().await;
    env.apply("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: l\n  labels: {a: \"1\"}\n", &[]);
    let out = env.ok(&["label", "configmap", "l", "b=2", "c=3"]);
    assert!(out.contains("configmap/l labeled"), "{out}");
    let err = env.fails(&["label", "configmap", "l", "a=9"]);
    assert!(err.contains("'a' already has a value (1), and --overwrite is false"), "{err}");
    env.ok(&["label", "configmap", "l", "a=9", "--overwrite"]);
    env.ok(&["label", "configmap", "l", "c-"]);
    assert_eq!(env.get(&["configmap", "l"]).unwrap()["metadata"]["labels"], json!({"a": "9", "b": "2"}));

    let out = env.ok(&["annotate", "configmap", "l", "note=hello world"]);
    assert!(out.contains("configmap/l annotated"), "{out}");
    env.ok(&["annotate", "configmap", "l", "other=x"]);
    env.ok(&["annotate", "configmap", "l", "other-"]);
    let cm = env.get(&["configmap", "l"]).unwrap();
    assert_eq!(annotation(&cm, "note"), Some("hello world"));
    assert_eq!(annotation(&cm, "other"), None);

    // Label many objects by selector.
    env.apply("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: m\n  labels: {a: \"9\"}\n", &[]);
    env.ok(&["label", "configmaps", "-l", "a=9", "batch=yes"]);
    assert_eq!(env.names(&["configmaps", "-l", "batch=yes"]), ["l", "m"]);
}

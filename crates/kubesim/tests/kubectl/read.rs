//! Reads through kubectl: get with watch, selectors, output formats and tables, events,
//! discovery, categories, and wait.

use std::time::Duration;

use serde_json::Value;

use super::*;

#[tokio::test(flavor = "multi_thread")]
async fn get_watch_prints_added_modified_deleted() {
    let env = Env::start().await;
    env.apply(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: w1\n  labels: {app: w}\ndata: {k: a}\n",
        &[],
    );
    let watch =
        Background::spawn(&env, &["get", "configmaps", "-l", "app=w", "--watch", "--output-watch-events"]);
    watch.wait_line("initial ADDED w1", |l| l.starts_with(&["ADDED", "w1"])).await;

    env.apply(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: w2\n  labels: {app: w}\ndata: {k: a, j: b}\n",
        &[],
    );
    watch.wait_line("ADDED w2", |l| l.starts_with(&["ADDED", "w2", "2"])).await;
    env.ok(&["patch", "configmap", "w1", "--type", "merge", "-p", r#"{"data":{"k2":"b","k3":"c"}}"#]);
    watch.wait_line("MODIFIED w1", |l| l.starts_with(&["MODIFIED", "w1", "3"])).await;
    env.ok(&["delete", "configmap", "w2"]);
    watch.wait_line("DELETED w2", |l| l.starts_with(&["DELETED", "w2"])).await;
    // An object outside the selector is not shown.
    env.apply("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: other\ndata: {k: a}\n", &[]);
    env.ok(&["label", "configmap", "w1", "seen=yes"]);
    watch.wait_line("MODIFIED w1 again", |l| l.starts_with(&["MODIFIED", "w1"]) && l.len() >= 4).await;
    let out = watch.output();
    assert!(
        out.lines().next().unwrap_or_default().split_whitespace().eq(["EVENT", "NAME", "DATA", "AGE"]),
        "{out}"
    );
    assert!(!out.contains("other"), "{out}");
}

#[tokio::test(flavor = "multi_thread")]
async fn get_label_selectors() {
    let env = Env::start().await;
    env.apply("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: sel\n", &[]);
    let cms =
        [("a", "{env: prod, tier: web}"), ("b", "{env: dev, tier: web}"), ("c", "{env: test}"), ("d", "{}")];
    for (name, labels) in cms {
        env.apply(&format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: sel\n  labels: {labels}\n"), &[]);
    }
    let sel = |s: &str| env.names(&["configmaps", "-n", "sel", "-l", s]);
    assert_eq!(sel("env=prod"), ["a"]);
    assert_eq!(sel("env==prod"), ["a"]);
    assert_eq!(sel("env!=prod"), ["b", "c", "d"], "!= includes objects without the label");
    assert_eq!(sel("env in (prod,dev)"), ["a", "b"]);
    assert_eq!(sel("env notin (prod,dev)"), ["c", "d"]);
    assert_eq!(sel("tier"), ["a", "b"]);
    assert_eq!(sel("!tier"), ["c", "d"]);
    assert_eq!(sel("tier=web,env!=dev"), ["a"]);
    assert!(sel("env=none").is_empty());
    let out = env.ok(&["get", "configmaps", "-n", "sel", "-l", "env=none"]);
    assert!(out.is_empty());
    let out = env.run(&["get", "configmaps", "-n", "sel", "-l", "env=none"]);
    assert!(out.stderr.contains("No resources found in sel namespace."), "{}", out.stderr);
    // A malformed selector is rejected by kubectl or the server, never ignored.
    let out = env.run(&["get", "configmaps", "-n", "sel", "-l", "env in prod"]);
    assert!(!out.ok(), "{}", out.stdout);
}

#[tokio::test(flavor = "multi_thread")]
async fn get_field_selectors() {
    let env = Env::start().await;
    env.apply("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: other\n", &[]);
    for (name, ns) in [("x", "default"), ("z", "default"), ("x", "other")] {
        env.apply(
            &format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: {ns}\n"),
            &[],
        );
    }
    assert_eq!(env.names(&["configmaps", "--field-selector", "metadata.name=x"]), ["x"]);
    assert_eq!(env.names(&["configmaps", "--field-selector", "metadata.name!=x"]), ["z"]);
    let all = env.json(&["get", "configmaps", "-A", "--field-selector", "metadata.name=x"]);
    let mut nss: Vec<&str> = all["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["metadata"]["namespace"].as_str().unwrap())
        .collect();
    nss.sort_unstable();
    assert_eq!(nss, ["default", "other"]);
    assert_eq!(env.names(&["configmaps", "-A", "--field-selector", "metadata.namespace=other"]), ["x"]);
    // Unsupported fields get the real error.
    let err = env.fails(&["get", "configmaps", "--field-selector", "data.k=v"]);
    assert!(err.contains(r#"field label not supported: data.k"#), "{err}");
}

#[tokio::test(flavor = "multi_thread")]
async fn get_events() {
    let env = Env::start().await;
    env.apply(
        "apiVersion: v1\nkind: Event\nmetadata:\n  name: web.1\ninvolvedObject:\n  apiVersion: apps/v1\n  kind: Deployment\n  name: web\n  namespace: default\nreason: ScalingReplicaSet\nmessage: Scaled up replica set web-1 to 1\ntype: Normal\nsource:\n  component: deployment-controller\ncount: 1\nfirstTimestamp: \"2026-01-01T00:00:00Z\"\nlastTimestamp: \"2026-01-01T00:00:00Z\"\n",
        &[],
    );
    // The events.k8s.io view of the same object.
    let ev = env.json(&["get", "events.v1.events.k8s.io", "web.1"]);
    assert_eq!(ev["reason"], "ScalingReplicaSet");
    assert_eq!(ev["regarding"]["name"], "web");
    assert_eq!(ev["note"], "Scaled up replica set web-1 to 1");
    // Field selectors on events.
    assert_eq!(env.names(&["events", "--field-selector", "involvedObject.name=web"]), ["web.1"]);
    assert!(env.names(&["events", "--field-selector", "involvedObject.name=nope"]).is_empty());
    // `kubectl events` prints client-side.
    let out = env.ok(&["events", "--for", "deployment/web"]);
    assert!(out.lines().next().unwrap_or_default().starts_with("LAST SEEN"), "{out}");
    assert!(out.contains("Scaled up replica set web-1 to 1"), "{out}");
    // `kubectl get events` shows the server's table.
    let table = env.ok(&["get", "events"]);
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(
        lines[0].split_whitespace().collect::<Vec<_>>(),
        ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"],
        "{table}"
    );
    assert!(lines[1].contains("Normal"), "{table}");
    assert!(lines[1].contains("ScalingReplicaSet"), "{table}");
    assert!(lines[1].contains("deployment/web"), "{table}");
    assert!(lines[1].contains("Scaled up replica set web-1 to 1"), "{table}");
}

#[tokio::test(flavor = "multi_thread")]
async fn discovery_api_resources_versions_and_version() {
    let env = Env::start().await;
    let resources = env.ok(&["api-resources"]);
    let row = |name: &str, api_version: &str| {
        resources
            .lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .find(|c| c[0] == name && c.contains(&api_version))
            .unwrap_or_else(|| panic!("{name} {api_version} in\n{resources}"))
    };
    assert_eq!(row("deployments", "apps/v1"), ["deployments", "deploy", "apps/v1", "true", "Deployment"]);
    assert_eq!(row("namespaces", "v1"), ["namespaces", "ns", "v1", "false", "Namespace"]);
    assert_eq!(row("configmaps", "v1"), ["configmaps", "cm", "v1", "true", "ConfigMap"]);
    let namespaced = env.ok(&["api-resources", "--namespaced=false", "-o", "name"]);
    assert!(namespaced.lines().any(|l| l == "namespaces"), "{namespaced}");
    assert!(!namespaced.lines().any(|l| l == "configmaps"), "{namespaced}");
    let verbs = env.ok(&["api-resources", "-o", "wide", "--api-group=apps"]);
    let deploy = verbs.lines().find(|l| l.starts_with("deployments")).expect("deployments");
    assert!(deploy.contains("create,delete,deletecollection,get,list,patch,update,watch"), "{verbs}");

    let versions = env.ok(&["api-versions"]);
    let versions: Vec<&str> = versions.lines().collect();
    for gv in
        ["v1", "apps/v1", "apiextensions.k8s.io/v1", "rbac.authorization.k8s.io/v1", "coordination.k8s.io/v1"]
    {
        assert!(versions.contains(&gv), "{gv} in {versions:?}");
    }

    let version: Value = serde_json::from_str(&env.ok(&["version", "-o", "json"])).unwrap();
    assert_eq!(version["serverVersion"]["major"], ctop_kubesim::KUBERNETES_VERSION.0);
    assert_eq!(version["serverVersion"]["minor"], ctop_kubesim::KUBERNETES_VERSION.1);
    assert!(version["serverVersion"]["gitVersion"].as_str().unwrap().starts_with("v1."), "{version}");
}

#[tokio::test(flavor = "multi_thread")]
async fn get_output_formats() {
    let env = Env::start().await;
    for (name, n) in [("b", "2"), ("a", "3"), ("c", "1")] {
        env.apply(
            &format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  labels: {{rank: \"{n}\"}}\ndata: {{k: v{n}}}\n"),
            &[],
        );
    }
    assert_eq!(env.ok(&["get", "configmaps", "-o", "name"]), "configmap/a\nconfigmap/b\nconfigmap/c\n");
    assert_eq!(env.ok(&["get", "configmaps", "-o", "jsonpath={.items[*].data.k}"]), "v3 v2 v1");
    let sorted = env.ok(&["get", "configmaps", "--sort-by", ".metadata.labels.rank", "-o", "name"]);
    assert_eq!(sorted, "configmap/c\nconfigmap/b\nconfigmap/a\n");
    let columns = env.ok(&["get", "configmaps", "-L", "rank", "--no-headers"]);
    let rows: Vec<Vec<&str>> = columns.lines().map(|l| l.split_whitespace().collect()).collect();
    assert_eq!(rows[0][0], "a");
    assert_eq!(rows[0].last(), Some(&"3"), "{columns}");
    let custom = env.ok(&["get", "configmaps", "-o", "custom-columns=NAME:.metadata.name,K:.data.k"]);
    assert_eq!(custom.lines().nth(1).unwrap().split_whitespace().collect::<Vec<_>>(), ["a", "v3"]);

    // Paging: kubectl follows `continue` for JSON and tables.
    for i in 0..5 {
        env.apply(&format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: page-{i}\n"), &[]);
    }
    assert_eq!(env.names(&["configmaps", "--chunk-size=2"]).len(), 8);
    let table = env.ok(&["get", "configmaps", "--chunk-size=3", "--no-headers"]);
    assert_eq!(table.lines().count(), 8, "{table}");
}

#[tokio::test(flavor = "multi_thread")]
async fn get_builtin_tables() {
    let env = Env::start().await;
    env.apply(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n  - {name: a, image: x}\n  - {name: b, image: z}\n",
        &[],
    );
    let pods = env.ok(&["get", "pods"]);
    let header: Vec<&str> = pods.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(header, ["NAME", "READY", "STATUS", "RESTARTS", "AGE"], "{pods}");
    let row: Vec<&str> = pods.lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!(row[..4], ["p", "0/2", "Pending", "0"], "{pods}");

    // Deployment, wide.
    env.apply(DEPLOYMENT, &[]);
    let wide = env.ok(&["get", "deployment", "web", "-o", "wide"]);
    let header: Vec<&str> = wide.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(
        header,
        ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE", "CONTAINERS", "IMAGES", "SELECTOR"]
    );
    let row: Vec<&str> = wide.lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!(row[..4], ["web", "0/1", "0", "0"]);
    assert_eq!(row[5..], ["app,sidecar", "nginx:1.0,busybox:1.0", "app=web"], "{wide}");
}

#[tokio::test(flavor = "multi_thread")]
async fn get_all_uses_categories() {
    let env = Env::start().await;
    env.apply(DEPLOYMENT, &[]);
    env.apply("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: not-in-all\n", &[]);
    let out = env.ok(&["get", "all", "-o", "name"]);
    assert!(out.lines().any(|l| l == "deployment.apps/web"), "{out}");
    assert!(!out.contains("configmap"), "{out}");
}

#[tokio::test(flavor = "multi_thread")]
async fn wait_for_delete_and_jsonpath() {
    let env = Env::start().await;
    env.apply("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: w\n  finalizers: [example.com/hold]\ndata: {a: \"1\"}\n", &[]);
    let waiter =
        Background::spawn(&env, &["wait", "--for=jsonpath={.data.a}=2", "configmap/w", "--timeout=10s"]);
    env.ok(&["patch", "configmap", "w", "--type", "merge", "-p", r#"{"data":{"a":"2"}}"#]);
    waiter.wait_line("jsonpath condition met", |l| l == ["configmap/w", "condition", "met"]).await;

    env.ok(&["delete", "configmap", "w", "--wait=false"]);
    let waiter = Background::spawn(&env, &["wait", "--for=delete", "configmap/w", "--timeout=10s"]);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(waiter.output().is_empty(), "still held by the finalizer: {}", waiter.output());
    env.ok(&[
        "patch",
        "configmap",
        "w",
        "--type",
        "json",
        "-p",
        r#"[{"op":"remove","path":"/metadata/finalizers"}]"#,
    ]);
    waiter.wait_line("deleted", |l| l == ["configmap/w", "condition", "met"]).await;
}

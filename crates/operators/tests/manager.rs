//! `ctop_operators::run` against kubesim: Operators created while the manager runs get
//! their outputs, a changed pipeline changes them, a deleted Operator's controller stops
//! and its children are collected, and a broken Operator beside a working one reports its
//! error in its status while the working one works.

use std::sync::Arc;

use ctop_controller::{LeaseTiming, RunOptions};
use ctop_kubesim::{Config, KubeSim};
use ctop_test_support::eventually;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Client;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams};
use serde_json::{Value, json};

/// An Operator `name` copying the ConfigMaps labelled `copy: "yes"` into its `Copy` view,
/// `spec.x` from the ConfigMap's data key `key`.
fn copier(name: &str, key: &str) -> Value {
    json!({
        "apiVersion": "dcontroller.io/v1alpha1",
        "kind": "Operator",
        "metadata": {"name": name},
        "spec": {"controllers": [{
            "name": "copy",
            "sources": [{"apiGroup": "", "kind": "ConfigMap", "labelSelector": {"matchLabels": {"copy": "yes"}}}],
            "pipeline": [{"@project": {
                "metadata": {"name": "$.metadata.name", "namespace": "$.metadata.namespace"},
                "spec": {"x": format!("$.data.{key}")},
            }}],
            "target": {"kind": "Copy"},
        }]},
    })
}

fn operators(client: &Client) -> Api<DynamicObject> {
    let r = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("dcontroller.io", "v1alpha1", "Operator"),
        "operators",
    );
    Api::all_with(client.clone(), &r)
}

fn copies(client: &Client, operator: &str) -> Api<DynamicObject> {
    let group = format!("{operator}.view.dcontroller.io");
    let r = ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(&group, "v1alpha1", "Copy"), "copies");
    Api::namespaced_with(client.clone(), "default", &r)
}

async fn apply(api: &Api<DynamicObject>, object: &Value) {
    let name = object["metadata"]["name"].as_str().expect("a name");
    api.patch(name, &PatchParams::apply("test").force(), &Patch::Apply(object)).await.expect("apply");
}

async fn put_cm(cms: &Api<ConfigMap>, name: &str, data: Value) {
    let cm: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": name, "labels": {"copy": "yes"}}, "data": data}))
            .expect("cm");
    cms.patch(name, &PatchParams::apply("test").force(), &Patch::Apply(&cm)).await.expect("apply cm");
}

async fn x_of(api: &Api<DynamicObject>, name: &str) -> Option<Value> {
    Some(api.get_opt(name).await.ok().flatten()?.data["spec"]["x"].clone())
}

struct Manager {
    sim: Arc<KubeSim>,
    health: std::net::SocketAddr,
    client: Client,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<()>,
    _dir: tempfile::TempDir,
}

async fn start() -> Manager {
    let _ = tracing_subscriber::fmt()
        .with_test_writer()
        .with_env_filter("ctop_operators=debug,ctop_controller=info,ctop_declarative=debug")
        .try_init();
    let sim = Arc::new(KubeSim::start(Config::default()).await.expect("kubesim starts"));
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = dir.path().join("kubeconfig");
    sim.write_kubeconfig(&kubeconfig).expect("kubeconfig");
    let free = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    let health = free.local_addr().expect("local address");
    drop(free);
    let options = RunOptions { health_addr: health, ..RunOptions::local(kubeconfig, "ctop-operators") };
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        let shutdown = async move {
            let _ = stopped.await;
        };
        ctop_operators::run(options, LeaseTiming::default(), shutdown).await.expect("the manager runs");
    });
    let kc = kube::config::Kubeconfig::from_yaml(&sim.kubeconfig()).expect("kubeconfig parses");
    let cfg = kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
        .await
        .expect("kubeconfig loads");
    let client = Client::try_from(cfg).expect("client");
    Manager { sim, health, client, stop: Some(stop), task, _dir: dir }
}

/// The body of `GET path` on `addr`, when it answers 200.
async fn get(addr: std::net::SocketAddr, path: &str) -> Option<String> {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let mut conn = tokio::net::TcpStream::connect(addr).await.ok()?;
    conn.write_all(format!("GET {path} HTTP/1.0\r\nHost: x\r\n\r\n").as_bytes()).await.ok()?;
    let mut text = String::new();
    conn.read_to_string(&mut text).await.ok()?;
    let (head, body) = text.split_once("\r\n\r\n")?;
    head.split(' ').nth(1).is_some_and(|code| code == "200").then(|| body.to_string())
}

impl Manager {
    async fn stop(mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        self.task.await.expect("the manager stops");
        drop(self.sim);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operators_are_started_changed_and_stopped_at_run_time() {
    let m = start().await;
    let ops = operators(&m.client);
    let cms: Api<ConfigMap> = Api::namespaced(m.client.clone(), "default");
    // The manager installs the Operator CRD.
    eventually(30, "the Operator CRD", || async { ops.list(&Default::default()).await.ok() }).await;
    put_cm(&cms, "one", json!({"x": "1", "y": "why"})).await;

    // Created while the manager runs: its output comes.
    apply(&ops, &copier("a", "x")).await;
    let a = copies(&m.client, "a");
    eventually(30, "a's Copy of one", || async { (x_of(&a, "one").await? == "1").then_some(()) }).await;

    // A changed pipeline changes the outputs (the controller restarted on the new spec).
    apply(&ops, &copier("a", "y")).await;
    eventually(30, "a's Copy of one from y", || async { (x_of(&a, "one").await? == "why").then_some(()) })
        .await;

    // Deleted: its children are collected and its controller no longer writes. Another
    // Operator that copies the same ConfigMaps shows when a new one has been seen.
    ops.delete("a", &DeleteParams::default()).await.expect("delete a");
    eventually(30, "a's Copy collected", || async { a.get_opt("one").await.ok()?.is_none().then_some(()) })
        .await;
    apply(&ops, &copier("b", "x")).await;
    let b = copies(&m.client, "b");
    put_cm(&cms, "two", json!({"x": "2"})).await;
    eventually(30, "b's Copy of two", || async { (x_of(&b, "two").await? == "2").then_some(()) }).await;
    assert!(a.get_opt("two").await.ok().flatten().is_none(), "a's controller still runs");
    // Nothing of a is kept: its controller is gone from the process's /status.
    eventually(30, "/status without a", || async {
        let doc: Value = serde_json::from_str(&get(m.health, "/status").await?).ok()?;
        let names: Vec<&str> =
            doc["controllers"].as_array()?.iter().filter_map(|c| c["name"].as_str()).collect();
        (names == ["b", "operators.dcontroller.io"]).then_some(())
    })
    .await;
    m.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_operator_reports_its_error_and_harms_no_other() {
    let m = start().await;
    let ops = operators(&m.client);
    let cms: Api<ConfigMap> = Api::namespaced(m.client.clone(), "default");
    eventually(30, "the Operator CRD", || async { ops.list(&Default::default()).await.ok() }).await;
    // One whose name cannot name its view group, one whose source kind does not exist.
    let mut bad_name = copier("bad.name", "x");
    bad_name["metadata"]["name"] = json!("bad.name");
    apply(&ops, &bad_name).await;
    let mut no_kind = copier("nokind", "x");
    no_kind["spec"]["controllers"][0]["sources"][0] =
        json!({"apiGroup": "nowhere.io", "version": "v1", "kind": "Thing"});
    apply(&ops, &no_kind).await;
    apply(&ops, &copier("good", "x")).await;
    put_cm(&cms, "one", json!({"x": "1"})).await;
    let good = copies(&m.client, "good");
    eventually(30, "good's Copy of one", || async { (x_of(&good, "one").await? == "1").then_some(()) }).await;
    let ready = |name: &'static str| {
        let ops = ops.clone();
        async move {
            eventually(30, &format!("{name}'s Ready=False condition"), || async {
                let o = ops.get_opt(name).await.ok().flatten()?;
                let c = o.data["status"]["conditions"]
                    .as_array()?
                    .iter()
                    .find(|c| c["type"] == "Ready")
                    .cloned()?;
                (c["status"] == "False").then_some(c)
            })
            .await
        }
    };
    let bad = ready("bad.name").await;
    assert_eq!(bad["reason"], "InvalidOperator", "{bad}");
    assert!(bad["message"].as_str().unwrap_or_default().contains("is not a DNS label"), "{bad}");
    let none = ready("nokind").await;
    assert_eq!(none["reason"], "ControllerFailed", "{none}");
    assert!(
        none["message"].as_str().unwrap_or_default().starts_with("nowhere.io/v1/Thing is not served"),
        "{none}"
    );
    // Once its kind is served, the failed one starts again (after a backoff) and runs.
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "things.nowhere.io"},
        "spec": {
            "group": "nowhere.io",
            "names": {"kind": "Thing", "plural": "things", "singular": "thing", "listKind": "ThingList"},
            "scope": "Namespaced",
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                "type": "object", "x-kubernetes-preserve-unknown-fields": true,
            }}}],
        },
    });
    let crds: Api<
        k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
    > = Api::all(m.client.clone());
    crds.create(&Default::default(), &serde_json::from_value(crd).expect("a CRD"))
        .await
        .expect("create the CRD");
    eventually(60, "nokind Ready", || async {
        let o = ops.get_opt("nokind").await.ok().flatten()?;
        let c = o.data["status"]["conditions"].as_array()?.iter().find(|c| c["type"] == "Ready").cloned()?;
        (c["status"] == "True").then_some(())
    })
    .await;
    // The working one still works after them.
    put_cm(&cms, "two", json!({"x": "2"})).await;
    eventually(30, "good's Copy of two", || async { (x_of(&good, "two").await? == "2").then_some(()) }).await;
    // One health server for them all: the running ones and the manager's list, ready; the
    // one that does not read is not in it.
    let status = eventually(30, "/status", || async {
        let body = get(m.health, "/status").await?;
        let doc: Value = serde_json::from_str(&body).ok()?;
        let names: Vec<String> = doc["controllers"]
            .as_array()?
            .iter()
            .filter_map(|c| c["name"].as_str().map(str::to_owned))
            .collect();
        (names == ["good", "nokind", "operators.dcontroller.io"]).then_some(doc)
    })
    .await;
    assert!(get(m.health, "/readyz").await.is_some(), "{status}");
    m.stop().await;
}

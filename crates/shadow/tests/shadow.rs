//! The shadow in process: a "live" kubesim with RBAC on, where examples/webapp (v1) made two
//! WebApps' children and status; then the shadow, reading with a token bound to the read-only
//! role `ctop manifests --shadow` grants, runs v1 (it would write nothing) and a v2 that
//! drops the Service (it would delete each WebApp's Service). The live cluster's
//! resourceVersion does not move while either runs.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ctop_controller::RunOptions;
use ctop_core::Handlers;
use ctop_kubesim::{Config, KubeSim};
use ctop_runtime::{Limits, Script, ScriptHandlers};
use ctop_shadow::{Shadow, ShadowOptions, ShadowReport};
use ctop_test_support::client;
use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

fn webapp() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/webapp")
}

fn options(kubeconfig: PathBuf) -> RunOptions {
    RunOptions { history: 0, ..RunOptions::local(kubeconfig, "webapp") }
}

/// Runs `script`'s controllers on `kubeconfig` until `done` holds (30 s at most), then stops.
async fn run_until<F, Fut>(handlers: Arc<dyn Handlers>, kubeconfig: PathBuf, what: &str, done: F)
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(ctop_controller::run(handlers, options(kubeconfig), async move {
        let _ = stopped.await;
    }));
    let deadline = Instant::now() + Duration::from_secs(30);
    while !done().await {
        assert!(Instant::now() < deadline, "{what} within 30 s");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let _ = stop.send(());
    let _ = task.await;
}

fn script_handlers(script: &Arc<Script>) -> Arc<dyn Handlers> {
    Arc::new(ScriptHandlers::new(Arc::clone(script), &json!({}), &json!({})))
}

fn load(edit: impl FnOnce(&str) -> String) -> (tempfile::TempDir, Arc<Script>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let source = std::fs::read_to_string(webapp().join("operator.ct")).expect("script");
    std::fs::write(dir.path().join("operator.ct"), edit(&source)).expect("write");
    let script = Script::from_dir(dir.path(), "operator.ct", 2, Limits::default()).expect("loads");
    (dir, Arc::new(script))
}

/// The shadow of `script` against `live`, run until it converged; its report.
async fn shadow_of(script: &Arc<Script>, reader: &Client, server: &str) -> ShadowReport {
    let mut crds = ctop_manifests::operator_crds(script.spec()).expect("crds");
    crds.push(ctop_core::controller_status::crd());
    let options =
        ShadowOptions { namespace: None, quiet: Duration::from_secs(1), live_server: server.into() };
    let shadow =
        Arc::new(Shadow::start(reader.clone(), script.spec(), &crds, options).await.expect("shadow starts"));
    let watched = Arc::clone(&shadow);
    let handlers = shadow.handlers(script_handlers(script));
    run_until(handlers, shadow.kubeconfig().to_owned(), "the shadow converges", move || {
        let s = Arc::clone(&watched);
        async move { s.report().converged }
    })
    .await;
    shadow.report()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_shadow_reads_the_live_objects_writes_nothing_there_and_reports_what_v2_would_do() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
    let live = KubeSim::start(Config { authz: true, ..Config::default() }).await.expect("live kubesim");
    let dir = tempfile::tempdir().expect("tempdir");
    let admin_path = dir.path().join("admin");
    live.write_kubeconfig(&admin_path).expect("kubeconfig");
    let admin = client(&std::fs::read_to_string(&admin_path).expect("read")).await;

    // v1 runs on the live cluster: two WebApps get their children and status.
    let (_v1_dir, v1) = load(str::to_owned);
    ctop_controller::install_crds(&admin, &ctop_manifests::operator_crds(v1.spec()).expect("crds"), "test")
        .await
        .expect("CRDs");
    let ar = ApiResource::from_gvk(&GroupVersionKind::gvk("apps.example.com", "v1", "WebApp"));
    let apps: Api<DynamicObject> = Api::namespaced_with(admin.clone(), "default", &ar);
    for name in ["a", "b"] {
        let app: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "apps.example.com/v1", "kind": "WebApp",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"image": "nginx:1.27", "replicas": 1},
        }))
        .expect("object");
        apps.create(&PostParams::default(), &app).await.expect("WebApp created");
    }
    let services: Api<k8s_openapi::api::core::v1::Service> = Api::namespaced(admin.clone(), "default");
    let watched = (apps.clone(), services.clone());
    run_until(script_handlers(&v1), admin_path.clone(), "v1 converges on the live cluster", move || {
        let (apps, services) = watched.clone();
        async move {
            let svcs = services.list(&Default::default()).await.map(|l| l.items.len()).unwrap_or(0);
            let phases = apps
                .list(&Default::default())
                .await
                .map(|l| l.items.iter().filter(|a| a.data.pointer("/status/phase").is_some()).count())
                .unwrap_or(0);
            svcs == 2 && phases == 2
        }
    })
    .await;

    // The shadow's reader: a token bound to the read-only role of `ctop manifests --shadow`.
    let perms = ctop_manifests::read_permissions(v1.spec(), &ctop_manifests::Options::new("webapp"));
    let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                      "metadata": {"name": "webapp-shadow"}, "rules": perms.cluster});
    let binding = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                         "metadata": {"name": "webapp-shadow"},
                         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "webapp-shadow"},
                         "subjects": [{"kind": "User", "name": "shadow-reader"}]});
    for (doc, plural) in [(role, "clusterroles"), (binding, "clusterrolebindings")] {
        let kind = doc["kind"].as_str().expect("kind").to_owned();
        let ar = ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("rbac.authorization.k8s.io", "v1", &kind),
            plural,
        );
        let api: Api<DynamicObject> = Api::all_with(admin.clone(), &ar);
        let name = doc["metadata"]["name"].as_str().expect("name").to_owned();
        api.patch(&name, &PatchParams::apply("test"), &Patch::Apply(&doc)).await.expect("RBAC applied");
    }
    // Every authenticated user is in system:authenticated, which may use discovery.
    live.add_token("reader-token", "shadow-reader", &["system:authenticated"]);
    let reader =
        client(&ctop_kubesim::kubeconfig_yaml(&live.url(), live.ca_pem(), Some("reader-token"), "default"))
            .await;
    // The reader cannot write.
    let denied = Api::<k8s_openapi::api::core::v1::ConfigMap>::namespaced(reader.clone(), "default")
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "x"}})).expect("cm"),
        )
        .await;
    assert!(matches!(denied, Err(kube::Error::Api(ref e)) if e.code == 403), "{denied:?}");

    let before = live.resource_version();
    let same = shadow_of(&v1, &reader, &live.url()).await;
    assert_eq!(same.summary, ["would write nothing"], "{same:#?}");
    assert!(same.owners.is_empty(), "{same:#?}");

    let (_v2_dir, v2) = load(|s| {
        let start = s.find("    apply(Service({").expect("the Service");
        let end = start + s[start..].find("}));\n").expect("its end") + 5;
        format!("{}{}", &s[..start], &s[end..])
    });
    let dropped = shadow_of(&v2, &reader, &live.url()).await;
    assert!(
        dropped.summary.iter().any(|l| l == "would delete v1/Service on 2 of 2 WebApp objects"),
        "{dropped:#?}"
    );
    let owners: Vec<String> = dropped.owners.iter().map(|o| o.owner.to_string()).collect();
    assert_eq!(owners, ["WebApp default/a", "WebApp default/b"]);
    assert_eq!(live.resource_version(), before, "the live cluster was written to");
    let _: Value = serde_json::to_value(&dropped).expect("the report serializes");
}

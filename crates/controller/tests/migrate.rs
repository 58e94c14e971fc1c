//! Storage migration (`RunOptions::migrate_storage`) against an in-process kubesim that
//! converts through the script's conversions (served by `ctop_webhook`'s dev server, as
//! `ctop test` serves them): objects stored in v1 are rewritten in v2 and v1 leaves
//! `status.storedVersions`; a second leader resumes the migration where the first stopped,
//! rewriting no object twice; an object written since the list is read again and rewritten;
//! an object that cannot be rewritten keeps v1 stored and says so.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;

use common::{PRELUDE, client, eventually, http_get, sim};
use ctop_controller::{LeaseTiming, RetryLimit, RunOptions, StorageMigration};
use ctop_kubesim::KubeSim;
use ctop_runtime::{Limits, Script, ScriptHandlers};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ListParams, PostParams};
use serde_json::{Value, json};

const CRD: &str = "widgets.test.ctop.dev";

/// Widget v1 is the hub of the prelude; v2 renames `mode` to `style`. `storage` picks the
/// stored version. The controller has no reconcile handler, so it does not run: only the
/// migration writes the Widgets, and a changed resourceVersion means a rewrite.
fn script(storage: &str) -> String {
    format!(
        r#"{PRELUDE}
widget.addVersion("v2", {{
  spec: {{ style: z.string().default("ok"), names: z.array(z.string()).default([]) }},
  storage: {},
  toHub: (o) => {{ const {{ style, ...rest }} = o.spec; return {{ ...o, spec: {{ ...rest, mode: style }} }}; }},
  fromHub: (o) => {{ const {{ mode, ...rest }} = o.spec; return {{ ...o, spec: {{ ...rest, style: mode }} }}; }},
}});
operator(widget);
"#,
        storage == "v2"
    )
}

struct NoAdmission;

impl ctop_webhook::AdmissionScript for NoAdmission {
    fn call(
        &self,
        _: &ctop_webhook::AdmissionCall<'_>,
    ) -> Result<ctop_core::AdmissionOutcome, ctop_webhook::HookError> {
        Err(ctop_webhook::HookError::Failed("no admission handlers here".into()))
    }
}

struct Convert(ScriptHandlers);

impl ctop_webhook::ConversionScript for Convert {
    fn convert(&self, to: &str, objects: &[Value]) -> Result<Vec<Value>, ctop_webhook::HookError> {
        self.0.convert(to, objects).map_err(ctop_webhook::HookError::Failed)
    }
}

/// The script storing `storage`, its conversions served to `sim`, its CRDs applied.
async fn install(
    client: &Client,
    storage: &str,
) -> (Arc<ScriptHandlers>, ctop_webhook::dev::DevWebhook, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("operator.ct"), script(storage)).expect("write script");
    let script = Script::from_dir(dir.path(), "operator.ct", 2, Limits::default()).expect("the script loads");
    let handlers = Arc::new(ScriptHandlers::new(Arc::new(script), &json!({}), &json!({})));
    let spec = handlers.script().spec().clone();
    let hook =
        ctop_webhook::dev::DevWebhook::start(client, Arc::new(NoAdmission), &spec).await.expect("webhook");
    let conversion = ScriptHandlers::new(handlers.script().clone(), &json!({}), &json!({}));
    hook.set_conversion(Arc::new(Convert(conversion)), &spec);
    let crds = ctop_manifests::operator_crds_with(&spec, &hook.conversion().into()).expect("crds");
    ctop_controller::install_crds(client, &crds, "test").await.expect("the CRDs install");
    (handlers, hook, dir)
}

fn widgets(client: &Client, version: &str) -> Api<DynamicObject> {
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("test.ctop.dev", version, "Widget"),
        "widgets",
    );
    Api::namespaced_with(client.clone(), "default", &ar)
}

async fn stored_versions(client: &Client) -> Vec<String> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd = crds.get(CRD).await.expect("the CRD");
    crd.status.and_then(|s| s.stored_versions).unwrap_or_default()
}

async fn resource_versions(client: &Client) -> BTreeMap<String, String> {
    let list = widgets(client, "v1").list(&ListParams::default()).await.expect("list");
    list.items
        .into_iter()
        .map(|o| (o.metadata.name.unwrap_or_default(), o.metadata.resource_version.unwrap_or_default()))
        .collect()
}

/// Run the operator of `handlers` migrating at most `rate` objects per second; send on the
/// first to stop it.
fn operator(
    sim: &KubeSim,
    dir: &tempfile::TempDir,
    handlers: Arc<ScriptHandlers>,
    rate: u32,
) -> (tokio::sync::oneshot::Sender<()>, tokio::task::JoinHandle<()>, std::net::SocketAddr) {
    let health =
        std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port");
    let kubeconfig = dir.path().join("kubeconfig");
    sim.write_kubeconfig(&kubeconfig).expect("kubeconfig");
    let options = RunOptions {
        kubeconfig: Some(kubeconfig),
        context: None,
        namespace: None,
        concurrency: 2,
        health_addr: health,
        metrics_addr: std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
        inspector: None,
        shared: None,
        leader_elect: false,
        lease_namespace: "default".into(),
        name: "migrator".into(),
        identity: None,
        install_crds: Vec::new(),
        retry_limit: RetryLimit::default(),
        sharding: false,
        migrate_storage: Some(StorageMigration { rate }),
        history: ctop_controller::history::DEFAULT_KEPT,
    };
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        let run = ctop_controller::run_with_lease(handlers, options, LeaseTiming::default(), async move {
            let _ = stopped.await;
        });
        if let Err(e) = run.await {
            panic!("the operator failed: {e}");
        }
    });
    (stop, task, health)
}

/// The migration as `/status` shows it, once it is in `phase`.
async fn migration_in(health: std::net::SocketAddr, phase: &'static str) -> Value {
    eventually(30, &format!("the migration reported {phase}"), || async move {
        let (_, body) = http_get(health, "/status").await?;
        let status: Value = serde_json::from_str(&body).ok()?;
        let m = status["storageMigrations"][0].clone();
        (m["phase"] == phase).then_some(m)
    })
    .await
}

/// `n` Widgets written in v1 while v1 is stored.
async fn stored_in_v1(client: &Client, n: usize) -> tempfile::TempDir {
    let (_, _hook, dir) = install(client, "v1").await;
    let api = widgets(client, "v1");
    for i in 0..n {
        let w = json!({"apiVersion": "test.ctop.dev/v1", "kind": "Widget",
            "metadata": {"name": format!("w-{i:03}")}, "spec": {"mode": format!("m{i}")}});
        api.create(&PostParams::default(), &serde_json::from_value(w).expect("a widget"))
            .await
            .expect("create");
    }
    assert_eq!(stored_versions(client).await, ["v1"]);
    dir
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn objects_stored_in_v1_are_rewritten_and_v1_leaves_stored_versions() {
    let sim = sim().await;
    let client = client(&sim).await;
    let _old = stored_in_v1(&client, 12).await;
    let (handlers, _hook, dir) = install(&client, "v2").await;
    assert_eq!(stored_versions(&client).await, ["v1", "v2"]);
    let before = resource_versions(&client).await;
    let (stop, task, _) = operator(&sim, &dir, handlers, 200);
    eventually(30, "storedVersions is [v2]", || {
        let client = client.clone();
        async move { (stored_versions(&client).await == ["v2"]).then_some(()) }
    })
    .await;
    let after = resource_versions(&client).await;
    assert_eq!(after.len(), 12);
    for (name, rv) in &before {
        assert_ne!(after.get(name), Some(rv), "{name} was rewritten");
    }
    // Nothing lost on the way: each reads the same in both versions.
    for i in 0..12 {
        let v2 = widgets(&client, "v2").get(&format!("w-{i:03}")).await.expect("get in v2");
        assert_eq!(v2.data["spec"]["style"], format!("m{i}"));
    }
    // The progress record is gone with the migration.
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let annotations = crds.get(CRD).await.expect("the CRD").metadata.annotations.unwrap_or_default();
    assert!(!annotations.contains_key(ctop_controller::migrate::PROGRESS_ANNOTATION), "{annotations:?}");
    let _ = stop.send(());
    let _ = task.await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_leader_resumes_where_the_last_one_stopped() {
    let sim = sim().await;
    let client = client(&sim).await;
    let _old = stored_in_v1(&client, 250).await;
    let (handlers, _hook, dir) = install(&client, "v2").await;
    let before = resource_versions(&client).await;
    // Slow enough to stop it after its first page (100 objects) is recorded.
    let (stop, task, _) = operator(&sim, &dir, handlers.clone(), 60);
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    eventually(30, "the first page recorded", || {
        let crds = crds.clone();
        async move {
            let crd = crds.get(CRD).await.ok()?;
            crd.metadata.annotations?.get(ctop_controller::migrate::PROGRESS_ANNOTATION).map(|_| ())
        }
    })
    .await;
    let _ = stop.send(());
    let _ = task.await;
    let middle = resource_versions(&client).await;
    let done: Vec<&String> =
        middle.iter().filter(|(n, rv)| before.get(*n) != Some(rv)).map(|(n, _)| n).collect();
    assert!(done.len() >= 100 && done.len() < 250, "{} rewritten before the stop", done.len());
    assert_eq!(stored_versions(&client).await, ["v1", "v2"], "not finished: v1 stays");

    let (stop, task, _) = operator(&sim, &dir, handlers, 500);
    eventually(60, "storedVersions is [v2]", || {
        let client = client.clone();
        async move { (stored_versions(&client).await == ["v2"]).then_some(()) }
    })
    .await;
    let after = resource_versions(&client).await;
    let first_page: Vec<&String> = middle.keys().take(100).collect();
    for name in first_page {
        assert_eq!(
            after.get(name),
            middle.get(name),
            "{name} was done by the first leader and not rewritten again"
        );
    }
    for (name, rv) in &before {
        assert_ne!(after.get(name), Some(rv), "{name} was rewritten by one of the two");
    }
    let _ = stop.send(());
    let _ = task.await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_object_that_cannot_be_rewritten_keeps_v1_stored_and_is_named() {
    let sim = sim().await;
    let client = client(&sim).await;
    let _old = stored_in_v1(&client, 3).await;
    let (handlers, _hook, dir) = install(&client, "v2").await;
    // The first rewrite is refused: the pass goes on with the others, then fails.
    sim.faults().fail("update", "widgets", 500, 1);
    let before = resource_versions(&client).await;
    let (stop, task, health) = operator(&sim, &dir, handlers, 200);
    // The two others are rewritten, the refused one is not, and v1 stays stored.
    let rewritten = eventually(30, "the two others rewritten", || {
        let (client, before) = (client.clone(), before.clone());
        async move {
            let now = resource_versions(&client).await;
            let changed: Vec<String> =
                now.iter().filter(|(n, rv)| before.get(*n) != Some(rv)).map(|(n, _)| n.clone()).collect();
            (changed.len() == 2).then_some(changed)
        }
    })
    .await;
    assert_eq!(rewritten, ["w-001", "w-002"]);
    // /status says why.
    let migration = migration_in(health, "Failed").await;
    assert_eq!(migration["resource"], CRD);
    assert_eq!(migration["migrated"], 2, "{migration}");
    let message = migration["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with(
            "1 object(s) could not be rewritten in v2, so v1 stays in status.storedVersions; first: default/w-000: 500"
        ),
        "{migration}"
    );
    assert_eq!(stored_versions(&client).await, ["v1", "v2"], "v1 stays while an object may be stored in it");
    let _ = stop.send(());
    let _ = task.await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_object_written_since_the_list_is_read_again_and_rewritten() {
    let sim = sim().await;
    let client = client(&sim).await;
    let _old = stored_in_v1(&client, 3).await;
    let (handlers, _hook, dir) = install(&client, "v2").await;
    // The first rewrite is answered 409, as when another write came first: that write may
    // have been stored in v1 (an API server that had not yet seen the new storage version),
    // so it proves nothing. The object is read again and rewritten before v1 may go.
    sim.faults().fail("update", "widgets", 409, 1);
    let before = resource_versions(&client).await;
    let (stop, task, health) = operator(&sim, &dir, handlers, 200);
    eventually(30, "storedVersions is [v2]", || {
        let client = client.clone();
        async move { (stored_versions(&client).await == ["v2"]).then_some(()) }
    })
    .await;
    let after = resource_versions(&client).await;
    for (name, rv) in &before {
        assert_ne!(after.get(name), Some(rv), "{name} was rewritten, the one answered 409 too");
    }
    let migration = migration_in(health, "Done").await;
    assert_eq!(migration["migrated"], 3, "{migration}");
    let _ = stop.send(());
    let _ = task.await;
}

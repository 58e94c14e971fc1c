//! kubesim as the overlay of a live cluster: raw imports and unimports that clients see as
//! ordinary objects and watch events, the garbage collector's rule for owners the mirror
//! never copied, the log of request writes, and the resourceVersion `/kubesim/stats` reports.

mod common;

use std::time::Duration;

use common::{api_err, eventually, start_with, widget_crd};
use ctop_kubesim::{Config, ImportEvent, KubeSim, RequestWrite, WriteCause, WriteEvent};
use futures::{StreamExt as _, TryStreamExt as _};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams,
    PostParams, WatchEvent, WatchParams,
};
use kube::{Client, ResourceExt as _};
use serde_json::{Value, json};

async fn overlay() -> (KubeSim, Client) {
    start_with(Config { overlay: true, ..Config::default() }).await
}

/// A ConfigMap as a live cluster serves it.
fn live_cm(name: &str, uid: &str, owner: Option<&str>, data: Value) -> Value {
    let mut cm = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {
            "name": name, "namespace": "default", "uid": uid,
            "resourceVersion": "987654", "generation": 4,
            "creationTimestamp": "2024-01-02T03:04:05Z",
            "labels": {"app": "live"}, "annotations": {"live/note": "kept"},
            "managedFields": [{
                "manager": "live-operator", "operation": "Apply", "apiVersion": "v1",
                "time": "2024-01-02T03:04:05Z", "fieldsType": "FieldsV1",
                "fieldsV1": {"f:data": {"f:k": {}}},
            }],
        },
        "data": data,
    });
    if let Some(owner) = owner {
        cm["metadata"]["ownerReferences"] =
            json!([{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner}]);
    }
    cm
}

fn rv_of(cm: &ConfigMap) -> u64 {
    cm.resource_version().and_then(|rv| rv.parse().ok()).expect("numeric resourceVersion")
}

async fn stats_rv(client: &Client) -> u64 {
    let req = http::Request::get("/kubesim/stats").body(Vec::new()).expect("request");
    let stats: Value = client.request(req).await.expect("stats");
    stats["resourceVersion"].as_u64().expect("resourceVersion is a number")
}

#[tokio::test(flavor = "multi_thread")]
async fn an_import_keeps_the_live_metadata_and_watchers_see_it_come_change_and_go() {
    let (sim, client) = overlay().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    let from = api.list_metadata(&ListParams::default()).await.expect("list").metadata.resource_version;
    let mut events =
        api.watch(&WatchParams::default().timeout(10), &from.expect("list rv")).await.expect("watch").boxed();

    let mut live = live_cm("with-finalizer", "live-uid-1", Some("absent-owner"), json!({"k": "v1"}));
    live["metadata"]["finalizers"] = json!(["live.example.com/hold"]);
    let added = sim.import(live.clone()).await.expect("import");
    assert_eq!((added.event, added.notes.as_slice()), (ImportEvent::Added, &[][..]));
    assert_eq!(added.resource_version, sim.resource_version());
    let got = api.get("with-finalizer").await.expect("get");
    assert_eq!(rv_of(&got), added.resource_version, "the overlay's resourceVersion, not the live one");
    assert_eq!(got.uid().as_deref(), Some("live-uid-1"));
    assert_eq!(got.metadata.generation, Some(4));
    assert_eq!(
        serde_json::to_value(&got.metadata.creation_timestamp).expect("json"),
        json!("2024-01-02T03:04:05Z")
    );
    let managed = got.metadata.managed_fields.clone().unwrap_or_default();
    assert_eq!(managed.iter().map(|m| m.manager.as_deref()).collect::<Vec<_>>(), [Some("live-operator")]);
    assert_eq!(got.owner_references().iter().map(|o| o.uid.as_str()).collect::<Vec<_>>(), ["absent-owner"]);
    assert_eq!(got.finalizers(), ["live.example.com/hold"]);
    assert_eq!(got.labels().get("app").map(String::as_str), Some("live"));
    assert_eq!(got.annotations().get("live/note").map(String::as_str), Some("kept"));

    // The same object again changes nothing; a changed one is a MODIFIED.
    let same = sim.import(live.clone()).await.expect("import again");
    assert_eq!((same.event, same.resource_version), (ImportEvent::Unchanged, added.resource_version));
    let mut changed = live.clone();
    changed["data"]["k"] = json!("v2");
    let modified = sim.import(changed).await.expect("import a change");
    assert_eq!(modified.event, ImportEvent::Modified);
    assert!(modified.resource_version > added.resource_version);
    assert_eq!(api.get("with-finalizer").await.expect("get").data.unwrap_or_default()["k"], "v2");

    assert!(sim.unimport("v1", "ConfigMap", Some("default"), "with-finalizer").expect("unimport"));
    assert!(!sim.unimport("v1", "ConfigMap", Some("default"), "with-finalizer").expect("unimport again"));
    assert!(
        !sim.unimport("example.com/v1", "Widget", Some("default"), "w").expect("an unknown kind has none")
    );
    let refused =
        sim.unimport("v1", "ConfigMap", None, "x").expect_err("a namespaced kind needs its namespace");
    assert_eq!(refused.code, 422);
    assert_eq!(api_err(api.get("with-finalizer").await).code, 404);

    let mut seen = Vec::new();
    while seen.len() < 3 {
        let next = tokio::time::timeout(Duration::from_secs(5), events.try_next()).await;
        match next.expect("an event in time").expect("a watch event").expect("the watch goes on") {
            WatchEvent::Added(o) => seen.push(("ADDED", o.data.unwrap_or_default()["k"].clone())),
            WatchEvent::Modified(o) => seen.push(("MODIFIED", o.data.unwrap_or_default()["k"].clone())),
            WatchEvent::Deleted(o) => seen.push(("DELETED", o.data.unwrap_or_default()["k"].clone())),
            WatchEvent::Bookmark(_) => {}
            WatchEvent::Error(e) => panic!("unexpected error event {e:?}"),
        }
    }
    let v = |s: &str| s.to_owned();
    assert_eq!(seen, [("ADDED", v("v1")), ("MODIFIED", v("v2")), ("DELETED", v("v2"))]);
    assert!(sim.request_writes().is_empty(), "imports are not request writes: {:?}", sim.request_writes());
}

#[tokio::test(flavor = "multi_thread")]
async fn an_import_under_another_uid_replaces_the_object_and_one_without_keeps_its_own() {
    let (sim, client) = overlay().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    sim.import(live_cm("c", "first", None, json!({}))).await.expect("import");
    let again = sim.import(live_cm("c", "second", None, json!({}))).await.expect("import");
    assert_eq!(again.event, ImportEvent::Replaced);
    assert_eq!(api.get("c").await.expect("get").uid().as_deref(), Some("second"));
    // Without a uid, an object gets one, and keeps it when imported again.
    let bare = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "bare", "namespace": "default"}});
    let first = sim.import(bare.clone()).await.expect("import");
    assert_eq!(first.notes, ["metadata.uid was empty: the overlay gave it one"]);
    assert_eq!(sim.import(bare).await.expect("import again").event, ImportEvent::Unchanged);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_import_makes_its_namespace_and_needs_its_kind_served() {
    let (sim, client) = overlay().await;
    let mut cm = live_cm("c", "u-1", None, json!({}));
    cm["metadata"]["namespace"] = json!("live-ns");
    let imported = sim.import(cm).await.expect("import");
    assert_eq!(imported.notes, ["namespace \"live-ns\" was not in the overlay: a stub Namespace was made"]);
    let ns = Api::<Namespace>::all(client.clone()).get("live-ns").await.expect("the namespace exists");
    assert_eq!(ns.status.and_then(|s| s.phase).as_deref(), Some("Active"));
    Api::<ConfigMap>::namespaced(client.clone(), "live-ns").get("c").await.expect("the import is there");

    let widget = json!({
        "apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w", "namespace": "default", "uid": "w-uid"},
        "spec": {"color": "green", "unknown": 1},
    });
    let refused = sim.import(widget.clone()).await.expect_err("no CRD for widgets yet");
    assert_eq!(refused.code, 404);
    assert_eq!(
        refused.message,
        "no matches for kind \"Widget\" in version \"example.com/v1\": ensure CRDs are installed first"
    );
    let missing =
        sim.import(json!({"apiVersion": "v1", "metadata": {"name": "x"}})).await.expect_err("no kind");
    assert!(missing.message.starts_with("Object 'Kind' is missing in '"), "{}", missing.message);

    // The CRD imported too, the widget goes in as it is; its schema's objections are notes.
    let mut crd = widget_crd();
    crd["metadata"]["uid"] = json!("crd-uid");
    sim.import(crd).await.expect("the CRD imports");
    let imported = sim.import(widget).await.expect("import the widget");
    assert_eq!(imported.event, ImportEvent::Added);
    assert!(
        imported.notes.iter().any(|n| n.starts_with("spec.color: Unsupported value: \"green\"")),
        "{:?}",
        imported.notes
    );
    assert!(
        imported.notes.iter().any(|n| n.contains("unknown field \"spec.unknown\"")),
        "{:?}",
        imported.notes
    );
    let gvk = GroupVersionKind::gvk("example.com", "v1", "Widget");
    let widgets: Api<DynamicObject> =
        Api::namespaced_with(client, "default", &ApiResource::from_gvk_with_plural(&gvk, "widgets"));
    let got = widgets.get("w").await.expect("served");
    assert_eq!(got.data["spec"], json!({"color": "green", "unknown": 1}), "not pruned nor defaulted");
    assert_eq!(got.uid().as_deref(), Some("w-uid"));
}

#[tokio::test(flavor = "multi_thread")]
async fn the_overlay_collects_dependents_only_of_owners_deleted_here() {
    let (sim, client) = overlay().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    sim.import(live_cm("owner", "owner-uid", None, json!({}))).await.expect("owner");
    sim.import(live_cm("child", "child-uid", Some("owner-uid"), json!({}))).await.expect("child");
    sim.import(live_cm("stray", "stray-uid", Some("never-mirrored"), json!({}))).await.expect("stray");
    // A request write gives the collector the stray to look at...
    let label = Patch::Merge(json!({"metadata": {"labels": {"touched": "yes"}}}));
    api.patch("stray", &PatchParams::default(), &label).await.expect("patch");
    // ...before the owner's deletion, which it works on in order: once the child is
    // collected, the stray has had its chance.
    api.delete("owner", &DeleteParams::background()).await.expect("delete the owner");
    let a = api.clone();
    eventually(5, "the child of the deleted owner collected", || {
        let a = a.clone();
        async move { a.get_opt("child").await.expect("get").is_none().then_some(()) }
    })
    .await;
    let stray = api.get("stray").await.expect("the stray survives");
    assert_eq!(stray.owner_references().len(), 1, "its owner reference is kept");

    let writes = sim.request_writes();
    let summary: Vec<(&str, WriteEvent, WriteCause)> =
        writes.iter().map(|w| (w.name.as_str(), w.event, w.cause)).collect();
    let owner_seq = writes[1].seq;
    assert_eq!(
        summary,
        [
            ("stray", WriteEvent::Modified, WriteCause::Request),
            ("owner", WriteEvent::Deleted, WriteCause::Request),
            ("child", WriteEvent::Deleted, WriteCause::GarbageCollector { because: owner_seq }),
        ]
    );
}

/// Outside an overlay an owner that is not there is gone, as before.
#[tokio::test(flavor = "multi_thread")]
async fn without_an_overlay_a_dependent_of_an_absent_owner_is_collected() {
    let (sim, client) = start_with(Config::default()).await;
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    let cm: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "d", "ownerReferences": [
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": "never-seen"}]}}))
    .expect("configmap");
    api.create(&PostParams::default(), &cm).await.expect("create");
    let a = api.clone();
    eventually(5, "the dependent collected", || {
        let a = a.clone();
        async move { a.get_opt("d").await.expect("get").is_none().then_some(()) }
    })
    .await;
    assert!(sim.request_writes().is_empty(), "only an overlay logs");
}

fn data(obj: &Value) -> &Value {
    &obj["data"]
}

#[tokio::test(flavor = "multi_thread")]
async fn request_writes_are_logged_in_order_with_before_after_and_cause() {
    let (sim, client) = overlay().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client.clone());
    sim.import(live_cm("imported", "imported-uid", None, json!({"k": "live"}))).await.expect("import");

    let pp = PostParams { field_manager: Some("tester".into()), ..PostParams::default() };
    let owner: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "a"}, "data": {"k": "1"}})).expect("cm");
    let owner = api.create(&pp, &owner).await.expect("create");
    api.patch("a", &PatchParams::default(), &Patch::Merge(json!({"data": {"k": "2"}}))).await.expect("patch");
    let child: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "b", "ownerReferences": [
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "a", "uid": owner.uid()}]}}))
    .expect("cm");
    api.create(&pp, &child).await.expect("create the child");
    api.delete("a", &DeleteParams::background()).await.expect("delete");
    let a = api.clone();
    eventually(5, "the child collected", || {
        let a = a.clone();
        async move { a.get_opt("b").await.expect("get").is_none().then_some(()) }
    })
    .await;

    let writes = sim.request_writes();
    let summary: Vec<(u64, &str, WriteEvent, WriteCause)> =
        writes.iter().map(|w| (w.seq, w.name.as_str(), w.event, w.cause)).collect();
    assert_eq!(
        summary,
        [
            (1, "a", WriteEvent::Added, WriteCause::Request),
            (2, "a", WriteEvent::Modified, WriteCause::Request),
            (3, "b", WriteEvent::Added, WriteCause::Request),
            (4, "a", WriteEvent::Deleted, WriteCause::Request),
            (5, "b", WriteEvent::Deleted, WriteCause::GarbageCollector { because: 4 }),
        ]
    );
    let [created, patched, _, deleted, collected] = &writes[..] else { panic!("five writes") };
    let who = |w: &RequestWrite| (w.api_version.clone(), w.kind.clone(), w.namespace.clone(), w.uid.clone());
    assert_eq!(
        who(created),
        ("v1".into(), "ConfigMap".into(), Some("default".into()), owner.uid().expect("uid"))
    );
    assert_eq!((data(&created.object), created.old.is_none()), (&json!({"k": "1"}), true));
    assert_eq!(created.field_manager.as_deref(), Some("tester"));
    assert_eq!(created.user.as_deref(), Some("kubesim-admin"));
    assert_eq!(data(patched.old.as_deref().expect("before")), &json!({"k": "1"}));
    assert_eq!(data(&patched.object), &json!({"k": "2"}));
    assert!(writes.windows(2).all(|w| w[0].resource_version < w[1].resource_version));
    assert_eq!(data(deleted.old.as_deref().expect("before")), &json!({"k": "2"}));
    assert_eq!(
        collected.user.as_deref(),
        Some("system:serviceaccount:kube-system:generic-garbage-collector")
    );
    assert_eq!(sim.request_writes_since(3).iter().map(|w| w.seq).collect::<Vec<_>>(), [4, 5]);
    assert_eq!(sim.dropped_request_writes(), 0);

    // A namespace deleted by a request takes its contents, imported ones too, as its
    // cleanup's writes.
    let mut cm = live_cm("c", "c-uid", None, json!({}));
    cm["metadata"]["namespace"] = json!("doomed");
    sim.import(cm).await.expect("import");
    Api::<Namespace>::all(client.clone()).delete("doomed", &DeleteParams::default()).await.expect("delete");
    let nss = Api::<Namespace>::all(client);
    eventually(5, "the namespace removed", || {
        let n = nss.clone();
        async move { n.get_opt("doomed").await.expect("get").is_none().then_some(()) }
    })
    .await;
    let tail = sim.request_writes_since(5);
    let summary: Vec<(&str, &str, WriteEvent)> =
        tail.iter().map(|w| (w.kind.as_str(), w.name.as_str(), w.event)).collect();
    assert_eq!(
        summary,
        [
            ("Namespace", "doomed", WriteEvent::Modified),
            ("ConfigMap", "c", WriteEvent::Deleted),
            ("Namespace", "doomed", WriteEvent::Deleted),
        ]
    );
    assert_eq!(tail[0].cause, WriteCause::Request);
    assert_eq!(tail[1].cause, WriteCause::NamespaceCleanup { because: tail[0].seq });
    // The namespace goes in the same pass as its last object.
    assert_eq!(tail[2].cause, WriteCause::NamespaceCleanup { because: tail[0].seq });
}

#[tokio::test(flavor = "multi_thread")]
async fn stats_report_the_resource_version_that_every_change_moves() {
    let (sim, client) = overlay().await;
    let before = stats_rv(&client).await;
    assert_eq!(before, sim.resource_version());
    let api: Api<ConfigMap> = Api::default_namespaced(client.clone());
    api.list(&ListParams::default()).await.expect("a read");
    assert_eq!(stats_rv(&client).await, before, "reads move nothing");
    sim.import(live_cm("i", "i-uid", None, json!({}))).await.expect("import");
    let imported = stats_rv(&client).await;
    assert!(imported > before);
    let cm: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "w"}})).expect("cm");
    api.create(&PostParams::default(), &cm).await.expect("create");
    let written = stats_rv(&client).await;
    assert!(written > imported);
    assert_eq!(written, sim.resource_version());
}

/// An overlay ignores the workload controllers it is given: no nodes are seeded and no
/// Service gets a cluster IP (both happen at once when the controllers run).
#[tokio::test(flavor = "multi_thread")]
async fn an_overlay_runs_no_workload_controllers() {
    use k8s_openapi::api::core::v1::{Node, Service};
    let config = Config { overlay: true, workloads: Some(Default::default()), ..Config::default() };
    let (_sim, client) = start_with(config).await;
    assert!(
        Api::<Node>::all(client.clone()).list(&ListParams::default()).await.expect("nodes").items.is_empty()
    );
    let services: Api<Service> = Api::default_namespaced(client);
    let svc: Service =
        serde_json::from_value(json!({"metadata": {"name": "s"}, "spec": {"ports": [{"port": 80}]}}))
            .expect("svc");
    let svc = services.create(&PostParams::default(), &svc).await.expect("create");
    assert_eq!(svc.spec.and_then(|s| s.cluster_ip), None, "no cluster IP handed out");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_crd_deleted_by_a_request_takes_its_custom_resources_as_cleanup_writes() {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    let (sim, client) = overlay().await;
    // As a live cluster serves it: with the cleanup finalizer the API server put on it.
    let mut crd = widget_crd();
    crd["metadata"]["uid"] = json!("crd-uid");
    crd["metadata"]["finalizers"] = json!(["customresourcecleanup.apiextensions.k8s.io"]);
    sim.import(crd).await.expect("import the CRD");
    let widget = json!({
        "apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w", "namespace": "default", "uid": "w-uid"}, "spec": {"color": "red"},
    });
    sim.import(widget).await.expect("import the widget");
    let crds: Api<CustomResourceDefinition> = Api::all(client);
    crds.delete("widgets.example.com", &DeleteParams::default()).await.expect("delete");
    let c = crds.clone();
    eventually(5, "the CRD removed", || {
        let c = c.clone();
        async move { c.get_opt("widgets.example.com").await.expect("get").is_none().then_some(()) }
    })
    .await;
    let writes = sim.request_writes();
    let summary: Vec<(&str, WriteEvent, WriteCause)> =
        writes.iter().map(|w| (w.kind.as_str(), w.event, w.cause)).collect();
    // The CRD is finalized once its last widget is gone: because of that deletion.
    assert_eq!(
        summary,
        [
            ("CustomResourceDefinition", WriteEvent::Modified, WriteCause::Request),
            ("Widget", WriteEvent::Deleted, WriteCause::CrdCleanup { because: 1 }),
            ("CustomResourceDefinition", WriteEvent::Deleted, WriteCause::CrdCleanup { because: 2 }),
        ]
    );
}

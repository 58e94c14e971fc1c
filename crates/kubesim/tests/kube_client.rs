//! kubesim driven by kube-rs: typed and dynamic APIs, watchers through 410, server-side
//! apply, finalizers, leases, garbage collection, CRDs, paging and fault injection.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use common::{api_err, eventually, start, start_with, widget_crd};
use ctop_kubesim::Config;
use futures::{StreamExt as _, TryStreamExt as _};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams,
    PostParams, PropagationPolicy,
};
use kube::runtime::wait::{await_condition, conditions};
use kube::runtime::{WatchStreamExt as _, reflector, watcher};
use kube::{Client, ResourceExt as _};
use serde_json::json;

fn cm(name: &str, data: &[(&str, &str)]) -> ConfigMap {
    ConfigMap {
        metadata: kube::api::ObjectMeta { name: Some(name.into()), ..Default::default() },
        data: Some(data.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect::<BTreeMap<_, _>>()),
        ..Default::default()
    }
}

async fn install_widgets(client: &Client) -> Api<DynamicObject> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd: CustomResourceDefinition = serde_json::from_value(widget_crd()).expect("crd");
    crds.create(&PostParams::default(), &crd).await.expect("crd created");
    let established = await_condition(crds, "widgets.example.com", conditions::is_crd_established());
    tokio::time::timeout(Duration::from_secs(5), established).await.expect("in time").expect("established");
    let gvk = GroupVersionKind::gvk("example.com", "v1", "Widget");
    Api::namespaced_with(client.clone(), "default", &ApiResource::from_gvk_with_plural(&gvk, "widgets"))
}

fn widget(name: &str, spec: serde_json::Value) -> DynamicObject {
    serde_json::from_value(
        json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name}, "spec": spec}),
    )
    .expect("widget")
}

#[tokio::test(flavor = "multi_thread")]
async fn typed_crud_with_exact_errors() {
    let (_sim, client) = start().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    let created = api.create(&PostParams::default(), &cm("a", &[("k", "v")])).await.expect("create");
    assert!(created.metadata.uid.is_some());
    assert!(created.metadata.creation_timestamp.is_some());
    let rv1: u64 = created.resource_version().expect("rv").parse().expect("numeric rv");

    let dup = api_err(api.create(&PostParams::default(), &cm("a", &[])).await);
    assert_eq!((dup.code, dup.reason.as_str()), (409, "AlreadyExists"));
    assert_eq!(dup.message, "configmaps \"a\" already exists");

    let missing = api_err(api.get("nope").await);
    assert_eq!(
        (missing.code, missing.reason.as_str(), missing.message.as_str()),
        (404, "NotFound", "configmaps \"nope\" not found")
    );

    let mut changed = created.clone();
    changed.data = Some(BTreeMap::from([("k".into(), "w".into())]));
    let replaced = api.replace("a", &PostParams::default(), &changed).await.expect("replace");
    let rv2: u64 = replaced.resource_version().expect("rv").parse().expect("numeric");
    assert!(rv2 > rv1);

    // A stale resourceVersion is a conflict.
    let stale = api_err(api.replace("a", &PostParams::default(), &changed).await);
    assert_eq!((stale.code, stale.reason.as_str()), (409, "Conflict"));
    assert!(
        stale.message.contains(
            "the object has been modified; please apply your changes to the latest version and try again"
        ),
        "{}",
        stale.message
    );

    let gen_named = ConfigMap {
        metadata: kube::api::ObjectMeta { generate_name: Some("gen-".into()), ..Default::default() },
        ..Default::default()
    };
    let g = api.create(&PostParams::default(), &gen_named).await.expect("generateName");
    assert!(g.name_any().starts_with("gen-") && g.name_any().len() == 9, "{}", g.name_any());

    let bad = api_err(api.create(&PostParams::default(), &cm("Bad_Name", &[])).await);
    assert_eq!((bad.code, bad.reason.as_str()), (422, "Invalid"));
    assert!(
        bad.message
            .starts_with("ConfigMap \"Bad_Name\" is invalid: metadata.name: Invalid value: \"Bad_Name\""),
        "{}",
        bad.message
    );

    let deleted = api.delete("a", &DeleteParams::default()).await.expect("delete");
    assert!(deleted.is_right(), "a ConfigMap without finalizers is gone at once (Status)");
    assert_eq!(api_err(api.get("a").await).code, 404);
}

#[tokio::test(flavor = "multi_thread")]
async fn list_selectors_and_consistent_paging() {
    let (_sim, client) = start().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    for i in 0..7 {
        let mut c = cm(&format!("cm-{i}"), &[]);
        c.metadata.labels =
            Some(BTreeMap::from([("parity".into(), if i % 2 == 0 { "even" } else { "odd" }.into())]));
        api.create(&PostParams::default(), &c).await.expect("create");
    }
    let even = api.list(&ListParams::default().labels("parity=even")).await.expect("list");
    assert_eq!(even.items.len(), 4);
    let notin = api.list(&ListParams::default().labels("parity notin (even)")).await.expect("list");
    assert_eq!(notin.items.len(), 3);
    let one = api.list(&ListParams::default().fields("metadata.name=cm-3")).await.expect("list");
    assert_eq!(one.items.iter().map(|c| c.name_any()).collect::<Vec<_>>(), ["cm-3"]);
    let bad = api_err(api.list(&ListParams::default().fields("spec.nope=1")).await);
    assert_eq!((bad.code, bad.message.as_str()), (400, "field label not supported: spec.nope"));

    // Pages see one snapshot: an object created between pages does not appear.
    let first = api.list(&ListParams::default().limit(3)).await.expect("page 1");
    assert_eq!(first.items.len(), 3);
    let token = first.metadata.continue_.clone().expect("continue token");
    api.create(&PostParams::default(), &cm("cm-99", &[])).await.expect("create between pages");
    let mut names: Vec<String> = first.items.iter().map(|c| c.name_any()).collect();
    let mut cont = Some(token);
    while let Some(c) = cont {
        let page = api.list(&ListParams::default().limit(3).continue_token(&c)).await.expect("next page");
        assert_eq!(page.metadata.resource_version, first.metadata.resource_version);
        names.extend(page.items.iter().map(|c| c.name_any()));
        cont = page.metadata.continue_.filter(|c| !c.is_empty());
    }
    assert_eq!(names, (0..7).map(|i| format!("cm-{i}")).collect::<Vec<_>>());
}

#[tokio::test(flavor = "multi_thread")]
async fn watcher_and_reflector_recover_from_410() {
    let config =
        Config { watch_history: 5, bookmark_interval: Duration::from_millis(200), ..Config::default() };
    let (sim, client) = start_with(config).await;
    let api: Api<ConfigMap> = Api::default_namespaced(client.clone());
    api.create(&PostParams::default(), &cm("seed", &[])).await.expect("create");
    let (reader, writer) = reflector::store();
    let stream = reflector(writer, watcher(api.clone(), watcher::Config::default())).applied_objects();
    let task = tokio::spawn(async move {
        let mut s = std::pin::pin!(stream);
        while let Some(r) = s.next().await {
            // Errors (the 410) are retried by the watcher on the next poll.
            let _ = r;
        }
    });
    reader.wait_until_ready().await.expect("ready");
    // Roll the history far past the watcher's position while its connection is down, so
    // that resuming fails with 410 Expired and the watcher must relist.
    let others: Api<Lease> = Api::default_namespaced(client.clone());
    sim.faults().drop_watches();
    for i in 0..20 {
        let lease: Lease =
            serde_json::from_value(json!({"metadata": {"name": format!("l{i}")}})).expect("lease");
        others.create(&PostParams::default(), &lease).await.expect("create lease");
    }
    api.create(&PostParams::default(), &cm("after-410", &[])).await.expect("create");
    let r = reader.clone();
    eventually(10, "reflector sees the object created after the 410", || {
        let r = r.clone();
        async move { r.state().iter().any(|c| c.name_any() == "after-410").then_some(()) }
    })
    .await;
    // The store is exact after the relist.
    assert_eq!(reader.state().len(), 2);
    task.abort();
}

#[tokio::test(flavor = "multi_thread")]
async fn raw_watch_from_a_compacted_version_gets_expired() {
    let config = Config { watch_history: 3, ..Config::default() };
    let (_sim, client) = start_with(config).await;
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    for i in 0..6 {
        api.create(&PostParams::default(), &cm(&format!("x{i}"), &[])).await.expect("create");
    }
    let mut stream = api.watch(&kube::api::WatchParams::default(), "2").await.expect("watch").boxed();
    match stream.try_next().await {
        Ok(Some(kube::api::WatchEvent::Error(e))) => {
            assert_eq!((e.code, e.reason.as_str()), (410, "Expired"));
        }
        other => panic!("expected an Expired error event, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn raw_watch_from_a_version_dropped_for_bytes_gets_expired() {
    // Room for about three replaced versions of a 100 KB object.
    let config = Config { watch_history_bytes: 350 * 1024, ..Config::default() };
    let (sim, client) = start_with(config).await;
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    let payload = "x".repeat(100 * 1024);
    let created = api.create(&PostParams::default(), &cm("big", &[("p", &payload)])).await.expect("create");
    let mut rvs = vec![created.resource_version().expect("rv")];
    for i in 0..10 {
        let patch = Patch::Merge(json!({"data": {"i": i.to_string()}}));
        let o = api.patch("big", &PatchParams::default(), &patch).await.expect("patch");
        rvs.push(o.resource_version().expect("rv"));
    }
    let (kept, bytes) = sim.history_usage();
    assert!(bytes <= 350 * 1024, "{bytes} bytes kept");
    assert!((2..=4).contains(&kept), "{kept} changes kept");
    // From the creation: those updates were dropped, so 410 Expired.
    let mut stream = api.watch(&kube::api::WatchParams::default(), &rvs[0]).await.expect("watch").boxed();
    match stream.try_next().await {
        Ok(Some(kube::api::WatchEvent::Error(e))) => {
            assert_eq!((e.code, e.reason.as_str()), (410, "Expired"));
            assert!(e.message.starts_with("too old resource version: "), "{}", e.message);
        }
        other => panic!("expected an Expired error event, got {other:?}"),
    }
    // From the version before the last update: that update, in full.
    let wp = kube::api::WatchParams::default().timeout(1);
    let mut stream = api.watch(&wp, &rvs[9]).await.expect("watch").boxed();
    match stream.try_next().await {
        Ok(Some(kube::api::WatchEvent::Modified(o))) => {
            assert_eq!(o.resource_version().as_ref(), rvs.last());
            let data = o.data.expect("data");
            assert_eq!((data["i"].as_str(), data["p"].len()), ("9", payload.len()));
        }
        other => panic!("expected the last update, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_body_over_the_limit_gets_413_stating_it() {
    let (_sim, client) = start().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    let payload = "x".repeat(3 * 1024 * 1024);
    let err = api_err(api.create(&PostParams::default(), &cm("huge", &[("p", &payload)])).await);
    assert_eq!(
        (err.code, err.reason.as_str(), err.message.as_str()),
        (413, "RequestEntityTooLarge", "Request entity too large: limit is 3145728")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn streaming_list_watcher_gets_initial_events_end_bookmark() {
    let (_sim, client) = start().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    for n in ["a", "b"] {
        api.create(&PostParams::default(), &cm(n, &[])).await.expect("create");
    }
    let mut events = watcher(api.clone(), watcher::Config::default().streaming_lists()).boxed();
    let mut seen = Vec::new();
    loop {
        match tokio::time::timeout(Duration::from_secs(5), events.try_next())
            .await
            .expect("in time")
            .expect("ok")
        {
            Some(watcher::Event::InitApply(c)) => seen.push(c.name_any()),
            Some(watcher::Event::InitDone) => break,
            Some(_) => {}
            None => panic!("stream ended"),
        }
    }
    seen.sort();
    assert_eq!(seen, ["a", "b"]);
    api.create(&PostParams::default(), &cm("c", &[])).await.expect("create");
    match tokio::time::timeout(Duration::from_secs(5), events.try_next()).await.expect("in time").expect("ok")
    {
        Some(watcher::Event::Apply(c)) => assert_eq!(c.name_any(), "c"),
        other => panic!("expected Apply, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn metadata_watcher_gets_partial_objects() {
    let (_sim, client) = start().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    api.create(&PostParams::default(), &cm("m", &[("big", "value")])).await.expect("create");
    let list = api.list_metadata(&ListParams::default()).await.expect("metadata list");
    assert_eq!(list.items.len(), 1);
    assert_eq!(list.items[0].metadata.name.as_deref(), Some("m"));
    let got = api.get_metadata("m").await.expect("metadata get");
    assert!(got.metadata.uid.is_some());
}

#[tokio::test(flavor = "multi_thread")]
async fn server_side_apply_removes_fields_and_reports_conflicts() {
    let (_sim, client) = start().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    let ssa = |m: &str| PatchParams::apply(m);
    let v1 = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "s"}, "data": {"a": "1", "b": "2"}});
    let o = api.patch("s", &ssa("alice"), &Patch::Apply(&v1)).await.expect("apply creates");
    assert_eq!(o.data.as_ref().map(BTreeMap::len), Some(2));
    let mf = o.metadata.managed_fields.clone().expect("managedFields");
    assert_eq!((mf[0].manager.as_deref(), mf[0].operation.as_deref()), (Some("alice"), Some("Apply")));

    // Dropping a field from the applied configuration removes it.
    let v2 = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "s"}, "data": {"a": "1"}});
    let o = api.patch("s", &ssa("alice"), &Patch::Apply(&v2)).await.expect("apply");
    assert_eq!(o.data, Some(BTreeMap::from([("a".into(), "1".into())])));

    // Another manager setting a different value conflicts...
    let bob = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "s"}, "data": {"a": "9"}});
    let err = api_err(api.patch("s", &ssa("bob"), &Patch::Apply(&bob)).await);
    assert_eq!((err.code, err.reason.as_str()), (409, "Conflict"));
    assert!(err.message.contains("conflict with \"alice\""), "{}", err.message);
    assert!(err.message.contains(".data.a"), "{}", err.message);
    // ...the same value is shared ownership...
    let shared =
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "s"}, "data": {"a": "1"}});
    api.patch("s", &ssa("carol"), &Patch::Apply(&shared)).await.expect("same value is no conflict");
    // ...and force takes the field over.
    let o = api.patch("s", &ssa("bob").force(), &Patch::Apply(&bob)).await.expect("force");
    assert_eq!(o.data.as_ref().and_then(|d| d.get("a")).map(String::as_str), Some("9"));
    // alice no longer owns .data.a, so dropping it from alice's config leaves it alone.
    let empty = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "s"}});
    let o = api.patch("s", &ssa("alice"), &Patch::Apply(&empty)).await.expect("apply");
    assert_eq!(o.data.as_ref().and_then(|d| d.get("a")).map(String::as_str), Some("9"));

    // An apply without fieldManager is rejected.
    let err = api_err(api.patch("s", &PatchParams::default(), &Patch::Apply(&empty)).await);
    assert_eq!(err.code, 400);
}

#[tokio::test(flavor = "multi_thread")]
async fn merge_and_json_patches_with_tests() {
    let (_sim, client) = start().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    api.create(&PostParams::default(), &cm("p", &[("a", "1")])).await.expect("create");
    let o = api
        .patch("p", &PatchParams::default(), &Patch::Merge(json!({"data": {"a": null, "b": "2"}})))
        .await
        .expect("merge");
    assert_eq!(o.data, Some(BTreeMap::from([("b".into(), "2".into())])));
    // `test` against null passes on a missing path (the finalizer helper relies on it).
    let ops: json_patch::Patch = serde_json::from_value(json!([
        {"op": "test", "path": "/metadata/finalizers", "value": null},
        {"op": "add", "path": "/metadata/finalizers", "value": ["x/y"]}
    ]))
    .expect("patch");
    let o = api.patch("p", &PatchParams::default(), &Patch::Json::<()>(ops)).await.expect("json patch");
    assert_eq!(o.finalizers(), ["x/y"]);
    let failing: json_patch::Patch =
        serde_json::from_value(json!([{"op": "test", "path": "/metadata/finalizers/0", "value": "other"}]))
            .expect("patch");
    let err = api_err(api.patch("p", &PatchParams::default(), &Patch::Json::<()>(failing)).await);
    assert_eq!(err.code, 422);
}

#[tokio::test(flavor = "multi_thread")]
async fn lease_optimistic_concurrency() {
    let (_sim, client) = start().await;
    let api: Api<Lease> = Api::namespaced(client, "kube-system");
    let lease: Lease = serde_json::from_value(json!({
        "metadata": {"name": "leader"},
        "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15, "renewTime": "2026-01-01T00:00:00.000000Z"}
    }))
    .expect("lease");
    let created = api.create(&PostParams::default(), &lease).await.expect("create");
    assert_eq!(api_err(api.create(&PostParams::default(), &lease).await).reason, "AlreadyExists");
    let mut a = created.clone();
    let mut b = created.clone();
    a.spec.as_mut().expect("spec").holder_identity = Some("a2".into());
    b.spec.as_mut().expect("spec").holder_identity = Some("b".into());
    api.replace("leader", &PostParams::default(), &a).await.expect("first writer wins");
    let lost = api_err(api.replace("leader", &PostParams::default(), &b).await);
    assert_eq!((lost.code, lost.reason.as_str()), (409, "Conflict"));
    let now = api.get("leader").await.expect("get");
    assert_eq!(now.spec.and_then(|s| s.holder_identity).as_deref(), Some("a2"));
    assert_eq!(now.metadata.generation, None, "Leases carry no generation");
}

#[tokio::test(flavor = "multi_thread")]
async fn crd_routes_discovery_and_dynamic_api() {
    let (_sim, client) = start().await;
    let widgets = install_widgets(&client).await;
    let discovery = kube::discovery::Discovery::new(client.clone()).run().await.expect("discovery");
    let (ar, caps) = discovery
        .groups()
        .flat_map(|g| g.recommended_resources())
        .find(|(ar, _)| ar.kind == "Widget")
        .expect("Widget discovered");
    assert_eq!(ar.plural, "widgets");
    assert!(caps.subresources.iter().any(|(s, _)| s.plural == "status") || caps.supports_operation("watch"));

    let w =
        widgets.create(&PostParams::default(), &widget("w1", json!({"color": "red"}))).await.expect("create");
    // Defaulting from the schema.
    assert_eq!(w.data["spec"]["size"], 3);
    assert_eq!(w.metadata.generation, Some(1));

    // PUT with the current resourceVersion replaces; a stale one conflicts; none is a 422.
    let mut next = w.clone();
    next.data["spec"]["color"] = json!("blue");
    let replaced = widgets.replace("w1", &PostParams::default(), &next).await.expect("replace");
    assert_eq!(
        (replaced.data["spec"]["color"].as_str(), replaced.metadata.generation),
        (Some("blue"), Some(2))
    );
    let stale = api_err(widgets.replace("w1", &PostParams::default(), &next).await);
    assert_eq!(stale.code, 409);
    next.metadata.resource_version = None;
    let unversioned = api_err(widgets.replace("w1", &PostParams::default(), &next).await);
    assert_eq!(unversioned.code, 422);
}

#[tokio::test(flavor = "multi_thread")]
async fn crd_validation_422_with_causes_and_pruning() {
    let (_sim, client) = start().await;
    let widgets = install_widgets(&client).await;
    let bad = api_err(
        widgets.create(&PostParams::default(), &widget("bad", json!({"color": "green", "size": 11}))).await,
    );
    assert_eq!((bad.code, bad.reason.as_str()), (422, "Invalid"));
    assert!(bad.message.starts_with("Widget.example.com \"bad\" is invalid: "), "{}", bad.message);
    let causes = bad.details.expect("details").causes;
    let fields: Vec<&str> = causes.iter().map(|c| c.field.as_str()).collect();
    assert!(fields.contains(&"spec.color") && fields.contains(&"spec.size"), "{fields:?}");
    let missing = api_err(widgets.create(&PostParams::default(), &widget("bad2", json!({"size": 2}))).await);
    assert!(missing.message.contains("spec.color: Required value"), "{}", missing.message);

    // Unknown fields are pruned; under preserve-unknown-fields they stay.
    let w = widgets
        .create(
            &PostParams::default(),
            &widget("p", json!({"color": "blue", "junk": 1, "extra": {"free": "form"}})),
        )
        .await
        .expect("create");
    assert!(w.data["spec"].get("junk").is_none());
    assert_eq!(w.data["spec"]["extra"]["free"], "form");
}

#[tokio::test(flavor = "multi_thread")]
async fn server_side_apply_of_an_empty_map_keeps_it_and_a_pruned_one_is_an_invalid_null() {
    let (_sim, client) = start().await;
    let widgets = install_widgets(&client).await;
    let ssa = PatchParams::apply("m").force();
    let cfg = |name: &str, labels: serde_json::Value, extra: serde_json::Value| {
        json!({"apiVersion": "example.com/v1", "kind": "Widget",
               "metadata": {"name": name, "labels": labels}, "spec": {"color": "red", "extra": extra}})
    };
    // Created as `{}` and owned as a leaf, labels too; but metadata is Go's `ObjectMeta`,
    // whose empty collections are omitted, so the labels read back as absent.
    let w = widgets.patch("e", &ssa, &Patch::Apply(cfg("e", json!({}), json!({})))).await.expect("apply");
    assert_eq!((&w.data["spec"]["extra"], &w.metadata.labels), (&json!({}), &None));
    let owned = w.metadata.managed_fields.as_deref().and_then(|m| m[0].fields_v1.clone()).expect("fields");
    assert_eq!(owned.0["f:spec"]["f:extra"], json!({}));
    assert_eq!(owned.0["f:metadata"]["f:labels"], json!({}));
    // The same when an apply takes away the last label: no `labels: {}` is left behind.
    widgets.patch("g", &ssa, &Patch::Apply(cfg("g", json!({"k": "v"}), json!({})))).await.expect("apply");
    let w = widgets
        .patch(
            "g",
            &ssa,
            &Patch::Apply(json!({"apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": "g"}, "spec": {"color": "red"}})),
        )
        .await
        .expect("apply");
    assert_eq!(w.metadata.labels, None);

    // Applying `extra: {}` over what the manager applied inside it empties the map, and
    // the real server validates the null its pruning leaves (a non-nullable object).
    widgets.patch("f", &ssa, &Patch::Apply(cfg("f", json!({}), json!({"free": "x"})))).await.expect("apply");
    let err = api_err(widgets.patch("f", &ssa, &Patch::Apply(cfg("f", json!({}), json!({})))).await);
    assert_eq!((err.code, err.reason.as_str()), (422, "Invalid"));
    assert_eq!(
        err.message,
        r#"Widget.example.com "f" is invalid: spec.extra: Invalid value: "null": spec.extra in body must be of type object: "null""#
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn status_subresource_and_generation_rules() {
    let (_sim, client) = start().await;
    let widgets = install_widgets(&client).await;
    let mut w = widget("s", json!({"color": "red"}));
    w.data["status"] = json!({"phase": "Sneaky"});
    let created = widgets.create(&PostParams::default(), &w).await.expect("create");
    assert!(created.data.get("status").is_none(), "status is dropped on create");
    let st = widgets
        .patch_status(
            "s",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"phase": "Ready", "observedGeneration": 1}})),
        )
        .await
        .expect("status patch");
    assert_eq!(st.data["status"]["phase"], "Ready");
    assert_eq!(st.metadata.generation, Some(1), "status writes do not bump generation");
    // A spec write ignores status and bumps generation.
    let sp = widgets
        .patch(
            "s",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"size": 5}, "status": {"phase": "Overwritten"}})),
        )
        .await
        .expect("spec patch");
    assert_eq!(sp.data["status"]["phase"], "Ready");
    assert_eq!(sp.metadata.generation, Some(2));
    // A metadata-only write does not bump generation.
    let md = widgets
        .patch("s", &PatchParams::default(), &Patch::Merge(json!({"metadata": {"labels": {"x": "y"}}})))
        .await
        .expect("label patch");
    assert_eq!(md.metadata.generation, Some(2));
}

#[derive(Debug, thiserror::Error)]
#[error("never")]
struct Never;

#[tokio::test(flavor = "multi_thread")]
async fn kube_runtime_finalizer_helper_runs_cleanup() {
    use kube::runtime::controller::Action;
    use kube::runtime::finalizer::{Event, finalizer};
    let (_sim, client) = start().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    api.create(&PostParams::default(), &cm("f", &[])).await.expect("create");
    let cleaned = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let run = |obj: Arc<ConfigMap>| {
        let api = api.clone();
        let cleaned = cleaned.clone();
        async move {
            finalizer(&api, "example.com/cleanup", obj, |ev| async move {
                if let Event::Cleanup(_) = ev {
                    cleaned.store(true, std::sync::atomic::Ordering::SeqCst);
                }
                Ok::<_, Never>(Action::await_change())
            })
            .await
        }
    };
    // First pass adds the finalizer (JSON patch with `test` against null).
    run(Arc::new(api.get("f").await.expect("get"))).await.expect("add finalizer");
    let with = api.get("f").await.expect("get");
    assert_eq!(with.finalizers(), ["example.com/cleanup"]);
    // Deleting leaves it pending with a deletionTimestamp.
    let pending = api.delete("f", &DeleteParams::default()).await.expect("delete");
    assert!(pending.is_left(), "pending deletion returns the object");
    let deleting = api.get("f").await.expect("still there");
    assert!(deleting.metadata.deletion_timestamp.is_some());
    // Adding a new finalizer while deleting is refused.
    let err = api_err(
        api.patch(
            "f",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": ["example.com/cleanup", "late"]}})),
        )
        .await,
    );
    assert_eq!(err.code, 422);
    assert!(
        err.message.contains("no new finalizers can be added if the object is being deleted"),
        "{}",
        err.message
    );
    // Cleanup then removes the finalizer (JSON patch `test` + `remove`) and the object goes.
    run(Arc::new(deleting)).await.expect("cleanup");
    assert!(cleaned.load(std::sync::atomic::Ordering::SeqCst));
    assert_eq!(api_err(api.get("f").await).code, 404);
}

fn owned_cm(name: &str, owner: &ConfigMap, block: bool) -> ConfigMap {
    let mut c = cm(name, &[]);
    c.metadata.owner_references =
        Some(vec![k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            name: owner.name_any(),
            uid: owner.uid().expect("uid"),
            block_owner_deletion: Some(block),
            controller: Some(true),
        }]);
    c
}

#[tokio::test(flavor = "multi_thread")]
async fn garbage_collection_in_all_three_modes() {
    let (_sim, client) = start().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    let pp = PostParams::default();

    // Background: the owner goes at once, the child follows.
    let owner = api.create(&pp, &cm("bg-owner", &[])).await.expect("owner");
    api.create(&pp, &owned_cm("bg-child", &owner, false)).await.expect("child");
    api.delete("bg-owner", &DeleteParams::background()).await.expect("delete");
    let a = api.clone();
    eventually(5, "background child collected", || {
        let a = a.clone();
        async move { a.get_opt("bg-child").await.expect("get").is_none().then_some(()) }
    })
    .await;

    // Foreground: the owner waits, with the foregroundDeletion finalizer, for blocking children.
    let owner = api.create(&pp, &cm("fg-owner", &[])).await.expect("owner");
    let mut child = owned_cm("fg-child", &owner, true);
    child.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    api.create(&pp, &child).await.expect("child");
    api.delete("fg-owner", &DeleteParams::foreground()).await.expect("delete");
    let o = api.get("fg-owner").await.expect("owner waits");
    assert!(o.metadata.deletion_timestamp.is_some());
    assert!(o.finalizers().contains(&"foregroundDeletion".to_owned()));
    let a = api.clone();
    eventually(5, "child marked for deletion", || {
        let a = a.clone();
        async move { a.get("fg-child").await.ok().and_then(|c| c.metadata.deletion_timestamp).map(|_| ()) }
    })
    .await;
    assert!(api.get_opt("fg-owner").await.expect("get").is_some(), "owner still blocked by the child");
    api.patch("fg-child", &PatchParams::default(), &Patch::Merge(json!({"metadata": {"finalizers": null}})))
        .await
        .expect("release child");
    let a = api.clone();
    eventually(5, "owner removed after its blocking child", || {
        let a = a.clone();
        async move { a.get_opt("fg-owner").await.expect("get").is_none().then_some(()) }
    })
    .await;

    // Orphan: the child stays, without the owner reference.
    let owner = api.create(&pp, &cm("or-owner", &[])).await.expect("owner");
    api.create(&pp, &owned_cm("or-child", &owner, true)).await.expect("child");
    let dp = DeleteParams { propagation_policy: Some(PropagationPolicy::Orphan), ..DeleteParams::default() };
    api.delete("or-owner", &dp).await.expect("delete");
    let a = api.clone();
    eventually(5, "owner gone", || {
        let a = a.clone();
        async move { a.get_opt("or-owner").await.expect("get").is_none().then_some(()) }
    })
    .await;
    let child = api.get("or-child").await.expect("orphan survives");
    assert!(child.metadata.owner_references.unwrap_or_default().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn namespace_termination_deletes_contents() {
    let (_sim, client) = start().await;
    let nss: Api<Namespace> = Api::all(client.clone());
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": "doomed"}})).expect("ns");
    let created = nss.create(&PostParams::default(), &ns).await.expect("create ns");
    assert_eq!(created.status.and_then(|s| s.phase).as_deref(), Some("Active"));
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "doomed");
    let mut held = cm("held", &[]);
    held.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    cms.create(&PostParams::default(), &held).await.expect("create");
    nss.delete("doomed", &DeleteParams::default()).await.expect("delete ns");
    let t = nss.get("doomed").await.expect("terminating");
    assert_eq!(t.status.and_then(|s| s.phase).as_deref(), Some("Terminating"));
    let refused = api_err(cms.create(&PostParams::default(), &cm("late", &[])).await);
    assert_eq!(refused.code, 403);
    assert!(refused.message.contains("because it is being terminated"), "{}", refused.message);
    cms.patch("held", &PatchParams::default(), &Patch::Merge(json!({"metadata": {"finalizers": null}})))
        .await
        .expect("release");
    let n = nss.clone();
    eventually(5, "namespace removed", || {
        let n = n.clone();
        async move { n.get_opt("doomed").await.expect("get").is_none().then_some(()) }
    })
    .await;
    let missing = api_err(cms.create(&PostParams::default(), &cm("x", &[])).await);
    assert_eq!((missing.code, missing.message.as_str()), (404, "namespaces \"doomed\" not found"));
}

#[tokio::test(flavor = "multi_thread")]
async fn events_recorder_is_readable_as_core_events() {
    use k8s_openapi::api::core::v1::{Event as CoreEvent, ObjectReference};
    use kube::runtime::events::{Event, EventType, Recorder, Reporter};
    let (_sim, client) = start().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let target = api.create(&PostParams::default(), &cm("ev", &[])).await.expect("create");
    let recorder = Recorder::new(
        client.clone(),
        Reporter { controller: "ctop-test".into(), instance: Some("pod-1".into()) },
    );
    let reference = ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("ConfigMap".into()),
        name: Some("ev".into()),
        namespace: Some("default".into()),
        uid: target.uid(),
        ..Default::default()
    };
    let ev = Event {
        type_: EventType::Normal,
        reason: "Created".into(),
        note: Some("hello".into()),
        action: "Create".into(),
        secondary: None,
    };
    recorder.publish(&ev, &reference).await.expect("publish");
    let core: Api<CoreEvent> = Api::default_namespaced(client);
    let events = core.list(&ListParams::default().fields("involvedObject.name=ev")).await.expect("list");
    assert_eq!(events.items.len(), 1);
    assert_eq!(events.items[0].message.as_deref(), Some("hello"));
    assert_eq!(events.items[0].reason.as_deref(), Some("Created"));
}

#[tokio::test(flavor = "multi_thread")]
async fn injected_faults_fail_then_recover() {
    let (sim, client) = start().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    sim.faults().fail("create", "configmaps", 500, 1);
    let err = api_err(api.create(&PostParams::default(), &cm("f", &[])).await);
    assert_eq!(err.code, 500);
    api.create(&PostParams::default(), &cm("f", &[])).await.expect("second try succeeds");
    // Only server-side apply fails; a merge patch of the same object goes through.
    sim.faults().fail("apply", "configmaps", 500, 1);
    let apply = Patch::Apply(json!({"apiVersion": "v1", "kind": "ConfigMap"}));
    assert_eq!(api_err(api.patch("f", &PatchParams::apply("x"), &apply).await).code, 500);
    api.patch("f", &PatchParams::apply("x"), &apply).await.expect("the fault was used up");
    // kube-rs retries 429 (with Retry-After) by itself: two throttled answers are absorbed.
    sim.faults().fail("get", "configmaps", 429, 2);
    api.get("f").await.expect("retried through the throttling");
    assert!(sim.faults().rules().is_empty(), "both throttled answers were served");
}

#[tokio::test(flavor = "multi_thread")]
async fn raw_watch_events_bookmarks_deleted_rv_and_timeout() {
    let config = Config { bookmark_interval: Duration::from_millis(100), ..Config::default() };
    let (_sim, client) = start_with(config).await;
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    let start_rv =
        api.list_metadata(&ListParams::default()).await.expect("list").metadata.resource_version.expect("rv");
    let wp = kube::api::WatchParams::default().timeout(1);
    let started = std::time::Instant::now();
    let mut stream = api.watch(&wp, &start_rv).await.expect("watch").boxed();
    let created = api.create(&PostParams::default(), &cm("w", &[])).await.expect("create");
    api.patch("w", &PatchParams::default(), &Patch::Merge(json!({"data": {"k": "v"}}))).await.expect("patch");
    api.delete("w", &DeleteParams::default()).await.expect("delete");
    let mut kinds = Vec::new();
    let mut rvs = Vec::new();
    let mut bookmarks = 0;
    while let Some(ev) = stream.try_next().await.expect("event") {
        match ev {
            kube::api::WatchEvent::Added(o) => {
                kinds.push("ADDED");
                rvs.push(o.resource_version().expect("rv"));
            }
            kube::api::WatchEvent::Modified(o) => {
                kinds.push("MODIFIED");
                rvs.push(o.resource_version().expect("rv"));
            }
            kube::api::WatchEvent::Deleted(o) => {
                kinds.push("DELETED");
                rvs.push(o.resource_version().expect("rv"));
            }
            kube::api::WatchEvent::Bookmark(_) => bookmarks += 1,
            kube::api::WatchEvent::Error(e) => panic!("unexpected error event {e:?}"),
        }
    }
    // The server closed the stream at timeoutSeconds.
    assert!(started.elapsed() >= Duration::from_millis(900), "closed early: {:?}", started.elapsed());
    assert_eq!(kinds, ["ADDED", "MODIFIED", "DELETED"]);
    let nums: Vec<u64> = rvs.iter().map(|r| r.parse().expect("numeric")).collect();
    assert!(nums.windows(2).all(|w| w[0] < w[1]), "{nums:?}");
    assert_eq!(rvs[0], created.resource_version().expect("rv"));
    assert!(bookmarks >= 1, "bookmarks were allowed and due");
}

#[tokio::test(flavor = "multi_thread")]
async fn delete_preconditions_are_checked() {
    let (_sim, client) = start().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    let o = api.create(&PostParams::default(), &cm("pc", &[])).await.expect("create");
    let wrong_uid = DeleteParams {
        preconditions: Some(kube::api::Preconditions { uid: Some("not-it".into()), resource_version: None }),
        ..DeleteParams::default()
    };
    let err = api_err(api.delete("pc", &wrong_uid).await);
    assert_eq!((err.code, err.reason.as_str()), (409, "Conflict"));
    assert!(err.message.contains("Precondition failed: UID in precondition: not-it"), "{}", err.message);
    let stale = DeleteParams {
        preconditions: Some(kube::api::Preconditions { uid: None, resource_version: Some("1".into()) }),
        ..DeleteParams::default()
    };
    assert_eq!(api_err(api.delete("pc", &stale).await).code, 409);
    let right = DeleteParams {
        preconditions: Some(kube::api::Preconditions {
            uid: o.uid(),
            resource_version: o.resource_version(),
        }),
        ..DeleteParams::default()
    };
    api.delete("pc", &right).await.expect("matching preconditions delete");
}

#[tokio::test(flavor = "multi_thread")]
async fn secret_string_data_is_stored_as_data() {
    use k8s_openapi::api::core::v1::Secret;
    let (_sim, client) = start().await;
    let api: Api<Secret> = Api::default_namespaced(client);
    let s: Secret =
        serde_json::from_value(json!({"metadata": {"name": "tok"}, "stringData": {"token": "s3cret"}}))
            .expect("secret");
    let stored = api.create(&PostParams::default(), &s).await.expect("create");
    assert!(stored.string_data.is_none(), "stringData is write-only");
    assert_eq!(stored.data.expect("data")["token"].0, b"s3cret");
    assert_eq!(stored.type_.as_deref(), Some("Opaque"));
}

#[tokio::test(flavor = "multi_thread")]
async fn injected_latency_and_health_endpoints() {
    let (sim, client) = start().await;
    let version = client.apiserver_version().await.expect("/version");
    assert_eq!((version.major.as_str(), version.minor.as_str()), ("1", "33"));
    let req = http::Request::get("/healthz").body(Vec::new()).expect("request");
    assert_eq!(client.request_text(req).await.expect("/healthz"), "ok");
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    api.create(&PostParams::default(), &cm("slow", &[])).await.expect("create");
    sim.faults().delay("get", "configmaps", Duration::from_millis(300));
    let t = std::time::Instant::now();
    api.get("slow").await.expect("served after the delay");
    assert!(t.elapsed() >= Duration::from_millis(300), "{:?}", t.elapsed());
    sim.faults().clear();
}

#[tokio::test(flavor = "multi_thread")]
async fn request_stats_count_by_client_and_verb_and_reset() {
    let (sim, client) = start().await;
    let stats = |method: &str| {
        http::Request::builder().method(method).uri("/kubesim/stats").body(Vec::new()).expect("request")
    };
    client.request::<serde_json::Value>(stats("DELETE")).await.expect("reset");
    let api: Api<ConfigMap> = Api::default_namespaced(client.clone());
    api.create(&PostParams::default(), &cm("s", &[])).await.expect("create");
    api.get("s").await.expect("get");
    api.get("s").await.expect("get again");
    let apply = Patch::Apply(json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"k": "v"}}));
    api.patch("s", &PatchParams::apply("x"), &apply).await.expect("apply");
    // A second client that names itself is counted apart.
    let kc = kube::config::Kubeconfig::from_yaml(&sim.kubeconfig()).expect("kubeconfig parses");
    let mut config = kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
        .await
        .expect("kubeconfig loads");
    config.headers.push((http::header::USER_AGENT, http::HeaderValue::from_static("bench-driver")));
    let named = Client::try_from(config).expect("client");
    Api::<ConfigMap>::default_namespaced(named).list(&ListParams::default()).await.expect("list");
    let mut counted: serde_json::Value = client.request(stats("GET")).await.expect("stats");
    // The store's latest resourceVersion comes with the counts.
    let rv = counted.as_object_mut().and_then(|m| m.remove("resourceVersion"));
    assert_eq!(rv, Some(json!(sim.resource_version())));
    assert_eq!(
        counted,
        json!({"total": 5, "clients": {
            "-": {"total": 4, "requests": {"create configmaps": 1, "get configmaps": 2, "apply configmaps": 1}},
            "bench-driver": {"total": 1, "requests": {"list configmaps": 1}},
        }})
    );
    let reset: serde_json::Value = client.request(stats("DELETE")).await.expect("reset");
    assert_eq!(reset, json!({"total": 0, "clients": {}, "resourceVersion": sim.resource_version()}));
}

/// What typed clients read back as a real API server writes it: the deleted object for the
/// kinds whose storage returns it (a `Status` without `group` for core kinds otherwise),
/// and an empty status struct on objects created without one.
#[tokio::test]
async fn delete_answers_and_empty_statuses_are_the_api_servers() {
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::{ConfigMap, Service};
    use kube::api::{DeleteParams, PostParams};

    let (_sim, client) = common::start().await;
    let services: kube::Api<Service> = kube::Api::namespaced(client.clone(), "default");
    let svc: Service = serde_json::from_value(
        serde_json::json!({"metadata": {"name": "s"}, "spec": {"ports": [{"port": 80}]}}),
    )
    .expect("a Service");
    let created = services.create(&PostParams::default(), &svc).await.expect("created");
    let raw = serde_json::to_value(&created).expect("json");
    assert_eq!(raw["status"], serde_json::json!({"loadBalancer": {}}));
    let deleted = services.delete("s", &DeleteParams::default()).await.expect("deleted");
    assert!(
        deleted.left().is_some_and(|s| s.metadata.name.as_deref() == Some("s")),
        "a Service DELETE returns it"
    );

    let maps: kube::Api<ConfigMap> = kube::Api::namespaced(client.clone(), "default");
    let cm: ConfigMap =
        serde_json::from_value(serde_json::json!({"metadata": {"name": "c"}})).expect("a ConfigMap");
    maps.create(&PostParams::default(), &cm).await.expect("created");
    let status =
        maps.delete("c", &DeleteParams::default()).await.expect("deleted").right().expect("a Status");
    let details = serde_json::to_value(status.details).expect("json");
    assert_eq!(details["kind"], "configmaps");
    assert!(details.get("group").is_none_or(|g| g.is_null()), "{details}");

    let deployments: kube::Api<Deployment> = kube::Api::namespaced(client.clone(), "default");
    let d: Deployment = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "d"},
        "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {"metadata": {"labels": {"a": "b"}},
            "spec": {"containers": [{"name": "c", "image": "i"}]}}},
    }))
    .expect("a Deployment");
    let d = deployments.create(&PostParams::default(), &d).await.expect("created");
    assert!(d.status.is_some(), "an empty status struct, as on a cluster");
    let spec = d.spec.expect("spec");
    assert_eq!((spec.revision_history_limit, spec.progress_deadline_seconds), (Some(10), Some(600)));
}

/// A client that ends its TLS session in the middle of a watch gets the server's own
/// `close_notify` back, as from Go's server (not a bare FIN, which some clients keep
/// waiting on).
#[tokio::test]
async fn a_watch_closed_by_the_client_ends_with_the_servers_close_notify() {
    use rustls::pki_types::pem::PemObject as _;
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    let sim = ctop_kubesim::KubeSim::start(Config::default()).await.expect("kubesim starts");
    let mut roots = rustls::RootCertStore::empty();
    let ca = sim.ca_pem().expect("TLS is on");
    for cert in rustls::pki_types::CertificateDer::pem_slice_iter(ca.as_bytes()) {
        roots.add(cert.expect("a certificate")).expect("a root");
    }
    let config =
        rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .expect("TLS versions")
            .with_root_certificates(roots)
            .with_no_client_auth();
    let tcp = tokio::net::TcpStream::connect(sim.addr()).await.expect("connects");
    let name = rustls::pki_types::ServerName::try_from("localhost").expect("a name");
    let mut tls =
        tokio_rustls::TlsConnector::from(Arc::new(config)).connect(name, tcp).await.expect("handshake");
    let request = format!(
        "GET /api/v1/namespaces?watch=true HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {}\r\n\r\n",
        sim.admin_token()
    );
    tls.write_all(request.as_bytes()).await.expect("request sent");
    let mut head = vec![0u8; 4096];
    let n = tls.read(&mut head).await.expect("the watch answers");
    assert!(
        String::from_utf8_lossy(&head[..n]).starts_with("HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&head[..n])
    );
    // Our close_notify (and FIN); then read what the server sends until it is done.
    tls.shutdown().await.expect("close_notify sent");
    let mut rest = Vec::new();
    let end = tokio::time::timeout(Duration::from_secs(5), tls.read_to_end(&mut rest))
        .await
        .expect("the server closes");
    // rustls reports a close without close_notify as an UnexpectedEof error.
    assert!(end.is_ok(), "the server closed without close_notify: {end:?}");
}

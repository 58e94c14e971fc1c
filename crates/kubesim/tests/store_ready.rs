//! `reflector::Store::wait_until_ready` against kubesim.
//!
//! kubesim's list/watch protocol is enough for kube-runtime's watcher to reach `InitDone`:
//! typed and dynamic (CRD) kinds, empty and non-empty collections, paged lists, and a CRD
//! created just before all make the store ready at once.
//!
//! Note for users of these stores: in kube-runtime 5 the readiness is a `DelayedInit` over a
//! `futures` oneshot whose receiver keeps a single waker, so of two tasks waiting on one store
//! only the one that polled last is woken. `ctop run` therefore learns that caches synced from
//! the watchers' `InitDone` events instead of waiting on the controller's store.
//!
//! The waits below race a `biased` sleep rather than use `tokio::time::timeout`: `timeout`
//! polls the inner future once more when the deadline fires, which hides a lost wakeup.

mod common;

use std::time::Duration;

use common::{start, widget_crd};
use futures::{Stream, StreamExt as _};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, PostParams};
use kube::discovery::pinned_kind;
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt as _, watcher};
use kube::{Client, Resource};
use serde_json::json;

const READY_WITHIN: Duration = Duration::from_secs(5);

/// `fut`'s output if it completes within `within` through its own wakeups.
async fn woken_within<T>(within: Duration, fut: impl Future<Output = T>) -> Option<T> {
    tokio::select! {
        biased;
        () = tokio::time::sleep(within) => None,
        v = fut => Some(v),
    }
}

async fn assert_ready<K>(what: &str, store: &Store<K>)
where
    K: Resource + Clone + 'static,
    K::DynamicType: Eq + std::hash::Hash + Clone,
{
    woken_within(READY_WITHIN, store.wait_until_ready())
        .await
        .unwrap_or_else(|| panic!("{what}: store not ready within {READY_WITHIN:?}"))
        .unwrap_or_else(|e| panic!("{what}: {e}"));
}

/// Create the widgets CRD and resolve it through discovery at once (no wait for
/// `Established`), as `ctop run --install-crds` followed by `resolve` does.
async fn widgets_just_created(client: &Client) -> ApiResource {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd: CustomResourceDefinition = serde_json::from_value(widget_crd()).expect("crd");
    crds.create(&PostParams::default(), &crd).await.expect("crd created");
    let gvk = GroupVersionKind::gvk("example.com", "v1", "Widget");
    let (ar, _caps) = pinned_kind(client, &gvk).await.expect("widgets discoverable right after create");
    ar
}

fn widget(name: &str) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": name}, "spec": {"color": "red"},
    }))
    .expect("widget")
}

fn cm(name: &str) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name}})).expect("configmap")
}

fn drive<S: Stream + Send + 'static>(s: S) -> tokio::task::JoinHandle<()> {
    tokio::spawn(s.for_each(|_| async {}))
}

/// A dynamic reflector built like controller.rs builds its child caches.
fn dynamic_reflector(
    api: Api<DynamicObject>,
    ar: &ApiResource,
) -> (
    Store<DynamicObject>,
    impl Stream<Item = Result<watcher::Event<DynamicObject>, watcher::Error>> + Send + 'static,
) {
    let writer = reflector::store::Writer::<DynamicObject>::new(ar.clone());
    let store = writer.as_reader();
    (store, watcher(api, watcher::Config::default()).default_backoff().reflect(writer))
}

#[tokio::test(flavor = "multi_thread")]
async fn typed_store_ready_empty_and_non_empty() {
    let (_sim, client) = start().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let (empty, writer) = reflector::store();
    // Every watcher here backs off: one without backoff retries a failing request at once,
    // never yields, and so cannot be aborted, which hung the runtime's shutdown at the end of
    // the test once its client had already been dropped.
    let t1 = drive(watcher(api.clone(), watcher::Config::default()).default_backoff().reflect(writer));
    assert_ready("typed, empty", &empty).await;
    assert!(empty.state().is_empty());

    for n in ["a", "b", "c"] {
        api.create(&PostParams::default(), &cm(n)).await.expect("create");
    }
    let (full, writer) = reflector::store();
    let t2 = drive(watcher(api, watcher::Config::default().page_size(2)).default_backoff().reflect(writer));
    assert_ready("typed, non-empty, paged by 2", &full).await;
    assert_eq!(full.state().len(), 3);
    t1.abort();
    t2.abort();
}

#[tokio::test(flavor = "multi_thread")]
async fn dynamic_crd_store_ready_empty_and_non_empty() {
    let (_sim, client) = start().await;
    let ar = widgets_just_created(&client).await;

    let (empty, s) = dynamic_reflector(Api::all_with(client.clone(), &ar), &ar);
    let t1 = drive(s);
    assert_ready("CRD just created, empty", &empty).await;
    assert!(empty.state().is_empty());

    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &ar);
    for n in ["w1", "w2"] {
        api.create(&PostParams::default(), &widget(n)).await.expect("create widget");
    }
    let (full, s) = dynamic_reflector(Api::namespaced_with(client.clone(), "default", &ar), &ar);
    let t2 = drive(s);
    assert_ready("CRD, non-empty", &full).await;
    assert_eq!(full.state().len(), 2);
    common::eventually(5, "the first reflector follows the watch", || {
        let n = empty.state().len();
        async move { (n == 2).then_some(()) }
    })
    .await;

    let cm_ar = ApiResource::erase::<ConfigMap>(&());
    let (cms, s) = dynamic_reflector(Api::all_with(client, &cm_ar), &cm_ar);
    let t3 = drive(s);
    assert_ready("dynamic core kind, empty", &cms).await;
    t1.abort();
    t2.abort();
    t3.abort();
}

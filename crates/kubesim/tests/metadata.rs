//! `PartialObjectMetadata` over HTTP, driven by kube-rs's metadata API: a get, a list and a
//! watch answer with each object's metadata alone when the `Accept` header asks for
//! `as=PartialObjectMetadata` (`as=PartialObjectMetadataList` for a list), and a request
//! that names the wrong one, or a transform the server does not know, gets the API
//! server's 406.

mod common;

use std::collections::BTreeMap;

use common::{api_err, start, widget_crd};
use futures::{StreamExt as _, TryStreamExt as _};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ListParams, PartialObjectMeta, PostParams, WatchEvent, WatchParams};
use kube::runtime::{WatchStreamExt as _, watcher};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};

fn cm(name: &str) -> ConfigMap {
    ConfigMap {
        metadata: kube::api::ObjectMeta {
            name: Some(name.into()),
            labels: Some(BTreeMap::from([("app".to_owned(), name.to_owned())])),
            ..Default::default()
        },
        data: Some(BTreeMap::from([("big".to_owned(), "x".repeat(1024))])),
        ..Default::default()
    }
}

/// The JSON (or the API error) of a GET of `path` with `accept`.
async fn get(client: &Client, path: &str, accept: &str) -> Result<Value, kube::Error> {
    let req =
        http::Request::get(path).header(http::header::ACCEPT, accept).body(Vec::new()).expect("request");
    let text = client.request_text(req).await?;
    Ok(serde_json::from_str(&text).expect("JSON"))
}

const ONE: &str = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";
const LIST: &str = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";

#[tokio::test(flavor = "multi_thread")]
async fn get_list_and_watch_answer_with_metadata_alone() {
    let (_sim, client) = start().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let created = cms.create(&PostParams::default(), &cm("a")).await.expect("created");

    // kube-rs's metadata calls (its Accept headers: one object, then a list).
    let one = cms.get_metadata("a").await.expect("get_metadata");
    let types = one.types.as_ref().expect("typed");
    assert_eq!(
        (types.api_version.as_str(), types.kind.as_str()),
        ("meta.k8s.io/v1", "PartialObjectMetadata")
    );
    assert_eq!((one.name_any(), one.metadata.uid.clone()), ("a".to_owned(), created.metadata.uid.clone()));
    assert_eq!(one.labels().get("app").map(String::as_str), Some("a"));
    let list = cms.list_metadata(&ListParams::default()).await.expect("list_metadata");
    let names: Vec<String> = list.items.iter().map(ResourceExt::name_any).collect();
    assert!(names.contains(&"a".to_owned()), "{names:?}");
    assert!(list.metadata.resource_version.is_some());

    // On the wire: nothing but the metadata.
    let raw = get(&client, "/api/v1/namespaces/default/configmaps/a", ONE).await.expect("get");
    assert_eq!(
        raw.as_object().map(|o| o.keys().cloned().collect::<Vec<_>>()),
        Some(vec!["apiVersion".to_owned(), "kind".to_owned(), "metadata".to_owned()])
    );
    let raw = get(&client, "/api/v1/namespaces/default/configmaps", LIST).await.expect("list");
    assert_eq!(
        (raw["apiVersion"].as_str(), raw["kind"].as_str()),
        (Some("meta.k8s.io/v1"), Some("PartialObjectMetadataList"))
    );
    let item = raw["items"].as_array().and_then(|items| items.iter().find(|i| i["metadata"]["name"] == "a"));
    assert_eq!(
        item.map(|i| (i["kind"].clone(), i.get("data").is_none())),
        Some((json!("PartialObjectMetadata"), true))
    );
    // v1beta1 too, in its own apiVersion.
    let beta = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1beta1";
    let raw = get(&client, "/api/v1/namespaces/default/configmaps/a", beta).await.expect("get");
    assert_eq!(raw["apiVersion"], "meta.k8s.io/v1beta1");

    // A watch's events carry PartialObjectMetadata.
    let mut events = cms.watch_metadata(&WatchParams::default(), "0").await.expect("watch").boxed();
    cms.create(&PostParams::default(), &cm("b")).await.expect("created");
    let added = tokio::time::timeout(std::time::Duration::from_secs(10), async {
        while let Some(e) = events.try_next().await.expect("event") {
            if let WatchEvent::Added(p) = e
                && p.name_any() == "b"
            {
                return p;
            }
        }
        panic!("the watch ended");
    })
    .await
    .expect("b's ADDED in time");
    let types = added.types.as_ref().expect("typed");
    assert_eq!(types.kind, "PartialObjectMetadata");
    assert_eq!(added.labels().get("app").map(String::as_str), Some("b"));

    // kube-runtime's watcher over `Api<PartialObjectMeta<K>>` lists and watches the same way.
    let metas: Api<PartialObjectMeta<ConfigMap>> = Api::default_namespaced(client.clone());
    let seen: Vec<PartialObjectMeta<ConfigMap>> = watcher(metas, watcher::Config::default())
        .applied_objects()
        .take(2)
        .try_collect()
        .await
        .expect("two objects");
    let mut names: Vec<String> = seen.iter().map(ResourceExt::name_any).collect();
    names.sort();
    assert_eq!(names, ["a", "b"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_list_asked_for_as_one_object_or_the_other_way_round_is_not_acceptable() {
    let (_sim, client) = start().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(client.clone());
    cms.create(&PostParams::default(), &cm("a")).await.expect("created");

    let s = api_err(get(&client, "/api/v1/namespaces/default/configmaps/a", LIST).await);
    assert_eq!((s.code, s.reason.as_str()), (406, "NotAcceptable"));
    assert_eq!(
        s.message,
        "you requested PartialObjectMetadataList, but the requested object is not a list (*core.ConfigMap)"
    );
    let s = api_err(get(&client, "/api/v1/namespaces/default/configmaps", ONE).await);
    assert_eq!(
        s.message,
        "you requested PartialObjectMetadata, but the requested object is a list (*core.ConfigMapList)"
    );
    // A missing object is a 404 first.
    let s = api_err(get(&client, "/api/v1/namespaces/default/configmaps/missing", LIST).await);
    assert_eq!(s.code, 404);

    // A custom resource is unstructured on the server.
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd: CustomResourceDefinition = serde_json::from_value(widget_crd()).expect("crd");
    crds.create(&PostParams::default(), &crd).await.expect("crd created");
    let s = common::eventually(10, "the widgets are served", || async {
        match get(&client, "/apis/example.com/v1/namespaces/default/widgets", ONE).await {
            Err(kube::Error::Api(s)) if s.code == 406 => Some(s),
            _ => None,
        }
    })
    .await;
    assert_eq!(
        s.message,
        "you requested PartialObjectMetadata, but the requested object is a list (*unstructured.UnstructuredList)"
    );

    // An `as=` the server does not know, with nothing else acceptable.
    let s = api_err(
        get(
            &client,
            "/api/v1/namespaces/default/configmaps",
            "application/json;as=Something;g=meta.k8s.io;v=v1",
        )
        .await,
    );
    assert_eq!(
        (s.code, s.message.as_str()),
        (406, "only the following media types are accepted: application/json, application/yaml")
    );
}

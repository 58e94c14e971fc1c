//! The converter against a webhook on loopback: what it sends, what it accepts, and the
//! server's words for every answer it refuses.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use base64::Engine as _;
use serde_json::{Value, json};

use super::*;
use crate::api::webhook::test_server::{Ca, Handler, Log, ca, serve, server_tls};

const SVC: &str = "conv.webhooks.svc";

fn definition(ca: &Ca, review_versions: &[&str]) -> CrdDefinition {
    let bundle = base64::engine::general_purpose::STANDARD.encode(&ca.pem);
    CrdDefinition {
        group: "stable.example.com".into(),
        list_kind: "CronTabList".into(),
        storage_version: "v1".into(),
        versions: vec![("v1".into(), None), ("v2".into(), None)],
        conversion: Conversion::Webhook {
            client_config: json!({"service": {"namespace": "webhooks", "name": "conv", "path": "/convert", "port": 443}, "caBundle": bundle}),
            review_versions: review_versions.iter().map(|v| (*v).to_owned()).collect(),
        },
        unservable: false,
    }
}

fn crontab(name: &str, version: &str) -> Value {
    json!({
        "apiVersion": format!("stable.example.com/{version}"), "kind": "CronTab",
        "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}"), "resourceVersion": "7",
                     "generation": 1, "labels": {"app": "cron"}},
        "spec": {"schedule": "*/1 * * * *"},
    })
}

/// A webhook that gives every object the desired apiVersion and hands each to `edit`.
fn converting(edit: impl Fn(usize, &mut Value) + Send + Sync + 'static) -> Handler {
    Arc::new(move |review: &Value| {
        let request = &review["request"];
        let mut objects = request["objects"].as_array().cloned().unwrap_or_default();
        for (i, o) in objects.iter_mut().enumerate() {
            o["apiVersion"] = request["desiredAPIVersion"].clone();
            edit(i, o);
        }
        let response =
            json!({"uid": request["uid"], "convertedObjects": objects, "result": {"status": "Success"}});
        (200, json!({"apiVersion": review["apiVersion"], "kind": "ConversionReview", "response": response}))
    })
}

/// A webhook that answers `response` (with the request's uid) in a v1 review.
fn answering(response: Value) -> Handler {
    Arc::new(move |review: &Value| {
        let mut response = response.clone();
        response["uid"] = review["request"]["uid"].clone();
        (
            200,
            json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview", "response": response}),
        )
    })
}

async fn start(handler: Handler) -> (Ca, HashMap<String, String>, Log) {
    start_slow(handler, Duration::ZERO).await
}

async fn start_slow(handler: Handler, delay: Duration) -> (Ca, HashMap<String, String>, Log) {
    let ca = ca("conv-ca");
    let (port, log) = serve(server_tls(&ca, &[SVC], false), delay, handler).await;
    (ca, HashMap::from([("webhooks/conv".to_owned(), format!("127.0.0.1:{port}"))]), log)
}

fn converter<'a>(definition: &'a CrdDefinition, hosts: &'a HashMap<String, String>) -> Converter<'a> {
    Converter { definition, service_hosts: hosts, timeout: TIMEOUT }
}

#[tokio::test]
async fn one_object_goes_in_a_v1_review_and_keeps_its_metadata_but_labels() {
    let (ca, hosts, log) = start(converting(|_, o| {
        o["spec"]["schedule"] = json!({"minute": "*/1"});
        o["metadata"]["generation"] = json!(9);
        o["metadata"]["labels"] = json!({"converted": "yes"});
        o["metadata"]["annotations"] = json!({"note": "x"});
    }))
    .await;
    let def = definition(&ca, &["v2", "v1", "v1beta1"]);
    let out = converter(&def, &hosts).one(crontab("a", "v1"), "v2").await.unwrap();
    let mut expected = crontab("a", "v2");
    expected["spec"]["schedule"] = json!({"minute": "*/1"});
    expected["metadata"]["labels"] = json!({"converted": "yes"});
    expected["metadata"]["annotations"] = json!({"note": "x"});
    assert_eq!(out, expected);
    let seen = log.all();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].uri, "/convert?timeout=30s");
    assert_eq!(seen[0].host, "conv.webhooks.svc:443");
    let review = &seen[0].body;
    assert_eq!(review["apiVersion"], "apiextensions.k8s.io/v1");
    assert_eq!(review["kind"], "ConversionReview");
    assert_eq!(review["request"]["desiredAPIVersion"], "stable.example.com/v2");
    assert_eq!(review["request"]["objects"], json!([crontab("a", "v1")]));
    assert_eq!(review["response"], json!({"uid": "", "convertedObjects": null, "result": {"metadata": {}}}));
    // An object already in the version asked for is not sent.
    converter(&def, &hosts).one(crontab("b", "v2"), "v2").await.unwrap();
    assert_eq!(log.count(), 1);
}

#[tokio::test]
async fn a_list_sends_only_the_items_not_yet_converted_in_one_review() {
    let (ca, hosts, log) = start(converting(|i, o| o["spec"]["index"] = json!(i))).await;
    let def = definition(&ca, &["v1beta1", "v1"]);
    let items = vec![crontab("a", "v1"), crontab("b", "v2"), crontab("c", "v1")];
    let out = converter(&def, &hosts).list(items, "v2").await.unwrap();
    let names: Vec<(&str, &Value)> =
        out.iter().map(|o| (o["apiVersion"].as_str().unwrap(), &o["spec"]["index"])).collect();
    assert_eq!(
        names,
        [
            ("stable.example.com/v2", &json!(0)),
            ("stable.example.com/v2", &Value::Null),
            ("stable.example.com/v2", &json!(1))
        ]
    );
    let seen = log.all();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].body["apiVersion"], "apiextensions.k8s.io/v1beta1", "the first known review version");
    let sent: Vec<&str> = seen[0].body["request"]["objects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(sent, ["a", "c"]);
}

#[tokio::test]
async fn strategy_none_only_rewrites_the_api_version() {
    let def = CrdDefinition { conversion: Conversion::None, ..definition(&ca("x"), &["v1"]) };
    let hosts = HashMap::new();
    let out = converter(&def, &hosts).one(crontab("a", "v1"), "v2").await.unwrap();
    let mut expected = crontab("a", "v1");
    expected["apiVersion"] = json!("stable.example.com/v2");
    assert_eq!(out, expected);
}

async fn failure(handler: Handler, objects: Vec<Value>) -> String {
    let (ca, hosts, _) = start(handler).await;
    let def = definition(&ca, &["v1"]);
    let c = converter(&def, &hosts);
    match objects.len() {
        1 => c.one(objects.into_iter().next().unwrap(), "v2").await.unwrap_err().0,
        _ => c.list(objects, "v2").await.unwrap_err().0,
    }
}

#[tokio::test]
async fn failed_and_malformed_answers_fail_in_the_servers_words() {
    let one = || vec![crontab("a", "v1")];
    let prefix = "conversion webhook for stable.example.com/v1, Kind=CronTab";
    assert_eq!(
        failure(answering(json!({"result": {"status": "Failure", "message": "cannot convert a"}})), one())
            .await,
        format!("{prefix} failed: cannot convert a")
    );
    assert_eq!(
        failure(answering(json!({"result": {"status": "Failure"}})), one()).await,
        format!("{prefix} failed: response.result.status was 'Failure', not 'Success'")
    );
    assert_eq!(
        failure(
            Arc::new(|_: &Value| (
                200,
                json!({"apiVersion": "apiextensions.k8s.io/v1beta1", "kind": "ConversionReview"})
            )),
            one()
        )
        .await,
        format!(
            "{prefix} failed: expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, got apiextensions.k8s.io/v1beta1, Kind=ConversionReview"
        )
    );
    assert_eq!(
        failure(
            Arc::new(|_: &Value| (500, json!({"kind": "Status", "status": "Failure", "message": "boom"}))),
            one()
        )
        .await,
        format!("{prefix} failed: boom")
    );
    assert_eq!(
        failure(answering(json!({"convertedObjects": [], "result": {"status": "Success"}})), one()).await,
        format!("{prefix} returned 0 objects, expected 1")
    );
    assert_eq!(
        failure(converting(|_, o| o["apiVersion"] = json!("stable.example.com/v3")), one()).await,
        format!(
            "{prefix} returned invalid object at index 0: invalid groupVersion (expected stable.example.com/v2, received stable.example.com/v3)"
        )
    );
    assert_eq!(
        failure(converting(|_, o| o["kind"] = json!("Other")), one()).await,
        format!(
            "{prefix} returned invalid object at index 0: invalid kind (expected CronTab, received Other)"
        )
    );
    assert_eq!(
        failure(converting(|_, o| o["metadata"]["name"] = json!("b")), one()).await,
        format!("{prefix} returned invalid object: must have the same name: a != b")
    );
    assert_eq!(
        failure(converting(|_, o| o["metadata"]["uid"] = json!("x")), one()).await,
        format!("{prefix} returned invalid object: must have the same UID: uid-a != x")
    );
    assert_eq!(
        failure(converting(|_, o| o["metadata"]["labels"] = json!({"bad": "a b"})), one()).await,
        format!(
            "{prefix} returned invalid metadata: metadata.labels: Invalid value: \"a b\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
        )
    );
    assert_eq!(
        failure(converting(|_, o| o["metadata"]["labels"] = json!({"n": 1})), one()).await,
        format!(
            "{prefix} returned invalid metadata: metadata.labels[n] must be a string, but is int64 in converted object"
        )
    );
    assert_eq!(
        failure(converting(|_, o| drop(o.as_object_mut().unwrap().remove("metadata"))), one()).await,
        // validateConvertedObject comes first and finds no name.
        format!("{prefix} returned invalid object: must have the same name: a != ")
    );
    // A list names the list and the index of the object in the answer.
    let list = "conversion webhook for stable.example.com/v2, Kind=CronTabList";
    let two = || vec![crontab("a", "v2"), crontab("b", "v1"), crontab("c", "v1")];
    assert_eq!(
        failure(
            converting(|i, o| if i == 1 {
                o["kind"] = json!("Other")
            }),
            two()
        )
        .await,
        format!(
            "{list} returned invalid converted object at index 1: invalid kind (expected CronTab, received Other)"
        )
    );
    assert_eq!(
        failure(
            converting(|i, o| if i == 1 {
                o["metadata"]["namespace"] = json!("x")
            }),
            two()
        )
        .await,
        format!(
            "{list} returned invalid converted object at index 1: must have the same namespace: default != x"
        )
    );
    assert_eq!(
        failure(
            converting(|i, o| if i == 0 {
                o["metadata"]["labels"] = json!("x")
            }),
            two()
        )
        .await,
        format!(
            "{list} returned invalid metadata in object at index 0: invalid metadata.labels of type string in converted object"
        )
    );
    assert_eq!(
        failure(answering(json!({"convertedObjects": [{}], "result": {"status": "Success"}})), two()).await,
        format!("{list} returned 1 objects, expected 2")
    );
}

#[tokio::test]
async fn an_answer_to_another_request_is_refused() {
    let other: Handler = Arc::new(|_: &Value| {
        let response = json!({"uid": "other", "result": {"status": "Success"}});
        (
            200,
            json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview", "response": response}),
        )
    });
    let (ca, hosts, log) = start(other).await;
    let def = definition(&ca, &["v1"]);
    let err = converter(&def, &hosts).one(crontab("a", "v1"), "v2").await.unwrap_err().0;
    let uid = log.all()[0].body["request"]["uid"].as_str().unwrap().to_owned();
    assert_eq!(
        err,
        format!(
            "conversion webhook for stable.example.com/v1, Kind=CronTab failed: expected response.uid=\"{uid}\", got \"other\""
        )
    );
}

#[tokio::test]
async fn a_v1beta1_answer_is_not_checked_for_kind_or_uid() {
    let handler: Handler = Arc::new(|review: &Value| {
        let mut o = review["request"]["objects"][0].clone();
        o["apiVersion"] = review["request"]["desiredAPIVersion"].clone();
        (
            200,
            json!({"response": {"uid": "whatever", "convertedObjects": [o], "result": {"status": "Success"}}}),
        )
    });
    let (ca, hosts, _) = start(handler).await;
    let def = definition(&ca, &["v1beta1"]);
    let out = converter(&def, &hosts).one(crontab("a", "v1"), "v2").await.unwrap();
    assert_eq!(out["apiVersion"], "stable.example.com/v2");
}

#[tokio::test]
async fn an_unreachable_or_slow_webhook_fails_the_conversion() {
    let ca = ca("conv-ca");
    let def = definition(&ca, &["v1"]);
    let dead = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = dead.local_addr().unwrap().port();
    drop(dead);
    let hosts = HashMap::from([("webhooks/conv".to_owned(), format!("127.0.0.1:{port}"))]);
    assert_eq!(
        converter(&def, &hosts).one(crontab("a", "v1"), "v2").await.unwrap_err().0,
        format!(
            "conversion webhook for stable.example.com/v1, Kind=CronTab failed: Post \"https://conv.webhooks.svc:443/convert?timeout=30s\": dial tcp 127.0.0.1:{port}: connect: connection refused"
        )
    );
    let (ca, hosts, log) = start_slow(converting(|_, _| {}), Duration::from_secs(5)).await;
    let def = definition(&ca, &["v1"]);
    let quick = Converter { timeout: Duration::from_millis(300), ..converter(&def, &hosts) };
    assert_eq!(
        quick.one(crontab("a", "v1"), "v2").await.unwrap_err().0,
        "conversion webhook for stable.example.com/v1, Kind=CronTab failed: Post \"https://conv.webhooks.svc:443/convert?timeout=1s\": context deadline exceeded"
    );
    assert_eq!(log.count(), 1);
}

#[test]
fn errors_answer_like_the_server() {
    let e = ConversionError("conversion webhook for x failed: y".into());
    let status = serde_json::from_slice::<Value>(&e.api_error().to_status_bytes()).unwrap();
    assert_eq!(
        status,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": "conversion webhook for x failed: y", "code": 500})
    );
    assert_eq!(e.watch_status()["message"], "Internal error occurred: conversion webhook for x failed: y");
    assert_eq!(
        e.watch_status()["details"],
        json!({"causes": [{"message": "conversion webhook for x failed: y"}]})
    );
}

//! Custom resources in several versions, driven by kube-rs: a conversion webhook written
//! here (HTTPS on loopback) turns CronTab v1's `spec.schedule: "*/1 * * * *"` into v2's
//! `spec.schedule: {minute: "*/1", hour: "*", ...}` and back; kubesim calls it on reads and
//! writes in a version other than the stored one, batches lists, keeps each object in the
//! storage version it was written in, keeps `status.storedVersions`, warns on deprecated
//! versions, and answers every failure of the webhook as the API server does.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::routing::post;
use base64::Engine as _;
use common::{api_err, eventually, start};
use ctop_kubesim::{KubeSim, ServingCert, TlsListener};
use futures::{StreamExt as _, TryStreamExt as _};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams, PostParams,
    WatchEvent, WatchParams,
};
use kube::runtime::wait::{await_condition, conditions};
use kube::{Client, ResourceExt as _};
use serde_json::{Value, json};

/// How the test webhook answers.
#[derive(Clone, Debug)]
enum Mode {
    /// Converts every object.
    Convert,
    /// `result.status: Failure` with this message.
    Fail(String),
    /// Drops the last converted object.
    WrongCount,
    /// Converts to `stable.example.com/v3`.
    WrongVersion,
    /// Renames the object.
    Rename,
    /// Converts, and labels every object `converted: "yes"`.
    Relabel,
}

/// The conversion webhook: its URL, its CA, every review it received, and how it answers.
#[derive(Clone)]
struct Hook {
    url: String,
    ca_pem: String,
    state: Arc<HookState>,
}

struct HookState {
    reviews: Mutex<Vec<Value>>,
    mode: Mutex<Mode>,
    /// The AdmissionReviews `/mutate` received.
    admissions: Mutex<Vec<Value>>,
}

impl Hook {
    async fn start() -> Self {
        let cert = ServingCert::issue(&["127.0.0.1".to_owned()]).expect("cert");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let tls = TlsListener::new(listener, cert.acceptor().expect("acceptor")).expect("tls");
        let state = Arc::new(HookState {
            reviews: Mutex::new(Vec::new()),
            mode: Mutex::new(Mode::Convert),
            admissions: Mutex::new(Vec::new()),
        });
        let app = axum::Router::new()
            .route("/convert", post(review))
            .route("/mutate", post(mutate))
            .with_state(state.clone());
        tokio::spawn(async move {
            let _ = axum::serve(tls, app).await;
        });
        Hook { url: format!("https://{addr}/convert"), ca_pem: cert.ca_pem, state }
    }

    fn answer(&self, mode: Mode) {
        *self.state.mode.lock().expect("mode") = mode;
    }

    /// The reviews received since the last call.
    fn take(&self) -> Vec<Value> {
        std::mem::take(&mut *self.state.reviews.lock().expect("reviews"))
    }

    /// `(apiVersion of each object sent, desiredAPIVersion)` of the reviews since the last call.
    fn calls(&self) -> Vec<(Vec<String>, String)> {
        self.take()
            .iter()
            .map(|r| {
                let objects = r["request"]["objects"].as_array().cloned().unwrap_or_default();
                let sent =
                    objects.iter().map(|o| o["apiVersion"].as_str().unwrap_or("").to_owned()).collect();
                (sent, r["request"]["desiredAPIVersion"].as_str().unwrap_or("").to_owned())
            })
            .collect()
    }
}

async fn review(State(state): State<Arc<HookState>>, Json(review): Json<Value>) -> Json<Value> {
    state.reviews.lock().expect("reviews").push(review.clone());
    let request = &review["request"];
    let desired = request["desiredAPIVersion"].as_str().unwrap_or_default().to_owned();
    let mut objects = request["objects"].as_array().cloned().unwrap_or_default();
    for o in &mut objects {
        convert(o, &desired);
    }
    let mode = state.mode.lock().expect("mode").clone();
    let mut result = json!({"status": "Success"});
    match mode {
        Mode::Convert => {}
        Mode::Fail(message) => result = json!({"status": "Failure", "message": message}),
        Mode::WrongCount => {
            objects.pop();
        }
        Mode::WrongVersion => {
            objects.iter_mut().for_each(|o| o["apiVersion"] = json!("stable.example.com/v3"))
        }
        Mode::Rename => objects.iter_mut().for_each(|o| o["metadata"]["name"] = json!("renamed")),
        Mode::Relabel => {
            objects.iter_mut().for_each(|o| o["metadata"]["labels"] = json!({"converted": "yes"}))
        }
    }
    Json(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
        "response": {"uid": request["uid"], "convertedObjects": objects, "result": result},
    }))
}

/// A mutating admission webhook: sets `spec.replicas` to 5.
async fn mutate(State(state): State<Arc<HookState>>, Json(review): Json<Value>) -> Json<Value> {
    state.admissions.lock().expect("admissions").push(review.clone());
    let patch = json!([{"op": "replace", "path": "/spec/replicas", "value": 5}]);
    Json(json!({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "response": {"uid": review["request"]["uid"], "allowed": true, "patchType": "JSONPatch",
                     "patch": base64::engine::general_purpose::STANDARD.encode(patch.to_string())},
    }))
}

const FIELDS: [&str; 5] = ["minute", "hour", "dayOfMonth", "month", "dayOfWeek"];

/// v1's schedule string ↔ v2's schedule object.
fn convert(o: &mut Value, desired: &str) {
    let schedule = o["spec"]["schedule"].clone();
    o["spec"]["schedule"] = match (desired, &schedule) {
        ("stable.example.com/v2", Value::String(s)) => {
            let parts: Vec<&str> = s.split_whitespace().collect();
            Value::Object(FIELDS.iter().zip(parts).map(|(k, v)| ((*k).to_owned(), json!(v))).collect())
        }
        ("stable.example.com/v1", Value::Object(m)) => {
            json!(
                FIELDS
                    .iter()
                    .map(|k| m.get(*k).and_then(Value::as_str).unwrap_or("*"))
                    .collect::<Vec<_>>()
                    .join(" ")
            )
        }
        _ => schedule,
    };
    o["apiVersion"] = json!(desired);
}

/// The CronTab CRD, stored in `storage`, converting through `hook` (strategy None without).
fn crontab_crd(storage: &str, hook: Option<&Hook>) -> Value {
    let status = json!({"type": "object", "properties": {"lastRun": {"type": "string"}}});
    let v1 = json!({"type": "object", "properties": {
        "spec": {"type": "object", "properties": {"schedule": {"type": "string"}, "replicas": {"type": "integer"}}},
        "status": status,
    }});
    let schedule =
        Value::Object(FIELDS.iter().map(|k| ((*k).to_owned(), json!({"type": "string"}))).collect());
    let v2 = json!({"type": "object", "properties": {
        "spec": {"type": "object", "properties": {
            "schedule": {"type": "object", "properties": schedule}, "replicas": {"type": "integer"}}},
        "status": status,
    }});
    let conversion = match hook {
        Some(h) => {
            json!({"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1"], "clientConfig": {
            "url": h.url, "caBundle": base64::engine::general_purpose::STANDARD.encode(&h.ca_pem)}}})
        }
        None => json!({"strategy": "None"}),
    };
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "crontabs.stable.example.com"},
        "spec": {
            "group": "stable.example.com", "scope": "Namespaced",
            "names": {"plural": "crontabs", "singular": "crontab", "kind": "CronTab"},
            "versions": [
                {"name": "v1", "served": true, "storage": storage == "v1", "schema": {"openAPIV3Schema": v1},
                 "subresources": {"status": {}}},
                {"name": "v2", "served": true, "storage": storage == "v2", "schema": {"openAPIV3Schema": v2},
                 "subresources": {"status": {}}},
            ],
            "conversion": conversion,
        }
    })
}

async fn install(client: &Client, crd: Value) {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let name = crd["metadata"]["name"].as_str().expect("name").to_owned();
    crds.create(&PostParams::default(), &serde_json::from_value(crd).expect("crd"))
        .await
        .expect("crd created");
    let established = await_condition(crds, &name, conditions::is_crd_established());
    tokio::time::timeout(Duration::from_secs(5), established).await.expect("in time").expect("established");
}

fn crontabs(client: &Client, version: &str) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("stable.example.com", version, "CronTab");
    Api::namespaced_with(client.clone(), "default", &ApiResource::from_gvk_with_plural(&gvk, "crontabs"))
}

fn crontab(name: &str, version: &str, schedule: Value) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": format!("stable.example.com/{version}"), "kind": "CronTab",
        "metadata": {"name": name}, "spec": {"schedule": schedule, "replicas": 1},
    }))
    .expect("crontab")
}

fn schedule(o: &DynamicObject) -> Value {
    o.data["spec"]["schedule"].clone()
}

fn v1(minute: &str) -> Value {
    json!(format!("{minute} * * * *"))
}

fn v2(minute: &str) -> Value {
    json!({"minute": minute, "hour": "*", "dayOfMonth": "*", "month": "*", "dayOfWeek": "*"})
}

const V1: &str = "stable.example.com/v1";
const V2: &str = "stable.example.com/v2";

fn call(sent: &[&str], desired: &str) -> (Vec<String>, String) {
    (sent.iter().map(|s| (*s).to_owned()).collect(), desired.to_owned())
}

/// A kubesim with the CronTab CRD stored in v1 and converted by a webhook of its own, and
/// the APIs of v1 and v2.
async fn converting_crontabs() -> (KubeSim, Client, Hook, Api<DynamicObject>, Api<DynamicObject>) {
    let (sim, client) = start().await;
    let hook = Hook::start().await;
    install(&client, crontab_crd("v1", Some(&hook))).await;
    let (in_v1, in_v2) = (crontabs(&client, "v1"), crontabs(&client, "v2"));
    (sim, client, hook, in_v1, in_v2)
}

#[tokio::test(flavor = "multi_thread")]
async fn objects_are_converted_through_the_webhook_on_reads_and_writes() {
    let (_sim, _client, hook, in_v1, in_v2) = converting_crontabs().await;

    // Written in the storage version: no call. Read in v2: one object, stored in v1.
    let created = in_v1.create(&PostParams::default(), &crontab("a", "v1", v1("*/1"))).await.expect("create");
    assert_eq!(hook.calls(), []);
    let read = in_v2.get("a").await.expect("get in v2");
    assert_eq!((read.types.as_ref().expect("types").api_version.as_str(), schedule(&read)), (V2, v2("*/1")));
    assert_eq!(read.resource_version(), created.resource_version());
    assert_eq!(hook.calls(), [call(&[V1], V2)]);
    let listed = in_v2.list(&ListParams::default()).await.expect("list in v2");
    assert_eq!(listed.items.iter().map(schedule).collect::<Vec<_>>(), [v2("*/1")]);
    assert_eq!(hook.calls(), [call(&[V1], V2)]);

    // Written in v2: converted to v1 to be stored, and back for the answer.
    let b = in_v2.create(&PostParams::default(), &crontab("b", "v2", v2("*/5"))).await.expect("create in v2");
    assert_eq!(schedule(&b), v2("*/5"));
    assert_eq!(hook.calls(), [call(&[V2], V1), call(&[V1], V2)]);
    assert_eq!(schedule(&in_v1.get("b").await.expect("get in v1")), v1("*/5"));
    assert_eq!(hook.calls(), []);

    // A patch in v2 applies to the object in v2: read, patched, stored in v1, answered.
    let patched = in_v2
        .patch("b", &PatchParams::default(), &Patch::Merge(json!({"spec": {"schedule": {"minute": "7"}}})))
        .await
        .expect("patch in v2");
    assert_eq!(schedule(&patched), v2("7"));
    assert_eq!(hook.calls(), [call(&[V1], V2), call(&[V2], V1), call(&[V1], V2)]);
    assert_eq!(schedule(&in_v1.get("b").await.expect("get")), v1("7"));
    // Server-side apply and a status-less replace do the same.
    let applied = in_v2
        .patch(
            "b",
            &PatchParams::apply("test").force(),
            &Patch::Apply(json!({"apiVersion": V2, "kind": "CronTab", "spec": {"schedule": v2("8")}})),
        )
        .await
        .expect("apply in v2");
    assert_eq!(schedule(&applied), v2("8"));
    assert_eq!(schedule(&in_v1.get("b").await.expect("get")), v1("8"));
    // The status subresource too.
    let status = in_v2
        .patch_status("b", &PatchParams::default(), &Patch::Merge(json!({"status": {"lastRun": "now"}})))
        .await
        .expect("status in v2");
    assert_eq!((status.data["status"]["lastRun"].as_str(), schedule(&status)), (Some("now"), v2("8")));
    hook.take();
    assert_eq!(in_v1.get("b").await.expect("get").data["status"]["lastRun"], "now");
    // A dry run makes the same round trip and stores nothing.
    let dry = in_v2
        .create(&PostParams { dry_run: true, ..Default::default() }, &crontab("c", "v2", v2("0")))
        .await
        .expect("dry run");
    assert_eq!(schedule(&dry), v2("0"));
    assert_eq!(hook.calls(), [call(&[V2], V1), call(&[V1], V2)]);
    assert_eq!(api_err(in_v1.get("c").await).code, 404);
    // A deletion in v2 answers with the object in v2.
    in_v1.create(&PostParams::default(), &crontab("d", "v1", v1("4"))).await.expect("create");
    let deleted = in_v2.delete("d", &Default::default()).await.expect("delete in v2");
    let deleted = deleted.left().expect("the deleted object");
    assert_eq!(schedule(&deleted), v2("4"));
    hook.take();

    // A watch in v2 gets its initial objects in one review, then every change converted.
    let mut events = in_v2.watch(&WatchParams::default(), "0").await.expect("watch").boxed();
    let mut initial = Vec::new();
    for _ in 0..2 {
        match events.try_next().await.expect("event") {
            Some(WatchEvent::Added(o)) => initial.push(schedule(&o)),
            other => panic!("expected ADDED, got {other:?}"),
        }
    }
    assert_eq!(initial, [v2("*/1"), v2("8")]);
    assert_eq!(hook.calls(), [call(&[V1, V1], V2)]);
    in_v1
        .patch("a", &PatchParams::default(), &Patch::Merge(json!({"spec": {"schedule": "9 * * * *"}})))
        .await
        .expect("patch");
    match events.try_next().await.expect("event") {
        Some(WatchEvent::Modified(o)) => assert_eq!(schedule(&o), v2("9")),
        other => panic!("expected MODIFIED, got {other:?}"),
    }
    in_v1.delete("a", &Default::default()).await.expect("delete");
    match events.try_next().await.expect("event") {
        Some(WatchEvent::Deleted(o)) => {
            assert_eq!((o.name_any(), o.types.expect("types").api_version), ("a".to_owned(), V2.to_owned()));
        }
        other => panic!("expected DELETED, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_list_sends_the_objects_to_convert_in_one_review() {
    let (_sim, _client, hook, in_v1, in_v2) = converting_crontabs().await;
    for (i, name) in ["a", "b", "c", "d"].iter().enumerate() {
        in_v1.create(&PostParams::default(), &crontab(name, "v1", v1(&i.to_string()))).await.expect("create");
    }
    let listed = in_v2.list(&ListParams::default()).await.expect("list");
    assert_eq!(listed.items.iter().map(schedule).collect::<Vec<_>>(), [v2("0"), v2("1"), v2("2"), v2("3")]);
    assert_eq!(hook.calls(), [call(&[V1, V1, V1, V1], V2)]);
    // Pages are converted a page at a time.
    let page = in_v2.list(&ListParams::default().limit(3)).await.expect("page");
    assert_eq!(page.items.len(), 3);
    assert_eq!(hook.calls(), [call(&[V1, V1, V1], V2)]);
    // Nothing to convert, no call.
    in_v1.list(&ListParams::default()).await.expect("list in v1");
    assert_eq!(hook.calls(), []);
    // Selectors see the objects as served: the webhook may label them.
    hook.answer(Mode::Relabel);
    let labelled = in_v2.list(&ListParams::default().labels("converted=yes")).await.expect("list");
    assert_eq!(labelled.items.len(), 4);
    assert!(in_v1.list(&ListParams::default().labels("converted=yes")).await.expect("list").items.is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn objects_keep_their_storage_version_until_written_again_and_stored_versions_follow() {
    let (_sim, client, hook, in_v1, in_v2) = converting_crontabs().await;
    in_v1.create(&PostParams::default(), &crontab("old", "v1", v1("1"))).await.expect("create");
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let stored_versions = async || {
        let crd = crds.get("crontabs.stable.example.com").await.expect("crd");
        crd.status.and_then(|s| s.stored_versions).unwrap_or_default()
    };
    assert_eq!(stored_versions().await, ["v1"]);

    // The storage version moves to v2: the CRD records both, the object stays in v1.
    crds.patch(
        "crontabs.stable.example.com",
        &PatchParams::default(),
        &Patch::Json::<()>(
            serde_json::from_value(json!([
                {"op": "replace", "path": "/spec/versions/0/storage", "value": false},
                {"op": "replace", "path": "/spec/versions/1/storage", "value": true},
            ]))
            .expect("patch"),
        ),
    )
    .await
    .expect("storage moves to v2");
    assert_eq!(stored_versions().await, ["v1", "v2"]);
    let before = in_v2.get("old").await.expect("get");
    assert_eq!(hook.calls(), [call(&[V1], V2)], "still stored in v1");
    // A new object is stored in v2: written in v1, it is converted.
    in_v1.create(&PostParams::default(), &crontab("new", "v1", v1("2"))).await.expect("create");
    assert_eq!(hook.calls(), [call(&[V1], V2), call(&[V2], V1)]);

    // A write that changes nothing in the object still stores it in the storage version:
    // what a storage migration does.
    let rewritten = in_v2.replace("old", &PostParams::default(), &before).await.expect("no-op update");
    assert_ne!(rewritten.resource_version(), before.resource_version(), "rewritten in v2");
    hook.take();
    in_v2.get("old").await.expect("get");
    assert_eq!(hook.calls(), [], "now stored in v2");
    let again = in_v2.replace("old", &PostParams::default(), &rewritten).await.expect("no-op update");
    assert_eq!(again.resource_version(), rewritten.resource_version(), "nothing left to rewrite");

    // v1 cannot leave spec.versions while it is a stored version.
    let drop_v1 = Patch::Json::<()>(
        serde_json::from_value(json!([{"op": "remove", "path": "/spec/versions/0"}])).expect("patch"),
    );
    let refused = api_err(crds.patch("crontabs.stable.example.com", &PatchParams::default(), &drop_v1).await);
    assert_eq!((refused.code, refused.reason.as_str()), (422, "Invalid"));
    assert_eq!(
        refused.message,
        "CustomResourceDefinition.apiextensions.k8s.io \"crontabs.stable.example.com\" is invalid: status.storedVersions[0]: Invalid value: \"v1\": missing from spec.versions; v1 was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in v1 and removes v1 from status.storedVersions"
    );
    // The migrator, done, removes v1 from the stored versions through /status; then v1 may go.
    let mut crd = crds.get_status("crontabs.stable.example.com").await.expect("crd");
    if let Some(status) = crd.status.as_mut() {
        status.stored_versions = Some(vec!["v2".to_owned()]);
    }
    let updated = crds
        .replace_status("crontabs.stable.example.com", &PostParams::default(), &crd)
        .await
        .expect("status");
    assert_eq!(updated.status.and_then(|s| s.stored_versions).unwrap_or_default(), ["v2"]);
    crds.patch("crontabs.stable.example.com", &PatchParams::default(), &drop_v1).await.expect("v1 leaves");
    assert!(api_err(in_v1.get("old").await).code == 404);
    assert_eq!(schedule(&in_v2.get("old").await.expect("get")), v2("1"));

    // A storage version that is not among the stored versions is refused on the next update.
    crds.patch_status(
        "crontabs.stable.example.com",
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"storedVersions": ["v9"]}})),
    )
    .await
    .expect("the status strategy does not check stored versions");
    let refused = api_err(
        crds.patch(
            "crontabs.stable.example.com",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"a": "b"}}})),
        )
        .await,
    );
    assert_eq!(
        refused.message,
        "CustomResourceDefinition.apiextensions.k8s.io \"crontabs.stable.example.com\" is invalid: status.storedVersions[0]: Invalid value: \"v9\": missing from spec.versions; v9 was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in v9 and removes v9 from status.storedVersions"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn webhook_failures_answer_in_the_servers_words() {
    let (_sim, client, hook, in_v1, in_v2) = converting_crontabs().await;
    in_v1.create(&PostParams::default(), &crontab("a", "v1", v1("1"))).await.expect("create");
    let one = "conversion webhook for stable.example.com/v1, Kind=CronTab";
    let list = "conversion webhook for stable.example.com/v2, Kind=CronTabList";
    let cases = [
        (
            Mode::Fail("no conversion today".into()),
            format!("{one} failed: no conversion today"),
            format!("{list} failed: no conversion today"),
        ),
        (
            Mode::WrongCount,
            format!("{one} returned 0 objects, expected 1"),
            format!("{list} returned 0 objects, expected 1"),
        ),
        (
            Mode::WrongVersion,
            format!(
                "{one} returned invalid object at index 0: invalid groupVersion (expected stable.example.com/v2, received stable.example.com/v3)"
            ),
            format!(
                "{list} returned invalid converted object at index 0: invalid groupVersion (expected stable.example.com/v2, received stable.example.com/v3)"
            ),
        ),
        (
            Mode::Rename,
            format!("{one} returned invalid object: must have the same name: a != renamed"),
            format!(
                "{list} returned invalid converted object at index 0: must have the same name: a != renamed"
            ),
        ),
    ];
    for (mode, get, list_message) in cases {
        hook.answer(mode.clone());
        let err = api_err(in_v2.get("a").await);
        assert_eq!(
            (err.code, err.reason.as_str(), err.message.as_str()),
            (500, "", get.as_str()),
            "{mode:?}"
        );
        let err = api_err(in_v2.list(&ListParams::default()).await);
        assert_eq!((err.code, err.message.as_str()), (500, list_message.as_str()), "{mode:?}");
        // The same object in its stored version needs no webhook.
        in_v1.get("a").await.expect("no conversion");
    }
    // A write in v2 fails converting to the storage version, naming the v2 object.
    hook.answer(Mode::Fail("nope".into()));
    let err = api_err(in_v2.create(&PostParams::default(), &crontab("b", "v2", v2("1"))).await);
    assert_eq!(
        (err.code, err.message.as_str()),
        (500, "conversion webhook for stable.example.com/v2, Kind=CronTab failed: nope")
    );
    assert_eq!(api_err(in_v1.get("b").await).code, 404, "nothing stored");

    // A watch ends with an ERROR event carrying the server's InternalError.
    hook.answer(Mode::Convert);
    let rv = in_v2.list(&ListParams::default()).await.expect("list").metadata.resource_version.expect("rv");
    let mut events = in_v2.watch(&WatchParams::default(), &rv).await.expect("watch").boxed();
    hook.answer(Mode::Fail("watch this".into()));
    in_v1
        .patch("a", &PatchParams::default(), &Patch::Merge(json!({"spec": {"replicas": 2}})))
        .await
        .expect("patch");
    match events.try_next().await.expect("event") {
        Some(WatchEvent::Error(e)) => {
            assert_eq!((e.code, e.reason.as_str()), (500, "InternalError"));
            assert_eq!(e.message, format!("Internal error occurred: {one} failed: watch this"));
        }
        other => panic!("expected an ERROR event, got {other:?}"),
    }
    assert!(events.try_next().await.expect("end").is_none(), "the watch ends");

    // An unreachable webhook: the transport's error.
    let dead = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr")
    };
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.patch(
        "crontabs.stable.example.com",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"conversion": {"webhook": {"clientConfig": {"url": format!("https://{dead}/convert")}}}}})),
    )
    .await
    .expect("point the webhook elsewhere");
    let err = eventually(5, "the new webhook URL in use", async || {
        let err = api_err(in_v2.get("a").await);
        err.message.contains(&dead.to_string()).then_some(err)
    })
    .await;
    assert_eq!(
        err.message,
        format!(
            "{one} failed: Post \"https://{dead}/convert?timeout=30s\": dial tcp {dead}: connect: connection refused"
        )
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn deprecated_versions_warn_and_unserved_ones_are_not_found() {
    let (_sim, client) = start().await;
    let mut crd = crontab_crd("v2", None);
    crd["spec"]["versions"][0]["deprecated"] = json!(true);
    let versions = crd["spec"]["versions"].as_array_mut().expect("versions");
    versions.push(json!({"name": "v1beta1", "served": true, "storage": false, "deprecated": true,
        "deprecationWarning": "v1beta1 is going away", "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}));
    versions.push(json!({"name": "v3", "served": false, "storage": false, "schema": {"openAPIV3Schema": {"type": "object"}}}));
    install(&client, crd).await;
    let warnings = async |method: &str, path: &str, body: Option<Value>| {
        let mut request = http::Request::builder().method(method).uri(path);
        if body.is_some() {
            request = request.header("content-type", "application/json");
        }
        let body = body.map(|b| b.to_string().into_bytes()).unwrap_or_default();
        let response = client.send(request.body(body.into()).expect("request")).await.expect("response");
        let status = response.status().as_u16();
        let headers: Vec<String> = response
            .headers()
            .get_all("warning")
            .iter()
            .map(|v| v.to_str().expect("ascii").to_owned())
            .collect();
        (status, headers)
    };
    let base = "/apis/stable.example.com";
    let default_text =
        "299 - \"stable.example.com/v1 CronTab is deprecated; use stable.example.com/v2 CronTab\"";
    assert_eq!(
        warnings("GET", &format!("{base}/v1/namespaces/default/crontabs"), None).await,
        (200, vec![default_text.to_owned()])
    );
    let body = json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab", "metadata": {"name": "a"}, "spec": {"schedule": "1 * * * *", "x": 1}});
    let (status, created) =
        warnings("POST", &format!("{base}/v1/namespaces/default/crontabs"), Some(body)).await;
    assert_eq!(
        (status, created),
        (201, vec![default_text.to_owned(), "299 - \"unknown field \\\"spec.x\\\"\"".to_owned()])
    );
    assert_eq!(
        warnings("GET", &format!("{base}/v1/namespaces/default/crontabs/missing"), None).await,
        (404, vec![default_text.to_owned()]),
        "errors warn too"
    );
    assert_eq!(
        warnings("GET", &format!("{base}/v1beta1/namespaces/default/crontabs/a"), None).await,
        (200, vec!["299 - \"v1beta1 is going away\"".to_owned()])
    );
    assert_eq!(
        warnings("GET", &format!("{base}/v2/namespaces/default/crontabs/a"), None).await,
        (200, vec![])
    );
    assert_eq!(warnings("GET", &format!("{base}/v3/namespaces/default/crontabs"), None).await, (404, vec![]));
    let v3: Api<DynamicObject> = crontabs(&client, "v3");
    let err = api_err(v3.list(&ListParams::default()).await);
    assert_eq!((err.code, err.message.as_str()), (404, "the server could not find the requested resource"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_crd_whose_webhook_client_cannot_be_made_serves_none_of_its_objects() {
    let (_sim, client) = start().await;
    let hook = Hook::start().await;
    let mut crd = crontab_crd("v1", Some(&hook));
    // A new CRD may carry any caBundle; the server then cannot make the webhook's client.
    crd["spec"]["conversion"]["webhook"]["clientConfig"]["caBundle"] =
        json!(base64::engine::general_purpose::STANDARD.encode("not a certificate"));
    install(&client, crd).await;
    let err = api_err(crontabs(&client, "v1").list(&ListParams::default()).await);
    assert_eq!(
        (err.code, err.reason.as_str(), err.message.as_str()),
        (500, "InternalError", "Internal error occurred: error resolving resource")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_admission_webhook_for_another_version_sees_the_object_converted() {
    let (_sim, client, hook, in_v1, in_v2) = converting_crontabs().await;
    let config = json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": "replicas"},
        "webhooks": [{
            "name": "replicas.stable.example.com", "sideEffects": "None", "admissionReviewVersions": ["v1"],
            "clientConfig": {"url": hook.url.replace("/convert", "/mutate"),
                             "caBundle": base64::engine::general_purpose::STANDARD.encode(&hook.ca_pem)},
            "rules": [{"operations": ["CREATE"], "apiGroups": ["stable.example.com"], "apiVersions": ["v1"], "resources": ["crontabs"]}],
        }],
    });
    let gvk = GroupVersionKind::gvk("admissionregistration.k8s.io", "v1", "MutatingWebhookConfiguration");
    let configs: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &ApiResource::from_gvk_with_plural(&gvk, "mutatingwebhookconfigurations"),
    );
    configs
        .create(&PostParams::default(), &serde_json::from_value(config).expect("config"))
        .await
        .expect("install");

    // Created in v2: the webhook, whose rules name v1 only (matchPolicy Equivalent by
    // default), gets it in v1, and its patch comes back in v2.
    let created = in_v2.create(&PostParams::default(), &crontab("a", "v2", v2("3"))).await.expect("create");
    assert_eq!(created.data["spec"]["replicas"], 5);
    let admissions = std::mem::take(&mut *hook.state.admissions.lock().expect("admissions"));
    let request = &admissions[0]["request"];
    assert_eq!(
        (request["kind"]["version"].as_str(), request["requestKind"]["version"].as_str()),
        (Some("v1"), Some("v2"))
    );
    assert_eq!(request["object"]["apiVersion"], V1);
    assert_eq!(request["object"]["spec"]["schedule"], v1("3"));
    assert_eq!(schedule(&in_v1.get("a").await.expect("get")), v1("3"));
    assert_eq!(
        hook.calls()[..3],
        [call(&[V2], V1), call(&[V1], V2), call(&[V2], V1)],
        "to v1 for the webhook, the patched object back to v2, then to v1 for storage"
    );
    // A request in v1 needs no conversion for it.
    in_v1.create(&PostParams::default(), &crontab("b", "v1", v1("4"))).await.expect("create");
    assert_eq!(hook.calls(), []);
}

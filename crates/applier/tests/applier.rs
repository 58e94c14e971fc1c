//! The applier against kubesim: owner references and ApplySet metadata, the unchanged-skip,
//! safe pruning, failure handling, ownership rules and garbage collection.

mod common;

use std::collections::BTreeMap;

use common::{apps, config_map, create_app, create_namespace, eventually, get_config_map, start, tenants};
use ctop_applier::applyset::{
    ADDITIONAL_NAMESPACES_ANNOTATION, CONTAINS_GROUP_KINDS_ANNOTATION, ID_LABEL, PART_OF_LABEL,
    TOOLING_ANNOTATION, applyset_id,
};
use ctop_applier::{Applier, ApplierConfig, ApplyError, ChildRef};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};

fn deployment(name: &str, image: &str) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                         "spec": {"containers": [{"name": "main", "image": image}]}},
        }
    })
}

fn names(children: &[ChildRef]) -> Vec<String> {
    let mut v: Vec<String> = children.iter().map(ToString::to_string).collect();
    v.sort();
    v
}

async fn reread(client: &Client, owner: &DynamicObject) -> DynamicObject {
    let ns = owner.namespace().unwrap_or_default();
    apps(client, &ns).get(&owner.name_any()).await.expect("owner re-read")
}

fn rv<K: ResourceExt>(o: &K) -> String {
    o.resource_version().unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread")]
async fn children_get_owner_references_and_applyset_metadata() {
    let (_sim, client) = start().await;
    let owner = create_app(&client, "default", "web").await;
    let applier = Applier::new(client.clone(), ApplierConfig::new("test-operator"));
    let report = applier
        .apply(
            &owner,
            [
                config_map("web-config", "1"),
                json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "web-token"},
                       "stringData": {"token": "t"}}),
                deployment("web", "nginx:1"),
            ],
        )
        .await
        .expect("apply");
    assert_eq!(
        names(&report.applied),
        ["ConfigMap default/web-config", "Deployment.apps default/web", "Secret default/web-token"]
    );
    assert!(report.skipped.is_empty() && report.pruned.is_empty());

    let id = applyset_id("web", "default", "App", "apps.example.com");
    let uid = owner.uid().expect("owner uid");
    let cm = get_config_map(&client, "default", "web-config").await.expect("configmap applied");
    let deploy =
        Api::<Deployment>::namespaced(client.clone(), "default").get("web").await.expect("deployment");
    let secret = Api::<Secret>::namespaced(client.clone(), "default").get("web-token").await.expect("secret");
    for (meta, what) in
        [(&cm.metadata, "configmap"), (&deploy.metadata, "deployment"), (&secret.metadata, "secret")]
    {
        let refs = meta.owner_references.as_ref().expect("owner references");
        assert_eq!(refs.len(), 1, "{what}");
        let r = &refs[0];
        assert_eq!(
            (r.api_version.as_str(), r.kind.as_str(), r.name.as_str(), r.uid.as_str()),
            ("apps.example.com/v1", "App", "web", uid.as_str()),
            "{what}"
        );
        assert_eq!((r.controller, r.block_owner_deletion), (Some(true), Some(true)), "{what}");
        assert_eq!(meta.labels.as_ref().and_then(|l| l.get(PART_OF_LABEL)), Some(&id), "{what}");
        let managers: Vec<_> =
            meta.managed_fields.iter().flatten().filter_map(|m| m.manager.as_deref()).collect();
        assert!(managers.contains(&"test-operator"), "{what}: {managers:?}");
    }
    assert_eq!(deploy.metadata.labels.as_ref().and_then(|l| l.get("app")).map(String::as_str), Some("web"));

    // The resourceVersion each apply was answered with, as a GET sees it.
    let versions: BTreeMap<String, String> =
        report.versions.iter().map(|(child, rv)| (child.to_string(), rv.clone())).collect();
    assert_eq!(
        versions,
        BTreeMap::from([
            ("ConfigMap default/web-config".to_owned(), rv(&cm)),
            ("Deployment.apps default/web".to_owned(), rv(&deploy)),
            ("Secret default/web-token".to_owned(), rv(&secret)),
        ])
    );
    let applied: Vec<&ChildRef> = report.versions.iter().map(|(child, _)| child).collect();
    assert_eq!(applied, report.applied.iter().collect::<Vec<_>>(), "in the order of `applied`");

    let owner = reread(&client, &owner).await;
    assert_eq!(owner.labels().get(ID_LABEL), Some(&id));
    let annotations = owner.annotations();
    assert_eq!(
        annotations.get(CONTAINS_GROUP_KINDS_ANNOTATION).map(String::as_str),
        Some("ConfigMap,Deployment.apps,Secret")
    );
    assert_eq!(
        annotations.get(TOOLING_ANNOTATION).map(String::as_str),
        Some(concat!("ctop/v", env!("CARGO_PKG_VERSION")))
    );
    assert!(!annotations.contains_key(ADDITIONAL_NAMESPACES_ANNOTATION));
    assert_eq!(owner.metadata.generation, Some(1), "recording the ApplySet is a metadata change");
}

#[tokio::test(flavor = "multi_thread")]
async fn unchanged_children_are_not_written_again() {
    let (_sim, client) = start().await;
    let owner = create_app(&client, "default", "web").await;
    let applier = Applier::new(client.clone(), ApplierConfig::default());
    let desired = || vec![config_map("a", "1"), config_map("b", "1"), deployment("web", "nginx:1")];
    applier.apply(&owner, desired()).await.expect("first apply");
    let owner = reread(&client, &owner).await;
    let cms = Api::<ConfigMap>::namespaced(client.clone(), "default");
    let deploys = Api::<Deployment>::namespaced(client.clone(), "default");
    let before = (
        rv(&cms.get("a").await.expect("a")),
        rv(&cms.get("b").await.expect("b")),
        rv(&deploys.get("web").await.expect("web")),
    );

    let report = applier.apply(&owner, desired()).await.expect("second apply");
    assert!(report.applied.is_empty(), "{report:?}");
    assert!(report.versions.is_empty(), "no write, no version");
    assert_eq!(report.skipped.len(), 3);
    assert!(report.is_noop());
    let after = (
        rv(&cms.get("a").await.expect("a")),
        rv(&cms.get("b").await.expect("b")),
        rv(&deploys.get("web").await.expect("web")),
    );
    assert_eq!(before, after, "no child was written");
    assert_eq!(rv(&reread(&client, &owner).await), rv(&owner), "nor the owner");

    // A changed desired child is applied; the others stay skipped.
    let report = applier
        .apply(&owner, vec![config_map("a", "2"), config_map("b", "1"), deployment("web", "nginx:1")])
        .await
        .expect("changed apply");
    assert_eq!(names(&report.applied), ["ConfigMap default/a"]);
    assert_eq!(report.skipped.len(), 2);

    // Someone else edits a child: the live object changed, so it is applied (and restored).
    let edit = json!({"data": {"value": "tampered"}});
    cms.patch("b", &PatchParams::default(), &Patch::Merge(&edit)).await.expect("tamper");
    let report = applier
        .apply(&owner, vec![config_map("a", "2"), config_map("b", "1"), deployment("web", "nginx:1")])
        .await
        .expect("apply after drift");
    assert_eq!(names(&report.applied), ["ConfigMap default/b"]);
    let b = cms.get("b").await.expect("b");
    assert_eq!(b.data.as_ref().and_then(|d| d.get("value")).map(String::as_str), Some("1"));

    // A status update by the child's own controller does not bump the generation: no apply.
    let status = json!({"status": {"observedGeneration": 1, "replicas": 1}});
    deploys.patch_status("web", &PatchParams::default(), &Patch::Merge(&status)).await.expect("status");
    let report = applier
        .apply(&owner, vec![config_map("a", "2"), config_map("b", "1"), deployment("web", "nginx:1")])
        .await
        .expect("apply after child status");
    assert!(report.applied.is_empty(), "{report:?}");

    // Removing our label from a child is drift too.
    let unlabel = json!({"metadata": {"labels": {PART_OF_LABEL: null}}});
    deploys.patch("web", &PatchParams::default(), &Patch::Merge(&unlabel)).await.expect("unlabel");
    let report = applier
        .apply(&owner, vec![config_map("a", "2"), config_map("b", "1"), deployment("web", "nginx:1")])
        .await
        .expect("apply after unlabel");
    assert_eq!(names(&report.applied), ["Deployment.apps default/web"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_secret_written_as_text_then_read_back_as_data_is_one_apply() {
    let (_sim, client) = start().await;
    let owner = create_app(&client, "default", "web").await;
    let applier = Applier::new(client.clone(), ApplierConfig::default());
    let secret = |values: Value| {
        let mut s = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "web-token"}});
        s.as_object_mut().expect("object").extend(values.as_object().expect("object").clone());
        s
    };
    // The first pass generates the value as text; later ones copy `data` from the cache.
    let report = applier.apply(&owner, vec![secret(json!({"stringData": {"token": "s3cret"}}))]).await;
    assert_eq!(names(&report.expect("first apply").applied), ["Secret default/web-token"]);
    let owner = reread(&client, &owner).await;
    let secrets = Api::<Secret>::namespaced(client.clone(), "default");
    let live = secrets.get("web-token").await.expect("secret");
    let token = live.data.as_ref().and_then(|d| d.get("token")).expect("data.token");
    assert_eq!(token.0, b"s3cret");
    let managed = serde_json::to_value(&live.metadata.managed_fields).expect("managed fields");
    assert!(managed.to_string().contains("f:token"), "{managed}");
    assert!(!managed.to_string().contains("f:stringData"), "the field owned is the stored one: {managed}");

    let report = applier.apply(&owner, vec![secret(json!({"data": {"token": "czNjcmV0"}}))]).await;
    let report = report.expect("second apply");
    assert!(report.applied.is_empty(), "the same content: {report:?}");
    assert_eq!(report.skipped.len(), 1);
    assert_eq!(rv(&secrets.get("web-token").await.expect("secret")), rv(&live), "not written again");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cache_of_children_replaces_the_reads() {
    let (_sim, client) = start().await;
    let owner = create_app(&client, "default", "web").await;
    let applier = Applier::new(client.clone(), ApplierConfig::default());
    applier.apply(&owner, [config_map("a", "1")]).await.expect("apply");
    let owner = reread(&client, &owner).await;
    let cms = Api::<ConfigMap>::namespaced(client.clone(), "default");
    let cache: BTreeMap<String, _> = [("a".to_owned(), cms.get("a").await.expect("a").metadata)].into();
    let lookup = |c: &ChildRef| cache.get(&c.name).cloned();
    let report = applier.apply_observed(&owner, [config_map("a", "1")], lookup).await.expect("cached apply");
    assert_eq!(report.skipped.len(), 1);
    // Not in the cache: applied.
    let report =
        applier.apply_observed(&owner, [config_map("a", "1")], |_: &ChildRef| None).await.expect("miss");
    assert_eq!(report.applied.len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn only_our_former_children_are_pruned() {
    let (_sim, client) = start().await;
    let owner = create_app(&client, "default", "web").await;
    let applier = Applier::new(client.clone(), ApplierConfig::default());
    applier
        .apply(
            &owner,
            [
                config_map("a", "1"),
                config_map("b", "1"),
                config_map("kept", "1"),
                deployment("web", "nginx:1"),
            ],
        )
        .await
        .expect("apply");
    let owner = reread(&client, &owner).await;
    let id = applyset_id("web", "default", "App", "apps.example.com");
    let uid = owner.uid().expect("uid");
    let cms = Api::<ConfigMap>::namespaced(client.clone(), "default");

    // Look-alikes: our label without our owner, our owner without our label, and our label
    // with another owner.
    let other = create_app(&client, "default", "other").await.uid().expect("other uid");
    let look_alikes = [
        json!({"metadata": {"name": "labelled-only", "labels": {PART_OF_LABEL: id}}}),
        json!({"metadata": {"name": "owned-only", "ownerReferences": [
            {"apiVersion": "apps.example.com/v1", "kind": "App", "name": "web", "uid": uid}]}}),
        json!({"metadata": {"name": "old-owner", "labels": {PART_OF_LABEL: id}, "ownerReferences": [
            {"apiVersion": "apps.example.com/v1", "kind": "App", "name": "other", "uid": other}]}}),
    ];
    for obj in look_alikes {
        let cm: ConfigMap = serde_json::from_value(obj).expect("configmap");
        cms.create(&PostParams::default(), &cm).await.expect("look-alike created");
    }
    // Opt one child out of pruning.
    let opt_out = json!({"metadata": {"annotations": {"ctop.dev/prune": "false"}}});
    cms.patch("kept", &PatchParams::default(), &Patch::Merge(&opt_out)).await.expect("opt out");

    let report = applier.apply(&owner, [config_map("a", "1")]).await.expect("apply smaller set");
    assert_eq!(names(&report.pruned), ["ConfigMap default/b", "Deployment.apps default/web"]);
    assert_eq!(names(&report.kept), ["ConfigMap default/kept"]);
    assert!(get_config_map(&client, "default", "b").await.is_none(), "b pruned");
    assert!(
        Api::<Deployment>::namespaced(client.clone(), "default").get_opt("web").await.expect("get").is_none()
    );
    for name in ["a", "kept", "labelled-only", "owned-only", "old-owner"] {
        assert!(get_config_map(&client, "default", name).await.is_some(), "{name} must survive");
    }
    // Deployments are gone from the record; ConfigMaps stay (a and the kept one).
    let owner = reread(&client, &owner).await;
    assert_eq!(
        owner.annotations().get(CONTAINS_GROUP_KINDS_ANNOTATION).map(String::as_str),
        Some("ConfigMap")
    );

    // The kept child is reported again on the next pass, and nothing else happens.
    let report = applier.apply(&owner, [config_map("a", "1")]).await.expect("again");
    assert_eq!(
        (report.applied.len(), report.skipped.len(), report.pruned.len(), report.kept.len()),
        (0, 1, 0, 1)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn kinds_recorded_on_the_owner_are_pruned_after_a_restart() {
    let (_sim, client) = start().await;
    let owner = create_app(&client, "default", "web").await;
    Applier::new(client.clone(), ApplierConfig::default())
        .apply(&owner, [config_map("a", "1"), deployment("web", "nginx:1")])
        .await
        .expect("apply");
    // A fresh applier (a restarted operator) knows only what the owner records.
    let owner = reread(&client, &owner).await;
    let report = Applier::new(client.clone(), ApplierConfig::default())
        .apply(&owner, [config_map("a", "1")])
        .await
        .expect("apply after restart");
    assert_eq!(names(&report.applied), ["ConfigMap default/a"], "no memory: applied once more");
    assert_eq!(names(&report.pruned), ["Deployment.apps default/web"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failed_apply_prunes_nothing() {
    let (sim, client) = start().await;
    let owner = create_app(&client, "default", "web").await;
    let applier = Applier::new(client.clone(), ApplierConfig::default());
    applier
        .apply(&owner, [config_map("a", "1"), config_map("b", "1"), deployment("web", "nginx:1")])
        .await
        .expect("apply");
    let owner = reread(&client, &owner).await;

    sim.faults().fail("patch", "configmaps", 500, 1);
    let err = applier
        .apply(&owner, [config_map("a", "2"), deployment("web", "nginx:2")])
        .await
        .expect_err("the configmap apply fails");
    let ApplyError::Apply { failures, total, report } = &err else {
        panic!("expected an apply failure, got {err:?}")
    };
    assert_eq!(*total, 2);
    assert_eq!(failures.len(), 1);
    assert_eq!(failures[0].child.to_string(), "ConfigMap default/a");
    assert!(
        matches!(&failures[0].error, ctop_applier::ChildError::Api(kube::Error::Api(s)) if s.code == 500),
        "{:?}",
        failures[0].error
    );
    assert_eq!(
        names(&report.applied),
        ["Deployment.apps default/web"],
        "the other children are still applied"
    );
    assert!(report.pruned.is_empty());
    assert!(err.to_string().contains("nothing was pruned"), "{err}");
    assert!(get_config_map(&client, "default", "b").await.is_some(), "no prune after a failed apply");

    // The fault is used up: the next pass converges.
    let report =
        applier.apply(&owner, [config_map("a", "2"), deployment("web", "nginx:2")]).await.expect("retry");
    assert_eq!(names(&report.applied), ["ConfigMap default/a"]);
    assert_eq!(names(&report.pruned), ["ConfigMap default/b"]);
    let a = get_config_map(&client, "default", "a").await.expect("a");
    assert_eq!(a.data.as_ref().and_then(|d| d.get("value")).map(String::as_str), Some("2"));
}

#[tokio::test(flavor = "multi_thread")]
async fn children_it_cannot_own_are_rejected_before_any_write() {
    let (_sim, client) = start().await;
    let owner = create_app(&client, "default", "web").await;
    let applier = Applier::new(client.clone(), ApplierConfig::default());

    let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                      "metadata": {"name": "reader"}, "rules": []});
    let err = applier.apply(&owner, [role]).await.expect_err("cluster-scoped under namespaced");
    assert!(matches!(err, ApplyError::CannotOwn { .. }), "{err:?}");
    assert!(err.to_string().contains("cluster-scoped"), "{err}");

    let err = applier
        .apply(
            &owner,
            [json!({"apiVersion": "nope.example.com/v1", "kind": "Nope", "metadata": {"name": "x"}})],
        )
        .await
        .expect_err("unknown kind");
    assert!(matches!(err, ApplyError::UnknownKind { .. }), "{err:?}");

    let err = applier
        .apply(&owner, [config_map("twice", "1"), config_map("twice", "2")])
        .await
        .expect_err("duplicate");
    assert!(matches!(err, ApplyError::Duplicate { .. }), "{err:?}");

    let err = applier
        .apply(&owner, [json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "x-"}})])
        .await
        .expect_err("no name");
    assert!(matches!(err, ApplyError::InvalidChild { index: 0, .. }), "{err:?}");
    assert!(err.to_string().contains("generateName"), "{err}");

    // The owner was never marked as a parent.
    assert!(reread(&client, &owner).await.labels().get(ID_LABEL).is_none());
}

#[tokio::test(flavor = "multi_thread")]
async fn an_owner_of_another_tool_is_refused() {
    let (_sim, client) = start().await;
    create_app(&client, "default", "web").await;
    let mark = json!({"metadata": {"annotations": {TOOLING_ANNOTATION: "kubectl/v1.33.0"}}});
    let owner = apps(&client, "default")
        .patch("web", &PatchParams::default(), &Patch::Merge(&mark))
        .await
        .expect("mark");
    let err = Applier::new(client.clone(), ApplierConfig::default())
        .apply(&owner, [config_map("a", "1")])
        .await
        .expect_err("foreign tooling");
    assert!(matches!(err, ApplyError::ForeignApplySet { .. }), "{err:?}");
    assert!(get_config_map(&client, "default", "a").await.is_none());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cluster_scoped_owner_records_its_namespaces() {
    let (_sim, client) = start().await;
    create_namespace(&client, "team-a").await;
    create_namespace(&client, "team-b").await;
    let tenant: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "apps.example.com/v1", "kind": "Tenant", "metadata": {"name": "acme"}, "spec": {}
    }))
    .expect("tenant");
    let tenant = tenants(&client).create(&PostParams::default(), &tenant).await.expect("tenant created");
    let applier = Applier::new(client.clone(), ApplierConfig::default());
    let in_ns = |ns: &str| {
        let mut cm = config_map("quota", "1");
        cm["metadata"]["namespace"] = json!(ns);
        cm
    };
    let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                      "metadata": {"name": "acme-reader"}, "rules": []});
    let report = applier.apply(&tenant, [in_ns("team-a"), in_ns("team-b"), role]).await.expect("apply");
    assert_eq!(report.applied.len(), 3);
    let tenant = tenants(&client).get("acme").await.expect("tenant");
    let ann = tenant.annotations();
    assert_eq!(ann.get(ADDITIONAL_NAMESPACES_ANNOTATION).map(String::as_str), Some("team-a,team-b"));
    assert_eq!(
        ann.get(CONTAINS_GROUP_KINDS_ANNOTATION).map(String::as_str),
        Some("ClusterRole.rbac.authorization.k8s.io,ConfigMap")
    );
    assert_eq!(tenant.labels().get(ID_LABEL), Some(&applyset_id("acme", "", "Tenant", "apps.example.com")));

    let err =
        applier.apply(&tenant, [config_map("no-namespace", "1")]).await.expect_err("namespace required");
    assert!(matches!(err, ApplyError::CannotOwn { .. }), "{err:?}");

    let report = applier.apply(&tenant, [in_ns("team-a")]).await.expect("smaller set");
    assert_eq!(
        names(&report.pruned),
        ["ClusterRole.rbac.authorization.k8s.io acme-reader", "ConfigMap team-b/quota"]
    );
    let tenant = tenants(&client).get("acme").await.expect("tenant");
    assert_eq!(
        tenant.annotations().get(ADDITIONAL_NAMESPACES_ANNOTATION).map(String::as_str),
        Some("team-a")
    );
    assert_eq!(
        tenant.annotations().get(CONTAINS_GROUP_KINDS_ANNOTATION).map(String::as_str),
        Some("ConfigMap")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn deleting_the_owner_collects_its_children() {
    let (_sim, client) = start().await;
    let owner = create_app(&client, "default", "web").await;
    Applier::new(client.clone(), ApplierConfig::default())
        .apply(&owner, [config_map("a", "1"), deployment("web", "nginx:1")])
        .await
        .expect("apply");
    apps(&client, "default").delete("web", &DeleteParams::default()).await.expect("owner deleted");
    eventually(5, "children garbage-collected", || async {
        let cm = get_config_map(&client, "default", "a").await;
        let deploy =
            Api::<Deployment>::namespaced(client.clone(), "default").get_opt("web").await.expect("get");
        (cm.is_none() && deploy.is_none()).then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_refused_child_reads_like_kubectl() {
    let (_sim, client) = start().await;
    let owner = create_app(&client, "default", "web").await;
    let applier = Applier::new(client.clone(), ApplierConfig::default());
    let bad = json!({"apiVersion": "apps.example.com/v1", "kind": "App", "metadata": {"name": "bad"},
                     "spec": "not an object"});
    let err =
        applier.apply(&owner, [config_map("fine", "1"), bad]).await.expect_err("the CRD schema refuses it");
    let ApplyError::Apply { failures, report, .. } = &err else {
        panic!("expected an apply failure, got {err:?}")
    };
    assert_eq!(names(&report.applied), ["ConfigMap default/fine"]);
    let [failure] = failures.as_slice() else { panic!("one failure expected: {err}") };
    let text = failure.to_string();
    assert!(
        text.starts_with(
            r#"App.apps.example.com default/bad: 422 Invalid: App.apps.example.com "bad" is invalid: spec: "#
        ),
        "{text}"
    );
    assert!(
        matches!(&failure.error, ctop_applier::ChildError::Api(kube::Error::Api(s)) if s.code == 422),
        "the cause is kept"
    );
    let whole = err.to_string();
    assert!(whole.contains(&text), "{whole}");
    for text in [&text, &whole] {
        assert!(
            !text.contains("Status {") && !text.contains("ApiError") && !text.contains("ListMeta"),
            "{text}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_owner_left_without_children_is_no_applyset_parent_any_more() {
    // A decorator's parent is often an object it does not own (a StatefulSet): the record
    // must not stay on it once its children are gone.
    let (_sim, client) = start().await;
    let owner = create_app(&client, "default", "web").await;
    let applier = Applier::new(client.clone(), ApplierConfig::new("test-operator"));
    applier.apply(&owner, [config_map("web-config", "1")]).await.expect("applied");
    let owner = reread(&client, &owner).await;
    assert!(owner.labels().contains_key(ID_LABEL));
    let report = applier.apply(&owner, Vec::<Value>::new()).await.expect("pruned");
    assert_eq!(report.pruned.len(), 1);
    let owner = reread(&client, &owner).await;
    assert!(!owner.labels().contains_key(ID_LABEL), "{:?}", owner.labels());
    for a in [TOOLING_ANNOTATION, CONTAINS_GROUP_KINDS_ANNOTATION] {
        assert!(!owner.annotations().contains_key(a), "{a} left on the owner");
    }
    // Nothing to record, nothing written.
    let before = rv(&owner);
    applier.apply(&owner, Vec::<Value>::new()).await.expect("nothing");
    assert_eq!(rv(&reread(&client, &owner).await), before);
}

/// A cache that has seen nothing yet: every kind cached, no member in it.
struct Lagging;

impl ctop_applier::ChildCache for Lagging {
    fn get(&self, _: &ChildRef) -> Option<std::sync::Arc<dyn ctop_applier::CachedMeta>> {
        None
    }
    fn members(
        &self,
        _: &str,
        _: &str,
        _: Option<&str>,
        _: &str,
    ) -> Option<Vec<std::sync::Arc<dyn ctop_applier::CachedMeta>>> {
        Some(Vec::new())
    }
}

/// A pass that wants no children, run on a cache that has not seen the child the last pass
/// applied yet, still prunes it (read from the API server) before it drops the record: the
/// record gone with the child left would leave the child for good.
#[tokio::test(flavor = "multi_thread")]
async fn a_child_the_cache_has_not_seen_yet_is_pruned_before_the_record_goes() {
    let (_sim, client) = start().await;
    let owner = create_app(&client, "default", "web").await;
    let applier = Applier::new(client.clone(), ApplierConfig::default());
    applier.apply(&owner, [config_map("a", "1")]).await.expect("apply");
    let owner = reread(&client, &owner).await;
    assert!(owner.labels().contains_key(ID_LABEL));
    let none: [Value; 0] = [];
    let report = applier.apply_cached(&owner, none, &Lagging).await.expect("the empty pass");
    assert_eq!(names(&report.pruned), ["ConfigMap default/a"]);
    assert!(get_config_map(&client, "default", "a").await.is_none(), "the child is gone");
    let owner = reread(&client, &owner).await;
    assert!(!owner.labels().contains_key(ID_LABEL), "no children, no record");
}

/// The owner's identity and metadata handed in apart ([`ctop_applier::Owner`], what a cache
/// of JSON text holds) work as the owner itself: the first pass records the ApplySet on it
/// and applies the child under it, a second pass with the owner as re-read writes nothing,
/// and an owner without a uid is refused before anything is written.
#[tokio::test(flavor = "multi_thread")]
async fn an_owner_handed_in_apart_works_as_the_object() {
    let (_sim, client) = start().await;
    let owner = create_app(&client, "default", "web").await;
    let applier = Applier::new(client.clone(), ApplierConfig::default());
    let apart = |o: &DynamicObject| ctop_applier::Owner {
        api_version: "apps.example.com/v1".into(),
        kind: "App".into(),
        name: o.name_any(),
        namespace: o.namespace(),
        uid: o.uid().unwrap_or_default(),
        resource_version: o.resource_version(),
        labels: o.labels().clone().into_iter().collect(),
        annotations: o.annotations().clone().into_iter().collect(),
    };

    let report = applier
        .apply_cached_to(apart(&owner), [config_map("a", "1")], &Lagging, true)
        .await
        .expect("the first pass");
    assert_eq!(names(&report.applied), ["ConfigMap default/a"]);
    assert_eq!(report.owner_versions.len(), 1, "the ApplySet is recorded on the owner");
    let owner = reread(&client, &owner).await;
    let id = applyset_id("web", "default", "App", "apps.example.com");
    assert_eq!(owner.labels().get(ID_LABEL), Some(&id));
    let child = get_config_map(&client, "default", "a").await.expect("the child");
    let refs = child.metadata.owner_references.unwrap_or_default();
    assert_eq!(refs.len(), 1);
    assert_eq!(Some(&refs[0].uid), owner.metadata.uid.as_ref());

    let again = applier
        .apply_cached_to(apart(&owner), [config_map("a", "1")], &Lagging, true)
        .await
        .expect("the second pass");
    assert!(again.owner_versions.is_empty(), "the record on the owner was current: {again:?}");
    assert!(again.pruned.is_empty());

    let mut no_uid = apart(&owner);
    no_uid.uid.clear();
    let err =
        applier.apply_cached_to(no_uid, [config_map("b", "1")], &Lagging, true).await.expect_err("no uid");
    assert!(matches!(&err, ApplyError::InvalidOwner { .. }), "{err:?}");
    assert!(err.to_string().contains("metadata.uid"), "{err}");
    assert!(get_config_map(&client, "default", "b").await.is_none(), "nothing was written");
}

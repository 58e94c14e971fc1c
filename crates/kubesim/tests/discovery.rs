//! kubesim's discovery against what kube-apiserver 1.33 serves with its default API
//! groups (GA only: new beta APIs are off by default since 1.24).
//!
//! The 1.33 list is built from k8s-openapi's types (feature `v1_33`: each type names its
//! group-version, plural and scope, and exists only if 1.33 has it); short names,
//! categories, verbs and subresources are those of the API server's discovery documents
//! (`api/discovery/api__v1.json` and `api/discovery/aggregated_v2.json` in
//! kubernetes/kubernetes). What kubesim does not serve is named below, with the reason, and
//! in the README; anything else missing, or anything served that 1.33 does not serve, fails.

mod common;

use std::any::TypeId;
use std::collections::{BTreeMap, BTreeSet};

use common::start;
use k8s_openapi::api::{
    admissionregistration::v1 as admission, apps::v1 as apps, authentication::v1 as authn,
    authorization::v1 as authz, autoscaling::v1 as autoscaling1, autoscaling::v2 as autoscaling2,
    batch::v1 as batch, certificates::v1 as certificates, coordination::v1 as coordination, core::v1 as core,
    discovery::v1 as discovery, events::v1 as events, flowcontrol::v1 as flowcontrol,
    networking::v1 as networking, node::v1 as node, policy::v1 as policy, rbac::v1 as rbac,
    scheduling::v1 as scheduling, storage::v1 as storage,
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiextensions;
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1 as apiregistration;
use k8s_openapi::{NamespaceResourceScope, Resource};
use serde_json::Value;

const ALL: &[&str] = &["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"];
const RW: &[&str] = &["get", "patch", "update"];

/// One resource of 1.33's discovery.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Entry {
    kind: String,
    namespaced: bool,
    verbs: Vec<String>,
    short_names: Vec<String>,
    categories: Vec<String>,
}

struct Want {
    gv: &'static str,
    plural: &'static str,
    entry: Entry,
    subresources: Vec<(&'static str, &'static [&'static str])>,
}

fn strings(s: &[&str]) -> Vec<String> {
    s.iter().map(|s| (*s).to_owned()).collect()
}

/// A resource as k8s-openapi's 1.33 type names it, with all eight verbs.
fn r<K: Resource>() -> Want
where
    K::Scope: 'static,
{
    Want {
        gv: K::API_VERSION,
        plural: K::URL_PATH_SEGMENT,
        entry: Entry {
            kind: K::KIND.to_owned(),
            namespaced: TypeId::of::<K::Scope>() == TypeId::of::<NamespaceResourceScope>(),
            verbs: strings(ALL),
            short_names: Vec::new(),
            categories: Vec::new(),
        },
        subresources: Vec::new(),
    }
}

impl Want {
    fn short(mut self, s: &[&str]) -> Self {
        self.entry.short_names = strings(s);
        self
    }
    fn cat(mut self, c: &str) -> Self {
        self.entry.categories = vec![c.to_owned()];
        self
    }
    fn verbs(mut self, v: &[&str]) -> Self {
        self.entry.verbs = strings(v);
        self
    }
    fn sub(mut self, name: &'static str, verbs: &'static [&'static str]) -> Self {
        self.subresources.push((name, verbs));
        self
    }
    fn status(self) -> Self {
        self.sub("status", RW)
    }
}

/// Every resource kube-apiserver 1.33 serves by default.
fn kube_1_33() -> Vec<Want> {
    let review = &["create"][..];
    vec![
        r::<core::Binding>().verbs(review),
        r::<core::ComponentStatus>().short(&["cs"]).verbs(&["get", "list"]),
        r::<core::ConfigMap>().short(&["cm"]),
        r::<core::Endpoints>().short(&["ep"]),
        r::<core::Event>().short(&["ev"]),
        r::<core::LimitRange>().short(&["limits"]),
        r::<core::Namespace>()
            .short(&["ns"])
            .verbs(&["create", "delete", "get", "list", "patch", "update", "watch"])
            .sub("finalize", &["update"])
            .status(),
        r::<core::Node>()
            .short(&["no"])
            .sub("proxy", &["create", "delete", "get", "patch", "update"])
            .status(),
        r::<core::PersistentVolumeClaim>().short(&["pvc"]).status(),
        r::<core::PersistentVolume>().short(&["pv"]).status(),
        r::<core::Pod>()
            .short(&["po"])
            .cat("all")
            .sub("attach", &["create", "get"])
            .sub("binding", &["create"])
            .sub("ephemeralcontainers", RW)
            .sub("eviction", &["create"])
            .sub("exec", &["create", "get"])
            .sub("log", &["get"])
            .sub("portforward", &["create", "get"])
            .sub("proxy", &["create", "delete", "get", "patch", "update"])
            .sub("resize", RW)
            .status(),
        r::<core::PodTemplate>(),
        r::<core::ReplicationController>().short(&["rc"]).cat("all").sub("scale", RW).status(),
        r::<core::ResourceQuota>().short(&["quota"]).status(),
        r::<core::Secret>(),
        r::<core::ServiceAccount>().short(&["sa"]).sub("token", &["create"]),
        r::<core::Service>()
            .short(&["svc"])
            .cat("all")
            .sub("proxy", &["create", "delete", "get", "patch", "update"])
            .status(),
        r::<apiregistration::APIService>().cat("api-extensions").status(),
        r::<apps::ControllerRevision>(),
        r::<apps::DaemonSet>().short(&["ds"]).cat("all").status(),
        r::<apps::Deployment>().short(&["deploy"]).cat("all").sub("scale", RW).status(),
        r::<apps::ReplicaSet>().short(&["rs"]).cat("all").sub("scale", RW).status(),
        r::<apps::StatefulSet>().short(&["sts"]).cat("all").sub("scale", RW).status(),
        r::<events::Event>().short(&["ev"]),
        r::<authn::SelfSubjectReview>().verbs(review),
        r::<authn::TokenReview>().verbs(review),
        r::<authz::LocalSubjectAccessReview>().verbs(review),
        r::<authz::SelfSubjectAccessReview>().verbs(review),
        r::<authz::SelfSubjectRulesReview>().verbs(review),
        r::<authz::SubjectAccessReview>().verbs(review),
        r::<autoscaling2::HorizontalPodAutoscaler>().short(&["hpa"]).cat("all").status(),
        r::<autoscaling1::HorizontalPodAutoscaler>().short(&["hpa"]).cat("all").status(),
        r::<batch::CronJob>().short(&["cj"]).cat("all").status(),
        r::<batch::Job>().cat("all").status(),
        r::<certificates::CertificateSigningRequest>().short(&["csr"]).sub("approval", RW).status(),
        r::<networking::IngressClass>(),
        r::<networking::Ingress>().short(&["ing"]).status(),
        r::<networking::NetworkPolicy>().short(&["netpol"]),
        r::<networking::IPAddress>().short(&["ip"]),
        r::<networking::ServiceCIDR>().status(),
        r::<policy::PodDisruptionBudget>().short(&["pdb"]).status(),
        r::<rbac::ClusterRoleBinding>(),
        r::<rbac::ClusterRole>(),
        r::<rbac::RoleBinding>(),
        r::<rbac::Role>(),
        r::<storage::CSIDriver>(),
        r::<storage::CSINode>(),
        r::<storage::CSIStorageCapacity>(),
        r::<storage::StorageClass>().short(&["sc"]),
        r::<storage::VolumeAttachment>().status(),
        r::<admission::MutatingWebhookConfiguration>().cat("api-extensions"),
        r::<admission::ValidatingAdmissionPolicy>().cat("api-extensions").status(),
        r::<admission::ValidatingAdmissionPolicyBinding>().cat("api-extensions"),
        r::<admission::ValidatingWebhookConfiguration>().cat("api-extensions"),
        r::<apiextensions::CustomResourceDefinition>().short(&["crd", "crds"]).cat("api-extensions").status(),
        r::<scheduling::PriorityClass>().short(&["pc"]),
        r::<coordination::Lease>(),
        r::<node::RuntimeClass>(),
        r::<discovery::EndpointSlice>(),
        r::<flowcontrol::FlowSchema>().status(),
        r::<flowcontrol::PriorityLevelConfiguration>().status(),
    ]
}

/// What kubesim does not serve of 1.33's discovery (`gv resource[/subresource]`), each
/// listed in the README's differences.
const NOT_SERVED: &[&str] = &[
    // Behaviour, not storage: binding a Pod to a node, component health.
    "v1 bindings",
    "v1 pods/binding",
    "v1 componentstatuses",
    // Streams and proxies to kubelets and Services.
    "v1 pods/attach",
    "v1 pods/exec",
    "v1 pods/log",
    "v1 pods/portforward",
    "v1 pods/proxy",
    "v1 nodes/proxy",
    "v1 services/proxy",
    // Pod subresources with their own rules.
    "v1 pods/ephemeralcontainers",
    "v1 pods/eviction",
    "v1 pods/resize",
    // autoscaling/v1 needs conversion to and from the stored autoscaling/v2 form.
    "autoscaling/v1 horizontalpodautoscalers",
    "autoscaling/v1 horizontalpodautoscalers/status",
    // The approval subresource's own strategy (only status.conditions may change).
    "certificates.k8s.io/v1 certificatesigningrequests/approval",
    // The review of every rule a user holds (`kubectl auth can-i --list`).
    "authorization.k8s.io/v1 selfsubjectrulesreviews",
];

async fn get(client: &kube::Client, path: &str) -> Value {
    let req = http::Request::get(path).body(Vec::new()).expect("request");
    client.request::<Value>(req).await.unwrap_or_else(|e| panic!("GET {path}: {e}"))
}

/// What kubesim's discovery serves: `gv resource` → its entry.
async fn served(client: &kube::Client) -> BTreeMap<String, Entry> {
    let mut gvs = vec!["v1".to_owned()];
    let groups = get(client, "/apis").await;
    for g in groups["groups"].as_array().into_iter().flatten() {
        for v in g["versions"].as_array().into_iter().flatten() {
            gvs.push(v["groupVersion"].as_str().expect("groupVersion").to_owned());
        }
    }
    let mut out = BTreeMap::new();
    for gv in gvs {
        let path = if gv == "v1" { "/api/v1".to_owned() } else { format!("/apis/{gv}") };
        let list = get(client, &path).await;
        for res in list["resources"].as_array().into_iter().flatten() {
            let s = |k: &str| -> Vec<String> {
                res[k]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect()
            };
            let entry = Entry {
                kind: res["kind"].as_str().unwrap_or_default().to_owned(),
                namespaced: res["namespaced"].as_bool().unwrap_or_default(),
                verbs: s("verbs"),
                short_names: s("shortNames"),
                categories: s("categories"),
            };
            out.insert(format!("{gv} {}", res["name"].as_str().unwrap_or_default()), entry);
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread")]
async fn discovery_matches_kube_apiserver_1_33() {
    let (_sim, client) = start().await;
    let served = served(&client).await;
    let mut missing = Vec::new();
    let mut wrong = Vec::new();
    let mut expected: BTreeSet<String> = BTreeSet::new();
    for want in kube_1_33() {
        let key = format!("{} {}", want.gv, want.plural);
        expected.insert(key.clone());
        match served.get(&key) {
            Some(got) if *got == want.entry => {}
            Some(got) => wrong.push(format!("{key}: served {got:?}, 1.33 serves {:?}", want.entry)),
            None if NOT_SERVED.contains(&key.as_str()) => {}
            None => missing.push(key.clone()),
        }
        for (sub, verbs) in want.subresources {
            let key = format!("{key}/{sub}");
            expected.insert(key.clone());
            match served.get(&key) {
                Some(got) if got.verbs == strings(verbs) => {}
                Some(got) => wrong.push(format!("{key}: verbs {:?}, 1.33 serves {verbs:?}", got.verbs)),
                None if NOT_SERVED.contains(&key.as_str()) => {}
                None => missing.push(key),
            }
        }
    }
    let extra: Vec<&String> = served.keys().filter(|k| !expected.contains(*k)).collect();
    let stale: Vec<&&str> = NOT_SERVED.iter().filter(|k| served.contains_key(**k)).collect();
    assert!(
        missing.is_empty(),
        "1.33 serves these and kubesim does not (serve them or list them): {missing:#?}"
    );
    assert!(wrong.is_empty(), "served differently: {wrong:#?}");
    assert!(extra.is_empty(), "kubesim serves what 1.33 does not: {extra:#?}");
    assert!(stale.is_empty(), "served now, drop them from NOT_SERVED: {stale:#?}");
}

/// The storage-only kinds are stored and read back like any other: create, `/status`,
/// list, and the deleted object as the answer where the registry sets
/// `ReturnDeletedObject` (`pkg/registry/storage/volumeattachment/storage/storage.go`).
#[tokio::test(flavor = "multi_thread")]
async fn storage_only_kinds_are_stored() {
    use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
    let (_sim, client) = start().await;
    let attachments: Api<storage::VolumeAttachment> = Api::all(client.clone());
    let va: storage::VolumeAttachment = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "va"},
        "spec": {"attacher": "csi.example.com", "nodeName": "node-1", "source": {"persistentVolumeName": "pv-1"}}
    }))
    .expect("volume attachment");
    attachments.create(&PostParams::default(), &va).await.expect("create");
    let patched = attachments
        .patch_status(
            "va",
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"status": {"attached": true}})),
        )
        .await
        .expect("status");
    assert_eq!(patched.status.map(|s| s.attached), Some(true));
    let deleted = attachments.delete("va", &DeleteParams::default()).await.expect("delete");
    assert!(deleted.is_left(), "a VolumeAttachment's DELETE answers with the object");

    let capacities: Api<storage::CSIStorageCapacity> = Api::namespaced(client.clone(), "default");
    let cap: storage::CSIStorageCapacity = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "cap"}, "storageClassName": "standard", "capacity": "10Gi"
    }))
    .expect("capacity");
    capacities.create(&PostParams::default(), &cap).await.expect("create");
    assert_eq!(capacities.list(&Default::default()).await.expect("list").items.len(), 1);
    let classes: Api<node::RuntimeClass> = Api::all(client);
    let rc: node::RuntimeClass =
        serde_json::from_value(serde_json::json!({"metadata": {"name": "runc"}, "handler": "runc"}))
            .expect("runtime class");
    classes.create(&PostParams::default(), &rc).await.expect("create");
    let deleted = classes.delete("runc", &DeleteParams::default()).await.expect("delete");
    assert!(deleted.is_right(), "a RuntimeClass's DELETE answers with a Status");
}

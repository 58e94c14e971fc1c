//! The OpenAPI v3 component schemas of the built-in kinds, generated from k8s-openapi's
//! types (its `schemars` feature) and shaped like the API server's `/openapi/v3`: named
//! `io.k8s.api.apps.v1.Deployment`, referenced as `#/components/schemas/...`, a described
//! reference wrapped in `allOf`, `x-kubernetes-group-version-kind` on each kind, and the
//! `x-kubernetes-list-type`/`-list-map-keys`/`-map-type`/`-patch-strategy`/`-patch-merge-key`
//! extensions the Go types carry (from [`super::facts`]), which kubectl's client-side apply
//! reads to build strategic merge patches.
//!
//! Start at [`generate`]; [`kinds`] lists what kubesim serves (the built-ins of
//! `crate::kinds::registry`).

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::schemars::JsonSchema;
use k8s_openapi::schemars::generate::{SchemaGenerator, SchemaSettings};
use serde_json::{Value, json};

use super::facts;

/// One served built-in kind and the name of its schema.
#[derive(Debug, Clone)]
pub(crate) struct KindSchema {
    /// API group, empty for core.
    pub(crate) group: &'static str,
    /// Version.
    pub(crate) version: &'static str,
    /// Kind.
    pub(crate) kind: &'static str,
    /// Component name, e.g. `io.k8s.api.apps.v1.Deployment`.
    pub(crate) schema: String,
}

fn kind<T: k8s_openapi::Resource + JsonSchema>(g: &mut SchemaGenerator) -> KindSchema {
    g.subschema_for::<T>();
    KindSchema { group: T::GROUP, version: T::VERSION, kind: T::KIND, schema: T::schema_name().into_owned() }
}

/// Every built-in kind kubesim serves (the table in `crate::kinds::registry`), its schema added
/// to `g`.
fn kinds(g: &mut SchemaGenerator) -> Vec<KindSchema> {
    use k8s_openapi::api::{
        admissionregistration::v1 as admission, apps::v1 as apps, authentication::v1 as authn,
        authorization::v1 as authz, autoscaling::v2 as autoscaling, batch::v1 as batch,
        certificates::v1 as certificates, coordination::v1 as coordination, core::v1 as core,
        discovery::v1 as discovery, events::v1 as events, flowcontrol::v1 as flowcontrol,
        networking::v1 as networking, node::v1 as node, policy::v1 as policy, rbac::v1 as rbac,
        scheduling::v1 as scheduling, storage::v1 as storage,
    };
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiextensions;
    use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1 as apiregistration;
    vec![
        kind::<core::Namespace>(g),
        kind::<core::ConfigMap>(g),
        kind::<core::Secret>(g),
        kind::<core::Service>(g),
        kind::<core::ServiceAccount>(g),
        kind::<core::Pod>(g),
        kind::<core::PersistentVolumeClaim>(g),
        kind::<core::PersistentVolume>(g),
        kind::<core::Event>(g),
        kind::<core::Endpoints>(g),
        kind::<core::ReplicationController>(g),
        kind::<core::Node>(g),
        kind::<core::ResourceQuota>(g),
        kind::<core::LimitRange>(g),
        kind::<core::PodTemplate>(g),
        kind::<apps::Deployment>(g),
        kind::<apps::StatefulSet>(g),
        kind::<apps::DaemonSet>(g),
        kind::<apps::ReplicaSet>(g),
        kind::<apps::ControllerRevision>(g),
        kind::<batch::Job>(g),
        kind::<batch::CronJob>(g),
        kind::<networking::Ingress>(g),
        kind::<networking::IngressClass>(g),
        kind::<networking::NetworkPolicy>(g),
        kind::<networking::IPAddress>(g),
        kind::<networking::ServiceCIDR>(g),
        kind::<policy::PodDisruptionBudget>(g),
        kind::<autoscaling::HorizontalPodAutoscaler>(g),
        kind::<coordination::Lease>(g),
        kind::<apiregistration::APIService>(g),
        kind::<discovery::EndpointSlice>(g),
        kind::<events::Event>(g),
        kind::<rbac::Role>(g),
        kind::<rbac::RoleBinding>(g),
        kind::<rbac::ClusterRole>(g),
        kind::<rbac::ClusterRoleBinding>(g),
        kind::<admission::ValidatingWebhookConfiguration>(g),
        kind::<admission::MutatingWebhookConfiguration>(g),
        kind::<admission::ValidatingAdmissionPolicy>(g),
        kind::<admission::ValidatingAdmissionPolicyBinding>(g),
        kind::<apiextensions::CustomResourceDefinition>(g),
        kind::<storage::StorageClass>(g),
        kind::<storage::CSIDriver>(g),
        kind::<storage::CSINode>(g),
        kind::<storage::CSIStorageCapacity>(g),
        kind::<storage::VolumeAttachment>(g),
        kind::<certificates::CertificateSigningRequest>(g),
        kind::<node::RuntimeClass>(g),
        kind::<flowcontrol::FlowSchema>(g),
        kind::<flowcontrol::PriorityLevelConfiguration>(g),
        kind::<authz::SelfSubjectAccessReview>(g),
        kind::<authz::SubjectAccessReview>(g),
        kind::<authz::LocalSubjectAccessReview>(g),
        kind::<authn::SelfSubjectReview>(g),
        kind::<authn::TokenReview>(g),
        kind::<scheduling::PriorityClass>(g),
    ]
}

/// The generated schemas: every component, and the kinds that have one.
#[derive(Debug)]
pub(crate) struct Generated {
    /// Component name → schema, as `/openapi/v3` serves it.
    pub(crate) components: BTreeMap<String, Value>,
    /// The served kinds.
    pub(crate) kinds: Vec<KindSchema>,
}

const REF_PREFIX: &str = "#/components/schemas/";

/// Generates the schemas of every served built-in kind.
pub(crate) fn generate() -> Generated {
    let mut g = SchemaSettings::openapi3()
        .with(|s| {
            s.meta_schema = None;
        })
        .into_generator();
    let kinds = kinds(&mut g);
    let mut components: BTreeMap<String, Value> = g.take_definitions(true).into_iter().collect();
    for k in &kinds {
        if let Some(Value::Object(schema)) = components.get_mut(&k.schema) {
            schema.insert(
                "x-kubernetes-group-version-kind".into(),
                json!([{"group": k.group, "kind": k.kind, "version": k.version}]),
            );
            // k8s-openapi models ObjectMeta as always present; the API server's schema does
            // not require it.
            if let Some(Value::Array(required)) = schema.get_mut("required") {
                required.retain(|r| r != "metadata");
                if required.is_empty() {
                    schema.remove("required");
                }
            }
        }
    }
    add_markers(&mut components);
    Generated { components, kinds }
}

/// The `x-kubernetes-*` extensions of the Go markers, on the property schemas (and on the
/// schemas of atomic structs).
fn add_markers(components: &mut BTreeMap<String, Value>) {
    for &(schema, field, list_type, keys, strategy, merge_key, map_type) in facts::MARKERS {
        let Some(prop) = components
            .get_mut(schema)
            .and_then(|s| s.get_mut("properties"))
            .and_then(|p| p.get_mut(field))
            .and_then(Value::as_object_mut)
        else {
            continue;
        };
        if !list_type.is_empty() {
            prop.insert("x-kubernetes-list-type".into(), json!(list_type));
        }
        if !keys.is_empty() {
            prop.insert("x-kubernetes-list-map-keys".into(), json!(keys.split(',').collect::<Vec<_>>()));
        }
        if !strategy.is_empty() {
            prop.insert("x-kubernetes-patch-strategy".into(), json!(strategy));
        }
        if !merge_key.is_empty() {
            prop.insert("x-kubernetes-patch-merge-key".into(), json!(merge_key));
        }
        if !map_type.is_empty() {
            prop.insert("x-kubernetes-map-type".into(), json!(map_type));
        }
    }
    for schema in facts::ATOMIC_STRUCTS {
        if let Some(Value::Object(s)) = components.get_mut(*schema) {
            s.insert("x-kubernetes-map-type".into(), json!("atomic"));
        }
    }
}

/// The component named by a `$ref` (or a one-element `allOf` of one), if `schema` is one.
pub(crate) fn ref_name(schema: &Value) -> Option<&str> {
    if let Some(r) = schema.get("$ref").and_then(Value::as_str) {
        return r.strip_prefix(REF_PREFIX);
    }
    match schema.get("allOf").and_then(Value::as_array).map(Vec::as_slice) {
        Some([only]) => ref_name(only),
        _ => None,
    }
}

/// The names of `roots` and every component they reference, directly or not.
pub(crate) fn closure<'a>(
    components: &'a BTreeMap<String, Value>,
    roots: impl IntoIterator<Item = &'a str>,
) -> BTreeSet<&'a str> {
    let mut seen = BTreeSet::new();
    let mut todo: Vec<&str> = roots.into_iter().collect();
    while let Some(name) = todo.pop() {
        let Some((key, schema)) = components.get_key_value(name) else { continue };
        if seen.insert(key.as_str()) {
            refs(schema, &mut todo);
        }
    }
    seen
}

fn refs<'a>(v: &'a Value, out: &mut Vec<&'a str>) {
    match v {
        Value::Object(m) => {
            if let Some(r) = m.get("$ref").and_then(Value::as_str).and_then(|r| r.strip_prefix(REF_PREFIX)) {
                out.push(r);
            }
            m.values().for_each(|v| refs(v, out));
        }
        Value::Array(a) => a.iter().for_each(|v| refs(v, out)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deployment_is_shaped_like_the_api_servers() {
        let g = generate();
        let d = &g.components["io.k8s.api.apps.v1.Deployment"];
        assert_eq!(
            d["x-kubernetes-group-version-kind"],
            json!([{"group": "apps", "kind": "Deployment", "version": "v1"}])
        );
        assert!(d.get("required").is_none(), "{d}");
        assert_eq!(ref_name(&d["properties"]["spec"]), Some("io.k8s.api.apps.v1.DeploymentSpec"));
        assert!(d["properties"]["spec"]["description"].is_string());
        let containers = &g.components["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"];
        assert_eq!(containers["x-kubernetes-patch-merge-key"], "name");
        assert_eq!(containers["x-kubernetes-patch-strategy"], "merge");
        assert_eq!(containers["x-kubernetes-list-map-keys"], json!(["name"]));
        assert_eq!(ref_name(&containers["items"]), Some("io.k8s.api.core.v1.Container"));
        let strategy = &g.components["io.k8s.api.apps.v1.DeploymentSpec"]["properties"]["strategy"];
        assert_eq!(strategy["x-kubernetes-patch-strategy"], "retainKeys");
        assert_eq!(
            g.components["io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector"]["x-kubernetes-map-type"],
            "atomic"
        );
        let names = closure(&g.components, ["io.k8s.api.apps.v1.Deployment"]);
        assert!(names.contains("io.k8s.api.core.v1.Container"));
        assert!(!names.contains("io.k8s.api.core.v1.Service"));
    }
}

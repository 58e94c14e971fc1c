//! The built-in kinds the SDK has a handle for: the one list, in the order the SDK exports
//! them. Their plural and scope come from k8s-openapi (`Resource`), their typings from its
//! schemas; to offer another kind, add its type here and regenerate.

use std::any::TypeId;

use k8s_openapi::schemars::JsonSchema;
use k8s_openapi::schemars::SchemaGenerator;

/// One built-in kind, its schema added to the generator.
pub struct Kind {
    pub api_version: &'static str,
    pub kind: &'static str,
    /// The resource name, `deployments`.
    pub plural: &'static str,
    pub namespaced: bool,
    /// Its component, `io.k8s.api.apps.v1.Deployment`.
    pub schema: String,
}

fn kind<T: k8s_openapi::Resource + JsonSchema + 'static>(g: &mut SchemaGenerator) -> Kind {
    g.subschema_for::<T>();
    Kind {
        api_version: T::API_VERSION,
        kind: T::KIND,
        plural: T::URL_PATH_SEGMENT,
        namespaced: TypeId::of::<T::Scope>() == TypeId::of::<k8s_openapi::NamespaceResourceScope>(),
        schema: T::schema_name().into_owned(),
    }
}

/// Every kind the SDK has a handle for, in its order.
pub fn kinds(g: &mut SchemaGenerator) -> Vec<Kind> {
    use k8s_openapi::api::{
        apps::v1 as apps, autoscaling::v2 as autoscaling, batch::v1 as batch,
        coordination::v1 as coordination, core::v1 as core, networking::v1 as networking,
        policy::v1 as policy, rbac::v1 as rbac, storage::v1 as storage,
    };
    vec![
        kind::<core::ConfigMap>(g),
        kind::<core::Secret>(g),
        kind::<core::Service>(g),
        kind::<core::ServiceAccount>(g),
        kind::<core::Pod>(g),
        kind::<core::PersistentVolumeClaim>(g),
        kind::<core::Endpoints>(g),
        kind::<core::LimitRange>(g),
        kind::<core::ResourceQuota>(g),
        kind::<core::Namespace>(g),
        kind::<core::Node>(g),
        kind::<core::PersistentVolume>(g),
        kind::<apps::Deployment>(g),
        kind::<apps::StatefulSet>(g),
        kind::<apps::DaemonSet>(g),
        kind::<apps::ReplicaSet>(g),
        kind::<batch::Job>(g),
        kind::<batch::CronJob>(g),
        kind::<networking::Ingress>(g),
        kind::<networking::NetworkPolicy>(g),
        kind::<networking::IngressClass>(g),
        kind::<rbac::Role>(g),
        kind::<rbac::RoleBinding>(g),
        kind::<rbac::ClusterRole>(g),
        kind::<rbac::ClusterRoleBinding>(g),
        kind::<autoscaling::HorizontalPodAutoscaler>(g),
        kind::<policy::PodDisruptionBudget>(g),
        kind::<coordination::Lease>(g),
        kind::<storage::StorageClass>(g),
    ]
}

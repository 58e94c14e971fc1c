//! The `Operator` CRD (Δ-controller's schema, as `ctop-declarative` ships it), installed
//! when the cluster lacks it.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::{Api, Client};
use serde_json::Value;

use crate::ManagerError;

/// The name of the `Operator` CRD.
pub(crate) const NAME: &str = "operators.dcontroller.io";

/// The `Operator` CRD document.
pub(crate) fn document() -> Result<Value, ManagerError> {
    let resource =
        ctop_declarative::operator::operator_resource().map_err(|e| ManagerError::Schema(e.to_string()))?;
    ctop_manifests::crd(&resource, &serde_json::Map::new()).map_err(|e| ManagerError::Schema(e.to_string()))
}

/// Install the `Operator` CRD as `manager` unless it is there (an existing one, maybe of
/// Δ-controller itself, is left as it is).
pub(crate) async fn ensure(client: &Client, manager: &str) -> Result<(), ManagerError> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    if api.get_opt(NAME).await.map_err(ManagerError::ReadCrd)?.is_some() {
        return Ok(());
    }
    tracing::info!(crd = NAME, "installing the Operator CRD");
    ctop_controller::install_crds(client, &[document()?], manager).await.map_err(ManagerError::Crd)
}

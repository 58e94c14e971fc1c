//! Δ-controller `Operator`s run by ctop's controller.
//!
//! Start at [`Operator::from_yaml`] (the document, each controller typed or kept with its
//! error), then [`OperatorHandlers::new`]: the [`ctop_core::Handlers`] that
//! `ctop_controller::run` drives, whose [`ctop_core::Handlers::spec`] is the one ctop
//! controller of the Operator ([`operator_spec`]: the `Operator` object as primary, the
//! sources read and watched, the Updater targets managed, the view CRDs), from which
//! `ctop-manifests` derives the CRDs and least-privilege RBAC as for a script.
//!
//! - `model`: the document read into types, a view kind's API version;
//! - `spec`: the [`ctop_core::OperatorSpec`] and CRDs;
//! - `runner`: one Δ controller, level-based with incremental catch-up;
//! - `outputs`: Updater children and Patcher applies from a target view;
//! - `status`: `status.controllers[]` as Δ-controller writes it;
//! - `handlers`: [`OperatorHandlers`].

mod error;
mod handlers;
mod model;
mod outputs;
mod runner;
mod spec;
mod status;

pub use error::OperatorError;
pub use handlers::OperatorHandlers;
pub use model::{
    Controller, OPERATOR_API_VERSION, Operator, Source, SourceType, Target, TargetType, VIEW_VERSION,
    view_group,
};
pub use spec::{operator_kind, operator_resource, operator_spec};

/// Whether a YAML text is an `Operator` document (`kind: Operator` of `dcontroller.io`):
/// what the CLI asks of a file it is given instead of a script directory.
pub fn is_operator_yaml(text: &str) -> bool {
    ctop_core::yaml::from_str::<serde_json::Value>(text).is_ok_and(|v| {
        v.get("kind").and_then(serde_json::Value::as_str) == Some("Operator")
            && v.get("apiVersion").and_then(serde_json::Value::as_str) == Some(OPERATOR_API_VERSION)
    })
}

#[cfg(test)]
mod tests;

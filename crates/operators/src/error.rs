//! Why the manager cannot run at all (an Operator that cannot run is no error of the
//! manager: it is reported in that Operator's status).

/// The manager cannot start or go on.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ManagerError {
    /// No client of the cluster (the kubeconfig does not read or names no cluster).
    #[error(transparent)]
    Client(ctop_controller::RunError),
    /// The `Operator` CRD is missing and could not be installed (no right to create CRDs).
    #[error(
        "the Operator CRD operators.dcontroller.io is not installed and could not be installed: {0} (apply it \
         first: ctop manifests --operators | kubectl apply --server-side -f -)"
    )]
    Crd(#[source] ctop_controller::RunError),
    /// The `Operator` CRD could not be read.
    #[error("cannot read the CRD operators.dcontroller.io: {0}")]
    ReadCrd(#[source] kube::Error),
    /// The health or metrics port cannot be bound.
    #[error(transparent)]
    Serve(#[from] ctop_controller::health::HealthError),
    /// The CRD ctop ships does not read (a build defect).
    #[error("the Operator CRD shipped with ctop does not read: {0}")]
    Schema(String),
}

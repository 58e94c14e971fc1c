//! Why an `Operator` document cannot be run at all (a controller that cannot run is no
//! error of the whole: it is reported in the Operator's status and the others run).

/// An `Operator` document ctop cannot run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum OperatorError {
    /// The text is not YAML.
    #[error("the Operator is not valid YAML: {0}")]
    Yaml(String),
    /// The document is of another kind.
    #[error("the document is a {found}, not a dcontroller.io/v1alpha1 Operator")]
    NotAnOperator {
        /// `apiVersion/kind` of the document.
        found: String,
    },
    /// `metadata.name` is missing.
    #[error("the Operator has no metadata.name")]
    NoName,
    /// The name cannot name a view group.
    #[error(
        "the Operator's name {0:?} is not a DNS label (lower case letters, digits and '-', at most 63): it names \
         the operator's view group <name>.view.dcontroller.io"
    )]
    BadName(String),
    /// `spec.controllers` is missing or empty.
    #[error("Operator {operator:?}: spec.controllers: an Operator needs at least one controller")]
    NoControllers {
        /// The Operator.
        operator: String,
    },
    /// The embedded CRD of `Operator` does not read (a build defect).
    #[error("the Operator CRD schema shipped with ctop does not read: {0}")]
    Schema(String),
}

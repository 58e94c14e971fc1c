//! The one error type of the crate.
//!
//! Every variant carries `path`: where in the YAML the failing piece stands, written
//! like `pipeline[1].@project.metadata.name.@concat[2]` (a stage, then the keys of the
//! expression, `[i]` for list items and `.@op` for an operator's argument). A caller
//! prefixes it with the controller's name and has a message a user can act on.

/// What went wrong, and where in the pipeline or expression.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The YAML/JSON is not a valid expression, stage or pipeline.
    #[error("{path}: {message}")]
    Parse {
        /// Where the offending value stands.
        path: String,
        /// What is wrong with it.
        message: String,
    },
    /// A JSONPath does not parse (reported when it is first evaluated, as a path in a
    /// branch that is never taken is no error).
    #[error("{path}: invalid JSONPath {jsonpath:?}: {message}")]
    JsonPath {
        /// Where the string stands.
        path: String,
        /// The JSONPath text.
        jsonpath: String,
        /// Why it does not parse.
        message: String,
    },
    /// An operator got arguments it cannot use.
    #[error("{path}: {op}: {message}")]
    Eval {
        /// Where the operator stands.
        path: String,
        /// The operator, e.g. `@concat`.
        op: String,
        /// What is wrong with its arguments.
        message: String,
    },
    /// A JSONPath setter (a `$`-key) could not write its value.
    #[error("{path}: cannot set {jsonpath:?}: {message}")]
    Set {
        /// Where the setter stands.
        path: String,
        /// The JSONPath being written.
        jsonpath: String,
        /// Why it could not be written.
        message: String,
    },
    /// A stage produced something of the wrong shape (a `@select` that is not a boolean,
    /// a `@project` that is not an object, a target without a name, …).
    #[error("{path}: {message}")]
    Stage {
        /// The stage, e.g. `pipeline[2].@select`.
        path: String,
        /// What the stage produced and what it should have.
        message: String,
    },
    /// An event the pipeline cannot take (an unknown source, a delete of an object it
    /// never saw, an object without a name).
    #[error("source {input}: {message}")]
    Event {
        /// The source the event came from.
        input: String,
        /// What is wrong with the event.
        message: String,
    },
}

impl Error {
    /// Where in the YAML the error stands (for an [`Error::Event`], the source's name).
    pub fn path(&self) -> &str {
        match self {
            Error::Parse { path, .. }
            | Error::JsonPath { path, .. }
            | Error::Eval { path, .. }
            | Error::Set { path, .. }
            | Error::Stage { path, .. } => path,
            Error::Event { input, .. } => input,
        }
    }
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

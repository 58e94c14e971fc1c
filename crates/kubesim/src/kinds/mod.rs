//! What kubesim knows about kinds and objects: the served resources ([`registry`]), the
//! built-in kinds' schemas and Go decoding ([`builtin`]), the metadata rules every object
//! follows ([`meta`]) and label selectors ([`selector`]).

pub(crate) mod builtin;
pub(crate) mod meta;
pub(crate) mod registry;
pub(crate) mod selector;

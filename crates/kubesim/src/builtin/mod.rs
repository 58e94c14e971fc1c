//! Built-in kinds' schemas, and decoding a built-in object like the API server's Go types.
//!
//! Start at [`catalog`]: generated once per process (k8s-openapi's schemas, see
//! [`schemas`]), it serves the `/openapi/v3` components of each group-version
//! (`crate::openapi`) and holds the compiled decoding tree of every kind.

mod facts;
mod golang;
pub(crate) mod schemas;
mod tree;

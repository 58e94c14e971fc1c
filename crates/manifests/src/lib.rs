//! # ctop-manifests: deploy an operator with one pipe
//!
//! This crate will turn an `OperatorSpec` plus a bundle and options into the documents
//! that install an operator: CRDs from the script's schemas, least-privilege RBAC, the
//! ServiceAccount, a ConfigMap carrying `bundle.js.gz` and values, a Deployment whose pod
//! template carries the bundle hash, webhook Service and configurations, and a plugin
//! trait through which documents can be added or changed.
//!
//! It is filled by the `ctop manifests` issue.

pub use ctop_core as core;

//! # ctop-webhook: admission webhooks written in the operator script
//!
//! This crate will own the AdmissionReview v1 HTTPS server (axum + rustls): routes derived
//! from the script, JSONPatch answers for mutations, TLS from files or self-issued, and
//! bounded body size, concurrency and time. It reaches the script only through a trait that
//! the CLI wires to the runtime.
//!
//! It is filled by the admission webhook issue.

pub use ctop_core as core;

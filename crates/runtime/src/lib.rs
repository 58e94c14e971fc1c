//! # ctop-runtime: scripts in, reconciles out
//!
//! This crate will own everything between an `operator.ct` file and a running
//! controller: TypeScript → JavaScript with oxc and module resolution, the deterministic
//! `bundle.js.gz`, the QuickJS VM pool with memory and time limits, the embedded SDK module
//! `ctop` with its hand-written `.d.ts`, the host callbacks (`getObserved`, `setStatus`, …),
//! and the controller built on kube-runtime (primary and secondary watches, mappers,
//! periodic sources, finalizers, leader election, health and metrics).
//!
//! It is filled by the script-runtime and `ctop run` issues; today it only re-exports the
//! shared vocabulary so that the layering compiles.

pub use ctop_core as core;

//! # ctop-runtime: scripts in, reconciles out
//!
//! This crate owns everything between an `operator.ct` file and a running controller.
//! Start with [`load::load_dir`], which turns an operator directory into a [`Bundle`]
//! (TypeScript stripped by oxc, imports resolved, one deterministic `bundle.js.gz`), then
//! [`vm::Pool`], which runs that bundle in QuickJS runtimes with memory and time limits and
//! dispatches handler calls with JSON in and out.
//!
//! [`Script`] ties them together: load a directory or a bundle, build a pool with the
//! embedded SDK ([`sdk`]), map error positions back to the TypeScript source, and extract
//! the [`ctop_core::OperatorSpec`] the script declares.
//!
//! [`controller`] runs a script against a cluster (`ctop run`): one kube-runtime controller
//! per declared operator, caches of managed and read kinds passed as `observed`, children
//! applied with `ctop_applier`, status through the subresource, events, finalizers,
//! per-object backoff, with [`leader`] election and the [`health`] and metrics servers.

pub mod bundle;
pub mod controller;
pub mod egress;
mod fetch;
pub mod health;
pub mod leader;
pub mod load;
pub mod pool;
pub mod scaffold;
pub mod script;
pub mod sdk;
mod snapshot;
pub mod typegen;
pub mod vm;

pub use bundle::{Bundle, BundleError, Module};
pub use load::{LoadError, load_dir};
pub use pool::Pool;
pub use script::{Script, ScriptError};
pub use vm::{Limits, Observer, Vm, VmError};

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
//! Still to come here (see the issues): the controller built on kube-runtime.

pub mod bundle;
mod fetch;
pub mod health;
pub mod leader;
pub mod load;
pub mod scaffold;
pub mod script;
pub mod sdk;
pub mod typegen;
pub mod vm;

pub use bundle::{Bundle, BundleError, Module};
pub use load::{LoadError, load_dir};
pub use script::{Script, ScriptError};
pub use vm::{Limits, Pool, Vm, VmError};

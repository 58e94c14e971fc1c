//! # ctop-runtime: scripts in, reconciles out
//!
//! This crate owns everything between an `operator.ct` file and a running controller.
//! Start with [`load::load_dir`], which turns an operator directory into a [`Bundle`]
//! (TypeScript stripped by oxc, imports resolved, one deterministic `bundle.js.gz`), then
//! [`pool::Pool`], which runs that bundle in QuickJS runtimes with memory and time limits and
//! dispatches handler calls with JSON in and out.
//!
//! [`Script`] ties them together: load a directory or a bundle, build a pool with the
//! embedded SDK ([`sdk`]: the JavaScript of `sdk/ctop.js` and its modules `sdk/src/*.js`, and
//! the typings, whose built-in kinds `tests/k8s_typings` generates from k8s-openapi), map
//! error positions back to the TypeScript source, and extract the
//! [`ctop_core::OperatorSpec`] the script declares. [`vm`] is one QuickJS runtime: its
//! `mod.rs` is the call with its limits; the host functions it installs are
//! [`vm::HOST_FUNCTIONS`].
//!
//! [`handlers::ScriptHandlers`] serves a script's handler calls to the controller
//! (`ctop-controller`) as typed outcomes ([`ctop_core::ReconcileOutcome`] and its
//! siblings); this crate knows nothing of watches or the API. It also converts a multi-version
//! resource's objects between versions ([`ScriptHandlers::convert`], which the conversion
//! webhook calls) and checks that they survive a round trip ([`conversion`]).

pub mod bundle;
pub mod conversion;
pub mod cron;
pub mod diagnostic;
pub mod egress;
mod fetch;
pub mod handlers;
pub mod load;
pub mod pool;
pub mod scaffold;
pub mod script;
pub mod sdk;
mod snapshot;
pub mod sources;
pub mod typegen;
pub mod vm;

pub use bundle::{Bundle, BundleError, Module, SizeReport};
pub use conversion::RoundTripError;
pub use diagnostic::CodeFrame;
pub use handlers::{InvariantViolation, ScriptHandlers, ValuesError, script_env, values_from_yaml};
pub use load::{LoadError, load_dir};
pub use pool::Pool;
pub use script::{Script, ScriptError};
pub use sources::SourceWatch;
pub use vm::{Answer, Clock, ClockFn, Limits, Observer, Source, Vm, VmError};

//! # ctop-runtime: scripts in, reconciles out
//!
//! This crate owns everything between an `operator.ct` file and a running controller.
//!
//! **Start with [`Script`]**: [`Script::from_dir`] loads an operator directory (or
//! [`Script::from_bundle_gz`] a `bundle.js.gz` from `ctop bundle`), runs it in a pool of
//! QuickJS runtimes with the embedded SDK under [`Limits`], and exposes the
//! [`ctop_core::OperatorSpec`] the script declares ([`Script::spec`]). Then wrap it in
//! [`ScriptHandlers`], which serves the script's handler calls to the controller
//! (`ctop-controller`) as typed outcomes ([`ctop_core::ReconcileOutcome`] and its
//! siblings); this crate knows nothing of watches or the API.
//!
//! The parts, for when the whole is not what you need:
//!
//! - [`load_dir`] turns an operator directory into a [`Bundle`] (TypeScript stripped by oxc,
//!   imports resolved, one deterministic `bundle.js.gz`); its errors are [`LoadError`],
//!   which [`Framed`] shows with the code frame of their position ([`frame_in`] finds the
//!   frame of any error of this crate);
//! - [`Vm`] is one QuickJS runtime, the call with its limits, and [`Pool`] a set of them;
//!   [`Observer`] sees each call's nondeterministic inputs ([`Answer`], [`Source`]);
//! - [`ScriptHandlers::convert`] converts a multi-version resource's objects between
//!   versions (the conversion webhook calls it) and [`ScriptHandlers::round_trip`] checks
//!   that they survive a round trip ([`RoundTripError`]);
//! - [`SourceWatch`] tells when an operator directory's sources changed (`ctop dev`);
//! - [`resource_typings`] writes the typings of a script's own resources;
//! - the modules [`sdk`] (the JavaScript of `sdk/ctop.js` and its modules `sdk/src/*.js`,
//!   and the typings, whose built-in kinds `tests/k8s_typings` generates from k8s-openapi)
//!   and [`scaffold`] (what `ctop init` writes).

mod bundle;
mod conversion;
mod cron;
mod diagnostic;
mod egress;
mod fetch;
mod handlers;
mod load;
mod pool;
pub mod scaffold;
mod script;
pub mod sdk;
mod snapshot;
mod sources;
mod typegen;
mod vm;

pub use bundle::{Bundle, BundleError, Module, SizeReport};
pub use conversion::RoundTripError;
pub use diagnostic::{Framed, frame_in};
pub use handlers::{
    ENV_PREFIX, InvariantViolation, ScriptHandlers, ValuesError, script_env, values_from_yaml,
};
pub use load::{LoadError, load_dir};
pub use pool::Pool;
pub use script::{Script, ScriptError};
pub use sources::SourceWatch;
pub use typegen::resource_typings;
pub use vm::{Answer, Clock, ClockFn, Limits, Observer, Source, Vm, VmError};

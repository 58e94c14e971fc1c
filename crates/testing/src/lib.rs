//! # ctop-testing: `ctop test`, an operator's own tests in milliseconds
//!
//! An operator directory's `tests/*.yaml` are lists of steps (apply, delete, patch, advance
//! the clock, drive Pods, inject API faults) with expectations; each test runs against an
//! in-process kubesim and the operator's real controllers, on a paused Tokio clock so that
//! `advance: 1h` takes no real time. The test format is documented in this crate's
//! `README.md`.
//!
//! Start with [`run_test`]: it parses nothing itself; give it an [`Operator`] and a
//! [`TestFile`] (from [`TestFile::read`]) and it returns a [`TestReport`]; [`report`] renders
//! reports (text, summary line, JUnit XML). Two parts have APIs of their own, kept as
//! modules: [`fuzz`] (`ctop test --fuzz`: seeded steps, oracles, shrinking) and [`replay`]
//! (`ctop replay`: a recording's calls run again against a script, and what differs).
//!
//! Inside, one concern a module (private; what other crates use is re-exported here):
//! `format` (the test file format and its parser; errors name the file and line), `world`
//! (the in-process kubesim and operator a test acts on, [`World`]), `record` (every handler
//! call, recorded by a wrapper of the script's handlers), `settle` (running until quiet on
//! the virtual clock, and naming what never converged: [`settle()`], [`advance`]), `state`
//! (the cluster as JSON, with the operator's primaries and their children), `matching`
//! (partial matching of expectations), `golden` (golden files), `oracles` (checked after
//! every step) and `perturb` (acting after the last step), `runner` (one test file, start to
//! end), `seed` (a test's `seed:` step, the cluster filled with what a recording saw).
//!
//! The fuzzer reuses the same parts: [`World::start`], then for each (random) step
//! [`World::act`] and [`settle()`], then [`World::snapshot`] and the oracles.

mod format;
pub mod fuzz;
mod golden;
mod matching;
mod oracles;
mod perturb;
mod record;
pub mod replay;
pub mod report;
mod runner;
mod seed;
mod settle;
mod state;
mod world;

pub use format::{Action, FormatError, ObjectRef, TestFile};
pub use runner::{GoldenMode, GoldenOutcome, TestReport, run_test, test_files};
pub use seed::collect as collect_seeds;
pub use settle::{MAX_CALLS, Quiet, advance, human, settle};
pub use world::{Operator, World, WorldConfig, values_for};

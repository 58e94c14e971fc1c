//! # ctop-testing: `ctop test`, an operator's own tests in milliseconds
//!
//! An operator directory's `tests/*.yaml` are lists of steps (apply, delete, patch, advance
//! the clock, drive Pods, inject API faults) with expectations; each test runs against an
//! in-process kubesim and the operator's real controllers, on a paused Tokio clock so that
//! `advance: 1h` takes no real time. The test format is documented in this crate's
//! `README.md`.
//!
//! Start with [`runner::run_test`]: it parses nothing itself; give it an [`Operator`] and a
//! [`TestFile`] (from [`TestFile::read`]) and it returns a [`TestReport`]. The modules, one
//! concern each:
//!
//! - [`mod@format`]: the test file format and its parser (errors name the file and line);
//! - [`world`]: the in-process kubesim and operator a test acts on ([`World`]);
//! - [`record`]: every handler call, recorded by a wrapper of the script's handlers;
//! - [`settle`]: running until quiet on the virtual clock, and naming what never converged;
//! - [`state`]: the cluster as JSON, with the operator's primaries and their children;
//! - [`matching`]: partial matching of expectations;
//! - [`golden`]: golden files (rendering, normalization, diffs);
//! - [`oracles`] (checked after every step) and [`perturb`] (acting after the last step);
//! - [`runner`]: one test file, start to end; [`report`]: text, summary line, JUnit XML;
//! - [`replay`]: `ctop replay`, a recording's calls run again against a script, and what differs
//!   (and a test's `replay:` step, [`replay::step`]);
//! - [`seed`]: a test's `seed:` step, the cluster filled with what a recording saw.
//!
//! A fuzzer reuses the same parts: [`World::start`], then for each (random) step
//! [`World::act`] and [`settle::settle`], then [`World::snapshot`] and the oracles
//! ([`oracles::after_step`] on the snapshot, the [`perturb`] ones on the world).

pub mod format;
pub mod fuzz;
pub mod golden;
pub mod matching;
pub mod oracles;
pub mod perturb;
pub mod record;
pub mod replay;
pub mod report;
pub mod runner;
pub mod seed;
pub mod settle;
pub mod state;
pub mod world;

pub use format::{FormatError, TestFile};
pub use runner::{GoldenMode, TestReport, run_test, test_files};
pub use world::{Operator, World};

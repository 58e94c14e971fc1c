//! The declarative operator language of Δ-controller (`dcontroller.io/v1alpha1`
//! `Operator`s), as a pure library: expressions, the JSONPath dialect they read and write,
//! and pipelines that turn events on source objects into events on target objects.
//!
//! # Where to start
//!
//! * [`Expr`]: parse an expression once ([`Expr::parse`]) from a `serde_json::Value` (as
//!   read from YAML or JSON), evaluate it many times ([`Expr::evaluate`]).
//! * [`Pipeline`]: parse a controller's `pipeline` with its source kinds
//!   ([`Pipeline::new`]), feed it source [`Delta`]s ([`Pipeline::evaluate`]), get the
//!   target [`Delta`]s back.
//! * [`JsonPath`]: the ojg dialect on its own.
//! * [`Error`]: every error names where in the YAML it stands.
//! * [`Operator`] and [`OperatorHandlers`] (module [`operator`]): a whole `Operator`
//!   document run by ctop's controller, one ctop controller per Operator, each Δ controller
//!   evaluated level-based from the caches; Updater targets become children of the
//!   Operator, Patcher targets server-side applies under a field manager of their own, and
//!   the status is Δ-controller's `status.controllers[]`.
//!
//! ```
//! use ctop_declarative::Expr;
//! use serde_json::json;
//!
//! let e = Expr::parse(&json!({"@concat": ["$.metadata.name", "-", "$.spec.n"]}), "expr")?;
//! let v = e.evaluate(&json!({"metadata": {"name": "web"}, "spec": {"n": 3}}))?;
//! assert_eq!(v, json!("web-3"));
//! # Ok::<(), ctop_declarative::Error>(())
//! ```
//!
//! `DIVERGENCES.md` (next to this crate's `Cargo.toml`) lists where this crate
//! deliberately differs from Δ-controller, and why; `tests/fixtures/` holds the
//! conformance cases ported from Δ-controller's tests, run by `tests/conformance.rs`.
//!
//! # Cost model
//!
//! A pipeline is evaluated incrementally: it keeps each source's objects, the joined rows,
//! the input of each `@gather` group and the target view, and an event costs work in
//! proportion to what it changes, not to the size of the sources:
//!
//! * `@select`, `@project`, `@unwind`: O(rows the event changes), each row once.
//! * `@join`: an event on source S joins the new (and old) object with the other
//!   sources. Equalities between two sources' fields (`@eq: ["$.Pod.spec.x",
//!   "$.Service.metadata.name"]`, alone or among the arguments of an `@and`) are served by
//!   a hash index on each side, so an event costs O(matching objects) lookups plus the
//!   evaluation of the whole join condition on each candidate row. A source that no
//!   equality connects to the ones already joined is scanned, O(its objects) — as
//!   Δ-controller's nested loop does for every source.
//! * `@gather`: O(size of the groups the event touches), each touched group rebuilt once.
//! * The target view: O(log n) per target object that changes.

mod error;
mod expr;
mod jsonpath;
pub mod operator;
mod pipeline;

pub use error::{Error, Result};
pub use expr::Expr;
pub use jsonpath::JsonPath;
pub use operator::{Operator, OperatorError, OperatorHandlers};
pub use pipeline::{Delta, DeltaType, Pipeline, Stage};

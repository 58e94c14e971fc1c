//! # ctop-core: the vocabulary every ctop layer shares
//!
//! This crate is pure data with no I/O. It will own the operator description that the
//! runtime extracts from a script (`OperatorSpec`: resources with their OpenAPI schemas,
//! controllers, watches, manages/reads/permissions, schedules, finalizers, webhooks), the
//! `ReconcileOutcome` a script call returns, and the error types shared across crates.
//!
//! Start with [`OperatorSpec`], what one script declares, and [`Duration`], the
//! `"5m"`/`"1h30m"`/`"250ms"` strings that scripts and the CLI use for periods and timeouts.

mod bytes;
mod duration;
mod egress;
mod labels;
mod spec;

pub use bytes::{ByteSize, ByteSizeError};
pub use duration::{Duration, DurationError};
pub use egress::{EgressError, EgressHost, EgressPort, EgressRule, EgressScheme};
pub use labels::{LabelSelector, LabelSelectorError};
pub use spec::{
    ControllerSpec, KindRef, NamedPredicate, OperatorSpec, PolicyRule, Predicate, PrinterColumn,
    ResourceSpec, Scope, WatchSpec,
};

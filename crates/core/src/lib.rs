//! # ctop-core: the vocabulary every ctop layer shares
//!
//! This crate is pure data with no I/O. It owns the operator description that the
//! runtime extracts from a script (`OperatorSpec`: resources with their OpenAPI schemas,
//! controllers, watches, manages/reads/permissions, schedules, finalizers, webhooks) and
//! the typed outcomes a handler returns ([`ReconcileOutcome`], [`FinalizeOutcome`],
//! [`MapOutcome`], [`AdmissionOutcome`]), the contract between a script and the controller.
//!
//! Start with [`OperatorSpec`], what one script declares, [`ReconcileOutcome`], what one
//! reconcile wants done, and [`Duration`], the
//! `"5m"`/`"1h30m"`/`"250ms"` strings that scripts and the CLI use for periods and timeouts.

mod bytes;
mod chain;
pub mod controller_status;
pub mod diff;
mod duration;
mod egress;
mod frame;
mod handlers;
mod labels;
mod names;
mod outcome;
mod plural;
mod spec;
pub mod yaml;

pub use bytes::{ByteSize, ByteSizeError};
pub use chain::Chain;
pub use duration::{Duration, DurationError};
pub use egress::{EgressError, EgressHost, EgressPort, EgressRule, EgressScheme};
pub use frame::CodeFrame;
pub use handlers::{
    Answer, CallPath, FailureKind, HandlerCall, HandlerError, HandlerFuture, Handlers, Observer, Source,
};
pub use labels::{LabelSelector, LabelSelectorError};
pub use names::{SERVER_SET_METADATA, is_dns_label};
pub use outcome::{
    AdmissionOutcome, Children, Condition, ConditionStatus, EventRecord, EventType, FinalizeOutcome,
    FinalizerChanges, ForeignApply, HandlerResult, MapOutcome, MapRequest, ObjectReference, OutcomeError,
    PruneMode, ReconcileOutcome, StartOutcome,
};
pub use plural::guess_plural;
pub use spec::{
    ControllerSpec, Deprecation, KindRef, MetadataOnlyConflict, MetadataOnlyNeed, NamedPredicate,
    OperatorSpec, PolicyRule, Predicate, PrinterColumn, ResourceSpec, Scope, VersionSpec, WatchSpec,
    group_of, kind_key, split_api_version,
};

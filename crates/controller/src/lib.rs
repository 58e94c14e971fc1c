//! # ctop-controller: operators running against a cluster
//!
//! Start with [`run`]: give it a [`ctop_core::Handlers`] (the script runtime's
//! `ScriptHandlers`, or a Rust reconciler) and [`RunOptions`], and it runs one controller
//! (watches, a work queue, workers) per declared [`ctop_core::ControllerSpec`] until shutdown. [`run_reloadable`]
//! replaces the handlers in place, and [`dev::run_dev`] is `ctop dev`'s loop around it
//! (reload on change, hot swap or restart, sample objects, the live summary).
//!
//! What a handler returns is a typed outcome of `ctop-core` ([`ctop_core::ReconcileOutcome`]
//! and its siblings); this crate carries it out. The modules, one concern each, in the order
//! one reconcile passes through them (a module uses only those before it):
//!
//! - [`Object`] (`object`): a cached object, its metadata indexed and the rest as JSON
//!   text; [`Store`] (`store`): the cache of one kind;
//! - `informer`: one shared watch per kind and scope, its cache and ApplySet index;
//! - `triggers`: what makes a primary reconcile (its changes, its children's changes and
//!   deletions, `.watches()` through predicates and mappers, replaced handlers, won
//!   leadership), minus the echoes of the controller's own writes;
//! - `queue`, `worker`, `retry`: the fair work queue (one entry per object, changes ahead
//!   of resyncs, one timer per object), the workers that drain it, and the retry policy;
//! - `reconcile`: one reconcile, from the leadership check to the next timer;
//! - `finalize`: calls on an object being deleted, under one rule;
//! - `fingerprint`: skipping a reconcile when nothing its handler read has changed;
//! - `call` and `observe`: a handler call (its input, span, timer and metric) and the caches
//!   as handlers read them;
//! - `effects`: carrying out an outcome (finalizers, children, deletions, patches, status,
//!   events), shared by `reconcile`, `finalize` and `on_start`;
//! - `memory`: everything remembered per object, forgotten when the object goes;
//! - `managers`: the move of the former shared field manager's fields to the operator's name;
//! - `on_start`: the one-shot `onStart` handler;
//! - [`health`] (health, readiness, `/status`, metrics; the Prometheus registry itself is
//!   `metrics`, re-exported there) and [`leader`] (Lease election);
//! - `cluster`: the client, discovery, CRD installation;
//! - [`migrate`]: storage migration (`ctop run --migrate-storage`): the leader rewrites every
//!   object stored in an older version, then drops it from the CRD's `status.storedVersions`;
//! - `publish`: each controller's health as a `ControllerStatus` object
//!   (`kubectl get controllerstatuses`), written by the leader;
//! - [`shard`]: a sharded run (`ctop run --sharding`): member Leases, the sharder that
//!   labels each object with its member on the consistent-hash [`ring`], and the drain
//!   handshake that moves objects between members;
//! - `run`: the composition: health and metrics servers, leader election, and each
//!   controller's watches, triggers and workers.
//!
//! Effects go through `ctop-applier`; the contract of each (status merge patch,
//! `observedGeneration` only after full success, the `Reconciled` condition, pruning, keep,
//! adoption) is documented on [`reconcile::RECONCILED`] and in `crates/runtime/RUNTIME.md`.

mod call;
mod cluster;
mod context;
pub mod dev;
mod effects;
mod error;
mod finalize;
mod fingerprint;
pub mod health;
pub mod history;
mod informer;
pub mod inspect;
pub mod leader;
mod managers;
mod memory;
mod metrics;
pub mod migrate;
mod object;
mod observe;
mod on_start;
mod options;
mod publish;
mod queue;
pub mod reconcile;
mod retry;
pub mod ring;
mod run;
pub mod shard;
mod store;
mod triggers;
mod worker;

pub use cluster::{client, install_crds, kube_config};
pub use context::HandlerSource;
pub use error::{ReconcileError, RunError, api_error_text};
pub use migrate::StorageMigration;
pub use object::{Object, Pairs};
pub use options::{LeaseTiming, RunOptions};
pub use retry::RetryLimit;
pub use run::{hot_swappable, run, run_reloadable, run_with_lease};
pub use store::Store;

//! `ctop run --operators`: one process that runs every Δ-controller `Operator` object of
//! the cluster (`dcontroller.io/v1alpha1`, cluster-scoped), each as the one ctop controller
//! `ctop run op.yaml` would run for it.
//!
//! Start at [`run`]: it installs the `Operator` CRD when the cluster lacks it, then lists
//! and watches the Operator objects and keeps one controller per object ([`ctop_controller::run`]
//! over [`ctop_declarative::OperatorHandlers::of_cluster`]), in a task of its own with its
//! own stop signal:
//!
//! - an Operator that appears starts its controller (its view CRDs installed first);
//! - a change of its `spec` (its `metadata.generation`) stops that controller and starts a
//!   new one, whose caches and watches are those of the new spec;
//! - a deleted Operator stops its controller and is forgotten; its Updater children go by
//!   the garbage collector through their owner references;
//! - an Operator that cannot run (it does not parse, its controller fails to start or
//!   stops with an error) gets a `Ready=False` condition naming the error in its status,
//!   written by the manager, and the others run on.
//!
//! The process serves one health and one metrics server for all of them
//! ([`ctop_controller::health::Shared`]): `/status` lists each running Operator's
//! controller (a stopped one is forgotten) beside the manager's own list of Operators
//! (`operators.dcontroller.io`, synced once they are listed), and the metrics carry each
//! controller's name, the Operator's, as their `controller` label. A deleted Operator's
//! metric series stay until the process restarts, as Prometheus counters should.
//!
//! - `watch`: the list-and-watch of Operators and the table of running controllers;
//! - `one`: one Operator's controller task;
//! - `status`: the manager's condition on an Operator that cannot run;
//! - `crd`: the `Operator` CRD, installed when missing.

mod crd;
mod error;
mod one;
mod status;
mod watch;

pub use error::ManagerError;
pub use watch::run;

//! # ctop-e2e: black-box scenarios and the convergence fuzzer
//!
//! Start at [`mutate::run`]: it starts kubesim in-process, runs the real `ctop` binary
//! (`ctop run examples/<name> --install-crds`) against it, lets several concurrent
//! writers create, update and delete that example's objects at random ([`ops`]) while
//! kubesim injects faults (errors, latency, dropped watches) and the operator is killed
//! and restarted in the middle, then waits until the cluster satisfies the example's
//! invariants ([`check`]). A run is reproducible from its seed ([`rng`]); a failure reports
//! the seed, the broken invariants and the operations that touched the objects involved.
//!
//! The `ctop-mutate` binary is the command-line front (`--steps`, `--seed`, `--example`,
//! `--faults`, `--restart`); `tests/mutate.rs` runs it in CI with fixed seeds.
//!
//! The crate's `tests/` hold every black-box test of the binary (`ctop sim`, `run`, `dev`,
//! `manifests`, `webhook serve`, RBAC, faults, the examples); they and `ctop-mutate` find
//! the binary with [`binary::ctop`] / [`binary::locate`]. This crate depends on
//! `ctop-kubesim` and `kube` only; it never links the runtime.

pub mod binary;
pub mod check;
pub mod mutate;
pub mod ops;
pub mod rng;

pub use ctop_kubesim as kubesim;

//! # ctop-e2e: black-box scenarios of the `ctop` binary
//!
//! The crate's `tests/` hold every black-box test of the binary (`ctop sim`, `run`, `dev`,
//! `test`, `manifests`, `webhook serve`, RBAC, faults, the examples): each starts the real
//! binary and drives it with the real kubectl. They find the binary with
//! [`binary::ctop`] / [`binary::locate`]. The fuzzer that used to live here (`ctop-mutate`)
//! is `ctop test --fuzz` now (`ctop-testing`'s `fuzz` module), for any operator.

pub mod binary;

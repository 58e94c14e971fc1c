//! # ctop-e2e: black-box scenarios
//!
//! This crate will hold the end-to-end scenarios of the `ctop run` issue and later ones:
//! start kubesim, run the real `ctop` binary against it, drive it with kube-rs and
//! `kubectl`, and assert on the cluster (children applied with owner references, status
//! through the subresource, pruning, finalizers, leader failover, fault injection). It
//! depends on `ctop-kubesim` and `kube` only; it never links the runtime.
//!
//! Today the kubesim suites live next to kubesim (`crates/kubesim/tests/`) and the CLI's
//! own checks in `crates/cli/tests/`.

pub use ctop_kubesim as kubesim;

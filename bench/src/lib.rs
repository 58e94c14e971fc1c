//! What the bench binaries share: starting processes and reading their CPU and memory
//! ([`procs`]), a fresh kubesim with the WebApp CRD and the WebApps the workload creates
//! ([`sim`]), the driver's watches that timestamp what converged ([`seen`]), the command
//! line of each implementation ([`implementation`]) and the charts' font and colours
//! ([`chart`]).
//!
//! Start at [`sim::start`] (kubesim and its client), then [`sim::install_webapp_crd`] and
//! [`seen::watch_workload`]: `ctop-bench` (`src/main.rs`), `ctop-bench-sharding`
//! (`src/bin/sharding/`) and `ctop-bench-soak` (`src/bin/soak/`) all drive a run with
//! these three.

pub mod chart;
pub mod implementation;
pub mod procs;
pub mod seen;
pub mod sim;

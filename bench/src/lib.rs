//! What the bench binaries share: starting processes and reading their CPU and memory
//! ([`procs`]), a fresh kubesim with the WebApp CRD and the WebApps the workload creates
//! ([`sim`]), and the driver's watches that timestamp what converged ([`seen`]).
//!
//! Start at [`sim::start`] (kubesim and its client), then [`sim::install_webapp_crd`] and
//! [`seen::watch_workload`]: `ctop-bench` (`src/main.rs`) and `ctop-bench-sharding`
//! (`src/bin/sharding/`) both drive a run with these three.

pub mod procs;
pub mod seen;
pub mod sim;

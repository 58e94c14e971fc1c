//! kubesim against the real `kubectl` binary: every test starts its own server, writes a
//! kubeconfig into a temporary directory and runs `kubectl` (`KUBESIM_KUBECTL` overrides
//! the binary) with a per-test discovery cache, then checks the objects on the server.
//!
//! One test binary, one module per area: `apply`, `read`, `delete`, `crd`, `builtin`,
//! `authn`, `authz`, `workloads`; `env` is the harness they share.

mod apply;
mod authn;
mod authz;
mod builtin;
mod crd;
mod delete;
mod env;
mod escalation;
mod read;
mod workloads;

use env::*;

//! The controllers a cluster runs beside its API server, acting through `crate::api::Api`:
//! garbage collection, namespace and CRD cleanup ([`gc`], told what to do by [`cleanup`]),
//! the workload controllers and the kubelet ([`workloads`]), and Service IP allocation
//! ([`service_ip`]). The API never calls into them; they subscribe to its changes.

pub(crate) mod cleanup;
pub(crate) mod gc;
pub(crate) mod service_ip;
pub(crate) mod workloads;

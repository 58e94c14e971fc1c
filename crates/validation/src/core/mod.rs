//! The core (`""`) group: Pods and PodSpecs (`pod`, `container`, `volume`, `security`
//! for security contexts, `scheduling` for affinity and topology spread), Pod status
//! writes (`pod_status`), Services (`service`), ConfigMaps, Secrets and PVCs (`config`).
//! ServiceAccounts have no rules beyond their metadata.

pub(crate) mod config;
pub(crate) mod container;
pub(crate) mod pod;
pub(crate) mod pod_status;
pub(crate) mod scheduling;
pub(crate) mod security;
pub(crate) mod service;
pub(crate) mod volume;

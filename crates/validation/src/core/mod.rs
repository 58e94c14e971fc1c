//! The core (`""`) group: Pods and PodSpecs (`pod`, `container`, `volume`), Pod status
//! writes (`pod_status`), Services (`service`), ConfigMaps, Secrets and PVCs (`config`).
//! ServiceAccounts have no rules beyond their metadata.

pub(crate) mod config;
pub(crate) mod container;
pub(crate) mod pod;
pub(crate) mod pod_status;
pub(crate) mod service;
pub(crate) mod volume;

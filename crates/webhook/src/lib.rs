//! # ctop-webhook: admission webhooks written in the operator script
//!
//! The HTTPS server behind `ctop webhook serve` and `ctop run --webhook-port`: it answers
//! `admission.k8s.io/v1` AdmissionReviews by calling the script's `.validate(fn)` and
//! `.mutate(fn)` handlers, and turns a mutated object into a JSONPatch.
//!
//! Where to start:
//! - [`routes()`] derives the served paths from an [`OperatorSpec`](ctop_core::OperatorSpec):
//!   `/validate/<group>/<version>/<plural>` and `/mutate/<group>/<version>/<plural>`
//!   (`core` for the core group). `ctop manifests` uses the same function, so the webhook
//!   configurations always point at paths the server has.
//! - [`AdmissionScript`] is the only way the server reaches the script. This crate does not
//!   depend on `ctop-runtime` (QuickJS): `ctop` implements the trait over
//!   `ctop_runtime::Script::dispatch`, which already enforces the script's time and memory
//!   limits; the server adds its own deadline, a concurrency bound and the failure policy.
//!   Keeping the seam a trait keeps this crate small, lets tests and the benchmark drive the
//!   server with plain Rust handlers, and keeps the arrow of dependencies pointing down.
//! - [`Admission`] (or [`router`]) builds the axum app ([`ServerConfig`] bounds body size,
//!   concurrency and time; [`FailurePolicy`] decides what a throwing or late handler
//!   answers; [`Admission::replace`] swaps in a reloaded script), and
//!   [`bind`]/[`serve`] run it behind rustls with a [`TlsSource`]: PEM files reloaded when
//!   they change, or a [`SelfIssued`] CA and certificate made at startup.
//! - [`configurations()`] writes the Validating/MutatingWebhookConfigurations for the routes
//!   (Service endpoint for `ctop manifests`, loopback URL for `ctop dev`).
//! - [`cabundle::patch_ca_bundle`] writes a self-issued CA into the operator's own
//!   Validating/MutatingWebhookConfigurations, and [`shared::shared_self_issued`] keeps one
//!   self-issued certificate in a Secret so that every replica serves the same one. They are
//!   the only parts that talk to the cluster, hence the `kube` dependency next to
//!   `ctop-core`.
//!
//! Connections are bounded too ([`ConnectionLimits`]: how many at once, idle time, handshake
//! time), since hyper as axum runs it has no idle or header timeout of its own.
//!
//! Malformed reviews get a 400 with the reason, bodies over the limit a 413, plain HTTP on
//! the TLS port a 400 (like Go servers answer), unknown paths a 404. Handlers see CREATE and
//! UPDATE; requests without an object (DELETE, CONNECT) are allowed without calling them.

pub mod cabundle;
mod configuration;
pub mod review;
mod routes;
mod script;
mod server;
pub mod shared;
pub mod tls;

pub use configuration::{ConfigurationOptions, Endpoint, configurations};
pub use ctop_core as core;
pub use routes::{HandlerKind, Route, routes};
pub use script::{AdmissionScript, HandlerCall, HandlerError};
pub use server::{
    Admission, Bound, FailurePolicy, ServeError, ServerConfig, bind, bind_with_limits, review_for, router,
    serve,
};
pub use tls::{ConnectionLimits, SelfIssued, TlsError, TlsSource};

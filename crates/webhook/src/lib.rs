//! # ctop-webhook: admission and conversion webhooks written in the operator script
//!
//! The HTTPS server behind `ctop webhook serve` and `ctop run --webhook-port`: it answers
//! `admission.k8s.io/v1` AdmissionReviews by calling the script's `.validate(fn)` and
//! `.mutate(fn)` handlers, and turns a mutated object into a JSONPatch; and, when the script
//! declares resources with several versions, it is their CRDs' conversion webhook, answering
//! `apiextensions.k8s.io/v1` ConversionReviews on [`CONVERSION_PATH`] with the script's
//! conversions.
//!
//! Where to start:
//! - [`routes()`] derives the served paths from an [`OperatorSpec`](ctop_core::OperatorSpec):
//!   `/validate/<group>/<version>/<plural>` and `/mutate/<group>/<version>/<plural>`
//!   (`core` for the core group). `ctop manifests` uses the same function, so the webhook
//!   configurations always point at paths the server has.
//! - [`AdmissionScript`] is the only way the server reaches the script, and it answers with
//!   a typed [`AdmissionOutcome`](ctop_core::AdmissionOutcome) (`allowed`, `message` and
//!   `warnings` of a `validate`, the `object` of a `mutate`): nothing here reads the
//!   script's JSON by key. This crate does not depend on `ctop-runtime` (QuickJS): `ctop`
//!   implements the trait over `ctop_runtime::Script::dispatch`, which already enforces the
//!   script's time and memory limits, and reads its output with
//!   [`AdmissionOutcome::from_output`](ctop_core::AdmissionOutcome::from_output); the server
//!   adds its own deadline, a concurrency bound and the failure policy.
//!   Keeping the seam a trait keeps this crate small, lets tests and the benchmark drive the
//!   server with plain Rust handlers, and keeps the arrow of dependencies pointing down.
//! - [`ConversionScript`] is the same kind of seam for conversions (`ctop` implements it over
//!   `ctop_runtime::ScriptHandlers::convert`): the desired `apiVersion` and the objects in,
//!   the converted objects out. [`converts`] says whether a spec has anything to convert
//!   (a resource with more than one version); only then does the server answer on
//!   [`CONVERSION_PATH`], whether or not the script has admission handlers.
//!   [`Admission::set_conversion`] serves it, in the admission handlers' slots, deadline and
//!   body limit; every failure (a throw, a limit, the deadline, busy slots, a wrong number of
//!   objects) is answered as a `Failure` carrying its message, as controller-runtime's
//!   conversion webhook does, and a `v1beta1` review is answered in `v1beta1`.
//! - [`Admission`] (or [`router`]) builds the axum app ([`ServerConfig`] bounds body size,
//!   concurrency and time; [`FailurePolicy`] decides what a throwing or late handler
//!   answers; [`Admission::replace`] swaps in a reloaded script), and
//!   [`bind`]/[`serve`] run it behind rustls with a [`TlsSource`]: PEM files reloaded when
//!   they change, or a [`SelfIssued`] CA and certificate made at startup.
//! - [`dev::DevWebhook`] is `ctop dev`'s and `ctop test`'s server: loopback, self-issued, its
//!   configurations applied to the embedded cluster and rewritten on every reload; its
//!   [`ConversionEndpoint`](dev::ConversionEndpoint) (URL and CA, stable across reloads) is
//!   what the converting CRDs point at.
//! - [`configurations()`] writes the Validating/MutatingWebhookConfigurations for the routes
//!   (Service endpoint for `ctop manifests`, loopback URL for `ctop dev`).
//! - [`cabundle::CaBundleKeeper`] keeps a self-issued CA in the operator's own
//!   Validating/MutatingWebhookConfigurations (those its routes produce) and in the
//!   conversion webhook of its converting CRDs ([`converting_crds`]), and
//!   [`shared::shared_self_issued`] keeps one
//!   self-issued certificate in a Secret so that every replica serves the same one. They are
//!   the only parts that talk to the cluster, hence the `kube` dependency next to
//!   `ctop-core`.
//!
//! Serving a script's admission handlers and conversions (what `ctop run` does; then
//! [`bind`] the router behind TLS and keep the CA in place with [`cabundle::CaBundleKeeper`]
//! over [`cabundle::Configurations::for_spec`]):
//!
//! ```no_run
//! # use std::sync::Arc;
//! # use ctop_core::{AdmissionOutcome, OperatorSpec};
//! # use ctop_webhook::{Admission, AdmissionCall, HookError, ServerConfig};
//! # use serde_json::Value;
//! # fn demo(spec: &OperatorSpec) -> axum::Router {
//! let allow = |_: &AdmissionCall<'_>| Ok(AdmissionOutcome { allowed: true, ..AdmissionOutcome::default() });
//! let convert = |desired: &str, objects: &[Value]| -> Result<Vec<Value>, HookError> {
//!     Ok(objects.iter().map(|o| { let mut o = o.clone(); o["apiVersion"] = desired.into(); o }).collect())
//! };
//! let admission = Admission::new(Arc::new(allow), &ctop_webhook::routes(spec), ServerConfig::default());
//! admission.set_conversion(Arc::new(convert), spec); // again after every `replace`
//! admission.router()
//! # }
//! ```
//!
//! Connections are bounded too ([`ConnectionLimits`]), against slow clients (slowloris) as
//! much as against many: the TLS handshake, the request head and the whole request each have
//! a deadline counted from their start and not moved by trickling bytes (like Go's
//! `ReadHeaderTimeout` and `ReadTimeout`, which kube-apiserver and controller-runtime's
//! webhook server use), keep-alive connections an idle time; and when every slot is taken a
//! new client is let in by shedding the connection that has gone longest without sending a
//! request (never one whose request is being handled), those of a client address holding
//! many such connections first, at a bounded rate. The connection side lives in `listener`
//! (accepting, TLS handshakes), `slots` (the table and what to shed), `conn` (phases,
//! deadlines) and `serving` (hyper, telling each connection where its request is).
//!
//! Malformed reviews (admission or conversion) get a 400 with the reason, bodies over the
//! limit a 413 stating the limit (`Request entity too large: limit is 3145728`, as the API
//! server words it), plain HTTP on the TLS port a 400 (like Go servers answer), unknown paths
//! (and [`CONVERSION_PATH`] when nothing converts) a 404. Handlers see CREATE and
//! UPDATE; requests without an object (DELETE, CONNECT) are allowed without calling them.

/// The path the operator answers `ConversionReview`s on, for every resource it converts
/// (the CRDs' `spec.conversion.webhook.clientConfig` points here).
pub const CONVERSION_PATH: &str = "/convert";

pub mod cabundle;
mod configuration;
mod conn;
mod conversion;
mod conversion_review;
pub mod dev;
mod listener;
pub mod review;
mod routes;
mod script;
mod server;
mod serving;
pub mod shared;
mod slots;
pub mod tls;

pub use configuration::{ConfigurationOptions, Endpoint, configurations};
pub use conn::ConnectionLimits;
pub use conversion::{ConversionScript, converting_crds, converts};
pub use routes::{HandlerKind, Route, routes};
pub use script::{AdmissionCall, AdmissionScript, HookError};
pub use server::{
    Admission, Bound, FailurePolicy, ServeError, ServerConfig, bind, bind_with_limits, review_for, router,
    serve,
};
pub use tls::{SelfIssued, TlsError, TlsSource};

//! The seam between the server and the script's version conversions: [`ConversionScript`].
//!
//! A resource that declares several versions (`res.addVersion(...)`) is converted by the
//! operator itself: the CRD's `spec.conversion.webhook` points the API server at
//! [`CONVERSION_PATH`](crate::CONVERSION_PATH), the server reads the `ConversionReview`
//! and hands its objects to the script, which converts each through the hub. The server
//! never sees JavaScript and never converts anything itself: it hands over the desired
//! `apiVersion` and the objects and gets the converted objects back, one per object, in
//! order. `ctop` implements the trait over `ctop_runtime::ScriptHandlers::convert` (pure,
//! within the script's time and memory limits, each result checked against its version's
//! schema); tests implement it with plain Rust.

use ctop_core::OperatorSpec;
use serde_json::Value;

use crate::script::HookError;

/// How the server reaches the script's conversions. Calls block (a script runtime runs
/// them), so the server runs them on the blocking thread pool, in the same slots, within the
/// same deadline as the admission handlers.
pub trait ConversionScript: Send + Sync + 'static {
    /// Convert every object of `objects` (custom resources in any of their versions) to
    /// `desired_api_version` (`<group>/<version>`): one converted object per object, in the
    /// same order. A failure (a throw, a limit of the script runtime, an invalid result) is a
    /// [`HookError::Failed`] whose message the API server shows as is.
    fn convert(&self, desired_api_version: &str, objects: &[Value]) -> Result<Vec<Value>, HookError>;
}

impl<F> ConversionScript for F
where
    F: Fn(&str, &[Value]) -> Result<Vec<Value>, HookError> + Send + Sync + 'static,
{
    fn convert(&self, desired_api_version: &str, objects: &[Value]) -> Result<Vec<Value>, HookError> {
        self(desired_api_version, objects)
    }
}

/// Whether `spec` has resources to convert (a resource with more than one version), so
/// that the server answers on [`CONVERSION_PATH`](crate::CONVERSION_PATH) and their CRDs
/// point there.
#[must_use]
pub fn converts(spec: &OperatorSpec) -> bool {
    spec.converting().next().is_some()
}

/// The names (`<plural>.<group>`) of the CRDs whose objects the operator converts: those
/// whose `spec.conversion.webhook.clientConfig` calls it.
#[must_use]
pub fn converting_crds(spec: &OperatorSpec) -> Vec<String> {
    spec.converting().map(|r| format!("{}.{}", r.plural, r.group)).collect()
}

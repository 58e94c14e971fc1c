//! A [`Script`] as the controller's [`Handlers`]: each call is dispatched to the script's
//! handler with the run's `Env` and `Values`, and its output read as a typed outcome.
//! [`ScriptHandlers::admit`] does the same for the admission handlers (`validate`,
//! `mutate`), which a webhook server calls, and [`ScriptHandlers::invariants`] for the
//! script's `.invariant(...)` rules, which `ctop test --fuzz` checks.
//!
//! Script failures map to [`FailureKind`]s the controller's error policy and metrics tell
//! apart: a throw is an [`FailureKind::Exception`], a deadline a [`FailureKind::Timeout`],
//! out of memory a [`FailureKind::Crash`], a broken output rule (too many children, an
//! output too large or malformed) [`FailureKind::Invalid`].

use std::sync::Arc;

use ctop_core::{
    AdmissionOutcome, FailureKind, FinalizeOutcome, HandlerCall, HandlerError, HandlerFuture, Handlers,
    MapOutcome, OperatorSpec, OutcomeError, ReconcileOutcome, StartOutcome,
};
use serde_json::Value;

use crate::{Script, VmError};

/// Prefix of the process environment variables passed to scripts as `Env` (stripped):
/// `CTOP_ENV_REGION=eu` is `Env.REGION`. Nothing else of the environment is visible.
pub const ENV_PREFIX: &str = "CTOP_ENV_";

/// The environment scripts see: variables named `CTOP_ENV_<NAME>`, as `<NAME>`.
#[must_use]
pub fn script_env() -> Value {
    let map: serde_json::Map<String, Value> = std::env::vars()
        .filter_map(|(k, v)| k.strip_prefix(ENV_PREFIX).map(|n| (n.to_owned(), Value::String(v))))
        .filter(|(k, _)| !k.is_empty())
        .collect();
    Value::Object(map)
}

/// Parse a values YAML document (empty means `{}`).
pub fn values_from_yaml(text: &str) -> Result<Value, ValuesError> {
    if text.trim().is_empty() {
        return Ok(serde_json::json!({}));
    }
    let v: Value = ctop_core::yaml::from_str(text)?;
    match v {
        Value::Null => Ok(serde_json::json!({})),
        Value::Object(_) => Ok(v),
        other => Err(ValuesError::NotAMapping {
            found: match other {
                Value::Array(_) => "a list",
                Value::String(_) => "a string",
                Value::Number(_) => "a number",
                _ => "a boolean",
            },
        }),
    }
}

/// Why a values file was refused.
#[derive(Debug, thiserror::Error)]
pub enum ValuesError {
    /// The file is not YAML.
    #[error(transparent)]
    Yaml(#[from] serde_saphyr::Error),
    /// The file is YAML but not a mapping (scripts read `Values.key`).
    #[error("the values file holds {found}, not a mapping of keys to values (scripts read Values.<key>)")]
    NotAMapping {
        /// What the document is.
        found: &'static str,
    },
}

/// A script serving a controller's handler calls.
pub struct ScriptHandlers {
    script: Arc<Script>,
    /// `"env":{...},"values":{...}`, serialized once.
    context: Arc<str>,
}

impl ScriptHandlers {
    /// `script`, whose handlers see `env` as `Env` and `values` as `Values`.
    #[must_use]
    pub fn new(script: Arc<Script>, env: &Value, values: &Value) -> Self {
        let context = format!(r#""env":{env},"values":{values}"#);
        Self { script, context: context.into() }
    }

    /// The script.
    #[must_use]
    pub fn script(&self) -> &Arc<Script> {
        &self.script
    }

    /// Call the admission handler `handler` (`validate` or `mutate`) of the `controller`th
    /// controller on the thread it is called from (a webhook server's blocking pool): the
    /// input is what the SDK's `__ct_dispatch` expects (`object`, `oldObject`, the review's
    /// `request`, `env`, `values`), the output is read with [`AdmissionOutcome::from_output`].
    ///
    /// # Errors
    /// The script's failure, or an output that is not an admission outcome, as the message
    /// the webhook answers with.
    pub fn admit(
        &self,
        handler: &'static str,
        controller: u32,
        object: &Value,
        old_object: Option<&Value>,
        request: &Value,
    ) -> Result<AdmissionOutcome, String> {
        let old = old_object.unwrap_or(&Value::Null);
        let input =
            format!(r#"{{"object":{object},"oldObject":{old},"request":{request},{}}}"#, self.context);
        let output = self.script.dispatch(handler, controller, &input).map_err(|e| e.to_string())?;
        AdmissionOutcome::from_output(handler, output).map_err(|e| ctop_core::Chain(&e).to_string())
    }

    /// Check the invariants of the `controller`th controller on `object` (a primary object,
    /// as stored) on the thread it is called from (the fuzzer's blocking pool), the SDK's
    /// `invariant` dispatch: every `.invariant(name, fn)` runs, in order, with `observed` (a
    /// map from `"<apiVersion>/<Kind>"` to that kind's objects) serving its lookups. A
    /// controller without invariants has none to violate.
    ///
    /// # Errors
    /// The script's failure (an invariant that throws is a violation, not a failure; a
    /// deadline or the memory limit is one), or an output that is not
    /// `{violations: [{invariant, message}]}`, as a message.
    pub fn invariants(
        &self,
        controller: u32,
        object: &Value,
        observed: &Value,
    ) -> Result<Vec<InvariantViolation>, String> {
        let input = format!(r#"{{"object":{object},"observed":{observed},{}}}"#, self.context);
        let output = self
            .script
            .dispatch("invariant", controller, &input)
            .map_err(|e| format!("invariant failed: {e}"))?;
        let out: InvariantOutput = serde_json::from_value(output).map_err(|e| {
            format!("invariant: the output is not {{violations: [{{invariant, message}}]}}: {e}")
        })?;
        Ok(out.violations)
    }

    /// Convert `objects` (custom resources of the script's, in any of their versions) to
    /// `desired_api_version` on the thread it is called from (a webhook server's blocking
    /// pool), the SDK's `convert` dispatch: through the hub with the script's `toHub` and
    /// `fromHub`, each result checked against the target version's spec schema. A conversion
    /// is pure: the SDK refuses writes, reads, `now()`, `randomString()` and `fetch()` as it
    /// runs, and a conversion that read the clock or drew randomness through a JavaScript
    /// built-in (`Date`, `Math.random`) fails here after it returns.
    ///
    /// # Errors
    /// The script's failure (a throw, a deadline, the memory limit, an invalid result, an
    /// impure call), or an output that is not `{convertedObjects: [...]}` with one object
    /// per input, as the message the webhook answers with.
    pub fn convert(&self, desired_api_version: &str, objects: &[Value]) -> Result<Vec<Value>, String> {
        // A list page can hold hundreds of objects; each call converts a batch, so that its
        // output stays far inside the call's output budget (`Limits::max_output`) and its
        // time inside the call's deadline, whatever the page's size.
        let mut out = Vec::with_capacity(objects.len());
        for batch in objects.chunks(CONVERSION_BATCH) {
            out.extend(self.convert_batch(desired_api_version, batch)?);
        }
        Ok(out)
    }

    fn convert_batch(&self, desired_api_version: &str, objects: &[Value]) -> Result<Vec<Value>, String> {
        // Serialized in place: the objects are not copied into a new array first.
        let objects_json = serde_json::to_string(objects).map_err(|e| format!("conversion: {e}"))?;
        let desired = Value::from(desired_api_version);
        let input = format!(r#"{{"desiredAPIVersion":{desired},"objects":{objects_json},{}}}"#, self.context);
        let watch = Arc::new(PurityWatch::default());
        let output = self
            .script
            .dispatch_observed("convert", 0, &input, watch.clone())
            .map_err(|e| format!("conversion failed: {e}"))?;
        if let Some(what) = watch.first() {
            return Err(format!(
                "conversion failed: it called {what}; a conversion is a pure function of the object it converts \
                 (no clock, randomness or fetch), so that every replica and every retry converts alike"
            ));
        }
        let out: ConversionOutput = serde_json::from_value(output)
            .map_err(|e| format!("conversion: the output is not {{convertedObjects: [...]}}: {e}"))?;
        if out.converted_objects.len() != objects.len() {
            return Err(format!(
                "conversion: {} objects came back for {} sent",
                out.converted_objects.len(),
                objects.len()
            ));
        }
        Ok(out.converted_objects)
    }

    fn call(&self, handler: String, call: HandlerCall) -> HandlerFuture<Value> {
        let script = self.script.clone();
        let input = match &call.object {
            Some(o) => format!(r#"{{"object":{o},{}}}"#, self.context),
            None => format!("{{{}}}", self.context),
        };
        Box::pin(async move {
            script
                .dispatch_async(&handler, call.controller, input, Some(call.observer))
                .await
                .map_err(|e| failure(&handler, e))
        })
    }
}

/// Objects one `convert` dispatch converts at most (see [`ScriptHandlers::convert`]).
const CONVERSION_BATCH: usize = 64;

/// The output of the SDK's `convert` dispatch.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ConversionOutput {
    converted_objects: Vec<Value>,
}

/// The observer of a conversion: it serves no reads (the SDK refuses them first) and keeps
/// the first nondeterministic call the conversion made, which fails it.
#[derive(Default)]
struct PurityWatch(std::sync::Mutex<Option<&'static str>>);

impl PurityWatch {
    fn first(&self) -> Option<&'static str> {
        *self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl ctop_core::Observer for PurityWatch {
    fn list(&self, _kind: &str) -> Option<String> {
        None
    }
    fn get(&self, _kind: &str, _namespace: Option<&str>, _name: &str) -> Option<Option<String>> {
        None
    }
    fn nondeterministic(&self, what: &'static str) {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get_or_insert(what);
    }
}

/// One rule of a script's `.invariant(name, fn)` that does not hold for an object: the
/// invariant's name and why (its message, "does not hold" for `false`, or what it threw).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InvariantViolation {
    /// The invariant's name (`invariant N` when the script gave none).
    pub invariant: String,
    /// What does not hold.
    pub message: String,
}

/// The output of the SDK's `invariant` dispatch.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct InvariantOutput {
    violations: Vec<InvariantViolation>,
}

/// A script failure as the controller reads it.
fn failure(handler: &str, e: VmError) -> HandlerError {
    let kind = match &e {
        VmError::Exception { .. } | VmError::NeverSettled { .. } => FailureKind::Exception,
        VmError::Timeout { .. } => FailureKind::Timeout,
        VmError::OutOfMemory { .. } | VmError::Engine(_) | VmError::Load { .. } => FailureKind::Crash,
        VmError::OutputTooLarge { .. } | VmError::TooManyChildren { .. } | VmError::BadOutput(_) => {
            FailureKind::Invalid
        }
    };
    let message = format!("{handler} failed: {e}");
    let frame = match &e {
        VmError::Exception { frame, .. } => frame.as_deref().cloned(),
        _ => None,
    };
    HandlerError { kind, message, source: Some(Box::new(e)), frame }
}

fn outcome(handler: &'static str, out: Value) -> Result<ReconcileOutcome, HandlerError> {
    ReconcileOutcome::from_output(handler, out).map_err(unreadable)
}

/// An output that does not fit, as a handler failure: the message says what and why (a
/// handler failure is read as one line), the source is serde's error (which `Chain` leaves
/// out, the message having said it).
fn unreadable(e: OutcomeError) -> HandlerError {
    HandlerError {
        kind: FailureKind::Invalid,
        message: ctop_core::Chain(&e).to_string(),
        source: Some(Box::new(e.source)),
        frame: None,
    }
}

impl Handlers for ScriptHandlers {
    fn spec(&self) -> &OperatorSpec {
        self.script.spec()
    }

    fn reconcile(&self, call: HandlerCall) -> HandlerFuture<ReconcileOutcome> {
        let out = self.call("reconcile".into(), call);
        Box::pin(async move { outcome("reconcile", out.await?) })
    }

    fn finalize(&self, call: HandlerCall) -> HandlerFuture<FinalizeOutcome> {
        let out = self.call("finalize".into(), call);
        Box::pin(async move { outcome("finalize", out.await?) })
    }

    fn on_start(&self, call: HandlerCall) -> HandlerFuture<StartOutcome> {
        let out = self.call("onStart".into(), call);
        Box::pin(async move { outcome("onStart", out.await?) })
    }

    fn map(&self, watch: usize, call: HandlerCall) -> HandlerFuture<MapOutcome> {
        let out = self.call(format!("map:{watch}"), call);
        Box::pin(async move { MapOutcome::from_output(out.await?).map_err(unreadable) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_must_be_a_mapping() {
        assert_eq!(values_from_yaml("").expect("empty"), serde_json::json!({}));
        assert_eq!(values_from_yaml("a: 1").expect("map")["a"], 1);
        let e = values_from_yaml("- a").expect_err("list");
        assert!(e.to_string().contains("holds a list"), "{e}");
    }
}

//! Custom resources between the versions of their CRD, as apiextensions-apiserver converts
//! them (`pkg/apiserver/conversion/`): with strategy `None` only `apiVersion` changes
//! (`nop_converter.go`); with `Webhook` the objects not yet in the desired version go to the
//! CRD's conversion webhook in one `ConversionReview` (`webhook_converter.go`), a list's
//! items all in one, and the answer is checked as the server checks it.
//!
//! Start at [`Converter`]: [`Converter::one`] converts one object, [`Converter::list`] the
//! items of a list. A failure is a [`ConversionError`] carrying the server's text
//! (`conversion webhook for stable.example.com/v1, Kind=CronTab failed: ...`), which the
//! REST layer answers as the server does ([`ConversionError::api_error`]) and a watch sends
//! as an `ERROR` event ([`ConversionError::watch_status`]).
//!
//! The call: `apiextensions.k8s.io/v1` `ConversionReview` (or `v1beta1`, whichever of the
//! two comes first in `conversionReviewVersions`), POSTed like an admission webhook's
//! (`crate::api::webhook`: the same `clientConfig` rules, TLS against the `caBundle`, service
//! mapping) to the URL with `?timeout=30s`, the webhook client's default timeout
//! (`k8s.io/apiserver/pkg/util/webhook/authentication.go`, `setGlobalDefaults`). The answer
//! (v1): the `ConversionReview` kind, the request's `uid`, `result.status: Success` (else its
//! `message` is the error), as many objects as were sent, each in the desired `apiVersion`
//! with the original's kind, name, namespace and uid; its metadata is then the original's,
//! but for the `labels` and `annotations` the webhook returned (checked as labels and
//! annotations are, when they changed). A `v1beta1` answer is not checked for kind or uid,
//! as the server does not.
//!
//! What is left to the caller: pruning a converted object with the target version's
//! schema, which the server does where it converts for storage and for reads
//! (`customresource_handler.go`, `schemaCoercingConverter`), and not for admission.

#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::api::webhook::{Target, unexpected_status};
use crate::error::ApiError;
use crate::kinds::meta::str_at;
use crate::kinds::registry::{Conversion, CrdDefinition};

/// How long a conversion call may take: the webhook client's default timeout, which the
/// server also sends as `?timeout=30s`.
pub(crate) const TIMEOUT: Duration = Duration::from_secs(30);

/// Why objects could not be converted, in the API server's words.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct ConversionError(pub(crate) String);

impl ConversionError {
    /// The REST answer: a plain 500 with the text and no reason, as the server's
    /// `ErrorToAPIStatus` renders an error that is no API status (the storage layer hands
    /// the converter's error up unchanged, on reads and writes alike).
    pub(crate) fn api_error(&self) -> ApiError {
        ApiError::unknown(self.0.clone())
    }

    /// The `Status` of the `ERROR` event a watch ends with: the etcd watcher's
    /// `transformErrorToEvent`, an `apierrors.NewInternalError` of the text
    /// (k8s.io/apiserver `pkg/storage/etcd3/watcher.go`).
    pub(crate) fn watch_status(&self) -> Value {
        json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": format!("Internal error occurred: {}", self.0), "reason": "InternalError",
            "details": {"causes": [{"message": self.0}]}, "code": 500,
        })
    }
}

impl From<ConversionError> for ApiError {
    fn from(e: ConversionError) -> Self {
        e.api_error()
    }
}

/// Converts the objects of one CRD.
pub(crate) struct Converter<'a> {
    /// The CRD.
    pub(crate) definition: &'a CrdDefinition,
    /// Where webhook Services are reached (`"namespace/name"` → `"host:port"`).
    pub(crate) service_hosts: &'a HashMap<String, String>,
    /// How long a webhook call may take ([`TIMEOUT`]).
    pub(crate) timeout: Duration,
}

/// What is converted: one object, or the items of a list (the messages name either).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Input {
    One,
    List,
}

impl Converter<'_> {
    /// `object` in `version` of the CRD.
    pub(crate) async fn one(&self, object: Value, version: &str) -> Result<Value, ConversionError> {
        let mut out = self.convert(vec![object], version, Input::One).await?;
        Ok(out.pop().unwrap_or(Value::Null))
    }

    /// `objects` in `version`, in their order; those not yet in it go to the webhook in one
    /// review.
    pub(crate) async fn list(
        &self,
        objects: Vec<Value>,
        version: &str,
    ) -> Result<Vec<Value>, ConversionError> {
        self.convert(objects, version, Input::List).await
    }

    async fn convert(
        &self,
        mut objects: Vec<Value>,
        version: &str,
        input: Input,
    ) -> Result<Vec<Value>, ConversionError> {
        let def = self.definition;
        let desired = def.api_version(version);
        let pending: Vec<usize> =
            (0..objects.len()).filter(|&i| str_at(&objects[i], "apiVersion") != desired).collect();
        if pending.is_empty() {
            return Ok(objects);
        }
        let (client_config, review_versions) = match &def.conversion {
            Conversion::None => {
                for i in pending {
                    objects[i]["apiVersion"] = json!(desired);
                }
                return Ok(objects);
            }
            Conversion::Webhook { client_config, review_versions } => (client_config, review_versions),
        };
        // `in.GetObjectKind().GroupVersionKind()`: the object's, or the list's (the request's
        // version and the list kind).
        let gvk = match input {
            Input::One => gvk_string(str_at(&objects[0], "apiVersion"), str_at(&objects[0], "kind")),
            Input::List => gvk_string(&desired, &def.list_kind),
        };
        let failed = |why: String| ConversionError(format!("conversion webhook for {gvk} failed: {why}"));
        let Some(review_version) =
            review_versions.iter().map(String::as_str).find(|v| matches!(*v, "v1" | "v1beta1"))
        else {
            return Err(ConversionError("no supported conversion review versions".into()));
        };
        let uid = crate::kinds::meta::new_uid();
        let sent: Vec<&Value> = pending.iter().map(|&i| &objects[i]).collect();
        let review = json!({
            "kind": "ConversionReview",
            "apiVersion": format!("apiextensions.k8s.io/{review_version}"),
            "request": {"uid": uid, "desiredAPIVersion": desired, "objects": sent},
            "response": {"uid": "", "convertedObjects": null, "result": {"metadata": {}}},
        });
        let target = Target::new(client_config, self.service_hosts).map_err(&failed)?;
        let answer = target.post(self.timeout, review.to_string()).await.map_err(&failed)?;
        if !(200..=206).contains(&answer.code) {
            return Err(failed(unexpected_status(answer.code, answer.is_text, &answer.body)));
        }
        let response: Value = serde_json::from_slice(&answer.body)
            .map_err(|e| failed(format!("couldn't get version/kind; json parse error: {e}")))?;
        let converted = converted_objects(&uid, review_version, &response).map_err(&failed)?;
        if converted.len() != pending.len() {
            return Err(ConversionError(format!(
                "conversion webhook for {gvk} returned {} objects, expected {}",
                converted.len(),
                pending.len()
            )));
        }
        for (index, (&i, converted)) in pending.iter().zip(converted).enumerate() {
            let restored = check_converted(&objects[i], converted, &desired).map_err(|problem| {
                ConversionError(match (input, problem) {
                    (Input::One, Problem::Undecodable(e)) => e,
                    (Input::One, Problem::Type(e)) => {
                        format!("conversion webhook for {gvk} returned invalid object at index 0: {e}")
                    }
                    (Input::One, Problem::Identity(e)) => {
                        format!("conversion webhook for {gvk} returned invalid object: {e}")
                    }
                    (Input::One, Problem::Metadata(e)) => {
                        format!("conversion webhook for {gvk} returned invalid metadata: {e}")
                    }
                    (Input::List, Problem::Undecodable(e) | Problem::Type(e) | Problem::Identity(e)) => {
                        format!(
                            "conversion webhook for {gvk} returned invalid converted object at index {index}: {e}"
                        )
                    }
                    (Input::List, Problem::Metadata(e)) => {
                        format!("conversion webhook for {gvk} returned invalid metadata in object at index {index}: {e}")
                    }
                })
            })?;
            objects[i] = restored;
        }
        Ok(objects)
    }
}

/// Go's `schema.GroupVersionKind.String()` of an `apiVersion` and kind.
fn gvk_string(api_version: &str, kind: &str) -> String {
    let gv = if api_version.contains('/') { api_version.to_owned() } else { format!("/{api_version}") };
    format!("{gv}, Kind={kind}")
}

/// `getConvertedObjectsFromResponse`: the converted objects of a well-formed, successful
/// answer.
fn converted_objects<'a>(uid: &str, review_version: &str, review: &'a Value) -> Result<&'a [Value], String> {
    if review_version == "v1" {
        let (api_version, kind) = (str_at(review, "apiVersion"), str_at(review, "kind"));
        if (api_version, kind) != ("apiextensions.k8s.io/v1", "ConversionReview") {
            return Err(format!(
                "expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, got {}",
                gvk_string(api_version, kind)
            ));
        }
    }
    let response = review.get("response").filter(|r| r.is_object()).ok_or("no response provided")?;
    if review_version == "v1" && str_at(response, "uid") != uid {
        return Err(format!(
            "expected response.uid={}, got {}",
            ctop_schema::go::quote(uid),
            ctop_schema::go::quote(str_at(response, "uid"))
        ));
    }
    let result = response.get("result").unwrap_or(&Value::Null);
    let status = str_at(result, "status");
    if status != "Success" {
        return Err(match str_at(result, "message") {
            "" => format!("response.result.status was '{status}', not 'Success'"),
            message => message.to_owned(),
        });
    }
    Ok(response.get("convertedObjects").and_then(Value::as_array).map_or(&[], Vec::as_slice))
}

/// What is wrong with one converted object, before the wording of one object or a list.
enum Problem {
    /// It does not decode as an object (`getRawExtensionObject`).
    Undecodable(String),
    /// Its group, version or kind is not the one asked for.
    Type(String),
    /// `validateConvertedObject`: its identity changed.
    Identity(String),
    /// `restoreObjectMeta`: its metadata cannot be restored.
    Metadata(String),
}

/// The checks of one converted object against its `original`, and the object with the
/// original's metadata restored (but for the labels and annotations the webhook returned).
fn check_converted(original: &Value, converted: &Value, desired: &str) -> Result<Value, Problem> {
    if !converted.is_object() || str_at(converted, "kind").is_empty() {
        return Err(Problem::Undecodable(format!("Object 'Kind' is missing in '{converted}'")));
    }
    let received = group_version(str_at(converted, "apiVersion"));
    if received != desired {
        return Err(Problem::Type(format!("invalid groupVersion (expected {desired}, received {received})")));
    }
    let (expected, got) = (str_at(original, "kind"), str_at(converted, "kind"));
    if expected != got {
        return Err(Problem::Type(format!("invalid kind (expected {expected}, received {got})")));
    }
    let meta_str = |o: &Value, field: &str| {
        o.pointer(&format!("/metadata/{field}")).and_then(Value::as_str).unwrap_or_default().to_owned()
    };
    // validateConvertedObject checks the kind again, which cannot differ by now.
    for (field, what) in [("name", "name"), ("namespace", "namespace"), ("uid", "UID")] {
        let (e, a) = (meta_str(original, field), meta_str(converted, field));
        if e != a {
            return Err(Problem::Identity(format!("must have the same {what}: {e} != {a}")));
        }
    }
    restore_object_meta(original, converted.clone()).map_err(Problem::Metadata)
}

/// `GroupVersion.String()` of a parsed `apiVersion` (empty when it does not parse).
fn group_version(api_version: &str) -> &str {
    if api_version.matches('/').count() > 1 {
        ""
    } else {
        api_version.strip_prefix('/').unwrap_or(api_version)
    }
}

/// The Go type an unstructured JSON value decodes to, as `%T` prints it.
fn go_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_i64() || n.is_u64() => "int64",
        Value::Number(_) => "float64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

/// `restoreObjectMeta`: `converted` with the original's metadata, but for the labels and
/// annotations the webhook returned (absent or null ones are dropped; changed ones must be
/// valid labels and annotations).
fn restore_object_meta(original: &Value, mut converted: Value) -> Result<Value, String> {
    let response_meta = match converted.get("metadata") {
        None => return Err("missing metadata in converted object".into()),
        Some(Value::Object(m)) => m.clone(),
        Some(other) => {
            return Err(format!("invalid metadata of type {} in converted object", go_type(other)));
        }
    };
    let mut meta: Map<String, Value> =
        original.get("metadata").and_then(Value::as_object).cloned().unwrap_or_default();
    for field in ["labels", "annotations"] {
        let returned = match response_meta.get(field) {
            None | Some(Value::Null) => {
                meta.remove(field);
                continue;
            }
            Some(Value::Object(m)) => m,
            Some(other) => {
                return Err(format!(
                    "invalid metadata.{field} of type {} in converted object",
                    go_type(other)
                ));
            }
        };
        let before = meta.get(field).and_then(Value::as_object);
        let mut changed = before.map_or(0, Map::len) != returned.len();
        for (k, v) in returned {
            if !v.is_string() {
                return Err(format!(
                    "metadata.{field}[{k}] must be a string, but is {} in converted object",
                    go_type(v)
                ));
            }
            changed |= before.and_then(|b| b.get(k)) != Some(v);
        }
        if changed {
            // ValidateLabels on `metadata.labels`, ValidateAnnotations on `metadata.annotation`.
            let causes = crate::kinds::meta::validate_metadata(
                &json!({ field: returned }),
                crate::kinds::meta::NameRule::Subdomain,
            );
            let path = if field == "labels" { "metadata.labels" } else { "metadata.annotation" };
            let errors: Vec<String> = causes.iter().map(|c| format!("{path}: {}", c.message)).collect();
            match errors.len() {
                0 => {}
                1 => return Err(errors[0].clone()),
                _ => return Err(format!("[{}]", errors.join(", "))),
            }
        }
        meta.insert(field.to_owned(), Value::Object(returned.clone()));
    }
    converted["metadata"] = Value::Object(meta);
    Ok(converted)
}

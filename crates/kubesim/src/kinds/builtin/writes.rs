//! What a write of a built-in kind goes through before anything else, and how the API
//! server answers when it fails (k8s.io/apiserver/pkg/endpoints/handlers: create.go and
//! update.go decode the body, patch.go decodes the patched object):
//!
//! * create and update (also of `/status`): a body the decoder refuses is a 400
//!   `Deployment in version "v1" cannot be handled as a Deployment: <error>`
//!   (`transformDecodeError` in rest.go);
//! * JSON and merge patches: the patched object is decoded the same way, but a failure is
//!   a 422 for the field `patch` with the whole patched object as its value
//!   (` "" is invalid: patch: Invalid value: "{...}": <error>`);
//! * strategic merge patches: the patched object goes through the unstructured converter,
//!   and a failure is that 422 with the patch itself as Go prints a map
//!   (`map[spec:map[replicas:1.5]]`);
//! * server-side apply: structured-merge-diff refuses undeclared fields and wrong types
//!   with a 500 `failed to create typed patch object (...)`, whatever `fieldValidation`
//!   says (structuredmerge.go).
//!
//! Unknown fields follow `fieldValidation`: `Strict` refuses the write (`strict decoding
//! error: unknown field "spec.replica"`, 400 for bodies, the 422 above for patches), `Warn`
//! (the default) answers with a warning per field, `Ignore` says nothing. They are never
//! stored.

use serde_json::Value;

use super::catalog;
use crate::api::{FieldValidation, PatchKind};
use crate::error::{ApiError, GroupResource, StatusCause};
use crate::kinds::registry::ResourceType;

/// `strict decoding error: unknown field "a", unknown field "b"` (`runtime.NewStrictDecodingError`).
fn strict_error<S: AsRef<str>>(fields: &[S]) -> String {
    let list: Vec<String> = fields.iter().map(|f| unknown_field(f.as_ref())).collect();
    format!("strict decoding error: {}", list.join(", "))
}

fn unknown_field(path: &str) -> String {
    format!("unknown field \"{path}\"")
}

/// `(group, version, kind)` of `rt`.
fn kind_of(rt: &ResourceType) -> (&str, &str, &str) {
    (&rt.group, &rt.version, &rt.kind)
}

/// Whether `rt` is a built-in kind (custom resources have their own schema checks).
fn builtin(rt: &ResourceType) -> bool {
    rt.crd.is_none()
}

/// Decodes a create or update body of a built-in kind: the unknown fields are dropped, and
/// come back as warnings when `mode` is `Warn`.
///
/// # Errors
/// 400 when the decoder refuses the body, or when `mode` is `Strict` and it has unknown
/// fields.
pub(crate) fn decode_body(
    rt: &ResourceType,
    body: &mut Value,
    mode: FieldValidation,
) -> Result<Vec<String>, ApiError> {
    if !builtin(rt) || !body.is_object() {
        return Ok(Vec::new());
    }
    let handled = |e: String| {
        ApiError::bad_request(format!(
            "{kind} in version \"{version}\" cannot be handled as a {kind}: {e}",
            kind = rt.kind,
            version = rt.version
        ))
    };
    let unknown = catalog().decode(kind_of(rt), body, &mut |_| {}).map_err(|e| handled(e.0))?;
    match mode {
        FieldValidation::Strict if !unknown.is_empty() => Err(handled(strict_error(&unknown))),
        FieldValidation::Warn => Ok(unknown.iter().map(|p| unknown_field(p)).collect()),
        _ => Ok(Vec::new()),
    }
}

/// The 422 a patch fails with: the field `patch`, the given value, the error.
fn invalid_patch(value: &str, detail: &str) -> ApiError {
    let cause = StatusCause {
        reason: "FieldValueInvalid".into(),
        message: format!("Invalid value: {}: {detail}", ctop_schema::go::quote(value)),
        field: "patch".into(),
    };
    let mut e = ApiError::invalid(GroupResource { group: "", resource: "" }, "", "", vec![cause]);
    e.name = None;
    e.group = None;
    e.kind = None;
    e
}

/// Decodes (JSON and merge patches) or converts (strategic merge patches) the patched
/// object of a built-in kind; `patch` is the request body. The unknown fields are dropped,
/// and come back as warnings when `mode` is `Warn`.
///
/// # Errors
/// The 422 of a patch whose result the decoder or the converter refuses, or that has
/// unknown fields when `mode` is `Strict`.
pub(crate) fn check_patched(
    rt: &ResourceType,
    kind: PatchKind,
    patch: &Value,
    patched: &mut Value,
    mode: FieldValidation,
) -> Result<Vec<String>, ApiError> {
    if !builtin(rt) {
        return Ok(Vec::new());
    }
    let (unknown, shown) = match kind {
        PatchKind::Strategic => {
            let shown = || ctop_schema::go::percent_v(patch);
            let unknown = catalog()
                .convert_unstructured(kind_of(rt), patched)
                .map_err(|e| invalid_patch(&shown(), &e))?;
            if unknown.is_empty() {
                return Ok(Vec::new());
            }
            (unknown, shown())
        }
        PatchKind::Merge | PatchKind::Json => {
            // The value shown is the patched object as Go's encoder writes it, before the
            // decoder drops anything; it is written only when something is wrong.
            let mut shown = String::new();
            let unknown = catalog()
                .decode(kind_of(rt), patched, &mut |before| shown = ctop_schema::go::json(before))
                .map_err(|e| invalid_patch(&shown, &e.0))?;
            let unknown: Vec<String> = unknown.iter().map(|p| unknown_field(p)).collect();
            (unknown, shown)
        }
        PatchKind::Apply => return Ok(Vec::new()),
    };
    match mode {
        FieldValidation::Strict if !unknown.is_empty() => {
            let list = unknown.join(", ");
            Err(invalid_patch(&shown, &format!("strict decoding error: {list}")))
        }
        FieldValidation::Warn => Ok(unknown),
        _ => Ok(Vec::new()),
    }
}

/// Checks a server-side apply configuration of a built-in kind against its schema.
///
/// # Errors
/// The 500 `failed to create typed patch object (<ns>/<name>; <group>/<version>,
/// Kind=<kind>): <errors>`, several errors listed as `errors:\n  <error>\n  <error>`.
pub(crate) fn check_apply(rt: &ResourceType, config: &Value) -> Result<(), ApiError> {
    if !builtin(rt) {
        return Ok(());
    }
    let errors = catalog().apply_errors(kind_of(rt), config);
    if errors.is_empty() {
        return Ok(());
    }
    let listed = match errors.as_slice() {
        [one] => one.clone(),
        many => format!("errors:\n  {}", many.join("\n  ")),
    };
    let text = |p: &str| config.pointer(p).and_then(Value::as_str).unwrap_or_default();
    let mut e = ApiError::internal(format!(
        "failed to create typed patch object ({}/{}; {}/{}, Kind={}): {listed}",
        text("/metadata/namespace"),
        text("/metadata/name"),
        rt.group,
        rt.version,
        rt.kind
    ));
    // Not an API status in Go: a 500 with no reason.
    e.reason = "";
    Err(e)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::kinds::registry::Registry;

    #[test]
    fn strict_and_warn_bodies() {
        let reg = Registry::with_builtins();
        let rt = reg.by_kind("apps/v1", "Deployment").expect("served");
        let body = || json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"replica": 1}});
        let e = decode_body(&rt, &mut body(), FieldValidation::Strict).unwrap_err();
        assert_eq!(e.code, 400);
        assert_eq!(
            e.message,
            "Deployment in version \"v1\" cannot be handled as a Deployment: strict decoding error: unknown field \"spec.replica\""
        );
        let mut b = body();
        assert_eq!(
            decode_body(&rt, &mut b, FieldValidation::Warn).unwrap(),
            ["unknown field \"spec.replica\""]
        );
        assert!(b["spec"].get("replica").is_none());
        assert!(decode_body(&rt, &mut body(), FieldValidation::Ignore).unwrap().is_empty());
    }

    #[test]
    fn patches_fail_with_the_patch_field() {
        let reg = Registry::with_builtins();
        let rt = reg.by_kind("apps/v1", "Deployment").expect("served");
        let patch = json!({"spec": {"replicas": 1.5}});
        let mut patched = json!({"metadata": {"name": "d"}, "spec": {"replicas": 1.5}});
        let e =
            check_patched(&rt, PatchKind::Strategic, &patch, &mut patched.clone(), FieldValidation::Strict)
                .unwrap_err();
        assert_eq!(e.code, 422);
        assert_eq!(
            e.message,
            " \"\" is invalid: patch: Invalid value: \"map[spec:map[replicas:1.5]]\": cannot convert float64 to int32"
        );
        let e =
            check_patched(&rt, PatchKind::Merge, &patch, &mut patched, FieldValidation::Strict).unwrap_err();
        assert_eq!(
            e.message,
            " \"\" is invalid: patch: Invalid value: \"{\\\"metadata\\\":{\\\"name\\\":\\\"d\\\"},\\\"spec\\\":{\\\"replicas\\\":1.5}}\": json: cannot unmarshal number 1.5 into Go struct field DeploymentSpec.spec.replicas of type int32"
        );
    }
}

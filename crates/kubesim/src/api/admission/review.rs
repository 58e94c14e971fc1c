//! The `AdmissionReview` on the wire: the request sent for an object, the answer decoded and
//! checked (`webhook/request`), a JSONPatch reply applied, and a denial worded as the real
//! server words it (`webhook/errors`).

use super::*;

/// Applies a mutating webhook's reply to `object`; returns whether the object changed.
pub(super) fn apply_reply(name: &str, reply: Reply, object: &mut Option<Value>) -> Result<bool, Failure> {
    let internal = |message: String| Failure::Fatal(AdmissionError::Internal { message });
    if !reply.allowed {
        return Err(Failure::Fatal(denied(name, reply.status.as_ref())));
    }
    if reply.patch.is_empty() {
        return Ok(false);
    }
    let patch: json_patch::Patch = serde_json::from_slice(&reply.patch)
        .map_err(|e| Failure::Calling(format!("received undecodable patch in webhook response: {e}")))?;
    if patch.0.is_empty() {
        return Ok(false);
    }
    let Some(current) = object.as_mut() else {
        return Err(internal(format!(
            "admission webhook {name:?} attempted to modify the object, which is not supported for this operation"
        )));
    };
    let patch_type = reply.patch_type.unwrap_or_default();
    if patch_type != "JSONPatch" {
        return Err(Failure::Calling(format!("unsupported patch type {patch_type:?}")));
    }
    let mut patched = current.clone();
    json_patch::patch(&mut patched, &patch.0).map_err(|e| internal(e.to_string()))?;
    let changed = patched != *current;
    *current = patched;
    Ok(changed)
}

/// The rejection for `allowed: false` (apiserver `webhook/errors.ToStatusErr`).
pub(super) fn denied(name: &str, status: Option<&Value>) -> AdmissionError {
    let status = status.unwrap_or(&Value::Null);
    let code = status.get("code").and_then(Value::as_i64).unwrap_or(0).max(400);
    let (message, reason) = (str_at(status, "message"), str_at(status, "reason"));
    let denied_by = format!("admission webhook {name:?} denied the request");
    let message = match (message, reason) {
        ("", "") => format!("{denied_by} without explanation"),
        ("", reason) => format!("{denied_by}: {reason}"),
        (message, _) => format!("{denied_by}: {message}"),
    };
    AdmissionError::Denied {
        webhook: name.to_string(),
        code: u16::try_from(code).unwrap_or(500),
        reason: reason.to_string(),
        message,
        details: status.get("details").filter(|d| !d.is_null()).cloned(),
    }
}

/// The `AdmissionReview` request body (apiserver `request.CreateV1AdmissionReview`): `kind`
/// and `resource` in the version the webhook is called in, `requestKind` and
/// `requestResource` in the request's.
pub(super) fn review_request(
    uid: &str,
    review_version: &str,
    attrs: &Attributes,
    version: &str,
    object: Option<&Value>,
    old: Option<&Value>,
) -> Value {
    let kind = json!({ "group": attrs.group, "version": version, "kind": attrs.kind });
    let resource = json!({ "group": attrs.group, "version": version, "resource": attrs.resource });
    let request_kind = json!({ "group": attrs.group, "version": attrs.version, "kind": attrs.kind });
    let request_resource =
        json!({ "group": attrs.group, "version": attrs.version, "resource": attrs.resource });
    let mut user = Map::new();
    for (key, value) in [("username", &attrs.user.username), ("uid", &attrs.user.uid)] {
        if !value.is_empty() {
            user.insert(key.into(), json!(value));
        }
    }
    if !attrs.user.groups.is_empty() {
        user.insert("groups".into(), json!(attrs.user.groups));
    }
    let mut request = json!({
        "uid": uid, "kind": kind, "resource": resource, "requestKind": request_kind,
        "requestResource": request_resource, "operation": attrs.operation.as_str(), "userInfo": user,
        "object": object, "oldObject": old, "dryRun": attrs.dry_run,
        "options": attrs.options,
    });
    for (key, value) in [
        ("subResource", &attrs.subresource),
        ("requestSubResource", &attrs.subresource),
        ("name", &attrs.name),
        ("namespace", &attrs.namespace),
    ] {
        if !value.is_empty() {
            request[key] = json!(value);
        }
    }
    json!({ "kind": "AdmissionReview", "apiVersion": format!("admission.k8s.io/{review_version}"), "request": request })
}

/// Decodes the response body the way the Go client would before verification.
pub(super) fn decode_review(body: &[u8]) -> Result<Value, String> {
    let mut review: Value = serde_json::from_slice(body)
        .map_err(|e| format!("couldn't get version/kind; json parse error: {e}"))?;
    let Some(response) = review.get_mut("response").filter(|r| r.is_object()) else {
        return Ok(review);
    };
    match response.get("allowed") {
        None | Some(Value::Null | Value::Bool(_)) => {}
        Some(other) => {
            let ty = if other.is_string() {
                "string"
            } else if other.is_number() {
                "number"
            } else {
                "object"
            };
            return Err(format!(
                "json: cannot unmarshal {ty} into Go struct field AdmissionResponse.response.allowed of type bool"
            ));
        }
    }
    if let Some(patch) = response.get("patch").and_then(Value::as_str) {
        let bytes = BASE64.decode(patch).map_err(|e| match e {
            base64::DecodeError::InvalidByte(at, _) => {
                format!("illegal base64 data at input byte {at}")
            }
            other => format!("illegal base64 data: {other}"),
        })?;
        response["patch"] = json!(bytes);
    }
    Ok(review)
}

/// Checks a decoded response (apiserver `request.VerifyAdmissionResponse`).
pub(super) fn verify_review(
    uid: &str,
    version: &str,
    mutating: bool,
    review: Value,
) -> Result<Reply, String> {
    let response = review.get("response").filter(|r| r.is_object()).ok_or("webhook response was absent")?;
    let patch: Vec<u8> =
        serde_json::from_value(response.get("patch").cloned().unwrap_or(json!([]))).unwrap_or_default();
    let mut patch_type =
        response.get("patchType").filter(|p| !p.is_null()).map(|p| p.as_str().unwrap_or("").to_string());
    if version == "v1" {
        let got_uid = str_at(response, "uid");
        if got_uid != uid {
            return Err(format!("expected response.uid={uid:?}, got {got_uid:?}"));
        }
        let api_version = str_at(&review, "apiVersion");
        let (group, ver) = ctop_core::split_api_version(api_version);
        let kind = str_at(&review, "kind");
        if (group, ver, kind) != ("admission.k8s.io", "v1", "AdmissionReview") {
            return Err(format!(
                "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got {group}/{ver}, Kind={kind}"
            ));
        }
        if mutating {
            match (&patch_type, patch.is_empty()) {
                (None, false) => {
                    return Err("webhook returned response.patch but not response.patchType".into());
                }
                (Some(_), true) => {
                    return Err("webhook returned response.patchType but not response.patch".into());
                }
                (Some(t), false) if t.is_empty() => {
                    return Err(format!("webhook returned invalid response.patchType of {t:?}"));
                }
                _ => {}
            }
        } else if !patch.is_empty() {
            return Err("validating webhook may not return response.patch".into());
        } else if patch_type.is_some() {
            return Err("validating webhook may not return response.patchType".into());
        }
    } else {
        patch_type = (!patch.is_empty()).then(|| "JSONPatch".to_string());
    }
    let warnings = response.get("warnings").and_then(Value::as_array);
    Ok(Reply {
        allowed: response.get("allowed").and_then(Value::as_bool).unwrap_or(false),
        patch: if mutating { patch } else { Vec::new() },
        patch_type,
        status: response.get("status").filter(|s| !s.is_null()).cloned(),
        warnings: warnings.into_iter().flatten().filter_map(Value::as_str).map(String::from).collect(),
    })
}

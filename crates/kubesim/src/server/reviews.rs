//! The create-only reviews, answered at once and never stored: who am I
//! (SelfSubjectReview), may I (SelfSubjectAccessReview), may they (SubjectAccessReview,
//! LocalSubjectAccessReview) and who is this token (TokenReview), with the checks of
//! `pkg/apis/authorization/validation/validation.go` and the registries' `Create`
//! (`pkg/registry/authorization/*/rest.go`, `pkg/registry/authentication/tokenreview/storage.go`).

use serde_json::{Value, json};

use super::Server;
use crate::auth::authz::{self, Attributes, User};
use crate::error::{ApiError, StatusCause};
use crate::kinds::registry::ResourceType;

/// Answer the review `body` of kind `rt` posted in namespace `ns` by `user` (`None`:
/// authorization is off and everyone is an administrator).
pub(super) fn review(
    srv: &Server,
    rt: &ResourceType,
    ns: &str,
    user: Option<&User>,
    mut body: Value,
) -> Result<Value, ApiError> {
    let admin = User::new("kubesim-admin", &["system:masters", "system:authenticated"]);
    let user = user.unwrap_or(&admin);
    body["apiVersion"] = json!(rt.api_version());
    body["kind"] = json!(rt.kind);
    let spec = body.get("spec").cloned().unwrap_or_default();
    let status = match rt.kind.as_str() {
        "SelfSubjectReview" => json!({"userInfo": {"username": user.name, "groups": user.groups}}),
        "TokenReview" => {
            let token = spec.get("token").and_then(Value::as_str).unwrap_or_default();
            if token.is_empty() {
                return Err(ApiError::bad_request("token is required for TokenReview in authentication"));
            }
            let audiences: Vec<String> = strings(spec.get("audiences"));
            srv.authn.review(token, &audiences)
        }
        "SubjectAccessReview" | "LocalSubjectAccessReview" => {
            validate(rt, &body, &spec, ns)?;
            let subject = User { name: text(&spec, "user"), groups: strings(spec.get("groups")) };
            decision(srv, &subject, &spec)
        }
        _ => {
            validate(rt, &body, &spec, ns)?;
            decision(srv, user, &spec)
        }
    };
    body["status"] = status;
    Ok(body)
}

fn text(v: &Value, key: &str) -> String {
    v.get(key).and_then(Value::as_str).unwrap_or_default().to_owned()
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| a.iter().filter_map(|s| s.as_str().map(str::to_owned)).collect())
        .unwrap_or_default()
}

/// The authorizer's answer for the attributes of an access review's `spec`.
fn decision(srv: &Server, user: &User, spec: &Value) -> Value {
    let attrs = match (spec.get("resourceAttributes"), spec.get("nonResourceAttributes")) {
        (Some(r), _) => {
            let mut a = Attributes::resource(&text(r, "verb"), &text(r, "group"), &text(r, "resource"))
                .in_namespace(&text(r, "namespace"));
            if !text(r, "name").is_empty() {
                a = a.named(&text(r, "name"));
            }
            if !text(r, "subresource").is_empty() {
                a = a.with_subresource(&text(r, "subresource"));
            }
            a
        }
        (None, Some(n)) => Attributes::non_resource(&text(n, "verb"), &text(n, "path")),
        (None, None) => Attributes::non_resource("", ""),
    };
    let decision = if srv.authz {
        authz::decide(user, &attrs, srv.api.as_ref())
    } else {
        authz::Decision { allowed: true, reason: String::new() }
    };
    let mut status = json!({"allowed": decision.allowed});
    if !decision.reason.is_empty() {
        status["reason"] = json!(decision.reason);
    }
    status
}

/// The create handler's namespace check (`EnsureObjectNamespaceMatchesRequestNamespace`: a
/// local review takes the URL's namespace), then `ValidateSubjectAccessReview` and its self
/// and local variants: a 422 `<Kind>.authorization.k8s.io "" is invalid: ...` with a cause
/// per error.
fn validate(rt: &ResourceType, body: &Value, spec: &Value, ns: &str) -> Result<(), ApiError> {
    let object_ns = body.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or_default();
    if rt.namespaced && !object_ns.is_empty() && object_ns != ns {
        return Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        ));
    }
    let present = |k: &str| spec.get(k).is_some_and(|v| !v.is_null());
    let (resource, non_resource) = (present("resourceAttributes"), present("nonResourceAttributes"));
    let mut errors: Vec<(String, String, &str)> = Vec::new();
    // `field.Invalid(...)` prints a nil pointer as "null" and a struct with Go's `%#v`,
    // which kubesim does not reproduce: such values are quoted as `{...}`.
    let shown = |v: Option<&Value>| match v {
        None | Some(Value::Null) => "\"null\"".to_owned(),
        Some(_) => "{...}".to_owned(),
    };
    if resource && non_resource {
        errors.push((
            "spec.nonResourceAttributes".into(),
            shown(spec.get("nonResourceAttributes")),
            "cannot be specified in combination with resourceAttributes",
        ));
    }
    if !resource && !non_resource {
        errors.push((
            "spec.resourceAttributes".into(),
            "\"null\"".into(),
            "exactly one of nonResourceAttributes or resourceAttributes must be specified",
        ));
    }
    let subject = rt.kind != "SelfSubjectAccessReview";
    if subject && text(spec, "user").is_empty() && strings(spec.get("groups")).is_empty() {
        errors.push((
            "spec.user".into(),
            format!("{:?}", text(spec, "user")),
            "at least one of user or group must be specified",
        ));
    }
    let mut meta = body.get("metadata").and_then(Value::as_object).cloned().unwrap_or_default();
    // Compared with an empty ObjectMeta as `apiequality.Semantic` does: empty and absent
    // are equal; the handler set or cleared the namespace.
    meta.remove("managedFields");
    meta.remove("namespace");
    meta.retain(|_, v| match v {
        Value::Null => false,
        Value::String(s) => !s.is_empty(),
        Value::Object(m) => !m.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Number(n) => n.as_f64() != Some(0.0),
        Value::Bool(b) => *b,
    });
    if rt.kind == "LocalSubjectAccessReview" {
        if !meta.is_empty() {
            errors.push(("metadata".into(), "{...}".into(), "must be empty except for namespace"));
        }
        if let Some(r) = spec.get("resourceAttributes").filter(|r| !r.is_null())
            && text(r, "namespace") != ns
        {
            errors.push((
                "spec.resourceAttributes.namespace".into(),
                format!("{:?}", text(r, "namespace")),
                "must match metadata.namespace",
            ));
        }
        if non_resource {
            errors.push((
                "spec.nonResourceAttributes".into(),
                "{...}".into(),
                "disallowed on this kind of request",
            ));
        }
    } else if !meta.is_empty() {
        errors.push(("metadata".into(), "{...}".into(), "must be empty"));
    }
    if !errors.is_empty() {
        let causes = errors
            .into_iter()
            .map(|(field, value, detail)| StatusCause {
                reason: "FieldValueInvalid".into(),
                message: format!("Invalid value: {value}: {detail}"),
                field,
            })
            .collect();
        let mut e = ApiError::invalid(rt.gr(), &rt.kind_group(), "", causes);
        e.name = None;
        return Err(e);
    }
    Ok(())
}

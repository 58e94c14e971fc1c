//! Who is asking and whether they may: bearer-token authentication, RBAC authorization
//! with the real 403 body, the identity admission webhooks see, and the endpoints that
//! answer about identity (TokenRequest, SelfSubjectAccessReview, SelfSubjectReview).

use axum::body::Body;
use axum::http::{HeaderMap, header};
use axum::response::Response;
use serde_json::{Value, json};

use super::Server;
use super::wire::{json_response, parse_json, read_body};
use crate::authz::{self, Attributes, User};
use crate::error::ApiError;
use crate::registry::ResourceType;

pub(super) fn authenticate(srv: &Server, headers: &HeaderMap) -> Result<Option<User>, ApiError> {
    let Some(tokens) = &srv.tokens else { return Ok(None) };
    let auth = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok());
    match auth.and_then(|a| a.strip_prefix("Bearer ")) {
        None => Ok(Some(User::anonymous())),
        Some(t) => tokens.lock().get(t.trim()).cloned().map(Some).ok_or_else(ApiError::unauthorized),
    }
}

pub(super) fn authorize(srv: &Server, user: Option<&User>, attrs: &Attributes) -> Result<(), ApiError> {
    let Some(user) = user else { return Ok(()) };
    let d = authz::decide(user, attrs, srv.api.as_ref());
    if d.allowed {
        return Ok(());
    }
    let body = if d.reason.is_empty() {
        authz::forbidden_status(user, attrs)
    } else {
        authz::forbidden_status_with_reason(user, attrs, &d.reason)
    };
    tracing::info!(
        user = user.name,
        verb = attrs.verb,
        resource = attrs.resource,
        namespace = attrs.namespace,
        "forbidden"
    );
    Err(ApiError::from(crate::error::ErrorFields {
        code: 403,
        reason: "Forbidden",
        message: body["message"].as_str().unwrap_or_default().to_owned(),
        name: body.pointer("/details/name").and_then(Value::as_str).map(str::to_owned),
        group: body.pointer("/details/group").and_then(Value::as_str).map(str::to_owned),
        kind: body.pointer("/details/kind").and_then(Value::as_str).map(str::to_owned),
        causes: Vec::new(),
        retry_after: None,
    }))
}

pub(super) fn user_info(user: Option<&User>) -> crate::admission::UserInfo {
    match user {
        Some(u) => crate::admission::UserInfo {
            username: u.name.clone(),
            uid: String::new(),
            groups: u.groups.clone(),
        },
        None => crate::admission::UserInfo {
            username: "kubesim-admin".into(),
            uid: String::new(),
            groups: vec!["system:masters".into(), "system:authenticated".into()],
        },
    }
}

pub(super) async fn token_request(
    srv: &Server,
    rt: &ResourceType,
    ns: &str,
    name: &str,
    content_type: &str,
    body: Body,
) -> Result<Response, ApiError> {
    srv.api.get(rt, ns, name).await?;
    let bytes = read_body(body).await?;
    let req = parse_json(&bytes, content_type)?;
    let token = format!("kubesim-sa.{}", crate::meta::new_uid().replace('-', ""));
    if let Some(tokens) = &srv.tokens {
        tokens.lock().insert(token.clone(), User::service_account(ns, name));
    }
    let expiration = req.pointer("/spec/expirationSeconds").and_then(Value::as_i64).unwrap_or(3600);
    let expires = jiff::Timestamp::now()
        .checked_add(jiff::SignedDuration::from_secs(expiration))
        .map(|t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_default();
    Ok(json_response(
        201,
        &json!({
            "kind": "TokenRequest", "apiVersion": "authentication.k8s.io/v1",
            "metadata": {"name": name, "namespace": ns, "creationTimestamp": null},
            "spec": {"audiences": req.pointer("/spec/audiences").cloned().unwrap_or(json!(["https://kubernetes.default.svc"])), "expirationSeconds": expiration,
                     "boundObjectRef": null},
            "status": {"token": token, "expirationTimestamp": expires},
        }),
    ))
}

/// Answer a SelfSubjectAccessReview or SelfSubjectReview for `user` (`None`: authorization
/// is off and everyone is an administrator).
pub(super) fn review(srv: &Server, rt: &ResourceType, user: Option<&User>, mut body: Value) -> Value {
    let admin = User::new("kubesim-admin", &["system:masters", "system:authenticated"]);
    let user = user.unwrap_or(&admin);
    body["apiVersion"] = json!(rt.api_version());
    body["kind"] = json!(rt.kind);
    if rt.kind == "SelfSubjectReview" {
        body["status"] = json!({"userInfo": {"username": user.name, "groups": user.groups}});
        return body;
    }
    let spec = body.get("spec").cloned().unwrap_or_default();
    let s = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or_default().to_owned();
    let attrs = match (spec.get("resourceAttributes"), spec.get("nonResourceAttributes")) {
        (Some(r), _) => {
            let mut a = Attributes::resource(&s(r, "verb"), &s(r, "group"), &s(r, "resource"))
                .in_namespace(&s(r, "namespace"));
            if !s(r, "name").is_empty() {
                a = a.named(&s(r, "name"));
            }
            if !s(r, "subresource").is_empty() {
                a = a.with_subresource(&s(r, "subresource"));
            }
            a
        }
        (None, Some(n)) => Attributes::non_resource(&s(n, "verb"), &s(n, "path")),
        (None, None) => Attributes::non_resource("", ""),
    };
    let decision = if srv.tokens.is_some() {
        authz::decide(user, &attrs, srv.api.as_ref())
    } else {
        authz::Decision { allowed: true, reason: String::new() }
    };
    let mut status = json!({"allowed": decision.allowed});
    if !decision.reason.is_empty() {
        status["reason"] = json!(decision.reason);
    }
    body["status"] = status;
    body
}
